//! Op definitions as TensorFlow's `OpDefBuilder` writes them: attrs (`"T: {float, int32}"`,
//! `"N: int >= 1 = 2"`, `"padding: {'SAME', 'VALID'}"`, `"ksize: list(int) >= 4"`), inputs
//! and outputs (`"x: T"`, `"values: N * T"`, `"args: Tin"`, `"ref: Ref(float)"`), and the
//! check of a whole definition when it is registered. Pure Rust; `ops` puts the C API on it.

use std::fmt;

use crate::tf::tf_datatype::*;

/// The kind of an attr's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// `string`
    String,
    /// `int`
    Int,
    /// `float`
    Float,
    /// `bool`
    Bool,
    /// `type`
    Type,
    /// `shape`
    Shape,
    /// `tensor`
    Tensor,
    /// `func`
    Func,
}

impl AttrKind {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "int" => Self::Int,
            "float" => Self::Float,
            "bool" => Self::Bool,
            "type" => Self::Type,
            "shape" => Self::Shape,
            "tensor" => Self::Tensor,
            "func" => Self::Func,
            _ => return None,
        })
    }

    /// TensorFlow's name of the kind.
    pub fn name(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Int => "int",
            Self::Float => "float",
            Self::Bool => "bool",
            Self::Type => "type",
            Self::Shape => "shape",
            Self::Tensor => "tensor",
            Self::Func => "func",
        }
    }
}

/// A shape value: unknown rank, or dims (-1 for an unknown dim).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShapeValue {
    /// Rank not known.
    Unknown,
    /// Dims, -1 where unknown.
    Dims(Vec<i64>),
}

/// An attr value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// A string (bytes).
    S(String),
    /// An int.
    I(i64),
    /// A float.
    F(f32),
    /// A bool.
    B(bool),
    /// A dtype.
    Type(TF_DataType),
    /// A shape.
    Shape(ShapeValue),
    /// A tensor (an MLIR `dense<...>` attribute), shared with every reader.
    Tensor(TensorAttr),
    /// A list of values of one kind.
    List(Vec<AttrValue>),
}

/// A tensor-valued attr: a handle on a host tensor that `GetAttrTensor` shares. Two are
/// equal when dtype, shape and bytes are.
#[derive(Clone, Debug)]
pub struct TensorAttr(pub crate::tf::tf_tensor::TF_Tensor);

impl PartialEq for TensorAttr {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (self.0.dense(), other.0.dense());
        let bytes = |t: &hostrt_core::tensor::DenseHostTensor| t.read_bytes().ok().map(|g| g.to_vec());
        self.0.dtype() == other.0.dtype() && a.shape() == b.shape() && bytes(a) == bytes(b)
    }
}

impl AttrValue {
    /// Whether this value is of `kind` (a list: `list(kind)`).
    pub fn is(&self, list: bool, kind: AttrKind) -> bool {
        match self {
            AttrValue::List(items) => list && items.iter().all(|v| v.is(false, kind)),
            _ if list => false,
            AttrValue::S(_) => kind == AttrKind::String,
            AttrValue::I(_) => kind == AttrKind::Int,
            AttrValue::F(_) => kind == AttrKind::Float,
            AttrValue::B(_) => kind == AttrKind::Bool,
            AttrValue::Type(_) => kind == AttrKind::Type,
            AttrValue::Shape(_) => kind == AttrKind::Shape,
            AttrValue::Tensor(_) => kind == AttrKind::Tensor,
        }
    }
}

/// One attr of an op.
#[derive(Clone, Debug, PartialEq)]
pub struct AttrDef {
    /// `[a-zA-Z][a-zA-Z0-9_]*`.
    pub name: String,
    /// `list(...)`.
    pub list: bool,
    /// The kind of the value (or of each item).
    pub kind: AttrKind,
    /// For type attrs: the dtypes allowed (`{float, int32}`, `numbertype`, ...).
    pub allowed_types: Option<Vec<TF_DataType>>,
    /// For string attrs: the strings allowed (`{'SAME', 'VALID'}`).
    pub allowed_strings: Option<Vec<String>>,
    /// `>= N`: the least int value, or the least list length.
    pub minimum: Option<i64>,
    /// The value when the program gives none.
    pub default: Option<AttrValue>,
}

