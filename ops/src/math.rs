//! float32 element-wise math over `[offset, elements]` regions `input` and `output`, with
//! `params` (floats) as the third attribute where the function has parameters:
//!
//! - `nn.exp.f32`, `nn.log.f32`, `nn.sqrt.f32`, `nn.rsqrt.f32`, `nn.abs.f32`, `nn.neg.f32`,
//!   `nn.floor.f32`, `nn.ceil.f32`, `nn.round.f32` (halves to even), `nn.sign.f32`,
//!   `nn.reciprocal.f32`, `nn.square.f32`, `nn.sin.f32`, `nn.cos.f32`, `nn.erf.f32`,
//!   `nn.softplus.f32`;
//! - `nn.elu.f32` (`[alpha]`), `nn.selu.f32` (`[alpha, gamma]`), `nn.hard_sigmoid.f32`
//!   (`[alpha, beta]`: `clamp(alpha·x + beta, 0, 1)`), `nn.gelu.f32` (`[1]` for the tanh
//!   approximation, `[0]` for the exact `x·Φ(x)`).
//!
//! Each runs the same operations in the same order on every CPU (`map_f32`), except the exact
//! GELU on AVX2 with FMA, whose polynomials step by fused multiply-adds (a transformer's
//! GELUs: 28% faster; within the float tolerance of docs/models.md), and on AVX-512, which
//! gives the AVX2 path's results sixteen lanes at a time.

use hostrt_core::kernel::KernelFrame;

use crate::activation::{map_f32, unary_f32, unary_f32_runs};
use crate::attrs::Attrs;

macro_rules! math {
    ($($f:ident = $name:literal, ($params:literal, $n:literal), $body:expr;)*) => {
        $(
            #[doc = concat!("`", $name, "`.")]
            pub(crate) fn $f(frame: &KernelFrame<'_>) {
                unary_f32(frame, $name, ($params, $n), $body)
            }
        )*
    };
}

/// Rounds halves to even (ONNX's `Round`, TFLite's `ROUND`).
fn round_even(x: f32) -> f32 {
    let r = libm::roundf(x);
    if (x - libm::truncf(x)).abs() == 0.5 { 2.0 * libm::roundf(x / 2.0) } else { r }
}

/// erf as a rational function of x² on [−4, 4] (the coefficients of Eigen's and XNNPACK's
/// float erf), within 4e-7 of libm's and branch-free, so loops over it vectorize
/// (`libm::erff` took a tenth of a transformer's time).
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let p = ERF_P[1..].iter().fold(ERF_P[0], |p, &c| p * x2 + c) * x;
    let q = ERF_Q[1..].iter().fold(ERF_Q[0], |q, &c| q * x2 + c);
    // ±1 exactly from the clamp on (erf(4) rounds to 1 in float32; the rational form gives
    // 1 − 2^-23 there, which made GELU(−1e30) −6e22 rather than 0).
    if x.abs() >= 4.0 { 1.0f32.copysign(x) } else { p / q }
}

/// [`erf`]'s numerator, a polynomial in x² (highest power first, then times x).
const ERF_P: [f32; 7] = [
    -2.726_142_3e-10,
    2.770_681_4e-8,
    -2.101_024e-6,
    -5.692_506_4e-5,
    -7.349_906_3e-4,
    -2.954_6e-3,
    -1.609_603_3e-2,
];
/// [`erf`]'s denominator, a polynomial in x² (highest power first).
const ERF_Q: [f32; 5] = [-1.456_607_2e-5, -2.133_740_6e-4, -1.682_827e-3, -7.373_329e-3, -1.426_473_9e-2];

