//! The int8 UNIDIRECTIONAL_SEQUENCE_LSTM variants (peephole, projection, layer norm, CIFG):
//! `nn.lstm_full.i8`, LiteRT's fully integer 8x8->16 LSTM, its `Prepare` parameters computed
//! here as `PopulateQuantizedLstmParams8x8_16` and `PopulatePrecomputedZPTimesWeightsWithBias`
//! (`unidirectional_sequence_lstm.cc`) compute them, in float32 where LiteRT's are float32.
//! TensorFlow Lite Micro runs none of these variants, so LiteRT is their reference. Two
//! combinations LiteRT gets wrong are import errors rather than arithmetic nobody can check:
//! CIFG with layer norm (LiteRT's output is the zero point throughout, its float model's is
//! not) and peephole weights with a projection to fewer outputs than cells (LiteRT applies
//! the peephole weights to as many cells as outputs).

use hostrt_dsp::quantize_multiplier;

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::lstm::{INPUT_WEIGHTS, LAYER_NORM, LstmDims, PEEPHOLE, PROJECTION, RECURRENT_WEIGHTS, Variant};
use super::{AttrSpec, Lowerer, dense, i32s_le, ints};

/// The integer LSTM's gate scale without layer norm (Q3.12).
const GATE_SCALE: f32 = 1.0 / 4096.0;

/// `[multiplier, shift]` of a real scale (`QuantizeMultiplier` of its double): positive and
/// finite (a ratio of extreme scales may overflow), the shift in the kernels' range.
pub(super) fn multiplier(what: &str, real: f64) -> Result<[i32; 2], String> {
    let (m, s) = quantize_multiplier(real);
    if !(real.is_finite() && real > 0.0 && (-31..=30).contains(&s)) {
        return Err(format!("the {what} scale {real} is out of range"));
    }
    Ok([m, s])
}

/// Row sums of an int8 `[rows, cols]` matrix times `scalar`, added to `into` (LiteRT's
/// `MatrixScalarMultiplyAccumulate`, wrapping as its int32 arithmetic does).
fn add_row_sums(into: &mut [i32], matrix: &[u8], cols: usize, scalar: i32) {
    for (acc, row) in into.iter_mut().zip(matrix.chunks_exact(cols)) {
        let sum = row.iter().fold(0i32, |s, &w| s.wrapping_add(i32::from(w as i8)));
        *acc = acc.wrapping_add(sum.wrapping_mul(scalar));
    }
}

