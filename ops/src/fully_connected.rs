//! `nn.fully_connected.*`: `output[b, o] = act(sum_i input[b, i] * filter[o, i] + bias[o])`.
//!
//! Attributes, in name order:
//! - int8: `bias` (dense i32 `[out]`), `filter` (dense i8 `[out, in]`), `input` and
//!   `output` (`[offset, batches, depth]`), `multipliers`, `quant` (as the convolutions'),
//!   `shifts`. TFLite Micro's per-tensor layer is the per-channel one with every channel's
//!   multiplier equal, so both run here.
//! - float32: `bias` (dense f32 `[out]`), `filter` (dense f32 `[out, in]`), `input`,
//!   `output`, `range`.

use hostrt_core::diag_fmt;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_dsp::{ActivationRange, FullyConnectedParams, PerChannel};

use crate::arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, invalid};

/// `nn.fully_connected.i8`.
pub(crate) fn fully_connected_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fully_connected.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 7)?;
        let (bias, [bias_len]) = a.dense::<1>(0, "bias", DType::I32)?;
        let (filter, [fo, fi]) = a.dense::<2>(1, "filter", DType::I8)?;
        let (input, multipliers) = (a.region::<2>(2, "input")?, a.ints(3, "multipliers", None)?);
        let (output, q) = (a.region::<2>(4, "output")?, a.ints(5, "quant", Some(4))?);
        let shifts = a.ints(6, "shifts", None)?;
        let [batches, depth] = input.dims;
        if output.dims != [batches, fo] || fi != depth || bias_len != fo {
            return Err(invalid(
                K,
                format_args!(
                    "filter [{fo}, {fi}] does not fit input {:?} and output {:?}",
                    input.dims, output.dims
                ),
            ));
        }
        let activation =
            ActivationRange::new(q[2], q[3]).map_err(|e| diag_fmt!(InvalidArgument, "{}: {}", K, e))?;
        let params = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: fo,
            input_zero_point: q[0],
            output_zero_point: q[1],
            activation,
        };
        let out_len = batches.checked_mul(fo).ok_or_else(|| invalid(K, format_args!("size overflows")))?;
        let in_len = batches.checked_mul(depth).ok_or_else(|| invalid(K, format_args!("size overflows")))?;
        let (inputs, out) = split(K, arena, output.offset, out_len)?;
        let x = inputs.i8s(input.offset, in_len)?;
        let bias: &[i32] = bytemuck::try_cast_slice(bias.data)
            .map_err(|_| invalid(K, format_args!("'bias' is not 4-byte aligned")))?;
        let quant = PerChannel { multiplier: multipliers, shift: shifts };
        hostrt_dsp::fully_connected(
            &params,
            x,
            bytemuck::cast_slice(filter.data),
            Some(bias),
            quant,
            i8s_mut(out),
        )
        .map_err(|e| diag_fmt!(InvalidArgument, "{}: {}", K, e))
    })
}

/// `nn.fully_connected.f32`.
pub(crate) fn fully_connected_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fully_connected.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let (bias, [bias_len]) = a.dense::<1>(0, "bias", DType::F32)?;
        let (filter, [fo, fi]) = a.dense::<2>(1, "filter", DType::F32)?;
        let (input, output) = (a.region::<2>(2, "input")?, a.region::<2>(3, "output")?);
        let (lo, hi) = crate::conv::range(&a, 4)?;
        let [batches, depth] = input.dims;
        if output.dims != [batches, fo] || fi != depth || bias_len != fo {
            return Err(invalid(
                K,
                format_args!(
                    "filter [{fo}, {fi}] does not fit input {:?} and output {:?}",
                    input.dims, output.dims
                ),
            ));
        }
        let sizes = batches
            .checked_mul(fo)
            .zip(batches.checked_mul(depth))
            .and_then(|(o, i)| Some((o.checked_mul(4)?, i)));
        let (out_bytes, in_len) = sizes.ok_or_else(|| invalid(K, format_args!("size overflows")))?;
        let (inputs, out) = split(K, arena, output.offset, out_bytes)?;
        let x = inputs.f32s(input.offset, in_len)?;
        let out = f32s_mut(K, out)?;
        let bias: &[f32] = bytemuck::try_cast_slice(bias.data)
            .map_err(|_| invalid(K, format_args!("'bias' is not 4-byte aligned")))?;
        let filter: &[f32] = bytemuck::try_cast_slice(filter.data)
            .map_err(|_| invalid(K, format_args!("'filter' is not 4-byte aligned")))?;
        if depth == 0 {
            for (o, b) in out.chunks_exact_mut(fo.max(1)).flat_map(|row| row.iter_mut().zip(bias)) {
                *o = b.clamp(lo, hi);
            }
            return Ok(());
        }
        for (row, o_row) in x.chunks_exact(depth).zip(out.chunks_exact_mut(fo.max(1))) {
            for ((o, w), b) in o_row.iter_mut().zip(filter.chunks_exact(depth)).zip(bias) {
                let mut acc = 0.0f32;
                for (a, b) in row.iter().zip(w) {
                    acc += a * b;
                }
                *o = (acc + b).clamp(lo, hi);
            }
        }
        Ok(())
    })
}
