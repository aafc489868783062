//! `nn.lstm.i8`: TensorFlow Lite Micro's 8x8->16 `EvalLstm` of `lstm_eval.h`, bit for bit,
//! in the standard form only (TFLM's `LstmTensors::ValidateTensorStatus` refuses peephole,
//! projection, layer-norm and CIFG LSTMs): int8 input and hidden state, int8 weights with
//! zero point 0, int32 bias, int16 gates in Q3.12 before and Q0.15 after their activation,
//! int16 cell state.
//!
//! Attributes, in name order: `bias` (dense i32 `[4, cell]`), `cell` (`[clip on, quantized
//! clip, tanh multiplier, tanh shift]`: the cell state's tanh input rescale after TFLM's
//! power-of-two rewrite), `gates` (16 values: per gate `[input multiplier, shift, recurrent
//! multiplier, shift]` into Q3.12), `input`, `input_weights` (dense i8 `[4, cell, in]`),
//! `mul` (`[multiplier, shift]` of `forget * cell`, `input * cell gate`, `tanh(cell) *
//! output gate`), `output`, `quant` (`[input zero point, hidden zero point]`),
//! `recurrent_weights` (dense i8 `[4, cell, cell]`), `scratch` (at least `11 * cell` bytes:
//! cell and four gates as int16, then the int8 hidden state), `time_major`.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_dsp::multiply_by_quantized_multiplier;

use super::{CELL, FORGET, INPUT, OUTPUT, Shape, layer, scratch_as};
use crate::activation_arena::with_arena;
use crate::attrs::{Attrs, invalid};

/// TFLite's `sigmoid_table_uint16`: `sigmoid(i / 24)` in Q0.16, shared by its int16
/// logistic and tanh (`tanh(x) = 2 sigmoid(2x) - 1`).
const SIGMOID_TABLE: [u16; 256] = [
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064,
    42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464,
    50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503,
    56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666,
    62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968,
    64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687,
    64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291,
    65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404,
    65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
    65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530,
    65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65535,
];

/// TFLite's int16 `reference_integer_ops::Logistic` as TFLM's LSTM calls it (multiplier 0,
/// shift 0, so the input is scaled by 3): Q3.12 in, Q0.15 out, by linear interpolation in
/// [`SIGMOID_TABLE`].
fn sigmoid_i16(x: i16) -> i16 {
    let v = i32::from(x) * 3;
    let abs = v.unsigned_abs();
    let uh = (abs >> 9) as usize;
    let result = if uh >= 255 {
        0x7fff << 10
    } else {
        let (ua, ub) = (u32::from(SIGMOID_TABLE[uh]), u32::from(SIGMOID_TABLE[uh + 1]));
        (ua << 9).wrapping_add((abs & 0x1ff).wrapping_mul(ub.wrapping_sub(ua)))
    };
    let result = if v >= 0 {
        result.wrapping_add(1 << 9)
    } else {
        (1u32 << 25).wrapping_sub(result).wrapping_add((1 << 9) - 1)
    };
    // At most 0x7fff after the shift.
    (result >> 10) as i16
}

/// The int16 tanh input rescale: a multiplier and a right shift such that `|x| * multiplier`
/// plus the rounding term stays within i32 for every int16 `x`.
#[derive(Clone, Copy, Debug)]
struct TanhScale {
    multiplier: i32,
    shift: i32,
}

impl TanhScale {
    /// The gates' rescale (TFLM calls Tanh with cell state scale power -12: multiplier 3).
    const GATE: TanhScale = TanhScale { multiplier: 3, shift: 0 };

    fn new(kernel: &str, multiplier: i32, shift: i32) -> Result<TanhScale, Diagnostic> {
        let round = if shift > 0 { 1i64 << (shift - 1) } else { 0 };
        let fits = (0..=30).contains(&shift)
            && multiplier > 0
            && 32768 * i64::from(multiplier) + round <= i64::from(i32::MAX);
        if !fits {
            return Err(invalid(
                kernel,
                format_args!("tanh rescale {} >> {} is out of range", multiplier, shift),
            ));
        }
        Ok(TanhScale { multiplier, shift })
    }
}

/// TFLite's int16 `reference_integer_ops::Tanh` (after its power-of-two rewrite of the
/// multiplier): the input rescaled by `multiplier >> shift` (rounding), Q0.15 out, by
/// linear interpolation in [`SIGMOID_TABLE`].
fn tanh_i16(x: i16, s: TanhScale) -> i16 {
    let round = if s.shift > 0 { 1 << (s.shift - 1) } else { 0 };
    // No overflow: `TanhScale::new` checked the range.
    let v = (i32::from(x) * s.multiplier + round) >> s.shift;
    let abs = v.unsigned_abs();
    let uh = (abs >> 8) as usize;
    let result = if uh >= 255 {
        0xffff << 8
    } else {
        let (ua, ub) = (u32::from(SIGMOID_TABLE[uh]), u32::from(SIGMOID_TABLE[uh + 1]));
        (ua << 8).wrapping_add((abs & 0xff).wrapping_mul(ub.wrapping_sub(ua))) as i32
    };
    let result = if v >= 0 { result - (1 << 23) + (1 << 7) } else { -result + (1 << 23) + (1 << 7) - 1 };
    // Within int16 after the shift.
    (result >> 8) as i16
}

