//! int8 element-wise add and subtract: TFLite's reference `integer_ops` `Add`/`Sub` (each
//! operand offset, shifted left, rescaled to a common scale; the two combined; the result
//! rescaled to the output, offset and clamped), bit for bit. [`add`] and [`sub`] take
//! operands of equal length (on x86-64 with AVX2, eight values at a time); a caller that
//! broadcasts goes element by element with [`AddParams::rescale`] and [`AddParams::output`].

use crate::error::{DspError, check_len};
use crate::quant::{ActivationRange, ChannelScale, multiply_by_quantized_multiplier};

/// The quantization of an int8 add or subtract, as TFLite's `ArithmeticParams`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddParams {
    /// Negated zero point of each operand.
    pub input_offset: [i32; 2],
    /// Q31 multiplier of each operand's rescaling.
    pub input_multiplier: [i32; 2],
    /// Shift of each operand's rescaling (`-31..=30`).
    pub input_shift: [i32; 2],
    /// Left shift of both operands before their rescaling (`0..=20`; TFLite uses 20).
    pub left_shift: i32,
    /// Q31 multiplier of the output rescaling.
    pub output_multiplier: i32,
    /// Shift of the output rescaling (`-31..=30`).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl AddParams {
    /// Checks the shifts and the activation range.
    pub fn check(&self) -> Result<(), DspError> {
        let shift_ok = |s: &i32| (-31..=30).contains(s);
        if !(0..=20).contains(&self.left_shift) {
            return Err(DspError::Param("left shift outside 0..=20"));
        }
        if !self.input_shift.iter().chain([&self.output_shift]).all(shift_ok) {
            return Err(DspError::Param("shift outside -31..=30"));
        }
        self.activation.check()
    }

    /// Operand `i`'s value `x` offset, shifted left and rescaled (saturating where it would
    /// overflow, which TFLite's parameters never make it do).
    #[inline]
    pub fn rescale(&self, i: usize, x: i32) -> i32 {
        let shifted = self.input_offset[i].saturating_add(x).saturating_mul(1 << self.left_shift);
        multiply_by_quantized_multiplier(shifted, self.input_multiplier[i], self.input_shift[i])
    }

    /// The output of a combined value (the rescaled operands' sum or difference): rescaled,
    /// offset, clamped.
    #[inline]
    pub fn output(&self, raw: i32) -> i8 {
        let v = multiply_by_quantized_multiplier(raw, self.output_multiplier, self.output_shift)
            .saturating_add(self.output_offset);
        // The activation range lies within int8 (checked), so the cast is exact.
        v.clamp(self.activation.min, self.activation.max) as i8
    }

    /// Whether wrapping int32 lanes give the scalar stage's results: operands rescaled by
    /// at most 1 (shifts `<= 0`, as TFLite's converter makes them) from offsets within
    /// ±256, so nothing before the output stage can overflow (each operand stays within
    /// ±384·2^20, their sum or difference within ±2^30); an output offset within int8 (the
    /// vector loops clamp before adding it); and an output multiplier other than `i32::MIN`
    /// (a positive output shift could meet it with a sum of `i32::MIN`, where the doubling
    /// multiply saturates).
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    pub(crate) fn vector_exact(&self) -> bool {
        self.input_shift.iter().all(|&s| s <= 0)
            && self.input_offset.iter().all(|o| (-256..=256).contains(o))
            && (-128..=127).contains(&self.output_offset)
            && self.output_multiplier != i32::MIN
    }
}

