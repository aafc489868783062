//! UNIDIRECTIONAL_SEQUENCE_LSTM, tanh cell activation: the standard form Keras' `LSTM` layer
//! converts to (tf_keras: Keras 3's LSTM converts to a WHILE loop instead), and its variants:
//! peephole connections, projection (with or without bias), layer normalization and the
//! coupled input-forget gate (CIFG), alone or together. float32 lowers to `nn.lstm.f32`
//! (LiteRT's float arithmetic). int8 lowers to `nn.lstm.i8` in the standard form
//! (`lstm_int8.rs`: TensorFlow Lite Micro's arithmetic, the int8 reference) and to
//! `nn.lstm_full.i8` with any variant (`lstm_full.rs`: LiteRT's, as TFLM runs none).
//!
//! The output and cell states are variable tensors in the model; the kernel keeps them in
//! the step's scratch region and starts them at zero for every call (the int8 output state
//! at its zero point, as TFLM's `ResetVariableTensors`): one call runs one whole sequence,
//! and no state persists from one call to the next.

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, floats, ints};

/// Input positions (TFLite's `lstm_shared.h`), in gate order: input, forget, cell, output.
pub(super) const INPUT_WEIGHTS: [usize; 4] = [1, 2, 3, 4];
pub(super) const RECURRENT_WEIGHTS: [usize; 4] = [5, 6, 7, 8];
/// Cell-to-gate weights of the input, forget and output gates.
pub(super) const PEEPHOLE: [usize; 3] = [9, 10, 11];
pub(super) const BIASES: [usize; 4] = [12, 13, 14, 15];
pub(super) const PROJECTION: [usize; 2] = [16, 17];
const OUTPUT_STATE: usize = 18;
const CELL_STATE: usize = 19;
pub(super) const LAYER_NORM: [usize; 4] = [20, 21, 22, 23];

/// The fused activation code of TANH.
const TANH: i8 = 4;

/// Which variant of the standard LSTM an operator is (its optional inputs, checked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Variant {
    /// Coupled input-forget gate: no input gate weights, bias, peephole or layer norm.
    pub cifg: bool,
    pub peephole: bool,
    pub projection: bool,
    pub layer_norm: bool,
}

impl Variant {
    /// The gates present, by TFLite position (0 input, 1 forget, 2 cell, 3 output): all
    /// four, or the last three with CIFG.
    pub(super) fn gates(&self) -> &'static [usize] {
        if self.cifg { &[1, 2, 3] } else { &[0, 1, 2, 3] }
    }
}

/// The sizes of an LSTM: input features, cells, and outputs (the cells, or the
/// projection's rows).
#[derive(Clone, Copy, Debug)]
pub(super) struct LstmDims {
    pub features: usize,
    pub cell: usize,
    pub output: usize,
}

impl Lowerer<'_, '_> {
    /// Reads which optional inputs `op` has and checks that they make one variant: each
    /// group (peephole, layer norm) all present or all absent, its input gate's member
    /// absent exactly with CIFG, and a projection bias only with projection weights.
    fn lstm_variant(&self, op: &OpInfo<'_>) -> Result<Variant, String> {
        let present = |i: usize| op.inputs[i].is_some();
        let cifg = !present(INPUT_WEIGHTS[0]);
        for i in [RECURRENT_WEIGHTS[0], BIASES[0]] {
            if present(i) == cifg {
                return Err(format!(
                    "input {i} is {} while the input-to-input weights are {}: CIFG (coupled input-forget gate) \
                     LSTMs lack all three, other LSTMs have all three",
                    if present(i) { "present" } else { "absent" },
                    if cifg { "absent" } else { "present" },
                ));
            }
        }
        let group = |what: &str, list: &[usize]| -> Result<bool, String> {
            let (gate, rest) = list.split_first().ok_or("empty group")?;
            let on = rest.iter().any(|&i| present(i));
            let gate_ok = present(*gate) == (on && !cifg);
            if rest.iter().any(|&i| present(i) != on) || !gate_ok {
                let have: Vec<usize> = list.iter().copied().filter(|&i| present(i)).collect();
                return Err(match cifg {
                    true => {
                        format!("{what} inputs {have:?} are not {rest:?} or none, as a CIFG LSTM has them")
                    }
                    false => format!("{what} inputs {have:?} are not {list:?} or none"),
                });
            }
            Ok(on)
        };
        let peephole = group("peephole", &PEEPHOLE)?;
        let layer_norm = group("layer norm", &LAYER_NORM)?;
        let projection = present(PROJECTION[0]);
        if present(PROJECTION[1]) && !projection {
            return Err("a projection bias without projection weights".into());
        }
        Ok(Variant { cifg, peephole, projection, layer_norm })
    }

