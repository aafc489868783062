//! int8 softmax over the last axis: TFLite's reference integer softmax (`reference_ops::Softmax`
//! for int8 in `softmax.h`), bit-exact, with gemmlowp's fixed-point exp and reciprocal.
//! The output has TFLite's fixed int8 softmax quantization: scale 1/256, zero point -128.

use crate::error::{DspError, check_len};
use crate::fixedpoint::{exp_on_negative_values, get_reciprocal, rescale};
use crate::quant::{
    multiply_by_quantized_multiplier_greater_than_one, quantize_multiplier,
    saturating_rounding_doubling_high_mul,
};

/// Integer bits of the scaled input differences (Q5.26), as TFLite.
const SCALED_DIFF_INTEGER_BITS: i32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: i32 = 12;

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
    if depth == 0 {
        return Err(DspError::Param("softmax depth 0"));
    }
    if !(0..=31).contains(&params.input_left_shift) {
        return Err(DspError::Param("softmax left shift outside 0..=31"));
    }
    if !input.len().is_multiple_of(depth) {
        return Err(DspError::Length {
            what: "input",
            expected: input.len() / depth * depth,
            actual: input.len(),
        });
    }
    check_len("output", input.len(), output.len())?;
    let scaled_exp = |x: i8, max: i8| {
        let diff = i32::from(x) - i32::from(max);
        (diff >= params.diff_min).then(|| {
            let rescaled = multiply_by_quantized_multiplier_greater_than_one(
                diff,
                params.input_multiplier,
                params.input_left_shift,
            );
            exp_on_negative_values::<SCALED_DIFF_INTEGER_BITS>(rescaled)
        })
    };
    for (row, out) in input.chunks_exact(depth).zip(output.chunks_exact_mut(depth)) {
        let max = row.iter().copied().max().unwrap_or(i8::MIN);
        let sum_of_exps = row
            .iter()
            .filter_map(|&x| scaled_exp(x, max))
            .fold(0i32, |sum, e| sum.wrapping_add(rescale(e, 0, ACCUMULATION_INTEGER_BITS)));
        let (shifted_scale, num_bits_over_unit) = get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS);
        for (o, &x) in out.iter_mut().zip(row) {
            *o = match scaled_exp(x, max) {
                Some(e) => {
                    let unsat = crate::quant::rounding_divide_by_pot(
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

    proptest! {
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
