//! `nn.pad_border`: padding whose values come from the input itself, by one of four rules
//! per axis. TensorFlow Lite's MIRROR_PAD (reflect, symmetric) and ONNX's Pad in modes
//! `reflect`, `edge` and `wrap` lower to it; constant padding lowers to `nn.fill` and
//! `nn.copy` (`movement.rs`).
//!
//! `nn.pad_border {dims, input, mode, output, pads, size}`: `dims` are the input's 6 counts;
//! `input` is `[byte offset, 6 element strides]` (any sign); `mode` is `[rule]`; `output` is
//! `[byte offset, 6 element strides]` (non-negative) over the padded counts; `pads` are 12
//! counts, before and after each axis in turn; `size` is `[element bytes]` (1, 2, 4 or 8).
//! Output index `o` of an axis of `n` input values padded by `b` before reads input index
//! `[`Rule::source`](o - b, n)`, axis by axis: a pad longer than the axis repeats the rule
//! (numpy's `pad` does the same).

use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};
use crate::movement::{RANK, advance, span};

/// Where a pad's values come from (`mode`'s values, in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// Mirrored about the edge value, which is not repeated: `[c b | a b c | b a]`.
    Reflect,
    /// Mirrored with the edge value repeated: `[b a | a b c | c b]`.
    Symmetric,
    /// The edge value repeated: `[a a | a b c | c c]`.
    Edge,
    /// The other end's values: `[b c | a b c | a b]`.
    Wrap,
}

impl Rule {
    fn of(code: i32) -> Option<Rule> {
        Some(match code {
            0 => Rule::Reflect,
            1 => Rule::Symmetric,
            2 => Rule::Edge,
            3 => Rule::Wrap,
            _ => return None,
        })
    }

    /// The input index that index `i` of an axis of `n > 0` values (counted from the input's
    /// first; negative before it) reads.
    fn source(self, i: i64, n: usize) -> usize {
        // (64-bit: twice an axis of up to `usize::MAX` values on a 32-bit target.)
        let n = n as i64;
        let at = match self {
            Rule::Reflect if n == 1 => 0,
            Rule::Reflect => {
                let m = i.rem_euclid(2 * (n - 1));
                if m < n { m } else { 2 * (n - 1) - m }
            }
            Rule::Symmetric => {
                let m = i.rem_euclid(2 * n);
                if m < n { m } else { 2 * n - 1 - m }
            }
            Rule::Edge => i.clamp(0, n - 1),
            Rule::Wrap => i.rem_euclid(n),
        };
        at as usize
    }
}

/// One axis: its input count, the pad before it, its output count, and its element strides
/// in the input and the output.
#[derive(Clone, Copy, Debug)]
struct Axis {
    count: usize,
    before: usize,
    padded: usize,
    input: isize,
    output: isize,
}

impl Axis {
    /// The input element offset that output index `o` reads along this axis.
    fn source(&self, rule: Rule, o: usize) -> isize {
        rule.source(o as i64 - self.before as i64, self.count) as isize * self.input
    }
}

/// `nn.pad_border`.
pub(crate) fn pad_border(frame: &KernelFrame<'_>) {
    const K: &str = "nn.pad_border";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let dims = a.ints(0, "dims", Some(RANK))?;
        let input = a.ints(1, "input", Some(RANK + 1))?;
        let mode = a.ints(2, "mode", Some(1))?[0];
        let output = a.ints(3, "output", Some(RANK + 1))?;
        let pads = a.ints(4, "pads", Some(2 * RANK))?;
        let size = a.element_size(5)?;
        let rule = Rule::of(mode)
            .ok_or_else(|| invalid(K, format_args!("mode {} is not 0 (reflect), 1, 2 or 3 (wrap)", mode)))?;
        let count = |v: i32, what: &str| {
            usize::try_from(v).map_err(|_| invalid(K, format_args!("negative {} {} in {:?}", what, v, pads)))
        };
        let mut axes = [Axis { count: 1, before: 0, padded: 1, input: 0, output: 0 }; RANK];
        for (k, axis) in axes.iter_mut().enumerate() {
            let (n, b, e) =
                (count(dims[k], "dim")?, count(pads[2 * k], "pad")?, count(pads[2 * k + 1], "pad")?);
            let padded = n.checked_add(b).and_then(|p| p.checked_add(e)).ok_or_else(|| {
                invalid(K, format_args!("axis {} of {} values padded by {:?} overflows", k, n, pads))
            })?;
            *axis = Axis {
                count: n,
                before: b,
                padded,
                input: input[k + 1] as isize,
                output: output[k + 1] as isize,
            };
        }
        if axes.iter().any(|a| a.padded == 0) {
            return Ok(());
        }
        if let Some(k) = axes.iter().position(|a| a.count == 0) {
            return Err(invalid(K, format_args!("axis {} is empty: there is nothing to pad it with", k)));
        }
        // Every output element is written once: the output span then bounds the work.
        if axes.iter().any(|a| a.output < 0 || a.output == 0 && a.padded > 1) {
            return Err(invalid(K, format_args!("output strides must be positive: {:?}", &output[1..])));
        }
        let bad =
            |what: &str| invalid(K, format_args!("{} strides overflow or reach before the arena", what));
        let in_dims = axes.map(|a| a.count);
        let out_dims = axes.map(|a| a.padded);
        let (in_start, in_end) = span(input[0], &in_dims, &input[1..], size).ok_or_else(|| bad("input"))?;
        let (out_start, out_end) =
            span(output[0], &out_dims, &output[1..], size).ok_or_else(|| bad("output"))?;
        let (inputs, out) = split(K, arena, out_start, out_end - out_start)?;
        let src = inputs.bytes(in_start, in_end - in_start)?;
        // Element offsets of index 0 in the two spans (whole elements, as `nn.copy`'s).
        let whole = |at: i32, start: usize| (at as isize - start as isize) / size as isize;
        let starts = (whole(input[0], in_start), whole(output[0], out_start));
        match size {
            1 => pad_as::<1>(src, out, &axes, starts, rule),
            2 => pad_as::<2>(src, out, &axes, starts, rule),
            4 => pad_as::<4>(src, out, &axes, starts, rule),
            _ => pad_as::<8>(src, out, &axes, starts, rule),
        }
        Ok(())
    })
}

