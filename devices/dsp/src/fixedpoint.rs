//! The few gemmlowp fixed-point routines TFLite's int8 softmax uses (`fixedpoint.h`), on raw
//! `i32` values: a `FixedPoint<int32, I>` is a raw integer with `31 - I` fractional bits.
//! Ported operation by operation so the softmax is bit-exact with TFLite's reference.

use crate::quant::{rounding_divide_by_pot, saturating_rounding_doubling_high_mul as mul};

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

/// `exp_on_interval_between_negative_one_quarter_and_0_excl`: a Taylor expansion around -1/8,
/// input and output with 0 integer bits.
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

/// `exp_on_negative_values` for an input with `INTEGER_BITS` integer bits (softmax uses 5);
/// the result has 0 integer bits.
pub(crate) fn exp_on_negative_values<const INTEGER_BITS: i32>(a: i32) -> i32 {
    let fractional_bits = 31 - INTEGER_BITS;
    let one_quarter = 1i32 << (fractional_bits - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(rescale(
        a_mod_quarter_minus_one_quarter,
        INTEGER_BITS,
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
        if INTEGER_BITS > exponent {
            let shift = fractional_bits + exponent;
            if remainder & (1i32 << shift) != 0 {
                result = mul(result, multiplier);
            }
        }
    }
    if INTEGER_BITS > 5 {
        let clamp = -(1i32 << (36 - INTEGER_BITS)); // -32.0
        if a < clamp {
            result = 0;
        }
    }
    if a == 0 { i32::MAX } else { result }
}

/// `one_over_one_plus_x_for_x_in_0_1`: Newton-Raphson division, in and out with 0 integer bits.
pub(crate) fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, i32::MAX);
    const C48_OVER_17: i32 = 1_515_870_810; // 2 integer bits
    const NEG_32_OVER_17: i32 = -1_010_580_540;
    let mut x = C48_OVER_17.wrapping_add(mul(half_denominator, NEG_32_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = mul(half_denominator, x);
        let one_minus = (1i32 << 29).wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(rescale(mul(x, one_minus), 4, 2));
    }
    // ExactMulByPot<-1> turns 2 integer bits into 1 without touching the raw value.
    rescale(x, 1, 0)
}

/// gemmlowp's `RoundingHalfSum` for int32.
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
    fn multiply_by_pot_saturates() {
        assert_eq!(multiply_by_pot(1 << 30, 1), i32::MAX);
        assert_eq!(multiply_by_pot(-(1 << 30), 1), i32::MIN);
        assert_eq!(multiply_by_pot(3, 2), 12);
        assert_eq!(multiply_by_pot(6, -2), 2);
    }
}
