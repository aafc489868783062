//! gemmlowp's fixed-point routines (`fixedpoint.h`) that TFLite's int8 softmax, logistic and
//! tanh use, on raw `i32` values: a `FixedPoint<int32, I>` ("`I` integer bits") is a raw
//! integer holding `value * 2^(31 - I)`. Ported operation by operation so that what is built on
//! them is bit-exact with TFLite: the softmax and log softmax kernels here, and hostrt-import's
//! LOGISTIC and TANH lookup tables, which call [`logistic`] and [`tanh`]. Also TFLite's own
//! `log_x_for_x_greater_than_or_equal_to_1` (its `common.h`, built on the same primitives) for
//! the log softmax. gemmlowp's plain additions and subtractions wrap (they never overflow on
//! the values these routines produce).

use crate::quant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul as mul};

/// A raw fixed-point integer type of gemmlowp's: `i32`, or `i16` (TFLite's integer LSTM
/// runs its gate activations on `FixedPoint<int16, I>`). Each operation has its width's
/// semantics: additions wrap, multiplications are the width's saturating rounding doubling
/// high multiply, and constants written for 32 bits are rounded to the width
/// (`RescaleConstantInitializer`).
pub trait Raw: Copy + PartialEq + PartialOrd {
    /// Total bits.
    const BITS: i32;
    const ZERO: Self;
    const MAX: Self;
    const MIN: Self;
    /// A 32-bit raw constant in this width.
    fn constant(raw32: i32) -> Self;
    /// `1 << k` (`k < BITS - 1`).
    fn bit(k: i32) -> Self;
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn neg(self) -> Self;
    fn and(self, b: Self) -> Self;
    /// `SaturatingRoundingDoublingHighMul`.
    fn mul(self, b: Self) -> Self;
    /// `RoundingDivideByPOT` (`exponent` in `0..BITS`).
    fn divide_by_pot(self, exponent: i32) -> Self;
    /// A wrapping left shift.
    fn shl(self, exponent: i32) -> Self;
    /// `RoundingHalfSum`.
    fn half_sum(self, b: Self) -> Self;
    /// `AddSaturatingIf16Bit`: saturating for int16, wrapping for int32.
    fn add_saturating_if_16(self, b: Self) -> Self;
}

impl Raw for i32 {
    const BITS: i32 = 32;
    const ZERO: i32 = 0;
    const MAX: i32 = i32::MAX;
    const MIN: i32 = i32::MIN;
    fn constant(raw32: i32) -> i32 {
        raw32
    }
    fn bit(k: i32) -> i32 {
        1 << k
    }
    fn add(self, b: i32) -> i32 {
        self.wrapping_add(b)
    }
    fn sub(self, b: i32) -> i32 {
        self.wrapping_sub(b)
    }
    fn neg(self) -> i32 {
        self.wrapping_neg()
    }
    fn and(self, b: i32) -> i32 {
        self & b
    }
    fn mul(self, b: i32) -> i32 {
        mul(self, b)
    }
    fn divide_by_pot(self, exponent: i32) -> i32 {
        rounding_divide_by_pot(self, exponent)
    }
    fn shl(self, exponent: i32) -> i32 {
        self.wrapping_shl(exponent as u32)
    }
    fn half_sum(self, b: i32) -> i32 {
        rounding_half_sum(self, b)
    }
    fn add_saturating_if_16(self, b: i32) -> i32 {
        self.wrapping_add(b)
    }
}

