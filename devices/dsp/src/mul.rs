//! int8 element-wise multiply: TFLite's reference `integer_ops` `Mul` (each operand offset,
//! the product rescaled to the output, offset and clamped), bit for bit. [`mul`] takes
//! operands of equal length; on Arm with the DSP extension four values go at a time.

use crate::error::{DspError, check_len};
use crate::quant::{ActivationRange, ChannelScale, multiply_by_quantized_multiplier};

/// The quantization of an int8 multiply, as TFLite's `ArithmeticParams` for `Mul`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MulParams {
    /// Negated zero point of each operand (`-128..=127` negated: `-127..=128`).
    pub input_offset: [i32; 2],
    /// Q31 multiplier of the output rescaling.
    pub output_multiplier: i32,
    /// Shift of the output rescaling (`-31..=30`).
    pub output_shift: i32,
    /// Output zero point.
    pub output_offset: i32,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl MulParams {
    /// Checks the offsets, the shift and the activation range.
    pub fn check(&self) -> Result<(), DspError> {
        if !self.input_offset.iter().all(|o| (-127..=128).contains(o)) {
            return Err(DspError::Param("input offset outside -127..=128"));
        }
        if !(-31..=30).contains(&self.output_shift) {
            return Err(DspError::Param("shift outside -31..=30"));
        }
        self.activation.check()
    }

    /// The output of one pair of values: `(x + offset0) * (y + offset1)` rescaled, offset
    /// (saturating) and clamped.
    #[inline]
    pub fn output(&self, x: i8, y: i8) -> i8 {
        let product = (self.input_offset[0] + i32::from(x)) * (self.input_offset[1] + i32::from(y));
        let v = multiply_by_quantized_multiplier(product, self.output_multiplier, self.output_shift);
        self.activation.clamp_i8(v.saturating_add(self.output_offset).clamp(-128, 127))
    }
}

/// `out[i] = x[i] * y[i]` in int8 (see [`MulParams`]); the three slices have equal lengths.
///
/// ```
/// use hostrt_dsp::{ActivationRange, MulParams, mul, quantize_multiplier};
///
/// // Operands at scale 1/8, output at scale 1/8, zero points 0: out = x * y / 8.
/// let (m, shift) = quantize_multiplier(1.0 / 8.0);
/// let p = MulParams {
///     input_offset: [0, 0],
///     output_multiplier: m,
///     output_shift: shift,
///     output_offset: 0,
///     activation: ActivationRange::INT8,
/// };
/// let mut out = [0i8; 3];
/// mul(&p, &[8, 16, -100], &[8, -4, 100], &mut out)?;
/// assert_eq!(out, [8, -8, -128]);
/// # Ok::<(), hostrt_dsp::DspError>(())
/// ```
#[inline(never)]
pub fn mul(p: &MulParams, x: &[i8], y: &[i8], out: &mut [i8]) -> Result<(), DspError> {
    p.check()?;
    check_len("y", x.len(), y.len())?;
    check_len("output", x.len(), out.len())?;
    let done = if cfg!(hostrt_arm_dsp) { words(p, x, y, out) } else { 0 };
    for ((&x, &y), o) in x[done..].iter().zip(&y[done..]).zip(&mut out[done..]) {
        *o = p.output(x, y);
    }
    Ok(())
}

/// Four values at a time, for checked arguments of equal lengths: each operand's word widened
/// into int16 pairs with its offset added (`SXTAB16`: the offsets keep every value in
/// `-255..=255`), the four products by `SMULBB`/`SMULTT` (as `SMLABB`/`SMLATT` onto 0), the
/// output stage's one rounding where the scale allows, and the four results clamped as one
/// word. Returns how many values it did (a multiple of four).
fn words(p: &MulParams, x: &[i8], y: &[i8], out: &mut [i8]) -> usize {
    use crate::arch::dsp::intrinsics::{clamp4, smlabb, smlatt, sxtab16, sxtab16_ror8};
    use crate::arch::loops::{offset_pair, word};
    let offsets = p.input_offset.map(offset_pair);
    let scale = ChannelScale::new(p.output_multiplier, p.output_shift);
    let act = p.activation.words();
    let (x4, _) = x.as_chunks::<4>();
    let (y4, _) = y.as_chunks::<4>();
    let (out4, _) = out.as_chunks_mut::<4>();
    for ((x, y), o) in x4.iter().zip(y4).zip(out4.iter_mut()) {
        let (x, y) = (word(x), word(y));
        let (x02, x13) = (sxtab16(offsets[0], x), sxtab16_ror8(offsets[0], x));
        let (y02, y13) = (sxtab16(offsets[1], y), sxtab16_ror8(offsets[1], y));
        let products = [smlabb(x02, y02, 0), smlabb(x13, y13, 0), smlatt(x02, y02, 0), smlatt(x13, y13, 0)];
        *o = clamp4(products.map(|v| scale.apply(v).saturating_add(p.output_offset)), act);
    }
    4 * x4.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::quantize_multiplier;
    use proptest::prelude::*;
    use std::vec::Vec;

    proptest! {
        #[test]
        fn words_are_the_reference(
            values in proptest::collection::vec(any::<(i8, i8)>(), 0..40),
            zx in -128i32..=127, zy in -128i32..=127, zo in -128i32..=127,
            scale in 1e-5f64..4.0, lo in -128i32..=0,
        ) {
            let (m, shift) = quantize_multiplier(scale);
            let p = MulParams {
                input_offset: [-zx, -zy],
                output_multiplier: m,
                output_shift: shift,
                output_offset: zo,
                activation: ActivationRange::new(lo, 127 + lo / 2).unwrap(),
            };
            let (x, y): (Vec<i8>, Vec<i8>) = values.into_iter().unzip();
            let want: Vec<i8> = x.iter().zip(&y).map(|(&a, &b)| p.output(a, b)).collect();
            // TFLite's steps, for the reference itself.
            for ((&a, &b), &w) in x.iter().zip(&y).zip(&want) {
                let raw = multiply_by_quantized_multiplier((i32::from(a) - zx) * (i32::from(b) - zy), m, shift);
                prop_assert_eq!(i32::from(w), (raw + zo).clamp(lo, 127 + lo / 2));
            }
            let mut got = std::vec![0i8; x.len()];
            let done = words(&p, &x, &y, &mut got);
            prop_assert_eq!(done, x.len() / 4 * 4);
            prop_assert_eq!(&got[..done], &want[..done]);
            mul(&p, &x, &y, &mut got).unwrap();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn bad_arguments_are_errors() {
        let p = MulParams {
            input_offset: [0, 0],
            output_multiplier: 1 << 30,
            output_shift: -3,
            output_offset: 0,
            activation: ActivationRange::INT8,
        };
        assert!(mul(&p, &[1; 4], &[1; 4], &mut [0; 4]).is_ok());
        assert!(mul(&p, &[1; 4], &[1; 3], &mut [0; 4]).is_err());
        assert!(mul(&p, &[1; 4], &[1; 4], &mut [0; 3]).is_err());
        assert!(mul(&MulParams { output_shift: 31, ..p }, &[1; 4], &[1; 4], &mut [0; 4]).is_err());
        assert!(mul(&MulParams { input_offset: [129, 0], ..p }, &[1; 4], &[1; 4], &mut [0; 4]).is_err());
    }
}
