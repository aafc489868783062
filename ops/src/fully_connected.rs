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

use hostrt_core::kernel::{PrepareInput, Prepared};
use hostrt_dsp::ActivationRange;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};
use crate::prepared::{Int8Weights, Part, keep, record, sizes, words};

/// The attributes every fully connected layer has, checked against each other.
struct Shape<'a, W, B> {
    filter: &'a [W],
    bias: &'a [B],
    input: Region<2>,
    output: Region<2>,
    /// `[batches, input depth, output depth]`.
    sizes: [usize; 3],
}

/// Reads `bias` (attribute 0), `filter` (1: `[out, in]`, or `[in, out]` when `in_out`),
/// `input` (2) and `output` (attribute `output`).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn shape<'a, W: bytemuck::Pod, B: bytemuck::Pod>(
    a: &Attrs<'a>,
    (filter_dtype, bias_dtype): (DType, DType),
    (output, in_out): (usize, bool),
) -> Result<Shape<'a, W, B>, Diagnostic> {
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
    Ok(Shape { filter, bias, input, output, sizes: [batches, depth, fo] })
}

const I8: &str = "nn.fully_connected.i8";

/// An int8 layer as its attributes describe it, checked: what each call needs.
struct LayerI8<'a> {
    filter: &'a [i8],
    bias: &'a [i32],
    /// The weights laid out for x86-64's VNNI loops, when the program carries them.
    packed: Option<&'a [u8]>,
    quant: PerChannel<'a>,
    params: FullyConnectedParams,
    /// The input's offset and element count, the output's offset and byte length.
    input: [usize; 2],
    output: [usize; 2],
}

/// Decodes and checks an int8 layer's attributes.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn decode_i8<'a>(a: &Attrs<'a>) -> Result<LayerI8<'a>, Diagnostic> {
    let l = shape::<i8, i32>(a, (DType::I8, DType::I32), (4, false))?;
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
    Ok(LayerI8 {
        filter: l.filter,
        bias: l.bias,
        packed,
        quant: PerChannel { multiplier: multipliers, shift: shifts },
        params,
        input: [l.input.offset, l.input.elements()?],
        output: [l.output.offset, l.output.byte_len(1)?],
    })
}

/// [`LayerI8`] as prepared state keeps it (docs/execution.md, "Prepared state").
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct RecordI8 {
    weights: Int8Weights,
    packed: Part,
    /// `[batches, input depth, output depth]`.
    sizes: [u32; 3],
    /// Input and output zero points, the activation's least and greatest values.
    quant: [i32; 4],
    input: [u32; 2],
    output: [u32; 2],
    /// 1 when `packed` is present.
    has_packed: u32,
}

/// `nn.fully_connected.i8`'s prepare function: the layer decoded and checked once, at load.
pub(crate) fn prepare_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    let l = decode_i8(&Attrs::with_packed_slice(input.attrs(), I8, 7, 5).ok()?).ok()?;
    let p = &l.params;
    keep(&RecordI8 {
        weights: Int8Weights::of(input, l.filter, l.bias, &l.quant)?,
        packed: match l.packed {
            Some(packed) => Part::of(input, packed)?,
            None => Part::default(),
        },
        sizes: words([p.batches, p.input_depth, p.output_depth])?,
        quant: [p.input_zero_point, p.output_zero_point, p.activation.min, p.activation.max],
        input: words(l.input)?,
        output: words(l.output)?,
        has_packed: u32::from(l.packed.is_some()),
    })
}

/// The layer back from its prepared record.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn from_record<'a>(frame: &KernelFrame<'a>, r: &RecordI8) -> Result<LayerI8<'a>, Diagnostic> {
    let [batches, input_depth, output_depth] = sizes(r.sizes);
    let [input_zero_point, output_zero_point, min, max] = r.quant;
    let (filter, bias, quant) = r.weights.get(frame, I8)?;
    Ok(LayerI8 {
        filter,
        bias,
        packed: if r.has_packed != 0 { Some(r.packed.get(frame, I8)?) } else { None },
        quant,
        params: FullyConnectedParams {
            batches,
            input_depth,
            output_depth,
            input_zero_point,
            output_zero_point,
            activation: ActivationRange::new(min, max).map_err(|e| dsp_error(I8, e))?,
        },
        input: sizes(r.input),
        output: sizes(r.output),
    })
}

