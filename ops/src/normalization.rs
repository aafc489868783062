//! Normalization over rows of `[offset, rows, cols]` regions `input` and `output`:
//! `y = (x − mean) / sqrt(var + ε) · scale + bias`, mean and (biased) variance per row.
//!
//! - `nn.layer_norm.f32`: `scale` and `bias` hold one value per column (ONNX's
//!   LayerNormalization over the trailing axes).
//! - `nn.instance_norm.f32`: one value per channel, row `r` being channel `r mod C` (ONNX's
//!   InstanceNormalization of an `[N, C, spatial...]` input, a row per image and channel).
//!
//! Attributes in name order: `bias`, `epsilon` (`[ε]`), `input`, `output`, `scale`.

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{f32s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};

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
        for (r, (row, o)) in x.chunks_exact(cols).zip(out.chunks_exact_mut(cols)).enumerate() {
            let mean = row.iter().sum::<f32>() / cols as f32;
            let var = row.iter().map(|&v| (v - mean) * (v - mean)).sum::<f32>() / cols as f32;
            let inv = 1.0 / libm::sqrtf(var + eps);
            for (c, (o, &v)) in o.iter_mut().zip(row).enumerate() {
                let k = if per_column { c } else { r % ns };
                *o = (v - mean) * inv * scale[k] + bias[k];
            }
        }
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
