//! Batch-space rearrangements over NHWC regions, any element type (bytes are moved, int8
//! keeps its quantization): `nn.space_to_batch_nd` and `nn.batch_to_space_nd`, TensorFlow
//! Lite's SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND as their reference kernels compute them
//! (the importer writes the 3-D `[batch, spatial, channels]` form as `w = 1`).
//!
//! Output batch `ob` of SPACE_TO_BATCH_ND holds input batch `ob % n` at block offset
//! `(ob / n) / bw, (ob / n) % bw`: output pixel `(y, x)` is input pixel
//! `(y·bh + offset_h - top, x·bw + offset_w - left)`, or `value` where that lies in the
//! padding. BATCH_TO_SPACE_ND is its inverse with crops in place of padding.
//!
//! Attributes, in name order:
//! - `nn.space_to_batch_nd`: `block` (`[bh, bw]`), `input` and `output` (`[offset, n, h, w,
//!   c]`), `pad` (`[top, left]`; the bottom and right padding is what the output's size
//!   leaves), `size` (`[element bytes]`), `value` (the pad element, a one-element dense
//!   attribute: 0 for float32, the zero point for int8).
//! - `nn.batch_to_space_nd`: `block`, `crop` (`[top, left]`), `input`, `output`, `size`.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};

/// The geometry of one rearrangement: `space` is the NHWC side with pixels (the
/// SPACE_TO_BATCH_ND input, the BATCH_TO_SPACE_ND output), `batch` the side with
/// `bh·bw` times the batches, `offset` the padding (or crop) above and left of `space`
/// inside the blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    space: [usize; 4],
    batch: [usize; 4],
    block: [usize; 2],
    offset: [usize; 2],
}

impl Geometry {
    /// For each pixel of the `batch` side in order: the `space` pixel index it maps to,
    /// or `None` where it lies in the padding.
    fn for_each(&self, mut f: impl FnMut(usize, Option<usize>)) {
        let [n, h, w, _] = self.space;
        let [on, oh, ow, _] = self.batch;
        let [bh, bw] = self.block;
        let [top, left] = self.offset;
        let mut o = 0;
        for ob in 0..on {
            // `n` is not 0 when `on` is not (checked).
            let (b, shift) = (ob % n, ob / n);
            let (sh, sw) = (shift / bw, shift % bw);
            for oy in 0..oh {
                let y = (oy * bh + sh).checked_sub(top).filter(|&y| y < h);
                for ox in 0..ow {
                    let x = (ox * bw + sw).checked_sub(left).filter(|&x| x < w);
                    f(o, y.zip(x).map(|(y, x)| (b * h + y) * w + x));
                    o += 1;
                }
            }
        }
    }
}

/// Reads the regions, block and offsets and checks that they fit: the `batch` side has
/// `bh·bw` times the batches of the `space` side and as many channels, and its blocks
/// cover `space` after `offset` (`pad`: SPACE_TO_BATCH_ND, where the rest is padding;
/// otherwise BATCH_TO_SPACE_ND, where `space` must lie wholly inside the blocks).
fn geometry(
    kernel: &str,
    (space, batch): ([usize; 4], [usize; 4]),
    block: &[i32],
    offset: &[i32],
) -> Result<Geometry, Diagnostic> {
    let positive = |v: i32| usize::try_from(v).ok().filter(|&v| (1..=1 << 16).contains(&v));
    let small = |v: i32| usize::try_from(v).ok().filter(|&v| v <= 1 << 16);
    let (Some(bh), Some(bw), Some(top), Some(left)) =
        (positive(block[0]), positive(block[1]), small(offset[0]), small(offset[1]))
    else {
        return Err(invalid(
            kernel,
            format_args!("block {:?} must be in 1..=65536 and offsets {:?} in 0..=65536", block, offset),
        ));
    };
    let g = Geometry { space, batch, block: [bh, bw], offset: [top, left] };
    let [n, h, w, c] = g.space;
    let [on, oh, ow, oc] = g.batch;
    // Every product below is of dims that address the arena (checked by the caller) and
    // values up to 2^16, but checked all the same.
    let covers = |inner: usize, before: usize, blocks: usize, size: usize| {
        inner.checked_add(before).zip(blocks.checked_mul(size)).is_some_and(|(need, have)| need <= have)
    };
    let fits = n.checked_mul(bh).and_then(|v| v.checked_mul(bw)) == Some(on)
        && c == oc
        && covers(h, top, oh, bh)
        && covers(w, left, ow, bw);
    if !fits {
        return Err(invalid(
            kernel,
            format_args!(
                "{:?} and {:?} do not fit blocks {:?} with offsets {:?}",
                space, batch, g.block, g.offset
            ),
        ));
    }
    Ok(g)
}