/// `e^x`, branch-free so that loops over it vectorize (`libm::expf` per element took a
/// sixteenth of a transformer's time in its softmax): `x = n·ln 2 + r` with `|r| <= ln 2 / 2`,
/// Cephes' degree-6 polynomial for `e^r`, then `2^n` in the exponent bits. Within 2e-7
/// relative of libm's over the normal range; 0 below it (libm's subnormals, under 1.2e-38),
/// infinity above it, NaN for NaN.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    const LOG2E: f32 = core::f32::consts::LOG2_E;
    // ln 2 in two parts, so that `n · LN2_HI` is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const P: [f32; 6] = [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5];
    let (lo, hi) = (-87.336_55_f32, 88.376_26_f32);
    let c = x.clamp(lo, hi);
    // Round to the nearest integer by adding and taking away 1.5 · 2^23.
    const MAGIC: f32 = 12_582_912.0;
    let t = c * LOG2E + MAGIC;
    let n = t - MAGIC;
    let r = c - n * LN2_HI - n * LN2_LO;
    let p = P[1..].iter().fold(P[0], |p, &k| p * r + k);
    let y = p * r * r + r + 1.0;
    // n is in -126..=127 here: a normal power of two. `t`'s low mantissa bits hold n (plus
    // MAGIC's), so its exponent field comes from integer arithmetic on the bits: a float to
    // integer cast, which saturates in Rust, kept the loop from vectorizing.
    let n_bits = t.to_bits().wrapping_sub(MAGIC.to_bits());
    let scale = f32::from_bits(n_bits.wrapping_add(127) << 23);
    let v = y * scale;
    if x < lo {
        0.0
    } else if x > hi {
        f32::INFINITY
    } else {
        v
    }
}

/// The largest value of `row` (NaNs ignored, as `f32::max` does; `f32::MIN` for an empty
/// row) in eight interleaved maxima: the order does not change a maximum, and the compiler
/// can then emit a vector loop.
#[inline(always)]
pub(crate) fn lane_max(row: &[f32]) -> f32 {
    let (chunks, rest) = row.as_chunks::<8>();
    let mut lanes = [f32::MIN; 8];
    for chunk in chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l = l.max(v);
        }
    }
    rest.iter().chain(&lanes).fold(f32::MIN, |m, &v| m.max(v))
}

/// `Σ f(v)` over `row` in eight interleaved partial sums: the order of a vector loop, which
/// the compiler can then emit (an in-order float sum cannot be reordered).
#[inline(always)]
pub(crate) fn lane_sum(row: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let (chunks, rest) = row.as_chunks::<8>();
    let mut lanes = [0.0f32; 8];
    for chunk in chunks {
        for (l, &v) in lanes.iter_mut().zip(chunk) {
            *l += f(v);
        }
    }
    let tail = rest.iter().fold(0.0, |t, &v| t + f(v));
    lanes.iter().fold(0.0, |s, &l| s + l) + tail
}

