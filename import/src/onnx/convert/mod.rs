//! Translation: an ONNX graph becomes the importer's operator graph (TensorFlow Lite's
//! operators and tensors), which the shared lowering turns into `nn.*` kernels over one
//! planned arena (docs/models.md).
//!
//! Shapes are static: every dimension is known at import, so shape computations (`Shape`,
//! `Gather`, `Concat`, ... over constants) are folded here and never run. ONNX images are
//! NCHW and the kernels NHWC: a convolution's output stays NHWC (`Layout::Nhwc`) for as long
//! as the operators after it do not care (activations, per-channel arithmetic, pools,
//! concatenation), and a transpose is inserted only where an operator needs the ONNX order.

use std::collections::{HashMap, HashSet};

use super::model::{AttrValue, Model, Node, Tensor, checked_elements};
use crate::error::ImportError;
use crate::tflite::model::{Graph, OpInfo, OpOptions, Quant, TensorInfo};
use crate::tflite::ops::ElemType;

mod einsum;
mod elementwise;
mod fold;
mod integer;
mod layers;
mod movement;
mod qdq;
mod qlinear;
mod resize;
mod select;

/// How a runtime value's bytes are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layout {
    /// As ONNX states the shape.
    Plain,
    /// A rank-4 NCHW value stored NHWC (the convolution kernels' order).
    Nhwc,
}

/// NCHW → NHWC.
const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
/// NHWC → NCHW.
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

/// A value computed at run time: a tensor of the translated graph.
#[derive(Clone, Debug)]
struct Rt {
    /// The translated graph's tensor (in `layout`).
    t: usize,
    /// The shape as ONNX states it.
    shape: Vec<usize>,
    elem: ElemType,
    layout: Layout,
}

/// A value of the ONNX graph.
#[derive(Clone, Debug)]
enum Val {
    Const(Tensor),
    Rt(Rt),
}

/// A tensor of the translated graph.
#[derive(Clone, Debug)]
struct Desc {
    name: String,
    elem: ElemType,
    shape: Vec<usize>,
    data: Option<usize>,
    quant: Option<Quant>,
    /// An NCHW value stored NHWC (`Layout::Nhwc`).
    channels_last: bool,
}

/// An operator of the translated graph.
#[derive(Clone, Debug)]
struct SynOp {
    code: i32,
    node: usize,
    inputs: Vec<Option<usize>>,
    outputs: Vec<usize>,
    options_type: u8,
    fields: Vec<(u16, f64)>,
}

/// The translated graph; [`Converted::graph`] is what the lowering reads.
#[derive(Debug)]
pub struct Converted {
    tensors: Vec<Desc>,
    store: Vec<Vec<u8>>,
    ops: Vec<SynOp>,
    /// `(index, name, op type)` of every ONNX node, for locations and messages.
    nodes: Vec<(usize, String, String)>,
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
}

impl Converted {
    /// The graph the lowering reads, borrowing this translation's constants.
    pub fn graph(&self) -> Graph<'_> {
        let tensors = self
            .tensors
            .iter()
            .map(|d| TensorInfo {
                name: d.name.clone(),
                elem: d.elem,
                shape: d.shape.clone(),
                data: d.data.map(|i| self.store[i].as_slice()),
                quant: d.quant.clone(),
                variable: false,
                channels_last: d.channels_last,
            })
            .collect();
        let ops = self
            .ops
            .iter()
            .enumerate()
            .map(|(index, o)| {
                let (n, name, op_type) = &self.nodes[o.node];
                OpInfo {
                    index,
                    code: o.code,
                    name: op_type.clone(),
                    inputs: o.inputs.clone(),
                    outputs: o.outputs.clone(),
                    intermediates: Vec::new(),
                    options_type: o.options_type,
                    options: if o.fields.is_empty() {
                        OpOptions::Absent
                    } else {
                        OpOptions::Fields(o.fields.clone())
                    },
                    node: Some((*n, name.clone())),
                }
            })
            .collect();
        Graph {
            tensors,
            ops,
            inputs: self.inputs.clone(),
            outputs: self.outputs.clone(),
            description: String::new(),
        }
    }
}

