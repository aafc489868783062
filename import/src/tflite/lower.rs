//! Lowering: each TensorFlow Lite operator becomes one `nn.*` kernel step (hostrt-ops) with
//! its parameters computed the way TensorFlow Lite Micro's `Prepare` computes them, so the
//! int8 arithmetic matches it bit for bit. Reshapes become aliases (no step, no copy).

use std::collections::HashSet;

use hostrt_compiler::ast::{Attr, DenseAttr, Type};
use hostrt_dsp::prepack::{
    ConvLayout, ROW, conv_pairs_len, pack_conv, pack_conv_pairs, pack_fully_connected,
};
use hostrt_dsp::{
    Activation, ActivationRange, ConvParams, FullyConnectedParams, Hw, Nhwc, Padding, SoftmaxParams, Window,
    quantize_multiplier,
};

use super::model::{Graph, OpInfo, TensorInfo};
use super::ops::{ElemType, ext_op};
use super::options::{Options, ext, kind};
use crate::ImportOptions;
use crate::error::ImportError;

mod activation;
mod batch_space;
mod dilated;
mod hybrid;
mod lstm;
mod lstm_full;
mod lstm_int8;
mod math;
mod matmul;
mod movement;
mod reduce;
mod resize;
mod select;
#[cfg(test)]
mod testing;
mod transpose_conv;

/// An attribute whose value may depend on the plan: a tensor's arena region, or a value.
#[derive(Clone, Debug)]
pub enum AttrSpec {
    /// `[offset, dims...]` of the tensor's arena slot (its alias root's).
    Region {
        tensor: usize,
        dims: Vec<usize>,
    },
    /// `[offset]` of the tensor's arena slot.
    Offset(usize),
    /// `[offset + start, strides...]`: a byte position inside the tensor's arena slot and
    /// element strides (`nn.copy`).
    Strided {
        tensor: usize,
        start: i64,
        strides: Vec<i32>,
    },
    /// `[offset, bytes]` of a scratch buffer of `bytes` bytes that only this step uses: the
    /// planner keeps it alive for the step alone, apart from the step's tensors.
    Scratch(usize),
    Value(Attr),
}

/// What a step is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepKind {
    /// Copies graph input `n` (a function argument) into the arena.
    Input(usize),
    /// A layer of the model (or a constant copied into the arena for one).
    Layer,
    /// Copies graph output `n` out of the arena (a function result).
    Output(usize),
}

/// One kernel of the program.
#[derive(Clone, Debug)]
pub struct Step {
    pub kernel: String,
    /// The model layer it comes from: `op#12 CONV_2D:conv1/Relu`.
    pub loc: String,
    pub kind: StepKind,
    /// The arena tensor (alias root) it writes.
    pub write: Option<usize>,
    pub attrs: Vec<(String, AttrSpec)>,
    /// The model operator, for the report (`None` for inputs, outputs and constants).
    pub op: Option<usize>,
}

impl Step {
    /// The arena tensors (alias roots) it reads or writes: those its attributes place.
    pub fn tensors(&self) -> impl Iterator<Item = usize> + '_ {
        self.attrs.iter().filter_map(|(_, a)| match a {
            AttrSpec::Region { tensor, .. } | AttrSpec::Offset(tensor) | AttrSpec::Strided { tensor, .. } => {
                Some(*tensor)
            }
            AttrSpec::Value(_) | AttrSpec::Scratch(_) => None,
        })
    }
}

/// The lowered model: steps in execution order.
#[derive(Debug)]
pub struct Lowered {
    pub steps: Vec<Step>,
    /// With `dump_tensors`: every operator output `@main` returns, in execution order
    /// (`crate::DumpedTensor`).
    pub dumped: Vec<crate::DumpedTensor>,
}

struct Lowerer<'g, 'a> {
    g: &'g Graph<'a>,
    steps: Vec<Step>,
    root: Vec<usize>,
    materialized: HashSet<usize>,
    /// Convolutions folded with the batch-space operators around them, by operator index.
    folds: std::collections::HashMap<usize, dilated::Fold>,
    /// Operators a fold replaces.
    folded: HashSet<usize>,
    /// Lay int8 convolution weights out for x86-64's VNNI loops too.
    prepack: bool,
    /// Lay int8 fully connected weights out in the same layout (which the VNNI and AVX2 loops
    /// read).
    prepack_fc: bool,
    /// Lay int8 convolution filters out as int16 pairs for x86-64's AVX2 loops.
    prepack_pairs: bool,
    /// Lay float32 convolution filters out in blocks for x86-64's tiles too
    /// (`hostrt_ops::panels`).
    pack_float: bool,
}

/// Lowers `g` as `options` say: with `dump_tensors`, `@main` also returns every operator's
/// output after the model's outputs (which keeps them all alive: the arena is then not
/// reused); with `prepack`, int8 convolutions and fully connected layers also carry their
/// weights laid out for x86-64's VNNI loops, and float32 convolutions whose filters the
/// kernel reads through panels theirs in blocks for its 512-bit tiles (`packed`); with
/// `prepack_avx2`, the fully connected and float32 layouts alone.
pub fn lower(g: &Graph<'_>, options: ImportOptions) -> Result<Lowered, ImportError> {
    lower_with(g, options, options.prepack)
}

