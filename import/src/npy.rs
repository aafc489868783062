//! `.npy` tensor files (NumPy's format) in and out: model inputs, outputs and goldens.

#[cfg(feature = "npy")]
use std::io;

use hostrt_core::Allocator;
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};

/// A tensor read from or written to `.npy`: element type name (`f32`, `i8`, `i32`, `ui8`),
/// dims, and little-endian row-major bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyTensor {
    pub dtype: &'static str,
    pub shape: Vec<usize>,
    pub data: Vec<u8>,
}

/// Reads a `.npy` file of `f32`, `i8`, `u8`, `i32` or `i64` elements (C order, little-endian).
#[cfg(feature = "npy")]
pub fn read(bytes: &[u8]) -> Result<NpyTensor, String> {
    let npy = npyz::NpyFile::new(bytes).map_err(|e| format!("not a .npy file: {e}"))?;
    if npy.order() != npyz::Order::C {
        return Err("Fortran-order .npy files are not supported".into());
    }
    let shape: Vec<usize> = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| "dimension too large".to_string()))
        .collect::<Result<_, _>>()?;
    let descr = npy.header().dtype().descr();
    let err = |e: io::Error| format!("reading .npy data: {e}");
    let (dtype, data): (&'static str, Vec<u8>) = match descr.trim_matches('\'') {
        "<f4" => ("f32", npy.into_vec::<f32>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        "|i1" => ("i8", npy.into_vec::<i8>().map_err(err)?.iter().map(|&v| v as u8).collect()),
        "|u1" => ("ui8", npy.into_vec::<u8>().map_err(err)?),
        "|b1" => ("bool", npy.into_vec::<bool>().map_err(err)?.iter().map(|&v| u8::from(v)).collect()),
        "<i4" => ("i32", npy.into_vec::<i32>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        "<i8" => ("i64", npy.into_vec::<i64>().map_err(err)?.iter().flat_map(|v| v.to_le_bytes()).collect()),
        other => {
            return Err(format!(
                ".npy element type {other} is not supported (f32, i8, u8, i32, i64, bool are)"
            ));
        }
    };
    Ok(NpyTensor { dtype, shape, data })
}

/// Writes `t` as a `.npy` file.
#[cfg(feature = "npy")]
pub fn write(t: &NpyTensor) -> Result<Vec<u8>, String> {
    use npyz::WriterBuilder;
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    let mut out = Vec::new();
    let err = |e: io::Error| format!("writing .npy: {e}");
    macro_rules! put {
        ($t:ty, $n:expr) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut out)
                .begin_nd()
                .map_err(err)?;
            w.extend(t.data.chunks_exact($n).map(|c| <$t>::from_le_bytes(c.try_into().unwrap_or([0; $n]))))
                .map_err(err)?;
            w.finish().map_err(err)?;
        }};
    }
    match t.dtype {
        "f32" => put!(f32, 4),
        "i8" => put!(i8, 1),
        "ui8" => put!(u8, 1),
        "i32" => put!(i32, 4),
        "i64" => put!(i64, 8),
        "bool" => {
            let mut w = npyz::WriteOptions::<bool>::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut out)
                .begin_nd()
                .map_err(err)?;
            w.extend(t.data.iter().map(|&b| b != 0)).map_err(err)?;
            w.finish().map_err(err)?;
        }
        other => return Err(format!("cannot write {other} as .npy")),
    }
    Ok(out)
}

/// A new tensor from `alloc` holding `t`.
pub fn to_tensor(alloc: Allocator, t: &NpyTensor) -> Result<DenseHostTensor, String> {
    let dtype = DType::from_kernel_suffix(t.dtype).ok_or_else(|| format!("unsupported dtype {}", t.dtype))?;
    let dims: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
    let shape = TensorShape::new(&dims).map_err(|_| format!("rank {} is too large", dims.len()))?;
    let dht = DenseHostTensor::new(alloc, TensorMetadata { dtype, shape }).map_err(|e| e.to_string())?;
    dht.write_bytes().map_err(|e| e.to_string())?.copy_from_slice(&t.data);
    Ok(dht)
}

/// The [`NpyTensor::dtype`] of element type `suffix` (a kernel suffix: `f32`, `i8`, `ui8`,
/// `i32`, `i64`, `bool`), or why such a tensor cannot be written as `.npy`.
pub fn dtype_name(suffix: &str) -> Result<&'static str, String> {
    ["f32", "i8", "ui8", "i32", "i64", "bool"]
        .into_iter()
        .find(|d| *d == suffix)
        .ok_or_else(|| format!("cannot write a {suffix} tensor as .npy"))
}

/// A copy of `t` for writing as `.npy` (f32, i8, u8, i32, i64 and bool elements).
pub fn from_tensor(t: &DenseHostTensor) -> Result<NpyTensor, String> {
    let dtype = dtype_name(t.dtype().kernel_suffix().unwrap_or("?"))?;
    let shape = t.shape().dims().iter().map(|&d| d as usize).collect();
    Ok(NpyTensor { dtype, shape, data: t.read_bytes().map_err(|e| e.to_string())?.to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for t in [
            NpyTensor {
                dtype: "f32",
                shape: vec![2, 3],
                data: (0..6).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect(),
            },
            NpyTensor { dtype: "i8", shape: vec![4], data: vec![0, 1, 0x80, 0xff] },
            NpyTensor { dtype: "bool", shape: vec![3], data: vec![1, 0, 1] },
        ] {
            assert_eq!(read(&write(&t).unwrap()).unwrap(), t);
        }
        assert!(read(b"not npy").is_err());
    }
}