/// Translates a verified model.
pub fn convert(model: &Model) -> Result<Converted, ImportError> {
    let mut c = Converter {
        opset: model.opset,
        out: Converted {
            tensors: Vec::new(),
            store: Vec::new(),
            ops: Vec::new(),
            nodes: model.nodes.iter().map(|n| (n.index, n.name.clone(), n.op_type.clone())).collect(),
            inputs: Vec::new(),
            outputs: Vec::new(),
        },
        values: HashMap::new(),
        relaid: HashMap::new(),
        node: 0,
        nodes: model.nodes.clone(),
        consumers: qdq::consumers(&model.nodes),
        graph_outputs: model.outputs.iter().cloned().collect(),
        skip: HashSet::new(),
        deq: HashMap::new(),
        from_u8: HashSet::new(),
        quant_ctx: None,
    };
    for (name, t) in &model.constants {
        c.values.insert(name.clone(), Val::Const(t.clone()));
    }
    for input in &model.inputs {
        let t = c.tensor(&input.name, input.elem, input.dims.clone(), None);
        c.out.inputs.push(t);
        c.values.insert(
            input.name.clone(),
            Val::Rt(Rt { t, shape: input.dims.clone(), elem: input.elem, layout: Layout::Plain }),
        );
    }
    for node in &model.nodes {
        if c.skip.contains(&node.index) {
            continue;
        }
        c.node = node.index;
        c.node(node).map_err(|e| ImportError::model(format!("{}: {e}", node.label())))?;
    }
    for name in &model.outputs {
        if !c.values.contains_key(name) && c.deq.contains_key(name) {
            c.materialize(name).map_err(|e| ImportError::model(format!("graph output '{name}': {e}")))?;
        }
        if let Some(Val::Rt(r)) = c.values.get(name)
            && c.from_u8.contains(&r.t)
        {
            return Err(ImportError::model(format!(
                "graph output '{name}' is uint8: not supported (int8 is)"
            )));
        }
        let v = c
            .values
            .get(name)
            .cloned()
            .ok_or_else(|| ImportError::model(format!("graph output '{name}' is computed by no node")))?;
        let t = match v {
            Val::Rt(rt) => c.layout(&rt, Layout::Plain),
            // Known at import (a folded shape): the program copies it out.
            Val::Const(k) => c.const_rt(&k, name).t,
        };
        c.out.outputs.push(t);
    }
    Ok(c.out)
}

struct Converter {
    opset: i64,
    out: Converted,
    values: HashMap<String, Val>,
    /// Runtime tensors already converted to another layout: `(tensor, layout)` → tensor.
    relaid: HashMap<(usize, Layout), usize>,
    /// The node being translated.
    node: usize,
    /// The graph's nodes, and each value's consumers (by node index): what a QDQ group
    /// looks ahead at.
    nodes: Vec<Node>,
    consumers: HashMap<String, Vec<usize>>,
    graph_outputs: HashSet<String>,
    /// Nodes a QDQ group already converted.
    skip: HashSet<usize>,
    /// Lazily dequantized values, by name (`qdq`).
    deq: HashMap<String, qdq::Deq>,
    /// Run-time tensors that are uint8 in the model (held as int8, zero point − 128).
    from_u8: HashSet<usize>,
    /// The quantization of int8 tensors created while an op runs on int8 values.
    quant_ctx: Option<Quant>,
}

/// The operators the importer translates.
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Ceil",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "ConvInteger",
    "ConvTranspose",
    "Cos",
    "DequantizeLinear",
    "Div",
    "DynamicQuantizeLinear",
    "Dropout",
    "Einsum",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "HardSwish",
    "Identity",
    "InstanceNormalization",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "LRN",
    "MatMul",
    "MatMulInteger",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "Pow",
    "PRelu",
    "QLinearConv",
    "QLinearMatMul",
    "QuantizeLinear",
    "Range",
    "Reciprocal",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "Relu",
    "Reshape",
    "Resize",
    "Round",
    "Selu",
    "Shape",
    "Sigmoid",
    "Sign",
    "Sin",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tanh",
    "Tile",
    "Transpose",
    "Unsqueeze",
    "Upsample",
    "Where",
    "Xor",
];