/// [`gelu_erf`] on AVX2 with FMA: each polynomial's steps as fused multiply-adds (within the
/// float tolerance of the separate ones; docs/models.md).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::{ERF_P, ERF_Q};

    /// `out[i] = gelu_erf(x[i])` for `i < out.len()` (at most `x.len()`); false, with nothing
    /// written, where the CPU lacks AVX2 and FMA.
    pub(super) fn gelu_erf(x: &[f32], out: &mut [f32]) -> bool {
        if hostrt_dsp::has_avx512f() {
            // SAFETY: the CPU has AVX-512 F (checked just above).
            unsafe { gelu_on_512(x, out) };
            return true;
        }
        if !hostrt_dsp::has_avx2_fma() {
            return false;
        }
        // SAFETY: the CPU has AVX2 and FMA (checked just above).
        unsafe { gelu_on(x, out) };
        true
    }

    /// # Safety
    /// The CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn gelu_on(x: &[f32], out: &mut [f32]) {
        let x = &x[..out.len()];
        let (xs, x_rest) = x.as_chunks::<8>();
        let (outs, out_rest) = out.as_chunks_mut::<8>();
        for (x, out) in xs.iter().zip(outs) {
            // SAFETY: `x` and `out` are 32 bytes each; `loadu`/`storeu` need no alignment.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr(), gelu8(_mm256_loadu_ps(x.as_ptr()))) };
        }
        // The last values through the same steps, padded with zeros.
        let mut last = [0.0f32; 8];
        last[..x_rest.len()].copy_from_slice(x_rest);
        // SAFETY: as above, on the 32 bytes of `last`.
        unsafe { _mm256_storeu_ps(last.as_mut_ptr(), gelu8(_mm256_loadu_ps(last.as_ptr()))) };
        out_rest.copy_from_slice(&last[..out_rest.len()]);
    }

    /// [`gelu_on`] sixteen lanes at a time: the same operations in the same order, so the
    /// same results; a third less time (a 4-layer transformer 2% faster on AMD Zen 4).
    ///
    /// # Safety
    /// The CPU has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gelu_on_512(x: &[f32], out: &mut [f32]) {
        let x = &x[..out.len()];
        let (xs, x_rest) = x.as_chunks::<16>();
        let (outs, out_rest) = out.as_chunks_mut::<16>();
        for (x, out) in xs.iter().zip(outs) {
            // SAFETY: `x` and `out` are 64 bytes each; `loadu`/`storeu` need no alignment.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr(), gelu16(_mm512_loadu_ps(x.as_ptr()))) };
        }
        // The last values through the same steps, the other lanes masked off.
        let mask = (1u16 << x_rest.len()) - 1;
        // SAFETY: the masked load reads the first `x_rest.len()` lanes, all within `x_rest`,
        // and the masked store writes as many, all within `out_rest` (of the same length,
        // exclusively borrowed); lanes off the mask are not accessed.
        unsafe {
            let v = gelu16(_mm512_maskz_loadu_ps(mask, x_rest.as_ptr()));
            _mm512_mask_storeu_ps(out_rest.as_mut_ptr(), mask, v);
        }
    }

    /// Sixteen lanes of [`gelu8`]'s steps.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn gelu16(x: __m512) -> __m512 {
        let z = _mm512_mul_ps(x, _mm512_set1_ps(core::f32::consts::FRAC_1_SQRT_2));
        let z = _mm512_min_ps(_mm512_set1_ps(4.0), _mm512_max_ps(_mm512_set1_ps(-4.0), z));
        let z2 = _mm512_mul_ps(z, z);
        let p = ERF_P[1..]
            .iter()
            .fold(_mm512_set1_ps(ERF_P[0]), |p, &c| _mm512_fmadd_ps(p, z2, _mm512_set1_ps(c)));
        let q = ERF_Q[1..]
            .iter()
            .fold(_mm512_set1_ps(ERF_Q[0]), |q, &c| _mm512_fmadd_ps(q, z2, _mm512_set1_ps(c)));
        let clamped = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(_mm512_abs_ps(z), _mm512_set1_ps(4.0));
        let sign = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(i32::MIN));
        let one = _mm512_castsi512_ps(_mm512_or_si512(sign, _mm512_castps_si512(_mm512_set1_ps(1.0))));
        let erf = _mm512_mask_blend_ps(clamped, _mm512_div_ps(_mm512_mul_ps(p, z), q), one);
        let half_x = _mm512_mul_ps(_mm512_set1_ps(0.5), x);
        _mm512_mul_ps(half_x, _mm512_add_ps(_mm512_set1_ps(1.0), erf))
    }

    /// Eight lanes of [`super::gelu_erf`]: `0.5·x·(1 + erf(x/√2))`, `erf` clamped to
    /// `[−4, 4]` with NaN kept (MAXPS and MINPS return their second operand for a NaN).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    fn gelu8(x: __m256) -> __m256 {
        let z = _mm256_mul_ps(x, _mm256_set1_ps(core::f32::consts::FRAC_1_SQRT_2));
        let z = _mm256_min_ps(_mm256_set1_ps(4.0), _mm256_max_ps(_mm256_set1_ps(-4.0), z));
        let z2 = _mm256_mul_ps(z, z);
        let p = ERF_P[1..]
            .iter()
            .fold(_mm256_set1_ps(ERF_P[0]), |p, &c| _mm256_fmadd_ps(p, z2, _mm256_set1_ps(c)));
        let q = ERF_Q[1..]
            .iter()
            .fold(_mm256_set1_ps(ERF_Q[0]), |q, &c| _mm256_fmadd_ps(q, z2, _mm256_set1_ps(c)));
        // ±1 exactly from the clamp on, as `erf`.
        let sign = _mm256_set1_ps(-0.0);
        let clamped = _mm256_cmp_ps::<_CMP_GE_OQ>(_mm256_andnot_ps(sign, z), _mm256_set1_ps(4.0));
        let one = _mm256_or_ps(_mm256_and_ps(sign, z), _mm256_set1_ps(1.0));
        let erf = _mm256_blendv_ps(_mm256_div_ps(_mm256_mul_ps(p, z), q), one, clamped);
        let half_x = _mm256_mul_ps(_mm256_set1_ps(0.5), x);
        _mm256_mul_ps(half_x, _mm256_add_ps(_mm256_set1_ps(1.0), erf))
    }
}

/// GELU's tanh approximation.
fn gelu_tanh(x: f32) -> f32 {
    let c = 0.797_884_6_f32; // sqrt(2/π)
    0.5 * x * (1.0 + libm::tanhf(c * (x + 0.044_715 * x * x * x)))
}

/// The exact GELU, `x·Φ(x)`: branch-free, so its loop vectorizes.
#[inline(always)]
fn gelu_erf(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * core::f32::consts::FRAC_1_SQRT_2))
}

