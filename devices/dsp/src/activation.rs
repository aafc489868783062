//! Activations as int8 clamps: TFLite folds ReLU / ReLU6 / ReLU-N1-to-1 into the output
//! range of the layer before them (`CalculateActivationRangeQuantized`); [`clamp`] applies
//! such a range on its own.

use crate::error::{DspError, check_len};
use crate::quant::{ActivationRange, check_zero_point, round_half_away};

/// A fused activation function, as in a TFLite model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// Identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, -1), 1)`.
    ReluN1To1,
}

impl ActivationRange {
    /// The int8 range of `activation` on a tensor with this `scale` and `zero_point`, as TFLite's
    /// `CalculateActivationRangeQuantized` (real bounds quantized in f32, rounded half away).
    pub fn for_activation(
        activation: Activation,
        scale: f32,
        zero_point: i32,
    ) -> Result<ActivationRange, DspError> {
        check_zero_point(zero_point)?;
        if !(scale.is_finite() && scale > 0.0) {
            return Err(DspError::Param("scale not positive and finite"));
        }
        let quantize = |f: f32| {
            let q = round_half_away(f64::from(f / scale)).clamp(-(1 << 20), 1 << 20);
            zero_point + q as i32
        };
        let (min, max) = match activation {
            Activation::None => (-128, 127),
            Activation::Relu => (quantize(0.0).max(-128), 127),
            Activation::Relu6 => (quantize(0.0).max(-128), quantize(6.0).min(127)),
            Activation::ReluN1To1 => (quantize(-1.0).max(-128), quantize(1.0).min(127)),
        };
        ActivationRange::new(min, max)
    }
}

/// `output[i] = clamp(input[i], range)`: a standalone ReLU / ReLU6 on int8 data.
pub fn clamp(range: ActivationRange, input: &[i8], output: &mut [i8]) -> Result<(), DspError> {
    range.check()?;
    check_len("output", input.len(), output.len())?;
    for (o, &x) in output.iter_mut().zip(input) {
        *o = (i32::from(x)).clamp(range.min, range.max) as i8;
    }
    Ok(())
}

/// [`clamp`] in place.
pub fn clamp_in_place(range: ActivationRange, data: &mut [i8]) -> Result<(), DspError> {
    range.check()?;
    for x in data {
        *x = (i32::from(*x)).clamp(range.min, range.max) as i8;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_tflite() {
        let r = |a, s, z| ActivationRange::for_activation(a, s, z).unwrap();
        assert_eq!(r(Activation::None, 0.1, 5), ActivationRange::INT8);
        assert_eq!(r(Activation::Relu, 0.1, 5), ActivationRange { min: 5, max: 127 });
        // 6 / 0.05 = 120 -> -128 + 120.
        assert_eq!(r(Activation::Relu6, 0.05, -128), ActivationRange { min: -128, max: -8 });
        // 6 / 0.02 = 300 saturates at 127.
        assert_eq!(r(Activation::Relu6, 0.02, 0), ActivationRange { min: 0, max: 127 });
        assert_eq!(r(Activation::ReluN1To1, 0.25, 0), ActivationRange { min: -4, max: 4 });
        assert!(ActivationRange::for_activation(Activation::Relu, 0.0, 0).is_err());
        assert!(ActivationRange::for_activation(Activation::Relu, 1.0, 300).is_err());
    }

    #[test]
    fn clamps() {
        let relu = ActivationRange::new(-3, 127).unwrap();
        let mut out = [0i8; 4];
        clamp(relu, &[-128, -3, 0, 127], &mut out).unwrap();
        assert_eq!(out, [-3, -3, 0, 127]);
        assert!(clamp(relu, &[0; 3], &mut out).is_err());
        let mut data = [-100i8, 100];
        clamp_in_place(ActivationRange::new(-10, 10).unwrap(), &mut data).unwrap();
        assert_eq!(data, [-10, 10]);
        assert!(clamp_in_place(ActivationRange { min: 5, max: 4 }, &mut data).is_err());
    }
}