/// `nn.space_to_batch_nd`.
pub(crate) fn space_to_batch_nd(frame: &KernelFrame<'_>) {
    const K: &str = "nn.space_to_batch_nd";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let block = a.ints(0, "block", Some(2))?;
        let (input, output) = (a.region::<4>(1, "input")?, a.region::<4>(2, "output")?);
        let pad = a.ints(3, "pad", Some(2))?;
        let size = a.element_size(4)?;
        let value = a.dense_bytes(5, "value")?;
        if value.len() != size {
            return Err(invalid(K, format_args!("'value' must be one {}-byte element", size)));
        }
        let g = geometry(K, (input.dims, output.dims), block, pad)?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(size)?)?;
        let x = inputs.bytes(input.offset, input.byte_len(size)?)?;
        let pixel = g.space[3].checked_mul(size).ok_or_else(|| invalid(K, format_args!("size overflows")))?;
        g.for_each(|o, from| {
            // In range: the regions hold these pixels (checked above).
            let to = &mut out[o * pixel..(o + 1) * pixel];
            match from {
                Some(p) => to.copy_from_slice(&x[p * pixel..(p + 1) * pixel]),
                None => to.chunks_exact_mut(size).for_each(|e| e.copy_from_slice(value)),
            }
        });
        Ok(())
    })
}

/// `nn.batch_to_space_nd`.
pub(crate) fn batch_to_space_nd(frame: &KernelFrame<'_>) {
    const K: &str = "nn.batch_to_space_nd";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let block = a.ints(0, "block", Some(2))?;
        let crop = a.ints(1, "crop", Some(2))?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let size = a.element_size(4)?;
        let g = geometry(K, (output.dims, input.dims), block, crop)?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(size)?)?;
        let x = inputs.bytes(input.offset, input.byte_len(size)?)?;
        let pixel = g.space[3].checked_mul(size).ok_or_else(|| invalid(K, format_args!("size overflows")))?;
        // Every output pixel is some input pixel: the input's blocks cover the output.
        g.for_each(|i, to| {
            if let Some(p) = to {
                out[p * pixel..(p + 1) * pixel].copy_from_slice(&x[i * pixel..(i + 1) * pixel]);
            }
        });
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use std::vec::Vec;

    use super::*;

    fn g(space: [usize; 4], batch: [usize; 4], block: [usize; 2], offset: [usize; 2]) -> Geometry {
        Geometry { space, batch, block, offset }
    }

    /// The pixel map of `g`, `usize::MAX` for padding.
    fn map(g: &Geometry) -> Vec<usize> {
        let mut v = Vec::new();
        g.for_each(|o, p| {
            assert_eq!(o, v.len());
            v.push(p.unwrap_or(usize::MAX));
        });
        v
    }

    #[test]
    fn blocks_become_batches_in_tensorflows_order() {
        // TensorFlow's example: [[1, 2], [3, 4]] with a 2x2 block is four batches of one
        // pixel, in row-major block order.
        assert_eq!(map(&g([1, 2, 2, 1], [4, 1, 1, 1], [2, 2], [0, 0])), [0, 1, 2, 3]);
        // Two batches of a 1x4 row, block [1, 2], one pixel of padding on the left: batch
        // offset 0 takes the padding and pixel 1, offset 1 pixels 0 and 2, batches
        // interleaved within each offset.
        let p = usize::MAX;
        let m = map(&g([2, 1, 4, 1], [4, 1, 3, 1], [1, 2], [0, 1]));
        assert_eq!(m, [p, 1, 3, p, 5, 7, 0, 2, p, 4, 6, p]);
    }

    #[test]
    fn geometry_refuses_what_does_not_fit() {
        let ok = geometry("k", ([2, 5, 3, 2], [12, 4, 2, 2]), &[2, 3], &[1, 2]);
        assert_eq!(ok.expect("fits"), g([2, 5, 3, 2], [12, 4, 2, 2], [2, 3], [1, 2]));
        // Space and batch sides, block, offsets.
        type Case = ([usize; 4], [usize; 4], [i32; 2], [i32; 2]);
        let bad: [Case; 7] = [
            // Batches, channels, rows and columns that the blocks do not cover.
            ([2, 5, 3, 2], [11, 4, 2, 2], [2, 3], [1, 2]),
            ([2, 5, 3, 2], [12, 4, 2, 3], [2, 3], [1, 2]),
            ([2, 5, 3, 2], [12, 4, 2, 2], [2, 3], [4, 2]),
            ([2, 5, 3, 2], [12, 4, 2, 2], [2, 3], [1, 4]),
            // Blocks and offsets out of range; a batch count that overflows.
            ([2, 5, 3, 2], [12, 4, 2, 2], [0, 3], [1, 2]),
            ([2, 5, 3, 2], [12, 4, 2, 2], [2, 3], [-1, 2]),
            ([usize::MAX, 1, 1, 1], [usize::MAX, 1, 1, 1], [2, 1], [0, 0]),
        ];
        for (space, batch, block, offset) in bad {
            let e = geometry("k", (space, batch), &block, &offset).expect_err("refused");
            assert!(std::format!("{e:?}").contains("k: "), "{e:?}");
        }
    }

    #[test]
    fn every_pixel_appears_once() {
        let geometry = g([2, 5, 3, 2], [12, 4, 2, 2], [2, 3], [1, 2]);
        let mut seen: Vec<usize> = map(&geometry).into_iter().filter(|&p| p != usize::MAX).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..2 * 5 * 3).collect::<Vec<_>>());
    }
}
