//! int8 softmax and log softmax over the last axis, bit-exact with TFLite Micro:
//! - [`softmax`]: TFLite's reference integer softmax (`reference_ops::Softmax` for int8 in
//!   `softmax.h`), with gemmlowp's fixed-point exp and reciprocal. The output has TFLite's fixed
//!   int8 softmax quantization: scale 1/256, zero point -128.
//! - [`log_softmax`]: `reference_ops::LogSoftmax` for int8 (`LogSoftmaxQuantized` in
//!   `log_softmax.h`), with gemmlowp's fixed-point exp and TFLite's fixed-point log. The output
//!   has TFLite's fixed int8 log softmax quantization: scale 16/256, zero point 127.

use crate::error::{DspError, check_len};
use crate::fixedpoint::{
    exp_on_negative_values, get_reciprocal, log_x_for_x_greater_than_or_equal_to_1, rescale,
};
use crate::quant::{
    multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_greater_than_one, quantize_multiplier,
    rounding_divide_by_pot, saturating_rounding_doubling_high_mul,
};

/// Integer bits of the scaled input differences (Q5.26), as TFLite.
const SCALED_DIFF_INTEGER_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: i32 = 12;
/// Integer bits of the log softmax output before its requantization (`kOutputIntegerBits`):
/// the int8 output steps by 2^-4.
const LOG_SOFTMAX_OUTPUT_INTEGER_BITS: i32 = 4;

/// The softmax's input scaling, from `SoftmaxParams::new` (TFLite's `Prepare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftmaxParams {
    /// Q31 multiplier of `beta * input_scale * 2^26`.
    pub input_multiplier: i32,
    /// Left shift that goes with `input_multiplier`, at least 0.
    pub input_left_shift: i32,
    /// Differences from the row maximum below this give exactly 0 (exp underflows).
    pub diff_min: i32,
}

impl SoftmaxParams {
    /// TFLite's `PreprocessSoftmaxScaling` and `CalculateInputRadius` for `softmax(beta * x)`
    /// of an input with `input_scale`.
    pub fn new(beta: f64, input_scale: f64) -> Result<SoftmaxParams, DspError> {
        let real = beta * input_scale * f64::from(1u32 << (31 - SCALED_DIFF_INTEGER_BITS));
        if !(real.is_finite() && real > 0.0) {
            return Err(DspError::Param("beta * input_scale not positive and finite"));
        }
        let real = real.min(2_147_483_647.0);
        let (input_multiplier, input_left_shift) = quantize_multiplier(real);
        if !(0..=31).contains(&input_left_shift) {
            return Err(DspError::Param("beta * input_scale too small"));
        }
        // floor((2^5 - 1) * 2^(31 - 5) / 2^left_shift)
        let radius =
            (((1i64 << SCALED_DIFF_INTEGER_BITS) - 1) << (31 - SCALED_DIFF_INTEGER_BITS)) >> input_left_shift;
        Ok(SoftmaxParams { input_multiplier, input_left_shift, diff_min: -(radius as i32) })
    }
}

/// Softmax of each row of `depth` values of `input` into `output` (same length), with output
/// scale 1/256 and zero point -128.
pub fn softmax(
    params: &SoftmaxParams,
    depth: usize,
    input: &[i8],
    output: &mut [i8],
) -> Result<(), DspError> {
    check_rows(depth, params.input_left_shift, input, output)?;
    let scaled_exp = |x: i8, max: i8| scaled_exp(params, i32::from(x) - i32::from(max));
    // The first `KEPT` exponentials of a row, worked out once for the sum and kept for the
    // outputs; later ones are worked out twice. (Each is some 50 operations: a keyword
    // model's 12 classes took 1% of its time.)
    const KEPT: usize = 64;
    let mut kept = [None::<i32>; KEPT];
    for (row, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(depth)) {
        let max = row.iter().copied().max().unwrap_or(i8::MIN);
        let mut sum_of_exps = 0i32;
        for (j, &x) in row.iter().enumerate() {
            let e = scaled_exp(x, max);
            if let Some(k) = kept.get_mut(j) {
                *k = e;
            }
            if let Some(e) = e {
                sum_of_exps = sum_of_exps.wrapping_add(rescale(e, 0, ACCUMULATION_INTEGER_BITS));
            }
        }
        let (shifted_scale, num_bits_over_unit) = get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS);
        for (j, (o, &x)) in out.iter_mut().zip(row).enumerate() {
            let e = match kept.get(j) {
                Some(&k) => k,
                None => scaled_exp(x, max),
            };
            *o = match e {
                Some(e) => {
                    let unsat = rounding_divide_by_pot(
                        saturating_rounding_doubling_high_mul(shifted_scale, e),
                        num_bits_over_unit + 31 - 8,
                    );
                    unsat.wrapping_sub(128).clamp(-128, 127) as i8
                }
                None => i8::MIN,
            };
        }
    }
    Ok(())
}