fn bytes_of(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

impl Variant {
    /// Why an int8 LSTM of this variant, with `output` outputs and `cell` cells, is refused:
    /// the combinations LiteRT, the only reference, gets wrong.
    pub(super) fn int8_refusal(&self, output: usize, cell: usize) -> Option<String> {
        if self.cifg && self.layer_norm {
            return Some(
                "int8 CIFG LSTMs with layer norm are not supported: LiteRT's integer kernel, their only \
                 reference, outputs zeros for them (float32 ones are supported)"
                    .into(),
            );
        }
        (self.peephole && self.projection && output != cell).then(|| {
            format!(
                "int8 LSTMs with peephole weights and a projection to {output} of {cell} cells are not \
                 supported: LiteRT's integer kernel applies the peephole weights to {output} cells"
            )
        })
    }
}

impl Lowerer<'_, '_> {
    /// The scale of a constant operand quantized per tensor with zero point 0.
    fn symmetric_scale(&self, t: usize, what: &str) -> Result<f32, String> {
        let (scale, zero_point) = self.quant(t, what)?;
        if zero_point != 0 {
            return Err(format!("the {what} '{}' has zero point {zero_point}, expected 0", self.t(t).name));
        }
        Ok(scale)
    }

    pub(super) fn lstm_full_int8(
        &mut self,
        op: &OpInfo<'_>,
        [x, out, h, c]: [usize; 4],
        (dims, variant): (LstmDims, Variant),
        [cell_clip, projection_clip]: [f32; 2],
        time_major: bool,
    ) -> Result<(), String> {
        let LstmDims { features, cell, output } = dims;
        self.expect(out, "output", ElemType::I8, None)?;
        self.expect(h, "output state", ElemType::I8, None)?;
        self.expect(c, "cell state", ElemType::I16, None)?;
        if op.intermediates.len() != 5 {
            return Err(format!(
                "{} intermediate tensors where 5 belong (the gates' and the hidden state's quantization)",
                op.intermediates.len()
            ));
        }
        let (x_scale, x_zp) = self.quant(x, "input")?;
        let (h_scale, h_zp) = self.quant(h, "output state")?;
        let (out_scale, _) = self.quant(out, "output")?;
        let c_scale = self.symmetric_scale(c, "cell state")?;
        let (hidden_scale, hidden_zp) = self.quant(op.intermediates[4], "hidden state (intermediate 4)")?;
        // `CheckedLog2`: the cell state scale is a power of two, whose tanh takes 0 to 6
        // integer bits.
        let log2 = c_scale.ln() * (1.0f32 / 2.0f32.ln());
        let power = log2.round() as i32;
        if (log2 - log2.round()).abs() >= 1e-3 || !(-15..=-9).contains(&power) {
            return Err(format!("the cell state scale {c_scale} is not a power of two from 2^-15 to 2^-9"));
        }
        let [wx, wh, bias] = self.lstm_weights(op, (ElemType::I8, ElemType::I32), dims, variant)?;
        let gates = [0usize, 1, 2, 3].into_iter().filter(|&g| !(variant.cifg && g == 0));
        let mut params = Vec::new();
        let (mut input_bias, mut recurrent_bias) = (i32s_le(&bias), Vec::new());
        let (mut layer_norm, mut layer_norm_bias) = (Vec::new(), Vec::new());
        let mut peephole = Vec::new();
        for (k, g) in gates.enumerate() {
            let gate_scale = match variant.layer_norm {
                true => self.quant(op.intermediates[g], &format!("gate (intermediate {g})"))?.0,
                false => GATE_SCALE,
            };
            let wi = self.symmetric_scale(self.input(op, INPUT_WEIGHTS[g])?, "input weights")?;
            let wr = self.symmetric_scale(self.input(op, RECURRENT_WEIGHTS[g])?, "recurrent weights")?;
            params.extend(multiplier("input-to-gate", f64::from(wi * x_scale / gate_scale))?);
            params.extend(multiplier("recurrent-to-gate", f64::from(wr * h_scale / gate_scale))?);
            // Peephole weights of the input (unless CIFG), forget and output gates.
            let cell_weights =
                PEEPHOLE.get(if g == 3 { 2 } else { g }).filter(|_| variant.peephole && g != 2);
            let real = match cell_weights {
                Some(&i) => {
                    let t = self.input(op, i)?;
                    let w = self.symmetric_scale(t, "peephole weights")?;
                    peephole.extend_from_slice(self.lstm_operand(
                        op,
                        i,
                        "peephole weights",
                        ElemType::I16,
                        &[cell],
                    )?);
                    (2f64.powi(power) * f64::from(w) / f64::from(gate_scale)) as f32
                }
                None => 1.0,
            };
            params.extend(multiplier("peephole", f64::from(real))?);
            let layer_norm_scale = match variant.layer_norm {
                true => {
                    let i = LAYER_NORM[g];
                    let scale = self.symmetric_scale(self.input(op, i)?, "layer norm coefficients")?;
                    layer_norm.extend_from_slice(self.lstm_operand(
                        op,
                        i,
                        "layer norm coefficients",
                        ElemType::I16,
                        &[cell],
                    )?);
                    layer_norm_bias.extend_from_slice(&bias[k * cell * 4..][..cell * 4]);
                    scale
                }
                false => 1.0,
            };
            params.extend(multiplier("layer norm", f64::from(layer_norm_scale))?);
            params.push(((10000.0f32 * layer_norm_scale) as i32).max(1));
            // The zero points folded into the biases; with layer norm the gate bias comes after
            // the normalization instead.
            let row = &mut input_bias[k * cell..][..cell];
            if variant.layer_norm {
                row.fill(0);
            }
            add_row_sums(row, &wx[k * cell * features..][..cell * features], features, -x_zp);
            let mut from_hidden = vec![0; cell];
            add_row_sums(&mut from_hidden, &wh[k * cell * output..][..cell * output], output, -h_zp);
            recurrent_bias.extend(from_hidden);
        }
        let (projection, projection_bias, projection_scale) = match variant.projection {
            true => {
                let p = self.input(op, PROJECTION[0])?;
                let w = self.lstm_operand(
                    op,
                    PROJECTION[0],
                    "projection weights",
                    ElemType::I8,
                    &[output, cell],
                )?;
                let mut b = match op.inputs[PROJECTION[1]] {
                    Some(_) => i32s_le(self.lstm_operand(
                        op,
                        PROJECTION[1],
                        "projection bias",
                        ElemType::I32,
                        &[output],
                    )?),
                    None => vec![0; output],
                };
                add_row_sums(&mut b, w, cell, hidden_zp);
                let scale = self.symmetric_scale(p, "projection weights")? * hidden_scale / h_scale;
                (w.to_vec(), b, scale)
            }
            false => (Vec::new(), Vec::new(), 1.0),
        };
        let hidden = (2f64.powi(-15) / f64::from(hidden_scale) * 2f64.powi(-15)) as f32;
        let [hm, hs] = multiplier("hidden state", f64::from(hidden))?;
        let [pm, ps] = multiplier("projection", f64::from(projection_scale))?;
        // Clips in their tensors' units, truncated as LiteRT's float-to-integer casts are.
        let quantized_cell_clip = match cell_clip > 0.0 {
            true => (cell_clip / c_scale).clamp(-32768.0, 32767.0) as i32,
            false => 0,
        };
        let quantized_projection_clip = match projection_clip > 0.0 {
            true => (projection_clip / out_scale).clamp(-128.0, 127.0) as i32,
            false => 0,
        };
        let g = variant.gates().len();
        let rows = |on: bool, n: usize| if on { n } else { 0 };
        let [d0, d1] = [self.t(x).shape[0], self.t(x).shape[1]];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let scratch =
            cell.checked_mul(11).and_then(|b| b.checked_add(output)).ok_or("the LSTM is too large")?;
        let ln_rows = rows(variant.layer_norm, g);
        let attrs = vec![
            ("bias", AttrSpec::Value(dense("i32", &[g, cell], bytes_of(&input_bias)))),
            ("cell", AttrSpec::Value(ints(&[quantized_cell_clip, power]))),
            ("gates", AttrSpec::Value(ints(&params))),
            ("hidden", AttrSpec::Value(ints(&[hm, hs, hidden_zp, pm, ps, quantized_projection_clip, h_zp]))),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![d0, d1, features] }),
            ("input_weights", AttrSpec::Value(dense("i8", &[g, cell, features], wx))),
            ("layer_norm", AttrSpec::Value(dense("i16", &[ln_rows, cell], layer_norm))),
            ("layer_norm_bias", AttrSpec::Value(dense("i32", &[ln_rows, cell], layer_norm_bias))),
            ("output", AttrSpec::Region { tensor: out, dims: vec![d0, d1, output] }),
            ("peephole", AttrSpec::Value(dense("i16", &[rows(variant.peephole, g - 1), cell], peephole))),
            (
                "projection",
                AttrSpec::Value(dense("i8", &[rows(variant.projection, output), cell], projection)),
            ),
            (
                "projection_bias",
                AttrSpec::Value(dense(
                    "i32",
                    &[rows(variant.projection, output)],
                    bytes_of(&projection_bias),
                )),
            ),
            ("recurrent_bias", AttrSpec::Value(dense("i32", &[g, cell], bytes_of(&recurrent_bias)))),
            ("recurrent_weights", AttrSpec::Value(dense("i8", &[g, cell, output], wh))),
            ("scratch", AttrSpec::Scratch(scratch)),
            ("time_major", AttrSpec::Value(ints(&[i32::from(time_major)]))),
        ];
        self.push(op, "nn.lstm_full.i8", out, attrs);
        Ok(())
    }
}
