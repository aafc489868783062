//! Attribute views: constants read in place from program bytes, never copied.

use core::fmt;

use crate::diagnostic::{DiagArg, MessageText};
use crate::tensor::{DType, TensorShape};

/// The kind of an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// `i1`: one byte, 0 or 1.
    Bool,
    /// Signed integers.
    I8,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// UTF-8 text.
    String,
    /// A homogeneous array of scalars of the given kind.
    Array(ScalarKind),
    /// A reference to a function of the program, by index.
    Function,
    /// A type, by the program's type index.
    Type,
    /// A nested array: the payload lists child attribute indices (see [`AttrRef::children`]).
    Aggregate,
    /// A dictionary (name and attribute index per entry).
    Dict,
    /// A unit attribute (no value).
    Unit,
    /// Dense elements of a dtype (`dense<...> : tensor<...>`); see [`AttrRef::get_dense`].
    Dense(DType),
}

/// Element kinds of array attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum ScalarKind {
    Bool,
    I8,
    I32,
    I64,
    F32,
    F64,
}

impl ScalarKind {
    /// The MLIR type name (`i32`).
    pub const fn name(self) -> &'static str {
        match self {
            ScalarKind::Bool => "i1",
            ScalarKind::I8 => "i8",
            ScalarKind::I32 => "i32",
            ScalarKind::I64 => "i64",
            ScalarKind::F32 => "f32",
            ScalarKind::F64 => "f64",
        }
    }
}

/// The type name, for diagnostics (plain `write_str`: no padding or `Debug` machinery, which
/// would cost flash on firmware).
impl fmt::Display for ScalarKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl AttrKind {
    /// What the attribute is, in words (`i32`, `array of f32`, `string`), as a prefix and a
    /// name, for diagnostics.
    fn words(self) -> (&'static str, &'static str) {
        let name = match self {
            AttrKind::Bool => ScalarKind::Bool.name(),
            AttrKind::I8 => ScalarKind::I8.name(),
            AttrKind::I32 => ScalarKind::I32.name(),
            AttrKind::I64 => ScalarKind::I64.name(),
            AttrKind::F32 => ScalarKind::F32.name(),
            AttrKind::F64 => ScalarKind::F64.name(),
            AttrKind::Array(s) => return ("array of ", s.name()),
            AttrKind::String => "string",
            AttrKind::Function => "function",
            AttrKind::Type => "type",
            AttrKind::Aggregate => "nested array",
            AttrKind::Dict => "dictionary",
            AttrKind::Unit => "unit",
            AttrKind::Dense(d) => return ("dense ", d.name()),
        };
        ("", name)
    }
}

impl fmt::Display for AttrKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (prefix, name) = self.words();
        f.write_str(prefix)?;
        f.write_str(name)
    }
}

impl DiagArg for AttrKind {
    fn write_diag(&self, out: &mut MessageText) {
        let (prefix, name) = self.words();
        out.push_str(prefix);
        out.push_str(name);
    }
}

impl DiagArg for ScalarKind {
    fn write_diag(&self, out: &mut MessageText) {
        out.push_str(self.name());
    }
}

/// A borrowed attribute: its kind and its little-endian bytes, aligned for in-place reads.
#[derive(Clone, Copy, PartialEq)]
pub struct AttrRef<'a> {
    kind: AttrKind,
    bytes: &'a [u8],
}

impl fmt::Debug for AttrRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AttrRef({:?}, {} bytes)", self.kind, self.bytes.len())
    }
}

/// Scalar types that can be read from attributes in place.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes accepted by `check` must be a valid value,
/// and `KIND` must describe the type's encoding.
pub unsafe trait AttrScalar: Copy + 'static {
    /// The scalar kind.
    const KIND: ScalarKind;
    /// Validate raw bytes of one element (bools must be 0 or 1).
    fn check(_bytes: &[u8]) -> bool {
        true
    }
}

macro_rules! scalar {
    ($t:ty, $k:ident) => {
        // SAFETY: plain-old-data integer/float type; every bit pattern is valid.
        unsafe impl AttrScalar for $t {
            const KIND: ScalarKind = ScalarKind::$k;
        }
    };
}
scalar!(i8, I8);
scalar!(i32, I32);
scalar!(i64, I64);
scalar!(f32, F32);
scalar!(f64, F64);

// SAFETY: `check` admits only 0 and 1, the valid bool bytes.
unsafe impl AttrScalar for bool {
    const KIND: ScalarKind = ScalarKind::Bool;
    fn check(bytes: &[u8]) -> bool {
        bytes.iter().all(|b| *b <= 1)
    }
}

