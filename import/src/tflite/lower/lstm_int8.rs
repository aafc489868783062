//! The int8 UNIDIRECTIONAL_SEQUENCE_LSTM: `nn.lstm.i8`, TensorFlow Lite Micro's 8x8->16
//! integer LSTM in its standard form (TFLM runs no other), its `Prepare` parameters computed
//! here as `PrepareGateParametersInteger` and `CreateLstmCellStateInfo` in
//! `lstm_eval_common.cc` compute them.

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::lstm::{INPUT_WEIGHTS, LstmDims, RECURRENT_WEIGHTS, Variant};
use super::lstm_full::multiplier;
use super::{AttrSpec, Lowerer, dense, ints};

/// The scale of the gates' fully connected outputs (Q3.12) and of their activations (Q0.15)
/// in TFLM's integer LSTM.
const GATE_INPUT_SCALE: f32 = 1.0 / 4096.0;
const GATE_OUTPUT_SCALE: f32 = 1.0 / 32768.0;

impl Lowerer<'_, '_> {
    pub(super) fn lstm_int8(
        &mut self,
        op: &OpInfo<'_>,
        [x, out, h, c]: [usize; 4],
        dims: LstmDims,
        cell_clip: f32,
        time_major: bool,
    ) -> Result<(), String> {
        let LstmDims { features, cell: state, .. } = dims;
        self.expect(out, "output", ElemType::I8, None)?;
        self.expect(h, "output state", ElemType::I8, None)?;
        self.expect(c, "cell state", ElemType::I16, None)?;
        let [wx, wh, bias] =
            self.lstm_weights(op, (ElemType::I8, ElemType::I32), dims, Variant::default())?;
        let (x_scale, x_zp) = self.quant(x, "input")?;
        let (h_scale, h_zp) = self.quant(h, "output state")?;
        let (c_scale, _) = self.quant(c, "cell state")?;
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
