//! `nn.lstm_full.i8`: LiteRT's fully integer 8x8->16 LSTM (`EvalInteger8x8_16` of
//! `lstm_eval.cc`), bit for bit, with every variant it runs: peephole connections, layer
//! normalization, projection and CIFG, alone or together. TensorFlow Lite Micro runs none of
//! them, so LiteRT is their reference; the standard form stays `nn.lstm.i8` (TFLM's
//! arithmetic, which differs from this one in its activations).
//!
//! Per gate, in LiteRT's order (input unless CIFG, forget, cell, then the cell update, then
//! output): int16 `sat(Wx·x) + sat(Wh·h) (+ sat(wc ⊙ c))` (each product requantized on its
//! own, the input zero points folded into the biases at import), then the integer layer
//! norm (`ApplyLayerNorm`), then gemmlowp's int16 sigmoid (Q3.12 in, Q0.15 out) or tanh.
//! The cell state is int16 with a power-of-two scale; `tanh(c) * o` is requantized to int8,
//! projected when there is a projection (the projection rows' zero point folded into
//! their bias).
//!
//! Attributes, in name order, besides the common ones (`mod.rs`; `gates` is 4, or 3 for
//! CIFG): `bias` (dense i32 `[gates, cell]`: `Σ w * -input zero point`, plus the gate bias
//! without layer norm), `cell` (`[quantized cell clip or 0, log2 of the cell state scale]`,
//! the power in -15..=-9), `gates` (9 values per gate: input, recurrent, peephole and layer
//! norm `[multiplier, shift]`, then the layer norm's variance guard), `hidden` (`[hidden
//! multiplier, shift, hidden zero point, projection multiplier, shift, quantized projection
//! clip or 0, output zero point]`), `layer_norm` (dense i16 `[gates or 0, cell]`),
//! `layer_norm_bias` (dense i32, as `layer_norm`), `peephole` (dense i16 `[gates - 1 or 0,
//! cell]`: input (unless CIFG), forget and output), `projection` (dense i8 `[out or 0,
//! cell]`), `projection_bias` (dense i32 `[out or 0]`: the bias plus `Σ w * hidden zero
//! point`), `recurrent_bias` (dense i32 `[gates, cell]`: `Σ w * -output zero point`),
//! `scratch` (at least `11 * cell + out` bytes: the cell state and four gates as int16, the
//! int8 hidden state, the output state).

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_dsp::fixedpoint::{inv_sqrt_multiplier, logistic_of, tanh_of};
use hostrt_dsp::rounding_divide_by_pot;

use super::int8::{Scale, saturate_i16};
use super::{CELL, FORGET, INPUT, OUTPUT, Shape, layer, optional, scratch_as};
use crate::activation_arena::with_arena;
use crate::attrs::{Attrs, invalid};

// Sums of requantized terms saturate rather than wrap: LiteRT's int32 additions cannot
// overflow for the scales its quantizer writes, and a program's attributes must not make
// them panic either.

/// One gate's requantization: its input, recurrent and peephole products into the gate's
/// int16 scale, its layer norm output scale and variance guard.
#[derive(Clone, Copy, Debug, Default)]
struct GateScales {
    input: Scale,
    recurrent: Scale,
    peephole: Scale,
    layer_norm: Scale,
    variance_guard: i32,
}

/// LiteRT's `PortableApplyLayerNorm` of one gate vector in place: the mean and variance in
/// integers (the variance `guard` when it comes out below 1), `(1024 x - mean) / stddev`,
/// times the coefficient plus the bias (int32 arithmetic that wraps, as LiteRT's does),
/// rounded by 1024, requantized with `scale` (whose shift is the attribute's plus 12, as
/// LiteRT's), saturated to int16.
fn layer_norm(v: &mut [i16], weights: &[i16], bias: &[i32], scale: Scale, guard: i32) {
    const TWO_TO_20: i64 = 1 << 20;
    let n = v.len() as i64;
    let (sum, sum_sq) =
        v.iter().fold((0i64, 0i64), |(s, q), &x| (s + i64::from(x), q + i64::from(x) * i64::from(x)));
    let mean = (sum * 1024 / n) as i32;
    let variance = sum_sq * (TWO_TO_20 / n) - i64::from(mean) * i64::from(mean);
    let variance = match (variance / TWO_TO_20) as i32 {
        v if v < 1 => guard,
        v => v,
    };
    let (multiplier, shift) = inv_sqrt_multiplier(variance);
    let inverse = Scale(multiplier, shift);
    for ((x, &w), &b) in v.iter_mut().zip(weights).zip(bias) {
        let rescaled = inverse.apply(1024 * i32::from(*x) - mean);
        let product = i64::from(rescaled.wrapping_mul(i32::from(w)).wrapping_add(b));
        let rounded = (if product > 0 { product + 512 } else { product - 512 }) / 1024;
        *x = saturate_i16(scale.apply(rounded as i32));
    }
}