/// `out[i] = x[i] + y[i]` in int8 (see [`AddParams`]); the three slices have equal lengths.
///
/// ```
/// use hostrt_dsp::{ActivationRange, AddParams, add, quantize_multiplier};
///
/// // Both operands and the output share the scale and zero point 0: a plain saturating sum.
/// let (half, half_shift) = quantize_multiplier(0.5);
/// let (out_m, out_shift) = quantize_multiplier(2.0 / f64::from(1 << 20));
/// let p = AddParams {
///     input_offset: [0, 0],
///     input_multiplier: [half, half],
///     input_shift: [half_shift, half_shift],
///     left_shift: 20,
///     output_multiplier: out_m,
///     output_shift: out_shift,
///     output_offset: 0,
///     activation: ActivationRange::INT8,
/// };
/// let mut out = [0i8; 3];
/// add(&p, &[1, 100, -100], &[2, 100, -100], &mut out)?;
/// assert_eq!(out, [3, 127, -128]);
/// # Ok::<(), hostrt_dsp::DspError>(())
/// ```
pub fn add(p: &AddParams, x: &[i8], y: &[i8], out: &mut [i8]) -> Result<(), DspError> {
    add_sub::<false>(p, x, y, out)
}

/// `out[i] = x[i] - y[i]` in int8 (see [`AddParams`]); the three slices have equal lengths.
pub fn sub(p: &AddParams, x: &[i8], y: &[i8], out: &mut [i8]) -> Result<(), DspError> {
    add_sub::<true>(p, x, y, out)
}

/// Operand lengths above which [`add_sub`] looks the rescaled operands up in tables of
/// their 256 values (computing the tables costs 512 rescalings).
const TABLE_FROM: usize = 1024;

