//! Quantized graphs in ONNX's QDQ form (onnxruntime's quantizer): `DequantizeLinear →
//! op → QuantizeLinear` groups run as int8 kernels with TensorFlow Lite's arithmetic, shared
//! with the `.tflite` path (docs/onnx.md).
//!
//! - `DequantizeLinear` is lazy: its output is remembered as "these int8 values under this
//!   scale and zero point" (`Deq`) and becomes a float tensor (a DEQUANTIZE, or a folded
//!   constant) only when an operator that is not fused needs it.
//! - A Conv, MatMul or Gemm whose data and weights are dequantized int8 (bias int32) and whose
//!   one consumer is a `QuantizeLinear` (through a Relu or a Clip to [0, 6], which become the
//!   fused activation) is one int8 layer: per-channel weights, the output's scale and zero
//!   point from the `QuantizeLinear`. So is an Add or Mul of two dequantized values, a
//!   GlobalAveragePool, and a Softmax over the last axis.
//! - `Shape` and `Size` of a dequantized value read its shape; nothing is dequantized.
//! - Reshape, Flatten, Squeeze, Unsqueeze, Transpose, MaxPool and Pad commute with
//!   dequantization: they run on the int8 values and their output stays lazy with the same
//!   parameters (a constant Pad's value quantized as its input).
//! - `QuantizeLinear` of a lazy value with the same parameters is that int8 value; with
//!   others, a requantization; of a float value, a QUANTIZE.
//! - uint8 values (onnxruntime's default for activations) are held as int8 with the zero
//!   point moved by 128, which represents the same real numbers.

use std::collections::HashSet;

use super::super::model::{Node, Tensor};
use super::layers::LayerOut;
use super::{Attrs, Converter, Layout, Rt, Val, axis};
use crate::tflite::model::Quant;
use crate::tflite::ops::ElemType;

/// A lazily dequantized value: the ONNX value holding the int8 data and its parameters
/// (per-tensor, or per slice along `axis` for constants).
#[derive(Clone, Debug)]
pub(super) struct Deq {
    pub q: String,
    pub scale: Vec<f32>,
    /// Zero points as the int8 data holds them (uint8 ones moved by −128).
    pub zp: Vec<i64>,
    pub axis: usize,
}

/// The ops that commute with dequantization (run on the int8 values).
const TRANSPARENT: &[&str] = &["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Pad"];

/// The ops that only move an int8 value's elements, so their outputs share its quantization.
pub(super) const MOVEMENT: &[&str] = &[
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "MaxPool",
    "Pad",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "Tile",
    "Expand",
    "Identity",
    "Resize",
];

impl Converter {
    /// Handles `n` if it is part of a QDQ group: `Ok(true)` when it was converted here.
    pub(super) fn qdq(&mut self, n: &Node) -> Result<bool, String> {
        match n.op_type.as_str() {
            "DequantizeLinear" => self.dequantize_linear(n).map(|()| true),
            "QuantizeLinear" => self.quantize_linear(n),
            "Conv" | "MatMul" | "Gemm" => self.fused_layer(n),
            "Add" | "Mul" => self.fused_binary(n),
            "GlobalAveragePool" | "Softmax" => self.fused_unary(n),
            "Shape" | "Size" => match self.lazy_rt(n, 0) {
                // Only the shape of a lazily dequantized value: nothing is dequantized.
                Some((x, _)) => {
                    let t = super::fold::shape_or_size(n, &x.shape)?;
                    if let Some(Some(name)) = n.outputs.first() {
                        self.values.insert(name.clone(), Val::Const(t));
                    }
                    Ok(true)
                }
                None => Ok(false),
            },
            op if TRANSPARENT.contains(&op) => self.transparent(n),
            _ => Ok(false),
        }
    }

    /// Makes every lazily dequantized input of `n` a float value.
    pub(super) fn materialize_inputs(&mut self, n: &Node) -> Result<(), String> {
        n.inputs.iter().flatten().try_for_each(|name| self.materialize(name))
    }

    /// Makes the lazily dequantized value `name` (if it is one) a float value.
    pub(super) fn materialize(&mut self, name: &str) -> Result<(), String> {
        if !self.values.contains_key(name)
            && let Some(d) = self.deq.get(name).cloned()
        {
            let v = self.dequantized(name, &d)?;
            self.values.insert(name.to_string(), v);
        }
        Ok(())
    }