/// The dtype of an input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgType {
    /// A fixed dtype (`x: float`).
    Fixed(TF_DataType),
    /// The value of a `type` attr (`x: T`).
    Attr(String),
    /// The dtypes of a `list(type)` attr, one tensor each (`args: Tin`).
    List(String),
}

/// One input or output of an op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgDef {
    /// `[a-z][a-z0-9_]*`.
    pub name: String,
    /// `N * T`: N tensors, N an `int` attr.
    pub number_attr: Option<String>,
    /// The dtype(s).
    pub ty: ArgType,
    /// `Ref(...)`.
    pub is_ref: bool,
}

/// A deprecation (`TF_OpDefinitionBuilderDeprecated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deprecation {
    /// The first GraphDef version the op is deprecated in.
    pub version: i32,
    /// Why, and what to use instead.
    pub explanation: String,
}

/// A whole op definition.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpDef {
    /// The op's name (`Conv2D`).
    pub name: String,
    /// Inputs in order.
    pub inputs: Vec<ArgDef>,
    /// Outputs in order.
    pub outputs: Vec<ArgDef>,
    /// Attrs in order.
    pub attrs: Vec<AttrDef>,
    /// `SetIsCommutative`.
    pub is_commutative: bool,
    /// `SetIsAggregate`.
    pub is_aggregate: bool,
    /// `SetIsStateful`.
    pub is_stateful: bool,
    /// `SetAllowsUninitializedInput`.
    pub allows_uninitialized_input: bool,
    /// `Deprecated`.
    pub deprecation: Option<Deprecation>,
}

/// Why a spec or definition is rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// TensorFlow's dtype names in specs (`float`, `int32`, ...) and `DT_*` enum names.
pub fn dtype_by_name(s: &str) -> Option<TF_DataType> {
    let s = s.strip_prefix("DT_").map(str::to_ascii_lowercase).unwrap_or_else(|| s.to_owned());
    Some(match s.as_str() {
        "float" => TF_FLOAT,
        "double" => TF_DOUBLE,
        "int32" => TF_INT32,
        "uint8" => TF_UINT8,
        "int16" => TF_INT16,
        "int8" => TF_INT8,
        "string" => TF_STRING,
        "complex64" => TF_COMPLEX64,
        "int64" => TF_INT64,
        "bool" => TF_BOOL,
        "qint8" => TF_QINT8,
        "quint8" => TF_QUINT8,
        "qint32" => TF_QINT32,
        "bfloat16" => TF_BFLOAT16,
        "qint16" => TF_QINT16,
        "quint16" => TF_QUINT16,
        "uint16" => TF_UINT16,
        "complex128" => TF_COMPLEX128,
        "half" => TF_HALF,
        "resource" => TF_RESOURCE,
        "variant" => TF_VARIANT,
        "uint32" => TF_UINT32,
        "uint64" => TF_UINT64,
        "float8_e5m2" => TF_FLOAT8_E5M2,
        "float8_e4m3fn" => TF_FLOAT8_E4M3FN,
        _ => return None,
    })
}