/// The padding for elements of `N` bytes: `src` and `out` are the two spans, `ib` and `ob`
/// the element offsets of index 0 in them; every index stays in them (the spans bound it,
/// and [`Rule::source`] stays inside each axis).
fn pad_as<const N: usize>(
    src: &[u8],
    out: &mut [u8],
    axes: &[Axis; RANK],
    (ib, ob): (isize, isize),
    rule: Rule,
) {
    let (src, _) = src.as_chunks::<N>();
    let (out, _) = out.as_chunks_mut::<N>();
    let (outer, inner) = (&axes[..RANK - 1], axes[RANK - 1]);
    let mut idx = [0usize; RANK - 1];
    loop {
        let (mut i, mut o) = (ib, ob);
        for (a, &x) in outer.iter().zip(&idx) {
            i += a.source(rule, x);
            o += x as isize * a.output;
        }
        if inner.input == 1 && inner.output == 1 {
            // The row's own values as one run, the borders one at a time.
            let (b, n) = (inner.before, inner.count);
            let (i, o) = (i as usize, o as usize);
            out[o + b..][..n].copy_from_slice(&src[i..][..n]);
            for x in (0..b).chain(b + n..inner.padded) {
                out[o + x] = src[(i as isize + inner.source(rule, x)) as usize];
            }
        } else {
            for x in 0..inner.padded {
                out[(o + x as isize * inner.output) as usize] = src[(i + inner.source(rule, x)) as usize];
            }
        }
        if !advance(&mut idx, |k| outer[k].padded) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// numpy's `pad` of `[1, 2, 3]` by 4 before and 5 after in each mode, pads longer than
    /// the axis among them (values from numpy 2.4).
    #[test]
    fn rules_index_as_numpy_pads() {
        let row = |rule: Rule, n: usize| -> Vec<usize> {
            (0..4 + n + 5).map(|o| rule.source(o as i64 - 4, n) + 1).collect()
        };
        assert_eq!(row(Rule::Reflect, 3), [1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2]);
        assert_eq!(row(Rule::Symmetric, 3), [3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2]);
        assert_eq!(row(Rule::Edge, 3), [1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3]);
        assert_eq!(row(Rule::Wrap, 3), [3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2]);
        assert_eq!(row(Rule::Reflect, 1), [1; 10]);
        assert_eq!(row(Rule::Symmetric, 1), [1; 10]);
    }

    /// A 2x3 image padded on both axes, its rows contiguous (the run path) and its columns
    /// walked with the axes swapped (the element path): the same values.
    #[test]
    fn both_paths_pad_alike() {
        let src: Vec<[u8; 1]> = (1..=6u8).map(|v| [v]).collect();
        let axis = |count, before, padded, input, output| Axis { count, before, padded, input, output };
        let unit = axis(1, 0, 1, 0, 0);
        // Rows 2x3 padded (1, 1) and (2, 1): 4x6 out.
        let rows = [unit, unit, unit, unit, axis(2, 1, 4, 3, 6), axis(3, 2, 6, 1, 1)];
        let mut a = [[0u8; 1]; 24];
        pad_as::<1>(src.as_flattened(), a.as_flattened_mut(), &rows, (0, 0), Rule::Reflect);
        // The transposed walk: columns outer, rows inner, writing the same places.
        let cols = [unit, unit, unit, unit, axis(3, 2, 6, 1, 1), axis(2, 1, 4, 3, 6)];
        let mut b = [[0u8; 1]; 24];
        pad_as::<1>(src.as_flattened(), b.as_flattened_mut(), &cols, (0, 0), Rule::Reflect);
        let want: [u8; 24] = [6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2];
        assert_eq!(a.as_flattened(), want);
        assert_eq!(b.as_flattened(), want);
    }
}