impl Raw for i16 {
    const BITS: i32 = 16;
    const ZERO: i16 = 0;
    const MAX: i16 = i16::MAX;
    const MIN: i16 = i16::MIN;
    fn constant(raw32: i32) -> i16 {
        rounding_divide_by_pot(raw32, 16) as i16
    }
    fn bit(k: i32) -> i16 {
        1 << k
    }
    fn add(self, b: i16) -> i16 {
        self.wrapping_add(b)
    }
    fn sub(self, b: i16) -> i16 {
        self.wrapping_sub(b)
    }
    fn neg(self) -> i16 {
        self.wrapping_neg()
    }
    fn and(self, b: i16) -> i16 {
        self & b
    }
    fn mul(self, b: i16) -> i16 {
        if self == i16::MIN && b == i16::MIN {
            return i16::MAX;
        }
        // (ab + nudge) / 2^15 truncated, as floor((ab + 2^14) / 2^15) (see the int32 one);
        // within int16 but for MIN * MIN.
        ((i32::from(self) * i32::from(b) + (1 << 14)) >> 15) as i16
    }
    fn divide_by_pot(self, exponent: i32) -> i16 {
        // The int32 rounding of an int16 value is the int16 one.
        rounding_divide_by_pot(i32::from(self), exponent.clamp(0, 15)) as i16
    }
    fn shl(self, exponent: i32) -> i16 {
        self.wrapping_shl(exponent as u32)
    }
    fn half_sum(self, b: i16) -> i16 {
        let sum = i32::from(self) + i32::from(b);
        ((sum + if sum >= 0 { 1 } else { -1 }) / 2) as i16
    }
    fn add_saturating_if_16(self, b: i16) -> i16 {
        self.saturating_add(b)
    }
}

/// The raw value of 1 with `integer_bits` integer bits (`FixedPoint<R, I>::One()`: saturated
/// to the maximum with none).
fn one<R: Raw>(integer_bits: i32) -> R {
    if integer_bits == 0 { R::MAX } else { R::bit(R::BITS - 1 - integer_bits) }
}

/// `SaturatingRoundingMultiplyByPOT<exponent>` on any width: a saturating left shift for
/// `exponent > 0`, a rounding right shift for `exponent < 0`.
fn multiply_by_pot_of<R: Raw>(x: R, exponent: i32) -> R {
    if exponent > 0 {
        let threshold = R::bit(R::BITS - 1 - exponent).sub(R::bit(0));
        if x > threshold {
            R::MAX
        } else if x < threshold.neg() {
            R::MIN
        } else {
            x.shl(exponent)
        }
    } else {
        x.divide_by_pot(-exponent)
    }
}

/// `SaturatingRoundingMultiplyByPOT<exponent>`: a saturating left shift for `exponent > 0`,
/// a rounding right shift for `exponent < 0`.
pub(crate) fn multiply_by_pot(x: i32, exponent: i32) -> i32 {
    multiply_by_pot_of(x, exponent)
}

/// `Rescale<dst>` of a value with `src` integer bits.
pub(crate) fn rescale(x: i32, src_integer_bits: i32, dst_integer_bits: i32) -> i32 {
    multiply_by_pot(x, src_integer_bits - dst_integer_bits)
}

/// `exp_on_interval_between_negative_one_quarter_and_0_excl`: `exp(a)` for `a` in `[-1/4, 0)`,
/// a fourth-order Taylor expansion around -1/8; input and output with 0 integer bits.
fn exp_on_interval_between_negative_one_quarter_and_0_excl<R: Raw>(a: R) -> R {
    let constant_term = R::constant(1_895_147_668); // exp(-1/8)
    let one_third = R::constant(715_827_883);
    let x = a.add(R::bit(R::BITS - 4)); // + 1/8
    let x2 = x.mul(x);
    let x3 = x2.mul(x);
    let x4 = x2.mul(x2);
    let x4_over_4 = multiply_by_pot_of(x4, -2);
    let poly = multiply_by_pot_of(x4_over_4.add(x3).mul(one_third).add(x2), -1);
    constant_term.add_saturating_if_16(constant_term.mul(x.add(poly)))
}

/// `exp_on_negative_values`: `exp(a)` for `a <= 0` with `INTEGER_BITS` integer bits (`0..=29`;
/// softmax uses 5); the result has 0 integer bits.
pub(crate) fn exp_on_negative_values<const INTEGER_BITS: i32>(a: i32) -> i32 {
    const { assert!(0 <= INTEGER_BITS && INTEGER_BITS <= 29, "exp_on_negative_values: 0..=29 integer bits") };
    exp_on_negative_values_with(a, INTEGER_BITS)
}

