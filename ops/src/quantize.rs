//! Conversions between float32 and int8 (TFLite's affine quantization `real = scale * (q -
//! zero_point)`), and int8 to int8 with another scale.
//!
//! - `nn.quantize.f32.i8` and `nn.dequantize.i8.f32`: attributes `input`, `output`
//!   (`[offset, elements]`), `scale` (`[scale]`), `zero_point` (`[zero point]`).
//! - `nn.requantize.i8`: `input`, `output`, `quant` (`[input zero point, output zero point,
//!   multiplier, shift]`).
//!
//! Each is TFLite Micro's: quantize rounds `x / scale` (in f32) half away from zero, adds
//! the zero point and saturates; dequantize computes `scale * (q - zero_point)` in f64 and
//! rounds to f32; requantize rescales `q - input zero point` by the fixed-point multiplier.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_dsp::multiply_by_quantized_multiplier;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};

fn scale_zp(a: &Attrs<'_>) -> Result<(f32, i32), Diagnostic> {
    let scale = a.floats(2, "scale", 1)?[0];
    let zp = a.ints(3, "zero_point", Some(1))?[0];
    if !(scale.is_finite() && scale > 0.0 && (-128..=127).contains(&zp)) {
        return Err(invalid(a.kernel, format_args!("scale {} or zero point {} out of range", scale, zp)));
    }
    Ok((scale, zp))
}

/// `nn.quantize.f32.i8`.
pub(crate) fn quantize_f32_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.quantize.f32.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let (input, output, n) = a.same_size()?;
        let (scale, zp) = scale_zp(&a)?;
        let (inputs, out) = split(K, arena, output.offset, n)?;
        let x = inputs.f32s(input.offset, n)?;
        for (o, &v) in i8s_mut(out).iter_mut().zip(x) {
            // `as i32` saturates (NaN to 0), as the clamp after it does in TFLite.
            let q = libm::roundf(v / scale) as i32;
            *o = q.saturating_add(zp).clamp(-128, 127) as i8;
        }
        Ok(())
    })
}

/// `nn.dequantize.i8.f32`.
pub(crate) fn dequantize_i8_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.dequantize.i8.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let (input, output, n) = a.same_size()?;
        let (scale, zp) = scale_zp(&a)?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.i8s(input.offset, n)?;
        for (o, &v) in f32s_mut(K, out)?.iter_mut().zip(x) {
            *o = (f64::from(scale) * f64::from(i32::from(v) - zp)) as f32;
        }
        Ok(())
    })
}

/// `nn.requantize.i8`.
pub(crate) fn requantize_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.requantize.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 3)?;
        let (input, output, n) = a.same_size()?;
        let q = a.ints(2, "quant", Some(4))?;
        if !(-31..=30).contains(&q[3]) {
            return Err(invalid(K, format_args!("shift {} out of range", q[3])));
        }
        let (inputs, out) = split(K, arena, output.offset, n)?;
        let x = inputs.i8s(input.offset, n)?;
        for (o, &v) in i8s_mut(out).iter_mut().zip(x) {
            let r = multiply_by_quantized_multiplier(i32::from(v).saturating_sub(q[0]), q[2], q[3])
                .saturating_add(q[1]);
            *o = r.clamp(-128, 127) as i8;
        }
        Ok(())
    })
}
