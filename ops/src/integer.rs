//! Exact int32 products of 8-bit data and 8-bit weights, each less its zero point, as
//! dynamically quantized models use them: `nn.matmul_integer` (ONNX's `MatMulInteger`,
//! `out[i, j] = Σ_k (lhs[i, k] − lhs_zero) · rhs[k, j]`) and `nn.conv_integer` (below).
//! Sums wrap as int32 does.
//!
//! `nn.matmul_integer`:
//! attributes, in name order: `lhs` (`[offset, rows, depth]`), `lhs_type` (`ui8` or `i8`),
//! `lhs_zero` (`[value]`: a constant zero point), `lhs_zero_at` (`[offset]` of a one-element
//! tensor of `lhs_type` in the arena whose value is added to it, as a dynamic quantization
//! computes one, or `[-1]` for none), `output` (`[offset]`, int32 `[rows, cols]`), `rhs`
//! (dense i16 `[depth, cols]`: the weights less their zero points, per column, subtracted at
//! import).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{Inputs, split, with_arena};
use crate::attrs::{Attrs, invalid};
use crate::element::{Num, dtype, load};

/// The element type of `what` at attribute `i` (named `name`): `ui8` or `i8`.
fn eight_bit(a: &Attrs<'_>, i: usize, (name, what): (&str, &str)) -> Result<DType, Diagnostic> {
    match dtype(a, i, name)? {
        t @ (DType::U8 | DType::I8) => Ok(t),
        t => Err(invalid(a.kernel, format_args!("{} of {} is not 8-bit", what, t))),
    }
}

/// The data's zero point: the constant `zero`, plus the one-element value of type `t` at
/// arena offset `zero_at` unless that is negative.
fn zero_point(inputs: &Inputs<'_>, t: DType, zero: i32, zero_at: i32) -> Result<i32, Diagnostic> {
    Ok(match usize::try_from(zero_at) {
        Err(_) => zero,
        Ok(at) => match load(t, inputs.bytes(at, 1)?, 0) {
            Num::I(v) => zero.wrapping_add(v as i32),
            Num::F(_) => zero,
        },
    })
}

/// `nn.matmul_integer`.
pub(crate) fn matmul_integer(frame: &KernelFrame<'_>) {
    const K: &str = "nn.matmul_integer";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let lhs = a.region::<2>(0, "lhs")?;
        let t = eight_bit(&a, 1, ("lhs_type", "lhs"))?;
        let zero = a.ints(2, "lhs_zero", Some(1))?[0];
        let zero_at = a.ints(3, "lhs_zero_at", Some(1))?[0];
        let output = a.region::<0>(4, "output")?;
        let (rhs, [depth, cols]) = a.dense::<i16, 2>(5, "rhs", DType::I16)?;
        let [rows, lhs_depth] = lhs.dims;
        if lhs_depth != depth {
            return Err(invalid(
                K,
                format_args!("lhs {:?} does not fit rhs [{}, {}]", lhs.dims, depth, cols),
            ));
        }
        let out_bytes = rows.checked_mul(cols).and_then(|n| n.checked_mul(4));
        let out_bytes = out_bytes.ok_or_else(|| invalid(K, format_args!("output size overflows")))?;
        let (inputs, out) = split(K, arena, output.offset, out_bytes)?;
        let x = inputs.bytes(lhs.offset, lhs.elements()?)?;
        let zp = zero_point(&inputs, t, zero, zero_at)?;
        let value = |b: u8| if t == DType::I8 { i32::from(b as i8) } else { i32::from(b) };
        let mut acc = [0i32; 64];
        for (i, row) in out.chunks_exact_mut(cols * 4).enumerate() {
            // Columns in blocks of 64 sums held on the stack.
            for c0 in (0..cols).step_by(acc.len()) {
                let n = (cols - c0).min(acc.len());
                let sums = &mut acc[..n];
                sums.fill(0);
                for k in 0..depth {
                    let v = value(x[i * depth + k]).wrapping_sub(zp);
                    if v == 0 {
                        continue;
                    }
                    let w = &rhs[k * cols + c0..][..n];
                    for (s, &w) in sums.iter_mut().zip(w) {
                        *s = s.wrapping_add(v.wrapping_mul(i32::from(w)));
                    }
                }
                for (o, s) in row[c0 * 4..(c0 + n) * 4].chunks_exact_mut(4).zip(sums.iter()) {
                    o.copy_from_slice(&s.to_le_bytes());
                }
            }
        }
        Ok(())
    })
}

