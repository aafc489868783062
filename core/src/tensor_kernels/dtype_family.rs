//! Element types of the kernel families: how a kernel-name suffix's elements are loaded from
//! and stored to tensor bytes, compared, and read from attributes.

use crate::kernel::AttrScalar;
use crate::tensor::DType;

/// One element of a dtype family, read and written as little-endian bytes (so bool, complex
/// and half types work without typed slices).
pub(crate) trait Scalar: Copy + Send + Sync + 'static {
    /// The dtype.
    const DTYPE: DType;
    /// The element stored at the start of `b` (`b.len() >= DTYPE.size()`).
    fn load(b: &[u8]) -> Self;
    /// Store at the start of `b`.
    fn store(self, b: &mut [u8]);
}

/// Families whose elements compare (`tensor_equal`, `tensor_allclose`).
pub(crate) trait Compare: Scalar {
    /// T's `==` (IEEE for floats).
    fn equal(self, other: Self) -> bool;
    /// TFRT's closeness with `ulp` units (equality for integers and bool).
    fn close(self, other: Self, ulp: u32) -> bool {
        let _ = ulp;
        self.equal(other)
    }
}

/// Families whose values come from scalar attributes (`fill`, `set_tensor_with_constant_values`).
pub(crate) trait FromAttr: Scalar {
    /// The attribute element type the compiler writes for this family.
    type Attr: AttrScalar;
    /// Attribute elements per tensor element (2 for complex: real, imaginary).
    const PER: usize = 1;
    /// The element of `PER` attribute values.
    fn from_attr(a: &[Self::Attr]) -> Self;
}

/// `Scalar` for a number type through its little-endian bytes.
macro_rules! le_scalar {
    ($t:ty => $d:ident) => {
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn load(b: &[u8]) -> Self {
                let mut w = [0u8; core::mem::size_of::<$t>()];
                w.copy_from_slice(&b[..core::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(w)
            }
            fn store(self, b: &mut [u8]) {
                b[..core::mem::size_of::<$t>()].copy_from_slice(&self.to_le_bytes());
            }
        }
    };
}

macro_rules! int_scalar {
    ($($t:ty => $d:ident, $a:ty);* $(;)?) => {$(
        le_scalar!($t => $d);
        impl Compare for $t {
            fn equal(self, other: Self) -> bool {
                self == other
            }
        }
        impl FromAttr for $t {
            type Attr = $a;
            fn from_attr(a: &[$a]) -> Self {
                a[0] as $t
            }
        }
    )*};
}
int_scalar! {
    u8 => U8, i8; u32 => U32, i32; u64 => U64, i64;
    i8 => I8, i8; i32 => I32, i32; i64 => I64, i64;
}

macro_rules! float_scalar {
    ($($t:ty => $d:ident);* $(;)?) => {$(
        le_scalar!($t => $d);
        impl Compare for $t {
            fn equal(self, other: Self) -> bool {
                self == other
            }
            /// `|x − y| ≤ ε·|x + y|·U  or  |x − y| < min_positive`, each step rounded to T.
            fn close(self, other: Self, ulp: u32) -> bool {
                let diff = (self - other).abs();
                diff <= <$t>::EPSILON * (self + other).abs() * (ulp as $t) || diff < <$t>::MIN_POSITIVE
            }
        }
        impl FromAttr for $t {
            type Attr = $t;
            fn from_attr(a: &[$t]) -> Self {
                a[0]
            }
        }
    )*};
}
float_scalar! { f32 => F32; f64 => F64 }

impl Scalar for bool {
    const DTYPE: DType = DType::Bool;
    fn load(b: &[u8]) -> Self {
        b[0] != 0
    }
    fn store(self, b: &mut [u8]) {
        b[0] = u8::from(self);
    }
}
impl Compare for bool {
    fn equal(self, other: Self) -> bool {
        self == other
    }
}
impl FromAttr for bool {
    type Attr = bool;
    fn from_attr(a: &[bool]) -> Self {
        a[0]
    }
}

macro_rules! complex_scalar {
    ($($t:ty => $d:ident);* $(;)?) => {$(
        impl Scalar for [$t; 2] {
            const DTYPE: DType = DType::$d;
            fn load(b: &[u8]) -> Self {
                let n = core::mem::size_of::<$t>();
                [<$t>::load(b), <$t>::load(&b[n..])]
            }
            fn store(self, b: &mut [u8]) {
                let n = core::mem::size_of::<$t>();
                self[0].store(b);
                self[1].store(&mut b[n..]);
            }
        }
        impl Compare for [$t; 2] {
            fn equal(self, other: Self) -> bool {
                self[0] == other[0] && self[1] == other[1]
            }
            fn close(self, other: Self, ulp: u32) -> bool {
                self[0].close(other[0], ulp) && self[1].close(other[1], ulp)
            }
        }
        impl FromAttr for [$t; 2] {
            type Attr = $t;
            const PER: usize = 2;
            fn from_attr(a: &[$t]) -> Self {
                [a[0], a[1]]
            }
        }
    )*};
}
complex_scalar! { f32 => Complex64; f64 => Complex128 }

/// IEEE half, stored only (its raw bits).
#[derive(Clone, Copy)]
pub(crate) struct Half(#[allow(dead_code)] u16);
/// bfloat16, stored only (its raw bits).
#[derive(Clone, Copy)]
pub(crate) struct BHalf(#[allow(dead_code)] u16);

macro_rules! half_scalar {
    ($($t:ident => $d:ident);*) => {$(
        impl Scalar for $t {
            const DTYPE: DType = DType::$d;
            fn load(b: &[u8]) -> Self {
                $t(u16::from_le_bytes([b[0], b[1]]))
            }
            fn store(self, b: &mut [u8]) {
                b[..2].copy_from_slice(&self.0.to_le_bytes());
            }
        }
    )*};
}
half_scalar! { Half => F16; BHalf => BF16 }

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closeness_follows_tfrt() {
        assert!(1.0f32.close(1.0 + f32::EPSILON, 2));
        assert!(!1.0f32.close(1.0 + 8.0 * f32::EPSILON, 2));
        assert!(1.0f32.close(1.0 + 8.0 * f32::EPSILON, 1000));
        assert!(!f32::NAN.close(f32::NAN, 100_000));
        assert!(!f64::INFINITY.close(f64::INFINITY, 2), "inf - inf is NaN");
        assert!(0.0f32.close(f32::MIN_POSITIVE / 2.0, 2), "below the smallest normal");
        assert!([1.0f32, 2.0].close([1.0, 2.0], 2) && ![1.0f32, 2.0].close([1.0, 3.0], 2));
        assert!(0.0f32.equal(-0.0) && !f32::NAN.equal(f32::NAN));
        assert!(7u32.close(7, 2) && !7i64.close(8, 100_000));
    }

    #[test]
    fn elements_round_trip_through_bytes() {
        let mut b = [0u8; 16];
        (-2i64).store(&mut b);
        assert_eq!(i64::load(&b), -2);
        [1.5f64, -3.0].store(&mut b);
        assert_eq!(<[f64; 2]>::load(&b), [1.5, -3.0]);
        true.store(&mut b);
        assert!(bool::load(&b));
        assert_eq!(u8::from_attr(&[-1i8]), 255);
        assert_eq!(<[f32; 2]>::from_attr(&[1.0, 2.0]), [1.0, 2.0]);
    }
}