    pub(super) fn lstm(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::UNIDIRECTIONAL_SEQUENCE_LSTM)?;
        let act = o.i8(0)?;
        if act != TANH {
            return Err(format!("cell activation {act} is not supported (only TANH, code 4)"));
        }
        let clips = [o.f32(1, 0.0)?, o.f32(2, 0.0)?];
        if clips.iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Err(format!("cell and projection clips {clips:?} are not finite non-negative numbers"));
        }
        let time_major = o.bool(3)?;
        if o.bool(5)? {
            return Err("diagonal recurrent weights are not supported".into());
        }
        if op.inputs.len() != 24 {
            return Err(format!("{} inputs where 24 belong", op.inputs.len()));
        }
        let variant = self.lstm_variant(op)?;
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
        let cell = self.t(self.input(op, INPUT_WEIGHTS[1])?).shape.first().copied().unwrap_or(0);
        let output = match variant.projection {
            true => self.t(self.input(op, PROJECTION[0])?).shape.first().copied().unwrap_or(0),
            false => cell,
        };
        if let Some(why) = variant.int8_refusal(output, cell).filter(|_| self.t(x).elem == ElemType::I8) {
            return Err(why);
        }
        if features == 0 || cell == 0 || output == 0 || d0 == 0 || d1 == 0 {
            return Err(format!("empty LSTM: input {xs:?}, {cell} cells, {output} outputs"));
        }
        if self.t(out).shape != [d0, d1, output] {
            return Err(format!("output {:?} is not [{d0}, {d1}, {output}]", self.t(out).shape));
        }
        for (t, what, n) in [(h, "output state", output), (c, "cell state", cell)] {
            if Some(self.t(t).elements()) != batches.checked_mul(n) {
                return Err(format!("the {what} has shape {:?}, not {batches}x{n}", self.t(t).shape));
            }
        }
        let dims = LstmDims { features, cell, output };
        match self.t(x).elem {
            ElemType::F32 => {
                if self.t(self.input(op, INPUT_WEIGHTS[1])?).elem == ElemType::I8 {
                    return Err("dynamic-range (hybrid) LSTMs are not supported".into());
                }
                self.lstm_float(op, [x, out, h, c], (dims, variant), clips, time_major)
            }
            ElemType::I8 if variant != Variant::default() => {
                self.lstm_full_int8(op, [x, out, h, c], (dims, variant), clips, time_major)
            }
            ElemType::I8 => self.lstm_int8(op, [x, out, h, c], dims, clips[0], time_major),
            e => Err(format!("{} LSTMs are not supported (float32 and int8 are)", e.name())),
        }
    }

    /// Checks the weight matrices (`[cell, features]` and `[cell, output]`, of `elem`) and
    /// biases (`[cell]`, of `bias`) of the gates `variant` has and returns them stacked in
    /// gate order.
    pub(super) fn lstm_weights(
        &self,
        op: &OpInfo<'_>,
        (elem, bias): (ElemType, ElemType),
        LstmDims { features, cell, output }: LstmDims,
        variant: Variant,
    ) -> Result<[Vec<u8>; 3], String> {
        let mut stacked = [Vec::new(), Vec::new(), Vec::new()];
        for &g in variant.gates() {
            let groups = [
                (INPUT_WEIGHTS[g], "weights", elem, vec![cell, features]),
                (RECURRENT_WEIGHTS[g], "weights", elem, vec![cell, output]),
                (BIASES[g], "bias", bias, vec![cell]),
            ];
            for (k, (i, what, elem, shape)) in groups.into_iter().enumerate() {
                stacked[k].extend_from_slice(self.lstm_operand(op, i, what, elem, &shape)?);
            }
        }
        Ok(stacked)
    }

    /// Input `i` of `op` (an error if absent), checked to be a constant of `elem` and `shape`.
    pub(super) fn lstm_operand(
        &self,
        op: &OpInfo<'_>,
        i: usize,
        what: &str,
        elem: ElemType,
        shape: &[usize],
    ) -> Result<&[u8], String> {
        let t = self.input(op, i)?;
        let what = format!("{what} (input {i})");
        self.expect(t, &what, elem, Some(shape.len()))?;
        if self.t(t).shape != shape {
            return Err(format!("{what} has shape {:?}, expected {shape:?}", self.t(t).shape));
        }
        self.constant(t, &what)
    }

    fn lstm_float(
        &mut self,
        op: &OpInfo<'_>,
        [x, out, h, c]: [usize; 4],
        (dims, variant): (LstmDims, Variant),
        clips: [f32; 2],
        time_major: bool,
    ) -> Result<(), String> {
        let LstmDims { features, cell, output } = dims;
        for (t, what) in [(out, "output"), (h, "output state"), (c, "cell state")] {
            self.expect(t, what, ElemType::F32, None)?;
        }
        let f32s = ElemType::F32;
        let [wx, wh, bias] = self.lstm_weights(op, (f32s, f32s), dims, variant)?;
        let gates = variant.gates();
        // Optional per-cell vectors of the gates `list` names, stacked (no rows if absent).
        let stack =
            |on: bool, list: &[usize], inputs: &[usize], what: &str| -> Result<(Vec<u8>, usize), String> {
                let mut v = Vec::new();
                for &g in list.iter().filter(|_| on) {
                    v.extend_from_slice(self.lstm_operand(op, inputs[g], what, f32s, &[cell])?);
                }
                Ok((v, if on { list.len() } else { 0 }))
            };
        let layer_norm = stack(variant.layer_norm, gates, &LAYER_NORM, "layer norm coefficients")?;
        // Peephole inputs in gate order: input (unless CIFG), forget, output.
        let peephole_gates: &[usize] = if variant.cifg { &[1, 2] } else { &[0, 1, 2] };
        let peephole = stack(variant.peephole, peephole_gates, &PEEPHOLE, "peephole weights")?;
        let rows = if variant.projection { output } else { 0 };
        let projection = match variant.projection {
            true => {
                self.lstm_operand(op, PROJECTION[0], "projection weights", f32s, &[output, cell])?.to_vec()
            }
            false => Vec::new(),
        };
        let projection_bias = match op.inputs[PROJECTION[1]] {
            Some(_) => self.lstm_operand(op, PROJECTION[1], "projection bias", f32s, &[output])?.to_vec(),
            None => vec![0; rows * 4],
        };
        let g = gates.len();
        // Hidden and cell state, the gates.
        let scratch = g.checked_add(1).and_then(|g| g.checked_mul(cell)).and_then(|w| w.checked_add(output));
        let scratch = scratch.and_then(|w| w.checked_mul(4)).ok_or("the LSTM is too large")?;
        let [d0, d1] = [self.t(x).shape[0], self.t(x).shape[1]];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("bias", AttrSpec::Value(dense("f32", &[g, cell], bias))),
            ("clip", AttrSpec::Value(floats(&clips))),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![d0, d1, features] }),
            ("input_weights", AttrSpec::Value(dense("f32", &[g, cell, features], wx))),
            ("layer_norm", AttrSpec::Value(dense("f32", &[layer_norm.1, cell], layer_norm.0))),
            ("output", AttrSpec::Region { tensor: out, dims: vec![d0, d1, output] }),
            ("peephole", AttrSpec::Value(dense("f32", &[peephole.1, cell], peephole.0))),
            ("projection", AttrSpec::Value(dense("f32", &[rows, cell], projection))),
            ("projection_bias", AttrSpec::Value(dense("f32", &[rows], projection_bias))),
            ("recurrent_weights", AttrSpec::Value(dense("f32", &[g, cell, output], wh))),
            ("scratch", AttrSpec::Scratch(scratch)),
            ("time_major", AttrSpec::Value(ints(&[i32::from(time_major)]))),
        ];
        self.push(op, "nn.lstm.f32", out, attrs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hostrt_compiler::ast::Op;

    use super::super::super::model::{Graph, Quant};
    use super::super::testing::{attr, int_at, kernel, model, run};
    use super::super::{dense, floats, ints, lower};
    use crate::npy;

    #[test]
    fn state_starts_at_zero_on_every_call() {
        for name in ["lstm_sequence_i8", "lstm_sequence_f32", "lstm_peephole_layer_norm_projection_i8"] {
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
            ("NaN", |op| *attr(op, "clip") = floats(&[0.0, f32::NAN])),
            ("'clip' must be an array of 2", |op| *attr(op, "clip") = floats(&[0.0])),
            ("'layer_norm' is [3, 12]", |op| *attr(op, "layer_norm") = dense("f32", &[3, 12], vec![0; 144])),
            ("'peephole' is [4, 12]", |op| *attr(op, "peephole") = dense("f32", &[4, 12], vec![0; 192])),
            ("projection_bias", |op| *attr(op, "projection_bias") = dense("f32", &[12], vec![0; 48])),
            ("projection_bias", |op| {
                // A projection to 12 outputs has a bias of 12, not none.
                *attr(op, "projection") = dense("f32", &[12, 12], vec![0; 576]);
            }),
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
                mutate(kernel(&mut module, "nn.lstm."));
                let e = run(&module, name).expect_err(what);
                assert!(e.contains("nn.lstm.") && e.contains(what), "{what}: {e}");
            }
        }
    }

    #[test]
    fn every_byte_flip_imports_and_runs_or_fails_cleanly() {
        for name in ["lstm_sequence_i8", "lstm_sequence_f32", "lstm_cifg_f32", "lstm_cifg_i8"] {
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
            ("peephole inputs [10] are not [9, 10, 11] or none", |g, at| {
                g.ops[at].inputs[10] = g.ops[at].inputs[13]
            }),
            ("layer norm inputs [23] are not [20, 21, 22, 23] or none", |g, at| {
                g.ops[at].inputs[23] = g.ops[at].inputs[12]
            }),
            ("input 5 is present while the input-to-input weights are absent", |g, at| {
                g.ops[at].inputs[1] = None
            }),
            ("peephole inputs [9, 10, 11] are not [10, 11] or none", |g, at| {
                g.ops[at].inputs[1] = None;
                g.ops[at].inputs[5] = None;
                g.ops[at].inputs[12] = None;
                for i in 9..12 {
                    g.ops[at].inputs[i] = g.ops[at].inputs[13];
                }
            }),
            ("a projection bias without projection weights", |g, at| {
                g.ops[at].inputs[17] = g.ops[at].inputs[13]
            }),
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
            let e = lower(&g, Default::default()).expect_err(what).to_string();
            assert!(e.contains("UNIDIRECTIONAL_SEQUENCE_LSTM") && e.contains(what), "{what}: {e}");
        }
    }

    /// The row count of dense attribute `name`.
    fn rows(op: &mut Op, name: &str) -> i64 {
        match attr(op, name) {
            hostrt_compiler::ast::Attr::Dense(d) => d.dims[0],
            _ => panic!("{name} is not dense"),
        }
    }

    #[test]
    fn int8_variants_lower_to_the_full_kernel() {
        // (model, gates, layer norm rows, peephole rows, projection rows)
        let cases = [
            ("lstm_peephole_i8", 4, 0, 3, 0),
            ("lstm_projection_i8", 4, 0, 0, 4),
            ("lstm_layer_norm_i8", 4, 4, 0, 0),
            ("lstm_cifg_i8", 3, 0, 2, 8),
            ("lstm_peephole_layer_norm_projection_i8", 4, 4, 3, 8),
        ];
        for (name, gates, layer_norm, peephole, projection) in cases {
            let mut module = crate::tflite(&model(&format!("{name}.tflite"))).expect("imports").module;
            let op = kernel(&mut module, "nn.lstm_full.i8");
            let got = ["bias", "layer_norm", "layer_norm_bias", "peephole", "projection", "projection_bias"]
                .map(|a| rows(op, a));
            assert_eq!(got, [gates, layer_norm, layer_norm, peephole, projection, projection], "{name}");
        }
    }

    #[test]
    fn int8_variants_litert_gets_wrong_are_refused() {
        type Mutation = (&'static str, &'static str, fn(&mut Graph<'_>, usize));
        let cases: &[Mutation] = &[
            // Layer norm without the input gate's weights, bias and coefficients.
            ("lstm_layer_norm_i8", "int8 CIFG LSTMs with layer norm are not supported", |g, at| {
                [1, 5, 12, 20].into_iter().for_each(|i| g.ops[at].inputs[i] = None)
            }),
            // A projection whose rows (the input's 2) are fewer than the 8 cells.
            ("lstm_peephole_i8", "a projection to 2 of 8 cells are not supported", |g, at| {
                g.ops[at].inputs[16] = g.ops[at].inputs[0]
            }),
            ("lstm_peephole_i8", "0 intermediate tensors where 5 belong", |g, at| {
                g.ops[at].intermediates.clear()
            }),
            ("lstm_layer_norm_i8", "has zero point 3, expected 0", |g, at| {
                let w = g.ops[at].inputs[22].expect("coefficients");
                let scale = g.tensors[w].quant.as_ref().expect("quantized").scale.clone();
                g.tensors[w].quant = Some(Quant { scale, zero_point: vec![3], axis: 0 });
            }),
            ("lstm_projection_i8", "not a power of two", |g, at| {
                let c = g.ops[at].inputs[19].expect("cell state");
                g.tensors[c].quant = Some(Quant { scale: vec![3e-5], zero_point: vec![0], axis: 0 });
            }),
            ("lstm_projection_i8", "not a power of two from 2^-15 to 2^-9", |g, at| {
                let c = g.ops[at].inputs[19].expect("cell state");
                g.tensors[c].quant = Some(Quant { scale: vec![1.0 / 128.0], zero_point: vec![0], axis: 0 });
            }),
        ];
        for (name, what, mutate) in cases {
            let bytes = model(&format!("{name}.tflite"));
            let mut g = Graph::read(&bytes).expect("reads");
            let at = g.ops.iter().position(|op| op.code == 44).expect("an LSTM");
            mutate(&mut g, at);
            let e = lower(&g, Default::default()).expect_err(what).to_string();
            assert!(e.contains("UNIDIRECTIONAL_SEQUENCE_LSTM") && e.contains(what), "{what}: {e}");
        }
    }

    #[test]
    fn the_full_int8_kernel_refuses_bad_attributes() {
        type Mutation = (&'static str, fn(&mut Op));
        let cases: &[Mutation] = &[
            ("a power in -15..=-9", |op| *attr(op, "cell") = ints(&[0, -16])),
            ("a clip in 0..=32767", |op| *attr(op, "cell") = ints(&[-1, -15])),
            ("'gates' holds a shift", |op| {
                *attr(op, "gates") = ints(&[1 << 30, 40, 0, 0, 0, 0, 0, 0, 1].repeat(4))
            }),
            ("'gates' holds a shift", |op| {
                *attr(op, "gates") = ints(&[0, 0, 0, 0, 0, 0, 1 << 30, 20, 1].repeat(4))
            }),
            ("'gates' must be an array of 36", |op| *attr(op, "gates") = ints(&[0; 27])),
            ("outside int8", |op| *attr(op, "hidden") = ints(&[1 << 30, -5, 200, 1 << 30, -5, 0, 0])),
            ("outside int8", |op| *attr(op, "hidden") = ints(&[1 << 30, -5, 0, 1 << 30, -5, -3, 0])),
            ("'layer_norm' is [3, 8]", |op| *attr(op, "layer_norm") = dense("i16", &[3, 8], vec![0; 48])),
            ("and the layer norm do not fit", |op| {
                *attr(op, "layer_norm_bias") = dense("i32", &[0, 8], vec![])
            }),
            ("'projection_bias' [4]", |op| *attr(op, "projection_bias") = dense("i32", &[4], vec![0; 16])),
            ("'recurrent_bias' [3, 8]", |op| {
                *attr(op, "recurrent_bias") = dense("i32", &[3, 8], vec![0; 96])
            }),
            ("'peephole' must be a rank-2 i16", |op| {
                *attr(op, "peephole") = dense("i32", &[3, 8], vec![0; 96])
            }),
            ("scratch", |op| {
                let at = int_at(attr(op, "scratch"), 0);
                *attr(op, "scratch") = ints(&[at, 11 * 8 + 7]);
            }),
        ];
        let name = "lstm_peephole_layer_norm_projection_i8";
        let imported = crate::tflite(&model(&format!("{name}.tflite"))).expect("imports");
        assert!(run(&imported.module, name).is_ok());
        for (what, mutate) in cases {
            let mut module = imported.module.clone();
            mutate(kernel(&mut module, "nn.lstm_full.i8"));
            let e = run(&module, name).expect_err(what);
            assert!(e.contains("nn.lstm_full.i8") && e.contains(what), "{what}: {e}");
        }
    }

    #[test]
    fn float_variants_stack_what_they_have() {
        // (model, gates, layer norm rows, peephole rows, projection rows)
        let cases = [
            ("lstm_sequence_f32", 4, 0, 0, 0),
            ("lstm_peephole_f32", 4, 0, 3, 0),
            ("lstm_projection_f32", 4, 0, 0, 4),
            ("lstm_layer_norm_f32", 4, 4, 0, 0),
            ("lstm_cifg_f32", 3, 3, 2, 4),
        ];
        for (name, gates, layer_norm, peephole, projection) in cases {
            let mut module = crate::tflite(&model(&format!("{name}.tflite"))).expect("imports").module;
            let op = kernel(&mut module, "nn.lstm.f32");
            let got =
                ["bias", "layer_norm", "peephole", "projection", "projection_bias"].map(|a| rows(op, a));
            assert_eq!(got, [gates, layer_norm, peephole, projection, projection], "{name}");
        }
    }
}