/// TensorFlow's type categories (`numbertype`, `realnumbertype`, `quantizedtype`).
fn category(s: &str) -> Option<&'static [TF_DataType]> {
    const QUANTIZED: &[TF_DataType] = &[TF_QINT8, TF_QUINT8, TF_QINT32, TF_QINT16, TF_QUINT16];
    const REAL: &[TF_DataType] = &[
        TF_FLOAT,
        TF_DOUBLE,
        TF_INT32,
        TF_INT64,
        TF_UINT8,
        TF_INT16,
        TF_INT8,
        TF_UINT16,
        TF_HALF,
        TF_UINT32,
        TF_UINT64,
        TF_BFLOAT16,
    ];
    const NUMBER: &[TF_DataType] = &[
        TF_FLOAT,
        TF_DOUBLE,
        TF_INT32,
        TF_UINT8,
        TF_INT16,
        TF_INT8,
        TF_COMPLEX64,
        TF_INT64,
        TF_QINT8,
        TF_QUINT8,
        TF_QINT32,
        TF_BFLOAT16,
        TF_QINT16,
        TF_QUINT16,
        TF_UINT16,
        TF_COMPLEX128,
        TF_HALF,
        TF_UINT32,
        TF_UINT64,
    ];
    match s {
        "numbertype" => Some(NUMBER),
        "realnumbertype" => Some(REAL),
        "quantizedtype" => Some(QUANTIZED),
        _ => None,
    }
}

fn is_name(s: &str, first: impl Fn(char) -> bool, rest: impl Fn(char) -> bool) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(first) && c.all(rest)
}

/// Splits `s` at commas outside quotes and brackets.
fn split_top(s: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut quote, mut start) = (Vec::new(), 0i32, None, 0);
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[' | '(' | '{') => depth += 1,
            (None, ']' | ')' | '}') => depth -= 1,
            (None, ',') if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Whether byte `at` of `s` is inside a quoted string.
fn in_quotes(s: &str, at: usize) -> bool {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        if i >= at {
            break;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(c),
            _ => {}
        }
    }
    quote.is_some()
}

/// The first index of `pat` in `s` outside quoted strings.
fn outside_quotes(s: &str, pat: &str) -> Option<usize> {
    s.match_indices(pat).map(|(i, _)| i).find(|&i| !in_quotes(s, i))
}

/// A quoted string (`'a'` or `"a"`, with C escapes `\n`, `\t`, `\\`, `\'`, `\"`).
fn unquote(s: &str) -> Option<String> {
    let s = s.trim();
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = s.strip_prefix(q)?.strip_suffix(q)?;
    let (mut out, mut chars) = (String::new(), inner.chars());
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next()? {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            '0' => '\0',
            other => other,
        });
    }
    Some(out)
}

/// A default value of `kind` in protobuf text form (`3`, `1.5`, `true`, `'SAME'`,
/// `DT_FLOAT` or `float`, `[1, 2]` for shapes and lists).
fn parse_value(s: &str, list: bool, kind: AttrKind) -> Option<AttrValue> {
    let s = s.trim();
    if list {
        let inner = s.strip_prefix('[')?.strip_suffix(']')?.trim();
        if inner.is_empty() {
            return Some(AttrValue::List(Vec::new()));
        }
        let items: Option<Vec<_>> =
            split_top(inner).into_iter().map(|i| parse_value(i, false, kind)).collect();
        return items.map(AttrValue::List);
    }
    Some(match kind {
        AttrKind::String => AttrValue::S(unquote(s)?),
        AttrKind::Int => AttrValue::I(s.parse().ok()?),
        AttrKind::Float => AttrValue::F(match s {
            "inf" | "Infinity" => f32::INFINITY,
            "-inf" | "-Infinity" => f32::NEG_INFINITY,
            "nan" | "NaN" => f32::NAN,
            _ => s.trim_end_matches(['f', 'F']).parse().ok()?,
        }),
        AttrKind::Bool => AttrValue::B(match s {
            "true" => true,
            "false" => false,
            _ => return None,
        }),
        AttrKind::Type => AttrValue::Type(dtype_by_name(s)?),
        AttrKind::Shape => AttrValue::Shape(if s == "<unknown>" {
            ShapeValue::Unknown
        } else {
            let inner = s.strip_prefix('[')?.strip_suffix(']')?.trim();
            let dims: Option<Vec<i64>> = if inner.is_empty() {
                Some(Vec::new())
            } else {
                inner.split(',').map(|d| d.trim().parse().ok().filter(|d: &i64| *d >= -1)).collect()
            };
            ShapeValue::Dims(dims?)
        }),
        AttrKind::Tensor | AttrKind::Func => return None,
    })
}

