//! `nn.lstm.f32`: LiteRT's float `LstmStepWithAuxInput` / `EvalFloat`, its order of
//! operations kept (each gate starts at its bias, or at 0 with layer normalization, then
//! `+ Wx·x`, `+ Wh·h`, `+ wc ⊙ c`, then the layer norm `norm(gate) ⊙ coefficients + bias`,
//! then its activation; `c = f * c`, `c += g * i` (`i = 1 - f` for CIFG), clipped to
//! `±cell clip` when that is positive; `h = o * tanh(c)`, or with a projection
//! `h = bias + Wp·(o * tanh(c))`, clipped to `±projection clip` when that is positive).
//!
//! Attributes, in name order, besides the common ones (`mod.rs`; `gates` is 4, or 3 for
//! CIFG): `clip` (`[cell clip, projection clip]`), `layer_norm` (dense f32 `[gates, cell]`
//! coefficients, or `[0, cell]` for none), `peephole` (dense f32 `[gates - 1, cell]`: the
//! input (unless CIFG), forget and output gates' cell weights, or `[0, cell]`), `projection`
//! (dense f32 `[out, cell]`, or `[0, cell]` for none, when `out` is the cell count),
//! `projection_bias` (dense f32 `[out]`, zeros for a projection without bias; `[0]` for
//! none), `scratch` (at least `4 * (out + (1 + gates) * cell)` bytes: hidden and cell
//! state, the gates).

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use super::{CELL, FORGET, INPUT, OUTPUT, Shape, layer, optional, scratch_as};
use crate::activation_arena::with_arena;
use crate::attrs::{Attrs, invalid};

/// `Σ w[d] * x[d]` in order.
fn dot(w: &[f32], x: &[f32]) -> f32 {
    w.iter().zip(x).fold(0.0, |acc, (&w, &x)| acc + w * x)
}

/// LiteRT's float sigmoid, `1 / (1 + e^-x)`.
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-x))
}

/// TFLite's `MeanStddevNormalization` of one gate vector: `(x - mean) / sqrt(variance +
/// 1e-8)`, the mean and variance summed in order in float.
fn normalize(v: &mut [f32]) {
    let n = v.len() as f32;
    let mean = v.iter().fold(0.0f32, |s, &x| s + x) / n;
    let variance = v.iter().fold(0.0f32, |s, &x| s + (x - mean) * (x - mean)) / n;
    let inverse = 1.0 / crate::math::sqrt(variance + 1e-8);
    for x in v {
        *x = (*x - mean) * inverse;
    }
}

/// One float LSTM's weights and options: what a time step needs.
#[derive(Clone, Copy, Debug)]
struct Cell<'a> {
    shape: Shape,
    bias: &'a [f32],
    input_weights: &'a [f32],
    recurrent_weights: &'a [f32],
    /// `[gates, cell]` coefficients.
    layer_norm: Option<&'a [f32]>,
    /// `[gates - 1, cell]`: input (unless CIFG), forget and output.
    peephole: Option<&'a [f32]>,
    /// `[out, cell]` weights and `[out]` bias.
    projection: Option<(&'a [f32], &'a [f32])>,
    cell_clip: f32,
    projection_clip: f32,
}

impl Cell<'_> {
    /// Where gate `q` (TFLite's order) sits among the stacked gates: one lower without
    /// the input gate (CIFG).
    fn slot(&self, q: usize) -> usize {
        q + self.shape.gates - 4
    }

    /// Adds the peephole term, applies the layer norm and the activation to gate `q`
    /// (`state`: the cell state the gate looks at).
    fn finish(&self, q: usize, gate: &mut [f32], state: &[f32]) {
        let n = self.shape.cell;
        if let Some(p) = self.peephole
            && q != CELL
        {
            // Peephole rows: input (unless CIFG), forget, output.
            let row = self.slot(if q == OUTPUT { CELL } else { q });
            for ((g, &w), &c) in gate.iter_mut().zip(&p[row * n..][..n]).zip(state) {
                *g += w * c;
            }
        }
        if let Some(l) = self.layer_norm {
            normalize(gate);
            let at = self.slot(q) * n;
            for ((g, &w), &b) in gate.iter_mut().zip(&l[at..][..n]).zip(&self.bias[at..][..n]) {
                *g *= w;
                *g += b;
            }
        }
        for g in gate {
            *g = if q == CELL { libm::tanhf(*g) } else { sigmoid(*g) };
        }
    }

    /// One time step: `h` (`out` values) and `c` (`cell` values) advance on input `x`;
    /// `gates` (`gates * cell` values) is scratch.
    fn step(&self, x: &[f32], h: &mut [f32], c: &mut [f32], gates: &mut [f32]) {
        let Shape { input: n_in, cell: n, output: m, .. } = self.shape;
        let start = self.layer_norm.is_some();
        let rows = self.input_weights.chunks_exact(n_in).zip(self.recurrent_weights.chunks_exact(m));
        for ((gate, (wx, wh)), &b) in gates.iter_mut().zip(rows).zip(self.bias) {
            *gate = if start { 0.0 } else { b };
            *gate += dot(wx, x);
            *gate += dot(wh, h);
        }
        let cifg = self.shape.gates == 3;
        let (gi, rest) = gates.split_at_mut(if cifg { 0 } else { n });
        let (gf, rest) = rest.split_at_mut(n);
        let (gc, go) = rest.split_at_mut(n);
        if !cifg {
            self.finish(INPUT, gi, c);
        }
        self.finish(FORGET, gf, c);
        self.finish(CELL, gc, c);
        for k in 0..n {
            let mut cell = gf[k] * c[k];
            cell += gc[k] * if cifg { 1.0 - gf[k] } else { gi[k] };
            if self.cell_clip > 0.0 {
                cell = cell.clamp(-self.cell_clip, self.cell_clip);
            }
            c[k] = cell;
        }
        self.finish(OUTPUT, go, c);
        for (o, &cell) in go.iter_mut().zip(c.iter()) {
            *o *= libm::tanhf(cell);
        }
        match self.projection {
            Some((w, bias)) => {
                for ((v, row), &b) in h.iter_mut().zip(w.chunks_exact(n)).zip(bias) {
                    *v = b;
                    *v += dot(row, go);
                    if self.projection_clip > 0.0 {
                        *v = v.clamp(-self.projection_clip, self.projection_clip);
                    }
                }
            }
            None => h.copy_from_slice(go),
        }
    }
}

