//! Normalization over rows of `[offset, rows, cols]` regions `input` and `output`:
//! `y = (x − mean) / sqrt(var + ε) · scale + bias`, mean and (biased) variance per row.
//!
//! - `nn.layer_norm.f32`: `scale` and `bias` hold one value per column (ONNX's
//!   LayerNormalization over the trailing axes).
//! - `nn.instance_norm.f32`: one value per channel, row `r` being channel `r mod C` (ONNX's
//!   InstanceNormalization of an `[N, C, spatial...]` input, a row per image and channel).
//!
//! Attributes in name order: `bias`, `epsilon` (`[ε]`), `input`, `output`, `scale`.
//!
//! And across channels, `nn.lrn.f32` (local response normalization) over `[offset, rows,
//! channels]` regions: `y[c] = x[c] / (bias + alpha · Σ x[j]²)^beta`, `j` from `c − lo` to
//! `c + hi` inside the channels. Attributes in name order: `input`, `output`, `params`
//! (`[alpha, beta, bias]`), `radius` (`[lo, hi]`).

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{f32s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};
use crate::math::lane_sum;

/// `nn.lrn.f32`.
pub(crate) fn lrn_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.lrn.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let (input, output) = (a.region::<2>(0, "input")?, a.region::<2>(1, "output")?);
        let [alpha, beta, bias] = [0, 1, 2].map(|k| a.floats(2, "params", 3).map(|p| p[k]));
        let (alpha, beta, bias) = (alpha?, beta?, bias?);
        let r = a.ints(3, "radius", Some(2))?;
        let (lo, hi) = match (usize::try_from(r[0]), usize::try_from(r[1])) {
            (Ok(lo), Ok(hi)) => (lo, hi),
            _ => return Err(invalid(K, format_args!("radius {:?} is negative", r))),
        };
        if input.dims != output.dims {
            return Err(invalid(
                K,
                format_args!("input {:?} and output {:?} differ", input.dims, output.dims),
            ));
        }
        let c = input.dims[1];
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        if c == 0 {
            return Ok(());
        }
        for (row, o) in x.chunks_exact(c).zip(out.chunks_exact_mut(c)) {
            for (k, y) in o.iter_mut().enumerate() {
                let window = &row[k.saturating_sub(lo)..(k.saturating_add(hi).saturating_add(1)).min(c)];
                let sum: f32 = window.iter().map(|v| v * v).sum();
                *y = row[k] / libm::powf(bias + alpha * sum, beta);
            }
        }
        Ok(())
    })
}

fn normalize(frame: &KernelFrame<'_>, kernel: &'static str, per_column: bool) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 5)?;
        let (bias, [nb]) = a.dense::<f32, 1>(0, "bias", DType::F32)?;
        let eps = a.floats(1, "epsilon", 1)?[0];
        let (input, output) = (a.region::<2>(2, "input")?, a.region::<2>(3, "output")?);
        let (scale, [ns]) = a.dense::<f32, 1>(4, "scale", DType::F32)?;
        let [rows, cols] = input.dims;
        let want = if per_column { cols } else { ns };
        if input.dims != output.dims || ns != nb || ns != want || ns == 0 || (!per_column && rows % ns != 0) {
            return Err(invalid(
                kernel,
                format_args!("input {:?}, output {:?} and {} scales do not fit", input.dims, output.dims, ns),
            ));
        }
        let (inputs, out) = split(kernel, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(kernel, out)?;
        if cols == 0 {
            return Ok(());
        }
        crate::on_widest(
            #[inline(always)]
            || {
                for (r, (row, o)) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)).enumerate() {
                    let mean = lane_sum(row, |v| v) / cols as f32;
                    let var = lane_sum(row, |v| (v - mean) * (v - mean)) / cols as f32;
                    let inv = 1.0 / crate::math::sqrt(var + eps);
                    if per_column {
                        for ((o, &v), (&s, &b)) in o.iter_mut().zip(row).zip(scale.iter().zip(bias)) {
                            *o = (v - mean) * inv * s + b;
                        }
                    } else {
                        let (s, b) = (scale[r % ns], bias[r % ns]);
                        for (o, &v) in o.iter_mut().zip(row) {
                            *o = (v - mean) * inv * s + b;
                        }
                    }
                }
            },
        );
        Ok(())
    })
}

/// `nn.layer_norm.f32`.
pub(crate) fn layer_norm_f32(frame: &KernelFrame<'_>) {
    normalize(frame, "nn.layer_norm.f32", true)
}

/// `nn.instance_norm.f32`.
pub(crate) fn instance_norm_f32(frame: &KernelFrame<'_>) {
    normalize(frame, "nn.instance_norm.f32", false)
}
