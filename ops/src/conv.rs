//! Convolutions: `nn.conv_2d.*` and `nn.depthwise_conv_2d.*` over NHWC tensors.
//!
//! Attributes, in name order:
//! - int8: `bias` (dense i32 `[out]`), `filter` (dense i8, TFLite's layouts: `[out, kh, kw,
//!   in]` for conv, `[1, kh, kw, out]` for depthwise), `input` and `output`
//!   (`[offset, n, h, w, c]`), `multipliers` and `shifts` (one per output channel, TFLite's
//!   per-channel requantization), `quant` (`[input zero point, output zero point, activation
//!   min, activation max]`), `window` (`[stride h, stride w, dilation h, dilation w, pad top,
//!   pad left]`). The arithmetic is `hostrt-dsp`'s, bit-exact with TFLite Micro. A
//!   convolution may also carry `packed` (dense i8 `[blocks, rows, 64]`, between `output`
//!   and `quant`): its filter and bias laid out ahead of time for x86-64's AVX-512 VNNI loops
//!   (`hostrt_dsp::prepack`), which read it instead of laying the filter out per call (its
//!   size checked on every x86-64 CPU, read or not); other targets refuse a kernel that
//!   carries it (`expects 8 attributes`: import without `prepack`).
//! - float32: `bias` (dense f32 `[out]`), `filter` (dense f32: `[kh, kw, in, out]` for conv,
//!   the layout of hostrt-core's GEMM convolution; `[1, kh, kw, out]` for depthwise),
//!   `input`, `output`, `range` (`[activation min, activation max]`), `window`. A
//!   convolution may also carry `packed` (dense f32, as many values as the filter, between
//!   `output` and `range`): the filter in blocks of channels for x86-64's 512-bit tiles
//!   (`crate::panels`), read instead of the panels copied per call (its size checked on
//!   every x86-64 CPU); other targets refuse it, as the int8 one.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::{KernelFrame, PrepareInput, Prepared};
use hostrt_core::tensor::DType;
use hostrt_core::tensor::conv::{Conv2dParams, conv2d_direct};
use hostrt_dsp::prepack::ConvPacked;
use hostrt_dsp::{ActivationRange, ConvParams, DepthwiseParams, Hw, Nhwc, PerChannel, Window};

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::float_x86::FloatConv;
use crate::prepared::{Int8Weights, Part, keep, record, sizes, words};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use hostrt_core::work_queue::{RowSplit, for_row_runs};

/// The window of a convolution with `filter` taps and `output` size, from the `window`
/// attribute `[sh, sw, dh, dw, ph, pw]`.
fn window(a: &Attrs<'_>, i: usize, filter: Hw, output: Hw) -> Result<Window, Diagnostic> {
    let [sh, sw, dh, dw, ph, pw] = a.window(i)?;
    Ok(Window { filter, stride: Hw::new(sh, sw), dilation: Hw::new(dh, dw), pad: Hw::new(ph, pw), output })
}

fn nhwc(r: &Region<4>) -> Nhwc {
    Nhwc::new(r.dims[0], r.dims[1], r.dims[2], r.dims[3])
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Conv,
    Depthwise,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Conv => "nn.conv_2d.i8",
            Kind::Depthwise => "nn.depthwise_conv_2d.i8",
        }
    }
}

/// An int8 convolution as its attributes describe it, checked: what each call needs.
struct ConvI8<'a> {
    kind: Kind,
    filter: &'a [i8],
    bias: &'a [i32],
    /// The weights laid out for x86-64's loops, when the program carries them (convolutions only).
    packed: Option<ConvPacked<'a>>,
    quant: PerChannel<'a>,
    input: Nhwc,
    /// Output channels (a convolution) or the depth multiplier (a depthwise one).
    channels: usize,
    window: Window,
    /// Input and output zero points, the activation's least and greatest values.
    zero_points: [i32; 2],
    activation: ActivationRange,
    /// The input's offset and element count, the output's offset and byte length.
    in_region: [usize; 2],
    out_region: [usize; 2],
}

