//! TFLite's fixed-point requantization: `QuantizeMultiplier` and the non-single-rounding
//! `MultiplyByQuantizedMultiplier` of `tensorflow/lite/kernels/internal/common.h`, with the two
//! gemmlowp primitives it is made of. Every kernel rescales its int32 accumulators with these.
//! Also the argument checks the per-channel kernels (fully connected, convolutions) share.

use crate::arch::dsp::intrinsics;
use crate::error::{DspError, check_len};
use crate::filled::Filled;

/// gemmlowp's `SaturatingRoundingDoublingHighMul`: `round(a * b / 2^31)`, with the one
/// overflowing case (`i32::MIN * i32::MIN`) saturated to `i32::MAX`. Rounds half up (towards
/// positive infinity), as gemmlowp's nudge-then-truncate does.
#[inline]
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    // gemmlowp computes (ab + nudge) / 2^31 truncated towards zero, the nudge 2^30 for ab >= 0
    // and 1 - 2^30 below. That is floor((ab + 2^30) / 2^31) for every ab: for ab < 0 the
    // numerator is negative, truncation is the ceiling, and ceil(y / 2^31) equals
    // floor((y + 2^31 - 1) / 2^31). One multiply-add and a shift (no select, no division);
    // |ab| < 2^62, so neither the sum nor the quotient overflows.
    ((i64::from(a) * i64::from(b) + (1 << 30)) >> 31) as i32
}

/// gemmlowp's `RoundingDivideByPOT`: `x / 2^exponent` rounded to nearest, ties away from zero.
/// `exponent` is clamped to `0..=31` (gemmlowp asserts that range).
#[inline]
pub fn rounding_divide_by_pot(x: i32, exponent: i32) -> i32 {
    let exponent = exponent.clamp(0, 31);
    let mask = (1u32 << exponent).wrapping_sub(1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> exponent) + i32::from(remainder > threshold)
}

/// TFLite's `MultiplyByQuantizedMultiplier` (the default, double-rounding variant): `acc`
/// times `multiplier / 2^31 * 2^shift`. A positive `shift` is applied to `acc` before the
/// multiplication (wrapping, where C++ would overflow), a negative one as a rounding right
/// shift after it. Kernels accept `shift` in `-31..=30` only.
#[inline]
pub fn multiply_by_quantized_multiplier(acc: i32, multiplier: i32, shift: i32) -> i32 {
    let left_shift = shift.max(0) as u32;
    let right_shift = (-shift.max(-31)).max(0);
    let shifted = acc.wrapping_mul(1i32.wrapping_shl(left_shift.min(31)));
    rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right_shift)
}

/// [`multiply_by_quantized_multiplier`] worked out once for a channel whose outputs a loop
/// rescales one after the other: where it can, as one rounding ([`ChannelScale::apply`]),
/// else out of line. Same results for shifts in `-31..=30`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChannelScale {
    multiplier: i32,
    /// The one-rounding form's nudge above its low word, `2^(r - 2)` for the right shift `r`.
    high: i32,
    /// The one-rounding form's last shift, `r - 1`, in `1..=30`; 0 where it is not taken: it
    /// needs `r >= 2` and a multiplier of at least 2^30, as `quantize_multiplier` makes them
    /// (the form holds for a multiplier of 0 too, which takes the other path here).
    down: u32,
    shift: i32,
}

impl ChannelScale {
    /// The scale of `multiplier` and `shift` (as [`multiply_by_quantized_multiplier`] takes).
    #[inline(always)]
    pub(crate) fn new(multiplier: i32, shift: i32) -> Self {
        // A multiplier in 2^30..2^31 (0, which the form also covers, is left to the other).
        let fast = shift <= -2 && multiplier >> 30 == 1;
        // 2..=31 where `fast` (checked shifts are at least -31; `max` keeps it so anyway).
        let right = -shift.max(-31) as u32;
        let (high, down) = if fast { (1 << (right - 2), right - 1) } else { (0, 0) };
        ChannelScale { multiplier, high, down, shift }
    }