/// [`lower`], int8 weights laid out only with `int8_prepack` (and the options'): the
/// ONNX importer's graphs lay out float32 filters alone.
pub(crate) fn lower_with(
    g: &Graph<'_>,
    options: ImportOptions,
    int8_prepack: bool,
) -> Result<Lowered, ImportError> {
    let dump_tensors = options.dump_tensors;
    let mut l = Lowerer {
        g,
        steps: Vec::new(),
        root: (0..g.tensors.len()).collect(),
        materialized: HashSet::new(),
        folds: Default::default(),
        folded: HashSet::new(),
        prepack: options.prepack && int8_prepack,
        prepack_fc: (options.prepack || options.prepack_avx2) && int8_prepack,
        prepack_pairs: options.prepack_avx2 && !options.prepack && int8_prepack,
        pack_float: options.prepack || options.prepack_avx2,
    };
    for (n, &t) in g.inputs.iter().enumerate() {
        let info = &g.tensors[t];
        if info.data.is_some() {
            return Err(ImportError::tensor(t, &info.name, "a model input cannot be a constant".into()));
        }
        l.steps.push(Step {
            kernel: "nn.input".into(),
            loc: format!("input#{n}:{}", info.name),
            kind: StepKind::Input(n),
            write: Some(t),
            attrs: vec![
                ("dtype".into(), AttrSpec::Value(Attr::String(io_dtype(t, info)?.into()))),
                ("shape".into(), AttrSpec::Value(i32s(&info.shape))),
                ("to".into(), AttrSpec::Offset(t)),
            ],
            op: None,
        });
    }
    let live = live_ops(g);
    (l.folds, l.folded) = l.dilated_folds(&live);
    for op in g.ops.iter().filter(|op| live[op.index]) {
        l.op(op).map_err(|e| op.error(e))?;
    }
    for (n, &t) in g.outputs.iter().enumerate() {
        let info = &g.tensors[t];
        // A constant output (a translated graph's folded value) is copied into the arena.
        let r =
            if g.tensors[l.arena(t)].data.is_some() { l.read(t, &format!("output#{n}")) } else { l.arena(t) };
        // (An output of no elements, such as an empty part of a Split, needs no writer.)
        let empty = info.shape.contains(&0);
        if !empty && !l.steps.iter().any(|s| s.write == Some(r)) {
            return Err(ImportError::tensor(t, &info.name, "model output is computed by no operator".into()));
        }
        l.steps.push(Step {
            kernel: "nn.output".into(),
            loc: format!("output#{n}:{}", info.name),
            kind: StepKind::Output(n),
            write: None,
            attrs: vec![
                ("dtype".into(), AttrSpec::Value(Attr::String(io_dtype(t, info)?.into()))),
                ("from".into(), AttrSpec::Offset(r)),
                ("shape".into(), AttrSpec::Value(i32s(&info.shape))),
            ],
            op: None,
        });
    }
    let mut dumped = Vec::new();
    if dump_tensors {
        let mut extra = g.outputs.len();
        for op in g.ops.iter().filter(|op| live[op.index]) {
            for &t in &op.outputs {
                let info = &g.tensors[t];
                let entry = |result| crate::DumpedTensor {
                    result,
                    tensor: t,
                    name: info.name.clone(),
                    layer: op.label(),
                    channels_last: info.channels_last,
                };
                if let Some(n) = g.outputs.iter().position(|&o| o == t) {
                    dumped.push(entry(n));
                    continue;
                }
                // Types no output takes, and the tensors inside a folded operator group
                // (dilated.rs), which nothing computes.
                let written = l.steps.iter().any(|s| s.write == Some(l.arena(t)));
                let Ok(dtype) = io_dtype(t, info) else { continue };
                if !written {
                    continue;
                }
                l.steps.push(Step {
                    kernel: "nn.output".into(),
                    loc: format!("dump#{extra}:{}", info.name),
                    kind: StepKind::Output(extra),
                    write: None,
                    attrs: vec![
                        ("dtype".into(), AttrSpec::Value(Attr::String(dtype.into()))),
                        ("from".into(), AttrSpec::Offset(l.arena(t))),
                        ("shape".into(), AttrSpec::Value(i32s(&info.shape))),
                    ],
                    op: None,
                });
                dumped.push(entry(extra));
                extra += 1;
            }
        }
    }
    Ok(Lowered { steps: l.steps, dumped })
}

/// Which operators compute something the outputs need at run time. Shapes are static, so
/// the operators that only compute a RESHAPE's shape operand (`SHAPE`, `STRIDED_SLICE`,
/// `PACK` chains that Keras' `Flatten` emits) are left out, as are unused ones.
fn live_ops(g: &Graph<'_>) -> Vec<bool> {
    let mut needed = vec![false; g.tensors.len()];
    for &t in &g.outputs {
        needed[t] = true;
    }
    let mut live = vec![false; g.ops.len()];
    for op in g.ops.iter().rev() {
        if !op.outputs.iter().any(|&t| needed[t]) {
            continue;
        }
        live[op.index] = true;
        // RESHAPE's second input is the new shape, which the output tensor's shape states.
        let runtime_inputs =
            if op.code == 22 { &op.inputs[..op.inputs.len().min(1)] } else { &op.inputs[..] };
        for t in runtime_inputs.iter().flatten() {
            needed[*t] = true;
        }
    }
    live
}