impl Converter {
    fn node(&mut self, n: &Node) -> Result<(), String> {
        if self.qdq(n)? {
            return Ok(());
        }
        self.materialize_inputs(n)?;
        if let Some(folded) = self.fold(n)? {
            for (name, t) in n.outputs.iter().zip(folded) {
                if let Some(name) = name {
                    self.values.insert(name.clone(), Val::Const(t));
                }
            }
            return Ok(());
        }
        // Data movement over a quantized int8 value (QOperator graphs hold them between
        // QLinear nodes): its outputs keep the value's quantization.
        let moved = match self.val(n, 0) {
            Ok(Val::Rt(r)) if r.elem == ElemType::I8 && qdq::MOVEMENT.contains(&n.op_type.as_str()) => {
                self.out.tensors[r.t].quant.clone().map(|q| (q, self.from_u8.contains(&r.t)))
            }
            _ => None,
        };
        let Some((quant, from_u8)) = moved else { return self.dispatch(n) };
        self.quant_ctx = Some(quant);
        let done = self.dispatch(n);
        self.quant_ctx = None;
        if from_u8 {
            for name in n.outputs.iter().flatten() {
                if let Some(Val::Rt(r)) = self.values.get(name) {
                    self.from_u8.insert(r.t);
                }
            }
        }
        done
    }

    /// Translates `n` by its operator.
    fn dispatch(&mut self, n: &Node) -> Result<(), String> {
        match n.op_type.as_str() {
            "Identity" | "Dropout" => self.identity(n),
            "Cast" => self.cast(n),
            "Conv" if self.rank_of(n, 0) == Some(3) => self.one_d(n, Self::conv),
            "ConvTranspose" if self.rank_of(n, 0) == Some(3) => self.one_d(n, Self::conv_transpose),
            "MaxPool" | "AveragePool" if self.rank_of(n, 0) == Some(3) => self.one_d(n, Self::pool),
            "Conv" => self.conv(n),
            "ConvTranspose" => self.conv_transpose(n),
            "MaxPool" | "AveragePool" => self.pool(n),
            "GlobalAveragePool" => self.global_pool(n, 40),
            "Gemm" => self.gemm(n),
            "MatMul" => self.matmul(n),
            "BatchNormalization" => self.batch_norm(n),
            "Div" | "Mul" if self.gelu_chain(n).is_some() => self.gelu_fused(n),
            "Add" | "Sub" | "Mul" | "PRelu" => self.binary(n),
            "Max" | "Min" | "Sum" | "Mean" => self.variadic(n),
            "Relu" | "Sigmoid" | "Tanh" | "LeakyRelu" | "HardSwish" | "Exp" | "Log" | "Sqrt" | "Abs"
            | "Neg" | "Floor" | "Ceil" | "Round" | "Sin" | "Cos" | "Reciprocal" | "Erf" | "Softplus"
            | "Sign" | "Elu" | "Selu" | "HardSigmoid" | "Gelu" => self.activation(n),
            "Div" | "Pow" => self.binary(n),
            "LayerNormalization" | "InstanceNormalization" => self.normalization(n),
            "GlobalMaxPool" => self.global_pool(n, 82),
            "Clip" => self.clip(n),
            "Softmax" | "LogSoftmax" => self.softmax(n),
            "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => self.reshape(n),
            "Transpose" => self.transpose(n),
            "Resize" | "Upsample" => self.resize(n),
            "Equal" | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Xor"
            | "Not" => self.logic(n),
            "Where" => self.where_op(n),
            "ArgMax" | "ArgMin" => self.arg(n),
            "Gather" => self.gather(n),
            "Tile" => self.tile(n),
            "Expand" => self.expand(n),
            "LRN" => self.lrn(n),
            "Einsum" => self.einsum(n),
            "QLinearConv" | "QLinearMatMul" => self.qlinear(n),
            "MatMulInteger" => self.matmul_integer(n),
            "ConvInteger" => self.conv_integer(n),
            "DynamicQuantizeLinear" => self.dynamic_quantize_linear(n),
            "Concat" => self.concat(n),
            "Split" => self.split(n),
            "Slice" => self.slice(n),
            "Pad" => self.pad(n),
            "ReduceMean" | "ReduceSum" | "ReduceMax" | "ReduceMin" | "ReduceProd" => self.reduce(n),
            "Shape" | "Size" => self.shape_of(n),
            other if SUPPORTED.contains(&other) => {
                Err(format!("{other} is supported only on constant inputs (folded at import)"))
            }
            other => Err(format!("operator {other} is not supported (supported: {})", SUPPORTED.join(", "))),
        }
    }

    // --- Values -----------------------------------------------------------------------

    /// Input `i` of `n`, which must be present.
    fn val(&self, n: &Node, i: usize) -> Result<Val, String> {
        let name = n.inputs.get(i).cloned().flatten().ok_or_else(|| format!("input {i} is missing"))?;
        self.values
            .get(&name)
            .cloned()
            .ok_or_else(|| format!("input {i} '{name}' is not defined before the node"))
    }