/// [`exp_on_negative_values`] on any width, with the integer bits (`0..=BITS - 3`) as an
/// argument (for [`tanh`], whose exp has one integer bit more than its input: no const
/// generic arithmetic on stable). `exp` of `a` modulo 1/4 (minus 1/4), times `exp(-2^k)` for
/// each set bit `k` of the rest (the barrel shifter); 1 for `a == 0`.
#[inline]
fn exp_on_negative_values_with<R: Raw>(a: R, integer_bits: i32) -> R {
    let fractional_bits = R::BITS - 1 - integer_bits;
    let one_quarter = R::bit(fractional_bits - 2);
    let mask = one_quarter.sub(R::bit(0));
    let a_mod_quarter_minus_one_quarter = a.and(mask).sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(multiply_by_pot_of(
        a_mod_quarter_minus_one_quarter,
        integer_bits,
    ));
    let remainder = a_mod_quarter_minus_one_quarter.sub(a);
    // exp(-2^exponent) in Q0.31, for exponent = -2..=4 (the barrel shifter).
    const MULTIPLIERS: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (exponent, multiplier) in MULTIPLIERS {
        if integer_bits > exponent {
            let shift = fractional_bits + exponent;
            if remainder.and(R::bit(shift)) != R::ZERO {
                result = result.mul(R::constant(multiplier));
            }
        }
    }
    if integer_bits > 5 {
        // -32.0.
        let clamp = R::constant(-(1i32 << (36 - integer_bits)));
        if a < clamp {
            result = R::ZERO;
        }
    }
    if a == R::ZERO { one(0) } else { result }
}

/// Three Newton-Raphson steps for `1 / half_denominator` (the core of gemmlowp's two divisions
/// below), starting from `48/17 - 32/17 * half_denominator`: input with 0 integer bits, result
/// with 2.
fn newton_raphson_reciprocal<R: Raw>(half_denominator: R) -> R {
    let c48_over_17 = R::constant(1_515_870_810); // 2 integer bits
    let neg_32_over_17 = R::constant(-1_010_580_540);
    let one_q2: R = one(2);
    let mut x = c48_over_17.add(half_denominator.mul(neg_32_over_17));
    for _ in 0..3 {
        let half_denominator_times_x = half_denominator.mul(x);
        let one_minus = one_q2.sub(half_denominator_times_x);
        x = x.add(multiply_by_pot_of(x.mul(one_minus), 2));
    }
    x
}

/// `one_over_one_plus_x_for_x_in_0_1` on any width.
fn one_over_one_plus_x_of<R: Raw>(a: R) -> R {
    let x = newton_raphson_reciprocal(a.half_sum(one(0)));
    // ExactMulByPot<-1> turns 2 integer bits into 1 without touching the raw value.
    multiply_by_pot_of(x, 1)
}

/// `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a` in `[0, 1)`, Newton-Raphson
/// division; in and out with 0 integer bits.
pub(crate) fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    one_over_one_plus_x_of(a)
}

/// `one_minus_x_over_one_plus_x_for_x_in_0_1`: `(1 - a) / (1 + a)` for `a` in `[0, 1)`,
/// Newton-Raphson division; in and out with 0 integer bits.
fn one_minus_x_over_one_plus_x_for_x_in_0_1<R: Raw>(a: R) -> R {
    let x = newton_raphson_reciprocal(a.half_sum(one(0)));
    multiply_by_pot_of(x.sub(one(2)), 2)
}

/// gemmlowp's `logistic` on any width, `integer_bits` in `0..=BITS - 3`.
pub fn logistic_of<R: Raw>(a: R, integer_bits: i32) -> R {
    let abs = if a > R::ZERO { a } else { a.neg() };
    let positive = one_over_one_plus_x_of(exp_on_negative_values_with(abs.neg(), integer_bits));
    if a == R::ZERO {
        R::constant(1 << 30)
    } else if a > R::ZERO {
        positive
    } else {
        one::<R>(0).sub(positive)
    }
}