/// Decodes and checks an int8 convolution's attributes.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn decode_i8<'a>(a: &Attrs<'a>, kind: Kind) -> Result<ConvI8<'a>, Diagnostic> {
    let kernel = kind.name();
    let (bias, [_]) = a.dense::<i32, 1>(0, "bias", DType::I32)?;
    let (filter, [fo, fh, fw, fi]) = a.dense::<i8, 4>(1, "filter", DType::I8)?;
    let (input, multipliers) = (a.region::<4>(2, "input")?, a.ints(3, "multipliers", None)?);
    let (output, q) = (a.region::<4>(4, "output")?, a.ints(5, "quant", Some(4))?);
    let activation = a.int8_range(q[2], q[3])?;
    let shifts = a.ints(6, "shifts", None)?;
    let window = window(a, 7, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
    let out_channels = output.dims[3];
    if output.dims[0] != input.dims[0] {
        return Err(invalid(kernel, format_args!("input and output batches differ")));
    }
    let ic = input.dims[3];
    let (fits, channels) = match kind {
        Kind::Conv => (fo == out_channels && fi == ic, out_channels),
        Kind::Depthwise => {
            (fo == 1 && fi == out_channels && ic != 0 && out_channels % ic == 0, out_channels / ic.max(1))
        }
    };
    if !fits {
        return Err(invalid(kernel, format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit")));
    }
    Ok(ConvI8 {
        kind,
        filter,
        bias,
        packed: if kind == Kind::Conv { a.packed_conv()? } else { None },
        quant: PerChannel { multiplier: multipliers, shift: shifts },
        input: nhwc(&input),
        channels,
        window,
        zero_points: [q[0], q[1]],
        activation,
        in_region: [input.offset, input.elements()?],
        out_region: [output.offset, output.byte_len(1)?],
    })
}

/// [`ConvI8`] as prepared state keeps it (docs/execution.md, "Prepared state").
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct RecordI8 {
    weights: Int8Weights,
    packed: Part,
    /// The input's `[n, h, w, c]`, then the channels or depth multiplier.
    input: [u32; 5],
    /// Filter, stride, dilation, padding and output, each `[h, w]`.
    window: [u32; 10],
    /// Input and output zero points, the activation's least and greatest values.
    quant: [i32; 4],
    in_region: [u32; 2],
    out_region: [u32; 2],
    /// 0: no packed weights; 1: VNNI's layout (bytes); 2: AVX2's pairs (i16).
    packed_kind: u32,
}

fn prepare_i8(input: &PrepareInput<'_>, kind: Kind) -> Option<Prepared> {
    let a = match kind {
        Kind::Conv => Attrs::with_packed_slice(input.attrs(), kind.name(), 8, 5),
        Kind::Depthwise => Attrs::of_slice(input.attrs(), kind.name(), 8),
    };
    let c = decode_i8(&a.ok()?, kind).ok()?;
    let (i, w) = (c.input, c.window);
    let [f, s, d, p, o] = [w.filter, w.stride, w.dilation, w.pad, w.output];
    let (packed, packed_kind) = match c.packed {
        None => (Part::default(), 0),
        Some(ConvPacked::Vnni(v)) => (Part::of(input, v)?, 1),
        Some(ConvPacked::Pairs(v)) => (Part::of(input, v)?, 2),
    };
    keep(&RecordI8 {
        weights: Int8Weights::of(input, c.filter, c.bias, &c.quant)?,
        packed,
        input: words([i.n, i.h, i.w, i.c, c.channels])?,
        window: words([f.h, f.w, s.h, s.w, d.h, d.w, p.h, p.w, o.h, o.w])?,
        quant: [c.zero_points[0], c.zero_points[1], c.activation.min, c.activation.max],
        in_region: words(c.in_region)?,
        out_region: words(c.out_region)?,
        packed_kind,
    })
}

/// `nn.conv_2d.i8`'s prepare function: the layer decoded and checked once, at load.
pub(crate) fn prepare_conv_2d_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_i8(input, Kind::Conv)
}

/// `nn.depthwise_conv_2d.i8`'s prepare function.
pub(crate) fn prepare_depthwise_conv_2d_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_i8(input, Kind::Depthwise)
}

