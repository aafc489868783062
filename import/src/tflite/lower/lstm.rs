//! UNIDIRECTIONAL_SEQUENCE_LSTM in its standard form, what Keras' `LSTM` layer converts to
//! (tf_keras: Keras 3's LSTM converts to a WHILE loop instead): four gates, tanh
//! activation, no peephole, projection, layer normalization or coupled input-forget gate,
//! which TensorFlow Lite Micro refuses as well (`LstmTensors::ValidateTensorStatus`). It
//! lowers to `nn.lstm.f32` (LiteRT's float arithmetic) or `nn.lstm.i8` (TFLM's 8x8->16
//! integer LSTM, its `Prepare` parameters computed here as `PrepareGateParametersInteger`
//! and `CreateLstmCellStateInfo` in `lstm_eval_common.cc` compute them).
//!
//! The output and cell states are variable tensors in the model; the kernel keeps them in
//! the step's scratch region and starts them at zero for every call (the int8 output state
//! at its zero point, as TFLM's `ResetVariableTensors`): one call runs one whole sequence,
//! and no state persists from one call to the next.

use hostrt_dsp::quantize_multiplier;

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, floats, ints};

/// Input positions (TFLite's `lstm_shared.h`).
const INPUT_WEIGHTS: [usize; 4] = [1, 2, 3, 4];
const RECURRENT_WEIGHTS: [usize; 4] = [5, 6, 7, 8];
const PEEPHOLE: [usize; 3] = [9, 10, 11];
const BIASES: [usize; 4] = [12, 13, 14, 15];
const PROJECTION: [usize; 2] = [16, 17];
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
const LAYER_NORM: [usize; 4] = [20, 21, 22, 23];

/// The fused activation code of TANH.
const TANH: i8 = 4;

/// The scale of the gates' fully connected outputs (Q3.12) and of their activations (Q0.15)
/// in TFLM's integer LSTM.
const GATE_INPUT_SCALE: f32 = 1.0 / 4096.0;
const GATE_OUTPUT_SCALE: f32 = 1.0 / 32768.0;