/// gemmlowp's `tanh` on any width, `integer_bits` in `0..=BITS - 4`.
pub fn tanh_of<R: Raw>(a: R, integer_bits: i32) -> R {
    let negative = if a < R::ZERO { a } else { a.neg() };
    // neg_tanh_on_negative_values: ExactMulByPot<1> doubles the value by adding an integer bit
    // to the same raw integer.
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values_with(negative, integer_bits + 1));
    if a == R::ZERO {
        R::ZERO
    } else if a < R::ZERO {
        t.neg()
    } else {
        t
    }
}

/// gemmlowp's `logistic`: `1 / (1 + exp(-a))` for the raw `a` with `INTEGER_BITS` integer bits
/// (`0..=29`; TFLite's int8 LOGISTIC uses 4), the result with 0 integer bits. Computed on `|a|`
/// and reflected (`1 - r`) for negative `a`; exactly 1/2 (`1 << 30`) at 0.
///
/// ```
/// use hostrt_dsp::fixedpoint::logistic;
///
/// // logistic(1.0), 1.0 in Q4.27: about 0.731 in Q0.31.
/// let y = logistic::<4>(1 << 27);
/// assert!((f64::from(y) / 2f64.powi(31) - 0.731_058_6).abs() < 1e-6);
/// ```
pub fn logistic<const INTEGER_BITS: i32>(a: i32) -> i32 {
    const { assert!(0 <= INTEGER_BITS && INTEGER_BITS <= 29, "logistic: 0..=29 integer bits") };
    logistic_of(a, INTEGER_BITS)
}

/// gemmlowp's `tanh`: `(1 - exp(-2|a|)) / (1 + exp(-2|a|))` with `a`'s sign, for the raw `a`
/// with `INTEGER_BITS` integer bits (`0..=28`; TFLite's int8 TANH uses 4), the result with 0
/// integer bits; 0 at 0.
///
/// ```
/// use hostrt_dsp::fixedpoint::tanh;
///
/// // tanh(-0.5), -0.5 in Q4.27: about -0.462 in Q0.31.
/// let y = tanh::<4>(-(1 << 26));
/// assert!((f64::from(y) / 2f64.powi(31) + 0.462_117_2).abs() < 1e-6);
/// ```
pub fn tanh<const INTEGER_BITS: i32>(a: i32) -> i32 {
    const { assert!(0 <= INTEGER_BITS && INTEGER_BITS <= 28, "tanh: 0..=28 integer bits") };
    tanh_of(a, INTEGER_BITS)
}

/// TFLite's `GetInvSqrtQuantizedMultiplierExp` (`common.h`) with `reverse_shift` -1, as its
/// integer layer norm calls it: `1 / sqrt(input)` as a Q0.31 multiplier and a shift for
/// [`crate::multiply_by_quantized_multiplier`] (`<= 0`), by five Newton-Raphson steps in Q3.28
/// from 1. Inputs up to 1 (which have no inverse square root) give `(i32::MAX, 0)`.
pub fn inv_sqrt_multiplier(input: i32) -> (i32, i32) {
    if input <= 1 {
        return (i32::MAX, 0);
    }
    let mut input = input;
    let mut shift = 11;
    while input >= 1 << 29 {
        input /= 4;
        shift += 1;
    }
    // Bring the input into [2^27, 2^29) by pairs of bits.
    let pairs = ((input as u32).leading_zeros() as i32 - 1) / 2 - 1;
    shift -= pairs;
    input <<= 2 * pairs;
    let half_input = multiply_by_pot(input >> 1, -1);
    let half_three = (1 << 28) + (1 << 27);
    let mut x = 1i32 << 28;
    for _ in 0..5 {
        // Q3 x Q3 x Q3 is Q9, back to Q3; each product below is Q6.
        let x3 = rescale(mul(mul(x, x), x), 9, 3);
        x = rescale(mul(half_three, x).wrapping_sub(mul(half_input, x3)), 6, 3);
    }
    const HALF_SQRT_2: i32 = 1_518_500_250;
    let mut x = mul(x, HALF_SQRT_2);
    if shift < 0 {
        x = x.wrapping_shl((-shift) as u32);
        shift = 0;
    }
    (x, -shift)
}