/// The layer back from its prepared record.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn from_record<'a>(frame: &KernelFrame<'a>, r: &RecordI8, kind: Kind) -> Result<ConvI8<'a>, Diagnostic> {
    let k = kind.name();
    let [n, h, w, c, channels] = sizes(r.input);
    let v = sizes(r.window);
    let hw = |i: usize| Hw::new(v[i], v[i + 1]);
    let packed = match r.packed_kind {
        1 => Some(ConvPacked::Vnni(r.packed.get(frame, k)?)),
        2 => Some(ConvPacked::Pairs(r.packed.get(frame, k)?)),
        _ => None,
    };
    let (filter, bias, quant) = r.weights.get(frame, k)?;
    Ok(ConvI8 {
        kind,
        filter,
        bias,
        packed,
        quant,
        input: Nhwc::new(n, h, w, c),
        channels,
        window: Window { filter: hw(0), stride: hw(2), dilation: hw(4), pad: hw(6), output: hw(8) },
        zero_points: [r.quant[0], r.quant[1]],
        activation: ActivationRange::new(r.quant[2], r.quant[3]).map_err(|e| dsp_error(k, e))?,
        in_region: sizes(r.in_region),
        out_region: sizes(r.out_region),
    })
}

fn conv_i8(frame: &KernelFrame<'_>, kind: Kind) {
    let kernel = kind.name();
    with_arena(frame, |arena| {
        let c = match frame.prepared().and_then(record::<RecordI8>) {
            Some(r) => from_record(frame, r, kind)?,
            // Convolutions may carry their weights laid out for x86-64's VNNI or AVX2 loops
            // (`packed`).
            None => decode_i8(
                &match kind {
                    Kind::Conv => Attrs::with_packed(frame, kernel, 8, 5)?,
                    Kind::Depthwise => Attrs::of(frame, kernel, 8)?,
                },
                kind,
            )?,
        };
        let (inputs, out) = split(kernel, arena, c.out_region[0], c.out_region[1])?;
        let x = inputs.i8s(c.in_region[0], c.in_region[1])?;
        let [input_zero_point, output_zero_point] = c.zero_points;
        let result = match c.kind {
            Kind::Conv => {
                let p = ConvParams {
                    input: c.input,
                    output_channels: c.channels,
                    window: c.window,
                    input_zero_point,
                    output_zero_point,
                    activation: c.activation,
                };
                hostrt_dsp::conv2d_prepacked(&p, x, (c.filter, Some(c.bias), c.packed), c.quant, i8s_mut(out))
            }
            Kind::Depthwise => {
                let p = DepthwiseParams {
                    input: c.input,
                    depth_multiplier: c.channels,
                    window: c.window,
                    input_zero_point,
                    output_zero_point,
                    activation: c.activation,
                };
                hostrt_dsp::depthwise_conv2d(&p, x, c.filter, Some(c.bias), c.quant, i8s_mut(out))
            }
        };
        result.map_err(|e| dsp_error(kernel, e))
    })
}

/// `nn.conv_2d.i8`.
pub(crate) fn conv_2d_i8(frame: &KernelFrame<'_>) {
    conv_i8(frame, Kind::Conv)
}

/// `nn.depthwise_conv_2d.i8`.
pub(crate) fn depthwise_conv_2d_i8(frame: &KernelFrame<'_>) {
    conv_i8(frame, Kind::Depthwise)
}

/// The input coordinate of output `o`'s tap `k` along one axis, if inside `0..size`.
#[inline]
pub(crate) fn tap(
    o: usize,
    stride: usize,
    pad: usize,
    k: usize,
    dilation: usize,
    size: usize,
) -> Option<usize> {
    // Every factor is below 2^31 (region dims) or 2^16 (window), so i64 cannot overflow.
    let y = (o as i64) * (stride as i64) - (pad as i64) + (k as i64) * (dilation as i64);
    if y >= 0 && (y as u64) < size as u64 { Some(y as usize) } else { None }
}

