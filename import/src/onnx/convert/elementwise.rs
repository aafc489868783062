//! Element-wise operators: broadcasting arithmetic (Add, Sub, Mul, PRelu and the variadic
//! Max, Min, Sum, Mean), activations, Clip, and Softmax/LogSoftmax over any axis. An
//! NHWC-stored operand keeps the result NHWC; a constant operand is permuted to match.

use super::super::model::{Node, Tensor};
use super::fold::broadcast_to;
use super::fold::permuted;
use super::layers::shape_of;
use super::{Attrs, Converter, Layout, Rt, TO_NHWC, Val, axis, broadcast};
use crate::tflite::ops::{ElemType, ext_op};
use crate::tflite::options::{ext, kind};

/// A float32 constant broadcast to `dims`.
fn expand_to(t: &Tensor, dims: &[usize]) -> Result<Tensor, String> {
    if t.elem != ElemType::F32 || broadcast(&t.dims, dims)? != dims {
        return Err(format!("{} {:?} does not broadcast to {dims:?}", t.elem.name(), t.dims));
    }
    Ok(broadcast_to(t, dims))
}

impl Converter {
    /// `a op b` with numpy broadcasting, as TensorFlow Lite operator `code`.
    fn broadcasting(
        &mut self,
        n: &Node,
        code: i32,
        options: u8,
        a: &Val,
        b: &Val,
        name: &str,
    ) -> Result<Rt, String> {
        self.broadcasting_act(n, (code, options, 0), a, b, name)
    }

    /// `a op b` with numpy broadcasting, as TensorFlow Lite operator `code` with fused
    /// activation `act` (TensorFlow Lite's code; ADD, SUB and MUL take one).
    fn broadcasting_act(
        &mut self,
        n: &Node,
        (code, options, act): (i32, u8, i8),
        a: &Val,
        b: &Val,
        name: &str,
    ) -> Result<Rt, String> {
        let (sa, sb) = (shape_of(a), shape_of(b));
        let dims = broadcast(&sa, &sb)?;
        let nhwc = |v: &Val| matches!(v, Val::Rt(r) if r.layout == Layout::Nhwc);
        let fits = |v: &Val| match v {
            Val::Rt(r) => r.layout == Layout::Nhwc,
            Val::Const(c) => c.dims.len() <= 4,
        };
        let layout = if dims.len() == 4 && (nhwc(a) || nhwc(b)) && fits(a) && fits(b) {
            Layout::Nhwc
        } else {
            Layout::Plain
        };
        let operand = |c: &mut Self, v: &Val, k: usize| -> usize {
            match (v, layout) {
                (Val::Const(t), Layout::Nhwc) => {
                    let mut dims = vec![1; 4 - t.dims.len()];
                    dims.extend(&t.dims);
                    let four = Tensor { dims, ..t.clone() };
                    c.const_rt(&permuted(&four, &TO_NHWC), &format!("{name}:in{k}")).t
                }
                _ => c.in_layout(v, layout, &format!("{name}:in{k}")),
            }
        };
        let (ta, tb) = (operand(self, a, 0), operand(self, b, 1));
        let elem = self.out.tensors[ta].elem;
        if elem != self.out.tensors[tb].elem {
            return Err(format!("operands of {} and {}", elem.name(), self.out.tensors[tb].elem.name()));
        }
        if elem != ElemType::F32 {
            return Err(format!("{} {} is not supported (arithmetic is float32)", elem.name(), n.op_type));
        }
        let out = self.new_rt(name, elem, dims, layout);
        // ONNX arithmetic reaches infinities; TensorFlow Lite's clamps to the finite range.
        let mut fields = vec![(ext::UNBOUNDED, 1.0)];
        if act != 0 {
            fields.push((0, f64::from(act)));
        }
        self.emit(code, options, fields, vec![ta, tb], vec![out.t]);
        Ok(out)
    }

