//! The program representation shared by the text side (parser, printer) and the binary side
//! (BEF writer, BEF decoder). It is the subset of the MLIR `tfrt` dialect that TFRT's test
//! programs use, with custom op forms normalised to one shape.

/// Where something was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Loc {
    /// `file:line:col` (1-based).
    FileLineCol { file: String, line: u32, col: u32 },
    /// `loc("name")`.
    Name(String),
    /// A fused location with both a name and a position (`loc(fused["name", "file":L:C])`):
    /// the names of its name locations joined in order, and the position of its first file
    /// location.
    /// Errors point at the position; a BEF file keeps only the position.
    Fused { name: String, file: String, line: u32, col: u32 },
    /// `loc(unknown)` or nothing known.
    #[default]
    Unknown,
}

/// A type, kept as written (`i32`, `!tfrt.chain`, `!test.atomic.i32`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Type(pub String);

/// An attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum Attr {
    /// `true` / `false` (type i1).
    Bool(bool),
    /// An integer with its type (`42 : i32`; untyped integers are `i64`).
    Int { value: i64, ty: Type },
    /// A float with its type (`1.0 : f32`; untyped floats are `f64`).
    Float { value: f64, ty: Type },
    /// `"text"` (escapes resolved).
    String(String),
    /// `[a, b, ...]`, possibly nested and mixed.
    Array(Vec<Attr>),
    /// `@name`: a reference to a function of the module.
    Symbol(String),
    /// `{k = v, ...}`.
    Dict(Vec<NamedAttr>),
    /// A type used as an attribute value (`i32`).
    Type(Type),
    /// A unit attribute (a name with no value, e.g. `{tfrt.native}`).
    Unit,
    /// `dense<...> : tensor<...>`: a tensor constant's elements (boxed to keep `Attr` small).
    Dense(Box<DenseAttr>),
}

/// The elements of a `dense<...> : tensor<2x3xf32>` attribute, as BEF stores them (a DENSE
/// attribute, docs/bef.md): whatever form the literal had (a splat, nested lists, a hex
/// blob), the parser expands it to every element, row-major.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DenseAttr {
    /// Element type: one of the MLIR names of `hostrt_core::bef::format::dense::TYPES`
    /// (`i1`, `i32`, `ui8`, `f16`, `bf16`, `f32`, `complex<f64>`, ...).
    pub elem: Type,
    /// The tensor's dimensions (empty for rank 0); non-negative, at most
    /// `format::dense::MAX_RANK` of them.
    pub dims: Vec<i64>,
    /// The elements: little-endian, row-major, bools as 0/1 bytes, complex numbers as the
    /// real part then the imaginary part. Exactly (product of `dims`) × element size bytes.
    pub data: Vec<u8>,
}

/// `name = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedAttr {
    pub name: String,
    pub value: Attr,
}

/// A use of an SSA value: `%name` or `%name#index` (a pack element).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueRef {
    /// Name without `%`.
    pub name: String,
    /// Pack index after `#`, if any.
    pub index: Option<u32>,
    /// Where the use was written (for "undefined value" errors).
    pub loc: Loc,
}

/// Result names bound by an op: `%a, %b = ...` gives two groups of 1; `%x:2 = ...` gives one
/// group of 2; an op whose results are not bound has no groups (its results still exist, as
/// given by `result_types`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResultGroup {
    /// Name without `%`.
    pub name: String,
    /// Number of results in the group (1 unless written `%x:N`).
    pub count: u32,
}

/// A region (`{ ops... }`) with its block arguments. Custom forms whose regions take implicit
/// block arguments (`tfrt.if`, `tfrt.repeat.i32`, `tfrt.parallel_for.i32`, ...) get them filled
/// in by the parser, named after the operands they are bound to.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    pub args: Vec<(String, Type)>,
    pub ops: Vec<Op>,
}

/// One operation. Custom forms are normalised: e.g. `tfrt.constant.i32 41` is
/// `Op { name: "tfrt.constant.i32", attrs: [value = 41 : i32], result_types: [i32], .. }` and
/// `tfrt.call @f(%a) : (i32) -> i32` has the attribute `callee = @f`.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// Full op name (`tfrt.add.i32`, `tfrt_test.print_hello`, `tfrt.return`).
    pub name: String,
    pub results: Vec<ResultGroup>,
    pub operands: Vec<ValueRef>,
    /// Operand types when written (generic form, or custom forms that list them); empty when
    /// the form implies them (the writer then takes the defining values' types).
    pub operand_types: Vec<Type>,
    pub result_types: Vec<Type>,
    /// Attributes in source order.
    pub attrs: Vec<NamedAttr>,
    pub regions: Vec<Region>,
    /// The op's location: explicit `loc(...)`, else the position of the op name token.
    pub loc: Loc,
}

/// A function: `func.func [private] @name(args) -> results [attributes {...}] [{ body }]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub name: String,
    pub args: Vec<(String, Type)>,
    pub results: Vec<Type>,
    pub attrs: Vec<NamedAttr>,
    /// `None` for a declaration (a native function: `func.func private @f(...) attributes {tfrt.native}`).
    pub body: Option<Region>,
    pub loc: Loc,
}

/// A module: optional `module attributes {...} { ... }` wrapper, functions in order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub attrs: Vec<NamedAttr>,
    pub funcs: Vec<Func>,
}