    /// `multiply_by_quantized_multiplier(acc, multiplier, shift)`.
    #[inline(always)]
    pub(crate) fn apply(&self, acc: i32) -> i32 {
        if self.down != 0 {
            self.one_rounding(acc)
        } else {
            apply_two_roundings(acc, self.multiplier, self.shift)
        }
    }

    /// [`ChannelScale::apply`] where `down != 0`: the doubling multiply's rounding and the
    /// right shift's as one. With `y = acc * m + 2^30` and `x = floor(y / 2^31)`, the
    /// rounding divide is `floor((x + c) / 2^r)`, `c = 2^(r-1)` for `x >= 0` and one less
    /// below, which equals `floor((y + c * 2^31) / 2^(31 + r))`. With `m` 0 or at least 2^30,
    /// `x` is negative only where `acc` is (at `y = 0` both `c` give 0), so `c` follows
    /// `acc`'s sign. The nudge `2^30 + c * 2^31` is, as two words, `2^(r-2)` less one for
    /// negative `acc` above `2^30` plus `acc`'s sign bit (`r >= 2`): one multiply-accumulate
    /// (`SMLAL`) of the two words, with no 64-bit constant. The sum cannot overflow
    /// (|acc * m| < 2^62), and the quotient is the high word shifted by `r - 1`.
    #[inline(always)]
    fn one_rounding(&self, acc: i32) -> i32 {
        // SAFETY: `down` is in 1..=30 on this path (`new` sets it so, and `apply` takes the
        // path only for a nonzero `down`). Said to the compiler, it drops the shift's mask.
        unsafe { core::hint::assert_unchecked(self.down < 32) };
        // The formula in Rust on every target (`emulated`): LLVM schedules it with the loop
        // around it, where the assembly form is one block it cannot.
        crate::arch::emulated::one_rounding(acc, self.multiplier, self.high, self.down)
    }
}

/// [`ChannelScale::apply`] for the scales the one-rounding form does not cover: out of line
/// (and cold), so that each inlined output stage carries only the common form's code, and by
/// value, so that the scale need not be in memory.
#[cold]
#[inline(never)]
fn apply_two_roundings(acc: i32, multiplier: i32, shift: i32) -> i32 {
    multiply_by_quantized_multiplier(acc, multiplier, shift)
}

/// The output stage of four channels, each a [`ChannelScale`], as the DSP word loops take
/// them: one test of the one-rounding form for the four, the four results saturated and
/// clamped as one word ([`clamp4`](crate::dsp::intrinsics::clamp4)).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ScaleGroup {
    scales: [ChannelScale; 4],
    /// Whether all four take the one-rounding form.
    fast: bool,
}

impl ScaleGroup {
    /// The scales of channels `c0..c0 + 4 * groups` of `quant`, four to a group, as the
    /// contents of `out`.
    pub(crate) fn fill<const N: usize>(
        quant: &PerChannel<'_>,
        c0: usize,
        groups: usize,
        out: &mut Filled<ScaleGroup, N>,
    ) {
        out.set((0..groups).map(|g| ScaleGroup::new(quant, c0 + 4 * g)));
    }

    /// The scales of channels `c..c + 4` of `quant`.
    #[inline]
    pub(crate) fn new(quant: &PerChannel<'_>, c: usize) -> ScaleGroup {
        ScaleGroup::of(core::array::from_fn(|r| {
            ChannelScale::new(quant.multiplier[c + r], quant.shift[c + r])
        }))
    }

    #[inline(always)]
    fn of(scales: [ChannelScale; 4]) -> ScaleGroup {
        ScaleGroup { scales, fast: scales.iter().all(|s| s.down != 0) }
    }