/// `nn.gelu.f32`: `params` `[1]` for the tanh approximation, `[0]` for the exact GELU. The
/// choice is read once, so that each loop is a plain map (a vector loop for the exact one).
pub(crate) fn gelu_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.gelu.f32";
    match Attrs::of(frame, K, 3).and_then(|a| a.floats(2, "params", 1).map(|p| p[0] != 0.0)) {
        Ok(true) => unary_f32(frame, K, ("params", 1), |x, _| gelu_tanh(x)),
        Ok(false) => unary_f32_runs(frame, K, ("params", 1), |x, out, _| {
            #[cfg(target_arch = "x86_64")]
            if x86::gelu_erf(x, out) {
                return;
            }
            map_f32(x, out, gelu_erf)
        }),
        Err(e) => frame.report_error(e),
    }
}

math! {
    exp_f32 = "nn.exp.f32", ("", 0), |x, _| libm::expf(x);
    log_f32 = "nn.log.f32", ("", 0), |x, _| libm::logf(x);
    sqrt_f32 = "nn.sqrt.f32", ("", 0), |x, _| sqrt(x);
    rsqrt_f32 = "nn.rsqrt.f32", ("", 0), |x, _| 1.0 / sqrt(x);
    abs_f32 = "nn.abs.f32", ("", 0), |x, _| x.abs();
    neg_f32 = "nn.neg.f32", ("", 0), |x, _| -x;
    floor_f32 = "nn.floor.f32", ("", 0), |x, _| libm::floorf(x);
    ceil_f32 = "nn.ceil.f32", ("", 0), |x, _| libm::ceilf(x);
    round_f32 = "nn.round.f32", ("", 0), |x, _| round_even(x);
    sign_f32 = "nn.sign.f32", ("", 0), |x, _| if x > 0.0 { 1.0 } else if x < 0.0 { -1.0 } else { x };
    reciprocal_f32 = "nn.reciprocal.f32", ("", 0), |x, _| 1.0 / x;
    square_f32 = "nn.square.f32", ("", 0), |x, _| x * x;
    sin_f32 = "nn.sin.f32", ("", 0), |x, _| libm::sinf(x);
    cos_f32 = "nn.cos.f32", ("", 0), |x, _| libm::cosf(x);
    erf_f32 = "nn.erf.f32", ("", 0), |x, _| erf(x);
    softplus_f32 = "nn.softplus.f32", ("", 0), |x, _| if x > 20.0 { x } else { libm::log1pf(libm::expf(x)) };
    elu_f32 = "nn.elu.f32", ("params", 1), |x, p| if x > 0.0 { x } else { p[0] * libm::expm1f(x) };
    selu_f32 = "nn.selu.f32", ("params", 2), |x, p| p[1] * if x > 0.0 { x } else { p[0] * libm::expm1f(x) };
    hard_sigmoid_f32 = "nn.hard_sigmoid.f32", ("params", 2), |x, p| (p[0] * x + p[1]).clamp(0.0, 1.0);
}