    /// The rank of input `i` of `n`, if it is defined.
    fn rank_of(&self, n: &Node, i: usize) -> Option<usize> {
        match self.val(n, i).ok()? {
            Val::Rt(r) => Some(r.shape.len()),
            Val::Const(c) => Some(c.dims.len()),
        }
    }

    /// Input `i` of `n` if present.
    fn opt_val(&self, n: &Node, i: usize) -> Result<Option<Val>, String> {
        match n.inputs.get(i).cloned().flatten() {
            None => Ok(None),
            Some(_) => self.val(n, i).map(Some),
        }
    }

    /// Input `i` of `n`, which must be a constant (known at import).
    fn constant(&self, n: &Node, i: usize, what: &str) -> Result<Tensor, String> {
        match self.val(n, i)? {
            Val::Const(t) => Ok(t),
            Val::Rt(_) => {
                Err(format!("the {what} (input {i}) must be a constant; it is computed at run time"))
            }
        }
    }

    /// Input `i` of `n` as a runtime value (a constant is placed in the graph).
    fn rt(&mut self, n: &Node, i: usize) -> Result<Rt, String> {
        match self.val(n, i)? {
            Val::Rt(r) => Ok(r),
            Val::Const(c) => {
                Ok(self.const_rt(&c, &format!("{}:const{i}", n.inputs[i].clone().unwrap_or_default())))
            }
        }
    }

    /// A constant as a runtime value (a constant tensor of the graph).
    fn const_rt(&mut self, c: &Tensor, name: &str) -> Rt {
        let t = self.tensor(name, c.elem, c.dims.clone(), Some(c.data.clone()));
        Rt { t, shape: c.dims.clone(), elem: c.elem, layout: Layout::Plain }
    }

    /// Output `i` of `n` computed at run time.
    fn set(&mut self, n: &Node, i: usize, rt: Rt) {
        if let Some(Some(name)) = n.outputs.get(i) {
            self.values.insert(name.clone(), Val::Rt(rt));
        }
    }

    /// Whether output `i` of `n` is used (named).
    fn used(n: &Node, i: usize) -> bool {
        matches!(n.outputs.get(i), Some(Some(_)))
    }

    /// The name of output 0, for new tensors.
    fn out_name(n: &Node) -> String {
        n.outputs.first().cloned().flatten().unwrap_or_else(|| format!("node{}", n.index))
    }

    /// The one node that reads `n`'s one output, when it is an `op` node, reads it once, and
    /// the output is not a graph output: a node the importer may fuse into `n`'s layer.
    fn sole_consumer(&self, n: &Node, op: &str) -> Option<&Node> {
        let out = n.outputs.first()?.as_ref()?;
        if self.graph_outputs.contains(out) || n.outputs.len() != 1 {
            return None;
        }
        let [c] = self.consumers.get(out)?.as_slice() else { return None };
        let next = self.nodes.get(*c).filter(|m| m.index == *c && m.op_type == op)?;
        (next.inputs.iter().flatten().filter(|i| *i == out).count() == 1).then_some(next)
    }

