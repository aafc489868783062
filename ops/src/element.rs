//! Elements of any of the importers' types read and written as numbers, for the kernels
//! that are not arithmetic (comparison, selection, casts, indexing): each works on bytes
//! and converts one element at a time.

use hostrt_core::Diagnostic;
use hostrt_core::tensor::DType;

use crate::attrs::{Attrs, invalid};

/// An element's value: floats as f64, integers and booleans as i64 (both exact).
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub(crate) enum Num {
    F(f64),
    I(i64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::F(v) => v,
            Num::I(v) => v as f64,
        }
    }

    pub fn is_true(self) -> bool {
        match self {
            Num::F(v) => v != 0.0,
            Num::I(v) => v != 0,
        }
    }
}

/// Attribute `i`: the name of an element type these kernels take (`f32`, `i32`, `i64`,
/// `i8`, `ui8`, `bool`).
pub(crate) fn dtype(a: &Attrs<'_>, i: usize, name: &str) -> Result<DType, Diagnostic> {
    let s = a.string(i, name)?;
    match DType::from_kernel_suffix(s) {
        Some(d @ (DType::F32 | DType::I32 | DType::I64 | DType::I8 | DType::U8 | DType::Bool)) => Ok(d),
        _ => Err(invalid(a.kernel, format_args!("'{}' element type '{}' is not supported", name, s))),
    }
}

/// Element `k` of `bytes` (elements of `d`); the caller has checked `bytes` holds it.
pub(crate) fn load(d: DType, bytes: &[u8], k: usize) -> Num {
    let at = |n: usize| -> [u8; 8] {
        let mut b = [0u8; 8];
        if let Some(s) = bytes.get(k * n..k * n + n) {
            b[..n].copy_from_slice(s);
        }
        b
    };
    match d {
        DType::F32 => {
            let b = at(4);
            Num::F(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        }
        DType::I32 => {
            let b = at(4);
            Num::I(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        }
        DType::I64 => Num::I(i64::from_le_bytes(at(8))),
        DType::I8 => Num::I(i64::from(at(1)[0] as i8)),
        _ => Num::I(i64::from(at(1)[0])),
    }
}

/// Writes `v` as element `k` of `out` (elements of `d`), converted as a cast does: floats
/// to integers truncate toward zero and saturate, anything to `bool` is `v != 0`.
pub(crate) fn store(d: DType, out: &mut [u8], k: usize, v: Num) {
    let mut put = |bytes: &[u8]| {
        let n = bytes.len();
        if let Some(s) = out.get_mut(k * n..k * n + n) {
            s.copy_from_slice(bytes);
        }
    };
    match (d, v) {
        (DType::F32, v) => put(&(v.as_f64() as f32).to_le_bytes()),
        (DType::Bool, v) => put(&[u8::from(v.is_true())]),
        (DType::I32, Num::I(x)) => put(&(x as i32).to_le_bytes()),
        (DType::I32, Num::F(x)) => put(&(x as i32).to_le_bytes()),
        (DType::I64, Num::I(x)) => put(&x.to_le_bytes()),
        (DType::I64, Num::F(x)) => put(&(x as i64).to_le_bytes()),
        (DType::I8, Num::I(x)) => put(&[x as i8 as u8]),
        (DType::I8, Num::F(x)) => put(&[x as i8 as u8]),
        (_, Num::I(x)) => put(&[x as u8]),
        (_, Num::F(x)) => put(&[x as u8]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_stores_round_trip_and_cast() {
        let mut out = [0u8; 8];
        for (d, v) in [(DType::F32, Num::F(-2.5)), (DType::I32, Num::I(-7)), (DType::I64, Num::I(1 << 40))] {
            store(d, &mut out, 0, v);
            assert_eq!(load(d, &out, 0), v);
        }
        store(DType::I8, &mut out, 1, Num::F(-3.9));
        assert_eq!(load(DType::I8, &out, 1), Num::I(-3));
        store(DType::Bool, &mut out, 0, Num::F(0.5));
        assert_eq!(load(DType::Bool, &out, 0), Num::I(1));
        store(DType::I32, &mut out, 0, Num::F(1e20));
        assert_eq!(load(DType::I32, &out, 0), Num::I(i64::from(i32::MAX)));
        // Out of range reads give 0, writes nothing.
        assert_eq!(load(DType::I64, &out, 1), Num::I(0));
        store(DType::I64, &mut out, 1, Num::I(5));
    }
}