pub(crate) const fn scalar_attr_kind(k: ScalarKind) -> AttrKind {
    match k {
        ScalarKind::Bool => AttrKind::Bool,
        ScalarKind::I8 => AttrKind::I8,
        ScalarKind::I32 => AttrKind::I32,
        ScalarKind::I64 => AttrKind::I64,
        ScalarKind::F32 => AttrKind::F32,
        ScalarKind::F64 => AttrKind::F64,
    }
}

impl<'a> AttrRef<'a> {
    /// A scalar attribute over `bytes` (exactly one valid element; any alignment).
    pub fn scalar<T: AttrScalar>(bytes: &'a [u8]) -> Option<Self> {
        if bytes.len() != core::mem::size_of::<T>() || !T::check(bytes) {
            return None;
        }
        Some(AttrRef { kind: scalar_attr_kind(T::KIND), bytes })
    }

    /// An array attribute over `bytes` (aligned for `T`, whole elements, valid values).
    pub fn array<T: AttrScalar>(bytes: &'a [u8]) -> Option<Self> {
        let size = core::mem::size_of::<T>();
        let aligned = (bytes.as_ptr() as usize).is_multiple_of(core::mem::align_of::<T>());
        if !aligned || !bytes.len().is_multiple_of(size) || !T::check(bytes) {
            return None;
        }
        Some(AttrRef { kind: AttrKind::Array(T::KIND), bytes })
    }

    /// An attribute of `kind` over `bytes`, unchecked: for the program reader, whose
    /// verifier already checked the blob.
    ///
    /// # Safety
    ///
    /// `bytes` must hold what [`scalar`](Self::scalar), [`array`](Self::array),
    /// [`string`](Self::string) or [`raw`](Self::raw) would accept for `kind`; for a dense
    /// kind anything goes, as [`dense`](Self::dense) accepts (`get_dense` checks it).
    pub(crate) const unsafe fn verified(kind: AttrKind, bytes: &'a [u8]) -> Self {
        AttrRef { kind, bytes }
    }

    /// A string attribute.
    pub fn string(s: &'a str) -> Self {
        AttrRef { kind: AttrKind::String, bytes: s.as_bytes() }
    }

    /// A dense attribute of `dtype` over its BEF payload (`u64` rank, `rank` × `i64` dims,
    /// the elements). Not checked here (that code would sit in every image that reads
    /// attributes): [`get_dense`](Self::get_dense) checks the payload and the data's
    /// alignment, and gives `None` for a malformed one.
    pub fn dense(dtype: DType, payload: &'a [u8]) -> Self {
        AttrRef { kind: AttrKind::Dense(dtype), bytes: payload }
    }