    /// The other input of a two-input node `n` one of whose inputs is `name`.
    fn other_input<'n>(n: &'n Node, name: &str) -> Option<&'n String> {
        match n.inputs.as_slice() {
            [Some(a), Some(b)] if a == name => Some(b),
            [Some(a), Some(b)] if b == name => Some(a),
            _ => None,
        }
    }

    /// The value of a one-element float constant.
    fn const_scalar(&self, name: &str) -> Option<f64> {
        match self.values.get(name)? {
            Val::Const(t) if t.elem == ElemType::F32 && t.elements() == 1 => t.f64s().first().copied(),
            _ => None,
        }
    }

    // --- The translated graph ---------------------------------------------------------

    fn tensor(&mut self, name: &str, elem: ElemType, shape: Vec<usize>, data: Option<Vec<u8>>) -> usize {
        // An int8 value made while an op runs on int8 data keeps that data's quantization.
        let quant = if elem == ElemType::I8 && data.is_none() { self.quant_ctx.clone() } else { None };
        let data = data.map(|d| {
            self.out.store.push(d);
            self.out.store.len() - 1
        });
        self.out.tensors.push(Desc { name: name.into(), elem, shape, data, quant, channels_last: false });
        self.out.tensors.len() - 1
    }

    /// A new runtime value of `shape` (ONNX order) stored in `layout`.
    fn new_rt(&mut self, name: &str, elem: ElemType, shape: Vec<usize>, layout: Layout) -> Rt {
        let physical = physical(&shape, layout);
        let t = self.tensor(name, elem, physical, None);
        self.out.tensors[t].channels_last = layout == Layout::Nhwc;
        Rt { t, shape, elem, layout }
    }

    /// An int32 constant tensor (shapes, permutations, axes).
    fn i32_tensor(&mut self, name: &str, values: &[i64]) -> usize {
        let data = values.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect();
        self.tensor(name, ElemType::I32, vec![values.len()], Some(data))
    }

    /// A float32 constant tensor.
    fn f32_tensor(&mut self, name: &str, dims: Vec<usize>, values: &[f32]) -> usize {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.tensor(name, ElemType::F32, dims, Some(data))
    }

    fn emit(
        &mut self,
        code: i32,
        options_type: u8,
        fields: Vec<(u16, f64)>,
        inputs: Vec<usize>,
        outputs: Vec<usize>,
    ) {
        self.emit_opt(code, options_type, fields, inputs.into_iter().map(Some).collect(), outputs);
    }

    fn emit_opt(
        &mut self,
        code: i32,
        options_type: u8,
        fields: Vec<(u16, f64)>,
        inputs: Vec<Option<usize>>,
        outputs: Vec<usize>,
    ) {
        let node = self.node;
        self.out.ops.push(SynOp { code, node, inputs, outputs, options_type, fields });
    }

    /// `rt`'s tensor in `layout`, converting it once (a transpose, or a reshape where the
    /// moved dims are all 1 and the bytes are the same).
    fn layout(&mut self, rt: &Rt, layout: Layout) -> usize {
        if rt.layout == layout {
            return rt.t;
        }
        if let Some(&t) = self.relaid.get(&(rt.t, layout)) {
            return t;
        }
        let name = format!(
            "{}:{}",
            self.out.tensors[rt.t].name,
            if layout == Layout::Nhwc { "nhwc" } else { "nchw" }
        );
        let t = self.tensor(&name, rt.elem, physical(&rt.shape, layout), None);
        self.out.tensors[t].quant = self.out.tensors[rt.t].quant.clone();
        self.out.tensors[t].channels_last = layout == Layout::Nhwc;
        if self.from_u8.contains(&rt.t) {
            self.from_u8.insert(t);
        }
        let s = &rt.shape;
        // NCHW and NHWC hold the same bytes when C is 1 or H and W are both 1.
        if s[1] == 1 || (s[2] == 1 && s[3] == 1) {
            self.emit(22, 0, vec![], vec![rt.t], vec![t]);
        } else {
            let perm: Vec<i64> =
                if layout == Layout::Nhwc { TO_NHWC } else { TO_NCHW }.map(|v| v as i64).into();
            let p = self.i32_tensor(&format!("{name}:perm"), &perm);
            self.emit(39, 0, vec![], vec![rt.t, p], vec![t]);
        }
        self.relaid.insert((rt.t, layout), t);
        t
    }

    /// `rt` stored as ONNX orders it.
    fn plain(&mut self, rt: &Rt) -> Rt {
        Rt { t: self.layout(rt, Layout::Plain), layout: Layout::Plain, ..rt.clone() }
    }

    // --- Structural ops ---------------------------------------------------------------

    /// A node made up for `n`: `op` over `inputs` into `out`, with `attrs`.
    pub(super) fn made_up(
        n: &Node,
        op: &str,
        inputs: Vec<Option<String>>,
        out: &str,
        attrs: Vec<(&str, AttrValue)>,
    ) -> Node {
        Node {
            index: n.index,
            name: n.name.clone(),
            op_type: op.into(),
            inputs,
            outputs: vec![Some(out.into())],
            attrs: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        }
    }

    /// Translates a node made up for `n` (an operator rewritten into the nodes it stands
    /// for: Einsum, DynamicQuantizeLinear), returning its output's name.
    pub(super) fn part(
        &mut self,
        n: &Node,
        op: &str,
        inputs: Vec<String>,
        attrs: Vec<(&str, AttrValue)>,
        out: &str,
    ) -> Result<String, String> {
        let m = Self::made_up(n, op, inputs.into_iter().map(Some).collect(), out, attrs);
        self.node(&m)?;
        Ok(out.into())
    }

    fn identity(&mut self, n: &Node) -> Result<(), String> {
        // Dropout in training mode (input 2 true, or not known at import) drops values,
        // unless its ratio is 0.
        if n.op_type == "Dropout" && self.opt_val(n, 2)?.is_some() {
            let training = self.constant(n, 2, "training_mode")?;
            let ratio = match self.opt_val(n, 1)? {
                Some(Val::Const(r)) => r.f64s(),
                _ => vec![0.5],
            };
            if training.i64s().iter().any(|&v| v != 0) && ratio.iter().any(|&r| r != 0.0) {
                return Err("Dropout in training mode is not supported (inference only)".into());
            }
        }
        let v = self.val(n, 0)?;
        // Dropout's mask: every value kept.
        if let Some(Some(mask)) = n.outputs.get(1).filter(|_| n.op_type == "Dropout") {
            let shape = match &v {
                Val::Rt(r) => r.shape.clone(),
                Val::Const(c) => c.dims.clone(),
            };
            let ones = vec![1.0; checked_elements(&shape)?];
            self.values.insert(mask.clone(), Val::Const(Tensor::from_f64s(ElemType::Bool, shape, &ones)));
        }
        if let Some(Some(name)) = n.outputs.first() {
            self.values.insert(name.clone(), v);
        }
        Ok(())
    }

    /// `Shape` and `Size` of a runtime value: known at import.
    fn shape_of(&mut self, n: &Node) -> Result<(), String> {
        let shape = match self.val(n, 0)? {
            Val::Rt(r) => r.shape,
            Val::Const(c) => c.dims,
        };
        let t = fold::shape_or_size(n, &shape)?;
        if let Some(Some(name)) = n.outputs.first() {
            self.values.insert(name.clone(), Val::Const(t));
        }
        Ok(())
    }
}