/// A quantized multiplier and shift, the shift in the range `multiply_by_quantized_multiplier`
/// takes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Scale(pub(super) i32, pub(super) i32);

impl Scale {
    pub(super) fn read(kernel: &str, what: &str, v: &[i32]) -> Result<Scale, Diagnostic> {
        match *v {
            [m, s] if (-31..=30).contains(&s) => Ok(Scale(m, s)),
            _ => Err(invalid(kernel, format_args!("'{}' holds a shift outside -31..=30: {:?}", what, v))),
        }
    }

    pub(super) fn apply(self, x: i32) -> i32 {
        multiply_by_quantized_multiplier(x, self.0, self.1)
    }
}

/// Clamps to int16.
pub(super) fn saturate_i16(v: i32) -> i16 {
    v.clamp(i32::from(i16::MIN), i32::from(i16::MAX)) as i16
}

/// TFLite's `reference_integer_ops::FullyConnected` row into int16 (zero weight and output
/// offsets, no activation): `Σ w * (x - zero point) (+ bias)`, requantized, saturated.
fn fc_i16(w: &[i8], x: &[i8], zero_point: i32, bias: Option<i32>, scale: Scale) -> i32 {
    let acc = w
        .iter()
        .zip(x)
        .fold(0i32, |acc, (&w, &x)| acc.wrapping_add(i32::from(w) * (i32::from(x) - zero_point)));
    let acc = bias.map_or(acc, |b| acc.wrapping_add(b));
    i32::from(saturate_i16(scale.apply(acc)))
}

/// TFLite's `MulElementwise` of two symmetric int16 values: the product requantized, plus
/// `offset`, clamped to `lo..=hi`.
fn mul(a: i16, b: i16, scale: Scale, offset: i32, (lo, hi): (i32, i32)) -> i32 {
    (offset + scale.apply(i32::from(a) * i32::from(b))).clamp(lo, hi)
}

