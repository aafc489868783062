//! The Binary Tensor Format (BTF) reader: a tensor of a file's bytes, found by index and
//! checked step by step with TFRT's error texts (docs/bef.md, "BTF"). Reads borrowed bytes
//! (an mmap'd file, a firmware constant); never panics on any input.
//!
//! Layout: `u64 N`, `N` × `u64` record offsets, then per record a 16-byte header (`u64`
//! rank, `u8` dtype code, `u8` layout, 6 reserved bytes), `rank` × `u64` dims and the
//! row-major data. All integers little-endian.

use core::fmt;

use super::{DType, TensorShape};

/// Why a tensor could not be read. [`BtfError::message`] gives TFRT's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BtfError {
    /// Fewer than 8 bytes: no tensor count.
    NumTensors,
    /// `index` is negative or not below the count.
    Index {
        /// The index asked for.
        index: i32,
        /// Tensors in the file.
        count: u64,
    },
    /// The offset table ends before entry `index`.
    Offset {
        /// The index asked for.
        index: i32,
    },
    /// The 16-byte header at `offset` is cut off.
    Header {
        /// The record's offset.
        offset: u64,
    },
    /// The record holds another dtype (its raw code).
    DType {
        /// The code in the file.
        found: u8,
        /// The dtype asked for.
        expected: DType,
    },
    /// The record has another rank.
    Rank {
        /// The rank in the file.
        found: u64,
        /// The rank asked for.
        expected: usize,
    },
    /// The layout is not row-major dense (its raw code).
    Layout(u8),
    /// The dims are cut off.
    Dims {
        /// The record's offset.
        offset: u64,
    },
    /// The data is cut off, or the dims describe more bytes than memory can address.
    Data {
        /// The record's offset.
        offset: u64,
    },
}

/// Name of a BTF dtype code in error messages.
struct CodeName(u8);

impl fmt::Display for CodeName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 10] = ["i8", "i16", "i32", "i64", "f32", "f64", "ui8", "ui16", "ui32", "ui64"];
        match NAMES.get(usize::from(self.0)) {
            Some(n) => f.write_str(n),
            None => write!(f, "BadDtype({})", self.0),
        }
    }
}

impl BtfError {
    /// TFRT's message for this error, reading the file named `path`.
    pub fn message<'p>(&self, path: &'p str) -> impl fmt::Display + 'p {
        struct Message<'p>(BtfError, &'p str);
        impl fmt::Display for Message<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let path = self.1;
                match self.0 {
                    BtfError::NumTensors => write!(f, "failed to read tensor num_tensors from path {path}"),
                    BtfError::Index { index, count } => write!(
                        f,
                        "invalid tensor index {index} to read tensor from path {path} which contains {count} tensors"
                    ),
                    BtfError::Offset { index } => {
                        write!(f, "failed to read tensor offset from {path} for tensor index {index}")
                    }
                    BtfError::Header { offset } => {
                        write!(f, "failed to read tensor header from stream at offset {offset}")
                    }
                    BtfError::DType { found, expected } => {
                        let code = expected.btf_code().unwrap_or(u8::MAX);
                        write!(
                            f,
                            "unexpected tensor dtype {}. Expected dtype is {}",
                            CodeName(found),
                            CodeName(code)
                        )
                    }
                    BtfError::Rank { found, expected } => {
                        write!(f, "unexpected tensor rank {found}. Expected rank is {expected}")
                    }
                    BtfError::Layout(1) => {
                        f.write_str("unexpected tensor layout COOrdinate list sparse tensor")
                    }
                    BtfError::Layout(_) => f.write_str("unexpected tensor layout Unknown"),
                    BtfError::Dims { offset } => write!(f, "failed to read tensor dims at offset {offset}"),
                    BtfError::Data { offset } => {
                        write!(f, "failed to read tensor data from stream at offset {offset}")
                    }
                }
            }
        }
        Message(*self, path)
    }
}

/// One dense tensor record of a BTF file: its shape and its data, borrowed from the file.
#[derive(Clone, Debug, PartialEq)]
pub struct BtfTensor<'a> {
    /// The dims as stored (reinterpreted as signed).
    pub shape: TensorShape,
    /// The record's offset in the file.
    pub offset: u64,
    /// The row-major data: elements × element size bytes.
    pub data: &'a [u8],
}