/// `nn.lstm.f32`.
pub(crate) fn lstm_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.lstm.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 12)?;
        let l = layer::<f32, f32>(&a, (DType::F32, DType::F32), [0, 2, 3, 5, 9, 10, 11])?;
        let s = l.shape;
        let clip = a.floats(1, "clip", 2)?;
        let (cell_clip, projection_clip) = (clip[0], clip[1]);
        if cell_clip.is_nan() || projection_clip.is_nan() {
            return Err(invalid(K, format_args!("'clip' is NaN")));
        }
        let layer_norm = optional(&a, 4, "layer_norm", DType::F32, (s.gates, s.cell))?;
        let peephole = optional(&a, 6, "peephole", DType::F32, (s.gates - 1, s.cell))?;
        let projection = optional(&a, 7, "projection", DType::F32, (s.output, s.cell))?;
        let (bias, bias_dims) = a.dense::<f32, 1>(8, "projection_bias", DType::F32)?;
        let rows = if projection.is_some() { s.output } else { 0 };
        if bias_dims != [rows] || (projection.is_none() && s.output != s.cell) {
            return Err(invalid(
                K,
                format_args!(
                    "'projection_bias' {:?} and a projection of {} rows do not fit {} cells and {} outputs",
                    bias_dims, rows, s.cell, s.output
                ),
            ));
        }
        let cell = Cell {
            shape: s,
            bias: l.bias,
            input_weights: l.input_weights,
            recurrent_weights: l.recurrent_weights,
            layer_norm,
            peephole,
            projection: projection.map(|w| (w, bias)),
            cell_clip,
            projection_clip,
        };
        let overflow = || invalid(K, format_args!("size overflows"));
        // Hidden state, cell state, the gates.
        let words =
            s.gates.checked_add(1).and_then(|g| g.checked_mul(s.cell)).and_then(|w| w.checked_add(s.output));
        let need = words.and_then(|w| w.checked_mul(4)).ok_or_else(overflow)?;
        let (m, n) = (s.output, s.cell);
        let reset = |bytes: &mut [u8]| {
            scratch_as::<f32>(K, bytes)?[..m + n].fill(0.0);
            Ok(())
        };
        let step = |x: &[u8], bytes: &mut [u8]| {
            let x: &[f32] = bytemuck::try_cast_slice(x)
                .map_err(|_| invalid(K, format_args!("f32 input is not 4-byte aligned")))?;
            let (h, rest) = scratch_as::<f32>(K, bytes)?.split_at_mut(m);
            let (c, gates) = rest.split_at_mut(n);
            cell.step(x, h, c, &mut gates[..s.gates * n]);
            Ok(())
        };
        l.run(K, arena, (4, need, (0, 4 * m)), reset, step)
    })
}

#[cfg(test)]
mod tests {
    use std::vec;
    use std::vec::Vec;

    use super::*;

    /// A four-gate LSTM of 3 inputs and 4 cells with deterministic weights (`seed` varies
    /// them), no variant.
    fn weights(seed: u32) -> [Vec<f32>; 3] {
        let value = |i: usize| {
            let v = (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed.wrapping_mul(40_503)) >> 8;
            (v % 2001) as f32 / 1000.0 - 1.0
        };
        let wx: Vec<f32> = (0..16 * 3).map(value).collect();
        let wh: Vec<f32> = (100..100 + 16 * 4).map(value).collect();
        let bias: Vec<f32> = (300..316).map(|i| value(i) * 0.2).collect();
        [wx, wh, bias]
    }

