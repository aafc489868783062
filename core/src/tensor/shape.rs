//! Tensor shapes: [`TensorShape`] (known dims), [`PartialTensorShape`] (unranked, or dims of
//! which `-1` is unknown) and [`TensorMetadata`] (dtype and shape), with TFRT's text forms.
//!
//! Dims are stored inline (no allocation): up to [`MAX_RANK`] of them. TFRT allows rank 255;
//! a larger rank here is an error value, never a truncation.

use core::fmt;

use super::DType;

/// The largest rank a shape holds (dims are stored inline, 8 bytes each).
pub const MAX_RANK: usize = 16;

/// A shape had more dims than [`MAX_RANK`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankTooLarge(pub usize);

impl fmt::Display for RankTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} is larger than the supported {MAX_RANK}", self.0)
    }
}

type Dims = heapless::Vec<i64, MAX_RANK>;

fn dims_of(dims: &[i64]) -> Result<Dims, RankTooLarge> {
    Dims::from_slice(dims).map_err(|_| RankTooLarge(dims.len()))
}

/// Writes `[d0, d1, ...]`.
fn write_dims(f: &mut fmt::Formatter<'_>, dims: &[i64]) -> fmt::Result {
    f.write_str("[")?;
    for (i, d) in dims.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{d}")?;
    }
    f.write_str("]")
}

/// A shape with every dim known: a rank and one signed 64-bit dim per axis.
///
/// ```
/// use hostrt_core::tensor::TensorShape;
///
/// let s = TensorShape::new(&[2, 3, 4]).unwrap();
/// assert_eq!(s.num_elements(), 24);
/// assert_eq!(s.to_string(), "[2, 3, 4]");
/// assert_eq!(TensorShape::new(&[]).unwrap().num_elements(), 1, "a scalar");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorShape {
    dims: Dims,
}

impl TensorShape {
    /// A shape with these dims.
    pub fn new(dims: &[i64]) -> Result<Self, RankTooLarge> {
        Ok(TensorShape { dims: dims_of(dims)? })
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The dims, outermost first.
    pub fn dims(&self) -> &[i64] {
        &self.dims
    }

    /// Dim `axis`, `None` past the rank.
    pub fn dim(&self, axis: usize) -> Option<i64> {
        self.dims.get(axis).copied()
    }

    /// The product of the dims (1 for rank 0), in wrapping 64-bit arithmetic as TFRT computes
    /// it; see [`checked_num_elements`](Self::checked_num_elements) to size a buffer.
    pub fn num_elements(&self) -> i64 {
        self.dims.iter().fold(1i64, |n, &d| n.wrapping_mul(d))
    }

    /// The number of elements as a `usize`, `None` when a dim is negative or the product
    /// overflows (such a shape cannot describe a buffer).
    pub fn checked_num_elements(&self) -> Option<usize> {
        self.dims.iter().try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
    }
}

impl fmt::Display for TensorShape {
    /// `[d0, d1, ...]`; `[]` for rank 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_dims(f, &self.dims)
    }
}

/// A shape that may be unranked, or have unknown dims (`-1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PartialTensorShape {
    /// `None`: unranked.
    dims: Option<Dims>,
}

/// A partial shape could not become a [`TensorShape`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotKnown {
    /// The shape has no rank.
    UnknownRank,
    /// These axes (ascending) are `-1`.
    UnknownDims(heapless::Vec<usize, MAX_RANK>),
}

impl fmt::Display for NotKnown {
    /// TFRT's messages: `Unknown rank`, `Unknown dimensions at following indices = [0, 2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotKnown::UnknownRank => f.write_str("Unknown rank"),
            NotKnown::UnknownDims(axes) => {
                f.write_str("Unknown dimensions at following indices = [")?;
                for (i, a) in axes.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str("]")
            }
        }
    }
}

impl PartialTensorShape {
    /// An unranked shape.
    pub const fn unranked() -> Self {
        PartialTensorShape { dims: None }
    }

    /// A ranked shape; `-1` marks an unknown dim.
    pub fn new(dims: &[i64]) -> Result<Self, RankTooLarge> {
        Ok(PartialTensorShape { dims: Some(dims_of(dims)?) })
    }

    /// The dims, `None` when unranked.
    pub fn dims(&self) -> Option<&[i64]> {
        self.dims.as_deref()
    }

    /// Ranked with no unknown dim.
    pub fn is_known(&self) -> bool {
        self.dims.as_ref().is_some_and(|d| !d.contains(&-1))
    }