/// The stored shape of a value of ONNX shape `shape` in `layout`.
fn physical(shape: &[usize], layout: Layout) -> Vec<usize> {
    match layout {
        Layout::Plain => shape.to_vec(),
        Layout::Nhwc => TO_NHWC.iter().map(|&k| shape[k]).collect(),
    }
}

/// Normalizes axis `a` (negative counts from the end) of a rank-`rank` value.
fn axis(a: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if !(-r..r).contains(&a) {
        return Err(format!("axis {a} is outside rank {rank}"));
    }
    Ok(a.rem_euclid(r.max(1)) as usize)
}

/// Attribute readers.
trait Attrs {
    fn int(&self, name: &str, default: i64) -> Result<i64, String>;
    fn float(&self, name: &str, default: f32) -> Result<f32, String>;
    fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, String>;
    fn string(&self, name: &str, default: &str) -> Result<String, String>;
}

impl Attrs for Node {
    fn int(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Int(v)) => Ok(*v),
            Some(other) => Err(format!("attribute '{name}' is {other:?}, expected an int")),
        }
    }

    fn float(&self, name: &str, default: f32) -> Result<f32, String> {
        match self.attrs.get(name) {
            None => Ok(default),
            Some(AttrValue::Float(v)) => Ok(*v),
            Some(AttrValue::Int(v)) => Ok(*v as f32),
            Some(other) => Err(format!("attribute '{name}' is {other:?}, expected a float")),
        }
    }

    fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, String> {
        match self.attrs.get(name) {
            None => Ok(None),
            Some(AttrValue::Ints(v)) => Ok(Some(v.clone())),
            Some(AttrValue::Int(v)) => Ok(Some(vec![*v])),
            Some(other) => Err(format!("attribute '{name}' is {other:?}, expected ints")),
        }
    }

    fn string(&self, name: &str, default: &str) -> Result<String, String> {
        match self.attrs.get(name) {
            None => Ok(default.into()),
            Some(AttrValue::String(v)) => Ok(v.clone()),
            Some(other) => Err(format!("attribute '{name}' is {other:?}, expected a string")),
        }
    }
}

/// The broadcast of two shapes (numpy rules).
fn broadcast(a: &[usize], b: &[usize]) -> Result<Vec<usize>, String> {
    let r = a.len().max(b.len());
    let at = |s: &[usize], k: usize| if k + s.len() >= r { s[k + s.len() - r] } else { 1 };
    let mut out = Vec::with_capacity(r);
    for k in 0..r {
        let (x, y) = (at(a, k), at(b, k));
        out.push(match (x, y) {
            _ if x == y => x,
            (1, _) => y,
            (_, 1) => x,
            _ => return Err(format!("shapes {a:?} and {b:?} do not broadcast")),
        });
    }
    checked_elements(&out)?;
    Ok(out)
}