    fn cell<'a>(w: &'a [Vec<f32>; 3], gates: usize, output: usize) -> Cell<'a> {
        let shape = Shape { batches: 1, steps: 1, input: 3, cell: 4, output, gates, time_major: false };
        Cell {
            shape,
            bias: &w[2],
            input_weights: &w[0],
            recurrent_weights: &w[1],
            layer_norm: None,
            peephole: None,
            projection: None,
            cell_clip: 0.0,
            projection_clip: 0.0,
        }
    }

    /// `steps` time steps of `c` from zero state; the hidden states, one row per step.
    fn run(c: &Cell<'_>, steps: usize) -> Vec<f32> {
        let (mut h, mut state) = (vec![0.0; c.shape.output], vec![0.0; c.shape.cell]);
        let mut gates = vec![0.0; c.shape.gates * c.shape.cell];
        let mut out = Vec::new();
        for t in 0..steps {
            let x = [0.5 - t as f32 * 0.3, 1.0, -0.25 * t as f32];
            c.step(&x, &mut h, &mut state, &mut gates);
            out.extend_from_slice(&h);
        }
        out
    }

    #[test]
    fn layer_norm_gives_mean_zero_and_variance_one() {
        let mut v = [1.0f32, 2.0, 4.0, 9.0];
        normalize(&mut v);
        let mean = v.iter().sum::<f32>() / 4.0;
        let variance = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / 4.0;
        assert!(mean.abs() < 1e-6 && (variance - 1.0).abs() < 1e-5, "{v:?}");
        // A constant vector: the 1e-8 keeps it finite (all zero).
        let mut flat = [3.0f32; 4];
        normalize(&mut flat);
        assert_eq!(flat, [0.0; 4]);
    }

    #[test]
    fn variants_that_change_nothing_leave_the_standard_lstm() {
        let w = weights(1);
        let standard = run(&cell(&w, 4, 4), 5);
        // Zero peephole weights, an identity projection without bias or clip.
        let zeros = [0.0f32; 12];
        let identity: Vec<f32> = (0..16).map(|i| if i % 5 == 0 { 1.0 } else { 0.0 }).collect();
        let plain =
            Cell { peephole: Some(&zeros), projection: Some((&identity, &zeros[..4])), ..cell(&w, 4, 4) };
        assert_eq!(run(&plain, 5), standard);
        // Nonzero peephole weights do change it.
        let ones = [0.5f32; 12];
        assert_ne!(run(&Cell { peephole: Some(&ones), ..cell(&w, 4, 4) }, 5), standard);
    }

    #[test]
    fn cifg_input_gate_is_one_minus_forget() {
        // A four-gate LSTM whose input gate's weights and bias are the forget gate's
        // negated has i = σ(-a) = 1 - σ(a): the CIFG LSTM of its last three gates.
        let mut w = weights(2);
        for (m, cols) in [(0, 3), (1, 4), (2, 1)] {
            let (input, forget) = w[m].split_at_mut(4 * cols);
            for (i, f) in input.iter_mut().zip(&forget[..4 * cols]) {
                *i = -f;
            }
        }
        let four = run(&cell(&w, 4, 4), 6);
        let three: [Vec<f32>; 3] = [w[0][12..].to_vec(), w[1][16..].to_vec(), w[2][4..].to_vec()];
        let cifg = run(&cell(&three, 3, 4), 6);
        let worst = four.iter().zip(&cifg).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-6, "{worst}");
        // With layer norm too, when the input gate's coefficients are the forget gate's
        // (the layer norm of a negated sum is the negated layer norm).
        let mut coefficients: Vec<f32> = (0..16).map(|i| 0.8 + i as f32 * 0.03).collect();
        coefficients.copy_within(4..8, 0);
        let four = run(&Cell { layer_norm: Some(&coefficients), ..cell(&w, 4, 4) }, 6);
        let cifg = run(&Cell { layer_norm: Some(&coefficients[4..]), ..cell(&three, 3, 4) }, 6);
        let worst = four.iter().zip(&cifg).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-6, "{worst}");
    }

    #[test]
    fn clips_bound_the_cell_and_the_projection() {
        let w = weights(3);
        let big: Vec<f32> = w[2].iter().map(|b| b * 40.0).collect();
        let w = [w[0].clone(), w[1].clone(), big];
        let free = run(&cell(&w, 4, 4), 4);
        let clipped = run(&Cell { cell_clip: 0.1, ..cell(&w, 4, 4) }, 4);
        assert_ne!(free, clipped);
        // |h| = |o tanh(c)| <= tanh(0.1).
        assert!(clipped.iter().all(|h| h.abs() <= libm::tanhf(0.1)), "{clipped:?}");
        let identity: Vec<f32> = (0..16).map(|i| if i % 5 == 0 { 1.0 } else { 0.0 }).collect();
        let zeros = [0.0f32; 4];
        let projected =
            Cell { projection: Some((&identity, &zeros)), projection_clip: 0.05, ..cell(&w, 4, 4) };
        assert!(run(&projected, 4).iter().all(|h| h.abs() <= 0.05));
    }
}
