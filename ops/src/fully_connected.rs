//! `nn.fully_connected.*`: `output[b, o] = act(sum_i input[b, i] * weight[o, i] + bias[o])`.
//!
//! Attributes, in name order:
//! - int8: `bias` (dense i32 `[out]`), `filter` (dense i8 `[out, in]`), `input` and
//!   `output` (`[offset, batches, depth]`), `multipliers`, `quant` (as the convolutions'),
//!   `shifts`. TFLite Micro's per-tensor layer is the per-channel one with every channel's
//!   multiplier equal, so both run here. It may also carry `packed` (dense i8
//!   `[blocks, rows, 64]`, between `output` and `quant`): the filter and bias laid out for
//!   x86-64's AVX-512 VNNI and AVX2 loops (`hostrt_dsp::prepack`); other targets refuse a kernel that
//!   carries it, as the convolutions do.
//! - float32: `bias` (dense f32 `[out]`), `filter` (dense f32 `[in, out]`: the right-hand
//!   side of hostrt-core's GEMM), `input`, `output`, `range`.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_core::tensor::gemm::sgemm;
use hostrt_core::work_queue::{RowSplit, for_row_runs};
use hostrt_dsp::{FullyConnectedParams, PerChannel};

use crate::activation_arena::{Inputs, f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};

/// The attributes every fully connected layer has, checked against each other, and the
/// arena split around its output.
struct Layer<'a, 'b, W, B> {
    filter: &'a [W],
    bias: &'a [B],
    inputs: Inputs<'b>,
    out: &'b mut [u8],
    input: Region<2>,
    /// `[batches, input depth, output depth]`.
    sizes: [usize; 3],
}

/// Reads `bias` (attribute 0), `filter` (1: `[out, in]`, or `[in, out]` when `in_out`),
/// `input` (2) and `output` (attribute `output`), and splits the arena around the output
/// (`size` bytes an element).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn layer<'a, 'b, W: bytemuck::Pod, B: bytemuck::Pod>(
    a: &Attrs<'a>,
    arena: &'b mut [u8],
    (filter_dtype, bias_dtype, size): (DType, DType, usize),
    (output, in_out): (usize, bool),
) -> Result<Layer<'a, 'b, W, B>, Diagnostic> {
    let (bias, [bias_len]) = a.dense::<B, 1>(0, "bias", bias_dtype)?;
    let (filter, [d0, d1]) = a.dense::<W, 2>(1, "filter", filter_dtype)?;
    let (fo, fi) = if in_out { (d1, d0) } else { (d0, d1) };
    let (input, output) = (a.region::<2>(2, "input")?, a.region::<2>(output, "output")?);
    let [batches, depth] = input.dims;
    if output.dims != [batches, fo] || fi != depth || bias_len != fo {
        return Err(invalid(
            a.kernel,
            format_args!(
                "filter [{fo}, {fi}] does not fit input {:?} and output {:?}",
                input.dims, output.dims
            ),
        ));
    }
    let (inputs, out) = split(a.kernel, arena, output.offset, output.byte_len(size)?)?;
    Ok(Layer { filter, bias, inputs, out, input, sizes: [batches, depth, fo] })
}

/// `nn.fully_connected.i8`.
pub(crate) fn fully_connected_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fully_connected.i8";
    with_arena(frame, |arena| {
        // The weights may also come laid out for x86-64's VNNI loop (`packed`).
        let a = Attrs::with_packed(frame, K, 7, 5)?;
        let l = layer::<i8, i32>(&a, arena, (DType::I8, DType::I32, 1), (4, false))?;
        let packed = a.packed::<u8, 3>(DType::I8)?;
        let (multipliers, q) = (a.ints(3, "multipliers", None)?, a.ints(5, "quant", Some(4))?);
        let shifts = a.ints(6, "shifts", None)?;
        let [batches, depth, units] = l.sizes;
        let params = FullyConnectedParams {
            batches,
            input_depth: depth,
            output_depth: units,
            input_zero_point: q[0],
            output_zero_point: q[1],
            activation: a.int8_range(q[2], q[3])?,
        };
        let x = l.inputs.i8s(l.input.offset, l.input.elements()?)?;
        let quant = PerChannel { multiplier: multipliers, shift: shifts };
        let weights = (l.filter, Some(l.bias), packed);
        hostrt_dsp::fully_connected_prepacked(&params, x, weights, quant, i8s_mut(l.out))
            .map_err(|e| dsp_error(K, e))
    })
}

/// `nn.fully_connected.f32`.
pub(crate) fn fully_connected_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fully_connected.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let l = layer::<f32, f32>(&a, arena, (DType::F32, DType::F32, 4), (3, true))?;
        let (lo, hi) = a.float_range(4)?;
        let [_, depth, units] = l.sizes;
        let x = l.inputs.f32s(l.input.offset, l.input.elements()?)?;
        let out = f32s_mut(K, l.out)?;
        // A few rows stream the weights past registers (float_x86); more go through the GEMM,
        // which packs the weights once for all of them.
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        if l.bias.len() == units
            && l.sizes[0] < 4
            && crate::float_x86::fully_connected(
                (x, l.filter, l.bias),
                depth,
                (lo, hi),
                out,
                // Read-bound: each weight is read once (a 256x1000 layer, 1 MB, took 17.8 us
                // on one thread; split, each thread's half stays in its own cache). A "row"
                // is a block of eight outputs.
                crate::conv::split_rows(frame, crate::READ_BOUND_MACS * 8 * depth),
            )
        {
            return Ok(());
        }
        if depth == 0 || units == 0 {
            out.fill(0.0);
        } else {
            // Runs of rows over the host's workers, each at least 2^17 multiply-adds.
            let host = frame.exec_ctx().host();
            let min_rows = crate::split_rows_min(depth * units);
            let (queue, alloc) = (host.work_queue(), host.allocator());
            for_row_runs(
                queue,
                alloc,
                out,
                RowSplit { per_thread: 1, ..RowSplit::new(units, min_rows) },
                &|first, rows: &mut [f32]| {
                    let n = rows.len() / units;
                    sgemm(n, depth, units, 1.0, &x[first * depth..(first + n) * depth], l.filter, 0.0, rows);
                },
            );
        }
        for (o, b) in out.iter_mut().zip(l.bias.iter().cycle()) {
            *o = (*o + b).clamp(lo, hi);
        }
        Ok(())
    })
}