/// `acc + Σ w · v`, wrapping as LiteRT's int32 sums do.
fn dot(w: &[i8], v: &[i8], acc: i32) -> i32 {
    w.iter().zip(v).fold(acc, |acc, (&w, &v)| acc.wrapping_add(i32::from(w) * i32::from(v)))
}

/// The weights of one `nn.lstm_full.i8` run.
struct Cell<'a> {
    shape: Shape,
    input_weights: &'a [i8],
    recurrent_weights: &'a [i8],
    bias: &'a [i32],
    recurrent_bias: &'a [i32],
    scales: [GateScales; 4],
    /// Coefficients and biases, `gates` rows each.
    layer_norm: Option<(&'a [i16], &'a [i32])>,
    peephole: Option<&'a [i16]>,
    /// Weights and the folded bias.
    projection: Option<(&'a [i8], &'a [i32])>,
    cell_clip: i16,
    /// The cell state scale's power of two.
    power: i32,
    hidden: Scale,
    hidden_zero_point: i32,
    projection_scale: Scale,
    projection_clip: i8,
    output_zero_point: i32,
}

impl Cell<'_> {
    /// The stacked row of TFLite gate `g` (CIFG LSTMs lack the input gate).
    fn row(&self, g: usize) -> usize {
        g - (4 - self.shape.gates)
    }

    /// LiteRT's `CalculateLstmGateInteger8x8_16` for gate `g` into `out`, from the input
    /// `x`, the output state `h` and the cell state `c`.
    fn gate(&self, g: usize, x: &[i8], h: &[i8], c: &[i16], out: &mut [i16]) {
        let Shape { input: n_in, cell: n, output: n_out, gates, .. } = self.shape;
        let k = self.row(g);
        let s = self.scales[k];
        let wx = self.input_weights[k * n * n_in..][..n * n_in].chunks_exact(n_in);
        let wh = self.recurrent_weights[k * n * n_out..][..n * n_out].chunks_exact(n_out);
        let biases = self.bias[k * n..][..n].iter().zip(&self.recurrent_bias[k * n..][..n]);
        for (((o, (wx, wh)), (&bx, &bh)), j) in out.iter_mut().zip(wx.zip(wh)).zip(biases).zip(0..) {
            let v = saturate_i16(s.input.apply(dot(wx, x, bx)));
            *o = saturate_i16(s.recurrent.apply(dot(wh, h, bh)).saturating_add(i32::from(v)));
            if let Some(p) = self.peephole.filter(|_| g != CELL) {
                // Peephole rows: input (unless CIFG), forget, output.
                let r = if g == OUTPUT { gates - 2 } else { self.row(g) };
                let product = s.peephole.apply(i32::from(p[r * n + j]) * i32::from(c[j]));
                *o = saturate_i16(product.saturating_add(i32::from(*o)));
            }
        }
        if let Some((w, b)) = self.layer_norm {
            layer_norm(out, &w[k * n..][..n], &b[k * n..][..n], s.layer_norm, s.variance_guard);
        }
        for v in out.iter_mut() {
            *v = if g == CELL { tanh_of(*v, 3) } else { logistic_of(*v, 3) };
        }
    }

    /// One time step: the gates into `gates` (`4 * cell`), the cell state `c` updated, the
    /// output state `h` (through the hidden state `hidden` with a projection) written.
    fn step(&self, x: &[i8], c: &mut [i16], gates: &mut [i16], hidden: &mut [i8], h: &mut [i8]) {
        let n = self.shape.cell;
        let (input, rest) = gates.split_at_mut(n);
        let (forget, rest) = rest.split_at_mut(n);
        let (cell, output) = rest.split_at_mut(n);
        let cifg = self.shape.gates == 3;
        if !cifg {
            self.gate(INPUT, x, h, c, input);
        }
        self.gate(FORGET, x, h, c, forget);
        self.gate(CELL, x, h, c, cell);
        // `UpdateLstmCellInteger`: products rounded by 2^15 (forget x cell) and by
        // 2^(30 + power) (input x cell gate), truncated to int16 as LiteRT's are.
        for j in 0..n {
            let kept = rounding_divide_by_pot(i32::from(forget[j]) * i32::from(c[j]), 15) as i16;
            let i = if cifg { i16::MAX.wrapping_sub(forget[j]) } else { input[j] };
            let added = rounding_divide_by_pot(i32::from(i) * i32::from(cell[j]), 30 + self.power) as i16;
            let mut v = saturate_i16(i32::from(kept) + i32::from(added));
            if self.cell_clip > 0 {
                v = v.clamp(-self.cell_clip, self.cell_clip);
            }
            c[j] = v;
        }
        self.gate(OUTPUT, x, h, c, output);
        // `CalculateLstmOutputInteger8x8_16`.
        let hidden_of = |j: usize, zero_point: i32| {
            let t = tanh_of(c[j], 15 + self.power);
            let v = self.hidden.apply(i32::from(output[j]) * i32::from(t)).saturating_add(zero_point);
            v.clamp(-128, 127) as i8
        };
        match self.projection {
            None => (0..n).for_each(|j| h[j] = hidden_of(j, self.hidden_zero_point)),
            Some((w, bias)) => {
                // LiteRT subtracts the hidden zero point here and adds it back through the
                // projection bias.
                (0..n).for_each(|j| hidden[j] = hidden_of(j, -self.hidden_zero_point));
                for ((o, w), &b) in h.iter_mut().zip(w.chunks_exact(n)).zip(bias) {
                    let mut v = self
                        .projection_scale
                        .apply(dot(w, hidden, b))
                        .saturating_add(self.output_zero_point)
                        .clamp(-128, 127) as i8;
                    if self.projection_clip > 0 {
                        v = v.clamp(-self.projection_clip, self.projection_clip);
                    }
                    *o = v;
                }
            }
        }
    }
}

