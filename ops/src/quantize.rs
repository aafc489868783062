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
        quantize(x, scale, zp, i8s_mut(out));
        Ok(())
    })
}

/// `out[i]` = `x[i] / scale` rounded half away from zero, plus `zp`, saturated to int8, for
/// `i < out.len()` (at most `x.len()`): on AVX2 eight at a time where the CPU has it.
fn quantize(x: &[f32], scale: f32, zp: i32, out: &mut [i8]) {
    #[cfg(target_arch = "x86_64")]
    if x86::quantize(x, scale, zp, out) {
        return;
    }
    for (o, &v) in out.iter_mut().zip(x) {
        *o = quantize_one(v, scale, zp);
    }
}

/// `out[i] = scale * (x[i] - zp)` computed in f64 and rounded to f32, for `i < out.len()`
/// (at most `x.len()`): on AVX2 eight at a time where the CPU has it.
fn dequantize(x: &[i8], scale: f32, zp: i32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if x86::dequantize(x, scale, zp, out) {
        return;
    }
    for (o, &v) in out.iter_mut().zip(x) {
        *o = dequantize_one(v, scale, zp);
    }
}

/// One value of [`dequantize`].
fn dequantize_one(v: i8, scale: f32, zp: i32) -> f32 {
    (f64::from(scale) * f64::from(i32::from(v) - zp)) as f32
}

/// One value of [`quantize`]. `as i32` saturates (NaN to 0), as the clamp after it does in
/// TFLite.
fn quantize_one(v: f32, scale: f32, zp: i32) -> i8 {
    let q = libm::roundf(v / scale) as i32;
    q.saturating_add(zp).clamp(-128, 127) as i8
}