    /// The float value of `d`.
    fn dequantized(&mut self, name: &str, d: &Deq) -> Result<Val, String> {
        match self.values.get(&d.q).cloned() {
            Some(Val::Const(t)) => {
                let q = t.i64s();
                let per: usize = t.dims.get(d.axis + 1..).map_or(1, |s| s.iter().product());
                let n = d.scale.len();
                let v: Vec<f64> = q
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| {
                        let c = if n == 1 { 0 } else { (i / per.max(1)) % n };
                        f64::from((x - d.zp[c]) as f32 * d.scale[c])
                    })
                    .collect();
                Ok(Val::Const(Tensor::from_f64s(ElemType::F32, t.dims.clone(), &v)))
            }
            Some(Val::Rt(r)) => {
                if d.scale.len() != 1 {
                    return Err(format!(
                        "'{name}' is dequantized per axis at run time (supported per tensor only)"
                    ));
                }
                // The dequantize kernel reads the parameters from its input tensor.
                self.out.tensors[r.t].quant =
                    Some(Quant { scale: d.scale.clone(), zero_point: d.zp.clone(), axis: 0 });
                let out = self.new_rt(name, ElemType::F32, r.shape.clone(), r.layout);
                self.emit(6, 0, vec![], vec![r.t], vec![out.t]);
                Ok(Val::Rt(out))
            }
            None => Err(format!("'{}' is not defined before it is dequantized", d.q)),
        }
    }

    /// A one-value constant input's values, or `default`.
    fn param(&self, n: &Node, i: usize, default: Option<Tensor>) -> Result<Option<Tensor>, String> {
        match self.opt_val(n, i)? {
            Some(Val::Const(t)) => Ok(Some(t)),
            Some(Val::Rt(_)) => Err(format!("input {i} (a scale or zero point) must be a constant")),
            None => Ok(default),
        }
    }

    pub(super) fn dequantize_linear(&mut self, n: &Node) -> Result<(), String> {
        let q = n.inputs.first().cloned().flatten().ok_or("input 0 is missing")?;
        let x = self.val(n, 0)?;
        let (elem, rank, stored) = match &x {
            Val::Const(t) => (t.elem, t.dims.len(), t.elem),
            Val::Rt(r) => {
                (if self.from_u8.contains(&r.t) { ElemType::U8 } else { r.elem }, r.shape.len(), r.elem)
            }
        };
        if n.int("block_size", 0)? != 0 {
            return Err("blocked quantization (block_size) is not supported".into());
        }
        let scale = self.param(n, 1, None)?.ok_or("the scale is missing")?;
        let zp = self.param(n, 2, None)?;
        if scale.dims.len() > 1 || zp.as_ref().is_some_and(|z| z.elements() != scale.elements()) {
            return Err(format!("scale {:?} is not one value or one per slice of an axis", scale.dims));
        }
        if scale.elem != ElemType::F32 || !matches!(elem, ElemType::I8 | ElemType::U8 | ElemType::I32) {
            return Err(format!(
                "dequantizing {} with a {} scale is not supported",
                elem.name(),
                scale.elem.name()
            ));
        }
        let scales: Vec<f32> = scale.f64s().iter().map(|&v| v as f32).collect();
        if scales.is_empty() || scales.iter().any(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(format!("scales {scales:?} are not positive"));
        }
        let mut zps = zp.map_or_else(|| vec![0; scales.len()], |z| z.i64s());
        if zps.len() != scales.len() {
            return Err(format!("{} zero points for {} scales", zps.len(), scales.len()));
        }
        // uint8 data is held as int8 (constants converted here; run-time ones already are).
        if elem == ElemType::U8 {
            zps.iter_mut().for_each(|z| *z -= 128);
        }
        // One scale is per tensor, whatever its shape.
        let axis = if scales.len() > 1 { axis(n.int("axis", 1)?, rank)? } else { 0 };
        let dims = match &x {
            Val::Const(t) => t.dims.clone(),
            Val::Rt(r) => r.shape.clone(),
        };
        if scales.len() > 1 && dims[axis] != scales.len() {
            return Err(format!("{} scales for axis {axis} of {dims:?}", scales.len()));
        }
        let q = match x {
            Val::Const(t) if stored == ElemType::U8 => {
                let name = format!("{q}:i8");
                let data = t.data.iter().map(|b| b ^ 0x80).collect();
                self.values.insert(name.clone(), Val::Const(Tensor { elem: ElemType::I8, data, ..t }));
                name
            }
            _ => q,
        };
        let out = n.outputs.first().cloned().flatten().ok_or("the output is not used")?;
        self.deq.insert(out, Deq { q, scale: scales, zp: zps, axis });
        Ok(())
    }

    /// The int8 quantization `(scale, zero point)` a QuantizeLinear's parameters give, and
    /// whether its output is uint8.
    pub(super) fn quantize_params(&self, n: &Node) -> Result<(f32, i64, bool), String> {
        if n.int("block_size", 0)? != 0 || n.int("output_dtype", 0)? != 0 {
            return Err("blocked quantization and output_dtype are not supported".into());
        }
        let scale = self.param(n, 1, None)?.ok_or("the scale is missing")?;
        let zp = self.param(n, 2, None)?;
        if scale.elements() != 1 || zp.as_ref().is_some_and(|z| z.elements() != 1) {
            return Err("per-axis quantization of activations is not supported".into());
        }
        let s = scale.f64s()[0] as f32;
        if !(s.is_finite() && s > 0.0) {
            return Err(format!("scale {s} is not positive"));
        }
        // No zero point: uint8 output (the operator's default type).
        let u8 = zp.as_ref().is_none_or(|z| z.elem == ElemType::U8);
        if zp.as_ref().is_some_and(|z| !matches!(z.elem, ElemType::U8 | ElemType::I8)) {
            return Err("only int8 and uint8 quantization is supported".into());
        }
        let z = zp.map_or(0, |z| z.i64s()[0]) - if u8 { 128 } else { 0 };
        Ok((s, z, u8))
    }

    fn quantize_linear(&mut self, n: &Node) -> Result<bool, String> {
        // A scale or zero point computed at run time (a dynamic quantization).
        let at_run_time = |c: &Self, i: usize| matches!(c.opt_val(n, i), Ok(Some(Val::Rt(_))));
        if at_run_time(self, 1) || at_run_time(self, 2) {
            return self.quantize_at_run_time(n).map(|()| true);
        }
        let input = n.inputs.first().cloned().flatten().ok_or("input 0 is missing")?;
        let (s, z, u8) = self.quantize_params(n)?;
        let quant = Quant { scale: vec![s], zero_point: vec![z], axis: 0 };
        let name = Self::out_name(n);
        let lazy = if self.values.contains_key(&input) { None } else { self.deq.get(&input).cloned() };
        let out = match lazy {
            // Q(DQ(q)): the int8 values themselves, or requantized.
            Some(d) if matches!(self.values.get(&d.q), Some(Val::Rt(_))) && d.scale.len() == 1 => {
                let Some(Val::Rt(q)) = self.values.get(&d.q).cloned() else { unreachable!() };
                if d.scale[0] == s && d.zp[0] == z {
                    q
                } else {
                    let out = self.new_rt(&name, ElemType::I8, q.shape.clone(), q.layout);
                    self.out.tensors[out.t].quant = Some(quant);
                    self.emit(114, 0, vec![], vec![q.t], vec![out.t]);
                    out
                }
            }
            _ => {
                self.materialize_inputs(n)?;
                match self.val(n, 0)? {
                    // A constant: folded by the general folding (after this returns false).
                    Val::Const(_) => return Ok(false),
                    Val::Rt(x) => {
                        if x.elem != ElemType::F32 {
                            return Err(format!("quantizing {} is not supported", x.elem.name()));
                        }
                        let out = self.new_rt(&name, ElemType::I8, x.shape.clone(), x.layout);
                        self.out.tensors[out.t].quant = Some(quant);
                        self.emit(114, 0, vec![], vec![x.t], vec![out.t]);
                        out
                    }
                }
            }
        };
        if u8 {
            self.from_u8.insert(out.t);
        }
        self.set(n, 0, out);
        Ok(true)
    }

    /// The lazily dequantized run-time int8 value named by input `i` of `n`, per tensor.
    fn lazy_rt(&self, n: &Node, i: usize) -> Option<(Rt, Deq)> {
        let name = n.inputs.get(i)?.as_ref()?;
        if self.values.contains_key(name) {
            return None;
        }
        let d = self.deq.get(name)?;
        match self.values.get(&d.q)? {
            Val::Rt(r) if d.scale.len() == 1 && r.elem == ElemType::I8 => Some((r.clone(), d.clone())),
            _ => None,
        }
    }

    /// The lazily dequantized constant named by input `i` of `n`, with its int8 (or int32)
    /// values.
    fn lazy_const(&self, n: &Node, i: usize) -> Option<(Tensor, Deq)> {
        let name = n.inputs.get(i)?.as_ref()?;
        if self.values.contains_key(name) {
            return None;
        }
        let d = self.deq.get(name)?;
        match self.values.get(&d.q)? {
            Val::Const(t) => Some((t.clone(), d.clone())),
            Val::Rt(_) => None,
        }
    }

    /// The QuantizeLinear that takes `n`'s only output (through one Relu or a Clip to
    /// [0, 6]), with the fused activation code and the nodes the group swallows.
    fn quantized_by(&self, n: &Node) -> Option<(Node, i8, Vec<usize>)> {
        let only = |value: &str| -> Option<&Node> {
            match self.consumers.get(value).map(Vec::as_slice) {
                Some([c]) if !self.graph_outputs.contains(value) => self.nodes.get(*c),
                _ => None,
            }
        };
        let out = n.outputs.first()?.as_ref()?;
        let next = only(out)?;
        let (act, q) = match next.op_type.as_str() {
            "QuantizeLinear" => (0, next),
            "Relu" => (1, only(next.outputs.first()?.as_ref()?)?),
            "Clip" if self.clip_is_relu6(next) => (3, only(next.outputs.first()?.as_ref()?)?),
            _ => return None,
        };
        if q.op_type != "QuantizeLinear" {
            return None;
        }
        let mut swallowed = vec![q.index];
        if act != 0 {
            swallowed.push(next.index);
        }
        Some((q.clone(), act, swallowed))
    }

    /// The activation node that alone takes `n`'s output and can run fused into it, with
    /// TensorFlow Lite's code for it (1 ReLU, 3 ReLU6).
    pub(super) fn fused_activation(&self, n: &Node) -> Option<(i8, Node)> {
        let out = n.outputs.first()?.as_ref()?;
        if self.graph_outputs.contains(out) || n.outputs.len() != 1 {
            return None;
        }
        let [c] = self.consumers.get(out)?.as_slice() else { return None };
        let next = self.nodes.get(*c).filter(|m| m.index == *c)?;
        match next.op_type.as_str() {
            "Relu" => Some((1, next.clone())),
            "Clip" if self.clip_is_relu6(next) => Some((3, next.clone())),
            _ => None,
        }
    }

    /// Names `y` as `n`'s output, or as the fused activation's (which is then skipped).
    pub(super) fn set_fused(&mut self, n: &Node, fused: Option<(i8, Node)>, y: Rt) {
        match fused {
            Some((_, m)) => {
                self.set(&m, 0, y);
                self.skip.insert(m.index);
            }
            None => self.set(n, 0, y),
        }
    }

    fn clip_is_relu6(&self, n: &Node) -> bool {
        let bound = |i: usize, attr: &str| -> Option<f32> {
            if self.opset < 11 {
                return n.float(attr, f32::NAN).ok();
            }
            let name = n.inputs.get(i)?.as_ref()?;
            match self.values.get(name)? {
                Val::Const(t) if t.elements() == 1 => Some(t.f64s()[0] as f32),
                _ => None,
            }
        };
        bound(1, "min") == Some(0.0) && bound(2, "max") == Some(6.0)
    }

    /// Marks the swallowed nodes and names the group's int8 output as the QuantizeLinear's.
    pub(super) fn finish_group(&mut self, q: &Node, swallowed: Vec<usize>, out: Rt, u8: bool) {
        if u8 {
            self.from_u8.insert(out.t);
        }
        self.set(q, 0, out);
        self.skip.extend(swallowed);
    }

    /// Conv, MatMul or Gemm of dequantized int8 data and weights, quantized after: one int8
    /// layer.
    fn fused_layer(&mut self, n: &Node) -> Result<bool, String> {
        if self.lazy_rt(n, 0).is_none() || self.lazy_const(n, 1).is_none() {
            return Ok(false);
        }
        let Some((q, act, swallowed)) = self.quantized_by(n) else { return Ok(false) };
        let (s, z, u8) = self.quantize_params(&q)?;
        match self.int8_layer(n, (s, z), act, &Self::out_name(&q))? {
            Some(y) => {
                self.finish_group(&q, swallowed, y, u8);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The int8 layer of Conv, MatMul or Gemm node `n` whose inputs are lazily dequantized
    /// (data at run time, int8 weights with zero points 0, int32 bias), its output quantized
    /// to `(scale, zero point)` with fused activation `act`; `None` when `n` is not one.
    pub(super) fn int8_layer(
        &mut self,
        n: &Node,
        (s, z): (f32, i64),
        act: i8,
        name: &str,
    ) -> Result<Option<Rt>, String> {
        let Some((x, dx)) = self.lazy_rt(n, 0) else { return Ok(None) };
        let Some((w, dw)) = self.lazy_const(n, 1) else { return Ok(None) };
        if w.elem != ElemType::I8 || dw.zp.iter().any(|&z| z != 0) {
            return Ok(None);
        }
        let bias = match n.inputs.get(2).cloned().flatten() {
            None => None,
            Some(_) => match self.lazy_const(n, 2) {
                Some((b, db)) if b.elem == ElemType::I32 && db.zp.iter().all(|&z| z == 0) => Some(b),
                _ => return Ok(None),
            },
        };
        let wq = Quant { scale: dw.scale.clone(), zero_point: vec![0; dw.scale.len()], axis: 0 };
        self.out.tensors[x.t].quant =
            Some(Quant { scale: dx.scale.clone(), zero_point: dx.zp.clone(), axis: 0 });
        let o = LayerOut {
            name: name.to_string(),
            elem: ElemType::I8,
            quant: Some(Quant { scale: vec![s], zero_point: vec![z], axis: 0 }),
            act,
        };
        let y = match n.op_type.as_str() {
            "Conv" => {
                if x.shape.len() != 4 || (dw.scale.len() > 1 && dw.axis != 0) {
                    return Ok(None);
                }
                let t = self.layout(&x, Layout::Nhwc);
                self.conv_with(n, &Rt { t, layout: Layout::Nhwc, ..x }, (&w, Some(&wq)), bias, &o)?
            }
            "MatMul" => {
                if w.dims.len() != 2 || x.shape.len() < 2 || (dw.scale.len() > 1 && dw.axis != 1) {
                    return Ok(None);
                }
                self.fully_connected_with(&x, (&w, Some(&wq)), bias, &o)?
            }
            _ => {
                // Gemm: y = A·B (+ C), B possibly transposed; alpha and beta of 1 only.
                let (ta, tb) = (n.int("transA", 0)?, n.int("transB", 0)?);
                if ta != 0
                    || n.float("alpha", 1.0)? != 1.0
                    || n.float("beta", 1.0)? != 1.0
                    || w.dims.len() != 2
                {
                    return Ok(None);
                }
                let per_axis_ok = dw.scale.len() == 1 || dw.axis == if tb != 0 { 0 } else { 1 };
                if !per_axis_ok || x.shape.len() != 2 {
                    return Ok(None);
                }
                let w = if tb != 0 { super::fold::permuted(&w, &[1, 0]) } else { w };
                self.fully_connected_with(&x, (&w, Some(&wq)), bias, &o)?
            }
        };
        Ok(Some(y))
    }

    /// Add or Mul of two dequantized int8 values, quantized after.
    fn fused_binary(&mut self, n: &Node) -> Result<bool, String> {
        let (Some((a, da)), Some((b, db))) = (self.lazy_rt(n, 0), self.lazy_rt(n, 1)) else {
            return Ok(false);
        };
        let Some((q, act, swallowed)) = self.quantized_by(n) else { return Ok(false) };
        if act != 0 || a.shape != b.shape || a.layout != b.layout {
            return Ok(false);
        }
        let (s, z, u8) = self.quantize_params(&q)?;
        for (r, d) in [(&a, &da), (&b, &db)] {
            self.out.tensors[r.t].quant =
                Some(Quant { scale: d.scale.clone(), zero_point: d.zp.clone(), axis: 0 });
        }
        let out = self.new_rt(&Self::out_name(&q), ElemType::I8, a.shape.clone(), a.layout);
        self.out.tensors[out.t].quant = Some(Quant { scale: vec![s], zero_point: vec![z], axis: 0 });
        let (code, options) = if n.op_type == "Add" {
            (0, crate::tflite::options::kind::ADD)
        } else {
            (18, crate::tflite::options::kind::MUL)
        };
        self.emit(code, options, vec![], vec![a.t, b.t], vec![out.t]);
        self.finish_group(&q, swallowed, out, u8);
        Ok(true)
    }

    /// GlobalAveragePool (an int8 mean, rescaled to the output's quantization) or Softmax
    /// over the last axis (its int8 output at TensorFlow Lite's 1/256 scale) of a dequantized
    /// int8 value, quantized after.
    fn fused_unary(&mut self, n: &Node) -> Result<bool, String> {
        let Some((x, dx)) = self.lazy_rt(n, 0) else { return Ok(false) };
        let Some((q, 0, swallowed)) = self.quantized_by(n) else { return Ok(false) };
        let (s, z, u8) = self.quantize_params(&q)?;
        self.out.tensors[x.t].quant =
            Some(Quant { scale: dx.scale.clone(), zero_point: dx.zp.clone(), axis: 0 });
        let quant = Some(Quant { scale: vec![s], zero_point: vec![z], axis: 0 });
        let name = Self::out_name(&q);
        let out = if n.op_type == "GlobalAveragePool" {
            if x.shape.len() != 4 {
                return Ok(false);
            }
            let t = self.layout(&x, Layout::Nhwc);
            let a = self.i32_tensor(&format!("{name}:axes"), &[1, 2]);
            let out = self.new_rt(&name, ElemType::I8, vec![x.shape[0], x.shape[1], 1, 1], Layout::Nhwc);
            self.out.tensors[out.t].quant = quant;
            self.emit(40, crate::tflite::options::kind::REDUCER, vec![(0, 1.0)], vec![t, a], vec![out.t]);
            out
        } else {
            let r = x.shape.len();
            let last = axis(n.int("axis", if self.opset < 13 { 1 } else { -1 })?, r)? == r - 1;
            if !last || (s, z) != (1.0 / 256.0, -128) {
                return Ok(false);
            }
            let t = self.layout(&x, Layout::Plain);
            let out = self.new_rt(&name, ElemType::I8, x.shape.clone(), Layout::Plain);
            self.out.tensors[out.t].quant = quant;
            self.emit(25, crate::tflite::options::kind::SOFTMAX, vec![(0, 1.0)], vec![t], vec![out.t]);
            out
        };
        self.finish_group(&q, swallowed, out, u8);
        Ok(true)
    }

    /// An op that commutes with dequantization, on a lazily dequantized int8 value: it runs on
    /// the int8 values, and its output stays lazy with the same parameters.
    fn transparent(&mut self, n: &Node) -> Result<bool, String> {
        let Some((x, d)) = self.lazy_rt(n, 0) else { return Ok(false) };
        let Some(out) = n.outputs.first().cloned().flatten() else { return Ok(false) };
        // Its other operands (shapes, pads, a pad value) as float values.
        n.inputs.iter().skip(1).flatten().try_for_each(|name| self.materialize(name))?;
        let quant = Quant { scale: d.scale.clone(), zero_point: d.zp.clone(), axis: 0 };
        self.out.tensors[x.t].quant = Some(quant.clone());
        // The same node over the int8 value, into an internal name.
        let mut m = n.clone();
        m.inputs[0] = Some(d.q.clone());
        let inner = format!("{out}:int8");
        m.outputs = vec![Some(inner.clone())];
        self.quant_ctx = Some(quant);
        let done = self.node(&m);
        self.quant_ctx = None;
        done?;
        let was_u8 = matches!(self.values.get(&d.q), Some(Val::Rt(r)) if self.from_u8.contains(&r.t));
        if was_u8 && let Some(Val::Rt(r)) = self.values.get(&inner) {
            self.from_u8.insert(r.t);
        }
        self.deq.insert(out, Deq { q: inner, ..d });
        Ok(true)
    }
}

/// The nodes of each value's consumers, by value name.
pub(super) fn consumers(nodes: &[Node]) -> std::collections::HashMap<String, Vec<usize>> {
    let mut map: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for n in nodes {
        let mut seen = HashSet::new();
        for name in n.inputs.iter().flatten() {
            if seen.insert(name) {
                map.entry(name.clone()).or_default().push(n.index);
            }
        }
    }
    map
}