/// `nn.lstm_full.i8`.
pub(crate) fn lstm_full_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.lstm_full.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 16)?;
        let l = layer::<i8, i32>(&a, (DType::I8, DType::I32), [0, 4, 5, 8, 13, 14, 15])?;
        let s = l.shape;
        let (n, g) = (s.cell, s.gates);
        let cell = a.ints(1, "cell", Some(2))?;
        let power = cell[1];
        let cell_clip = match i16::try_from(cell[0]) {
            Ok(clip) if clip >= 0 && (-15..=-9).contains(&power) => clip,
            _ => {
                return Err(invalid(
                    K,
                    format_args!("'cell' {:?}: a clip in 0..=32767 and a power in -15..=-9", cell),
                ));
            }
        };
        let list = a.ints(2, "gates", Some(9 * g))?;
        // A CIFG LSTM's fourth entry stays unused.
        let mut scales = [GateScales::default(); 4];
        for (s, v) in scales.iter_mut().zip(list.chunks_exact(9)) {
            let scale = |i: usize| Scale::read(K, "gates", &v[i..i + 2]);
            // The layer norm requantizes with its shift grown by 12 (`layer_norm`).
            let layer_norm = Scale::read(K, "gates", &[v[6], v[7].saturating_add(12)])?;
            *s = GateScales {
                input: scale(0)?,
                recurrent: scale(2)?,
                peephole: scale(4)?,
                layer_norm,
                variance_guard: v[8],
            };
        }
        let hidden = a.ints(3, "hidden", Some(7))?;
        let projection_clip = i8::try_from(hidden[5]).ok().filter(|c| *c >= 0);
        let (Some(projection_clip), true) =
            (projection_clip, (-128..=127).contains(&hidden[2]) && (-128..=127).contains(&hidden[6]))
        else {
            return Err(invalid(
                K,
                format_args!("'hidden' {:?} holds a clip or zero point outside int8", hidden),
            ));
        };
        let layer_norm = optional::<i16>(&a, 6, "layer_norm", DType::I16, (g, n))?;
        let layer_norm_bias = optional::<i32>(&a, 7, "layer_norm_bias", DType::I32, (g, n))?;
        let peephole = optional::<i16>(&a, 9, "peephole", DType::I16, (g - 1, n))?;
        let projection = optional::<i8>(&a, 10, "projection", DType::I8, (s.output, n))?;
        let (projection_bias, bias_dims) = a.dense::<i32, 1>(11, "projection_bias", DType::I32)?;
        let (recurrent_bias, recurrent_dims) = a.dense::<i32, 2>(12, "recurrent_bias", DType::I32)?;
        let rows = if projection.is_some() { s.output } else { 0 };
        if bias_dims != [rows]
            || (projection.is_none() && s.output != n)
            || layer_norm.is_some() != layer_norm_bias.is_some()
            || recurrent_dims != [g, n]
        {
            return Err(invalid(
                K,
                format_args!(
                    "'projection_bias' {:?}, 'recurrent_bias' {:?} and the layer norm do not fit {} gates of {} cells and {} outputs",
                    bias_dims, recurrent_dims, g, n, s.output
                ),
            ));
        }
        let cell = Cell {
            shape: s,
            input_weights: l.input_weights,
            recurrent_weights: l.recurrent_weights,
            bias: l.bias,
            recurrent_bias,
            scales,
            layer_norm: layer_norm.zip(layer_norm_bias),
            peephole,
            projection: projection.map(|w| (w, projection_bias)),
            cell_clip,
            power,
            hidden: Scale::read(K, "hidden", &hidden[..2])?,
            hidden_zero_point: hidden[2],
            projection_scale: Scale::read(K, "hidden", &hidden[3..5])?,
            projection_clip,
            output_zero_point: hidden[6],
        };
        let overflow = || invalid(K, format_args!("size overflows"));
        let words = n.checked_mul(10).ok_or_else(overflow)?;
        let need = n.checked_mul(11).and_then(|b| b.checked_add(s.output)).ok_or_else(overflow)?;
        let zero_point = cell.output_zero_point as i8;
        let reset = |bytes: &mut [u8]| {
            let (c, states) = bytes.split_at_mut(words);
            scratch_as::<i16>(K, c)?[..n].fill(0);
            // LiteRT resets an int8 variable tensor to its zero point.
            states[n..].fill(zero_point as u8);
            Ok(())
        };
        let step = |x: &[u8], bytes: &mut [u8]| {
            let (c, states) = bytes.split_at_mut(words);
            let (c, gates) = scratch_as::<i16>(K, c)?.split_at_mut(n);
            let (hidden, h) = states.split_at_mut(n);
            cell.step(
                bytemuck::cast_slice(x),
                c,
                gates,
                bytemuck::cast_slice_mut(hidden),
                bytemuck::cast_slice_mut(&mut h[..s.output]),
            );
            Ok(())
        };
        l.run(K, arena, (1, need, (11 * n, s.output)), reset, step)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_norm_of_a_flat_gate_is_its_bias() {
        // No variance: the guard stands in, the normalized values are 0, and what remains
        // is the bias, rounded by 1024 and requantized (here halved).
        let mut v = [5i16; 8];
        layer_norm(&mut v, &[3000; 8], &[2048; 8], Scale(1 << 30, 0), 1);
        assert_eq!(v, [1; 8]);
    }

    #[test]
    fn layer_norm_centers_and_scales() {
        // ±100: mean 0, standard deviation 100, so 1024 * x / 100 in Q10 is ±1.0; times
        // coefficient 1024 and rounded by 1024 that is ±1024 at scale 1.
        let mut v = [100i16, -100, 100, -100];
        layer_norm(&mut v, &[1024; 4], &[0; 4], Scale(1 << 30, 1), 1);
        assert_eq!(v, [1024, -1024, 1024, -1024]);
    }
}