/// [`quantize`] and [`dequantize`] on AVX2 (libm's `roundf`, a call per value, and the
/// scalar division had cost a QDQ model's 2,048-value quantization 13.8 us, a quarter of the
/// model; its dequantization, scalar in f64, 3.2 us).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    /// [`super::quantize`]; false, with nothing written, where the CPU lacks AVX2.
    pub(super) fn quantize(x: &[f32], scale: f32, zp: i32, out: &mut [i8]) -> bool {
        if !hostrt_dsp::has_avx2() {
            return false;
        }
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { quantize_on(x, scale, zp, out) };
        true
    }

    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn quantize_on(x: &[f32], scale: f32, zp: i32, out: &mut [i8]) {
        let x = &x[..out.len()];
        let (xs, x_rest) = x.as_chunks::<8>();
        let (outs, out_rest) = out.as_chunks_mut::<8>();
        let (scale8, zp8) = (_mm256_set1_ps(scale), _mm256_set1_ps(zp as f32));
        for (x, out) in xs.iter().zip(outs) {
            // SAFETY: `x` is 32 readable bytes; `loadu` needs no alignment.
            *out = quantize8(unsafe { _mm256_loadu_ps(x.as_ptr()) }, scale8, zp8);
        }
        for (o, &v) in out_rest.iter_mut().zip(x_rest) {
            *o = super::quantize_one(v, scale, zp);
        }
    }

    /// [`super::dequantize`]; false, with nothing written, where the CPU lacks AVX2.
    pub(super) fn dequantize(x: &[i8], scale: f32, zp: i32, out: &mut [f32]) -> bool {
        if !hostrt_dsp::has_avx2() {
            return false;
        }
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { dequantize_on(x, scale, zp, out) };
        true
    }

    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn dequantize_on(x: &[i8], scale: f32, zp: i32, out: &mut [f32]) {
        let x = &x[..out.len()];
        let (xs, x_rest) = x.as_chunks::<8>();
        let (outs, out_rest) = out.as_chunks_mut::<8>();
        let (scale8, zp8) = (_mm256_set1_ps(scale), _mm256_set1_epi32(zp));
        for (x, out) in xs.iter().zip(outs) {
            // SAFETY: `x` is 8 readable bytes, what `loadl_epi64` reads (any alignment).
            let v = _mm256_cvtepi8_epi32(unsafe { _mm_loadl_epi64(x.as_ptr().cast()) });
            // `q - zp` (at most 255 in magnitude) is exact in f32, and its product with the
            // scale has at most 32 significant bits, exact in f64: the f64 form rounds that
            // product once to f32, which is what one f32 multiplication does.
            let v = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, zp8));
            // SAFETY: `out` is 32 writable bytes; `storeu` needs no alignment.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), _mm256_mul_ps(scale8, v)) };
        }
        for (o, &v) in out_rest.iter_mut().zip(x_rest) {
            *o = super::dequantize_one(v, scale, zp);
        }
    }

    /// Eight values of [`super::quantize_one`]. The division is IEEE's, as the scalar one;
    /// rounding half away from zero is exact: `|q|`'s fraction (`|q| − floor(|q|)`) is exact
    /// in f32, and decides whether to add 1. NaN becomes 0 (as `as i32` makes it); the sum
    /// with the zero point and the clamp in f32 give the saturated integer's result (exact
    /// below 2^24, and past it both clamp).
    #[target_feature(enable = "avx2")]
    #[inline]
    fn quantize8(x: __m256, scale: __m256, zp: __m256) -> [i8; 8] {
        let q = _mm256_div_ps(x, scale);
        let sign = _mm256_and_ps(q, _mm256_set1_ps(-0.0));
        let a = _mm256_andnot_ps(_mm256_set1_ps(-0.0), q);
        let floor = _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a);
        let up = _mm256_cmp_ps::<_CMP_GE_OQ>(_mm256_sub_ps(a, floor), _mm256_set1_ps(0.5));
        let r = _mm256_or_ps(_mm256_add_ps(floor, _mm256_and_ps(up, _mm256_set1_ps(1.0))), sign);
        // NaN lanes to +0.
        let r = _mm256_and_ps(r, _mm256_cmp_ps::<_CMP_ORD_Q>(r, r));
        let t = _mm256_add_ps(r, zp);
        let t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(-128.0)), _mm256_set1_ps(127.0));
        let v = _mm256_cvtps_epi32(t);
        let v = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let v = _mm_packs_epi16(v, v);
        (_mm_cvtsi128_si64(v) as u64).to_le_bytes().map(|b| b as i8)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use std::vec::Vec;

        /// Every int8 value and zero point kind against the scalar form, bit for bit, with
        /// scales whose products round (and a subnormal one), every tail length.
        #[test]
        fn dequantize_matches_scalar() {
            if !hostrt_dsp::has_avx2() {
                return std::eprintln!("skipped: this CPU has no AVX2");
            }
            let x: Vec<i8> = (-128..=127).chain([5, -3, 127]).collect();
            for (scale, zp) in [(1.0, 0), (0.1, -128), (0.003_921_569, 127), (3.3e-39, 5), (1e38, -7)] {
                for len in [x.len(), 17, 9, 8, 7, 1, 0] {
                    let mut got = std::vec![0.0f32; len];
                    assert!(dequantize(&x, scale, zp, &mut got));
                    for (&v, &g) in x.iter().zip(&got) {
                        let want = super::super::dequantize_one(v, scale, zp);
                        assert_eq!(g.to_bits(), want.to_bits(), "{scale} * ({v} - {zp})");
                    }
                }
            }
        }

        /// Every value kind against the scalar form: ties at every magnitude, both signs,
        /// values past int8 and int32, infinities, NaN, subnormals, every tail length.
        #[test]
        fn quantize_matches_scalar() {
            if !hostrt_dsp::has_avx2() {
                return std::eprintln!("skipped: this CPU has no AVX2");
            }
            let mut x: Vec<f32> = (-600..=600).map(|i| i as f32 * 0.25).collect();
            x.extend((-300..300).map(|i| i as f32 * 0.5 + 0.5));
            x.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, 1e-45, -1e-45, 3e9, -3e9]);
            x.extend([8388607.5, -8388607.5, 16777217.0, 0.49999997, -0.49999997, 2.5, -2.5, 1e30, -1e30]);
            for (scale, zp) in [(1.0, 0), (0.5, -128), (0.1, 127), (3.0, 5), (1e-3, -7)] {
                for len in [x.len(), 17, 9, 8, 7, 1, 0] {
                    let mut got = std::vec![0i8; len];
                    assert!(quantize(&x, scale, zp, &mut got));
                    for (&v, &g) in x.iter().zip(&got) {
                        assert_eq!(g, super::super::quantize_one(v, scale, zp), "{v} / {scale} + {zp}");
                    }
                }
            }
        }
    }
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
        dequantize(x, scale, zp, f32s_mut(K, out)?);
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
