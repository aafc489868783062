//! Element-wise operators: broadcasting arithmetic (Add, Sub, Mul, PRelu and the variadic
//! Max, Min, Sum, Mean), activations, Clip, and Softmax/LogSoftmax over any axis. An
//! NHWC-stored operand keeps the result NHWC; a constant operand is permuted to match.

use super::super::model::{Node, Tensor};
use super::fold::permuted;
use super::layers::shape_of;
use super::{Attrs, Converter, Layout, Rt, TO_NHWC, Val, axis, broadcast};
use crate::tflite::ops::ElemType;
use crate::tflite::options::kind;

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
        let _ = n;
        let out = self.new_rt(name, elem, dims, layout);
        self.emit(code, options, vec![], vec![ta, tb], vec![out.t]);
        Ok(out)
    }

    pub(super) fn binary(&mut self, n: &Node) -> Result<(), String> {
        let (a, b) = (self.val(n, 0)?, self.val(n, 1)?);
        let (code, options) = match n.op_type.as_str() {
            "Add" => (0, kind::ADD),
            "Sub" => (41, kind::SUB),
            "Mul" => (18, kind::MUL),
            _ => (54, 0),
        };
        if self.opset < 7 && n.int("broadcast", 0)? != 0 {
            return Err("legacy broadcast attribute is not supported".into());
        }
        let out = self.broadcasting(n, code, options, &a, &b, &Self::out_name(n))?;
        self.set(n, 0, out);
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

    pub(super) fn activation(&mut self, n: &Node) -> Result<(), String> {
        match n.op_type.as_str() {
            "Relu" => self.unary(n, 19, 0, vec![]),
            "Sigmoid" => self.unary(n, 14, 0, vec![]),
            "Tanh" => self.unary(n, 28, 0, vec![]),
            "HardSwish" => self.unary(n, 117, 0, vec![]),
            _ => {
                let alpha = n.float("alpha", 0.01)?;
                self.unary(n, 98, kind::LEAKY_RELU, vec![(0, f64::from(alpha))])
            }
        }
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
