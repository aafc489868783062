//! Standalone activations (RELU, RELU6, RELU_N1_TO_1, LEAKY_RELU, LOGISTIC, TANH,
//! HARD_SWISH) and LOG_SOFTMAX. float32 layers get their own kernels; an int8 activation
//! becomes a 256-entry table (`nn.lookup.i8`) filled by TensorFlow Lite Micro's integer
//! arithmetic for every input value (`lut`).

use super::super::lut;
use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, floats};

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

    pub(super) fn log_softmax(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(x, "input", ElemType::F32, None)
            .map_err(|e| format!("{e} (int8 LOG_SOFTMAX is not supported)"))?;
        self.expect(out, "output", ElemType::F32, None)?;
        let shape = self.t(x).shape.clone();
        let depth = shape.last().copied().unwrap_or(1);
        if shape != self.t(out).shape || depth == 0 {
            return Err(format!("input {shape:?} and output {:?} differ or are empty", self.t(out).shape));
        }
        let dims = vec![self.t(x).elements() / depth, depth];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("input", AttrSpec::Region { tensor: xr, dims: dims.clone() }),
            ("output", AttrSpec::Region { tensor: out, dims }),
        ];
        self.push(op, "nn.log_softmax.f32", out, attrs);
        Ok(())
    }
}