/// Parses an attr spec: `<name>: <type>[ >= <min>][ = <default>]`.
///
/// ```
/// use hostrt_c::tf::op_def::{AttrKind, AttrValue, parse_attr};
/// let a = parse_attr("N: int >= 1 = 2").unwrap();
/// assert_eq!((a.kind, a.minimum, a.default), (AttrKind::Int, Some(1), Some(AttrValue::I(2))));
/// assert!(parse_attr("x: list(nonsense)").is_err());
/// ```
pub fn parse_attr(spec: &str) -> Result<AttrDef, SpecError> {
    let bad = |why: &str| SpecError(format!("Attr(\"{spec}\"): {why}"));
    let (name, rest) = spec.split_once(':').ok_or_else(|| bad("expected '<name>: <type>'"))?;
    let name = name.trim();
    if !is_name(name, |c| c.is_ascii_alphabetic(), |c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(bad("the name must match [a-zA-Z][a-zA-Z0-9_]*"));
    }
    // The default follows the first '=' (outside quotes) that is not part of '>='.
    let default_at = (0..rest.len()).find(|&i| {
        rest.as_bytes()[i] == b'=' && (i == 0 || rest.as_bytes()[i - 1] != b'>') && !in_quotes(rest, i)
    });
    let (ty, default) = match default_at {
        Some(i) => (rest[..i].trim(), Some(rest[i + 1..].trim())),
        None => (rest.trim(), None),
    };
    let (ty, minimum) = match outside_quotes(ty, ">=") {
        Some(i) => {
            let m =
                ty[i + 2..].trim().parse().map_err(|_| bad("the minimum after '>=' must be an integer"))?;
            (ty[..i].trim(), Some(m))
        }
        None => (ty, None),
    };
    let (list, inner) = match ty.strip_prefix("list(").and_then(|t| t.strip_suffix(')')) {
        Some(inner) => (true, inner.trim()),
        None => (false, ty),
    };
    let mut attr = AttrDef {
        name: name.to_owned(),
        list,
        kind: AttrKind::Type,
        allowed_types: None,
        allowed_strings: None,
        minimum,
        default: None,
    };
    if let Some(kind) = AttrKind::parse(inner) {
        attr.kind = kind;
    } else if let Some(types) = category(inner) {
        attr.allowed_types = Some(types.to_vec());
    } else if let Some(set) = inner.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
        let items: Vec<&str> = split_top(set).into_iter().map(str::trim).filter(|i| !i.is_empty()).collect();
        if items.is_empty() {
            return Err(bad("an empty set of allowed values"));
        }
        if items[0].starts_with(['\'', '"']) {
            attr.kind = AttrKind::String;
            let strings: Option<Vec<String>> = items.iter().map(|i| unquote(i)).collect();
            attr.allowed_strings = Some(strings.ok_or_else(|| bad("every allowed string must be quoted"))?);
        } else {
            let mut types = Vec::new();
            for item in items {
                match (dtype_by_name(item), category(item)) {
                    (Some(t), _) => types.push(t),
                    (None, Some(c)) => types.extend_from_slice(c),
                    (None, None) => return Err(bad(&format!("unknown type '{item}'"))),
                }
            }
            attr.allowed_types = Some(types);
        }
    } else {
        return Err(bad(&format!("unknown attr type '{inner}'")));
    }
    if attr.minimum.is_some() && !(attr.list || attr.kind == AttrKind::Int) {
        return Err(bad("'>=' applies only to int and list attrs"));
    }
    if let Some(d) = default {
        let value = parse_value(d, attr.list, attr.kind)
            .ok_or_else(|| bad(&format!("the default '{d}' is not a {}", type_name(&attr))))?;
        check_value(&attr, &value).map_err(|e| bad(&e))?;
        attr.default = Some(value);
    }
    Ok(attr)
}