    /// [`ScaleGroup::output`] for four channels straight from their multipliers and shifts,
    /// for a loop that uses each channel's scale once (a fully connected layer): nothing is
    /// laid out in memory first, and one branch-free test covers the four.
    #[inline(always)]
    pub(crate) fn output_once(
        (multiplier, shift): (&[i32; 4], &[i32; 4]),
        acc: [i32; 4],
        zero_point: i32,
        act: [u32; 2],
    ) -> [i8; 4] {
        // Shifts in -31..=-2 and multipliers in 2^30..2^31 (`ChannelScale::new`'s test).
        let fast = (0..4)
            .fold(true, |f, r| f & ((shift[r] as u32).wrapping_add(31) <= 29) & (multiplier[r] >> 30 == 1));
        if !fast {
            return ScaleGroup::output_once_two_roundings((multiplier, shift), acc, zero_point, act);
        }
        let v = core::array::from_fn(|r| {
            // 2..=31 (the test above).
            let right = shift[r].wrapping_neg() as u32;
            let v = intrinsics::one_rounding(acc[r], multiplier[r], 1 << (right - 2), right - 1);
            v.wrapping_add(zero_point)
        });
        intrinsics::clamp4(v, act)
    }

    /// [`ScaleGroup::output`] and [`ScaleGroup::output_once`] where a channel takes the
    /// two-rounding form: out of line and cold, so that each inlined output stage carries only
    /// the one-rounding form's code.
    #[cold]
    #[inline(never)]
    fn output_once_two_roundings(
        (multiplier, shift): (&[i32; 4], &[i32; 4]),
        acc: [i32; 4],
        zero_point: i32,
        act: [u32; 2],
    ) -> [i8; 4] {
        let v = core::array::from_fn(|r| {
            multiply_by_quantized_multiplier(acc[r], multiplier[r], shift[r]).wrapping_add(zero_point)
        });
        intrinsics::clamp4(v, act)
    }

    /// TFLite's output stage of the four channels: `acc` scaled, offset by `zero_point` and
    /// clamped to `act` (as [`ActivationRange::words`]).
    #[inline(always)]
    pub(crate) fn output(&self, acc: [i32; 4], zero_point: i32, act: [u32; 2]) -> [i8; 4] {
        if !self.fast {
            let (m, shift) = (self.scales.map(|s| s.multiplier), self.scales.map(|s| s.shift));
            return ScaleGroup::output_once_two_roundings((&m, &shift), acc, zero_point, act);
        }
        let v = core::array::from_fn(|r| self.scales[r].one_rounding(acc[r]).wrapping_add(zero_point));
        intrinsics::clamp4(v, act)
    }
}

/// TFLite's `MultiplyByQuantizedMultiplierGreaterThanOne` (used by softmax): `x * 2^left_shift`
/// then the doubling high multiplication, no right shift.
#[inline]
pub fn multiply_by_quantized_multiplier_greater_than_one(x: i32, multiplier: i32, left_shift: i32) -> i32 {
    let shifted = x.wrapping_mul(1i32.wrapping_shl(left_shift.clamp(0, 31) as u32));
    saturating_rounding_doubling_high_mul(shifted, multiplier)
}

/// TFLite's `QuantizeMultiplier`: splits a real multiplier into a Q31 `multiplier` in
/// `[2^30, 2^31)` (sign kept for negative input) and a power-of-two `shift`, so that
/// `real ≈ multiplier / 2^31 * 2^shift`. Values below about 2^-31 flush to `(0, 0)`, as in
/// TFLite; so do zero, infinities and NaN (which TFLite does not define).
pub fn quantize_multiplier(real: f64) -> (i32, i32) {
    if real == 0.0 || !real.is_finite() {
        return (0, 0);
    }
    let (q, mut shift) = frexp(real);
    let mut q_fixed = round_half_away(q * (1i64 << 31) as f64);
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        return (0, 0);
    }
    // |q| < 1, so |q_fixed| <= 2^31, and +2^31 was halved above.
    (q_fixed as i32, shift)
}