    /// The known shape, or why there is none.
    ///
    /// ```
    /// use hostrt_core::tensor::PartialTensorShape;
    ///
    /// let p = PartialTensorShape::new(&[-1, 57, -1]).unwrap();
    /// assert_eq!(p.to_string(), "[-1, 57, -1]");
    /// let why = p.to_shape().unwrap_err();
    /// assert_eq!(why.to_string(), "Unknown dimensions at following indices = [0, 2]");
    /// ```
    pub fn to_shape(&self) -> Result<TensorShape, NotKnown> {
        let Some(dims) = &self.dims else { return Err(NotKnown::UnknownRank) };
        let unknown: heapless::Vec<usize, MAX_RANK> =
            dims.iter().enumerate().filter(|(_, d)| **d == -1).map(|(i, _)| i).collect();
        if unknown.is_empty() {
            Ok(TensorShape { dims: dims.clone() })
        } else {
            Err(NotKnown::UnknownDims(unknown))
        }
    }
}

impl From<&TensorShape> for PartialTensorShape {
    fn from(s: &TensorShape) -> Self {
        PartialTensorShape { dims: Some(s.dims.clone()) }
    }
}

impl fmt::Display for PartialTensorShape {
    /// `Unknown rank`, or the dims with unknown ones as `-1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.dims {
            None => f.write_str("Unknown rank"),
            Some(d) => write_dims(f, d),
        }
    }
}

/// A shape of exactly `N` dims (`!ts.fixed_rank_shape.N`; the shape of fixed-rank views).
///
/// It prints as a shape, except that it prints `[]` whenever the product of its dims is 0
/// (TFRT's quirk, kept because error messages show it).
///
/// ```
/// use hostrt_core::tensor::FixedRankShape;
///
/// assert_eq!(FixedRankShape([1, 57, 92]).to_string(), "[1, 57, 92]");
/// assert_eq!(FixedRankShape([2, 0, 3, 1]).to_string(), "[]");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FixedRankShape<const N: usize>(pub [i64; N]);

impl<const N: usize> FixedRankShape<N> {
    /// The dims of `shape` when its rank is `N`.
    pub fn of(shape: &TensorShape) -> Option<Self> {
        shape.dims().try_into().ok().map(FixedRankShape)
    }
}

impl<const N: usize> fmt::Display for FixedRankShape<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.iter().fold(1i64, |n, &d| n.wrapping_mul(d)) == 0 {
            return f.write_str("[]");
        }
        write_dims(f, &self.0)
    }
}

/// A tensor's dtype and shape; equal iff both are.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMetadata {
    /// The element type.
    pub dtype: DType,
    /// The shape.
    pub shape: TensorShape,
}

impl TensorMetadata {
    /// Bytes of the row-major data (`None` when the shape cannot describe a buffer).
    pub fn data_size(&self) -> Option<usize> {
        self.shape.checked_num_elements()?.checked_mul(self.dtype.size())
    }
}

impl fmt::Display for TensorMetadata {
    /// `<dtype> <shape>` (`f32 [2, 3]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.dtype, self.shape)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;

    #[test]
    fn shapes_print_and_count_as_tfrt_does() {
        let big = TensorShape::new(&[4294967295, 4294967295, 4294967295, 65536]).unwrap();
        assert_eq!(big.to_string(), "[4294967295, 4294967295, 4294967295, 65536]");
        assert_eq!(big.dim(3), Some(65536));
        assert_eq!(big.checked_num_elements(), None, "overflows: cannot size a buffer");
        assert_eq!(TensorShape::new(&[]).unwrap().to_string(), "[]");
        assert_eq!(TensorShape::new(&[2, 0, 3]).unwrap().num_elements(), 0);
        assert_eq!(TensorShape::new(&[-2, 3]).unwrap().checked_num_elements(), None);
        assert_eq!(TensorShape::new(&[1; MAX_RANK + 1]), Err(RankTooLarge(MAX_RANK + 1)));
        assert_ne!(TensorShape::new(&[1, 2]).unwrap(), TensorShape::new(&[2, 1]).unwrap());
    }

    #[test]
    fn partial_shapes_know_what_they_lack() {
        assert_eq!(PartialTensorShape::unranked().to_string(), "Unknown rank");
        assert_eq!(PartialTensorShape::unranked().to_shape(), Err(NotKnown::UnknownRank));
        assert_eq!(NotKnown::UnknownRank.to_string(), "Unknown rank");
        let known = PartialTensorShape::new(&[1, 57, 92]).unwrap();
        assert!(known.is_known());
        assert_eq!(known.to_shape().unwrap().to_string(), "[1, 57, 92]");
        let s = TensorShape::new(&[3]).unwrap();
        assert_eq!(PartialTensorShape::from(&s).to_shape(), Ok(s));
    }

    #[test]
    fn metadata_sizes_its_data() {
        let m = TensorMetadata { dtype: DType::F64, shape: TensorShape::new(&[2, 3]).unwrap() };
        assert_eq!(m.data_size(), Some(48));
        assert_eq!(m.to_string(), "f64 [2, 3]");
    }
}