/// `min_log_x_output_bits`: the integer bits the log of a value with `input_integer_bits`
/// integer bits needs.
const fn min_log_x_output_bits(input_integer_bits: i32) -> i32 {
    match input_integer_bits {
        91.. => 7,
        45..=90 => 6,
        22..=44 => 5,
        11..=21 => 4,
        5..=10 => 3,
        2..=4 => 2,
        _ => 1,
    }
}

/// TFLite's `log_x_for_x_greater_than_or_equal_to_1` (`common.h`, not gemmlowp's): `ln(x)` of
/// the raw `x` (positive) with `INPUT_INTEGER_BITS` integer bits, the result with
/// `OUTPUT_INTEGER_BITS` (at least what `min_log_x_output_bits` asks; log softmax uses 12 in, 5
/// out). Splits `x` into a power of two and a mantissa `r` in `[sqrt(1/2), sqrt(2))` two ways and
/// keeps the smaller mantissa, then a rational approximation of `ln(r)` around `sqrt(sqrt(1/2))`.
pub(crate) fn log_x_for_x_greater_than_or_equal_to_1<
    const OUTPUT_INTEGER_BITS: i32,
    const INPUT_INTEGER_BITS: i32,
>(
    x: i32,
) -> i32 {
    const {
        assert!(
            OUTPUT_INTEGER_BITS >= min_log_x_output_bits(INPUT_INTEGER_BITS) && OUTPUT_INTEGER_BITS <= 29,
            "log_x_for_x_greater_than_or_equal_to_1: too few output integer bits"
        )
    };
    // Accumulated with one integer bit more than the output (z_pow_2_adj * log_2 may saturate).
    let accum_integer_bits = OUTPUT_INTEGER_BITS + 1;
    // Q0.31 constants.
    const LOG_2: i32 = 1_488_522_236;
    const SQRT_SQRT_HALF: i32 = 1_805_811_301;
    const SQRT_HALF: i32 = 1_518_500_250;
    const ONE_QUARTER: i32 = 536_870_912;
    const ALPHA_N: i32 = 117_049_297; // 11/240 * sqrt(sqrt(2))
    const ALPHA_D: i32 = 127_690_142; // 1/20 * sqrt(sqrt(2))
    const ALPHA_I: i32 = 1_057_819_769; // 2 / sqrt(sqrt(2)) - sqrt(sqrt(2))
    const ALPHA_F: i32 = 638_450_708; // 1/4 * sqrt(sqrt(2))
    let shifted_quarter = rescale(ONE_QUARTER, 0, accum_integer_bits);

    // x reinterpreted as Q0.31: the shifts are worked out here rather than by Rescale.
    // (SaturatingRoundingMultiplyByPOTParam is `multiply_by_pot` for exponents >= 0.)
    let z_a = x;
    let z_a_headroom_plus_1 = (z_a as u32).leading_zeros() as i32;
    let r_a_tmp = multiply_by_pot(z_a, z_a_headroom_plus_1 - 1);
    let r_a_raw = multiply_by_pot(mul(r_a_tmp, SQRT_HALF), 1);
    // z_pow_2_adj = max(z_pow_2_a - 0.75, z_pow_2_b - 0.25)
    let z_a_pow_2_adj = multiply_by_pot(INPUT_INTEGER_BITS - z_a_headroom_plus_1, 31 - accum_integer_bits)
        .saturating_add(shifted_quarter);

    // z_b is z_a premultiplied by sqrt(1/2).
    let z_b = mul(z_a, SQRT_HALF);
    let z_b_headroom = (z_b as u32).leading_zeros() as i32 - 1;
    let r_b_raw = multiply_by_pot(z_a, z_b_headroom);
    let z_b_pow_2_adj = multiply_by_pot(INPUT_INTEGER_BITS - z_b_headroom, 31 - accum_integer_bits)
        .saturating_sub(shifted_quarter);

    let r = r_a_raw.min(r_b_raw);
    let z_pow_2_adj = z_a_pow_2_adj.max(z_b_pow_2_adj);

    let p = rounding_half_sum(r, SQRT_SQRT_HALF);
    let q = r.wrapping_sub(SQRT_SQRT_HALF);
    let q = q.wrapping_add(q);

    let common_sq = mul(q, q);
    let num = mul(q, r).wrapping_add(mul(mul(q, common_sq), ALPHA_N));
    let denom_minus_one_0 =
        mul(p, ALPHA_I.wrapping_add(q).wrapping_add(mul(ALPHA_D, common_sq))).wrapping_add(mul(ALPHA_F, q));
    let recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0);

    let num_scaled = rescale(num, 0, accum_integer_bits);
    rescale(
        mul(z_pow_2_adj, LOG_2).wrapping_add(mul(num_scaled, recip_denom)),
        accum_integer_bits,
        OUTPUT_INTEGER_BITS,
    )
}

