//! float32 element-wise math (EXP, LOG, SQRT, RSQRT, ABS, NEG, FLOOR, CEIL, ROUND, SQUARE,
//! SIN, COS, ELU, GELU and the importer-only RECIPROCAL, ERF, SOFTPLUS, SELU, HARD_SIGMOID,
//! SIGN) to `nn.<fn>.f32`, and the importer-only normalizations to `nn.layer_norm.f32` and
//! `nn.instance_norm.f32`.

use super::super::model::OpInfo;
use super::super::ops::{ElemType, ext_op};
use super::super::options::{Options, ext};
use super::{AttrSpec, Lowerer, dense, floats};

impl Lowerer<'_, '_> {
    pub(super) fn math(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(x, "input", ElemType::F32, None)?;
        self.expect(out, "output", ElemType::F32, None)?;
        let o = Options::of(op, if op.code == 150 { op.options_type } else { 0 })?;
        let param = |id: u16, default: f64| o.ext(id).unwrap_or(default) as f32;
        let (name, params): (&str, Vec<f32>) = match op.code {
            47 => ("exp", vec![]),
            73 => ("log", vec![]),
            75 => ("sqrt", vec![]),
            76 => ("rsqrt", vec![]),
            101 => ("abs", vec![]),
            59 => ("neg", vec![]),
            8 => ("floor", vec![]),
            104 => ("ceil", vec![]),
            116 => ("round", vec![]),
            92 => ("square", vec![]),
            66 => ("sin", vec![]),
            108 => ("cos", vec![]),
            111 => ("elu", vec![param(ext::ALPHA, 1.0)]),
            // GeluOptions.approximate (field 0).
            150 => ("gelu", vec![f32::from(u8::from(o.bool(0)?))]),
            ext_op::RECIPROCAL => ("reciprocal", vec![]),
            ext_op::ERF => ("erf", vec![]),
            ext_op::SOFTPLUS => ("softplus", vec![]),
            ext_op::SIGN => ("sign", vec![]),
            ext_op::SELU => ("selu", vec![param(ext::ALPHA, 1.673_263_2), param(ext::BETA, 1.050_701)]),
            ext_op::HARD_SIGMOID => ("hard_sigmoid", vec![param(ext::ALPHA, 0.2), param(ext::BETA, 0.5)]),
            c => return Err(format!("internal: operator code {c} is not math")),
        };
        if self.t(x).shape != self.t(out).shape {
            return Err(format!("input {:?} and output {:?} differ", self.t(x).shape, self.t(out).shape));
        }
        let params =
            if params.is_empty() { vec![] } else { vec![("params", AttrSpec::Value(floats(&params)))] };
        self.convert(op, (x, out), &format!("nn.{name}.f32"), params)
    }

    /// LayerNormalization over the axes from `ext::AXIS` on, or InstanceNormalization over
    /// the spatial axes of `[N, C, ...]`.
    pub(super) fn normalization(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(x, "input", ElemType::F32, None)?;
        self.expect(out, "output", ElemType::F32, None)?;
        let xs = self.t(x).shape.clone();
        if xs != self.t(out).shape {
            return Err(format!("input {xs:?} and output {:?} differ", self.t(out).shape));
        }
        let o = Options::of(op, 0)?;
        let layer = op.code == ext_op::LAYER_NORM;
        let axis = if layer { o.ext(ext::AXIS).unwrap_or(-1.0) as i64 } else { 2 };
        let r = xs.len() as i64;
        if !(-r..r).contains(&axis) || (!layer && xs.len() < 3) {
            return Err(format!("axis {axis} does not fit input {xs:?}"));
        }
        let axis = axis.rem_euclid(r) as usize;
        let (rows, cols) = (xs[..axis].iter().product::<usize>(), xs[axis..].iter().product::<usize>());
        let per = if layer { cols } else { xs[1] };
        let mut params = Vec::new();
        for (i, what) in [(1, "scale"), (2, "bias")] {
            let t = self.input(op, i)?;
            self.expect(t, what, ElemType::F32, None)?;
            if self.t(t).elements() != per {
                return Err(format!("the {what} has {} values, expected {per}", self.t(t).elements()));
            }
            params.push(dense("f32", &[per], self.constant(t, what)?.to_vec()));
        }
        let eps = o.ext(ext::EPSILON).unwrap_or(1e-5) as f32;
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let scale = params.remove(0);
        let attrs = vec![
            ("bias", AttrSpec::Value(params.remove(0))),
            ("epsilon", AttrSpec::Value(floats(&[eps]))),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![rows, cols] }),
            ("output", AttrSpec::Region { tensor: out, dims: vec![rows, cols] }),
            ("scale", AttrSpec::Value(scale)),
        ];
        let kernel = if layer { "nn.layer_norm.f32" } else { "nn.instance_norm.f32" };
        self.push(op, kernel, out, attrs);
        Ok(())
    }
}