fn io_dtype(t: usize, info: &TensorInfo<'_>) -> Result<&'static str, ImportError> {
    match info.elem {
        ElemType::F32 | ElemType::I8 | ElemType::I32 | ElemType::U8 | ElemType::I64 => Ok(info.elem.name()),
        ElemType::Bool => Ok("bool"),
        e => Err(ImportError::tensor(
            t,
            &info.name,
            format!("{} model inputs and outputs are not supported", e.name()),
        )),
    }
}

fn i32s(v: &[usize]) -> Attr {
    Attr::Array(v.iter().map(|&d| int(d as i64)).collect())
}

fn int(v: i64) -> Attr {
    Attr::Int { value: v, ty: Type("i32".into()) }
}

fn ints(v: &[i32]) -> Attr {
    Attr::Array(v.iter().map(|&d| int(i64::from(d))).collect())
}

fn floats(v: &[f32]) -> Attr {
    Attr::Array(v.iter().map(|&f| Attr::Float { value: f64::from(f), ty: Type("f32".into()) }).collect())
}

/// A table of int32 values (one or more per output row or column) as a rank-1 dense tensor:
/// 4 bytes a value on the way to BEF, where an array's elements took some 70 bytes each (a
/// 490-byte fuzzed model of three Resizes, tables of 2^22 values, took 1.5 GB to import).
fn int_table(v: &[i32]) -> Attr {
    dense("i32", &[v.len()], v.iter().flat_map(|x| x.to_le_bytes()).collect())
}

/// [`int_table`] of float32 values.
fn float_table(v: &[f32]) -> Attr {
    dense("f32", &[v.len()], v.iter().flat_map(|x| x.to_le_bytes()).collect())
}

/// int8 values from their bytes.
fn i8s(bytes: &[u8]) -> Vec<i8> {
    bytes.iter().map(|&b| b as i8).collect()
}

/// Little-endian int32 values from their bytes (a trailing partial value dropped).
fn i32s_le(bytes: &[u8]) -> Vec<i32> {
    bytes.as_chunks::<4>().0.iter().map(|&b| i32::from_le_bytes(b)).collect()
}

fn dense(elem: &str, dims: &[usize], data: Vec<u8>) -> Attr {
    Attr::Dense(Box::new(DenseAttr {
        elem: Type(elem.into()),
        dims: dims.iter().map(|&d| d as i64).collect(),
        data,
    }))
}

/// A float32 filter's little-endian values (rows of `co` channels) laid out in blocks for
/// x86-64's 512-bit tiles (`hostrt_ops::panels`), as the `packed` attribute; `None` when
/// they do not make whole rows of whole eights of channels.
fn float_panels(filter: &[u8], co: usize) -> Option<Attr> {
    let values: Vec<f32> = filter.as_chunks::<4>().0.iter().map(|&b| f32::from_le_bytes(b)).collect();
    let mut packed = vec![0.0f32; values.len()];
    hostrt_ops::panels::pack(&values, co, &mut packed)
        .then(|| dense("f32", &[packed.len()], packed.iter().flat_map(|v| v.to_le_bytes()).collect()))
}

/// The `[rows, cols]` matrix of `size`-byte elements in `data`, transposed.
fn transpose(data: &[u8], size: usize, &[rows, cols]: &[usize; 2]) -> Vec<u8> {
    let mut out = vec![0; data.len()];
    for r in 0..rows {
        for c in 0..cols {
            let (from, to) = ((r * cols + c) * size, (c * rows + r) * size);
            out[to..to + size].copy_from_slice(&data[from..from + size]);
        }
    }
    out
}

fn fused(code: i8) -> Result<Activation, String> {
    Ok(match code {
        0 => Activation::None,
        1 => Activation::Relu,
        2 => Activation::ReluN1To1,
        3 => Activation::Relu6,
        4 => return Err("fused TANH activation is not supported".into()),
        5 => return Err("fused SIGN_BIT activation is not supported".into()),
        c => return Err(format!("unknown fused activation {c}")),
    })
}

fn float_range(a: Activation) -> [f32; 2] {
    match a {
        Activation::None => [f32::MIN, f32::MAX],
        Activation::Relu => [0.0, f32::MAX],
        Activation::Relu6 => [0.0, 6.0],
        Activation::ReluN1To1 => [-1.0, 1.0],
    }
}

fn padding(code: i8) -> Result<Padding, String> {
    match code {
        0 => Ok(Padding::Same),
        1 => Ok(Padding::Valid),
        c => Err(format!("unknown padding {c}")),
    }
}

/// The explicit top and left padding a translating importer set (the output shape gives
/// the bottom and right), in place of SAME/VALID.
fn explicit_pad(o: &Options<'_, '_>) -> Option<Hw> {
    let (t, l) = (o.ext(ext::PAD_TOP)?, o.ext(ext::PAD_LEFT)?);
    Some(Hw::new(t as usize, l as usize))
}

/// The dilation a translating importer set on an operator whose TensorFlow Lite form has
/// none (a pool, a transposed convolution): `ext::DILATION_H`/`_W`, 1 where absent.
fn ext_dilation(o: &Options<'_, '_>) -> Result<Hw, String> {
    let d = |field| o.ext(field).unwrap_or(1.0) as i32;
    hw(d(ext::DILATION_H), d(ext::DILATION_W), "dilation")
}

fn hw(h: i32, w: i32, what: &str) -> Result<Hw, String> {
    match (usize::try_from(h), usize::try_from(w)) {
        (Ok(h), Ok(w)) if h > 0 && w > 0 && h <= 1 << 16 && w <= 1 << 16 => Ok(Hw::new(h, w)),
        _ => Err(format!("{what} {h}x{w} is not positive")),
    }
}

impl<'a> Lowerer<'_, 'a> {
    fn t(&self, i: usize) -> &TensorInfo<'a> {
        &self.g.tensors[i]
    }

    fn arena(&self, t: usize) -> usize {
        let mut r = t;
        while self.root[r] != r {
            r = self.root[r];
        }
        r
    }

    /// The arena slot of `t` for reading, copying a constant into the arena first.
    fn read(&mut self, t: usize, loc: &str) -> usize {
        let r = self.arena(t);
        let g = self.g;
        let info = &g.tensors[r];
        if let Some(data) = info.data
            && self.materialized.insert(r)
        {
            let step = Step {
                kernel: "nn.constant".into(),
                loc: format!("{loc}:constant:{}", info.name),
                kind: StepKind::Layer,
                write: Some(r),
                attrs: vec![
                    ("to".into(), AttrSpec::Offset(r)),
                    (
                        "value".into(),
                        AttrSpec::Value(dense(
                            info.elem.name(),
                            &[data.len() / info.elem.size()],
                            data.to_vec(),
                        )),
                    ),
                ],
                op: None,
            };
            self.steps.push(step);
        }
        r
    }

    fn input(&self, op: &OpInfo<'_>, i: usize) -> Result<usize, String> {
        op.inputs.get(i).copied().flatten().ok_or_else(|| format!("input {i} is missing"))
    }

    fn output(&self, op: &OpInfo<'_>) -> Result<usize, String> {
        match op.outputs.as_slice() {
            [o] => {
                if self.t(*o).data.is_some() {
                    return Err("its output is a constant".into());
                }
                Ok(*o)
            }
            other => Err(format!("{} outputs where 1 belongs", other.len())),
        }
    }

    fn constant(&self, t: usize, what: &str) -> Result<&'a [u8], String> {
        self.t(t).data.ok_or_else(|| format!("the {what} '{}' is not a constant", self.t(t).name))
    }

    /// Per-tensor `(scale, zero point)` of an int8 tensor.
    fn quant(&self, t: usize, what: &str) -> Result<(f32, i32), String> {
        let info = self.t(t);
        let q = info
            .quant
            .as_ref()
            .ok_or_else(|| format!("the int8 {what} '{}' has no quantization", info.name))?;
        if q.scale.len() != 1 {
            return Err(format!("the {what} '{}' is quantized per axis where one scale belongs", info.name));
        }
        let (s, z) = q.single();
        if !(-128..=127).contains(&z) {
            return Err(format!("the {what} '{}' has zero point {z} outside int8", info.name));
        }
        Ok((s, z))
    }

    fn expect(&self, t: usize, what: &str, elem: ElemType, rank: Option<usize>) -> Result<(), String> {
        let info = self.t(t);
        if info.elem != elem {
            return Err(format!(
                "the {what} '{}' is {}, expected {}",
                info.name,
                info.elem.name(),
                elem.name()
            ));
        }
        if let Some(r) = rank
            && info.shape.len() != r
        {
            return Err(format!("the {what} '{}' has shape {:?}, expected rank {r}", info.name, info.shape));
        }
        Ok(())
    }

    fn push(&mut self, op: &OpInfo<'_>, kernel: &str, out: usize, attrs: Vec<(&str, AttrSpec)>) {
        let name = &self.t(out).name;
        self.steps.push(Step {
            kernel: kernel.into(),
            loc: format!("{}:{}", op.label(), name),
            kind: StepKind::Layer,
            write: Some(out),
            attrs: attrs.into_iter().map(|(n, v)| (n.to_string(), v)).collect(),
            op: Some(op.index),
        });
    }

    fn loc(&self, op: &OpInfo<'_>) -> String {
        op.label()
    }

    fn op(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        if self.folded.contains(&op.index) {
            return Ok(());
        }
        match op.code {
            3 => self.conv(op, false),
            4 => self.conv(op, true),
            9 => self.fully_connected(op),
            1 => self.pool(op, false),
            17 => self.pool(op, true),
            0 => self.binary(op, "add", kind::ADD),
            41 => self.binary(op, "sub", kind::SUB),
            18 => self.binary(op, "mul", kind::MUL),
            55 => self.binary(op, "maximum", kind::MAXIMUM_MINIMUM),
            57 => self.binary(op, "minimum", kind::MAXIMUM_MINIMUM),
            99 => self.binary(op, "squared_difference", kind::SQUARED_DIFFERENCE),
            54 => self.binary(op, "prelu", 0),
            25 => self.softmax(op),
            22 | 43 | 70 => self.reshape(op),
            114 => self.quantize(op),
            6 => self.dequantize(op),
            39 => self.transpose(op),
            65 => self.slice(op),
            45 => self.strided_slice(op),
            2 => self.concatenation(op, false),
            83 => self.concatenation(op, true),
            49 | 102 | 88 => self.split_op(op),
            34 | 60 => self.pad(op),
            100 => self.mirror_pad(op),
            14 | 19 | 20 | 21 | 28 | 98 | 117 => self.activation(op),
            50 => self.log_softmax(op),
            126 => self.batch_matmul(op),
            97 => self.resize(op, false),
            23 => self.resize(op, true),
            40 => self.reduce(op, "mean"),
            74 => self.reduce(op, "sum"),
            82 => self.reduce(op, "max"),
            89 => self.reduce(op, "min"),
            81 => self.reduce(op, "prod"),
            42 => self.binary(op, "div", kind::DIV),
            78 => self.binary(op, "pow", 0),
            8 | 47 | 59 | 66 | 73 | 75 | 76 | 92 | 101 | 104 | 108 | 111 | 116 | 150 => self.math(op),
            ext_op::RECIPROCAL..=ext_op::SIGN => self.math(op),
            ext_op::LAYER_NORM | ext_op::INSTANCE_NORM => self.normalization(op),
            ext_op::MATMUL_INTEGER => self.matmul_integer(op),
            ext_op::CONV_INTEGER => self.conv_integer(op),
            67 => self.transpose_conv(op),
            44 => self.lstm(op),
            37 | 38 => self.batch_space(op),
            58 | 61 | 62 | 63 | 71 | 72 => self.compare(op),
            84 | 86 | 87 => self.logical(op),
            64 | 123 => self.select(op),
            53 => self.cast(op),
            56 | 79 => self.arg(op),
            36 => self.gather(op),
            69 | 130 => self.tile(op),
            13 => self.lrn(op),
            _ => Err(format!("operator {} is not supported (supported: {})", op.name, SUPPORTED.join(", "))),
        }
    }

    fn window(
        &self,
        input: &[usize],
        filter: Hw,
        stride: Hw,
        dilation: Hw,
        pad: Padding,
        out: &[usize],
    ) -> Result<Window, String> {
        let w = Window::new(Hw::new(input[1], input[2]), filter, stride, dilation, pad)
            .map_err(|e| e.to_string())?;
        if (w.output.h, w.output.w) != (out[1], out[2]) {
            return Err(format!("output {out:?} does not match the window's {}x{}", w.output.h, w.output.w));
        }
        Ok(w)
    }

    fn conv(&mut self, op: &OpInfo<'_>, depthwise: bool) -> Result<(), String> {
        let o = Options::of(op, if depthwise { kind::DEPTHWISE_CONV_2D } else { kind::CONV_2D })?;
        let pad = padding(o.i8(0)?)?;
        let stride = hw(o.i32(2, 0)?, o.i32(1, 0)?, "stride")?;
        let (act, dil) = if depthwise {
            (o.i8(4)?, hw(o.i32(6, 1)?, o.i32(5, 1)?, "dilation")?)
        } else {
            (o.i8(3)?, hw(o.i32(5, 1)?, o.i32(4, 1)?, "dilation")?)
        };
        let act = fused(act)?;
        let (x, f, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        // A dilated convolution the converter split into batch-space operators (dilated.rs).
        let fold = self.folds.get(&op.index).copied();
        let (x, out, dil) = fold.map_or((x, out, dil), |fd| (fd.input, fd.output, fd.dilation));
        let bias = op.inputs.get(2).copied().flatten();
        let float = self.t(x).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        if float && self.t(f).elem == ElemType::I8 {
            return self.hybrid_conv(op, depthwise, (pad, stride, dil, act));
        }
        self.expect(x, "input", elem, Some(4))?;
        self.expect(f, "filter", elem, Some(4))?;
        self.expect(out, "output", elem, Some(4))?;
        let [xs, fs, os] = self.conv_shapes((x, f, out), depthwise)?;
        let oc = os[3];
        let pad = match (fold, explicit_pad(&o)) {
            (Some(fd), _) => Hw::new(fd.pad.0, fd.pad.1),
            (None, Some(p)) => p,
            (None, None) => self.window(&xs, Hw::new(fs[1], fs[2]), stride, dil, pad, &os)?.pad,
        };
        let filter = self.constant(f, "filter")?;
        let mut float_packed = None;
        // float32 convolutions run on hostrt-core's GEMM convolution, which takes HWIO.
        let filter = if float && !depthwise {
            let [o, h, w, i] = [fs[0], fs[1], fs[2], fs[3]];
            let hwio = transpose(filter, 4, &[o, h * w * i]);
            if self.pack_float && hostrt_ops::panels::packs(h * w * i, o) {
                float_packed = float_panels(&hwio, o);
            }
            dense(elem.name(), &[h, w, i, o], hwio)
        } else {
            dense(elem.name(), &fs, filter.to_vec())
        };
        let window = ints(&[stride.h, stride.w, dil.h, dil.w, pad.h, pad.w].map(|v| v as i32));
        let kernel =
            format!("nn.{}.{}", if depthwise { "depthwise_conv_2d" } else { "conv_2d" }, elem.name());
        let bias_attr = self.bias(bias, oc, elem)?;
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![
            ("bias", AttrSpec::Value(bias_attr)),
            ("filter", AttrSpec::Value(filter)),
            ("input", AttrSpec::Region { tensor: xr, dims: xs.clone() }),
        ];
        let packed = if (self.prepack || self.prepack_pairs) && !float && !depthwise {
            let window = Window {
                filter: Hw::new(fs[1], fs[2]),
                stride,
                dilation: dil,
                pad,
                output: Hw::new(os[1], os[2]),
            };
            let filter = self.constant(f, "filter")?;
            if self.prepack {
                self.packed_conv(x, (&xs, oc, window), (filter, bias))?
            } else {
                self.conv_pairs(x, (&xs, oc, window), filter)?
            }
        } else {
            None
        };
        attrs.extend(self.output_attrs((x, f, out), os, act, if depthwise { 3 } else { 0 })?);
        if let Some(packed) = packed {
            // In name order: after `output`.
            attrs.insert(5, ("packed", AttrSpec::Value(packed)));
        }
        if let Some(packed) = float_packed {
            // In name order: after `output`, before `range`.
            attrs.insert(4, ("packed", AttrSpec::Value(packed)));
        }
        attrs.push(("window", AttrSpec::Value(window)));
        self.push(op, &kernel, out, attrs);
        Ok(())
    }

    /// An int8 convolution's filter and bias laid out for the VNNI loops
    /// (`hostrt_dsp::prepack`), if the layer takes them.
    fn packed_conv(
        &self,
        x: usize,
        (xs, oc, window): (&[usize], usize, Window),
        (filter, bias): (&[u8], Option<usize>),
    ) -> Result<Option<Attr>, String> {
        let p = self.conv_params(x, (xs, oc, window))?;
        let Some(layout) = ConvLayout::of(&p) else { return Ok(None) };
        let bias = self.bias_values(bias)?;
        let mut out = vec![0u8; layout.len()];
        pack_conv(&p, &i8s(filter), bias.as_deref(), &mut out).map_err(|e| e.to_string())?;
        Ok(Some(dense("i8", &[layout.blocks(), layout.block_rows(), ROW], out)))
    }

    /// The parameters an int8 convolution's layouts depend on (its shapes and input zero
    /// point; not its output stage).
    fn conv_params(
        &self,
        x: usize,
        (xs, oc, window): (&[usize], usize, Window),
    ) -> Result<ConvParams, String> {
        Ok(ConvParams {
            input: Nhwc::new(xs[0], xs[1], xs[2], xs[3]),
            output_channels: oc,
            window,
            input_zero_point: self.quant(x, "input")?.1,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        })
    }

    /// An int8 convolution's filter laid out as int16 pairs for the AVX2 loops
    /// (`hostrt_dsp::prepack::pack_conv_pairs`), if the layer takes them.
    fn conv_pairs(
        &self,
        x: usize,
        (xs, oc, window): (&[usize], usize, Window),
        filter: &[u8],
    ) -> Result<Option<Attr>, String> {
        let p = self.conv_params(x, (xs, oc, window))?;
        let Some(len) = conv_pairs_len(&p) else { return Ok(None) };
        let mut pairs = vec![0i16; len];
        pack_conv_pairs(&p, &i8s(filter), &mut pairs).map_err(|e| e.to_string())?;
        let bytes = pairs.iter().flat_map(|v| v.to_le_bytes()).collect();
        Ok(Some(dense("i16", &[len / 16, 16], bytes)))
    }

    /// The shapes of a convolution's input, filter and output (rank 4, checked), when the
    /// filter fits them: `[out, kh, kw, in]`, or `[1, kh, kw, out]` for a depthwise one whose
    /// output channels are a multiple of the input's.
    fn conv_shapes(
        &self,
        (x, f, out): (usize, usize, usize),
        depthwise: bool,
    ) -> Result<[Vec<usize>; 3], String> {
        let (xs, fs, os) = (self.t(x).shape.clone(), self.t(f).shape.clone(), self.t(out).shape.clone());
        let oc = os[3];
        let fits = if depthwise {
            fs[0] == 1 && fs[3] == oc && xs[3] != 0 && oc % xs[3] == 0
        } else {
            fs[0] == oc && fs[3] == xs[3]
        };
        if !fits || xs[0] != os[0] {
            return Err(format!(
                "filter {fs:?} does not fit input {xs:?} and output {os:?} (grouped convolutions are not supported)"
            ));
        }
        Ok([xs, fs, os])
    }

    /// The attributes of a convolution or fully connected layer that follow `input`, in name
    /// order: `output` and `range` for float32; `multipliers`, `output`, `quant` and
    /// `shifts` for int8 (per-channel scales of filter `f` along `axis`, one per channel of
    /// the output's last dim).
    fn output_attrs(
        &self,
        (x, f, out): (usize, usize, usize),
        dims: Vec<usize>,
        act: Activation,
        axis: usize,
    ) -> Result<Vec<(&'static str, AttrSpec)>, String> {
        let channels = dims.last().copied().unwrap_or(1);
        let output = AttrSpec::Region { tensor: out, dims };
        if self.t(x).elem == ElemType::F32 {
            return Ok(vec![("output", output), ("range", AttrSpec::Value(floats(&float_range(act))))]);
        }
        let (mults, shifts) = self.per_channel(x, f, out, channels, axis)?;
        Ok(vec![
            ("multipliers", AttrSpec::Value(ints(&mults))),
            ("output", output),
            ("quant", AttrSpec::Value(self.quant_attr(x, out, act)?)),
            ("shifts", AttrSpec::Value(ints(&shifts))),
        ])
    }

    /// The bias as a dense attribute (zeros when the op has none).
    fn bias(&self, bias: Option<usize>, channels: usize, elem: ElemType) -> Result<Attr, String> {
        let want = if elem == ElemType::F32 { ElemType::F32 } else { ElemType::I32 };
        match bias {
            None => Ok(dense(want.name(), &[channels], vec![0; channels * 4])),
            Some(b) => {
                self.expect(b, "bias", want, None)?;
                if self.t(b).elements() != channels {
                    return Err(format!("bias of {} elements for {channels} channels", self.t(b).elements()));
                }
                Ok(dense(want.name(), &[channels], self.constant(b, "bias")?.to_vec()))
            }
        }
    }

    /// An int8 layer's bias values, if it has a bias (`bias` checked them as int32).
    fn bias_values(&self, bias: Option<usize>) -> Result<Option<Vec<i32>>, String> {
        bias.map(|b| self.constant(b, "bias").map(i32s_le)).transpose()
    }

    /// `[input zp, output zp, act min, act max]` of an int8 layer.
    fn quant_attr(&self, x: usize, out: usize, act: Activation) -> Result<Attr, String> {
        let (_, xz) = self.quant(x, "input")?;
        let (os, oz) = self.quant(out, "output")?;
        let r = ActivationRange::for_activation(act, os, oz).map_err(|e| e.to_string())?;
        Ok(ints(&[xz, oz, r.min, r.max]))
    }

    /// TFLite's per-channel multipliers: `input scale * filter scale[c] / output scale`.
    fn per_channel(
        &self,
        x: usize,
        f: usize,
        out: usize,
        channels: usize,
        axis: usize,
    ) -> Result<(Vec<i32>, Vec<i32>), String> {
        let (xs, _) = self.quant(x, "input")?;
        let (os, _) = self.quant(out, "output")?;
        let fq = self.t(f).quant.as_ref().ok_or("the int8 filter has no quantization")?;
        if fq.zero_point.iter().any(|&z| z != 0) {
            return Err("the filter's zero points must be 0 (symmetric int8 weights)".into());
        }
        if fq.scale.len() != 1 && (fq.scale.len() != channels || fq.axis != axis) {
            return Err(format!(
                "the filter has {} scales along axis {}, expected 1 or {channels} along {axis}",
                fq.scale.len(),
                fq.axis
            ));
        }
        let (mut m, mut s) = (Vec::new(), Vec::new());
        for c in 0..channels {
            let fs = fq.scale[if fq.scale.len() == 1 { 0 } else { c }];
            let (mult, shift) = quantize_multiplier(f64::from(xs) * f64::from(fs) / f64::from(os));
            m.push(mult);
            s.push(shift);
        }
        Ok((m, s))
    }

    fn fully_connected(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::FULLY_CONNECTED)?;
        let act = fused(o.i8(0)?)?;
        if o.i8(1)? != 0 {
            return Err("shuffled weights formats are not supported".into());
        }
        let (x, f, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let bias = op.inputs.get(2).copied().flatten();
        let float = self.t(x).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        if float && self.t(f).elem == ElemType::I8 {
            return self.hybrid_fully_connected(op, act, o.bool(3)?);
        }
        self.expect(x, "input", elem, None)?;
        self.expect(f, "weights", elem, Some(2))?;
        self.expect(out, "output", elem, None)?;
        let fs = self.t(f).shape.clone();
        let (units, depth) = (fs[0], fs[1]);
        let n = self.t(x).elements();
        if depth == 0 || !n.is_multiple_of(depth) {
            return Err(format!("input of {n} elements does not split into rows of {depth}"));
        }
        let batches = n / depth;
        if self.t(out).elements() != batches * units {
            return Err(format!("output {:?} is not {batches}x{units}", self.t(out).shape));
        }
        let bias_attr = self.bias(bias, units, elem)?;
        let weights = self.constant(f, "weights")?;
        // float32 runs on hostrt-core's GEMM, whose right-hand side is [in, out].
        let filter = if float {
            dense(elem.name(), &[depth, units], transpose(weights, 4, &[units, depth]))
        } else {
            dense(elem.name(), &fs, weights.to_vec())
        };
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![
            ("bias", AttrSpec::Value(bias_attr)),
            ("filter", AttrSpec::Value(filter)),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![batches, depth] }),
        ];
        attrs.extend(self.output_attrs((x, f, out), vec![batches, units], act, 0)?);
        if self.prepack_fc && !float {
            let p = FullyConnectedParams {
                batches,
                input_depth: depth,
                output_depth: units,
                input_zero_point: self.quant(x, "input")?.1,
                output_zero_point: 0,
                activation: ActivationRange::INT8,
            };
            if let Some(layout) = ConvLayout::of_fully_connected(&p) {
                let bias = self.bias_values(bias)?;
                let mut out = vec![0u8; layout.len()];
                pack_fully_connected(&p, &i8s(weights), bias.as_deref(), &mut out)
                    .map_err(|e| e.to_string())?;
                let packed = dense("i8", &[layout.blocks(), layout.block_rows(), ROW], out);
                // In name order: after `output`.
                attrs.insert(5, ("packed", AttrSpec::Value(packed)));
            }
        }
        self.push(op, &format!("nn.fully_connected.{}", elem.name()), out, attrs);
        Ok(())
    }

    fn pool(&mut self, op: &OpInfo<'_>, max: bool) -> Result<(), String> {
        let o = Options::of(op, kind::POOL_2D)?;
        let pad = padding(o.i8(0)?)?;
        let stride = hw(o.i32(2, 0)?, o.i32(1, 0)?, "stride")?;
        let filter = hw(o.i32(4, 0)?, o.i32(3, 0)?, "filter")?;
        let act = fused(o.i8(5)?)?;
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let float = self.t(x).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        self.expect(x, "input", elem, Some(4))?;
        self.expect(out, "output", elem, Some(4))?;
        let (xs, os) = (self.t(x).shape.clone(), self.t(out).shape.clone());
        if xs[0] != os[0] || xs[3] != os[3] {
            return Err(format!("input {xs:?} and output {os:?} differ in batches or channels"));
        }
        let pad = match explicit_pad(&o) {
            Some(p) => p,
            None => self.window(&xs, filter, stride, Hw::square(1), pad, &os)?.pad,
        };
        let range = if float {
            floats(&float_range(act))
        } else {
            if self.quant(x, "input")? != self.quant(out, "output")? {
                return Err("int8 pooling needs the same scale and zero point on input and output".into());
            }
            let (s, z) = self.quant(out, "output")?;
            let r = ActivationRange::for_activation(act, s, z).map_err(|e| e.to_string())?;
            ints(&[r.min, r.max])
        };
        let mut window = vec![filter.h, filter.w, stride.h, stride.w, pad.h, pad.w];
        // A translated ONNX pool's dilation, when not 1 (TensorFlow Lite's pools have none).
        let dilation = ext_dilation(&o)?;
        if dilation != Hw::square(1) {
            window.extend([dilation.h, dilation.w]);
        }
        let window = ints(&window.iter().map(|&v| v as i32).collect::<Vec<_>>());
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let kernel = format!("nn.{}.{}", if max { "max_pool_2d" } else { "average_pool_2d" }, elem.name());
        let attrs = vec![
            ("input", AttrSpec::Region { tensor: xr, dims: xs }),
            ("output", AttrSpec::Region { tensor: out, dims: os }),
            ("range", AttrSpec::Value(range)),
            ("window", AttrSpec::Value(window)),
        ];
        self.push(op, &kernel, out, attrs);
        Ok(())
    }

    /// A broadcasting binary operator; `options` is the type of its options table, which
    /// holds the fused activation for add, sub and mul.
    fn binary(&mut self, op: &OpInfo<'_>, name: &str, options: u8) -> Result<(), String> {
        let o = Options::of(op, options)?;
        let act = if matches!(options, kind::ADD | kind::SUB | kind::MUL | kind::DIV) {
            fused(o.i8(0)?)?
        } else {
            Activation::None
        };
        // A translated graph's arithmetic is not clamped to the finite range as TFLite's is.
        let unbounded = o.ext(ext::UNBOUNDED).is_some();
        let (a, b, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let float = self.t(out).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        for (t, what) in [(a, "first input"), (b, "second input"), (out, "output")] {
            self.expect(t, what, elem, None)?;
            if self.t(t).shape.len() > 4 {
                return Err(format!(
                    "the {what} has rank {} (at most 4 is supported)",
                    self.t(t).shape.len()
                ));
            }
        }
        let four = select::four;
        let (ad, bd, od) = (four(&self.t(a).shape)?, four(&self.t(b).shape)?, four(&self.t(out).shape)?);
        for i in 0..4 {
            let want = ad[i].max(bd[i]);
            let ok = |d: usize| d == od[i] || d == 1;
            if od[i] != want || !ok(ad[i]) || !ok(bd[i]) {
                return Err(format!(
                    "shapes {:?} and {:?} do not broadcast to {:?}",
                    self.t(a).shape,
                    self.t(b).shape,
                    self.t(out).shape
                ));
            }
        }
        let quant_or_range = if float && unbounded && act == Activation::None {
            ("range", floats(&[f32::NEG_INFINITY, f32::INFINITY]))
        } else if float {
            ("range", floats(&float_range(act)))
        } else if matches!(name, "div" | "pow") {
            return Err(format!("int8 {} is not supported", op.name));
        } else {
            let ((sa, za), (sb, zb), (so, zo)) =
                (self.quant(a, "first input")?, self.quant(b, "second input")?, self.quant(out, "output")?);
            let r = ActivationRange::for_activation(act, so, zo).map_err(|e| e.to_string())?;
            // The multipliers are computed in the precision TFLite Micro's Prepare uses: add
            // and squared difference in double, sub in float.
            let rescaled = |left: i32, real: [f64; 3]| {
                let [(m1, s1), (m2, s2), (mo, so_)] = real.map(quantize_multiplier);
                ("quant", ints(&[-za, m1, s1, -zb, m2, s2, zo, mo, so_, left, r.min, r.max]))
            };
            match name {
                "add" => {
                    let twice_max = 2.0 * f64::from(sa.max(sb));
                    let out = twice_max / (f64::from(1 << 20) * f64::from(so));
                    rescaled(20, [f64::from(sa) / twice_max, f64::from(sb) / twice_max, out])
                }
                "sub" => {
                    let twice_max = 2.0 * sa.max(sb);
                    let out = f64::from(twice_max / ((1 << 20) as f32 * so));
                    rescaled(20, [f64::from(sa / twice_max), f64::from(sb / twice_max), out])
                }
                "squared_difference" => {
                    let twice_max = 2.0 * f64::from(sa.max(sb));
                    let out = twice_max * twice_max / (f64::from(1 << 14) * f64::from(so));
                    rescaled(7, [f64::from(sa) / twice_max, f64::from(sb) / twice_max, out])
                }
                "mul" => {
                    let (m, s) = quantize_multiplier(f64::from(sa) * f64::from(sb) / f64::from(so));
                    ("quant", ints(&[-za, -zb, zo, m, s, r.min, r.max]))
                }
                "maximum" | "minimum" => {
                    if (sa, za) != (so, zo) || (sb, zb) != (so, zo) {
                        return Err("int8 operands and output must share one quantization".into());
                    }
                    ("quant", ints(&[-128, 127]))
                }
                "prelu" => {
                    let (m1, s1) = quantize_multiplier(f64::from(sa) / f64::from(so));
                    let (m2, s2) = quantize_multiplier(f64::from(sa) * f64::from(sb) / f64::from(so));
                    ("quant", ints(&[-za, -zb, zo, m1, s1, m2, s2, -128, 127]))
                }
                _ => return Err(format!("int8 {} is not supported", op.name)),
            }
        };
        // A constant operand is read in place from the program (no arena slot, no copy).
        let loc = self.loc(op);
        let mut operand = |t: usize, dims: Vec<usize>| match self.t(self.arena(t)).data {
            Some(data) => AttrSpec::Value(dense(elem.name(), &dims, data.to_vec())),
            None => AttrSpec::Region { tensor: self.read(t, &loc), dims },
        };
        let (lhs, rhs) = (operand(a, ad), operand(b, bd));
        let attrs = vec![
            ("lhs", lhs),
            ("output", AttrSpec::Region { tensor: out, dims: od }),
            (quant_or_range.0, AttrSpec::Value(quant_or_range.1)),
            ("rhs", rhs),
        ];
        self.push(op, &format!("nn.{name}.{}", elem.name()), out, attrs);
        Ok(())
    }

    fn softmax(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::SOFTMAX)?;
        let beta = o.f32(0, 0.0)?;
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let float = self.t(x).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        self.expect(x, "input", elem, None)?;
        self.expect(out, "output", elem, None)?;
        let shape = self.t(x).shape.clone();
        if shape != self.t(out).shape || shape.last().is_none_or(|&d| d == 0) {
            return Err(format!("input {shape:?} and output {:?} differ or are empty", self.t(out).shape));
        }
        let depth = *shape.last().unwrap_or(&1);
        let dims = vec![self.t(x).elements() / depth, depth];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = if float {
            vec![
                ("beta", AttrSpec::Value(floats(&[beta]))),
                ("input", AttrSpec::Region { tensor: xr, dims: dims.clone() }),
                ("output", AttrSpec::Region { tensor: out, dims }),
            ]
        } else {
            let (s, _) = self.quant(x, "input")?;
            let (os, oz) = self.quant(out, "output")?;
            if oz != -128 || os != 1.0 / 256.0 {
                return Err(format!(
                    "int8 softmax output must have scale 1/256 and zero point -128, has {os} and {oz}"
                ));
            }
            let p = SoftmaxParams::new(f64::from(beta), f64::from(s)).map_err(|e| e.to_string())?;
            vec![
                ("input", AttrSpec::Region { tensor: xr, dims: dims.clone() }),
                ("output", AttrSpec::Region { tensor: out, dims }),
                ("params", AttrSpec::Value(ints(&[p.input_multiplier, p.input_left_shift, p.diff_min]))),
            ]
        };
        self.push(op, &format!("nn.softmax.{}", elem.name()), out, attrs);
        Ok(())
    }

    fn reshape(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let (xi, oi) = (self.t(x), self.t(out));
        if xi.elem != oi.elem || xi.elements() != oi.elements() {
            return Err(format!(
                "{} {:?} cannot become {} {:?}",
                xi.elem.name(),
                xi.shape,
                oi.elem.name(),
                oi.shape
            ));
        }
        if xi.quant.is_some() && oi.quant.is_some() && xi.quant != oi.quant {
            return Err("input and output quantization differ".into());
        }
        // The output is the input's bytes under another shape.
        self.root[out] = self.arena(x);
        Ok(())
    }

    /// An element-by-element conversion of `x` into `out`: `input` and `output` regions of
    /// `[elements]`, then `params` (whose names sort after `output`).
    fn convert(
        &mut self,
        op: &OpInfo<'_>,
        (x, out): (usize, usize),
        kernel: &str,
        params: Vec<(&str, AttrSpec)>,
    ) -> Result<(), String> {
        let n = self.t(x).elements();
        if n != self.t(out).elements() {
            return Err("input and output sizes differ".into());
        }
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![
            ("input", AttrSpec::Region { tensor: xr, dims: vec![n] }),
            ("output", AttrSpec::Region { tensor: out, dims: vec![n] }),
        ];
        attrs.extend(params);
        self.push(op, kernel, out, attrs);
        Ok(())
    }

    fn quantize(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(out, "output", ElemType::I8, None)?;
        let (os, oz) = self.quant(out, "output")?;
        match self.t(x).elem {
            ElemType::F32 => self.convert(
                op,
                (x, out),
                "nn.quantize.f32.i8",
                vec![("scale", AttrSpec::Value(floats(&[os]))), ("zero_point", AttrSpec::Value(ints(&[oz])))],
            ),
            ElemType::I8 => {
                let (xs, xz) = self.quant(x, "input")?;
                let (m, s) = quantize_multiplier(f64::from(xs) / f64::from(os));
                self.convert(
                    op,
                    (x, out),
                    "nn.requantize.i8",
                    vec![("quant", AttrSpec::Value(ints(&[xz, oz, m, s])))],
                )
            }
            e => Err(format!("quantizing {} input is not supported", e.name())),
        }
    }

    fn dequantize(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(x, "input", ElemType::I8, None)?;
        self.expect(out, "output", ElemType::F32, None)?;
        let (s, z) = self.quant(x, "input")?;
        self.convert(
            op,
            (x, out),
            "nn.dequantize.i8.f32",
            vec![("scale", AttrSpec::Value(floats(&[s]))), ("zero_point", AttrSpec::Value(ints(&[z])))],
        )
    }
}

