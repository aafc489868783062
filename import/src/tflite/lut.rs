//! Int8 unary activations (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, LOGISTIC, TANH, HARD_SWISH)
//! as 256-entry lookup tables computed at import time, so one table kernel runs them all
//! (docs/models.md). Each table equals, for every int8 input, what TensorFlow Lite Micro's
//! reference int8 kernel computes (its `Prepare` parameters and fixed-point `Eval` arithmetic,
//! replayed per input value; RELU_N1_TO_1, which TFLM lacks, as TensorFlow Lite computes it).

use hostrt_dsp::fixedpoint;
use hostrt_dsp::{multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot};

/// `(scale, zero_point)` of an int8 tensor.
pub type Quant = (f32, i32);

/// An int8 activation as a table: entry `(x as u8) as usize` is the output for input `x`, so
/// entries `0..=127` are inputs `0..=127` and `128..=255` are inputs `-128..=-1`.
pub type Table = [i8; 256];

/// The table of `f` over every int8 input; `f` returns the (already clamped) output.
fn table(f: impl Fn(i32) -> i8) -> Table {
    let mut t = [0i8; 256];
    for x in i8::MIN..=i8::MAX {
        t[usize::from(x as u8)] = f(i32::from(x));
    }
    t
}

/// Clamps to the int8 range.
fn saturate_i8(v: i32) -> i8 {
    v.clamp(i32::from(i8::MIN), i32::from(i8::MAX)) as i8
}

/// Checks an int8 tensor's quantization: a positive finite scale, a zero point in `-128..=127`.
fn check_quant(what: &str, (scale, zero_point): Quant) -> Result<(), String> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(format!("{what} scale {scale} is not a positive finite number"));
    }
    if !(-128..=127).contains(&zero_point) {
        return Err(format!("{what} zero point {zero_point} is outside the int8 range"));
    }
    Ok(())
}

/// `QuantizeMultiplier` of `real`, refusing shifts that TFLite's `MultiplyByQuantizedMultiplier`
/// cannot apply (a left shift of 31 or more overflows before the multiplication).
fn multiplier(what: &str, real: f64) -> Result<(i32, i32), String> {
    let (m, shift) = quantize_multiplier(real);
    if shift > 30 {
        return Err(format!("{what} multiplier {real} is 2^30 or more"));
    }
    Ok((m, shift))
}

/// C's `roundf(x)` converted to `int32_t` (saturating where C would be undefined).
fn round_to_i32(x: f32) -> i32 {
    x.round() as i32
}

/// Int8 RELU, RELU6 or RELU_N1_TO_1, chosen by the float bounds `(min, max)`; other bounds are
/// an error:
///
/// - `(0, inf)`, RELU: the input requantized to the output
///   (`MultiplyByQuantizedMultiplier` by `QuantizeMultiplier(input_scale / output_scale)`),
///   then clamped below at the output's zero point (`CalculateReluOpData`, `ReluQuantized`).
/// - `(0, 6)`, RELU6: TFLM's `Relu6Quantized` clamps the *input* value to
///   `[input_zero_point, quantized 6.0]` and stores it unchanged: it never reads the output's
///   quantization, so where the converter gave the output other parameters than the input
///   (it usually does) TFLM's result is not the output's real relu6. The table reproduces it.
/// - `(-1, 1)`, RELU_N1_TO_1: TFLM has no kernel for it; the table is TensorFlow Lite's
///   (`QuantizedReluX`): RELU's requantization, clamped to the quantized bounds.
pub fn relu(input: Quant, output: Quant, min: f32, max: f32) -> Result<Table, String> {
    check_quant("input", input)?;
    check_quant("output", output)?;
    let (in_scale, in_zp) = input;
    let (out_scale, out_zp) = output;
    if (min, max) == (0.0, 6.0) {
        // FloatToQuantizedType<int8_t>(6.0f, scale, zero_point).
        let six = saturate_i8(round_to_i32(6.0 / in_scale).saturating_add(in_zp));
        let zero = in_zp as i8;
        return Ok(table(|x| (x as i8).clamp(zero, six)));
    }
    if (min, max) != (0.0, f32::INFINITY) && (min, max) != (-1.0, 1.0) {
        return Err(format!(
            "relu bounds ({min}, {max}) are none of RELU (0, inf), RELU6 (0, 6), RELU_N1_TO_1 (-1, 1)"
        ));
    }
    let (m, shift) = multiplier("input/output scale", f64::from(in_scale / out_scale))?;
    let act_min = (-128).max(out_zp.saturating_add(round_to_i32(min / out_scale)));
    let act_max = if max == f32::INFINITY {
        127
    } else {
        127.min(out_zp.saturating_add(round_to_i32(max / out_scale)))
    };
    Ok(table(|x| {
        let v = out_zp.saturating_add(multiply_by_quantized_multiplier(x - in_zp, m, shift));
        // std::max with the minimum first, then std::min with the maximum, as TFLM.
        saturate_i8(v.max(act_min).min(act_max))
    }))
}