/// `list(int)`, `type`, ... for messages.
fn type_name(a: &AttrDef) -> String {
    if a.list { format!("list({})", a.kind.name()) } else { a.kind.name().to_owned() }
}

/// Whether `value` satisfies `attr`'s kind and constraints; the reason if not.
pub fn check_value(attr: &AttrDef, value: &AttrValue) -> Result<(), String> {
    if !value.is(attr.list, attr.kind) {
        return Err(format!("attr '{}' expects a {}", attr.name, type_name(attr)));
    }
    let items: &[AttrValue] = match value {
        AttrValue::List(items) => items,
        single => std::slice::from_ref(single),
    };
    if let (Some(min), AttrValue::List(items)) = (attr.minimum, value)
        && (items.len() as i64) < min
    {
        return Err(format!("attr '{}' needs at least {min} values, got {}", attr.name, items.len()));
    }
    for v in items {
        match (v, &attr.allowed_types, &attr.allowed_strings, attr.minimum) {
            (AttrValue::Type(t), Some(allowed), _, _) if !allowed.contains(t) => {
                return Err(format!("attr '{}': dtype {} is not allowed", attr.name, dtype_name(*t)));
            }
            (AttrValue::S(s), _, Some(allowed), _) if !allowed.contains(s) => {
                return Err(format!("attr '{}': value '{s}' is not one of {allowed:?}", attr.name));
            }
            (AttrValue::I(i), _, _, Some(min)) if !attr.list && *i < min => {
                return Err(format!("attr '{}' must be at least {min}, got {i}", attr.name));
            }
            _ => {}
        }
    }
    Ok(())
}

/// TensorFlow's name of a dtype (`float`, `int32`, ...).
pub fn dtype_name(t: TF_DataType) -> String {
    const NAMES: [&str; 26] = [
        "invalid",
        "float",
        "double",
        "int32",
        "uint8",
        "int16",
        "int8",
        "string",
        "complex64",
        "int64",
        "bool",
        "qint8",
        "quint8",
        "qint32",
        "bfloat16",
        "qint16",
        "quint16",
        "uint16",
        "complex128",
        "half",
        "resource",
        "variant",
        "uint32",
        "uint64",
        "float8_e5m2",
        "float8_e4m3fn",
    ];
    usize::try_from(t)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("dtype {t}"), |n| (*n).to_owned())
}

/// Parses an input or output spec: `<name>: <type-expr>` or `<name>: Ref(<type-expr>)`,
/// `<type-expr>` one of `float`, `T`, `N * T`, `Tlist`. Attr references are resolved when
/// the whole op is checked ([`check_op`]).
pub fn parse_arg(spec: &str, what: &str) -> Result<ArgDef, SpecError> {
    let bad = |why: &str| SpecError(format!("{what}(\"{spec}\"): {why}"));
    let (name, rest) = spec.split_once(':').ok_or_else(|| bad("expected '<name>: <type>'"))?;
    let name = name.trim();
    if !is_name(
        name,
        |c| c.is_ascii_lowercase(),
        |c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_',
    ) {
        return Err(bad("the name must match [a-z][a-z0-9_]*"));
    }
    let mut ty = rest.trim();
    let is_ref = match ty.strip_prefix("Ref(").and_then(|t| t.strip_suffix(')')) {
        Some(inner) => {
            ty = inner.trim();
            true
        }
        None => false,
    };
    let (number_attr, ty) = match ty.split_once('*') {
        Some((n, t)) => (Some(n.trim().to_owned()), t.trim()),
        None => (None, ty),
    };
    let ident = |s: &str| is_name(s, |c| c.is_ascii_alphabetic(), |c| c.is_ascii_alphanumeric() || c == '_');
    if !ident(ty) || number_attr.as_deref().is_some_and(|n| !ident(n)) {
        return Err(bad("expected a type, an attr name or '<N> * <type>'"));
    }
    // A dtype name, or an attr (type or list(type)) resolved by check_op.
    let ty = match dtype_by_name(ty) {
        Some(t) if ty.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') => {
            ArgType::Fixed(t)
        }
        _ => ArgType::Attr(ty.to_owned()),
    };
    Ok(ArgDef { name: name.to_owned(), number_attr, ty, is_ref })
}

