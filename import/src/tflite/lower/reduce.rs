//! MEAN and SUM over constant axes, lowered to `nn.sum.*` with the reduced axes flagged;
//! float32 REDUCE_MAX, REDUCE_MIN and REDUCE_PROD to `nn.reduce_{max,min,prod}.f32`.
//! int8 parameters are TensorFlow Lite Micro's `QuantizedMeanOrSum`: the input/output scale
//! ratio as a fixed-point multiplier, for MEAN with 1/count folded into it.

use hostrt_dsp::quantize_multiplier;

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, floats, ints};

const RANK: usize = 6;

impl Lowerer<'_, '_> {
    /// A reduction: `mean`, `sum`, or float32 `max`, `min`, `prod`.
    pub(super) fn reduce(&mut self, op: &OpInfo<'_>, how: &str) -> Result<(), String> {
        let mean = how == "mean";
        let folded = !matches!(how, "mean" | "sum");
        let keep_dims = Options::of(op, kind::REDUCER)?.bool(0)?;
        let (x, a, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let elem = self.t(x).elem;
        if !matches!(elem, ElemType::F32 | ElemType::I8) || (folded && elem != ElemType::F32) {
            return Err(format!("{} input is not supported", elem.name()));
        }
        self.expect(out, "output", elem, None)?;
        let xs = self.t(x).shape.clone();
        if xs.len() > RANK {
            return Err(format!("input {xs:?} has more than {RANK} dims"));
        }
        let mut flags = vec![0; RANK];
        let lead = RANK - xs.len();
        for v in self.int_constant(a, "axis")? {
            let r = xs.len() as i64;
            if !(-r..r).contains(&v) {
                return Err(format!("axis {v} is outside input {xs:?}"));
            }
            flags[lead + v.rem_euclid(r) as usize] = 1;
        }
        let kept: Vec<usize> = xs
            .iter()
            .enumerate()
            .filter_map(|(k, &d)| match flags[lead + k] {
                0 => Some(d),
                _ if keep_dims => Some(1),
                _ => None,
            })
            .collect();
        if kept != self.t(out).shape {
            return Err(format!("reducing {xs:?} gives {kept:?}, not the output's {:?}", self.t(out).shape));
        }
        let count: usize =
            xs.iter().enumerate().filter(|(k, _)| flags[lead + k] == 1).map(|(_, &d)| d).product();
        let mut dims = vec![1usize; lead];
        dims.extend(&xs);
        let dims: Vec<i32> = dims.iter().map(|&d| d as i32).collect();
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![("dims", AttrSpec::Value(ints(&dims)))];
        if elem == ElemType::F32 && !folded {
            let divisor = if mean { count as f32 } else { 1.0 };
            attrs.push(("divisor", AttrSpec::Value(floats(&[divisor]))));
        }
        attrs.push(("input", AttrSpec::Offset(xr)));
        attrs.push(("output", AttrSpec::Offset(out)));
        if elem == ElemType::I8 {
            let ((xs_, xz), (os, oz)) = (self.quant(x, "input")?, self.quant(out, "output")?);
            let (mut m, mut s) = quantize_multiplier(f64::from(xs_) / f64::from(os));
            if mean && count > 0 {
                let shift = (63 - (count as u64).leading_zeros() as i32).min(32).min(31 + s);
                m = ((i64::from(m) << shift) / count as i64) as i32;
                s -= shift;
            }
            attrs.push(("quant", AttrSpec::Value(ints(&[xz, oz, m, s]))));
        }
        attrs.push(("reduce", AttrSpec::Value(ints(&flags))));
        let kernel = if folded { format!("nn.reduce_{how}.f32") } else { format!("nn.sum.{}", elem.name()) };
        self.push(op, &kernel, out, attrs);
        Ok(())
    }
}