/// TFLM's int8 LEAKY_RELU (`CalculateOpDataLeakyRelu`, `QuantizeLeakyRelu`): non-negative
/// inputs (relative to the zero point) requantized by `input_scale / output_scale`, negative
/// ones by `input_scale * alpha / output_scale` (a negative `alpha` is applied as the negated
/// product of its magnitude), plus the output zero point, saturated.
pub fn leaky_relu(input: Quant, output: Quant, alpha: f32) -> Result<Table, String> {
    check_quant("input", input)?;
    check_quant("output", output)?;
    if !alpha.is_finite() {
        return Err(format!("alpha {alpha} is not finite"));
    }
    let (in_scale, in_zp) = input;
    let (out_scale, out_zp) = output;
    let (m_alpha, shift_alpha) = multiplier("alpha", f64::from(in_scale * alpha / out_scale))?;
    let (m_identity, shift_identity) = multiplier("input/output scale", f64::from(in_scale / out_scale))?;
    let negative_alpha = m_alpha < 0;
    let m_alpha = m_alpha.wrapping_abs();
    Ok(table(|x| {
        let v = x - in_zp;
        let scaled = if v >= 0 {
            multiply_by_quantized_multiplier(v, m_identity, shift_identity)
        } else {
            let s = multiply_by_quantized_multiplier(v, m_alpha, shift_alpha);
            if negative_alpha { s.wrapping_neg() } else { s }
        };
        saturate_i8(out_zp.saturating_add(scaled))
    }))
}

/// Integer bits of the fixed-point input of TFLM's int8 LOGISTIC and TANH (Q4.27).
const INPUT_INTEGER_BITS: i32 = 4;

/// The input rescaling TFLM's int8 LOGISTIC and TANH share: the input (relative to its zero
/// point) goes to Q4.27 by `MultiplyByQuantizedMultiplier(x, multiplier, left_shift)`, from
/// `frexp(input_scale * 2^27)`, and inputs at or beyond `±radius`
/// (`CalculateInputRadius(4, left_shift, 31)`) saturate. Returns `(multiplier, left_shift,
/// radius)`.
fn q4_input_rescale(input_scale: f32) -> Result<(i32, i32, i32), String> {
    let real = f64::from(input_scale) * f64::from(1 << (31 - INPUT_INTEGER_BITS));
    // frexp and round(q * 2^31): QuantizeMultiplier's steps, whose only extra case (a
    // rounded mantissa of 2^31) cannot arise from a float scale's 24-bit mantissa.
    let (m, left_shift) = quantize_multiplier(real);
    if m == 0 || !(0..=62).contains(&left_shift) {
        // TFLM shifts by a negative amount (undefined) for scales below 2^-28.
        return Err(format!("input scale {input_scale} is outside the range TFLM's kernel handles"));
    }
    // floor(((1 << 4) - 1) * 2^(31 - 4) / 2^left_shift), in double as TFLM.
    let max_rescaled = f64::from((1 << INPUT_INTEGER_BITS) - 1) * f64::from(1 << (31 - INPUT_INTEGER_BITS))
        / 2f64.powi(left_shift);
    Ok((m, left_shift, max_rescaled.floor() as i32))
}

/// TFLM's int8 LOGISTIC (`CalculateArithmeticOpDataLogistic`, `reference_integer_ops::Logistic`):
/// the input in Q4.27, gemmlowp's fixed-point `logistic` ([`fixedpoint::logistic`]), its Q0.31
/// result rounded to 1/256 steps and offset by -128. The kernel assumes the output is quantized
/// with scale 1/256 and zero point -128 (TFLM checks only the zero point); any other output is
/// refused here.
pub fn logistic(input: Quant, output: Quant) -> Result<Table, String> {
    q4_table(("LOGISTIC", (1.0 / 256.0, "1/256"), -128), input, output, |q4| {
        let q0 = fixedpoint::logistic::<INPUT_INTEGER_BITS>(q4);
        saturate_i8(rounding_divide_by_pot(q0, 31 - 8) - 128)
    })
}

/// TFLM's int8 TANH (`CalculateArithmeticOpData` of tanh.cc, `reference_integer_ops::Tanh`): the
/// input in Q4.27, gemmlowp's fixed-point `tanh` ([`fixedpoint::tanh`]), its Q0.31 result rounded
/// to 1/128 steps. The kernel assumes the output is quantized with scale 1/128 and zero point 0
/// (TFLM checks neither); any other output is refused here.
pub fn tanh(input: Quant, output: Quant) -> Result<Table, String> {
    q4_table(("TANH", (1.0 / 128.0, "1/128"), 0), input, output, |q4| {
        let q0 = fixedpoint::tanh::<INPUT_INTEGER_BITS>(q4);
        saturate_i8(rounding_divide_by_pot(q0, 31 - 7))
    })
}

/// The shared part of LOGISTIC and TANH (`op`, its required output scale, also as text, and
/// zero point): the output quantization checked, the input offset and rescaled to Q4.27
/// within TFLM's input radius (saturating outside it), then `f` of the Q4.27 value.
fn q4_table(
    (op, (scale, text), zero_point): (&str, (f32, &str), i32),
    input: Quant,
    output: Quant,
    f: impl Fn(i32) -> i8,
) -> Result<Table, String> {
    check_quant("input", input)?;
    if output != (scale, zero_point) {
        return Err(format!(
            "{op} output quantization ({}, {}) is not TFLM's ({text}, {zero_point})",
            output.0, output.1
        ));
    }
    let (m, shift, radius) = q4_input_rescale(input.0)?;
    Ok(table(|x| {
        let v = x - input.1;
        if v <= -radius {
            i8::MIN
        } else if v >= radius {
            i8::MAX
        } else {
            f(multiply_by_quantized_multiplier(v, m, shift))
        }
    }))
}