/// Splits a float convolution's (or fully connected layer's) output over the host's
/// threads: runs of at least 2^17 multiply-adds (`macs_per_row` a row), one per thread,
/// each a whole number of the kernel's tiles of rows (`(row_len, granule)`, from the
/// kernel, whose "row" may be an output row, a pixel or a block of outputs). One run per
/// thread keeps each thread on the same rows from one layer to the next, in its own cache:
/// MobileNetV2 and the ONNX transformer on two threads took 4-5% longer with four runs per
/// thread, claimed as threads came free.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn split_rows<'f>(
    frame: &'f KernelFrame<'_>,
    macs_per_row: usize,
) -> impl FnOnce(&mut [f32], (usize, usize), crate::float_x86::RowRuns<'_>) + 'f {
    move |out, (row_len, granule), rows| {
        let host = frame.exec_ctx().host();
        let min_rows = crate::split_rows_min(macs_per_row);
        let (queue, alloc) = (host.work_queue(), host.allocator());
        let split = RowSplit { granule, per_thread: 1, ..RowSplit::new(row_len, min_rows) };
        for_row_runs(queue, alloc, out, split, rows)
    }
}

/// A float convolution (`depthwise` or not) as its attributes describe it: each read and
/// checked on its own; the kernel checks that the shapes fit.
struct ConvF32<'a> {
    bias: &'a [f32],
    filter: &'a [f32],
    /// The filter laid out for x86-64's 512-bit tiles, when the program carries it.
    packed: Option<&'a [f32]>,
    filter_dims: [usize; 4],
    in_dims: [usize; 4],
    out_dims: [usize; 4],
    /// `[stride h, stride w, dilation h, dilation w, pad top, pad left]`, checked.
    window: [usize; 6],
    range: (f32, f32),
    /// The input's offset and element count, the output's offset and byte length.
    in_region: [usize; 2],
    out_region: [usize; 2],
}

impl ConvF32<'_> {
    /// The window for a filter of `filter` taps.
    fn window(&self, filter: Hw) -> Window {
        let [sh, sw, dh, dw, ph, pw] = self.window;
        let output = Hw::new(self.out_dims[1], self.out_dims[2]);
        Window { filter, stride: Hw::new(sh, sw), dilation: Hw::new(dh, dw), pad: Hw::new(ph, pw), output }
    }
}

/// Decodes a float convolution's attributes (`packed` only for a convolution).
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn decode_f32<'a>(a: &Attrs<'a>, depthwise: bool) -> Result<ConvF32<'a>, Diagnostic> {
    let (bias, _) = a.dense::<f32, 1>(0, "bias", DType::F32)?;
    let (filter, filter_dims) = a.dense::<f32, 4>(1, "filter", DType::F32)?;
    let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
    let range = a.float_range(4)?;
    let window = a.window(5)?;
    let packed = if depthwise { None } else { a.packed::<f32, 1>(DType::F32)? };
    Ok(ConvF32 {
        bias,
        filter,
        packed,
        filter_dims,
        in_dims: input.dims,
        out_dims: output.dims,
        window,
        range,
        in_region: [input.offset, input.elements()?],
        out_region: [output.offset, output.byte_len(4)?],
    })
}

/// [`ConvF32`] as prepared state keeps it (docs/execution.md, "Prepared state").
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct RecordF32 {
    bias: Part,
    filter: Part,
    packed: Part,
    /// The filter's, input's and output's dims, the window.
    dims: [u32; 18],
    range: [f32; 2],
    in_region: [u32; 2],
    out_region: [u32; 2],
    has_packed: u32,
}

fn prepare_f32(input: &PrepareInput<'_>, kernel: &'static str, depthwise: bool) -> Option<Prepared> {
    let a = if depthwise {
        Attrs::of_slice(input.attrs(), kernel, 6)
    } else {
        Attrs::with_packed_slice(input.attrs(), kernel, 6, 4)
    };
    let c = decode_f32(&a.ok()?, depthwise).ok()?;
    let mut dims = [0usize; 18];
    let all = c.filter_dims.into_iter().chain(c.in_dims).chain(c.out_dims).chain(c.window);
    for (o, v) in dims.iter_mut().zip(all) {
        *o = v;
    }
    keep(&RecordF32 {
        bias: Part::of(input, c.bias)?,
        filter: Part::of(input, c.filter)?,
        packed: match c.packed {
            Some(v) => Part::of(input, v)?,
            None => Part::default(),
        },
        dims: words(dims)?,
        range: [c.range.0, c.range.1],
        in_region: words(c.in_region)?,
        out_region: words(c.out_region)?,
        has_packed: u32::from(c.packed.is_some()),
    })
}