/// gemmlowp's `RoundingHalfSum` on int32: `(a + b) / 2`, rounded half away from zero.
fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = i64::from(a) + i64::from(b);
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// TFLite's `GetReciprocal`: `1 / x` for `x` with `x_integer_digits` integer bits, as a Q0.31
/// scale and the number of bits `x` has above 1.0.
pub(crate) fn get_reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros() as i32;
    let num_bits_over_unit = x_integer_digits - headroom_plus_one;
    let shifted_sum_minus_one =
        ((x as u32).wrapping_shl(headroom_plus_one as u32)).wrapping_sub(1u32 << 31) as i32;
    (one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_f(x: i32, integer_bits: i32) -> f64 {
        f64::from(x) / f64::from(1u32 << (31 - integer_bits))
    }

    #[test]
    fn exp_matches_float() {
        for raw in (-(31i32 << 26)..=0).step_by(1 << 18) {
            let got = to_f(exp_on_negative_values::<5>(raw), 0);
            let want = to_f(raw, 5).exp();
            assert!((got - want).abs() < 1e-6, "raw {raw}: {got} vs {want}");
        }
        assert_eq!(exp_on_negative_values::<5>(0), i32::MAX);
    }

    #[test]
    fn logistic_and_tanh_match_float() {
        // Q4.27 inputs over the whole range -16..16, as TFLite's int8 LOGISTIC and TANH.
        for raw in (i32::MIN..=i32::MAX - (1 << 20)).step_by(1 << 20) {
            let x = to_f(raw, 4);
            let got = to_f(logistic::<4>(raw), 0);
            let want = 1.0 / (1.0 + (-x).exp());
            assert!((got - want).abs() < 1e-6, "logistic raw {raw}: {got} vs {want}");
            let got = to_f(tanh::<4>(raw), 0);
            let want = x.tanh();
            assert!((got - want).abs() < 1e-6, "tanh raw {raw}: {got} vs {want}");
        }
        assert_eq!(logistic::<4>(0), 1 << 30);
        assert_eq!(tanh::<4>(0), 0);
        // Other integer bits: logistic(2.5) and tanh(-0.75) with 2 and with 7 integer bits.
        for (got, want) in [
            (to_f(logistic::<2>(5 << 28), 0), 1.0 / (1.0 + (-2.5f64).exp())),
            (to_f(logistic::<7>(5 << 23), 0), 1.0 / (1.0 + (-2.5f64).exp())),
            (to_f(tanh::<2>(-3 << 27), 0), (-0.75f64).tanh()),
            (to_f(tanh::<7>(-3 << 22), 0), (-0.75f64).tanh()),
        ] {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
    }

    #[test]
    fn reciprocal_matches_float() {
        for x in [0.3f64, 0.5, 0.99, 0.0] {
            let raw = (x * 2147483648.0) as i32;
            let got = to_f(one_over_one_plus_x_for_x_in_0_1(raw), 0);
            assert!((got - 1.0 / (1.0 + x)).abs() < 1e-6, "{x}: {got}");
        }
        // 3.0 with 12 integer bits is 1.5 * 2^1: scale 1/1.5, one bit over unit.
        let (scale, bits) = get_reciprocal(3 << 19, 12);
        assert_eq!(bits, 1);
        assert!((to_f(scale, 0) / 2.0 - 1.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn log_matches_float() {
        // Q12.19 inputs from 1 to 4095 (the log softmax's sum of exponentials), Q5.26 output.
        for raw in ((1 << 19)..i32::MAX - (1 << 16)).step_by(1 << 16) {
            let got = to_f(log_x_for_x_greater_than_or_equal_to_1::<5, 12>(raw), 5);
            let want = to_f(raw, 12).ln();
            assert!((got - want).abs() < 1e-6, "raw {raw}: {got} vs {want}");
        }
        assert_eq!(log_x_for_x_greater_than_or_equal_to_1::<5, 12>(1 << 19), 0);
        // Other integer bits: ln(2.5) with 2 bits in and 3 out.
        let got = to_f(log_x_for_x_greater_than_or_equal_to_1::<3, 2>(5 << 28), 3);
        assert!((got - 2.5f64.ln()).abs() < 1e-6, "{got}");
    }

    #[test]
    fn multiply_by_pot_saturates() {
        assert_eq!(multiply_by_pot(1 << 30, 1), i32::MAX);
        assert_eq!(multiply_by_pot(-(1 << 30), 1), i32::MIN);
        assert_eq!(multiply_by_pot(3, 2), 12);
        assert_eq!(multiply_by_pot(6, -2), 2);
    }

    /// FNV-1a over the 16-bit outputs.
    fn fingerprint(outputs: impl Iterator<Item = i16>) -> u64 {
        outputs.fold(0xcbf2_9ce4_8422_2325, |h, v| (h ^ u64::from(v as u16)).wrapping_mul(0x100_0000_01b3))
    }

    #[test]
    fn int16_logistic_and_tanh_are_gemmlowps() {
        // The fingerprints of gemmlowp's own int16 `logistic` (3 integer bits, TFLite's integer
        // LSTM gates) and `tanh` (0 to 6 integer bits) over every input, from its
        // `fixedpoint.h` compiled outside this repository.
        let all = || i16::MIN..=i16::MAX;
        assert_eq!(fingerprint(all().map(|x| logistic_of(x, 3))), 0xcc77_ab66_29a9_14a1);
        let tanh_fingerprints = [
            0xd64e_676a_c4e5_3441,
            0xa033_4181_05d0_e549,
            0x9332_2a15_44ef_bad5,
            0x97e7_5728_c8c7_e89c,
            0x4c01_5a11_7c7c_d9aa,
            0x2dfe_481d_ed76_3b06,
            0x76de_8d3a_2908_8e4c,
        ];
        for (bits, want) in tanh_fingerprints.into_iter().enumerate() {
            assert_eq!(fingerprint(all().map(|x| tanh_of(x, bits as i32))), want, "{bits} integer bits");
        }
        // And they follow the functions they stand for.
        for x in all().step_by(13) {
            let (q3, q15) = (f64::from(x) / 4096.0, |y: i16| f64::from(y) / 32768.0);
            let e = (q15(logistic_of(x, 3)) - 1.0 / (1.0 + (-q3).exp())).abs();
            assert!(e < 5e-4, "{x} {e}");
            let e = (q15(tanh_of(x, 3)) - q3.tanh()).abs();
            assert!(e < 5e-4, "{x} {e}");
        }
    }

    #[test]
    fn inverse_square_roots_are_tflites() {
        // (input, multiplier, shift) from TFLite's `GetInvSqrtQuantizedMultiplierExp` over
        // gemmlowp, compiled outside this repository.
        let cases = [
            (0, 2147483647, 0),
            (1, 2147483647, 0),
            (2, 1518498372, 0),
            (100, 214748363, 0),
            (4096, 268435457, -3),
            (31628, 193203057, -4),
            (1922072, 198269087, -7),
            (890483354, 294765670, -12),
            (2146427695, 189859223, -12),
        ];
        for (input, multiplier, shift) in cases {
            assert_eq!(inv_sqrt_multiplier(input), (multiplier, shift), "{input}");
        }
        for v in [7, 1000, 123_456, 1 << 28, i32::MAX] {
            let (m, s) = inv_sqrt_multiplier(v);
            let got = f64::from(m) / 2f64.powi(31) * 2f64.powi(s);
            assert!((got * f64::from(v).sqrt() - 1.0).abs() < 1e-6, "{v}: {got}");
        }
    }
}