impl Lowerer<'_, '_> {
    pub(super) fn lstm(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::UNIDIRECTIONAL_SEQUENCE_LSTM)?;
        let act = o.i8(0)?;
        if act != TANH {
            return Err(format!("cell activation {act} is not supported (only TANH, code 4)"));
        }
        let cell_clip = o.f32(1, 0.0)?;
        if !cell_clip.is_finite() || cell_clip < 0.0 {
            return Err(format!("cell clip {cell_clip} is not a finite non-negative number"));
        }
        // proj_clip (field 2) applies to the projection, which is refused below.
        let time_major = o.bool(3)?;
        if o.bool(5)? {
            return Err("diagonal recurrent weights are not supported".into());
        }
        if op.inputs.len() != 24 {
            return Err(format!("{} inputs where 24 belong", op.inputs.len()));
        }
        let present = |i: &usize| op.inputs[*i].is_some();
        for (what, list) in
            [("peephole", &PEEPHOLE[..]), ("projection", &PROJECTION), ("layer norm", &LAYER_NORM)]
        {
            if list.iter().any(present) {
                return Err(format!("LSTMs with {what} weights are not supported"));
            }
        }
        if !present(&INPUT_WEIGHTS[0]) || !present(&RECURRENT_WEIGHTS[0]) || !present(&BIASES[0]) {
            return Err("coupled input-forget gate (CIFG) LSTMs are not supported".into());
        }
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let (h, c) = (self.input(op, OUTPUT_STATE)?, self.input(op, CELL_STATE)?);
        for (t, what) in [(h, "output state"), (c, "cell state")] {
            let info = self.t(t);
            if !info.variable || info.data.is_some() {
                return Err(format!("the {what} '{}' is not a variable tensor", info.name));
            }
        }
        let xs = self.t(x).shape.clone();
        let [d0, d1, features] = xs[..] else {
            return Err(format!("the input has shape {xs:?}, expected rank 3"));
        };
        let batches = if time_major { d1 } else { d0 };
        let state = self.t(self.input(op, RECURRENT_WEIGHTS[1])?).shape.first().copied().unwrap_or(0);
        if features == 0 || state == 0 || d0 == 0 || d1 == 0 {
            return Err(format!("empty LSTM: input {xs:?}, {state} units"));
        }
        if self.t(out).shape != [d0, d1, state] {
            return Err(format!("output {:?} is not [{d0}, {d1}, {state}]", self.t(out).shape));
        }
        for (t, what) in [(h, "output state"), (c, "cell state")] {
            if Some(self.t(t).elements()) != batches.checked_mul(state) {
                return Err(format!("the {what} has shape {:?}, not {batches}x{state}", self.t(t).shape));
            }
        }
        match self.t(x).elem {
            ElemType::F32 => {
                if self.t(self.input(op, INPUT_WEIGHTS[1])?).elem == ElemType::I8 {
                    return Err("dynamic-range (hybrid) LSTMs are not supported".into());
                }
                self.lstm_float(op, [x, out, h, c], (features, state), cell_clip, time_major)
            }
            ElemType::I8 => self.lstm_int8(op, [x, out, h, c], (features, state), cell_clip, time_major),
            e => Err(format!("{} LSTMs are not supported (float32 and int8 are)", e.name())),
        }
    }

    /// Checks the eight weight matrices (`[state, features]` and `[state, state]`, of
    /// `elem`) and four biases (`[state]`, of `bias`) and returns them stacked in gate order.
    fn lstm_weights(
        &self,
        op: &OpInfo<'_>,
        (elem, bias): (ElemType, ElemType),
        (features, state): (usize, usize),
    ) -> Result<[Vec<u8>; 3], String> {
        let mut stacked = [Vec::new(), Vec::new(), Vec::new()];
        let groups =
            [(&INPUT_WEIGHTS, elem, vec![state, features]), (&RECURRENT_WEIGHTS, elem, vec![state, state])];
        for (k, (list, elem, shape)) in groups.into_iter().enumerate() {
            for &i in list.iter() {
                let t = self.input(op, i)?;
                self.expect(t, &format!("weights (input {i})"), elem, Some(2))?;
                if self.t(t).shape != shape {
                    return Err(format!(
                        "weights (input {i}) have shape {:?}, expected {shape:?}",
                        self.t(t).shape
                    ));
                }
                stacked[k].extend_from_slice(self.constant(t, "weights")?);
            }
        }
        for &i in &BIASES {
            let t = self.input(op, i)?;
            self.expect(t, &format!("bias (input {i})"), bias, Some(1))?;
            if self.t(t).shape != [state] {
                return Err(format!("bias (input {i}) has shape {:?}, expected [{state}]", self.t(t).shape));
            }
            stacked[2].extend_from_slice(self.constant(t, "bias")?);
        }
        Ok(stacked)
    }

    fn lstm_float(
        &mut self,
        op: &OpInfo<'_>,
        [x, out, h, c]: [usize; 4],
        (features, state): (usize, usize),
        cell_clip: f32,
        time_major: bool,
    ) -> Result<(), String> {
        for (t, what) in [(out, "output"), (h, "output state"), (c, "cell state")] {
            self.expect(t, what, ElemType::F32, None)?;
        }
        let [wx, wh, bias] = self.lstm_weights(op, (ElemType::F32, ElemType::F32), (features, state))?;
        let [d0, d1] = [self.t(x).shape[0], self.t(x).shape[1]];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("bias", AttrSpec::Value(dense("f32", &[4, state], bias))),
            ("clip", AttrSpec::Value(floats(&[cell_clip]))),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![d0, d1, features] }),
            ("input_weights", AttrSpec::Value(dense("f32", &[4, state, features], wx))),
            ("output", AttrSpec::Region { tensor: out, dims: vec![d0, d1, state] }),
            ("recurrent_weights", AttrSpec::Value(dense("f32", &[4, state, state], wh))),
            // Hidden and cell state, four gates.
            ("scratch", AttrSpec::Scratch(state.checked_mul(24).ok_or("the state is too large")?)),
            ("time_major", AttrSpec::Value(ints(&[i32::from(time_major)]))),
        ];
        self.push(op, "nn.lstm.f32", out, attrs);
        Ok(())
    }

    fn lstm_int8(
        &mut self,
        op: &OpInfo<'_>,
        [x, out, h, c]: [usize; 4],
        (features, state): (usize, usize),
        cell_clip: f32,
        time_major: bool,
    ) -> Result<(), String> {
        self.expect(out, "output", ElemType::I8, None)?;
        self.expect(h, "output state", ElemType::I8, None)?;
        self.expect(c, "cell state", ElemType::I16, None)?;
        let [wx, wh, bias] = self.lstm_weights(op, (ElemType::I8, ElemType::I32), (features, state))?;
        let (x_scale, x_zp) = self.quant(x, "input")?;
        let (h_scale, h_zp) = self.quant(h, "output state")?;
        let (c_scale, _) = self.quant(c, "cell state")?;
        let multiplier = |what: &str, real: f64| -> Result<[i32; 2], String> {
            let (m, s) = quantize_multiplier(real);
            if !(-31..=30).contains(&s) {
                return Err(format!("the {what} multiplier {real} is out of range"));
            }
            Ok([m, s])
        };
        // Per gate: the input and recurrent fully connected layers into Q3.12
        // (`CreateGateParams`: `GetQuantizedConvolutionMultipler` multiplies the scales in
        // float, divides in double).
        let mut gates = Vec::new();
        for (wi, wr) in INPUT_WEIGHTS.iter().zip(&RECURRENT_WEIGHTS) {
            for (i, from_scale) in [(*wi, x_scale), (*wr, h_scale)] {
                let w = self.input(op, i)?;
                let (w_scale, w_zp) = self.quant(w, &format!("weights (input {i})"))?;
                if w_zp != 0 {
                    return Err(format!("weights (input {i}) have zero point {w_zp}, expected 0"));
                }
                let real = f64::from(from_scale * w_scale) / f64::from(GATE_INPUT_SCALE);
                gates.extend(multiplier("gate", real)?);
            }
        }
        // `CreateInterGateMulParams`: forget gate x cell state and input gate x cell gate
        // into the cell state, tanh(cell state) x output gate into the output state.
        let product = |a: f32, b: f32, out: f32| f64::from(a) * f64::from(b) / f64::from(out);
        let mut muls = Vec::new();
        muls.extend(multiplier("cell", product(GATE_OUTPUT_SCALE, c_scale, c_scale))?);
        muls.extend(multiplier("cell", product(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, c_scale))?);
        muls.extend(multiplier("output state", product(GATE_OUTPUT_SCALE, GATE_OUTPUT_SCALE, h_scale))?);
        // `CreateLstmCellStateInfo`: the cell scale's power of two (`CheckedLog2`, unchecked
        // as TFLM leaves it) and the clip in cell units, truncated to int16.
        let power = (c_scale.ln() * (1.0f32 / 2.0f32.ln())).round() as i32;
        let clip = if cell_clip > 0.0 {
            [1, (f64::from(cell_clip) / f64::from(c_scale)).clamp(-32768.0, 32767.0) as i16 as i32]
        } else {
            [0, 0]
        };
        // `lstm_internal::Tanh`: a left shift becomes the multiplier `3 << shift` (the power
        // of two case of the int16 tanh), a negative one a right shift of `3 * x`.
        let left = 15 + power - 3;
        let tanh = match left {
            0..=14 => [3 << left, 0],
            -30..=-1 => [3, -left],
            _ => return Err(format!("the cell state scale {c_scale} (2^{power}) is out of range")),
        };
        let [d0, d1] = [self.t(x).shape[0], self.t(x).shape[1]];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("bias", AttrSpec::Value(dense("i32", &[4, state], bias))),
            ("cell", AttrSpec::Value(ints(&[clip[0], clip[1], tanh[0], tanh[1]]))),
            ("gates", AttrSpec::Value(ints(&gates))),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![d0, d1, features] }),
            ("input_weights", AttrSpec::Value(dense("i8", &[4, state, features], wx))),
            ("mul", AttrSpec::Value(ints(&muls))),
            ("output", AttrSpec::Region { tensor: out, dims: vec![d0, d1, state] }),
            ("quant", AttrSpec::Value(ints(&[x_zp, h_zp]))),
            ("recurrent_weights", AttrSpec::Value(dense("i8", &[4, state, state], wh))),
            // Cell state and four gates (int16), then the output state (int8).
            ("scratch", AttrSpec::Scratch(state.checked_mul(11).ok_or("the state is too large")?)),
            ("time_major", AttrSpec::Value(ints(&[i32::from(time_major)]))),
        ];
        self.push(op, "nn.lstm.i8", out, attrs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use hostrt_compiler::ast::{Attr, Op};
    use hostrt_core::basic_kernels::register_basic_kernels;
    use hostrt_core::executor::Program;
    use hostrt_core::tensor::DenseHostTensor;
    use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
    use hostrt_std::{AlignedBytes, SystemAllocator};

    use super::super::super::model::{Graph, Quant};
    use super::super::{dense, floats, ints, lower};
    use crate::npy;

    fn model(name: &str) -> Vec<u8> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/");
        std::fs::read(format!("{dir}{name}")).expect("model")
    }

    fn allocator() -> Allocator {
        static A: OnceLock<Allocator> = OnceLock::new();
        *A.get_or_init(|| Allocator::register(Box::leak(Box::new(SystemAllocator::new()))).expect("slot"))
    }

    /// Runs `@main` of `module` on the model's golden input: its output bytes, or the error.
    fn run(module: &hostrt_compiler::ast::Module, name: &str) -> Result<Vec<u8>, String> {
        let mut registry: KernelRegistry<256> = KernelRegistry::new();
        register_basic_kernels(&mut registry).map_err(|e| format!("{e:?}"))?;
        registry.add_entries(hostrt_ops::KERNELS).map_err(|e| format!("{e:?}"))?;
        let alloc = allocator();
        let queue = SingleThreadedWorkQueue::new();
        let host = HostContext::new(alloc, &queue);
        let bef =
            hostrt_compiler::bef::write_with(module, None, Default::default()).map_err(|e| e.to_string())?;
        let bytes = AlignedBytes::new(&bef);
        let program = Program::load(bytes.as_bytes(), &registry, &host).map_err(|e| e.to_string())?;
        let x = npy::read(&model(&format!("{name}.input.npy")))?;
        let arg = host.make_available(npy::to_tensor(alloc, &x)?).map_err(|e| e.to_string())?.into_rc();
        let results = program.call(&host, "main", &[arg]).map_err(|e| format!("{e:?}"))?;
        let out = results.get::<DenseHostTensor>(0).map_err(|e| e.to_string())?;
        Ok(npy::from_tensor(out)?.data)
    }

    /// The model's LSTM kernel in `module`.
    fn lstm_op(module: &mut hostrt_compiler::ast::Module) -> &mut Op {
        let ops = module.funcs.iter_mut().filter_map(|f| f.body.as_mut()).flat_map(|b| b.ops.iter_mut());
        ops.into_iter().find(|op| op.name.starts_with("nn.lstm.")).expect("an nn.lstm kernel")
    }

    fn attr<'m>(op: &'m mut Op, name: &str) -> &'m mut Attr {
        &mut op.attrs.iter_mut().find(|a| a.name == name).expect("attribute").value
    }

    fn int_at(a: &Attr, i: usize) -> i32 {
        match a {
            Attr::Array(v) => match v[i] {
                Attr::Int { value, .. } => value as i32,
                _ => panic!("not an int"),
            },
            _ => panic!("not an array"),
        }
    }

    #[test]
    fn state_starts_at_zero_on_every_call() {
        for name in ["lstm_sequence_i8", "lstm_sequence_f32"] {
            let module = crate::tflite(&model(&format!("{name}.tflite"))).expect("imports").module;
            let golden = npy::read(&model(&format!("{name}.output.npy"))).expect("golden").data;
            let first = run(&module, name).expect("runs");
            // The same sequence again: the same output (no state carried over).
            assert_eq!(run(&module, name).expect("runs"), first, "{name}");
            if name.ends_with("i8") {
                assert_eq!(first, golden);
            }
        }
    }

    #[test]
    fn kernels_refuse_bad_attributes() {
        type Mutation = (&'static str, fn(&mut Op));
        let int8: &[Mutation] = &[
            ("scratch", |op| {
                let at = int_at(attr(op, "scratch"), 0);
                *attr(op, "scratch") = ints(&[at, 3]);
            }),
            ("outside the arena", |op| *attr(op, "scratch") = ints(&[i32::MAX - 4, 1000])),
            ("time_major", |op| *attr(op, "time_major") = ints(&[2])),
            ("shift", |op| *attr(op, "gates") = ints(&[1 << 30, 40, 1 << 30, 0].repeat(4))),
            ("mul", |op| *attr(op, "mul") = ints(&[1 << 30, -14])),
            ("zero points", |op| *attr(op, "quant") = ints(&[300, 0])),
            ("clip", |op| *attr(op, "cell") = ints(&[1, -5, 3, 2])),
            ("tanh rescale", |op| *attr(op, "cell") = ints(&[0, 0, 3 << 15, 0])),
            ("do not fit", |op| {
                let at = int_at(attr(op, "input"), 0);
                *attr(op, "input") = ints(&[at, 1, 8, 7]);
            }),
            ("overlaps", |op| {
                let at = int_at(attr(op, "output"), 0);
                *attr(op, "input") = ints(&[at, 1, 8, 6]);
            }),
            ("bias", |op| *attr(op, "bias") = dense("i32", &[4, 5], vec![0; 80])),
            ("outside the arena", |op| *attr(op, "output") = ints(&[1 << 20, 1, 8, 12])),
        ];
        let float: &[Mutation] = &[
            ("NaN", |op| *attr(op, "clip") = floats(&[f32::NAN])),
            ("scratch", |op| {
                let at = int_at(attr(op, "scratch"), 0);
                *attr(op, "scratch") = ints(&[at, 24 * 12 - 1]);
            }),
            ("do not fit", |op| *attr(op, "input_weights") = dense("f32", &[4, 12, 5], vec![0; 960])),
        ];
        for (name, mutations) in [("lstm_sequence_i8", int8), ("lstm_sequence_f32", float)] {
            let imported = crate::tflite(&model(&format!("{name}.tflite"))).expect("imports");
            for (what, mutate) in mutations {
                let mut module = imported.module.clone();
                mutate(lstm_op(&mut module));
                let e = run(&module, name).expect_err(what);
                assert!(e.contains("nn.lstm.") && e.contains(what), "{what}: {e}");
            }
        }
    }

    #[test]
    fn every_byte_flip_imports_and_runs_or_fails_cleanly() {
        for name in ["lstm_sequence_i8", "lstm_sequence_f32"] {
            let m = model(&format!("{name}.tflite"));
            let mut ran = 0;
            for i in 0..m.len() {
                let mut b = m.clone();
                b[i] ^= 0x81;
                if let Ok(imported) = crate::tflite(&b) {
                    ran += usize::from(run(&imported.module, name).is_ok());
                }
            }
            assert!(ran > 0, "{name}: flips in weights leave a valid model");
        }
    }

    #[test]
    fn lowering_refuses_other_lstms() {
        let bytes = model("lstm_sequence_i8.tflite");
        let g = Graph::read(&bytes).expect("reads");
        let at = g.ops.iter().position(|op| op.code == 44).expect("an LSTM");
        type Mutation = (&'static str, fn(&mut Graph<'_>, usize));
        let mutations: &[Mutation] = &[
            ("peephole", |g, at| g.ops[at].inputs[10] = g.ops[at].inputs[2]),
            ("projection", |g, at| g.ops[at].inputs[16] = g.ops[at].inputs[2]),
            ("layer norm", |g, at| g.ops[at].inputs[23] = g.ops[at].inputs[12]),
            ("CIFG", |g, at| g.ops[at].inputs[1] = None),
            ("24 belong", |g, at| g.ops[at].inputs.truncate(20)),
            ("not a variable", |g, at| {
                let h = g.ops[at].inputs[18].expect("state");
                g.tensors[h].variable = false;
            }),
            ("zero point", |g, at| {
                let w = g.ops[at].inputs[3].expect("weights");
                let scale = g.tensors[w].quant.as_ref().expect("quantized").scale.clone();
                g.tensors[w].quant = Some(Quant { scale, zero_point: vec![3], axis: 0 });
            }),
            ("shape", |g, at| {
                let w = g.ops[at].inputs[6].expect("weights");
                g.tensors[w].shape = vec![12, 6];
            }),
        ];
        for (what, mutate) in mutations {
            let mut g = g.clone();
            mutate(&mut g, at);
            let e = lower(&g, false).expect_err(what).to_string();
            assert!(e.contains("UNIDIRECTIONAL_SEQUENCE_LSTM") && e.contains(what), "{what}: {e}");
        }
    }
}