fn u64_at(bytes: &[u8], at: u64) -> Option<u64> {
    let start = usize::try_from(at).ok()?;
    let b = bytes.get(start..start.checked_add(8)?)?;
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// Read record `index` of the BTF file `bytes`, which must be a dense tensor of `dtype` and
/// `rank` (the checks of TFRT's `btf.read_dense_tensor`, in its order).
///
/// ```
/// use hostrt_core::tensor::{DType, btf};
///
/// // One i32 tensor [2] = {7, 8} at offset 16.
/// let mut file = vec![];
/// for w in [1u64, 16, 1] { file.extend(w.to_le_bytes()); }
/// file.extend([2, 0, 0, 0, 0, 0, 0, 0]); // dtype i32, row-major, reserved
/// file.extend(2u64.to_le_bytes());
/// file.extend([7i32, 8].iter().flat_map(|v| v.to_le_bytes()));
/// let t = btf::read_dense(&file, 0, DType::I32, 1).unwrap();
/// assert_eq!(t.shape.dims(), &[2]);
/// assert_eq!(t.data.len(), 8);
/// let e = btf::read_dense(&file, 1, DType::I32, 1).unwrap_err();
/// assert_eq!(e.message("t.btf").to_string(), "invalid tensor index 1 to read tensor from path t.btf which contains 1 tensors");
/// ```
pub fn read_dense(bytes: &[u8], index: i32, dtype: DType, rank: usize) -> Result<BtfTensor<'_>, BtfError> {
    let count = u64_at(bytes, 0).ok_or(BtfError::NumTensors)?;
    let unsigned = index as i64 as u64;
    if unsigned >= count {
        return Err(BtfError::Index { index, count });
    }
    let offset = unsigned.checked_add(1).and_then(|i| i.checked_mul(8)).and_then(|at| u64_at(bytes, at));
    let offset = offset.ok_or(BtfError::Offset { index })?;
    let header = usize::try_from(offset)
        .ok()
        .and_then(|o| bytes.get(o..o.checked_add(16)?))
        .ok_or(BtfError::Header { offset })?;
    let found_rank = u64::from_le_bytes(header[..8].try_into().map_err(|_| BtfError::Header { offset })?);
    let (code, layout) = (header[8], header[9]);
    if Some(code) != dtype.btf_code() {
        return Err(BtfError::DType { found: code, expected: dtype });
    }
    if found_rank != rank as u64 {
        return Err(BtfError::Rank { found: found_rank, expected: rank });
    }
    if layout != 0 {
        return Err(BtfError::Layout(layout));
    }
    let mut dims = [0i64; super::MAX_RANK];
    let dims = dims.get_mut(..rank).ok_or(BtfError::Dims { offset })?;
    for (i, d) in dims.iter_mut().enumerate() {
        let at = offset.checked_add(16 + 8 * i as u64).ok_or(BtfError::Dims { offset })?;
        *d = u64_at(bytes, at).ok_or(BtfError::Dims { offset })? as i64;
    }
    let shape = TensorShape::new(dims).map_err(|_| BtfError::Dims { offset })?;
    let data = shape
        .checked_num_elements()
        .and_then(|n| n.checked_mul(dtype.size()))
        .and_then(|size| {
            let start = usize::try_from(offset).ok()?.checked_add(16 + 8 * rank)?;
            if size == 0 {
                return Some(&bytes[..0]);
            }
            bytes.get(start..start.checked_add(size)?)
        })
        .ok_or(BtfError::Data { offset })?;
    Ok(BtfTensor { shape, offset, data })
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;
    use std::vec::Vec;

    use super::*;

    /// A file of the given records: (dtype code, layout, dims, data).
    fn file(records: &[(u8, u8, &[u64], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend((records.len() as u64).to_le_bytes());
        let mut body = Vec::new();
        let base = 8 * (1 + records.len());
        for (code, layout, dims, data) in records {
            out.extend(((base + body.len()) as u64).to_le_bytes());
            body.extend((dims.len() as u64).to_le_bytes());
            body.extend([*code, *layout, 0, 0, 0, 0, 0, 0]);
            for d in *dims {
                body.extend(d.to_le_bytes());
            }
            body.extend(*data);
            body.resize(body.len().next_multiple_of(8), 0);
        }
        out.extend(body);
        out
    }

    fn err(bytes: &[u8], index: i32, dtype: DType, rank: usize) -> std::string::String {
        read_dense(bytes, index, dtype, rank).unwrap_err().message("p").to_string()
    }

    #[test]
    fn reads_records_in_place() {
        let f =
            file(&[(2, 0, &[2, 2], &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0]), (2, 0, &[0], &[])]);
        let t = read_dense(&f, 0, DType::I32, 2).unwrap();
        assert_eq!((t.shape.dims(), t.offset, t.data.len()), (&[2i64, 2][..], 24, 16));
        assert_eq!(t.data.as_ptr(), f[56..].as_ptr(), "borrowed, not copied");
        let empty = read_dense(&f, 1, DType::I32, 1).unwrap();
        assert!(empty.data.is_empty());
        let at_end = &f[..f.len()];
        assert!(read_dense(at_end, 1, DType::I32, 1).is_ok(), "an empty tensor may end the file");
    }

    #[test]
    fn every_check_has_tfrts_message() {
        let f = file(&[(2, 0, &[3], &[0; 12]), (4, 1, &[1], &[0; 4]), (4, 7, &[1], &[0; 4])]);
        assert_eq!(err(&f[..7], 0, DType::I32, 1), "failed to read tensor num_tensors from path p");
        assert_eq!(
            err(&f, 3, DType::I32, 1),
            "invalid tensor index 3 to read tensor from path p which contains 3 tensors"
        );
        assert_eq!(
            err(&f, -1, DType::I32, 1),
            "invalid tensor index -1 to read tensor from path p which contains 3 tensors"
        );
        assert_eq!(err(&f[..20], 2, DType::I32, 1), "failed to read tensor offset from p for tensor index 2");
        assert_eq!(err(&f[..40], 0, DType::I32, 1), "failed to read tensor header from stream at offset 32");
        assert_eq!(err(&f, 0, DType::F32, 1), "unexpected tensor dtype i32. Expected dtype is f32");
        assert_eq!(err(&f, 0, DType::I32, 2), "unexpected tensor rank 1. Expected rank is 2");
        assert_eq!(err(&f, 1, DType::F32, 1), "unexpected tensor layout COOrdinate list sparse tensor");
        assert_eq!(err(&f, 2, DType::F32, 1), "unexpected tensor layout Unknown");
        assert_eq!(err(&f[..50], 0, DType::I32, 1), "failed to read tensor dims at offset 32");
        assert_eq!(err(&f[..60], 0, DType::I32, 1), "failed to read tensor data from stream at offset 32");
        let bad = file(&[(42, 0, &[1], &[0])]);
        assert_eq!(err(&bad, 0, DType::I8, 1), "unexpected tensor dtype BadDtype(42). Expected dtype is i8");
    }

    #[test]
    fn hostile_headers_are_errors() {
        let mut f = file(&[(2, 0, &[1], &[0; 4])]);
        f[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(read_dense(&f, 0, DType::I32, 1), Err(BtfError::Header { .. })));
        let huge = file(&[(2, 0, &[u64::MAX / 2, 4], &[])]);
        assert!(matches!(read_dense(&huge, 0, DType::I32, 2), Err(BtfError::Data { .. })));
        let neg = file(&[(2, 0, &[u64::MAX], &[])]);
        assert!(matches!(read_dense(&neg, 0, DType::I32, 1), Err(BtfError::Data { .. })));
        let mut count = file(&[(2, 0, &[1], &[0; 4])]);
        count[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(read_dense(&count, i32::MAX, DType::I32, 1), Err(BtfError::Offset { .. })));
        let deep = file(&[(2, 0, &[1; 40], &[])]);
        assert!(
            matches!(read_dense(&deep, 0, DType::I32, 40), Err(BtfError::Dims { .. })),
            "rank over MAX_RANK"
        );
    }
}