/// `nn.fully_connected.i8`: from its prepared state when the load made it, else from its
/// attributes.
pub(crate) fn fully_connected_i8(frame: &KernelFrame<'_>) {
    with_arena(frame, |arena| {
        let l = match frame.prepared().and_then(record::<RecordI8>) {
            Some(r) => from_record(frame, r)?,
            // The weights may also come laid out for x86-64's VNNI loop (`packed`).
            None => decode_i8(&Attrs::with_packed(frame, I8, 7, 5)?)?,
        };
        let (inputs, out) = split(I8, arena, l.output[0], l.output[1])?;
        let x = inputs.i8s(l.input[0], l.input[1])?;
        let weights = (l.filter, Some(l.bias), l.packed);
        hostrt_dsp::fully_connected_prepacked(&l.params, x, weights, l.quant, i8s_mut(out))
            .map_err(|e| dsp_error(I8, e))
    })
}

const F32: &str = "nn.fully_connected.f32";

/// A float layer as its attributes describe it, checked: what each call needs.
struct LayerF32<'a> {
    filter: &'a [f32],
    bias: &'a [f32],
    /// `[batches, input depth, output depth]`.
    sizes: [usize; 3],
    range: (f32, f32),
    /// The input's offset and element count, the output's offset and byte length.
    input: [usize; 2],
    output: [usize; 2],
}

/// Decodes and checks a float layer's attributes.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn decode_f32<'a>(a: &Attrs<'a>) -> Result<LayerF32<'a>, Diagnostic> {
    let l = shape::<f32, f32>(a, (DType::F32, DType::F32), (3, true))?;
    Ok(LayerF32 {
        filter: l.filter,
        bias: l.bias,
        sizes: l.sizes,
        range: a.float_range(4)?,
        input: [l.input.offset, l.input.elements()?],
        output: [l.output.offset, l.output.byte_len(4)?],
    })
}

/// [`LayerF32`] as prepared state keeps it.
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct RecordF32 {
    filter: Part,
    bias: Part,
    sizes: [u32; 3],
    range: [f32; 2],
    input: [u32; 2],
    output: [u32; 2],
}

/// `nn.fully_connected.f32`'s prepare function.
pub(crate) fn prepare_f32(input: &PrepareInput<'_>) -> Option<Prepared> {
    let l = decode_f32(&Attrs::of_slice(input.attrs(), F32, 5).ok()?).ok()?;
    keep(&RecordF32 {
        filter: Part::of(input, l.filter)?,
        bias: Part::of(input, l.bias)?,
        sizes: words(l.sizes)?,
        range: [l.range.0, l.range.1],
        input: words(l.input)?,
        output: words(l.output)?,
    })
}

/// `nn.fully_connected.f32`: from its prepared state when the load made it.
pub(crate) fn fully_connected_f32(frame: &KernelFrame<'_>) {
    const K: &str = F32;
    with_arena(frame, |arena| {
        let l = match frame.prepared().and_then(record::<RecordF32>) {
            Some(r) => LayerF32 {
                filter: r.filter.get(frame, K)?,
                bias: r.bias.get(frame, K)?,
                sizes: sizes(r.sizes),
                range: (r.range[0], r.range[1]),
                input: sizes(r.input),
                output: sizes(r.output),
            },
            None => decode_f32(&Attrs::of(frame, K, 5)?)?,
        };
        let (lo, hi) = l.range;
        let [_, depth, units] = l.sizes;
        let (inputs, out) = split(K, arena, l.output[0], l.output[1])?;
        let x = inputs.f32s(l.input[0], l.input[1])?;
        let out = f32s_mut(K, out)?;
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