/// `frexp`: `x = mantissa * 2^exponent` with `|mantissa|` in `[0.5, 1)`, for finite nonzero `x`.
fn frexp(x: f64) -> (f64, i32) {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // Subnormal: scale into the normal range by 2^54 first.
        let (m, e) = frexp(x * f64::from_bits(0x4350_0000_0000_0000));
        return (m, e - 54);
    }
    let mantissa = f64::from_bits((bits & !(0x7ff << 52)) | (1022 << 52));
    (mantissa, biased - 1022)
}

/// `std::round` for `|x| < 2^62`: nearest integer, ties away from zero (TFLite's `TfLiteRound`).
pub(crate) fn round_half_away(x: f64) -> i64 {
    let truncated = x as i64;
    let fraction = x - truncated as f64;
    if fraction >= 0.5 {
        truncated + 1
    } else if fraction <= -0.5 {
        truncated - 1
    } else {
        truncated
    }
}

/// Per-output-channel requantization (TFLite's per-channel int8 scheme): channel `c`'s
/// accumulator is scaled by `multiplier[c]` and `shift[c]` from [`quantize_multiplier`] of
/// `input_scale * filter_scale[c] / output_scale`.
#[derive(Debug, Clone, Copy)]
pub struct PerChannel<'a> {
    /// Q31 multipliers, one per output channel.
    pub multiplier: &'a [i32],
    /// Power-of-two shifts, one per output channel, each in `-31..=30`.
    pub shift: &'a [i32],
}

impl PerChannel<'_> {
    /// Checks both arrays hold `channels` entries and every shift is in range.
    pub(crate) fn check(&self, channels: usize) -> Result<(), DspError> {
        check_len("multiplier", channels, self.multiplier.len())?;
        check_len("shift", channels, self.shift.len())?;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        let outside = if crate::has_avx512f() {
            // SAFETY: the CPU has AVX-512F (and AVX2).
            unsafe { shifts_outside_512(self.shift) }
        } else if crate::has_avx2() {
            // SAFETY: the CPU has AVX2.
            unsafe { shifts_outside_256(self.shift) }
        } else {
            shifts_outside(self.shift)
        };
        #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
        let outside = shifts_outside(self.shift);
        if outside {
            return Err(DspError::Param("shift outside -31..=30"));
        }
        Ok(())
    }
}

/// Whether any shift lies outside -31..=30: whether any `shift + 31` (as unsigned: below -31
/// is large) passes 61, or-ed over the channels with one test at the end: no branch per
/// channel (layers have hundreds), and compilers make it a vector loop.
#[inline(always)]
fn shifts_outside(shift: &[i32]) -> bool {
    shift.iter().fold(0, |any, s| any | u32::from((*s as u32).wrapping_add(31) > 61)) != 0
}

/// [`shifts_outside`] compiled for AVX-512 (every call of a layer checks its shifts: the
/// 904 of an int8 autoencoder's four layers, 4.3% of its time in SSE2's four lanes, 2.8%).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx512f,avx2")]
fn shifts_outside_512(shift: &[i32]) -> bool {
    shifts_outside(shift)
}

/// [`shifts_outside`] compiled for AVX2 (the same 904 shifts: 2.9% of the autoencoder's time
/// in SSE2's four lanes on an AVX2 machine).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "avx2")]
fn shifts_outside_256(shift: &[i32]) -> bool {
    shifts_outside(shift)
}

/// The int8 output clamp of a fused activation, as TFLite's `quantized_activation_min/max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivationRange {
    /// Smallest output value, at least -128.
    pub min: i32,
    /// Largest output value, at most 127.
    pub max: i32,
}

impl ActivationRange {
    /// No activation: the whole int8 range.
    pub const INT8: ActivationRange = ActivationRange { min: -128, max: 127 };

    /// A range, checked to satisfy `-128 <= min <= max <= 127`.
    pub fn new(min: i32, max: i32) -> Result<ActivationRange, DspError> {
        let range = ActivationRange { min, max };
        range.check()?;
        Ok(range)
    }

