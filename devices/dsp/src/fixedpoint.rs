//! gemmlowp's fixed-point routines (`fixedpoint.h`) that TFLite's int8 softmax, logistic and
//! tanh use, on raw `i32` values: a `FixedPoint<int32, I>` ("`I` integer bits") is a raw
//! integer holding `value * 2^(31 - I)`. Ported operation by operation so that what is built on
//! them is bit-exact with TFLite: the softmax and log softmax kernels here, and hostrt-import's
//! LOGISTIC and TANH lookup tables, which call [`logistic`] and [`tanh`]. Also TFLite's own
//! `log_x_for_x_greater_than_or_equal_to_1` (its `common.h`, built on the same primitives) for
//! the log softmax. gemmlowp's plain additions and subtractions wrap (they never overflow on
//! the values these routines produce).

use crate::quant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul as mul};

/// The raw value of 1 with no integer bits (`FixedPoint<int32, 0>::One()`, saturated to
/// `i32::MAX`).
const ONE_Q0: i32 = i32::MAX;

/// `SaturatingRoundingMultiplyByPOT<exponent>`: a saturating left shift for `exponent > 0`,
/// a rounding right shift for `exponent < 0`.
pub(crate) fn multiply_by_pot(x: i32, exponent: i32) -> i32 {
    if exponent > 0 {
        let threshold = (1i32 << (31 - exponent)) - 1;
        if x > threshold {
            i32::MAX
        } else if x < -threshold {
            i32::MIN
        } else {
            x.wrapping_shl(exponent as u32)
        }
    } else {
        rounding_divide_by_pot(x, -exponent)
    }
}

/// `Rescale<dst>` of a value with `src` integer bits.
pub(crate) fn rescale(x: i32, src_integer_bits: i32, dst_integer_bits: i32) -> i32 {
    multiply_by_pot(x, src_integer_bits - dst_integer_bits)
}

/// `exp_on_interval_between_negative_one_quarter_and_0_excl`: `exp(a)` for `a` in `[-1/4, 0)`,
/// a fourth-order Taylor expansion around -1/8; input and output with 0 integer bits.
fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const CONSTANT_TERM: i32 = 1_895_147_668; // exp(-1/8)
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = mul(x, x);
    let x3 = mul(x2, x);
    let x4 = mul(x2, x2);
    let x4_over_4 = multiply_by_pot(x4, -2);
    let poly = multiply_by_pot(mul(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2), -1);
    CONSTANT_TERM.wrapping_add(mul(CONSTANT_TERM, x.wrapping_add(poly)))
}

/// `exp_on_negative_values`: `exp(a)` for `a <= 0` with `INTEGER_BITS` integer bits (`0..=29`;
/// softmax uses 5); the result has 0 integer bits.
pub(crate) fn exp_on_negative_values<const INTEGER_BITS: i32>(a: i32) -> i32 {
    const { assert!(0 <= INTEGER_BITS && INTEGER_BITS <= 29, "exp_on_negative_values: 0..=29 integer bits") };
    exp_on_negative_values_with(a, INTEGER_BITS)
}

/// [`exp_on_negative_values`] with the integer bits (`0..=29`) as an argument, for [`tanh`],
/// whose exp has one integer bit more than its input (no const generic arithmetic on stable).
/// `exp` of `a` modulo 1/4 (minus 1/4), times `exp(-2^k)` for each set bit `k` of the rest
/// (the barrel shifter); 1 for `a == 0`.
#[inline]
fn exp_on_negative_values_with(a: i32, integer_bits: i32) -> i32 {
    let fractional_bits = 31 - integer_bits;
    let one_quarter = 1i32 << (fractional_bits - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(
        a_mod_quarter_minus_one_quarter,
        integer_bits,
        0,
    ));
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
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
            if remainder & (1i32 << shift) != 0 {
                result = mul(result, multiplier);
            }
        }
    }
    if integer_bits > 5 {
        let clamp = -(1i32 << (36 - integer_bits)); // -32.0
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 { ONE_Q0 } else { result }
}

/// Three Newton-Raphson steps for `1 / half_denominator` (the core of gemmlowp's two divisions
/// below), starting from `48/17 - 32/17 * half_denominator`: input with 0 integer bits, result
/// with 2.
fn newton_raphson_reciprocal(half_denominator: i32) -> i32 {
    const C48_OVER_17: i32 = 1_515_870_810; // 2 integer bits
    const NEG_32_OVER_17: i32 = -1_010_580_540;
    const ONE_Q2: i32 = 1 << 29;
    let mut x = C48_OVER_17.wrapping_add(mul(half_denominator, NEG_32_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = mul(half_denominator, x);
        let one_minus = ONE_Q2.wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(rescale(mul(x, one_minus), 4, 2));
    }
    x
}

/// `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a` in `[0, 1)`, Newton-Raphson
/// division; in and out with 0 integer bits.
pub(crate) fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let x = newton_raphson_reciprocal(rounding_half_sum(a, ONE_Q0));
    // ExactMulByPot<-1> turns 2 integer bits into 1 without touching the raw value.
    rescale(x, 1, 0)
}

/// `one_minus_x_over_one_plus_x_for_x_in_0_1`: `(1 - a) / (1 + a)` for `a` in `[0, 1)`,
/// Newton-Raphson division; in and out with 0 integer bits.
fn one_minus_x_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let x = newton_raphson_reciprocal(rounding_half_sum(a, ONE_Q0));
    rescale(x.wrapping_sub(1 << 29), 2, 0)
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
    let abs = if a > 0 { a } else { a.wrapping_neg() };
    let positive =
        one_over_one_plus_x_for_x_in_0_1(exp_on_negative_values::<INTEGER_BITS>(abs.wrapping_neg()));
    if a == 0 {
        1 << 30
    } else if a > 0 {
        positive
    } else {
        ONE_Q0.wrapping_sub(positive)
    }
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
    let negative = if a < 0 { a } else { a.wrapping_neg() };
    // neg_tanh_on_negative_values: ExactMulByPot<1> doubles the value by adding an integer bit
    // to the same raw integer.
    let t = one_minus_x_over_one_plus_x_for_x_in_0_1(exp_on_negative_values_with(negative, INTEGER_BITS + 1));
    if a == 0 {
        0
    } else if a < 0 {
        t.wrapping_neg()
    } else {
        t
    }
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
}
