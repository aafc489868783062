//! Data movement: `nn.copy` (a strided copy between arena tensors) and `nn.fill`. The
//! importer lowers every operator that only moves elements (TRANSPOSE, SLICE,
//! STRIDED_SLICE, CONCATENATION, SPLIT, PACK, UNPACK, PAD) to these two, computing the
//! strides at import (docs/models.md); SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND, whose pixel
//! maps no strided copy holds, have their own kernels (`batch_space.rs`).
//!
//! - `nn.copy {dims, input, output, size}`: `dims` are 6 counts; `input` is
//!   `[byte offset, 6 element strides]` (strides may be negative: a reversed slice);
//!   `output` is `[byte offset, 6 element strides]` (non-negative); `size` is `[element
//!   bytes]`. For every index `i` of `dims`, the element at `output + Σ i·out_stride`
//!   becomes the one at `input + Σ i·in_stride`.
//! - `nn.fill {output, value}`: `output` is `[byte offset, elements]`; every element becomes
//!   `value`, a one-element dense attribute.

use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};

const RANK: usize = 6;

/// The byte span `[start, end)` that `dims` with element `strides` of `size` bytes touch
/// from byte `offset`, or `None` when it overflows or starts before 0.
fn span(offset: i32, dims: &[usize; RANK], strides: &[i32], size: usize) -> Option<(usize, usize)> {
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&d, &s) in dims.iter().zip(strides) {
        let reach = i64::try_from(d).ok()?.checked_sub(1)?.checked_mul(i64::from(s))?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
    }
    let size = i64::try_from(size).ok()?;
    let start = i64::from(offset).checked_add(lo.checked_mul(size)?)?;
    let end = i64::from(offset).checked_add(hi.checked_add(1)?.checked_mul(size)?)?;
    Some((usize::try_from(start).ok()?, usize::try_from(end).ok()?))
}

/// `nn.copy`.
pub(crate) fn copy(frame: &KernelFrame<'_>) {
    const K: &str = "nn.copy";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let dims_attr = a.ints(0, "dims", Some(RANK))?;
        let input = a.ints(1, "input", Some(RANK + 1))?;
        let output = a.ints(2, "output", Some(RANK + 1))?;
        let size = a.ints(3, "size", Some(1))?[0];
        let size = match size {
            1 | 2 | 4 | 8 => size as usize,
            s => return Err(invalid(K, format_args!("element size {} is not 1, 2, 4 or 8", s))),
        };
        let mut dims = [0usize; RANK];
        for (d, &v) in dims.iter_mut().zip(dims_attr) {
            *d = usize::try_from(v)
                .map_err(|_| invalid(K, format_args!("negative dim in {:?}", dims_attr)))?;
        }
        if dims.contains(&0) {
            return Ok(());
        }
        if output[1..].iter().any(|&s| s < 0) {
            return Err(invalid(K, format_args!("output strides must not be negative: {:?}", &output[1..])));
        }
        let bad =
            |what: &str| invalid(K, format_args!("{} strides overflow or reach before the arena", what));
        let (in_start, in_end) = span(input[0], &dims, &input[1..], size).ok_or_else(|| bad("input"))?;
        let (out_start, out_end) = span(output[0], &dims, &output[1..], size).ok_or_else(|| bad("output"))?;
        let (inputs, out) = split(K, arena, out_start, out_end - out_start)?;
        let src = inputs.bytes(in_start, in_end - in_start)?;
        // Element strides in bytes, relative to the two spans' starts (all in range: the
        // spans above bound every index).
        let (ib, ob) = (input[0] as isize - in_start as isize, output[0] as isize - out_start as isize);
        let (is, os) = (input[1..].iter().map(|&s| s as isize), output[1..].iter().map(|&s| s as isize));
        let mut istr = [0isize; RANK];
        let mut ostr = [0isize; RANK];
        for (k, (i, o)) in is.zip(os).enumerate() {
            istr[k] = i * size as isize;
            ostr[k] = o * size as isize;
        }
        let row = dims[RANK - 1] * size;
        let contiguous = istr[RANK - 1] == size as isize && ostr[RANK - 1] == size as isize;
        let mut idx = [0usize; RANK - 1];
        loop {
            let (mut i, mut o) = (ib, ob);
            for k in 0..RANK - 1 {
                i += idx[k] as isize * istr[k];
                o += idx[k] as isize * ostr[k];
            }
            // In range by the spans computed above.
            let (i, o) = (i as usize, o as usize);
            if contiguous {
                out[o..o + row].copy_from_slice(&src[i..i + row]);
            } else {
                for j in 0..dims[RANK - 1] {
                    let (si, so) =
                        (i as isize + j as isize * istr[RANK - 1], o as isize + j as isize * ostr[RANK - 1]);
                    let (si, so) = (si as usize, so as usize);
                    out[so..so + size].copy_from_slice(&src[si..si + size]);
                }
            }
            // Next index over the outer dims, last fastest.
            let mut k = RANK - 1;
            loop {
                if k == 0 {
                    return Ok(());
                }
                k -= 1;
                idx[k] += 1;
                if idx[k] < dims[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
    })
}

/// `nn.fill`.
pub(crate) fn fill(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fill";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 2)?;
        let output = a.region::<1>(0, "output")?;
        let value = a.dense_bytes(1, "value")?;
        if value.is_empty() {
            return Err(invalid(K, format_args!("'value' must hold one element")));
        }
        let (_, out) = split(K, arena, output.offset, output.byte_len(value.len())?)?;
        for chunk in out.chunks_exact_mut(value.len()) {
            chunk.copy_from_slice(value);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_covers_negative_strides() {
        let dims = [1, 1, 1, 1, 2, 3];
        assert_eq!(span(100, &dims, &[0, 0, 0, 0, 3, 1], 4), Some((100, 124)));
        // A reversed row: starts at its last element.
        assert_eq!(span(108, &dims, &[0, 0, 0, 0, 3, -1], 4), Some((100, 124)));
        assert_eq!(span(0, &dims, &[0, 0, 0, 0, 3, -1], 4), None);
        assert_eq!(span(0, &[1, 1, 1, 1, 1, usize::MAX], &[0, 0, 0, 0, 0, i32::MAX], 8), None);
    }
}