    /// `value` clamped to the range, as int8 (a checked range lies within int8). `max` then
    /// `min`, not `clamp`: no panic path.
    #[inline(always)]
    pub(crate) fn clamp_i8(&self, value: i32) -> i8 {
        value.max(self.min).min(self.max) as i8
    }

    /// The range's minimum and maximum, each as four int8 bytes of a word, for
    /// [`clamp4`](crate::dsp::intrinsics::clamp4).
    pub(crate) fn words(&self) -> [u32; 2] {
        [self.min, self.max].map(|v| u32::from(v as u8) * 0x0101_0101)
    }

    /// `Ok` if the range lies within int8 and is not empty.
    pub(crate) fn check(&self) -> Result<(), DspError> {
        if -128 <= self.min && self.min <= self.max && self.max <= 127 {
            Ok(())
        } else {
            Err(DspError::Param("activation range not within -128..=127"))
        }
    }
}

/// Checks a zero point lies in the int8 range (TFLite's int8 tensors require it).
pub(crate) fn check_zero_point(zero_point: i32) -> Result<(), DspError> {
    if (-128..=127).contains(&zero_point) { Ok(()) } else { Err(DspError::Param("zero point outside int8")) }
}

/// The lengths a per-channel kernel's shape asks for. Each one is computed up front but its
/// `Overflow` is reported only when that argument's turn comes, so errors keep their order.
pub(crate) struct Sizes {
    /// Elements of the input.
    pub input: Result<usize, DspError>,
    /// Elements of the filter.
    pub filter: Result<usize, DspError>,
    /// Elements of the output.
    pub output: Result<usize, DspError>,
    /// Output channels: the length of the bias and of each [`PerChannel`] array.
    pub channels: usize,
}

/// The parameters of a kernel quantized per output channel, as far as [`check_per_channel`]
/// needs them.
pub(crate) trait PerChannelParams {
    /// Input zero point, output zero point and fused activation clamp.
    fn output_stage(&self) -> (i32, i32, ActivationRange);

    /// Checks the parameters only this kernel has (window, depth multiplier) and gives its sizes.
    fn sizes(&self) -> Result<Sizes, DspError>;
}