/// `nn.conv_2d.f32`'s prepare function: the layer decoded and checked once, at load.
pub(crate) fn prepare_conv_2d_f32(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_f32(input, CONV_F32, false)
}

/// `nn.depthwise_conv_2d.f32`'s prepare function.
pub(crate) fn prepare_depthwise_conv_2d_f32(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_f32(input, DEPTHWISE_F32, true)
}

/// A float convolution's attributes: from its prepared record when the load made one.
#[cfg_attr(target_arch = "x86_64", inline(always))]
fn conv_f32_of<'a>(
    frame: &KernelFrame<'a>,
    kernel: &'static str,
    depthwise: bool,
) -> Result<ConvF32<'a>, Diagnostic> {
    let Some(r) = frame.prepared().and_then(record::<RecordF32>) else {
        let a =
            if depthwise { Attrs::of(frame, kernel, 6)? } else { Attrs::with_packed(frame, kernel, 6, 4)? };
        return decode_f32(&a, depthwise);
    };
    let d = sizes(r.dims);
    let four = |i: usize| [d[i], d[i + 1], d[i + 2], d[i + 3]];
    Ok(ConvF32 {
        bias: r.bias.get(frame, kernel)?,
        filter: r.filter.get(frame, kernel)?,
        packed: if r.has_packed != 0 { Some(r.packed.get(frame, kernel)?) } else { None },
        filter_dims: four(0),
        in_dims: four(4),
        out_dims: four(8),
        window: [d[12], d[13], d[14], d[15], d[16], d[17]],
        range: (r.range[0], r.range[1]),
        in_region: sizes(r.in_region),
        out_region: sizes(r.out_region),
    })
}

const CONV_F32: &str = "nn.conv_2d.f32";
const DEPTHWISE_F32: &str = "nn.depthwise_conv_2d.f32";

/// `nn.conv_2d.f32`: hostrt-core's GEMM convolution (`tensor::conv::conv2d_direct`, no
/// scratch) with the bias and activation clamp in its epilogue.
pub(crate) fn conv_2d_f32(frame: &KernelFrame<'_>) {
    const K: &str = CONV_F32;
    with_arena(frame, |arena| {
        // The filter may also come laid out in blocks for x86-64's 512-bit tiles (`packed`).
        let c = conv_f32_of(frame, K, false)?;
        let (bias, filter, (lo, hi)) = (c.bias, c.filter, c.range);
        let [fh, fw, fi, fo] = c.filter_dims;
        let (in_dims, out_dims) = (c.in_dims, c.out_dims);
        let [sh, sw, dh, dw, top, left] = c.window;
        if out_dims[0] != in_dims[0] || bias.len() != fo || fo != out_dims[3] || fi != in_dims[3] {
            return Err(invalid(
                K,
                format_args!("filter [{fh}, {fw}, {fi}, {fo}] does not fit the input and output"),
            ));
        }
        let (inputs, out) = split(K, arena, c.out_region[0], c.out_region[1])?;
        let x = inputs.f32s(c.in_region[0], c.in_region[1])?;
        let out = f32s_mut(K, out)?;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            let window = c.window(Hw::new(fh, fw));
            let packed = c.packed;
            if let Some(v) = packed.filter(|v| v.len() != filter.len()) {
                let n = filter.len();
                return Err(invalid(
                    K,
                    format_args!("packed weights hold {} values, the filter {n}", v.len()),
                ));
            }
            let p =
                FloatConv { input: x, dims: in_dims, filter, bias, out_channels: fo, window, lo, hi, packed };
            let split = split_rows(frame, out_dims[2] * fh * fw * fi * fo);
            if crate::float_x86::conv(&p, out, split) {
                return Ok(());
            }
        }
        // Dims below 2^31 (arena regions) and window values below 2^16 fit i64.
        let i = |v: usize| v as i64;
        let p = Conv2dParams {
            input: in_dims.map(i),
            filter: [fh, fw, fi, fo].map(i),
            output: out_dims.map(i),
            strides: [sh, sw].map(i),
            dilations: [dh, dw].map(i),
            // Only the top and left padding place the taps; the output dims bound the rest.
            padding: [top, 0, left, 0].map(i),
        };
        conv2d_direct(&p, x, filter, out, &mut |pixels| {
            for (o, b) in pixels.iter_mut().zip(bias.iter().cycle()) {
                *o = (*o + b).clamp(lo, hi);
            }
        });
        Ok(())
    })
}

