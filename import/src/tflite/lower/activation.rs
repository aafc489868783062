//! Standalone activations (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, LOGISTIC, TANH,
//! HARD_SWISH) and LOG_SOFTMAX. float32 layers get their own kernels; an int8 activation
//! becomes a 256-entry table (`nn.lookup.i8`) filled by TensorFlow Lite Micro's integer
//! arithmetic for every input value (`lut`). int8 LOG_SOFTMAX, a function of a whole row,
//! gets its own kernel (`nn.log_softmax.i8`, hostrt-dsp's `log_softmax`).

use hostrt_dsp::LogSoftmaxParams;

use super::super::lut;
use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, floats, ints};

impl Lowerer<'_, '_> {
    /// An element-wise activation of builtin `code`.
    pub(super) fn activation(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let elem = self.t(x).elem;
        if !matches!(elem, ElemType::F32 | ElemType::I8) {
            return Err(format!("{} input is not supported", elem.name()));
        }
        self.expect(out, "output", elem, None)?;
        if self.t(x).shape != self.t(out).shape {
            return Err(format!("input {:?} and output {:?} differ", self.t(x).shape, self.t(out).shape));
        }
        let alpha = || -> Result<f32, String> { Options::of(op, kind::LEAKY_RELU)?.f32(0, 0.0) };
        let range = |code: i32| match code {
            19 => (0.0, f32::MAX),
            21 => (0.0, 6.0),
            _ => (-1.0, 1.0),
        };
        if elem == ElemType::F32 {
            let (kernel, params) = match op.code {
                19..=21 => {
                    let (lo, hi) = range(op.code);
                    ("nn.clamp.f32", vec![("range", AttrSpec::Value(floats(&[lo, hi])))])
                }
                98 => ("nn.leaky_relu.f32", vec![("params", AttrSpec::Value(floats(&[alpha()?])))]),
                14 => ("nn.logistic.f32", vec![]),
                28 => ("nn.tanh.f32", vec![]),
                _ => ("nn.hard_swish.f32", vec![]),
            };
            return self.convert(op, (x, out), kernel, params);
        }
        let (xq, oq) = (self.quant(x, "input")?, self.quant(out, "output")?);
        let table = match op.code {
            19..=21 => {
                let (lo, hi) = range(op.code);
                lut::relu(xq, oq, lo, if op.code == 19 { f32::INFINITY } else { hi })?
            }
            98 => lut::leaky_relu(xq, oq, alpha()?)?,
            14 => lut::logistic(xq, oq)?,
            28 => lut::tanh(xq, oq)?,
            _ => lut::hard_swish(xq, oq)?,
        };
        let bytes = table.iter().map(|&v| v as u8).collect();
        self.convert(
            op,
            (x, out),
            "nn.lookup.i8",
            vec![("table", AttrSpec::Value(dense("i8", &[256], bytes)))],
        )
    }

    /// LOG_SOFTMAX over the last axis: `nn.log_softmax.f32`, or for int8 `nn.log_softmax.i8`
    /// with TensorFlow Lite Micro's `Prepare` parameters (beta 1) computed here.
    pub(super) fn log_softmax(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let elem = self.t(x).elem;
        if !matches!(elem, ElemType::F32 | ElemType::I8) {
            return Err(format!("{} input is not supported", elem.name()));
        }
        self.expect(out, "output", elem, None)?;
        let shape = self.t(x).shape.clone();
        let depth = shape.last().copied().unwrap_or(1);
        if shape != self.t(out).shape || depth == 0 {
            return Err(format!("input {shape:?} and output {:?} differ or are empty", self.t(out).shape));
        }
        let dims = vec![self.t(x).elements() / depth, depth];
        let params = if elem == ElemType::I8 {
            let (s, _) = self.quant(x, "input")?;
            let (os, oz) = self.quant(out, "output")?;
            // TFLite Micro's Prepare insists on its fixed output quantization.
            if os != 16.0 / 256.0 || oz != 127 {
                return Err(format!(
                    "int8 LOG_SOFTMAX output must have scale 16/256 and zero point 127 (as TensorFlow \
                     Lite Micro requires), has {os} and {oz}"
                ));
            }
            let p = LogSoftmaxParams::new(1.0, f64::from(s)).map_err(|e| e.to_string())?;
            let p = [
                p.input_multiplier,
                p.input_left_shift,
                p.reverse_scaling_divisor,
                p.reverse_scaling_right_shift,
                p.diff_min,
            ];
            Some(("params", AttrSpec::Value(ints(&p))))
        } else {
            None
        };
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![
            ("input", AttrSpec::Region { tensor: xr, dims: dims.clone() }),
            ("output", AttrSpec::Region { tensor: out, dims }),
        ];
        attrs.extend(params);
        self.push(op, &format!("nn.log_softmax.{}", elem.name()), out, attrs);
        Ok(())
    }
}