    pub(super) fn binary(&mut self, n: &Node) -> Result<(), String> {
        let (a, b) = (self.val(n, 0)?, self.val(n, 1)?);
        let (code, options) = match n.op_type.as_str() {
            "Add" => (0, kind::ADD),
            "Sub" => (41, kind::SUB),
            "Mul" => (18, kind::MUL),
            "Div" => (42, kind::DIV),
            "Pow" => (78, 0),
            _ => (54, 0),
        };
        if self.opset < 7 && n.int("broadcast", 0)? != 0 {
            return Err("legacy broadcast attribute is not supported".into());
        }
        // Pow's exponent may be an integer: a constant one is converted at import.
        let b = match b {
            Val::Const(t) if n.op_type == "Pow" && t.elem != ElemType::F32 => {
                Val::Const(Tensor::from_f64s(ElemType::F32, t.dims.clone(), &t.f64s()))
            }
            b => b,
        };
        // An Add's lone Relu or Clip to [0, 6] runs inside it (residual blocks).
        let fused = if code == 0 { self.fused_activation(n) } else { None };
        let (act, name) = fused.as_ref().map_or((0, Self::out_name(n)), |(a, m)| (*a, Self::out_name(m)));
        let out = self.broadcasting_act(n, (code, options, act), &a, &b, &name)?;
        self.set_fused(n, fused, out);
        Ok(())
    }

    /// Max, Min, Sum and Mean of any number of inputs: a chain of binary operators.
    pub(super) fn variadic(&mut self, n: &Node) -> Result<(), String> {
        let (code, options) = match n.op_type.as_str() {
            "Max" => (55, kind::MAXIMUM_MINIMUM),
            "Min" => (57, kind::MAXIMUM_MINIMUM),
            _ => (0, kind::ADD),
        };
        let name = Self::out_name(n);
        let mut acc = self.val(n, 0)?;
        let count = n.inputs.len();
        for i in 1..count {
            let b = self.val(n, i)?;
            let part =
                if i + 1 == count && n.op_type != "Mean" { name.clone() } else { format!("{name}:{i}") };
            acc = Val::Rt(self.broadcasting(n, code, options, &acc, &b, &part)?);
        }
        if n.op_type == "Mean" && count > 1 {
            let scale = Val::Const(Tensor::from_f64s(ElemType::F32, vec![1], &[1.0 / count as f64]));
            acc = Val::Rt(self.broadcasting(n, 18, kind::MUL, &acc, &scale, &name)?);
        }
        match acc {
            Val::Rt(r) => self.set(n, 0, r),
            // One input: the value itself.
            v => {
                if let Some(Some(o)) = n.outputs.first() {
                    self.values.insert(o.clone(), v);
                }
            }
        }
        Ok(())
    }