// Never inlined (as the crate-root per-channel kernels): a caller built for size would
// otherwise take the loop in under its attributes.
#[inline(never)]
fn add_sub<const SUB: bool>(p: &AddParams, x: &[i8], y: &[i8], out: &mut [i8]) -> Result<(), DspError> {
    p.check()?;
    check_len("y", x.len(), y.len())?;
    check_len("output", x.len(), out.len())?;
    // Values done 16 or eight at a time, where the CPU allows; the rest one at a time.
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    let done = if p.vector_exact() && crate::arch::avx2::has_vnni() {
        let (x16, _) = x.as_chunks::<16>();
        let (y16, _) = y.as_chunks::<16>();
        let (out16, _) = out.as_chunks_mut::<16>();
        // SAFETY: the CPU has AVX-512 F, BW and VL (`has_vnni`).
        unsafe { crate::arch::avx512::add_sub::<SUB>(p, x16, y16, out16) };
        x16.len() * 16
    } else if p.vector_exact() && crate::arch::avx2::has_avx2() {
        let (x8, _) = x.as_chunks::<8>();
        let (y8, _) = y.as_chunks::<8>();
        let (out8, _) = out.as_chunks_mut::<8>();
        // SAFETY: the CPU has AVX2 (`has_avx2`).
        unsafe { crate::arch::avx2::add_sub::<SUB>(p, x8, y8, out8) };
        x8.len() * 8
    } else {
        0
    };
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    let done = 0;
    // The three rescalings' shifts worked out once (`rescale` and `output`, step for step).
    let [sx, sy] = [0, 1].map(|i| ChannelScale::new(p.input_multiplier[i], p.input_shift[i]));
    let so = ChannelScale::new(p.output_multiplier, p.output_shift);
    let rescale = |sc: &ChannelScale, offset: i32, v: i8| {
        sc.apply(offset.saturating_add(i32::from(v)).saturating_mul(1 << p.left_shift))
    };
    let combine = |xs: i32, ys: i32| {
        let raw = if SUB { xs.saturating_sub(ys) } else { xs.saturating_add(ys) };
        p.activation.clamp_i8(so.apply(raw).saturating_add(p.output_offset))
    };
    let (x, y, out) = (&x[done..], &y[done..], &mut out[done..]);
    if x.len() > TABLE_FROM {
        // Each operand's 256 possible rescaled values, looked up (2 KiB of stack).
        let (mut tx, mut ty) = ([0i32; 256], [0i32; 256]);
        for v in -128..=127i8 {
            let i = usize::from(v as u8);
            (tx[i], ty[i]) = (rescale(&sx, p.input_offset[0], v), rescale(&sy, p.input_offset[1], v));
        }
        for ((&x, &y), o) in x.iter().zip(y).zip(out) {
            *o = combine(tx[usize::from(x as u8)], ty[usize::from(y as u8)]);
        }
        return Ok(());
    }
    for ((&x, &y), o) in x.iter().zip(y).zip(out) {
        *o = combine(rescale(&sx, p.input_offset[0], x), rescale(&sy, p.input_offset[1], y));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::quant::quantize_multiplier;
    use crate::testutil::Lcg;
    use std::vec::Vec;

    /// TFLite's parameters for operand scales `sx`, `sy` and output scale `so`.
    pub(crate) fn params(rng: &mut Lcg, sx: f64, sy: f64, so: f64) -> AddParams {
        let twice_max = 2.0 * sx.max(sy);
        let left_shift = 20;
        let (mx, shx) = quantize_multiplier(sx / twice_max);
        let (my, shy) = quantize_multiplier(sy / twice_max);
        let (mo, sho) = quantize_multiplier(twice_max / (f64::from(1 << left_shift) * so));
        AddParams {
            input_offset: [-rng.range(-128, 127), -rng.range(-128, 127)],
            input_multiplier: [mx, my],
            input_shift: [shx, shy],
            left_shift,
            output_multiplier: mo,
            output_shift: sho,
            output_offset: rng.range(-128, 127),
            activation: ActivationRange::new(rng.range(-128, -10), rng.range(10, 127)).unwrap(),
        }
    }

    /// Operands with offsets 3 and -7, each rescaled to about `(x + offset) / 2`, their sum
    /// halved again, no output offset, int8's whole range.
    fn halves() -> AddParams {
        AddParams {
            input_offset: [3, -7],
            input_multiplier: [1 << 30, 1 << 30],
            input_shift: [-20, -20],
            left_shift: 20,
            output_multiplier: 1 << 30,
            output_shift: 0,
            output_offset: 0,
            activation: ActivationRange::INT8,
        }
    }

    /// Parameters the vector loops cannot match (an output multiplier of `i32::MIN` with a
    /// positive output shift, an output offset past int8) give the scalar stage's results
    /// over every pair of int8 values.
    #[test]
    fn vector_loops_leave_what_they_cannot_match_to_the_scalar_stage() {
        let (x, y): (Vec<i8>, Vec<i8>) = (0..65536).map(|i: i32| (i as i8, (i >> 8) as i8)).unzip();
        let base = halves();
        let cases = [
            AddParams { output_multiplier: i32::MIN, output_shift: 30, ..base },
            // Results within about ±2048 before the offset: some land in int8 after it.
            AddParams { output_offset: 2000, output_shift: 5, ..base },
            AddParams { output_offset: -1900, output_shift: 5, ..base },
        ];
        for p in cases {
            for sub in [false, true] {
                let mut got = std::vec![0i8; x.len()];
                if sub { super::sub(&p, &x, &y, &mut got) } else { add(&p, &x, &y, &mut got) }.unwrap();
                for (i, (&x, &y)) in x.iter().zip(&y).enumerate() {
                    let (xs, ys) = (p.rescale(0, i32::from(x)), p.rescale(1, i32::from(y)));
                    let want = p.output(if sub { xs.saturating_sub(ys) } else { xs.saturating_add(ys) });
                    assert_eq!(got[i], want, "x {x} y {y} sub {sub} {p:?}");
                }
            }
        }
    }

    /// Clamps from just below, at and just above the output offset (at or above it, the
    /// vector stages leave out a correction of results at most 0) give the scalar stage's
    /// results over every pair of int8 values, long (the lookups) and in short calls (the
    /// 16-lane loop), with power-of-two scales, whose rescaled sums meet the ties.
    #[test]
    fn clamps_from_the_output_offset_match_the_scalar_stage() {
        let (x, y): (Vec<i8>, Vec<i8>) = (0..65536).map(|i: i32| (i as i8, (i >> 8) as i8)).unzip();
        for min in [4, 5, 6] {
            let activation = ActivationRange::new(min, 127).unwrap();
            let p = AddParams { output_shift: -3, output_offset: 5, activation, ..halves() };
            for sub in [false, true] {
                let run = |x: &[i8], y: &[i8], got: &mut [i8]| {
                    if sub { super::sub(&p, x, y, got) } else { add(&p, x, y, got) }.unwrap()
                };
                let (mut long, mut short) = (std::vec![0i8; x.len()], std::vec![0i8; x.len()]);
                run(&x, &y, &mut long);
                for ((x, y), got) in x.chunks(256).zip(y.chunks(256)).zip(short.chunks_mut(256)) {
                    run(x, y, got);
                }
                for (i, (&x, &y)) in x.iter().zip(&y).enumerate() {
                    let (xs, ys) = (p.rescale(0, i32::from(x)), p.rescale(1, i32::from(y)));
                    let want = p.output(if sub { xs.saturating_sub(ys) } else { xs.saturating_add(ys) });
                    assert_eq!((long[i], short[i]), (want, want), "x {x} y {y} sub {sub} {p:?}");
                }
            }
        }
    }

    #[test]
    fn vector_and_scalar_agree() {
        let mut rng = Lcg(11);
        for round in 0..300 {
            let scales = [rng.scales(3, 0.001, 8.0), rng.scales(3, 0.05, 1.0)][round % 2].clone();
            let p = params(&mut rng, scales[0], scales[1], scales[2]);
            let n = 1 + (rng.next() as usize % 70);
            let (x, y) = (rng.bytes(n), rng.bytes(n));
            for sub in [false, true] {
                let mut got = std::vec![0i8; n];
                if sub { super::sub(&p, &x, &y, &mut got) } else { add(&p, &x, &y, &mut got) }.unwrap();
                let want: Vec<i8> = x
                    .iter()
                    .zip(&y)
                    .map(|(&a, &b)| {
                        let (xs, ys) = (p.rescale(0, i32::from(a)), p.rescale(1, i32::from(b)));
                        p.output(if sub { xs.saturating_sub(ys) } else { xs.saturating_add(ys) })
                    })
                    .collect();
                assert_eq!(got, want, "round {round} sub {sub} {p:?}");
            }
        }
    }

    #[test]
    fn long_operands_take_the_lookup_tables() {
        // Longer than TABLE_FROM, with a positive input shift (so x86 takes the scalar loop
        // too), against the element-wise stage; then the short way for the same values.
        let mut rng = Lcg(29);
        for round in 0..6 {
            let mut p = params(&mut rng, 0.02, 0.5, 0.1);
            p.input_shift[round % 2] = 1 + round as i32;
            let n = TABLE_FROM + 1 + rng.next() as usize % 500;
            let (x, y) = (rng.bytes(n), rng.bytes(n));
            for sub in [false, true] {
                let mut got = std::vec![0i8; n];
                if sub { super::sub(&p, &x, &y, &mut got) } else { add(&p, &x, &y, &mut got) }.unwrap();
                let mut short = std::vec![0i8; 7];
                for (i, want) in got.iter().enumerate() {
                    let (xs, ys) = (p.rescale(0, i32::from(x[i])), p.rescale(1, i32::from(y[i])));
                    let raw = if sub { xs.saturating_sub(ys) } else { xs.saturating_add(ys) };
                    assert_eq!(*want, p.output(raw), "round {round} sub {sub} at {i}");
                }
                let k = n - 7;
                if sub {
                    super::sub(&p, &x[k..], &y[k..], &mut short)
                } else {
                    add(&p, &x[k..], &y[k..], &mut short)
                }
                .unwrap();
                assert_eq!(short[..], got[k..]);
            }
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut rng = Lcg(3);
        let p = params(&mut rng, 0.1, 0.2, 0.3);
        let mut out = [0i8; 4];
        assert!(add(&p, &[0; 4], &[0; 3], &mut out).is_err());
        assert!(add(&p, &[0; 4], &[0; 4], &mut out[..3]).is_err());
        assert!(add(&AddParams { left_shift: 21, ..p }, &[0; 4], &[0; 4], &mut out).is_err());
        assert!(add(&AddParams { output_shift: 31, ..p }, &[0; 4], &[0; 4], &mut out).is_err());
    }
}