/// TFLM's int8 HARD_SWISH (`HardSwishPrepare`, `reference_ops::HardSwish<int8_t>`): 16-bit
/// fixed point throughout. The input, scaled up by 2^7, is multiplied (rounding) onto the
/// output scale, and separately mapped to a "relu-ish" factor in `[0, 1]` (`x / 3` saturated
/// to `[-1, 1]`, then halved and offset); the two are multiplied (truncating), shifted to the
/// output scale and offset by the output zero point.
pub fn hard_swish(input: Quant, output: Quant) -> Result<Table, String> {
    check_quant("input", input)?;
    check_quant("output", output)?;
    let (in_scale, in_zp) = input;
    let (out_scale, out_zp) = output;
    // Float arithmetic, as HardSwishPrepare.
    let hires_input_scale = (1.0f32 / 128.0) * in_scale;
    let reluish_scale = 3.0f32 / 32768.0;
    let (out_m, out_exp) = quantize_multiplier(f64::from(hires_input_scale / out_scale));
    let (reluish_m, reluish_exp) = quantize_multiplier(f64::from(hires_input_scale / reluish_scale));
    if out_exp > 0 {
        // TF_LITE_ENSURE(output_multiplier_exponent <= 0).
        return Err(format!("HARD_SWISH output scale {out_scale} is not above input scale / 128"));
    }
    if out_exp < -15 {
        return Err(format!("HARD_SWISH output scale {out_scale} is over 2^9 times the input scale"));
    }
    if !(-15..=31).contains(&reluish_exp) {
        return Err(format!("HARD_SWISH input scale {in_scale} is outside the range TFLM's kernel handles"));
    }
    let out_m16 = down_scale_multiplier_to_i16(out_m);
    let reluish_m16 = down_scale_multiplier_to_i16(reluish_m);
    Ok(table(|x| {
        // int16_t conversions of int arithmetic, as the C++ (|x - zp| <= 255, so exact).
        let input_value = (x - in_zp) as i16;
        let hires = input_value.wrapping_mul(1 << 7);
        let preshift_output = srdhm_i16(hires, out_m16);
        let mut reluish = hires;
        if reluish_exp > 0 {
            reluish = saturating_left_shift_i16(reluish, reluish_exp - 1);
        }
        reluish = srdhm_i16(reluish, reluish_m16);
        if reluish_exp > 0 {
            reluish = saturating_left_shift_i16(reluish, 1);
        }
        if reluish_exp < 0 {
            reluish = rounding_divide_by_pot_i16(reluish, -reluish_exp);
        }
        // [-1, 1] to [0, 1] in Q0.15.
        reluish = ((i32::from(reluish) + (1 << 15)) >> 1) as i16;
        let preshift_output_value = sdhm_i16(reluish, preshift_output);
        let output_value = rounding_divide_by_pot_i16(preshift_output_value, -out_exp);
        // `output_value += zero_point` on an int16_t: int addition, converted back.
        let output_value = (i32::from(output_value) + out_zp) as i16;
        saturate_i8(i32::from(output_value))
    }))
}

// The 16-bit fixed point of TFLite's HARD_SWISH kernel.

