//! `tf_datatype.h`: TensorFlow's element types and how they map onto hostrt's [`DType`].
//! Quantized types are stored as their integer and the 8-bit floats as bytes; strings,
//! resources and variants have no hostrt tensor.

use std::ffi::c_int;

use hostrt_core::tensor::DType;

use crate::ffi::guard;

/// TensorFlow's element type (a C enum: values of `types.proto`).
pub type TF_DataType = c_int;

macro_rules! dtypes {
    ($($name:ident = $v:literal => $storage:expr, $size:literal;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`.")]
            pub const $name: TF_DataType = $v;
        )*

        /// The hostrt dtype a `TF_DataType`'s elements are stored as, if any.
        pub fn storage(t: TF_DataType) -> Option<DType> {
            match t {
                $($v => $storage,)*
                _ => None,
            }
        }

        /// TensorFlow's `TF_DataTypeSize`: bytes per element, 0 for variable-length or
        /// unknown types.
        pub fn size(t: TF_DataType) -> usize {
            match t {
                $($v => $size,)*
                _ => 0,
            }
        }
    };
}

dtypes! {
    TF_FLOAT = 1 => Some(DType::F32), 4;
    TF_DOUBLE = 2 => Some(DType::F64), 8;
    TF_INT32 = 3 => Some(DType::I32), 4;
    TF_UINT8 = 4 => Some(DType::U8), 1;
    TF_INT16 = 5 => Some(DType::I16), 2;
    TF_INT8 = 6 => Some(DType::I8), 1;
    TF_STRING = 7 => None, 0;
    TF_COMPLEX64 = 8 => Some(DType::Complex64), 8;
    TF_INT64 = 9 => Some(DType::I64), 8;
    TF_BOOL = 10 => Some(DType::Bool), 1;
    TF_QINT8 = 11 => Some(DType::I8), 1;
    TF_QUINT8 = 12 => Some(DType::U8), 1;
    TF_QINT32 = 13 => Some(DType::I32), 4;
    TF_BFLOAT16 = 14 => Some(DType::BF16), 2;
    TF_QINT16 = 15 => Some(DType::I16), 2;
    TF_QUINT16 = 16 => Some(DType::U16), 2;
    TF_UINT16 = 17 => Some(DType::U16), 2;
    TF_COMPLEX128 = 18 => Some(DType::Complex128), 16;
    TF_HALF = 19 => Some(DType::F16), 2;
    TF_RESOURCE = 20 => None, 0;
    TF_VARIANT = 21 => None, 0;
    TF_UINT32 = 22 => Some(DType::U32), 4;
    TF_UINT64 = 23 => Some(DType::U64), 8;
    TF_FLOAT8_E5M2 = 24 => Some(DType::U8), 1;
    TF_FLOAT8_E4M3FN = 25 => Some(DType::U8), 1;
}

/// The `TF_DataType` of a hostrt dtype (the plain, unquantized one).
pub fn of(d: DType) -> TF_DataType {
    match d {
        DType::U8 => TF_UINT8,
        DType::U16 => TF_UINT16,
        DType::U32 => TF_UINT32,
        DType::U64 => TF_UINT64,
        DType::Bool => TF_BOOL,
        DType::I8 => TF_INT8,
        DType::I16 => TF_INT16,
        DType::I32 => TF_INT32,
        DType::I64 => TF_INT64,
        DType::F32 => TF_FLOAT,
        DType::F64 => TF_DOUBLE,
        DType::Complex64 => TF_COMPLEX64,
        DType::Complex128 => TF_COMPLEX128,
        DType::F16 => TF_HALF,
        DType::BF16 => TF_BFLOAT16,
        _ => 0,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_DataTypeSize(dt: TF_DataType) -> usize {
    guard(0, || size(dt))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_and_sizes_agree_with_storage() {
        for d in DType::ALL {
            assert_eq!(storage(of(d)), Some(d), "{d}");
        }
        for t in -1..30 {
            match storage(t) {
                Some(d) => assert_eq!(TF_DataTypeSize(t), d.size(), "{t}"),
                None => assert_eq!(TF_DataTypeSize(t), 0, "{t}"),
            }
        }
        assert_eq!((TF_DataTypeSize(TF_STRING), TF_DataTypeSize(TF_COMPLEX128)), (0, 16));
    }
}