/// `nn.lstm.i8`.
pub(crate) fn lstm_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.lstm.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 11)?;
        let l = layer::<i8, i32>(&a, (DType::I8, DType::I32), [0, 3, 4, 6, 8, 9, 10])?;
        if l.shape.gates != 4 || l.shape.output != l.shape.cell {
            return Err(invalid(K, format_args!("int8 LSTMs have four gates and no projection")));
        }
        let cell = a.ints(1, "cell", Some(4))?;
        let gates = a.ints(2, "gates", Some(16))?;
        let muls = a.ints(5, "mul", Some(6))?;
        let quant = a.ints(7, "quant", Some(2))?;
        let clip = match (cell[0], i16::try_from(cell[1])) {
            (0, _) => None,
            (1, Ok(q)) if q >= 0 => Some((q, (-i32::from(q)) as i16)),
            _ => return Err(invalid(K, format_args!("'cell' clip {:?} is out of range", &cell[..2]))),
        };
        let cell_tanh = TanhScale::new(K, cell[2], cell[3])?;
        let mut scales = [[Scale(0, 0); 2]; 4];
        for (g, s) in scales.iter_mut().enumerate() {
            *s = [
                Scale::read(K, "gates", &gates[4 * g..][..2])?,
                Scale::read(K, "gates", &gates[4 * g + 2..][..2])?,
            ];
        }
        let [forget_cell, input_cell, output_hidden] =
            [0, 2, 4].map(|i| Scale::read(K, "mul", &muls[i..i + 2]));
        let (forget_cell, input_cell, output_hidden) = (forget_cell?, input_cell?, output_hidden?);
        let (input_zp, hidden_zp) = (quant[0], quant[1]);
        if !(-128..=127).contains(&input_zp) || !(-128..=127).contains(&hidden_zp) {
            return Err(invalid(K, format_args!("'quant' zero points {:?} are outside int8", quant)));
        }
        let Shape { input: n_in, cell: n, .. } = l.shape;
        let overflow = || invalid(K, format_args!("size overflows"));
        let cells = n.checked_mul(10).ok_or_else(overflow)?;
        let need = n.checked_mul(11).ok_or_else(overflow)?;
        let reset = |s: &mut [u8]| {
            let (c, h) = s.split_at_mut(cells);
            scratch_as::<i16>(K, c)?[..n].fill(0);
            // TFLM resets an int8 variable tensor to its zero point (in -128..=127).
            h.fill(hidden_zp as i8 as u8);
            Ok(())
        };
        let i16s = (i32::from(i16::MIN), i32::from(i16::MAX));
        let step = |x: &[u8], s: &mut [u8]| {
            let x: &[i8] = bytemuck::cast_slice(x);
            let (c, h) = s.split_at_mut(cells);
            let h: &mut [i8] = bytemuck::cast_slice_mut(h);
            let (c, gates) = scratch_as::<i16>(K, c)?.split_at_mut(n);
            // The four gates from the previous hidden state (TFLM's `CalculateLstmGate`).
            let rows = l.input_weights.chunks_exact(n_in).zip(l.recurrent_weights.chunks_exact(n));
            for (k, ((gate, (wx, wh)), &b)) in gates.iter_mut().zip(rows).zip(l.bias).enumerate() {
                let [input_scale, recurrent_scale] = scales[k / n];
                let from_input = fc_i16(wx, x, input_zp, Some(b), input_scale);
                let from_hidden = fc_i16(wh, h, hidden_zp, None, recurrent_scale);
                let sum = saturate_i16(from_input + from_hidden);
                *gate = if k / n == CELL { tanh_i16(sum, TanhScale::GATE) } else { sigmoid_i16(sum) };
            }
            // `UpdateLstmCell`, then `UpdateLstmHidden`.
            for k in 0..n {
                let gate = |g: usize| gates[g * n + k];
                let kept = mul(gate(FORGET), c[k], forget_cell, 0, i16s);
                let added = mul(gate(INPUT), gate(CELL), input_cell, 0, i16s);
                let mut cell = saturate_i16(kept + added);
                if let Some((hi, lo)) = clip {
                    cell = cell.min(hi).max(lo);
                }
                c[k] = cell;
                let t = tanh_i16(cell, cell_tanh);
                // In -128..=127 after the clamp.
                h[k] = mul(t, gate(OUTPUT), output_hidden, hidden_zp, (-128, 127)) as i8;
            }
            Ok(())
        };
        l.run(K, arena, (1, need, (cells, n)), reset, step)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q15(v: i16) -> f64 {
        f64::from(v) / 32768.0
    }

    #[test]
    fn int16_sigmoid_follows_the_float_one() {
        assert_eq!(sigmoid_i16(0), 16384);
        for x in (i16::MIN..=i16::MAX).step_by(7) {
            let want = 1.0 / (1.0 + (-f64::from(x) / 4096.0).exp());
            assert!((q15(sigmoid_i16(x)) - want).abs() < 2e-4, "{x}");
        }
        // The ends of Q3.12: sigmoid(±8).
        assert_eq!([sigmoid_i16(i16::MAX), sigmoid_i16(i16::MIN)], [32757, 11]);
    }

    #[test]
    fn int16_tanh_follows_the_float_one() {
        assert_eq!(tanh_i16(0, TanhScale::GATE), 0);
        // Q3.12 (the gates), Q4.11 (`3 << 1`, the power-of-two rewrite of a left shift) and
        // Q0.15 (`3 * x >> 3`, a right shift) inputs.
        let scales = [(TanhScale::GATE, 4096.0), (TanhScale { multiplier: 6, shift: 0 }, 2048.0)];
        let scales = scales.into_iter().chain([(TanhScale { multiplier: 3, shift: 3 }, 32768.0)]);
        for (s, unit) in scales {
            for x in (i16::MIN..=i16::MAX).step_by(5) {
                let want = (f64::from(x) / unit).tanh();
                assert!((q15(tanh_i16(x, s)) - want).abs() < 3e-4, "{x} {s:?}");
            }
        }
        assert_eq!(tanh_i16(i16::MAX, TanhScale::GATE), 32767);
        assert_eq!(tanh_i16(i16::MIN, TanhScale::GATE), -32767);
    }

    #[test]
    fn tanh_rescale_stays_within_i32() {
        assert!(TanhScale::new("k", 3 << 14, 0).is_ok());
        assert!(TanhScale::new("k", 3, 30).is_ok());
        for (m, s) in [(3 << 15, 0), (0, 0), (-3, 0), (3, 31), (3, -1), (i32::MAX, 30)] {
            assert!(TanhScale::new("k", m, s).is_err(), "{m} {s}");
        }
    }

    #[test]
    fn fully_connected_rows_and_products_saturate() {
        let one = Scale(1 << 30, 1);
        // Σ w (x - zp) + bias, then multiplied by 1.
        assert_eq!(fc_i16(&[2, -3], &[5, 7], 1, Some(10), one), 2 * 4 - 3 * 6 + 10);
        assert_eq!(fc_i16(&[127; 4], &[127; 4], -128, None, Scale(1 << 30, 10)), 32767);
        assert_eq!(mul(-32768, -32768, Scale(1 << 30, -14), 0, (-32768, 32767)), 32767);
        // Q0.15 x Q0.15 into Q0.15: a right shift by 15.
        assert_eq!(mul(16384, 16384, Scale(1 << 30, -14), 3, (-128, 127)), 127);
        assert_eq!(mul(64, 128, Scale(1 << 30, -14), 3, (-128, 127)), 3);
        assert!(Scale::read("k", "gates", &[1 << 30, 31]).is_err());
    }
}