/// `√x` (correctly rounded, as libm's): on x86-64 through `SQRTSS`'s intrinsic, which code
/// compiled for AVX2 encodes as `VSQRTSS`; libm's is an inline-assembly legacy `SQRTSS`,
/// which inside that code made a transformer's 64x128 layer norm take 13 us instead of 7.
#[inline(always)]
pub(crate) fn sqrt(x: f32) -> f32 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    {
        use core::arch::x86_64::{_mm_cvtss_f32, _mm_set_ss, _mm_sqrt_ss};
        // SAFETY: the target has SSE (the `cfg` above); these touch registers alone.
        unsafe { _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(x))) }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    libm::sqrtf(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_round_to_even() {
        let got = [0.5f32, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6].map(round_even);
        assert_eq!(got, [0.0, 2.0, 2.0, -0.0, -2.0, 2.0, -3.0]);
    }

    #[test]
    fn exp_is_within_2e7_of_libm() {
        let worst = (-87_300..88_300)
            .map(|i| i as f32 / 1000.0 + 0.000_37)
            .map(|x| ((exp(x) - libm::expf(x)) / libm::expf(x)).abs())
            .fold(0f32, f32::max);
        assert!(worst < 2e-7, "{worst}");
        assert_eq!(exp(0.0), 1.0);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!([exp(-100.0), exp(f32::NEG_INFINITY)], [0.0, 0.0]);
        assert_eq!([exp(89.0), exp(f32::INFINITY)], [f32::INFINITY; 2]);
    }

    #[test]
    fn lane_max_finds_the_largest_value_anywhere() {
        // 19 values: two chunks and a tail; the largest in each place in turn.
        for at in 0..19 {
            let row: std::vec::Vec<f32> = (0..19).map(|i| if i == at { 7.5 } else { -(i as f32) }).collect();
            assert_eq!(lane_max(&row), 7.5, "{at}");
        }
        assert_eq!(lane_max(&[f32::NAN, -3.0, f32::NAN]), -3.0);
        assert_eq!(lane_max(&[]), f32::MIN);
    }

    #[test]
    fn lane_sums_add_every_value_once() {
        // Whole numbers sum exactly in any order: 19 values (two chunks and a tail of three).
        let row: std::vec::Vec<f32> = (1..=19).map(|v| v as f32).collect();
        assert_eq!(lane_sum(&row, |v| v), 190.0);
        assert_eq!(lane_sum(&row, |v| v * v), 2470.0);
        assert_eq!(lane_sum(&row[..5], |v| v), 15.0);
        assert_eq!(lane_sum(&[], |v| v), 0.0);
    }

    #[test]
    fn erf_is_within_4e7_of_libm() {
        let worst = (-6000..6000)
            .map(|i| i as f32 / 1000.0)
            .map(|x| (erf(x) - libm::erff(x)).abs())
            .fold(0f32, f32::max);
        assert!(worst < 4e-7, "{worst}");
        assert!(erf(f32::NAN).is_nan());
        assert_eq!(erf(f32::INFINITY), erf(4.0));
    }

    #[test]
    fn gelu_forms_agree_near_zero_and_far() {
        for x in [-3.0f32, -0.5, 0.0, 0.7, 4.0] {
            assert!((gelu_tanh(x) - gelu_erf(x)).abs() < 1e-3, "{x}");
        }
        assert_eq!(gelu_erf(0.0), 0.0);
        // Far below zero, GELU is 0 (its erf exactly −1), not x times erf's last ulp.
        for x in [-6.0f32, -1e30] {
            assert_eq!((erf(x), gelu_erf(x)), (-1.0, 0.0), "{x}");
        }
    }

    /// The AVX2 GELU (fused multiply-adds) close to the portable one on every length's last
    /// values, across erf's clamp, with infinities, NaN and huge values as it gives them.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn gelu_on_avx2_agrees_with_the_portable_one() {
        if !hostrt_dsp::has_avx2_fma() {
            return std::eprintln!("skipped: no AVX2 and FMA on this CPU");
        }
        let mut x: std::vec::Vec<f32> = (0..4001).map(|i| -8.0 + i as f32 * 0.004).collect();
        x.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -1e30, 1e30]);
        for len in [x.len(), 17, 9, 8, 7, 1, 0] {
            let mut got = std::vec![0.0f32; len];
            assert!(x86::gelu_erf(&x, &mut got));
            for (&v, &g) in x.iter().zip(&got) {
                let want = gelu_erf(v);
                // Where 1 + erf nearly cancels, the forms' last bits of erf, times x / 2.
                let close = (g - want).abs() <= 1e-6 * want.abs() + 2e-7 * v.abs();
                assert!(close || g == want || (g.is_nan() && want.is_nan()), "gelu({v}): {g} against {want}");
            }
        }
    }

    /// The AVX-512 GELU gives the AVX2 one's bits, its masked last lanes included.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn gelu_on_avx512_is_the_avx2_one() {
        if !(hostrt_dsp::has_avx512f() && hostrt_dsp::has_avx2_fma()) {
            return std::eprintln!("skipped: no AVX-512 F, or no AVX2 and FMA, on this CPU");
        }
        let mut x: std::vec::Vec<f32> = (0..4001).map(|i| -8.0 + i as f32 * 0.004).collect();
        x.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-30, -1e30, 1e30, -0.0, 3.999_999_8]);
        for len in [x.len(), 33, 17, 16, 15, 1, 0] {
            let (mut wide, mut narrow) = (std::vec![1.0f32; len], std::vec![2.0f32; len]);
            // SAFETY: the CPU has AVX-512 F, AVX2 and FMA (checked above).
            unsafe { (x86::gelu_on_512(&x, &mut wide), x86::gelu_on(&x, &mut narrow)) };
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<std::vec::Vec<_>>();
            assert_eq!(bits(&wide), bits(&narrow), "length {len}");
        }
    }
}
