//! Indexing along one axis: `nn.arg_max` (the index of each row's largest or smallest
//! value) and `nn.gather` (rows picked by an index tensor read at run time).
//!
//! Both see their input as `[outer, axis, inner]` (`dims`, in elements). Attributes, in
//! name order:
//! - `nn.arg_max`: `dims`, `dtype` (the input's element type), `index` (the output's: `i32`
//!   or `i64`), `input` (`[offset]`), `op` (`[0]` largest, `[1]` smallest, `[2]` and `[3]`
//!   the same taking the last of equal values instead of the first), `output` (`[offset]`:
//!   `[outer, inner]` indices).
//! - `nn.gather`: `dims`, `index` (the indices' element type), `indices` (`[offset, count]`),
//!   `input` (`[offset]`), `output` (`[offset]`: `[outer, count, inner]`), `size` (`[element
//!   bytes]`). A negative index counts from the end; one outside the axis is an error that
//!   names it.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};
use crate::element::{Num, dtype, load, store};

/// `[outer, axis, inner]` from attribute `i`, with their product.
fn dims(a: &Attrs<'_>, i: usize) -> Result<([usize; 3], usize), Diagnostic> {
    let v = a.ints(i, "dims", Some(3))?;
    let bad = || invalid(a.kernel, format_args!("dims {:?} are negative or overflow", v));
    let d = [0, 1, 2].map(|k| usize::try_from(v[k]).ok());
    let [Some(o), Some(x), Some(n)] = d else { return Err(bad()) };
    let total = o.checked_mul(x).and_then(|p| p.checked_mul(n)).ok_or_else(bad)?;
    Ok(([o, x, n], total))
}

/// The element type of the indices at attribute `i`: `i32` or `i64`.
fn index_type(a: &Attrs<'_>, i: usize) -> Result<DType, Diagnostic> {
    match dtype(a, i, "index")? {
        d @ (DType::I32 | DType::I64) => Ok(d),
        d => Err(invalid(a.kernel, format_args!("indices of {} are not supported (i32 and i64 are)", d))),
    }
}

/// `nn.arg_max`.
pub(crate) fn arg_max(frame: &KernelFrame<'_>) {
    const K: &str = "nn.arg_max";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let ([outer, axis, inner], total) = dims(&a, 0)?;
        let (d, index) = (dtype(&a, 1, "dtype")?, index_type(&a, 2)?);
        let input = a.region::<0>(3, "input")?;
        let code = a.ints(4, "op", Some(1))?[0];
        if !(0..4).contains(&code) || axis == 0 {
            return Err(invalid(K, format_args!("op {} or an empty axis is not valid", code)));
        }
        let output = a.region::<0>(5, "output")?;
        let len =
            (outer * inner).checked_mul(index.size()).ok_or_else(|| invalid(K, format_args!("overflow")))?;
        let (inputs, out) = split(K, arena, output.offset, len)?;
        let x = inputs.bytes(
            input.offset,
            total.checked_mul(d.size()).ok_or_else(|| invalid(K, format_args!("overflow")))?,
        )?;
        let (smallest, last) = (code & 1 == 1, code >= 2);
        for o in 0..outer {
            for i in 0..inner {
                let at = |k: usize| load(d, x, (o * axis + k) * inner + i);
                let mut best = (0, at(0));
                for k in 1..axis {
                    let v = at(k);
                    let better = if smallest { v < best.1 } else { v > best.1 };
                    if better || (last && v == best.1) {
                        best = (k, v);
                    }
                }
                store(index, out, o * inner + i, Num::I(best.0 as i64));
            }
        }
        Ok(())
    })
}

/// `nn.gather`.
pub(crate) fn gather(frame: &KernelFrame<'_>) {
    const K: &str = "nn.gather";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let ([outer, axis, inner], total) = dims(&a, 0)?;
        let index = index_type(&a, 1)?;
        let indices = a.region::<1>(2, "indices")?;
        let (input, output) = (a.region::<0>(3, "input")?, a.region::<0>(4, "output")?);
        let size = a.element_size(5)?;
        let count = indices.dims[0];
        let row = inner * size;
        let overflow = || invalid(K, format_args!("size overflows"));
        let len = outer.checked_mul(count).and_then(|p| p.checked_mul(row)).ok_or_else(overflow)?;
        let (inputs, out) = split(K, arena, output.offset, len)?;
        let x = inputs.bytes(input.offset, total.checked_mul(size).ok_or_else(overflow)?)?;
        let idx = inputs.bytes(indices.offset, indices.byte_len(index.size())?)?;
        for j in 0..count {
            let Num::I(v) = load(index, idx, j) else { continue };
            let k = if v < 0 { v + axis as i64 } else { v };
            let k = usize::try_from(k).ok().filter(|&k| k < axis).ok_or_else(|| {
                invalid(K, format_args!("index {} (at {}) is outside the axis of {}", v, j, axis))
            })?;
            for o in 0..outer {
                let from = (o * axis + k) * row;
                let to = (o * count + j) * row;
                out[to..to + row].copy_from_slice(&x[from..from + row]);
            }
        }
        Ok(())
    })
}