/// The operators the importer lowers today.
pub const SUPPORTED: &[&str] = &[
    "ABS (float32)",
    "ADD",
    "ARG_MAX",
    "ARG_MIN",
    "AVERAGE_POOL_2D",
    "BATCH_MATMUL",
    "BATCH_TO_SPACE_ND",
    "BROADCAST_TO",
    "CAST",
    "CEIL (float32)",
    "CONCATENATION",
    "CONV_2D (also dynamic-range int8 weights)",
    "COS (float32)",
    "DEPTHWISE_CONV_2D (also dynamic-range int8 weights)",
    "DEQUANTIZE",
    "DIV (float32)",
    "ELU (float32)",
    "EQUAL",
    "EXP (float32)",
    "EXPAND_DIMS",
    "FLOOR (float32)",
    "FULLY_CONNECTED (also dynamic-range int8 weights)",
    "GATHER",
    "GELU (float32)",
    "GREATER",
    "GREATER_EQUAL",
    "HARD_SWISH",
    "LEAKY_RELU",
    "LESS",
    "LESS_EQUAL",
    "LOCAL_RESPONSE_NORMALIZATION (float32)",
    "LOG (float32)",
    "LOGICAL_AND",
    "LOGICAL_NOT",
    "LOGICAL_OR",
    "LOGISTIC",
    "LOG_SOFTMAX",
    "MAXIMUM",
    "MAX_POOL_2D",
    "MEAN",
    "MINIMUM",
    "MIRROR_PAD",
    "MUL",
    "NEG (float32)",
    "NOT_EQUAL",
    "PACK",
    "PAD",
    "PADV2",
    "POW (float32)",
    "PRELU",
    "QUANTIZE",
    "REDUCE_MAX (float32)",
    "REDUCE_MIN (float32)",
    "REDUCE_PROD (float32)",
    "RELU",
    "RELU6",
    "RELU_N1_TO_1",
    "RESHAPE",
    "RESIZE_BILINEAR",
    "RESIZE_NEAREST_NEIGHBOR",
    "ROUND (float32)",
    "RSQRT (float32)",
    "SELECT",
    "SELECT_V2",
    "SIN (float32)",
    "SLICE",
    "SOFTMAX",
    "SPACE_TO_BATCH_ND",
    "SPLIT",
    "SPLIT_V",
    "SQRT (float32)",
    "SQUARE (float32)",
    "SQUARED_DIFFERENCE",
    "SQUEEZE",
    "STRIDED_SLICE",
    "SUB",
    "SUM",
    "TANH",
    "TILE",
    "TRANSPOSE",
    "TRANSPOSE_CONV",
    "UNIDIRECTIONAL_SEQUENCE_LSTM (tanh; float32 also with peephole, projection, layer norm, CIFG)",
    "UNPACK",
];
