//! `nn.lstm.*`: TensorFlow Lite's UNIDIRECTIONAL_SEQUENCE_LSTM, tanh cell activation. For
//! each batch row and time step, in its standard form (what Keras' `LSTM` converts to)
//!
//! ```text
//! i = σ(Wxi x + Whi h + bi)   f = σ(Wxf x + Whf h + bf)
//! g = tanh(Wxg x + Whg h + bg)   o = σ(Wxo x + Who h + bo)
//! c = clip(f * c + i * g)   h = o * tanh(c)   output[row, t] = h
//! ```
//!
//! float32 also runs the variants (`float.rs`): peephole connections (`+ wc ⊙ c` in the
//! input and forget gates with the previous cell state, in the output gate with the new
//! one), layer normalization (each gate's sum normalized to mean 0 and variance 1, scaled
//! by its coefficients, then biased), projection (`h = clip(Wp (o * tanh(c)) + bp)`, the
//! output then `Wp`'s row count wide) and CIFG (no input gate: `i = 1 - f`). int8 runs the
//! standard form as TensorFlow Lite Micro does (`int8.rs`) and the variants as LiteRT's
//! integer LSTM does (`full_int8.rs`).
//!
//! State: the hidden and cell states start at zero (the int8 hidden state at its zero point,
//! as TensorFlow Lite Micro resets variable tensors) for every batch row of every call, and
//! live in the step's scratch region: one call is one whole sequence, nothing persists
//! across calls. Batch rows are independent, so time-major and batch-major inputs run row by
//! row alike.
//!
//! Every kernel has these attributes (with the others of its kind between them, all in name
//! order): `bias` (dense `[gates, cell]`), `input` (`[offset, d0, d1, in]`), `input_weights`
//! (dense `[gates, cell, in]`), `output` (`[offset, d0, d1, out]`), `recurrent_weights`
//! (dense `[gates, cell, out]`), `scratch` (`[offset, bytes]`), `time_major` (`[0 or 1]`:
//! `d0, d1` are `time, batch` or `batch, time`). Weights and biases stack the gates in
//! TFLite's order (input, forget, cell, output; CIFG's three lack the input gate), each
//! gate's matrix `[cell, in]` as TFLite stores it; `out` is the cell count but with a
//! projection.

use hostrt_core::Diagnostic;
use hostrt_core::tensor::DType;

use crate::activation_arena::split;
use crate::attrs::{Attrs, Region, invalid};

mod float;
mod full_int8;
mod int8;

pub(crate) use float::lstm_f32;
pub(crate) use full_int8::lstm_full_i8;
pub(crate) use int8::lstm_i8;

/// Gate positions in TFLite's input order (and in the stacked weights of a four-gate LSTM).
const INPUT: usize = 0;
const FORGET: usize = 1;
const CELL: usize = 2;
const OUTPUT: usize = 3;

/// The sizes of one LSTM run, checked against the weights.
#[derive(Clone, Copy, Debug)]
struct Shape {
    batches: usize,
    steps: usize,
    /// Input features.
    input: usize,
    /// Cell state size (rows of each gate's weights).
    cell: usize,
    /// Hidden state and output size: the cell count, or the projection's rows.
    output: usize,
    /// 4, or 3 for CIFG (no input gate).
    gates: usize,
    time_major: bool,
}

impl Shape {
    /// The row of `(batch, time)` in the `[d0, d1]` leading dims of the input and output.
    fn row(&self, b: usize, t: usize) -> usize {
        if self.time_major { t * self.batches + b } else { b * self.steps + t }
    }
}

/// The weights and the arena places every LSTM kernel has.
struct Layer<'a, W, B> {
    bias: &'a [B],
    input_weights: &'a [W],
    recurrent_weights: &'a [W],
    input: Region<3>,
    output: Region<3>,
    scratch: Region<1>,
    shape: Shape,
}

/// Reads `bias`, `input`, `input_weights`, `output`, `recurrent_weights`, `scratch` and
/// `time_major` (at the attribute positions `at` gives, in that order) and checks that their
/// shapes agree: 3 or 4 gates, as many in every weight and the bias.
fn layer<'a, W: bytemuck::Pod, B: bytemuck::Pod>(
    a: &Attrs<'a>,
    (weight_dtype, bias_dtype): (DType, DType),
    at: [usize; 7],
) -> Result<Layer<'a, W, B>, Diagnostic> {
    let (bias, bias_dims) = a.dense::<B, 2>(at[0], "bias", bias_dtype)?;
    let input = a.region::<3>(at[1], "input")?;
    let (input_weights, iw) = a.dense::<W, 3>(at[2], "input_weights", weight_dtype)?;
    let output = a.region::<3>(at[3], "output")?;
    let (recurrent_weights, rw) = a.dense::<W, 3>(at[4], "recurrent_weights", weight_dtype)?;
    let scratch = a.region::<1>(at[5], "scratch")?;
    let time_major = match a.ints(at[6], "time_major", Some(1))?[0] {
        0 => false,
        1 => true,
        v => return Err(invalid(a.kernel, format_args!("'time_major' must be 0 or 1, got {}", v))),
    };
    let [d0, d1, features] = input.dims;
    let [gates, cell, out] = rw;
    if !matches!(gates, 3 | 4)
        || iw != [gates, cell, features]
        || bias_dims != [gates, cell]
        || output.dims != [d0, d1, out]
    {
        return Err(invalid(
            a.kernel,
            format_args!(
                "weights {:?} and {:?}, bias {:?} do not fit input {:?} and output {:?}",
                iw, rw, bias_dims, input.dims, output.dims
            ),
        ));
    }
    if features == 0 || cell == 0 || out == 0 {
        return Err(invalid(
            a.kernel,
            format_args!("{} input features, {} cells and {} outputs", features, cell, out),
        ));
    }
    let (batches, steps) = if time_major { (d1, d0) } else { (d0, d1) };
    let shape = Shape { batches, steps, input: features, cell, output: out, gates, time_major };
    Ok(Layer { bias, input_weights, recurrent_weights, input, output, scratch, shape })
}