/// Checks every argument of a per-channel kernel: zero points, activation, the kernel's own
/// parameters, then the lengths of input, filter, output and bias, then `quant`. On success all
/// the kernel's indexing is in bounds.
pub(crate) fn check_per_channel(
    p: &impl PerChannelParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: &PerChannel<'_>,
    output: &[i8],
) -> Result<(), DspError> {
    let (input_zero_point, output_zero_point, activation) = p.output_stage();
    check_zero_point(input_zero_point)?;
    check_zero_point(output_zero_point)?;
    activation.check()?;
    let sizes = p.sizes()?;
    check_len("input", sizes.input?, input.len())?;
    check_len("filter", sizes.filter?, filter.len())?;
    check_len("output", sizes.output?, output.len())?;
    if let Some(bias) = bias {
        check_len("bias", sizes.channels, bias.len())?;
    }
    quant.check(sizes.channels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Shifts -31 and 30 pass; one of -32 or 31 anywhere among 130 channels (the vector
    /// loops' lanes and their tail) is refused.
    #[test]
    fn per_channel_shifts_outside_the_range_are_refused() {
        let multiplier = [1 << 30; 130];
        let mut shift = [0i32; 130];
        shift[0] = -31;
        shift[129] = 30;
        assert_eq!(PerChannel { multiplier: &multiplier, shift: &shift }.check(130), Ok(()));
        for at in [0, 7, 64, 100, 129] {
            for bad in [-32, 31, i32::MIN, i32::MAX] {
                let mut shift = [0i32; 130];
                shift[at] = bad;
                let p = PerChannel { multiplier: &multiplier, shift: &shift };
                assert_eq!(p.check(130), Err(DspError::Param("shift outside -31..=30")), "{bad} at {at}");
            }
        }
        assert!(PerChannel { multiplier: &multiplier, shift: &shift }.check(129).is_err(), "length");
    }

    #[test]
    fn quantize_multiplier_known_answers() {
        assert_eq!(quantize_multiplier(0.5), (1 << 30, 0));
        assert_eq!(quantize_multiplier(1.0), (1 << 30, 1));
        assert_eq!(quantize_multiplier(0.25), (1 << 30, -1));
        assert_eq!(quantize_multiplier(0.75), (1_610_612_736, 0));
        assert_eq!(quantize_multiplier(2.0), (1 << 30, 2));
        assert_eq!(quantize_multiplier(-0.5), (-(1 << 30), 0));
        // 1/3 = 2/3 * 2^-1; 2/3 * 2^31 = 1431655765.33
        assert_eq!(quantize_multiplier(1.0 / 3.0), (1_431_655_765, -1));
        // 0.5 + 2^-32: q * 2^31 = 2^30 + 0.5 exactly, a tie, rounded away from zero.
        assert_eq!(quantize_multiplier(0.5 + f64::from_bits(0x3df0_0000_0000_0000)), (1_073_741_825, 0));
        // 1 - 2^-40 rounds up to 2^31, which becomes 2^30 with the shift incremented.
        assert_eq!(quantize_multiplier(1.0 - f64::from_bits(0x3d70_0000_0000_0000)), (1 << 30, 1));
        // Tiny multipliers flush to zero (shift < -31), and so do zero and non-finite ones.
        assert_eq!(quantize_multiplier(f64::from_bits(0x3d70_0000_0000_0000)), (0, 0));
        assert_eq!(quantize_multiplier(0.0), (0, 0));
        assert_eq!(quantize_multiplier(f64::NAN), (0, 0));
        // 2^-31 = 0.5 * 2^-30 is still representable.
        assert_eq!(quantize_multiplier(f64::from_bits(0x3e00_0000_0000_0000)), (1 << 30, -30));
        // Subnormal input.
        assert_eq!(quantize_multiplier(f64::from_bits(1)), (0, 0));
    }

    #[test]
    fn doubling_high_mul_known_answers() {
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN), i32::MAX);
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MIN, i32::MAX), -i32::MAX);
        assert_eq!(saturating_rounding_doubling_high_mul(i32::MAX, i32::MAX), i32::MAX - 1);
        assert_eq!(saturating_rounding_doubling_high_mul(100, 1 << 30), 50);
        // Ties: 1.5 -> 2, -1.5 -> -1 (gemmlowp's nudge rounds half up).
        assert_eq!(saturating_rounding_doubling_high_mul(3, 1 << 30), 2);
        assert_eq!(saturating_rounding_doubling_high_mul(-3, 1 << 30), -1);
        assert_eq!(saturating_rounding_doubling_high_mul(-5, 1 << 30), -2);
        assert_eq!(saturating_rounding_doubling_high_mul(-7, 1 << 29), -2); // -1.75
    }

    proptest::proptest! {
        #[test]
        fn doubling_high_mul_is_gemmlowps_formula(a: i32, b: i32) {
            // gemmlowp's own steps: a sign-dependent nudge, then division truncating to zero.
            let ab = i64::from(a) * i64::from(b);
            let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
            let want = if a == i32::MIN && b == i32::MIN { i32::MAX } else { ((ab + nudge) / (1i64 << 31)) as i32 };
            proptest::prop_assert_eq!(saturating_rounding_doubling_high_mul(a, b), want);
        }
    }

    #[test]
    fn doubling_high_mul_at_ties_and_extremes() {
        // Exact halves of both signs, and products near ±2^62.
        for a in [i32::MIN, i32::MIN + 1, -3, -1, 0, 1, 3, i32::MAX - 1, i32::MAX] {
            for b in [i32::MIN + 1, -(1 << 30), -1, 1, 1 << 30, i32::MAX] {
                let ab = i64::from(a) * i64::from(b);
                let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
                assert_eq!(
                    saturating_rounding_doubling_high_mul(a, b),
                    ((ab + nudge) / (1i64 << 31)) as i32,
                    "{a} {b}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn channel_scale_is_multiply_by_quantized_multiplier(acc: i32, m: i32, shift in -31i32..=30) {
            proptest::prop_assert_eq!(
                ChannelScale::new(m, shift).apply(acc),
                multiply_by_quantized_multiplier(acc, m, shift)
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn channel_scale_one_rounding_form(acc: i32, m in (1i32 << 30)..=i32::MAX, shift in -31i32..=-1) {
            let scale = ChannelScale::new(m, shift);
            proptest::prop_assert_eq!(scale.down != 0, shift <= -2);
            proptest::prop_assert_eq!(scale.apply(acc), multiply_by_quantized_multiplier(acc, m, shift));
        }
    }

    proptest::proptest! {
        #[test]
        fn one_rounding_instructions_are_the_output_stage(
            acc: i32, m in (1i32 << 30)..=i32::MAX, right in 2u32..=31,
        ) {
            let got = intrinsics::one_rounding(acc, m, 1 << (right - 2), right - 1);
            proptest::prop_assert_eq!(got, multiply_by_quantized_multiplier(acc, m, -(right as i32)));
        }

        #[test]
        fn scale_group_is_four_output_stages(
            acc: [i32; 4], m: [i32; 4], shift in proptest::array::uniform4(-31i32..=30), zp in -128i32..=127,
            lo in -128i32..=127, hi in -128i32..=127,
        ) {
            let act = ActivationRange::new(lo.min(hi), lo.max(hi)).unwrap();
            let want: [i8; 4] = core::array::from_fn(|r| {
                let v = multiply_by_quantized_multiplier(acc[r], m[r], shift[r]).wrapping_add(zp);
                act.clamp_i8(v.clamp(-128, 127))
            });
            let quant = PerChannel { multiplier: &m, shift: &shift };
            proptest::prop_assert_eq!(ScaleGroup::new(&quant, 0).output(acc, zp, act.words()), want);
            proptest::prop_assert_eq!(ScaleGroup::output_once((&m, &shift), acc, zp, act.words()), want);
        }
    }

    #[test]
    fn channel_scale_at_the_extremes() {
        for shift in -31..=30 {
            for m in [0, 1, 1 << 30, (1 << 30) + 1, i32::MAX, i32::MIN, -5] {
                for acc in [i32::MIN, i32::MIN + 1, -1, 0, 1, i32::MAX] {
                    let want = multiply_by_quantized_multiplier(acc, m, shift);
                    assert_eq!(ChannelScale::new(m, shift).apply(acc), want, "{acc} {m} {shift}");
                }
            }
        }
    }

    #[test]
    fn rounding_divide_known_answers() {
        assert_eq!(rounding_divide_by_pot(5, 1), 3); // 2.5 -> 3
        assert_eq!(rounding_divide_by_pot(-5, 1), -3); // -2.5 -> -3
        assert_eq!(rounding_divide_by_pot(3, 1), 2);
        assert_eq!(rounding_divide_by_pot(-3, 1), -2);
        assert_eq!(rounding_divide_by_pot(-7, 2), -2); // -1.75
        assert_eq!(rounding_divide_by_pot(6, 2), 2); // 1.5 -> 2
        assert_eq!(rounding_divide_by_pot(5, 2), 1); // 1.25
        assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
        assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
        assert_eq!(rounding_divide_by_pot(7, 0), 7);
    }

    #[test]
    fn multiply_by_quantized_multiplier_known_answers() {
        assert_eq!(multiply_by_quantized_multiplier(100, 1 << 30, 0), 50);
        assert_eq!(multiply_by_quantized_multiplier(100, 1 << 30, 3), 400);
        assert_eq!(multiply_by_quantized_multiplier(1000, 1 << 30, -2), 125);
        // Double rounding: 1001/2 = 500.5 -> 501, then 501/4 = 125.25 -> 125.
        assert_eq!(multiply_by_quantized_multiplier(1001, 1 << 30, -2), 125);
        // 1003/2 = 501.5 -> 502, 502/4 = 125.5 -> 126 (single rounding would give 125).
        assert_eq!(multiply_by_quantized_multiplier(1003, 1 << 30, -2), 126);
        assert_eq!(multiply_by_quantized_multiplier(-1003, 1 << 30, -2), -125);
        assert_eq!(multiply_by_quantized_multiplier(i32::MIN, i32::MIN, 0), i32::MAX);
        assert_eq!(multiply_by_quantized_multiplier(i32::MIN, i32::MIN, -31), 1);
        assert_eq!(multiply_by_quantized_multiplier(12345, 0, 5), 0);
        // 0.75 * 2^-3 * 800 = 75
        let (m, s) = quantize_multiplier(0.75 / 8.0);
        assert_eq!(multiply_by_quantized_multiplier(800, m, s), 75);
    }

    #[test]
    fn activation_range_is_checked() {
        assert!(ActivationRange::new(-128, 127).is_ok());
        assert!(ActivationRange::new(0, 0).is_ok());
        assert!(ActivationRange::new(-129, 0).is_err());
        assert!(ActivationRange::new(1, 0).is_err());
        assert!(ActivationRange::new(0, 128).is_err());
        let bad = PerChannel { multiplier: &[1], shift: &[31] };
        assert_eq!(bad.check(1), Err(DspError::Param("shift outside -31..=30")));
        assert!(bad.check(2).is_err());
        // Each position of nine (two groups of four and one more), each side of the range.
        for at in 0..9 {
            for (s, ok) in
                [(-31, true), (30, true), (-32, false), (31, false), (i32::MIN, false), (i32::MAX, false)]
            {
                let mut shift = [0; 9];
                shift[at] = s;
                let q = PerChannel { multiplier: &[1; 9], shift: &shift };
                assert_eq!(q.check(9).is_ok(), ok, "shift {s} at {at}");
            }
        }
    }

    #[test]
    fn per_channel_checks_keep_their_order() {
        use crate::fully_connected::FullyConnectedParams;
        let p = FullyConnectedParams {
            batches: 1,
            input_depth: 2,
            output_depth: usize::MAX,
            input_zero_point: 0,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let q = PerChannel { multiplier: &[], shift: &[] };
        // The filter's size overflows, but a wrong input length comes first.
        let short = Err(DspError::Length { what: "input", expected: 2, actual: 1 });
        assert_eq!(check_per_channel(&p, &[0], &[], None, &q, &[]), short);
        assert_eq!(check_per_channel(&p, &[0; 2], &[], None, &q, &[]), Err(DspError::Overflow));
        let bad = FullyConnectedParams {
            output_zero_point: 128,
            activation: ActivationRange { min: 1, max: 0 },
            ..p
        };
        assert_eq!(
            check_per_channel(&bad, &[0], &[], None, &q, &[]),
            Err(DspError::Param("zero point outside int8"))
        );
    }

    proptest! {
        #[test]
        fn requantization_is_within_one_of_exact(x in -(1i32 << 24)..(1 << 24), real in 1e-6f64..0.99) {
            let (m, s) = quantize_multiplier(real);
            let exact = f64::from(x) * f64::from(m) / (1u64 << 31) as f64 * 2f64.powi(s);
            let got = f64::from(multiply_by_quantized_multiplier(x, m, s));
            prop_assert!((got - exact).abs() <= 1.0, "x={x} real={real} got={got} exact={exact}");
        }

        #[test]
        fn quantized_multiplier_is_close(real in 1e-9f64..1e3) {
            let (m, s) = quantize_multiplier(real);
            prop_assert!((1 << 30..=i32::MAX).contains(&m));
            let back = f64::from(m) / (1u64 << 31) as f64 * 2f64.powi(s);
            prop_assert!((back - real).abs() <= real * 1e-9);
        }
    }
}