/// `exp` of an input's difference from its row's maximum (Q0.31), `None` below `diff_min`,
/// where it underflows to 0.
fn scaled_exp(params: &SoftmaxParams, diff: i32) -> Option<i32> {
    (diff >= params.diff_min).then(|| {
        let rescaled = multiply_by_quantized_multiplier_greater_than_one(
            diff,
            params.input_multiplier,
            params.input_left_shift,
        );
        exp_on_negative_values::<SCALED_DIFF_INTEGER_BITS>(rescaled)
    })
}

/// The argument checks [`softmax`] and [`log_softmax`] share: a nonzero `depth` dividing the
/// input, an output as long, and the input left shift in `0..=31`.
fn check_rows(depth: usize, input_left_shift: i32, input: &[i8], output: &[i8]) -> Result<(), DspError> {
    if depth == 0 {
        return Err(DspError::Param("softmax depth 0"));
    }
    if !(0..=31).contains(&input_left_shift) {
        return Err(DspError::Param("softmax left shift outside 0..=31"));
    }
    if !input.len().is_multiple_of(depth) {
        return Err(DspError::Length {
            what: "input",
            expected: input.len() / depth * depth,
            actual: input.len(),
        });
    }
    check_len("output", input.len(), output.len())
}

/// The log softmax's input scaling and its inverse, from `LogSoftmaxParams::new` (TFLite
/// Micro's `LOG_SOFTMAX` `Prepare`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSoftmaxParams {
    /// Q31 multiplier of `beta * input_scale * 2^26`, as [`SoftmaxParams::input_multiplier`].
    pub input_multiplier: i32,
    /// Left shift that goes with `input_multiplier`, in `1..=31`.
    pub input_left_shift: i32,
    /// Q31 multiplier of the inverse scaling (`2^(31 - input_left_shift) / input_multiplier`),
    /// which maps a Q5.26 value back to input steps.
    pub reverse_scaling_divisor: i32,
    /// Right shift that goes with `reverse_scaling_divisor`, in `0..=31`.
    pub reverse_scaling_right_shift: i32,
    /// Differences from the row maximum below this are left out of the sum of exponentials.
    pub diff_min: i32,
}

impl LogSoftmaxParams {
    /// TFLite's `PreprocessLogSoftmaxScalingExp` and `CalculateInputRadius` for
    /// `log_softmax(beta * x)` of an input with `input_scale` (TFLite Micro always has beta 1).
    /// Fails where TFLite's checks would abort: `beta * input_scale * 2^26` not above 1, or an
    /// inverse scaling not below 1.
    pub fn new(beta: f64, input_scale: f64) -> Result<LogSoftmaxParams, DspError> {
        let SoftmaxParams { input_multiplier, input_left_shift, diff_min } =
            SoftmaxParams::new(beta, input_scale)?;
        // QuantizeMultiplierGreaterThanOne, and the int `1 << (31 - left_shift)` below, need a
        // shift of at least 1.
        if input_left_shift < 1 {
            return Err(DspError::Param("beta * input_scale too small for log softmax"));
        }
        let real_reverse = f64::from(1u32 << (31 - input_left_shift)) / f64::from(input_multiplier);
        if !(real_reverse > 0.0 && real_reverse < 1.0) {
            return Err(DspError::Param("log softmax inverse scaling not below 1"));
        }
        // QuantizeMultiplierSmallerThanOneExp: a shift of at most 0 (more if it rounded to 1).
        let (reverse_scaling_divisor, reverse_left_shift) = quantize_multiplier(real_reverse);
        if reverse_left_shift > 0 {
            return Err(DspError::Param("log softmax inverse scaling not below 1"));
        }
        Ok(LogSoftmaxParams {
            input_multiplier,
            input_left_shift,
            reverse_scaling_divisor,
            reverse_scaling_right_shift: -reverse_left_shift,
            diff_min,
        })
    }
}