    /// A unary operator of TensorFlow Lite code `code` that keeps the input's layout.
    fn unary(&mut self, n: &Node, code: i32, options: u8, fields: Vec<(u16, f64)>) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let out = self.new_rt(&Self::out_name(n), x.elem, x.shape.clone(), x.layout);
        self.emit(code, options, fields, vec![x.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// GELU as exporters before opset 20 write it, `(x · (erf(x / √2) + 1)) · ½`: from its
    /// first node `n` (`Div` by √2 or `Mul` by 1/√2), the `Erf`, `Add`, `Mul` and `Mul` that
    /// follow, each the sole reader of the one before. One exact GELU kernel then replaces
    /// five passes over the tensor (onnxruntime fuses the same chain).
    pub(super) fn gelu_chain(&self, n: &Node) -> Option<[&Node; 4]> {
        let close = |v: f64, want: f64| (v - want).abs() <= 1e-6 * want;
        let x = n.inputs.first()?.as_ref()?;
        let c = self.const_scalar(n.inputs.get(1)?.as_ref()?)?;
        let scaled = match n.op_type.as_str() {
            "Div" => close(c, std::f64::consts::SQRT_2),
            "Mul" => close(c, std::f64::consts::FRAC_1_SQRT_2),
            _ => false,
        };
        let x_rt = matches!(self.values.get(x), Some(Val::Rt(r)) if r.elem == ElemType::F32);
        if !scaled || !x_rt {
            return None;
        }
        let erf = self.sole_consumer(n, "Erf")?;
        let add = self.sole_consumer(erf, "Add")?;
        let mul = self.sole_consumer(add, "Mul")?;
        let half = self.sole_consumer(mul, "Mul")?;
        let out = |m: &Node| m.outputs.first().cloned().flatten();
        let one = self.const_scalar(Self::other_input(add, &out(erf)?)?)? == 1.0;
        let times_x = Self::other_input(mul, &out(add)?)? == x;
        let halved = self.const_scalar(Self::other_input(half, &out(mul)?)?)? == 0.5;
        (one && times_x && halved).then_some([erf, add, mul, half])
    }

    /// The chain of [`Converter::gelu_chain`] as one exact GELU, located at its last node.
    pub(super) fn gelu_fused(&mut self, n: &Node) -> Result<(), String> {
        let chain = self.gelu_chain(n).ok_or("not a GELU chain")?;
        let last = chain[3].clone();
        let skipped: Vec<usize> = chain.iter().map(|m| m.index).collect();
        self.skip.extend(skipped);
        let gelu = Node { op_type: "Gelu".into(), inputs: n.inputs[..1].to_vec(), ..last };
        self.node = gelu.index;
        self.unary(&gelu, 150, 0, vec![(0, 0.0)])
    }

    pub(super) fn activation(&mut self, n: &Node) -> Result<(), String> {
        let f = |name: &str, default: f32| n.float(name, default).map(f64::from);
        match n.op_type.as_str() {
            "Relu" => self.unary(n, 19, 0, vec![]),
            "Sigmoid" => self.unary(n, 14, 0, vec![]),
            "Tanh" => self.unary(n, 28, 0, vec![]),
            "HardSwish" => self.unary(n, 117, 0, vec![]),
            "Exp" => self.unary(n, 47, 0, vec![]),
            "Log" => self.unary(n, 73, 0, vec![]),
            "Sqrt" => self.unary(n, 75, 0, vec![]),
            "Abs" => self.unary(n, 101, 0, vec![]),
            "Neg" => self.unary(n, 59, 0, vec![]),
            "Floor" => self.unary(n, 8, 0, vec![]),
            "Ceil" => self.unary(n, 104, 0, vec![]),
            "Round" => self.unary(n, 116, 0, vec![]),
            "Sin" => self.unary(n, 66, 0, vec![]),
            "Cos" => self.unary(n, 108, 0, vec![]),
            "Reciprocal" => self.unary(n, ext_op::RECIPROCAL, 0, vec![]),
            "Erf" => self.unary(n, ext_op::ERF, 0, vec![]),
            "Softplus" => self.unary(n, ext_op::SOFTPLUS, 0, vec![]),
            "Sign" => self.unary(n, ext_op::SIGN, 0, vec![]),
            "Elu" => self.unary(n, 111, 0, vec![(ext::ALPHA, f("alpha", 1.0)?)]),
            "Selu" => self.unary(
                n,
                ext_op::SELU,
                0,
                vec![(ext::ALPHA, f("alpha", 1.673_263_2)?), (ext::BETA, f("gamma", 1.050_701)?)],
            ),
            "HardSigmoid" => self.unary(
                n,
                ext_op::HARD_SIGMOID,
                0,
                vec![(ext::ALPHA, f("alpha", 0.2)?), (ext::BETA, f("beta", 0.5)?)],
            ),
            "Gelu" => {
                let tanh = match n.string("approximate", "none")?.as_str() {
                    "none" => 0.0,
                    "tanh" => 1.0,
                    other => return Err(format!("approximate '{other}' is not known")),
                };
                self.unary(n, 150, 0, vec![(0, tanh)])
            }
            _ => {
                let alpha = n.float("alpha", 0.01)?;
                self.unary(n, 98, kind::LEAKY_RELU, vec![(0, f64::from(alpha))])
            }
        }
    }

    /// LayerNormalization (opset 17) and InstanceNormalization with constant scale and bias.
    pub(super) fn normalization(&mut self, n: &Node) -> Result<(), String> {
        let stats = (1..n.outputs.len()).any(|i| Self::used(n, i));
        if stats && n.op_type != "LayerNormalization" {
            return Err("outputs past the first are not supported".into());
        }
        let x = self.rt(n, 0)?;
        let x = self.plain(&x);
        let layer = n.op_type == "LayerNormalization";
        let r = x.shape.len();
        let axis = if layer { axis(n.int("axis", -1)?, r)? } else { 2 };
        if !layer && r < 3 {
            return Err(format!("input {:?} is not [N, C, spatial...]", x.shape));
        }
        // Scale and bias per normalized element (LayerNormalization broadcasts them there).
        let per: Vec<usize> = if layer { x.shape[axis..].to_vec() } else { vec![x.shape[1]] };
        let name = Self::out_name(n);
        let mut params = Vec::new();
        for (i, what) in [(1, "scale"), (2, "bias")] {
            let t = match self.opt_val(n, i)? {
                Some(_) => self.constant(n, i, what)?,
                None => Tensor::from_f64s(ElemType::F32, vec![1], &[0.0]),
            };
            let full = expand_to(&t, &per)?;
            params.push(self.tensor(&format!("{name}:{what}"), ElemType::F32, per.clone(), Some(full.data)));
        }
        let out = self.new_rt(&name, ElemType::F32, x.shape.clone(), Layout::Plain);
        let eps = f64::from(n.float("epsilon", 1e-5)?);
        let code = if layer { ext_op::LAYER_NORM } else { ext_op::INSTANCE_NORM };
        let fields = vec![(ext::AXIS, axis as f64), (ext::EPSILON, eps)];
        self.emit(code, 0, fields, vec![x.t, params[0], params[1]], vec![out.t]);
        self.set(n, 0, out);
        if stats {
            self.layer_norm_stats(n, &x, axis, eps)?;
        }
        Ok(())
    }

    /// LayerNormalization's Mean and InvStdDev outputs (reduced axes kept as 1):
    /// `mean(x)` and `1 / sqrt(mean((x − mean)²) + ε)`, from mean, subtract, multiply, add
    /// and reciprocal-square-root operators.
    fn layer_norm_stats(&mut self, n: &Node, x: &Rt, axis: usize, eps: f64) -> Result<(), String> {
        let name = Self::out_name(n);
        let r = x.shape.len();
        let mut kept = x.shape.clone();
        kept[axis..].fill(1);
        let axes: Vec<i64> = (axis as i64..r as i64).collect();
        let mean_of = |c: &mut Self, v: &Rt, what: &str| {
            let a = c.i32_tensor(&format!("{name}:{what}:axes"), &axes);
            let out = c.new_rt(&format!("{name}:{what}"), ElemType::F32, kept.clone(), Layout::Plain);
            c.emit(40, kind::REDUCER, vec![(0, 1.0)], vec![v.t, a], vec![out.t]);
            out
        };
        let mean = mean_of(self, x, "mean");
        let d = self.broadcasting(
            n,
            41,
            kind::SUB,
            &Val::Rt(x.clone()),
            &Val::Rt(mean.clone()),
            &format!("{name}:d"),
        )?;
        let sq =
            self.broadcasting(n, 18, kind::MUL, &Val::Rt(d.clone()), &Val::Rt(d), &format!("{name}:d2"))?;
        let var = mean_of(self, &sq, "var");
        let e = Val::Const(Tensor::from_f64s(ElemType::F32, vec![1], &[eps]));
        let ve = self.broadcasting(n, 0, kind::ADD, &Val::Rt(var), &e, &format!("{name}:var_eps"))?;
        let inv = self.new_rt(&format!("{name}:inv_std"), ElemType::F32, kept.clone(), Layout::Plain);
        self.emit(76, 0, vec![], vec![ve.t], vec![inv.t]);
        self.set(n, 1, mean);
        self.set(n, 2, inv);
        Ok(())
    }

    pub(super) fn clip(&mut self, n: &Node) -> Result<(), String> {
        let bound = |c: &Self, i: usize, attr: &str, default: f32| -> Result<f32, String> {
            if c.opset < 11 {
                return n.float(attr, default);
            }
            match c.opt_val(n, i)? {
                None => Ok(default),
                Some(Val::Const(t)) if t.elements() == 1 => Ok(t.f64s()[0] as f32),
                Some(_) => Err(format!("the {attr} (input {i}) must be a one-value constant")),
            }
        };
        let (lo, hi) = (bound(self, 1, "min", f32::MIN)?, bound(self, 2, "max", f32::MAX)?);
        match (lo, hi) {
            (0.0, 6.0) => return self.unary(n, 21, 0, vec![]),
            (-1.0, 1.0) => return self.unary(n, 20, 0, vec![]),
            (0.0, f32::MAX) => return self.unary(n, 19, 0, vec![]),
            _ => {}
        }
        let x = self.val(n, 0)?;
        let name = Self::out_name(n);
        let scalar = |v: f32| Val::Const(Tensor::from_f64s(ElemType::F32, vec![1], &[f64::from(v)]));
        let low = self.broadcasting(n, 55, kind::MAXIMUM_MINIMUM, &x, &scalar(lo), &format!("{name}:low"))?;
        let out = self.broadcasting(n, 57, kind::MAXIMUM_MINIMUM, &Val::Rt(low), &scalar(hi), &name)?;
        self.set(n, 0, out);
        Ok(())
    }

    /// Softmax and LogSoftmax: over the last axis directly; over another axis (opset 13)
    /// between two transposes; before opset 13, over the input flattened to 2-D at `axis`.
    pub(super) fn softmax(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let x = self.plain(&x);
        let r = x.shape.len();
        let a = axis(n.int("axis", if self.opset < 13 { 1 } else { -1 })?, r)?;
        let (code, options, fields) =
            if n.op_type == "Softmax" { (25, kind::SOFTMAX, vec![(0, 1.0)]) } else { (50, 0, vec![]) };
        let name = Self::out_name(n);
        if self.opset < 13 || a == r - 1 {
            // [prod(before), prod(from axis)] has the same bytes as the input.
            let rows: usize = x.shape[..a].iter().product();
            let cols: usize = x.shape[a..].iter().product();
            let flat = self.new_rt(&format!("{name}:2d"), x.elem, vec![rows, cols], Layout::Plain);
            self.emit(22, 0, vec![], vec![x.t], vec![flat.t]);
            let y = self.new_rt(&format!("{name}:2d_out"), x.elem, vec![rows, cols], Layout::Plain);
            self.emit(code, options, fields, vec![flat.t], vec![y.t]);
            let out = self.new_rt(&name, x.elem, x.shape.clone(), Layout::Plain);
            self.emit(22, 0, vec![], vec![y.t], vec![out.t]);
            self.set(n, 0, out);
            return Ok(());
        }
        // Swap the axis with the last one, and back.
        let mut perm: Vec<i64> = (0..r as i64).collect();
        perm.swap(a, r - 1);
        let swapped: Vec<usize> = perm.iter().map(|&p| x.shape[p as usize]).collect();
        let p1 = self.i32_tensor(&format!("{name}:perm"), &perm);
        let t = self.new_rt(&format!("{name}:swapped"), x.elem, swapped.clone(), Layout::Plain);
        self.emit(39, 0, vec![], vec![x.t, p1], vec![t.t]);
        let y = self.new_rt(&format!("{name}:swapped_out"), x.elem, swapped, Layout::Plain);
        self.emit(code, options, fields, vec![t.t], vec![y.t]);
        let p2 = self.i32_tensor(&format!("{name}:perm_back"), &perm);
        let out = self.new_rt(&name, x.elem, x.shape.clone(), Layout::Plain);
        self.emit(39, 0, vec![], vec![y.t, p2], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }
}