/// Checks a whole definition as registration does: unique names, every attr an input or
/// output names exists with the right kind (`N * T`: N an int, T a type; `Tlist`: a
/// list(type)); number attrs get TensorFlow's default minimum of 1.
pub fn check_op(op: &mut OpDef) -> Result<(), SpecError> {
    let name = op.name.clone();
    let bad = |why: String| SpecError(format!("op '{name}': {why}"));
    if !is_name(&op.name, |c| c.is_ascii_uppercase(), |c| c.is_ascii_alphanumeric() || c == '_' || c == '>') {
        return Err(bad("the name must match [A-Z][a-zA-Z0-9>_]*".into()));
    }
    for (i, a) in op.attrs.iter().enumerate() {
        if op.attrs[..i].iter().any(|b| b.name == a.name) {
            return Err(bad(format!("attr '{}' defined twice", a.name)));
        }
    }
    let args: Vec<&ArgDef> = op.inputs.iter().chain(&op.outputs).collect();
    for (i, a) in op.inputs.iter().enumerate() {
        if op.inputs[..i].iter().any(|b| b.name == a.name) {
            return Err(bad(format!("input '{}' defined twice", a.name)));
        }
    }
    for (i, a) in op.outputs.iter().enumerate() {
        if op.outputs[..i].iter().any(|b| b.name == a.name) {
            return Err(bad(format!("output '{}' defined twice", a.name)));
        }
    }
    let mut number_attrs = Vec::new();
    let mut resolved = Vec::new();
    for arg in args {
        let find = |n: &str| op.attrs.iter().find(|a| a.name == n);
        if let Some(n) = &arg.number_attr {
            match find(n) {
                Some(a) if a.kind == AttrKind::Int && !a.list => number_attrs.push(n.clone()),
                Some(_) => return Err(bad(format!("'{}': attr '{n}' must be an int", arg.name))),
                None => return Err(bad(format!("'{}': no attr named '{n}'", arg.name))),
            }
        }
        let ty = match &arg.ty {
            ArgType::Attr(t) => match find(t) {
                Some(a) if a.kind == AttrKind::Type && !a.list => ArgType::Attr(t.clone()),
                Some(a) if a.kind == AttrKind::Type && a.list && arg.number_attr.is_none() => {
                    ArgType::List(t.clone())
                }
                Some(_) => {
                    return Err(bad(format!(
                        "'{}': attr '{t}' must be a type (or an unnumbered list(type))",
                        arg.name
                    )));
                }
                None => match dtype_by_name(t) {
                    Some(dt) => ArgType::Fixed(dt),
                    None => return Err(bad(format!("'{}': no attr or type named '{t}'", arg.name))),
                },
            },
            other => other.clone(),
        };
        resolved.push(ty);
    }
    let (ins, outs) = resolved.split_at(op.inputs.len());
    for (arg, ty) in op.inputs.iter_mut().zip(ins) {
        arg.ty = ty.clone();
    }
    for (arg, ty) in op.outputs.iter_mut().zip(outs) {
        arg.ty = ty.clone();
    }
    for a in op.attrs.iter_mut().filter(|a| number_attrs.contains(&a.name)) {
        a.minimum.get_or_insert(1);
        if let Some(d) = &a.default {
            check_value(a, d).map_err(|e| SpecError(format!("op '{name}': {e}")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