/// Log softmax of each row of `depth` values of `input` into `output` (same length), with
/// output scale 16/256 and zero point 127 (so 127 is 0 and -128 is -15.9375 or below).
pub fn log_softmax(
    params: &LogSoftmaxParams,
    depth: usize,
    input: &[i8],
    output: &mut [i8],
) -> Result<(), DspError> {
    check_rows(depth, params.input_left_shift, input, output)?;
    if !(0..=31).contains(&params.reverse_scaling_right_shift) {
        return Err(DspError::Param("log softmax reverse scaling shift outside 0..=31"));
    }
    // The difference from the row maximum in Q5.26.
    let scaled_diff =
        |diff: i32| multiply_by_quantized_multiplier(diff, params.input_multiplier, params.input_left_shift);
    for (row, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(depth)) {
        let max = i32::from(row.iter().copied().max().unwrap_or(i8::MIN));
        // Q12.19: safe from overflow for 2^12 terms of at most 1.
        let sum_of_exps = row
            .iter()
            .map(|&x| i32::from(x) - max)
            .filter(|&diff| diff >= params.diff_min)
            .map(|diff| exp_on_negative_values::<SCALED_DIFF_INTEGER_BITS>(scaled_diff(diff)))
            .fold(0i32, |sum, e| sum.wrapping_add(rescale(e, 0, ACCUMULATION_INTEGER_BITS)));
        // Q5.26
        let log_sum_of_exps = log_x_for_x_greater_than_or_equal_to_1::<
            SCALED_DIFF_INTEGER_BITS,
            ACCUMULATION_INTEGER_BITS,
        >(sum_of_exps);
        // Differences at or below this, in input steps, would take the output below the smallest
        // Q5.26 value: they give -128 (as do those below diff_min, where the sum left them out).
        let adjusted_diff_min = params.diff_min.saturating_sub(1).max(multiply_by_quantized_multiplier(
            log_sum_of_exps.wrapping_add(i32::MIN),
            params.reverse_scaling_divisor,
            -params.reverse_scaling_right_shift,
        ));
        for (o, &x) in out.iter_mut().zip(row) {
            let diff = i32::from(x) - max;
            *o = if diff > adjusted_diff_min {
                let unsat = rounding_divide_by_pot(
                    scaled_diff(diff).wrapping_sub(log_sum_of_exps),
                    31 - SCALED_DIFF_INTEGER_BITS - LOG_SOFTMAX_OUTPUT_INTEGER_BITS,
                )
                .wrapping_add(127);
                unsat.clamp(-128, 127) as i8
            } else {
                i8::MIN
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::Lcg;
    use proptest::prelude::*;
    use std::vec;

    #[test]
    fn params_match_tflite_prepare() {
        // beta 1, scale 1/16: real = 2^26 / 16 = 2^22 = 0.5 * 2^23 -> (2^30, 23).
        let p = SoftmaxParams::new(1.0, 1.0 / 16.0).unwrap();
        assert_eq!((p.input_multiplier, p.input_left_shift), (1 << 30, 23));
        // floor(31 * 2^26 / 2^23) = 248.
        assert_eq!(p.diff_min, -248);
        assert!(SoftmaxParams::new(0.0, 0.1).is_err());
    }

    #[test]
    fn known_answers() {
        let p = SoftmaxParams::new(1.0, 1.0 / 16.0).unwrap();
        let mut out = [0i8; 4];
        // Equal inputs: 1/4 each = 64/256 -> -128 + 64.
        softmax(&p, 4, &[7, 7, 7, 7], &mut out).unwrap();
        assert_eq!(out, [-64; 4]);
        // One dominant value: ~1 -> 127 (saturated from 128), the rest underflow to -128.
        softmax(&p, 4, &[127, -128, -128, -128], &mut out).unwrap();
        assert_eq!(out, [127, -128, -128, -128]);
        let mut two = [0i8; 2];
        softmax(&p, 2, &[0, 0], &mut two).unwrap();
        assert_eq!(two, [0, 0]);
        assert!(softmax(&p, 3, &[0; 4], &mut out).is_err());
        assert!(softmax(&p, 2, &[0; 4], &mut out[..3]).is_err());
        assert!(softmax(&p, 0, &[], &mut []).is_err());
    }

    /// TFLite's reference loop as written there: each exponential worked out for the sum and
    /// again for its output.
    fn softmax_twice(p: &SoftmaxParams, depth: usize, input: &[i8], output: &mut [i8]) {
        let scaled_exp = |diff: i32| scaled_exp(p, diff);
        for (row, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(depth)) {
            let max = i32::from(*row.iter().max().unwrap());
            let sum = row
                .iter()
                .filter_map(|&x| scaled_exp(i32::from(x) - max))
                .fold(0i32, |sum, e| sum.wrapping_add(rescale(e, 0, ACCUMULATION_INTEGER_BITS)));
            let (scale, bits) = get_reciprocal(sum, ACCUMULATION_INTEGER_BITS);
            for (o, &x) in out.iter_mut().zip(row) {
                *o = scaled_exp(i32::from(x) - max).map_or(i8::MIN, |e| {
                    let unsat = rounding_divide_by_pot(
                        saturating_rounding_doubling_high_mul(scale, e),
                        bits + 31 - 8,
                    );
                    unsat.wrapping_sub(128).clamp(-128, 127) as i8
                });
            }
        }
    }

    proptest! {
        /// Rows shorter and longer than the exponentials kept (64), and several rows.
        #[test]
        fn kept_exponentials_change_nothing(depth in 1usize..150, rows in 1usize..4, scale in 0.01f64..0.5, seed: u64) {
            let p = SoftmaxParams::new(1.0, scale).unwrap();
            let input = Lcg(seed).bytes(depth * rows);
            let (mut got, mut want) = (vec![0i8; input.len()], vec![0i8; input.len()]);
            softmax(&p, depth, &input, &mut got).unwrap();
            softmax_twice(&p, depth, &input, &mut want);
            prop_assert_eq!(got, want);
        }
    }

    /// TFLite Micro's test quantization of `x` for the range `[min, max]` (`ScaleFromMinMax`,
    /// `ZeroPointFromMinMax`, `FloatToQuantizedType`), in float32 as there, and the scale.
    fn tflm_quantize(x: &[f32], min: f32, max: f32) -> (std::vec::Vec<i8>, f64) {
        let scale = (max - min) / 255.0f32;
        let zero_point = -128 + (-min / scale).round() as i32;
        let q = x.iter().map(|&v| ((v / scale).round() as i32 + zero_point).clamp(-128, 127) as i8);
        (q.collect(), f64::from(scale))
    }

    #[test]
    fn log_softmax_matches_tflm_tests() {
        // log_softmax_test.cc, QuantizedActivationsOpTestLogSoftmaxInt8: range [-10, 10], 2x4.
        let (input, scale) = tflm_quantize(&[0.0, -6.0, 2.0, 4.0, 3.0, -2.0, 10.0, 1.0], -10.0, 10.0);
        let p = LogSoftmaxParams::new(1.0, scale).unwrap();
        let mut out = [0i8; 8];
        log_softmax(&p, 4, &input, &mut out).unwrap();
        assert_eq!(out, [61, -36, 93, 125, 15, -65, 127, -16]);
        // ExtraTestLogSoftmaxInt8: range [-1, 1], 3x1 (rows of one value are log 1 = 0).
        let (input, scale) = tflm_quantize(&[0.0, -1.0, 1.0], -1.0, 1.0);
        let p = LogSoftmaxParams::new(1.0, scale).unwrap();
        let mut out = [0i8; 3];
        log_softmax(&p, 1, &input, &mut out).unwrap();
        assert_eq!(out, [127, 127, 127]);
    }

    #[test]
    fn log_softmax_params_and_errors() {
        // beta 1, scale 1/16 as the softmax; the inverse 2^(31-23) / 2^30 = 2^-22 -> (2^30, -21).
        let p = LogSoftmaxParams::new(1.0, 1.0 / 16.0).unwrap();
        assert_eq!(
            p,
            LogSoftmaxParams {
                input_multiplier: 1 << 30,
                input_left_shift: 23,
                reverse_scaling_divisor: 1 << 30,
                reverse_scaling_right_shift: 21,
                diff_min: -248,
            }
        );
        assert!(LogSoftmaxParams::new(0.0, 0.1).is_err());
        // beta * scale * 2^26 <= 1: TFLite's QuantizeMultiplierGreaterThanOne check fails.
        assert!(LogSoftmaxParams::new(1.0, 2f64.powi(-27)).is_err());
        let mut out = [0i8; 4];
        assert!(log_softmax(&p, 3, &[0; 4], &mut out).is_err());
        assert!(log_softmax(&p, 2, &[0; 4], &mut out[..3]).is_err());
        assert!(log_softmax(&p, 0, &[], &mut []).is_err());
        let bad = LogSoftmaxParams { reverse_scaling_right_shift: 32, ..p };
        assert!(log_softmax(&bad, 2, &[0; 4], &mut out).is_err());
        // Equal values: log(1/4) = -1.386 -> 127 - round(22.18) = 105.
        log_softmax(&p, 4, &[5; 4], &mut out).unwrap();
        assert_eq!(out, [105; 4]);
    }

    proptest! {
        #[test]
        fn log_softmax_approximates_float(depth in 1usize..40, scale in 0.005f64..0.3, seed: u64) {
            let p = LogSoftmaxParams::new(1.0, scale).unwrap();
            let input = Lcg(seed).bytes(depth);
            let mut out = vec![0i8; depth];
            log_softmax(&p, depth, &input, &mut out).unwrap();
            let max = f64::from(*input.iter().max().unwrap());
            let diffs: std::vec::Vec<f64> = input.iter().map(|&x| scale * (f64::from(x) - max)).collect();
            let log_sum = diffs.iter().map(|d| d.exp()).sum::<f64>().ln();
            for (&o, d) in out.iter().zip(&diffs) {
                let got = f64::from(i32::from(o) - 127) / 16.0;
                let want = d - log_sum;
                // -128 stands for anything at or below -15.9375 (or left out of the sum, from
                // about -15.5 down).
                let ok = (got - want.max(-255.0 / 16.0)).abs() <= 1.0 / 16.0 + 1e-3
                    || (o == i8::MIN && want < -15.4);
                prop_assert!(ok, "got {} want {}", got, want);
            }
        }


        #[test]
        fn approximates_float(depth in 1usize..20, scale in 0.01f64..0.2, beta in 0.5f64..2.0, seed: u64) {
            let p = SoftmaxParams::new(beta, scale).unwrap();
            let input = Lcg(seed).bytes(depth);
            let mut out = vec![0i8; depth];
            softmax(&p, depth, &input, &mut out).unwrap();
            let max = f64::from(*input.iter().max().unwrap());
            let exps: std::vec::Vec<f64> = input.iter().map(|&x| (beta * scale * (f64::from(x) - max)).exp()).collect();
            let sum: f64 = exps.iter().sum();
            for (o, e) in out.iter().zip(&exps) {
                let got = (f64::from(*o) + 128.0) / 256.0;
                prop_assert!((got - e / sum).abs() <= 1.0 / 256.0 + 1e-9, "got {} want {}", got, e / sum);
            }
        }
    }
}