/// TFLite's `DownScaleInt32ToInt16Multiplier`: a Q31 multiplier rounded to Q15, saturated.
fn down_scale_multiplier_to_i16(m: i32) -> i16 {
    if m >= i32::MAX - (1 << 15) { i16::MAX } else { ((m + (1 << 15)) >> 16) as i16 }
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` on int16: `round(a * b / 2^15)` (ties up),
/// `i16::MIN * i16::MIN` saturated to `i16::MAX`.
fn srdhm_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// TFLite's `SaturatingDoublingHighMul` on int16: `a * b / 2^15` truncated towards zero,
/// `i16::MIN * i16::MIN` saturated to `i16::MAX`.
fn sdhm_i16(a: i16, b: i16) -> i16 {
    if a == i16::MIN && b == i16::MIN {
        return i16::MAX;
    }
    ((i32::from(a) * i32::from(b)) / (1 << 15)) as i16
}

/// gemmlowp's `RoundingDivideByPOT` on int16, for `exponent` in `0..=15`: `x / 2^exponent`
/// rounded to nearest, ties away from zero.
fn rounding_divide_by_pot_i16(x: i16, exponent: i32) -> i16 {
    debug_assert!((0..=15).contains(&exponent));
    let mask = ((1i32 << exponent) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i16::from(x < 0);
    (x >> exponent) + i16::from(remainder > threshold)
}

/// TFLite's `SaturatingLeftShift` (hard_swish.h): `value * 2^amount` saturated to int16.
fn saturating_left_shift_i16(value: i16, amount: i32) -> i16 {
    (i64::from(value) * (1i64 << amount)).clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output for int8 input `x`.
    fn at(t: &Table, x: i32) -> i32 {
        i32::from(t[usize::from(x as i8 as u8)])
    }

    /// TFLM's `FloatToQuantizedType<int8_t>` (the tests' `Quantize`).
    fn quantize(v: f32, (scale, zp): Quant) -> i32 {
        (round_to_i32(v / scale) + zp).clamp(-128, 127)
    }

    fn dequantize(q: i32, (scale, zp): Quant) -> f32 {
        (q - zp) as f32 * scale
    }

    /// TFLM test helpers' `ScaleFromMinMax<int8_t>` and `ZeroPointFromMinMax<int8_t>`.
    fn quant_from_min_max(min: f32, max: f32) -> Quant {
        let scale = (max - min) / 255.0;
        (scale, -128 + (-min / scale).round() as i32)
    }

    fn hex(s: &str) -> Table {
        assert_eq!(s.len(), 512);
        let mut t = [0i8; 256];
        for (i, b) in t.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap() as i8;
        }
        t
    }

    fn assert_table_eq(name: &str, got: &Table, want: &Table) {
        let diffs: Vec<_> = (-128..=127)
            .filter(|&x| at(got, x) != at(want, x))
            .map(|x| (x, at(got, x), at(want, x)))
            .collect();
        assert!(diffs.is_empty(), "{name}: (input, ours, TFLM) differ at {diffs:?}");
    }

    // TFLM's own kernel tests (tensorflow/lite/micro/kernels/*_test.cc), int8 cases.

    #[test]
    fn tflm_relu_tests() {
        // SimpleReluTestInt8: scale 0.5, zero point 0 in and out.
        let q = (0.5, 0);
        let t = relu(q, q, 0.0, f32::INFINITY).unwrap();
        let input = [1.0f32, 2.0, 3.0, 4.0, 5.0, -1.0, -2.0, -3.0, -4.0, -5.0];
        let golden = [1.0f32, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        for (i, g) in input.iter().zip(golden) {
            assert_eq!(at(&t, quantize(*i, q)), quantize(g, q), "relu({i})");
        }
        // SimpleRelu6TestInt8: scale 0.5, zero point 127: everything quantizes to 127.
        let q = (0.5, 127);
        let t = relu(q, q, 0.0, 6.0).unwrap();
        let input = [4.0f32, 5.0, 6.0, 7.0, 8.0, -1.0, -2.0, -3.0, -4.0, -5.0];
        let golden = [4.0f32, 5.0, 6.0, 6.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        for (i, g) in input.iter().zip(golden) {
            assert_eq!(at(&t, quantize(*i, q)), quantize(g, q), "relu6({i})");
        }
    }

    #[test]
    fn tflm_logistic_tests() {
        // LogisticQuantizedInt8{Basic,WideRange}ShouldMatchGolden, tolerance 1 step. TFLM's test
        // declares the output as (1/255, -128), which the kernel ignores and this module refuses;
        // the goldens are compared on the kernel's real (1/256, -128).
        let out = (1.0 / 256.0, -128);
        let cases: [(f32, &[(f32, f32)]); 2] = [
            (
                0.1,
                &[
                    (1.0, 0.731_058_6),
                    (3.0, 0.952_574_1),
                    (5.0, 0.993_307_2),
                    (-2.0, 0.119_202_92),
                    (-4.0, 0.017_986_21),
                ],
            ),
            (1.0, &[(2.0, 0.880_797_1), (4.0, 0.982_013_8), (93.0, 1.0), (-3.0, 0.047_425_87), (-93.0, 0.0)]),
        ];
        for (scale, pairs) in cases {
            let t = logistic((scale, 0), out).unwrap();
            for &(x, y) in pairs {
                let got = at(&t, quantize(x, (scale, 0)));
                assert!((got - quantize(y, out)).abs() <= 1, "logistic({x}) = {got}");
            }
        }
    }

    #[test]
    fn tflm_tanh_test() {
        // SimpleTestTanhInt8: input (16/256, 0), tolerance 2 steps (TFLM's output scale there is
        // 1.99999955/256, which the kernel treats as 1/128).
        let input = (16.0 / 256.0, 0);
        let out = (1.0 / 128.0, 0);
        let t = tanh(input, out).unwrap();
        let pairs = [
            (-8.0, -0.999_999_8),
            (-2.0, -0.964_027_6),
            (-0.727_272_7, -0.621_394),
            (-0.181_818_18, -0.179_840_82),
            (0.0, 0.0),
            (0.363_636_36, 0.348_413),
            (1.090_909_1, 0.797_209_7),
            (2.545_454_5, 0.987_770_4),
            (8.0, 0.999_999_8),
        ];
        for (x, y) in pairs {
            let got = at(&t, quantize(x, input));
            assert!((got - quantize(y, out)).abs() <= 2, "tanh({x}) = {got}");
        }
    }

    #[test]
    fn tflm_leaky_relu_tests() {
        // QuantizedActivationsOpTestLeakyReluInt8_1: alpha 0.5, (0.1, 0) in and out.
        let q = (0.1, 0);
        let t = leaky_relu(q, q, 0.5).unwrap();
        let pairs = [(0.0, 0.0), (1.0, 1.0), (3.0, 3.0), (-1.0, -0.5), (-2.0, -1.0)];
        for (x, y) in pairs {
            let got = dequantize(at(&t, quantize(x, q)), q);
            assert!((got - y).abs() <= 2.0 / 256.0, "leaky_relu({x}) = {got}");
        }
        // ...Int8_2: alpha 0.1, range [-5, 5 * 127/128] in and out, tolerance 5 * 2/256.
        let q = quant_from_min_max(-5.0, 5.0 * 127.0 / 128.0);
        let t = leaky_relu(q, q, 0.1).unwrap();
        let pairs =
            [(-5.0, -0.5), (-3.4, -0.34), (-1.8, -0.18), (-0.2, -0.02), (0.2, 0.2), (2.6, 2.6), (4.6, 4.6)];
        for (x, y) in pairs {
            let got = dequantize(at(&t, quantize(x, q)), q);
            assert!((got - y).abs() <= 10.0 / 256.0, "leaky_relu({x}) = {got}");
        }
    }

    #[test]
    fn tflm_hard_swish_test() {
        // SimpleHardSwishTestInt8's four (input range, output range) pairs and tolerance, on every
        // int8 input instead of 101 random ones.
        let pairs = [
            ((-0.375, 1.0), (-0.375, 1.0)),
            ((-2.0, 1.0), (-0.375, 1.0)),
            ((-5.0, 10.0), (-0.375, 10.0)),
            ((-40.0, 60.0), (-0.375, 60.0)),
        ];
        for ((in_min, in_max), (out_min, out_max)) in pairs {
            let (input, output) = (quant_from_min_max(in_min, in_max), quant_from_min_max(out_min, out_max));
            let tolerance = f32::max(in_max - in_min, out_max - out_min) * (1.5 / 256.0);
            let t = hard_swish(input, output).unwrap();
            for q in -128..=127 {
                let x = dequantize(q, input);
                let want = (x * (x + 3.0).clamp(0.0, 6.0) / 6.0).clamp(out_min, out_max);
                let got = dequantize(at(&t, q), output);
                assert!((got - want).abs() <= tolerance, "hard_swish({x}) = {got}, want {want}");
            }
        }
    }

    #[test]
    fn logistic_and_tanh_are_monotonic() {
        for input in [(0.066_193_46, 8), (0.1, 0), (1.0, -30), (0.003, 100), (16.0 / 256.0, 0)] {
            for t in [logistic(input, (1.0 / 256.0, -128)).unwrap(), tanh(input, (1.0 / 128.0, 0)).unwrap()] {
                for x in -128..127 {
                    assert!(at(&t, x) <= at(&t, x + 1), "{input:?}: not monotonic at {x}");
                }
            }
        }
        // Saturated ends with a large scale; exact midpoints at the zero point.
        let t = logistic((1.0, 3), (1.0 / 256.0, -128)).unwrap();
        assert_eq!((at(&t, -128), at(&t, 3), at(&t, 127)), (-128, 0, 127));
        let t = tanh((1.0, 3), (1.0 / 128.0, 0)).unwrap();
        assert_eq!((at(&t, -128), at(&t, 3), at(&t, 127)), (-128, 0, 127));
    }

    #[test]
    fn relu_of_zero_point_is_output_zero_point() {
        let input = (0.066_193_46, 8);
        for (output, min, max) in [
            ((0.030_945_487, -128), 0.0, f32::INFINITY),
            ((0.01, 5), 0.0, f32::INFINITY),
            ((2.0 / 255.0, -1), -1.0, 1.0),
        ] {
            let t = relu(input, output, min, max).unwrap();
            assert_eq!(at(&t, input.1), output.1, "{output:?} ({min}, {max})");
        }
        // RELU6 works in the input's quantization.
        assert_eq!(at(&relu(input, (0.023_529_412, -128), 0.0, 6.0).unwrap(), 8), 8);
        assert_eq!(at(&leaky_relu(input, (0.038, -81), 0.2).unwrap(), 8), -81);
    }

    #[test]
    fn unsupported_parameters_are_errors() {
        let q = (0.05, 0);
        let err = logistic(q, (1.0 / 255.0, -128)).unwrap_err();
        assert!(err.contains("LOGISTIC output"), "{err}");
        assert!(logistic(q, (1.0 / 256.0, 0)).is_err());
        assert!(tanh(q, (1.0 / 256.0, 0)).is_err());
        assert!(tanh(q, (1.0 / 128.0, -128)).is_err());
        let err = relu(q, q, 0.0, 5.0).unwrap_err();
        assert!(err.contains("relu bounds"), "{err}");
        let err = relu((0.0, 0), q, 0.0, 6.0).unwrap_err();
        assert!(err.contains("input scale"), "{err}");
        let err = relu(q, (0.1, 128), 0.0, f32::INFINITY).unwrap_err();
        assert!(err.contains("output zero point"), "{err}");
        assert!(leaky_relu(q, q, f32::NAN).is_err());
        assert!(logistic((1e-9, 0), (1.0 / 256.0, -128)).is_err());
        // HARD_SWISH needs output multiplier exponent <= 0: output scale >= about input / 128.
        assert!(hard_swish((1.0, 0), (1.0 / 1024.0, 0)).is_err());
    }

    #[derive(Debug, Clone, Copy)]
    enum Op {
        Logistic,
        Tanh,
        Relu,
        Relu6,
        ReluN1To1,
        LeakyRelu(f32),
        HardSwish,
    }

    fn build(op: Op, input: Quant, output: Quant) -> Result<Table, String> {
        match op {
            Op::Logistic => logistic(input, output),
            Op::Tanh => tanh(input, output),
            Op::Relu => relu(input, output, 0.0, f32::INFINITY),
            Op::Relu6 => relu(input, output, 0.0, 6.0),
            Op::ReluN1To1 => relu(input, output, -1.0, 1.0),
            Op::LeakyRelu(alpha) => leaky_relu(input, output, alpha),
            Op::HardSwish => hard_swish(input, output),
        }
    }

    /// Tables TFLM's own interpreter (the `tflite_micro` Python package) computed: one-op int8
    /// models converted from Keras layers by TensorFlow's converter (quantization calibrated on
    /// normal samples: (0, 2) and (0.5, 4), then a few from a wider sweep for the edges: a
    /// logistic saturating one step from its zero point, a tanh on a tiny scale, a hard swish
    /// with a positive output zero point, negative and above-one leaky slopes), fed all 256
    /// inputs; the table's bytes in hex, 32 inputs a line. RELU_N1_TO_1's are TensorFlow Lite's
    /// (LiteRT's), as TFLM has no kernel for it.
    const GOLDENS: &[(Op, Quant, Quant, &str)] = {
        use Op::*;
        &[
            (
                Logistic,
                (0.06619346, 8),
                (0.00390625, -128),
                concat!(
                    "dfe3e7ebeff3f8fc0004080d1115191d2125292d3034373b3e4144474a4d5052",
                    "5557595b5d5f6163656668696a6c6d6e6f707172737474757676777878797979",
                    "7a7a7b7b7b7c7c7c7c7d7d7d7d7d7e7e7e7e7e7e7e7e7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808081818181818181818181818181818181818282828282",
                    "82828283838383838484848485858586868787878888898a8a8b8c8c8d8e8f90",
                    "919293949697989a9b9d9fa1a3a5a7a9abaeb0b3b6b9bcbfc2c5c9ccd0d3d7db",
                ),
            ),
            (
                Logistic,
                (0.122630745, -5),
                (0.00390625, -128),
                concat!(
                    "262d343a40464b5055595d606467696c6e70727375767778797a7a7b7c7c7d7d",
                    "7d7e7e7e7e7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808181818181818181818282828283838384848586868788",
                    "898a8b8d8e90929497999ca0a3a7abb0b5bac0c6ccd3dae1e9f0f8000810171f",
                ),
            ),
            (
                Tanh,
                (0.06619346, 8),
                (0.0078125, 0),
                concat!(
                    "c2c9d0d7dfe7eff800081119212930373e444a5055595d6165686a6d6f717374",
                    "767778797a7b7b7c7c7d7d7e7e7e7e7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808081818181818181",
                    "818182828282838384848585868788898a8c8d8f919396989b9fa3a7abb0b6bc",
                ),
            ),
            (
                Tanh,
                (0.122630745, -5),
                (0.0078125, 0),
                concat!(
                    "46505960676c707376787a7b7c7d7e7e7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "80808181818181828283848586888a8d909499a0a7b0bac6d3e1f000101f2d3a",
                ),
            ),
            (
                Relu,
                (0.06619346, 8),
                (0.030945487, -128),
                concat!(
                    "808080808080808080828486898b8d8f919395989a9c9ea0a2a4a7a9abadafb1",
                    "b3b5b8babcbec0c2c4c7c9cbcdcfd1d3d6d8dadcdee0e2e5e7e9ebedeff1f4f6",
                    "f8fafcfe00020507090b0d0f111416181a1c1e20232527292b2d2f323436383a",
                    "3c3e41434547494b4d4f525456585a5c5e61636567696b6d70727476787a7c7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                ),
            ),
            (
                Relu,
                (0.122630745, -5),
                (0.0636636, -128),
                concat!(
                    "8a8c8d8f91939597999b9d9fa1a3a5a7a8aaacaeb0b2b4b6b8babcbec0c1c3c5",
                    "c7c9cbcdcfd1d3d5d7d9dbdcdee0e2e4e6e8eaeceef0f2f4f6f7f9fbfdff0103",
                    "0507090b0d0f10121416181a1c1e20222426282a2b2d2f31333537393b3d3f41",
                    "434446484a4c4e50525456585a5c5e5f61636567696b6d6f71737577787a7c7e",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808082848688",
                ),
            ),
            (
                Relu6,
                (0.06619346, 8),
                (0.023529412, -128),
                concat!(
                    "080808080808080808090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                    "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
                    "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
                    "6061626363636363636363636363636363636363636363636363636363636363",
                    "0808080808080808080808080808080808080808080808080808080808080808",
                    "0808080808080808080808080808080808080808080808080808080808080808",
                    "0808080808080808080808080808080808080808080808080808080808080808",
                    "0808080808080808080808080808080808080808080808080808080808080808",
                ),
            ),
            (
                Relu6,
                (0.122630745, -5),
                (0.023529412, -128),
                concat!(
                    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                    "202122232425262728292a2b2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c",
                    "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c",
                    "2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c",
                    "fbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfb",
                    "fbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfb",
                    "fbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfb",
                    "fbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfbfcfdfeff",
                ),
            ),
            (
                LeakyRelu(0.2),
                (0.06619346, 8),
                (0.037995085, -81),
                concat!(
                    "acacadadadaeaeaeafb1b2b4b6b8b9bbbdbfc0c2c4c6c7c9cbcdced0d2d4d5d7",
                    "d9dbdcdee0e2e3e5e7e8eaeceeeff1f3f5f6f8fafcfdff01030406080a0b0d0f",
                    "1112141618191b1d1e2022242527292b2c2e3032333537393a3c3e4041434547",
                    "484a4c4e4f51535556585a5b5d5f6162646668696b6d6f7072747677797b7d7e",
                    "8080808081818182828283838484848585858686868787878888888989898a8a",
                    "8b8b8b8c8c8c8d8d8d8e8e8e8f8f8f9090909191919292939393949494959595",
                    "9696969797979898989999999a9a9b9b9b9c9c9c9d9d9d9e9e9e9f9f9fa0a0a0",
                    "a1a1a2a2a2a3a3a3a4a4a4a5a5a5a6a6a6a7a7a7a8a8a8a9a9aaaaaaabababac",
                ),
            ),
            (
                LeakyRelu(0.2),
                (0.122630745, -5),
                (0.07545703, -88),
                concat!(
                    "b0b2b3b5b7b8babcbdbfc0c2c4c5c7c9cacccdcfd1d2d4d6d7d9dadcdedfe1e3",
                    "e4e6e7e9ebeceef0f1f3f4f6f8f9fbfdfe0001030506080a0b0d0e1012131517",
                    "181a1b1d1f2022242527282a2c2d2f3132343537393a3c3e3f4142444647494b",
                    "4c4e4f5153545658595b5c5e606163656668696b6d6e7072737576787a7b7d7f",
                    "8080808181818282828383838484848585858686868787878888888989898a8a",
                    "8a8a8b8b8b8c8c8c8d8d8d8e8e8e8f8f8f909090919191929292939393949494",
                    "959595969696979797979898989999999a9a9a9b9b9b9c9c9c9d9d9d9e9e9e9f",
                    "9f9fa0a0a0a1a1a1a2a2a2a3a3a3a4a4a4a4a5a5a5a6a6a6a7a7a7a8aaabadaf",
                ),
            ),
            (
                HardSwish,
                (0.06619346, 8),
                (0.03241608, -116),
                concat!(
                    "8586878788898a8b8c8d8e8f909293949697989a9b9d9fa0a2a4a6a8a9abadaf",
                    "b1b4b6b8babdbfc1c4c6c9cbced1d3d6d9dcdfe2e5e8eaeceef0f2f4f6f8fafc",
                    "fe00020407090b0d0f11131517191b1d1f21232527292b2d2f313335383a3c3e",
                    "40424446484a4c4e50525456585a5c5e60626466696b6d6f71737577797b7d7f",
                    "8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c",
                    "8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c",
                    "8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8c8b8a8988",
                    "8786868584848383828282818181818180808080818181818182828383838485",
                ),
            ),
            (
                HardSwish,
                (0.122630745, -5),
                (0.06513419, -122),
                concat!(
                    "8c8d8e9092939597999b9d9fa1a3a6a8abadb0b3b5b7b9bbbdbec0c2c4c6c8ca",
                    "cccecfd1d3d5d7d9dbdddee0e2e4e6e8eaeceeeff1f3f5f7f9fbfdfe00020406",
                    "080a0c0e0f11131517191b1d1e20222426282a2c2e2f31333537393b3d3f4042",
                    "4446484a4c4e4f51535557595b5d5f60626466686a6c6e6f71737577797b7d7f",
                    "8686868686868686868686868686868686868686868686868686868686868686",
                    "8686868686868686868686868686868686868686868686868686868686868686",
                    "8686868686868686868686868686868686868686868686868686868686868686",
                    "868686868584838382828181818080808080818181828283848485868788898a",
                ),
            ),
            (
                ReluN1To1,
                (0.06619346, 8),
                (0.007843138, -1),
                concat!(
                    "bbc4ccd5dde6eef7ff0710182129323a434b535c646d757e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "808080808080808080808080808080808080808080808080808089919aa2abb3",
                ),
            ),
            (
                ReluN1To1,
                (0.122630745, -5),
                (0.007843138, -1),
                concat!(
                    "4d5d6c7c7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "808080808080808080808080808080808080808292a1b1c0d0e0efff0f1e2e3e",
                ),
            ),
            (
                LeakyRelu(-0.3),
                (0.06619346, 8),
                (0.030945487, -128),
                concat!(
                    "858484838382818180828486898b8d8f919395989a9c9ea0a2a4a7a9abadafb1",
                    "b3b5b8babcbec0c2c4c7c9cbcdcfd1d3d6d8dadcdee0e2e5e7e9ebedeff1f4f6",
                    "f8fafcfe00020507090b0d0f111416181a1c1e20232527292b2d2f323436383a",
                    "3c3e41434547494b4d4f525456585a5c5e61636567696b6d70727476787a7c7f",
                    "d7d7d6d5d5d4d3d3d2d1d1d0d0cfcececdcccccbcacac9c9c8c7c7c6c5c5c4c3",
                    "c3c2c1c1c0c0bfbebebdbcbcbbbabab9b8b8b7b7b6b5b5b4b3b3b2b1b1b0afaf",
                    "aeaeadacacabaaaaa9a8a8a7a7a6a5a5a4a3a3a2a1a1a09f9f9e9e9d9c9c9b9a",
                    "9a9998989796969595949393929191908f8f8e8d8d8c8c8b8a8a898888878686",
                ),
            ),
            (
                LeakyRelu(-0.3),
                (0.122630745, -5),
                (0.0636636, -128),
                concat!(
                    "8a8c8d8f91939597999b9d9fa1a3a5a7a8aaacaeb0b2b4b6b8babcbec0c1c3c5",
                    "c7c9cbcdcfd1d3d5d7d9dbdcdee0e2e4e6e8eaeceef0f2f4f6f7f9fbfdff0103",
                    "0507090b0d0f10121416181a1c1e20222426282a2b2d2f31333537393b3d3f41",
                    "434446484a4c4e50525456585a5c5e5f61636567696b6d6f71737577787a7c7e",
                    "c7c7c6c5c5c4c4c3c2c2c1c1c0c0bfbebebdbdbcbcbbbabab9b9b8b7b7b6b6b5",
                    "b5b4b3b3b2b2b1b1b0afafaeaeadacacababaaaaa9a8a8a7a7a6a6a5a4a4a3a3",
                    "a2a2a1a0a09f9f9e9d9d9c9c9b9b9a9999989897979695959494939292919190",
                    "908f8e8e8d8d8c8c8b8a8a898988888786868585848383828281818082848688",
                ),
            ),
            (
                Logistic,
                (6.417109, 7),
                (0.00390625, -128),
                concat!(
                    "80808080808080007f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                    "8080808080808080808080808080808080808080808080808080808080808080",
                ),
            ),
            (
                Tanh,
                (0.00066003634, 16),
                (0.0078125, 0),
                concat!(
                    "ffffffffffffffffffffff000000000000000000000001010101010101010101",
                    "0101020202020202020202020202030303030303030303030303040404040404",
                    "0404040404040505050505050505050505050606060606060606060606060707",
                    "0707070707070707070808080808080808080808080909090909090909090909",
                    "f4f4f4f4f4f4f4f4f5f5f5f5f5f5f5f5f5f5f5f5f6f6f6f6f6f6f6f6f6f6f6f6",
                    "f7f7f7f7f7f7f7f7f7f7f7f7f8f8f8f8f8f8f8f8f8f8f8f8f9f9f9f9f9f9f9f9",
                    "f9f9f9fafafafafafafafafafafafafbfbfbfbfbfbfbfbfbfbfbfbfcfcfcfcfc",
                    "fcfcfcfcfcfcfcfdfdfdfdfdfdfdfdfdfdfdfdfefefefefefefefefefefefeff",
                ),
            ),
            (
                HardSwish,
                (0.15142526, 125),
                (0.00207137, 45),
                concat!(
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d11f1d5bda8978a81808080808894a5b9d1ec0b2d537d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                    "2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d",
                ),
            ),
            (
                LeakyRelu(-1.7),
                (0.09142844, -8),
                (0.07342391, -128),
                concat!(
                    "8a8b8c8e8f90919394959698999a9b9d9e9fa0a2a3a4a5a7a8a9aaacadaeafb1",
                    "b2b3b4b6b7b8b9bbbcbdbec0c1c2c3c4c6c7c8c9cbcccdced0d1d2d3d5d6d7d8",
                    "dadbdcdddfe0e1e2e4e5e6e7e9eaebeceeeff0f1f3f4f5f6f8f9fafbfdfeff00",
                    "020304050608090a0b0d0e0f10121314151718191a1c1d1e1f21222324262728",
                    "7e7c7a787673716f6d6b69676563605e5c5a585654524f4d4b49474543413f3c",
                    "3a38363432302e2b29272523211f1d1b18161412100e0c0a07050301fffdfbf9",
                    "f7f4f2f0eeeceae8e6e3e1dfdddbd9d7d5d3d0cecccac8c6c4c2c0bdbbb9b7b5",
                    "b3b1afacaaa8a6a4a2a09e9c99979593918f8d8b888684828081828485868789",
                ),
            ),
            (
                LeakyRelu(2.5),
                (0.09142844, -8),
                (0.15621425, 48),
                concat!(
                    "3535363637383839393a3b3b3c3c3d3d3e3f3f40404142424343444445464647",
                    "474849494a4a4b4c4c4d4d4e4e4f50505151525353545455555657575858595a",
                    "5a5b5b5c5c5d5e5e5f5f60616162626364646565666667686869696a6b6b6c6c",
                    "6d6d6e6f6f70707172727373747475767677777879797a7a7b7c7c7d7d7e7e7f",
                    "808283858688898b8c8e8f919293959698999b9c9e9fa1a2a4a5a6a8a9abacae",
                    "afb1b2b4b5b7b8b9bbbcbebfc1c2c4c5c7c8cacbcdcecfd1d2d4d5d7d8dadbdd",
                    "dee0e1e2e4e5e7e8eaebedeef0f1f3f4f5f7f8fafbfdfe000103040607080a0b",
                    "0d0e101113141617191a1c1d1e202123242627292a2c2d2f3031313232333434",
                ),
            ),
        ]
    };

    #[test]
    fn matches_tflm_interpreter() {
        for &(op, input, output, golden) in GOLDENS {
            let name = format!("{op:?} {input:?} -> {output:?}");
            assert_table_eq(&name, &build(op, input, output).unwrap(), &hex(golden));
        }
    }
}