/// `nn.conv_integer`: the exact int32 convolution of 8-bit NHWC data by 8-bit weights, each
/// less its zero point (ONNX's `ConvInteger`); taps in the padding add nothing, as padding
/// with the zero point does.
///
/// Attributes, in name order: `filter` (dense i16 `[kh, kw, in / groups, out]`, zero points
/// subtracted), `groups` (`[g]`: output channel `o` reads input channels of group
/// `o / (out / g)`), `input` (`[offset, n, h, w, in]`), `input_type` (`ui8` or `i8`),
/// `input_zero` and `input_zero_at` (as `nn.matmul_integer`'s `lhs_zero` and
/// `lhs_zero_at`), `output` (`[offset, n, oh, ow, out]`, int32), `window` (`[stride h, stride
/// w, dilation h, dilation w, pad top, pad left]`).
pub(crate) fn conv_integer(frame: &KernelFrame<'_>) {
    const K: &str = "nn.conv_integer";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 8)?;
        let (filter, [kh, kw, fi, fo]) = a.dense::<i16, 4>(0, "filter", DType::I16)?;
        let groups = usize::try_from(a.ints(1, "groups", Some(1))?[0]).unwrap_or(0);
        let input = a.region::<4>(2, "input")?;
        let t = eight_bit(&a, 3, ("input_type", "input"))?;
        let zero = a.ints(4, "input_zero", Some(1))?[0];
        let zero_at = a.ints(5, "input_zero_at", Some(1))?[0];
        let output = a.region::<4>(6, "output")?;
        let [sh, sw, dh, dw, pt, pl] = a.window(7)?;
        let [n, h, w, c] = input.dims;
        let [on, oh, ow, oc] = output.dims;
        let grouped = groups > 0 && c % groups == 0 && oc % groups == 0 && fi * groups == c;
        if on != n || !grouped || fo != oc {
            return Err(invalid(
                K,
                format_args!(
                    "filter [{kh}, {kw}, {fi}, {fo}] does not fit {:?} -> {:?}",
                    input.dims, output.dims
                ),
            ));
        }
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.bytes(input.offset, input.elements()?)?;
        let zp = zero_point(&inputs, t, zero, zero_at)?;
        let value = |b: u8| if t == DType::I8 { i32::from(b as i8) } else { i32::from(b) };
        let mut acc = [0i32; 64];
        let mut o = 0;
        let per_group = oc / groups;
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    // The taps of this output pixel inside the input, as input pixel offsets.
                    let taps =
                        (0..kh).flat_map(|ky| (0..kw).map(move |kx| (ky, kx))).filter_map(|(ky, kx)| {
                            let iy = crate::conv::tap(oy, sh, pt, ky, dh, h)?;
                            let ix = crate::conv::tap(ox, sw, pl, kx, dw, w)?;
                            Some((ky * kw + kx, ((b * h + iy) * w + ix) * c))
                        });
                    for c0 in (0..oc).step_by(acc.len()) {
                        let m = (oc - c0).min(acc.len());
                        let sums = &mut acc[..m];
                        sums.fill(0);
                        for (tap, pixel) in taps.clone() {
                            if groups == 1 {
                                for ci in 0..c {
                                    let v = value(x[pixel + ci]).wrapping_sub(zp);
                                    if v == 0 {
                                        continue;
                                    }
                                    let wr = &filter[(tap * c + ci) * oc + c0..][..m];
                                    for (s, &wv) in sums.iter_mut().zip(wr) {
                                        *s = s.wrapping_add(v.wrapping_mul(i32::from(wv)));
                                    }
                                }
                                continue;
                            }
                            // Grouped: each output channel over its group's input channels.
                            for (j, s) in sums.iter_mut().enumerate() {
                                let oi = c0 + j;
                                let first = oi / per_group * fi;
                                for ci in 0..fi {
                                    let v = value(x[pixel + first + ci]).wrapping_sub(zp);
                                    let wv = i32::from(filter[(tap * fi + ci) * oc + oi]);
                                    *s = s.wrapping_add(v.wrapping_mul(wv));
                                }
                            }
                        }
                        for s in sums.iter() {
                            out[o..o + 4].copy_from_slice(&s.to_le_bytes());
                            o += 4;
                        }
                    }
                }
            }
        }
        Ok(())
    })
}