impl<W, B> Layer<'_, W, B> {
    /// Runs the sequence row by row: `reset` clears the state in the scratch region (its
    /// first `need` bytes) before each batch row, `step` advances it by one time step given
    /// that step's input bytes, and the hidden state (`hidden`: byte offset and length in
    /// the scratch) is then copied to the step's output. `size`: bytes per input and output
    /// element.
    fn run(
        &self,
        kernel: &'static str,
        arena: &mut [u8],
        (size, need, hidden): (usize, usize, (usize, usize)),
        mut reset: impl FnMut(&mut [u8]) -> Result<(), Diagnostic>,
        mut step: impl FnMut(&[u8], &mut [u8]) -> Result<(), Diagnostic>,
    ) -> Result<(), Diagnostic> {
        let s = self.shape;
        if self.scratch.dims[0] < need || hidden.0.checked_add(hidden.1).is_none_or(|end| end > need) {
            return Err(invalid(
                kernel,
                format_args!("'scratch' of {} bytes is smaller than {}", self.scratch.dims[0], need),
            ));
        }
        let overflow = || invalid(kernel, format_args!("size overflows"));
        let in_row = s.input.checked_mul(size).ok_or_else(overflow)?;
        let out_row = s.output.checked_mul(size).ok_or_else(overflow)?;
        if hidden.1 != out_row {
            return Err(invalid(kernel, format_args!("the hidden state is not one output row")));
        }
        // The input and the scratch lie outside the whole output, apart from each other
        // (each step then splits the arena around the part it writes).
        let (inputs, _) = split(kernel, arena, self.output.offset, self.output.byte_len(size)?)?;
        inputs.bytes(self.input.offset, self.input.byte_len(size)?)?;
        inputs.bytes(self.scratch.offset, need)?;
        for b in 0..s.batches {
            reset(split(kernel, arena, self.scratch.offset, need)?.1)?;
            for t in 0..s.steps {
                // In range: rows are below d0 * d1, whose byte sizes were checked above.
                let row = s.row(b, t);
                let (inputs, scratch) = split(kernel, arena, self.scratch.offset, need)?;
                step(inputs.bytes(self.input.offset + row * in_row, in_row)?, scratch)?;
                let (inputs, out) = split(kernel, arena, self.output.offset + row * out_row, out_row)?;
                out.copy_from_slice(inputs.bytes(self.scratch.offset + hidden.0, hidden.1)?);
            }
        }
        Ok(())
    }
}

/// Attribute `i`: a dense `[rows, cols]` tensor of `dtype`, or `[0, cols]` for none.
fn optional<'a, T: bytemuck::Pod>(
    a: &Attrs<'a>,
    i: usize,
    name: &str,
    dtype: DType,
    (rows, cols): (usize, usize),
) -> Result<Option<&'a [T]>, Diagnostic> {
    let (v, dims) = a.dense::<T, 2>(i, name, dtype)?;
    match dims {
        [0, c] if c == cols => Ok(None),
        [r, c] if r == rows && c == cols => Ok(Some(v)),
        _ => Err(invalid(
            a.kernel,
            format_args!("'{}' is {:?}, expected [0 or {}, {}]", name, dims, rows, cols),
        )),
    }
}

/// Scratch bytes as `T` values.
fn scratch_as<'b, T: bytemuck::Pod>(kernel: &str, bytes: &'b mut [u8]) -> Result<&'b mut [T], Diagnostic> {
    bytemuck::try_cast_slice_mut(bytes).map_err(|_| invalid(kernel, format_args!("'scratch' is misaligned")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_time_and_batch_major_layouts() {
        let s = Shape { batches: 2, steps: 3, input: 1, cell: 1, output: 1, gates: 4, time_major: false };
        assert_eq!([s.row(0, 2), s.row(1, 0)], [2, 3]);
        let s = Shape { time_major: true, ..s };
        assert_eq!([s.row(0, 2), s.row(1, 0)], [4, 1]);
    }
}
