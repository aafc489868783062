//! Element types of tensors: [`DType`], its printed name, byte size, kernel-name suffix and
//! Binary Tensor Format code, and [`Element`], the Rust types that hold each one.

use core::fmt;

/// The element type of a tensor (TFRT's `DType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
    /// Unsigned 8-bit.
    U8,
    /// Unsigned 16-bit.
    U16,
    /// Unsigned 32-bit.
    U32,
    /// Unsigned 64-bit.
    U64,
    /// Boolean, one byte.
    Bool,
    /// Signed 8-bit.
    I8,
    /// Signed 16-bit.
    I16,
    /// Signed 32-bit.
    I32,
    /// Signed 64-bit.
    I64,
    /// IEEE binary32.
    F32,
    /// IEEE binary64.
    F64,
    /// A pair of `f32` (real, imaginary), real first.
    Complex64,
    /// A pair of `f64` (real, imaginary), real first.
    Complex128,
    /// IEEE half precision, storage only.
    F16,
    /// bfloat16, storage only.
    BF16,
}

impl DType {
    /// Every dtype, in the order of TFRT's table.
    pub const ALL: [DType; 15] = [
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F32,
        DType::F64,
        DType::Complex64,
        DType::Complex128,
        DType::F16,
        DType::BF16,
    ];

    /// The printed name (`u8`, `i1` for bool, `f32`, `complex64`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::Bool => "i1",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            DType::U8 | DType::Bool | DType::I8 => 1,
            DType::U16 | DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 | DType::Complex64 => 8,
            DType::Complex128 => 16,
        }
    }

    /// Alignment of one element in bytes (that of its Rust type; complex: its part's).
    pub const fn align(self) -> usize {
        match self {
            DType::Complex64 => 4,
            DType::Complex128 => 8,
            other => other.size(),
        }
    }

    /// The suffix kernel names use for this dtype (`ui8`, `bool`, `f32`, ...), `None` for
    /// the dtypes no kernel family names (`u16`, `i16`).
    pub const fn kernel_suffix(self) -> Option<&'static str> {
        Some(match self {
            DType::U8 => "ui8",
            DType::U32 => "ui32",
            DType::U64 => "ui64",
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::Complex64 => "complex64",
            DType::Complex128 => "complex128",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::U16 | DType::I16 => return None,
        })
    }

    /// The dtype a kernel-name suffix names.
    pub fn from_kernel_suffix(suffix: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.kernel_suffix() == Some(suffix))
    }

    /// The dtypes of BEF dense attributes, by their element-type code (docs/bef.md).
    const BEF_DENSE: [DType; 15] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::Complex64,
        DType::Complex128,
    ];

    /// The dtype of a BEF dense attribute's element-type code.
    pub const fn from_bef_dense(code: u8) -> Option<DType> {
        if (code as usize) < Self::BEF_DENSE.len() { Some(Self::BEF_DENSE[code as usize]) } else { None }
    }

    /// The Binary Tensor Format code (0..=9) of this dtype, `None` for dtypes BTF lacks.
    pub const fn btf_code(self) -> Option<u8> {
        Some(match self {
            DType::I8 => 0,
            DType::I16 => 1,
            DType::I32 => 2,
            DType::I64 => 3,
            DType::F32 => 4,
            DType::F64 => 5,
            DType::U8 => 6,
            DType::U16 => 7,
            DType::U32 => 8,
            DType::U64 => 9,
            _ => return None,
        })
    }

    /// The dtype of a Binary Tensor Format code (0..=9), `None` for other codes.
    pub const fn from_btf(code: u8) -> Option<DType> {
        Some(match code {
            0 => DType::I8,
            1 => DType::I16,
            2 => DType::I32,
            3 => DType::I64,
            4 => DType::F32,
            5 => DType::F64,
            6 => DType::U8,
            7 => DType::U16,
            8 => DType::U32,
            9 => DType::U64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that holds one element of a dtype, so kernels read and write tensors as
/// typed slices. Implemented for the dtypes with a native Rust type.
pub trait Element: Copy + PartialEq + Send + Sync + 'static {
    /// The dtype this type holds.
    const DTYPE: DType;
}

macro_rules! elements {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl Element for $t {
            const DTYPE: DType = DType::$d;
        })*
    };
}

elements! {
    u8 => U8, u16 => U16, u32 => U32, u64 => U64, bool => Bool,
    i8 => I8, i16 => I16, i32 => I32, i64 => I64, f32 => F32, f64 => F64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sizes_suffixes_and_btf_codes_follow_the_table() {
        assert_eq!(DType::Bool.name(), "i1");
        assert_eq!(DType::Bool.kernel_suffix(), Some("bool"));
        assert_eq!(DType::U8.name(), "u8");
        assert_eq!(DType::U8.kernel_suffix(), Some("ui8"));
        assert_eq!(DType::Complex128.size(), 16);
        assert_eq!(DType::Complex128.align(), 8);
        assert_eq!(DType::I16.kernel_suffix(), None);
        assert_eq!(DType::from_kernel_suffix("ui32"), Some(DType::U32));
        assert_eq!(DType::from_kernel_suffix("u32"), None);
        assert_eq!(DType::from_btf(4), Some(DType::F32));
        assert_eq!(DType::from_btf(10), None);
        for d in DType::ALL {
            assert!(d.size().is_power_of_two() && d.align() <= d.size(), "{d}");
            if let Some(s) = d.kernel_suffix() {
                assert_eq!(DType::from_kernel_suffix(s), Some(d));
            }
        }
        assert_eq!(<f32 as Element>::DTYPE, DType::F32);
        for (code, name, size) in crate::bef::format::dense::TYPES {
            let d = DType::from_bef_dense(code).unwrap();
            assert_eq!(d.size(), size, "{name}");
            let mlir = match d.kernel_suffix() {
                Some("bool") => "i1",
                Some("complex64") => "complex<f32>",
                Some("complex128") => "complex<f64>",
                Some(s) => s,
                // No kernel group has u16 tensors, so it has no suffix to compare.
                None if d == DType::U16 => "ui16",
                None => d.name(),
            };
            assert_eq!(mlir, name, "the BEF code table and DType agree");
        }
        assert_eq!(DType::from_bef_dense(15), None);
        assert_eq!(<bool as Element>::DTYPE.size(), core::mem::size_of::<bool>());
    }
}