/// `nn.depthwise_conv_2d.f32`: TFLite's reference loop (filter `[1, kh, kw, out]`).
pub(crate) fn depthwise_conv_2d_f32(frame: &KernelFrame<'_>) {
    let kernel = DEPTHWISE_F32;
    with_arena(frame, |arena| {
        let c = conv_f32_of(frame, kernel, true)?;
        let (bias, filter, (lo, hi)) = (c.bias, c.filter, c.range);
        let [fo, fh, fw, fi] = c.filter_dims;
        let w = c.window(Hw::new(fh, fw));
        let [n, ih, iw, ic] = c.in_dims;
        let [on, oh, ow, oc] = c.out_dims;
        let fits = on == n && bias.len() == oc && fo == 1 && fi == oc && ic != 0 && oc != 0 && oc % ic == 0;
        if !fits {
            return Err(invalid(
                kernel,
                format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit the input and output"),
            ));
        }
        let (inputs, out) = split(kernel, arena, c.out_region[0], c.out_region[1])?;
        let x = inputs.f32s(c.in_region[0], c.in_region[1])?;
        let out = f32s_mut(kernel, out)?;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            let p = FloatConv {
                input: x,
                dims: c.in_dims,
                filter,
                bias,
                out_channels: oc,
                window: w,
                lo,
                hi,
                packed: None,
            };
            // Read-bound: a tap per multiply-add, not a channel's worth; and the input, the
            // last layer's output split over the threads, lies half in the other threads'
            // caches until split alike. The kernel splits by pixels: a "row" is one pixel.
            let split = split_rows(frame, crate::READ_BOUND_MACS * w.filter.h * w.filter.w * oc);
            if crate::float_x86::depthwise(&p, out, split) {
                return Ok(());
            }
        }
        let multiplier = oc / ic;
        // Per output pixel, the taps in order, each over every channel: each channel's sum
        // runs over the taps in the same order as one channel at a time would, and the
        // channel loop is contiguous (vectorized when the multiplier is 1).
        for (p, px) in out.chunks_exact_mut(oc).enumerate() {
            let (b, oy, ox) = (p / (oh * ow), p / ow % oh, p % ow);
            px.fill(0.0);
            for ky in 0..fh {
                let Some(y) = tap(oy, w.stride.h, w.pad.h, ky, w.dilation.h, ih) else { continue };
                for kx in 0..fw {
                    let Some(xx) = tap(ox, w.stride.w, w.pad.w, kx, w.dilation.w, iw) else { continue };
                    let pixel = &x[((b * ih + y) * iw + xx) * ic..][..ic];
                    let taps = &filter[(ky * fw + kx) * oc..][..oc];
                    if multiplier == 1 {
                        for ((acc, &v), &f) in px.iter_mut().zip(pixel).zip(taps) {
                            *acc += v * f;
                        }
                    } else {
                        for (c, (acc, &f)) in px.iter_mut().zip(taps).enumerate() {
                            *acc += pixel[c / multiplier] * f;
                        }
                    }
                }
            }
            for (acc, &bv) in px.iter_mut().zip(bias) {
                *acc = (*acc + bv).clamp(lo, hi);
            }
        }
        Ok(())
    })
}