    /// The dense elements of a dense attribute: shape and row-major data, in place. `None` if
    /// the attribute is not dense or its payload is malformed (rank, dims, length, alignment,
    /// or a bool byte other than 0/1).
    pub fn get_dense(&self) -> Option<DenseAttr<'a>> {
        let AttrKind::Dense(dtype) = self.kind else { return None };
        let word = |i: usize| -> Option<u64> {
            Some(u64::from_le_bytes(self.bytes.get(8 * i..8 * i + 8)?.try_into().ok()?))
        };
        let rank = usize::try_from(word(0)?).ok().filter(|r| *r <= crate::tensor::MAX_RANK)?;
        let mut dims = [0i64; crate::tensor::MAX_RANK];
        for (i, d) in dims[..rank].iter_mut().enumerate() {
            *d = word(i + 1)? as i64;
        }
        let shape = TensorShape::new(&dims[..rank]).ok()?;
        let data = self.bytes.get(8 * (rank + 1)..)?;
        dense_data_ok(dtype, shape.checked_num_elements()?, data).then_some(DenseAttr { dtype, shape, data })
    }

    /// [`AttrRef::get_dense`] of an attribute whose rank must be `dims.len()`: writes its dims
    /// into `dims` and gives its element type and data, or `None` where `get_dense` is
    /// `None`, the rank differs or a dim does not fit a `usize`. Builds no [`TensorShape`],
    /// for kernels that read their attributes on every call.
    ///
    /// ```
    /// use hostrt_core::kernel::AttrRef;
    /// use hostrt_core::tensor::DType;
    ///
    /// // Rank 1, dim 2, then two i8 values (the payload of a BEF dense attribute).
    /// let mut bytes = [1u64.to_le_bytes(), 2u64.to_le_bytes()].concat();
    /// bytes.extend([7, 9]);
    /// let attr = AttrRef::dense(DType::I8, &bytes);
    /// let mut dims = [0];
    /// assert_eq!(attr.get_dense_into(&mut dims), Some((DType::I8, &[7u8, 9][..])));
    /// assert_eq!(dims, [2]);
    /// assert_eq!(attr.get_dense_into(&mut [0, 0]), None);
    /// ```
    pub fn get_dense_into(&self, dims: &mut [usize]) -> Option<(DType, &'a [u8])> {
        let AttrKind::Dense(dtype) = self.kind else { return None };
        let rank = dims.len();
        if rank > crate::tensor::MAX_RANK {
            return None;
        }
        let (head, data) = self.bytes.split_at_checked(8 * (rank + 1))?;
        let (words, _) = head.as_chunks::<8>();
        if u64::from_le_bytes(words[0]) != rank as u64 {
            return None;
        }
        let mut elements = 1usize;
        for (d, word) in dims.iter_mut().zip(&words[1..]) {
            *d = usize::try_from(i64::from_le_bytes(*word)).ok()?;
            elements = elements.checked_mul(*d)?;
        }
        dense_data_ok(dtype, elements, data).then_some((dtype, data))
    }

    /// An attribute of another kind over raw bytes (functions, types, aggregates), whose
    /// meaning the program reader defines.
    pub fn raw(kind: AttrKind, bytes: &'a [u8]) -> Option<Self> {
        match kind {
            AttrKind::Function | AttrKind::Type | AttrKind::Aggregate | AttrKind::Dict | AttrKind::Unit => {
                Some(AttrRef { kind, bytes })
            }
            _ => None,
        }
    }

    /// The kind.
    pub fn kind(&self) -> AttrKind {
        self.kind
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Read a scalar of type `T`.
    pub fn get<T: AttrScalar>(&self) -> Option<T> {
        if self.kind != scalar_attr_kind(T::KIND) {
            return None;
        }
        // SAFETY: construction checked size and validity for this kind, and `AttrScalar`
        // types accept every such bit pattern; the read tolerates any alignment.
        Some(unsafe { self.bytes.as_ptr().cast::<T>().read_unaligned() })
    }

    /// View an array of `T` in place. An empty nested array (`[]`, whose element type the
    /// text does not say) is an empty array of any `T`.
    pub fn get_array<T: AttrScalar>(&self) -> Option<&'a [T]> {
        if self.kind == AttrKind::Aggregate && self.bytes.is_empty() {
            return Some(&[]);
        }
        if self.kind != AttrKind::Array(T::KIND) {
            return None;
        }
        let n = self.bytes.len() / core::mem::size_of::<T>();
        // SAFETY: construction checked alignment, whole elements and validity for `T`.
        Some(unsafe { core::slice::from_raw_parts(self.bytes.as_ptr().cast::<T>(), n) })
    }

    /// The child attribute indices of an aggregate (nested array) attribute, to be looked up
    /// with [`Invoke::attribute`](crate::kernel::Invoke::attribute).
    pub fn children(&self) -> impl Iterator<Item = u32> + 'a {
        let bytes = if self.kind == AttrKind::Aggregate { self.bytes } else { &[] };
        bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    }

    /// The function indices of a function attribute (`@f` gives one, `[@f, @g]` several).
    pub fn functions(&self) -> impl Iterator<Item = u32> + 'a {
        let bytes = if self.kind == AttrKind::Function { self.bytes } else { &[] };
        bytes.chunks_exact(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    }

    /// The text of a string attribute.
    pub fn get_str(&self) -> Option<&'a str> {
        if self.kind != AttrKind::String {
            return None;
        }
        // Built from `&str` (or verified by the program reader), so this never fails; the
        // check keeps the view sound for any bytes.
        crate::utf8::to_str(self.bytes)
    }
}

/// Whether `data` holds exactly `elements` values of `dtype`, aligned for it, with bool
/// bytes 0 or 1: the checks both dense readers of [`AttrRef`] make on the elements.
#[inline]
fn dense_data_ok(dtype: DType, elements: usize, data: &[u8]) -> bool {
    let Some(size) = elements.checked_mul(dtype.size()) else { return false };
    let aligned = (data.as_ptr() as usize).is_multiple_of(dtype.align());
    size == data.len() && aligned && (dtype != DType::Bool || data.iter().all(|b| *b <= 1))
}

/// A dense attribute's contents, borrowed from the program: dtype, shape and the row-major
/// element bytes (aligned for the dtype).
#[derive(Clone, Debug, PartialEq)]
pub struct DenseAttr<'a> {
    /// The element type.
    pub dtype: DType,
    /// The shape.
    pub shape: TensorShape,
    /// `elements × dtype.size()` bytes, little-endian.
    pub data: &'a [u8],
}
