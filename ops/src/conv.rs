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
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_core::tensor::conv::{Conv2dParams, conv2d_direct};
use hostrt_dsp::{ConvParams, DepthwiseParams, Hw, Nhwc, PerChannel, Window};

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
use crate::float_x86::FloatConv;
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

enum Kind {
    Conv,
    Depthwise,
}

fn conv_i8(frame: &KernelFrame<'_>, kernel: &'static str, kind: Kind) {
    with_arena(frame, |arena| {
        // Convolutions may carry their weights laid out for x86-64's VNNI or AVX2 loops
        // (`packed`).
        let a = match kind {
            Kind::Conv => Attrs::with_packed(frame, kernel, 8, 5)?,
            Kind::Depthwise => Attrs::of(frame, kernel, 8)?,
        };
        let (bias, [_]) = a.dense::<i32, 1>(0, "bias", DType::I32)?;
        let (filter, [fo, fh, fw, fi]) = a.dense::<i8, 4>(1, "filter", DType::I8)?;
        let (input, multipliers) = (a.region::<4>(2, "input")?, a.ints(3, "multipliers", None)?);
        let (output, q) = (a.region::<4>(4, "output")?, a.ints(5, "quant", Some(4))?);
        let (in_zp, out_zp, activation) = (q[0], q[1], a.int8_range(q[2], q[3])?);
        let shifts = a.ints(6, "shifts", None)?;
        let window = window(&a, 7, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
        let out_channels = output.dims[3];
        let (inputs, out) = split(kernel, arena, output.offset, output.byte_len(1)?)?;
        let x = inputs.i8s(input.offset, input.elements()?)?;
        let quant = PerChannel { multiplier: multipliers, shift: shifts };
        if output.dims[0] != input.dims[0] {
            return Err(invalid(kernel, format_args!("input and output batches differ")));
        }
        let result = match kind {
            Kind::Conv => {
                if fo != out_channels || fi != input.dims[3] {
                    return Err(invalid(
                        kernel,
                        format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit"),
                    ));
                }
                let p = ConvParams {
                    input: nhwc(&input),
                    output_channels: out_channels,
                    window,
                    input_zero_point: in_zp,
                    output_zero_point: out_zp,
                    activation,
                };
                let packed = a.packed_conv()?;
                hostrt_dsp::conv2d_prepacked(&p, x, (filter, Some(bias), packed), quant, i8s_mut(out))
            }
            Kind::Depthwise => {
                let ic = input.dims[3];
                if fo != 1 || fi != out_channels || ic == 0 || out_channels % ic != 0 {
                    return Err(invalid(
                        kernel,
                        format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit"),
                    ));
                }
                let p = DepthwiseParams {
                    input: nhwc(&input),
                    depth_multiplier: out_channels / ic,
                    window,
                    input_zero_point: in_zp,
                    output_zero_point: out_zp,
                    activation,
                };
                hostrt_dsp::depthwise_conv2d(&p, x, filter, Some(bias), quant, i8s_mut(out))
            }
        };
        result.map_err(|e| dsp_error(kernel, e))
    })
}

/// `nn.conv_2d.i8`.
pub(crate) fn conv_2d_i8(frame: &KernelFrame<'_>) {
    conv_i8(frame, "nn.conv_2d.i8", Kind::Conv)
}

/// `nn.depthwise_conv_2d.i8`.
pub(crate) fn depthwise_conv_2d_i8(frame: &KernelFrame<'_>) {
    conv_i8(frame, "nn.depthwise_conv_2d.i8", Kind::Depthwise)
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

/// `nn.conv_2d.f32`: hostrt-core's GEMM convolution (`tensor::conv::conv2d_direct`, no
/// scratch) with the bias and activation clamp in its epilogue.
pub(crate) fn conv_2d_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.conv_2d.f32";
    with_arena(frame, |arena| {
        // The filter may also come laid out in blocks for x86-64's 512-bit tiles (`packed`).
        let a = Attrs::with_packed(frame, K, 6, 4)?;
        let (bias, [bias_len]) = a.dense::<f32, 1>(0, "bias", DType::F32)?;
        let (filter, [fh, fw, fi, fo]) = a.dense::<f32, 4>(1, "filter", DType::F32)?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let (lo, hi) = a.float_range(4)?;
        let [sh, sw, dh, dw, top, left] = a.window(5)?;
        if output.dims[0] != input.dims[0] || bias_len != fo || fo != output.dims[3] || fi != input.dims[3] {
            return Err(invalid(
                K,
                format_args!("filter [{fh}, {fw}, {fi}, {fo}] does not fit the input and output"),
            ));
        }
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            let window = window(&a, 5, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
            let dims = input.dims;
            let packed = a.packed::<f32, 1>(DType::F32)?;
            if let Some(v) = packed.filter(|v| v.len() != filter.len()) {
                let n = filter.len();
                return Err(invalid(
                    K,
                    format_args!("packed weights hold {} values, the filter {n}", v.len()),
                ));
            }
            let p = FloatConv { input: x, dims, filter, bias, out_channels: fo, window, lo, hi, packed };
            let split = split_rows(frame, output.dims[2] * fh * fw * fi * fo);
            if crate::float_x86::conv(&p, out, split) {
                return Ok(());
            }
        }
        // Dims below 2^31 (arena regions) and window values below 2^16 fit i64.
        let i = |v: usize| v as i64;
        let p = Conv2dParams {
            input: input.dims.map(i),
            filter: [fh, fw, fi, fo].map(i),
            output: output.dims.map(i),
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
    const K: &str = "nn.depthwise_conv_2d.f32";
    let kernel = K;
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 6)?;
        let (bias, [bias_len]) = a.dense::<f32, 1>(0, "bias", DType::F32)?;
        let (filter, [fo, fh, fw, fi]) = a.dense::<f32, 4>(1, "filter", DType::F32)?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let (lo, hi) = a.float_range(4)?;
        let w = window(&a, 5, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
        let [n, ih, iw, ic] = input.dims;
        let [on, oh, ow, oc] = output.dims;
        let fits = on == n && bias_len == oc && fo == 1 && fi == oc && ic != 0 && oc != 0 && oc % ic == 0;
        if !fits {
            return Err(invalid(
                kernel,
                format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit the input and output"),
            ));
        }
        let (inputs, out) = split(kernel, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(kernel, out)?;
        #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
        {
            let p = FloatConv {
                input: x,
                dims: input.dims,
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
