//! Convolutions: `nn.conv_2d.*` and `nn.depthwise_conv_2d.*` (NHWC input, TFLite's filter
//! layouts: `[out, kh, kw, in]` for conv, `[1, kh, kw, out]` for depthwise).
//!
//! Attributes, in name order:
//! - int8: `bias` (dense i32 `[out]`), `filter` (dense i8), `input` and `output`
//!   (`[offset, n, h, w, c]`), `multipliers` and `shifts` (one per output channel, TFLite's
//!   per-channel requantization), `quant` (`[input zero point, output zero point, activation
//!   min, activation max]`), `window` (`[stride h, stride w, dilation h, dilation w, pad top,
//!   pad left]`). The arithmetic is `hostrt-dsp`'s, bit-exact with TFLite Micro.
//! - float32: `bias` (dense f32 `[out]`), `filter` (dense f32), `input`, `output`, `range`
//!   (`[activation min, activation max]`), `window`.

use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;
use hostrt_core::{Diagnostic, diag_fmt};
use hostrt_dsp::{ActivationRange, ConvParams, DepthwiseParams, Hw, Nhwc, PerChannel, Window};

use crate::arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};

/// The largest stride, dilation or padding a window attribute may hold (keeps every
/// coordinate computation far from overflow).
const MAX_WINDOW: i32 = 1 << 16;

/// A window's stride, dilation and padding from `[sh, sw, dh, dw, ph, pw]`.
pub(crate) fn window(a: &Attrs<'_>, i: usize, filter: Hw, output: Hw) -> Result<Window, Diagnostic> {
    let v = a.ints(i, "window", Some(6))?;
    let ok = |x: i32, min: i32| (min..=MAX_WINDOW).contains(&x);
    if !(ok(v[0], 1) && ok(v[1], 1) && ok(v[2], 1) && ok(v[3], 1) && ok(v[4], 0) && ok(v[5], 0)) {
        return Err(invalid(a.kernel, format_args!("'window' values out of range: {:?}", v)));
    }
    let u = |x: i32| x as usize; // non-negative, checked above
    Ok(Window {
        filter,
        stride: Hw::new(u(v[0]), u(v[1])),
        dilation: Hw::new(u(v[2]), u(v[3])),
        pad: Hw::new(u(v[4]), u(v[5])),
        output,
    })
}

fn nhwc(r: &Region<4>) -> Nhwc {
    Nhwc::new(r.dims[0], r.dims[1], r.dims[2], r.dims[3])
}

fn dsp_error(kernel: &str, e: hostrt_dsp::DspError) -> Diagnostic {
    diag_fmt!(InvalidArgument, "{}: {}", kernel, e)
}

fn region_len<const R: usize>(
    kernel: &str,
    r: &Region<R>,
    size: usize,
) -> Result<(usize, usize), Diagnostic> {
    r.bytes(size).ok_or_else(|| invalid(kernel, format_args!("tensor size overflows")))
}

/// The int8 quantization attributes: `(input zp, output zp, activation range)`.
fn quant(a: &Attrs<'_>, i: usize) -> Result<(i32, i32, ActivationRange), Diagnostic> {
    let q = a.ints(i, "quant", Some(4))?;
    let range = ActivationRange::new(q[2], q[3]).map_err(|e| dsp_error(a.kernel, e))?;
    Ok((q[0], q[1], range))
}

enum Kind {
    Conv,
    Depthwise,
}

fn conv_i8(frame: &KernelFrame<'_>, kernel: &'static str, kind: Kind) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 8)?;
        let (bias, [bias_len]) = a.dense::<1>(0, "bias", DType::I32)?;
        let (filter, [fo, fh, fw, fi]) = a.dense::<4>(1, "filter", DType::I8)?;
        let (input, multipliers) = (a.region::<4>(2, "input")?, a.ints(3, "multipliers", None)?);
        let (output, (in_zp, out_zp, activation)) = (a.region::<4>(4, "output")?, quant(&a, 5)?);
        let shifts = a.ints(6, "shifts", None)?;
        let window = window(&a, 7, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
        let out_channels = output.dims[3];
        let (out_off, out_len) = region_len(kernel, &output, 1)?;
        let (in_off, in_len) = region_len(kernel, &input, 1)?;
        let (inputs, out) = split(kernel, arena, out_off, out_len)?;
        let x = inputs.i8s(in_off, in_len)?;
        let quant = PerChannel { multiplier: multipliers, shift: shifts };
        let bias: &[i32] = bytemuck::try_cast_slice(bias.data)
            .map_err(|_| invalid(kernel, format_args!("'bias' is not 4-byte aligned")))?;
        let filter: &[i8] = bytemuck::cast_slice(filter.data);
        if bias.len() != bias_len || output.dims[0] != input.dims[0] {
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
                hostrt_dsp::conv2d(&p, x, filter, Some(bias), quant, i8s_mut(out))
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

/// The float activation range `[min, max]`.
pub(crate) fn range(a: &Attrs<'_>, i: usize) -> Result<(f32, f32), Diagnostic> {
    let r = a.floats(i, "range", 2)?;
    if r[0].is_nan() || r[1].is_nan() || r[0] > r[1] {
        return Err(invalid(a.kernel, format_args!("'range' must be [min, max], got {:?}", r)));
    }
    Ok((r[0], r[1]))
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

fn conv_f32(frame: &KernelFrame<'_>, kernel: &'static str, kind: Kind) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 6)?;
        let (bias, [bias_len]) = a.dense::<1>(0, "bias", DType::F32)?;
        let (filter, [fo, fh, fw, fi]) = a.dense::<4>(1, "filter", DType::F32)?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let (lo, hi) = range(&a, 4)?;
        let w = window(&a, 5, Hw::new(fh, fw), Hw::new(output.dims[1], output.dims[2]))?;
        let [n, ih, iw, ic] = input.dims;
        let [on, oh, ow, oc] = output.dims;
        let depthwise = matches!(kind, Kind::Depthwise);
        let fits = on == n
            && bias_len == oc
            && if depthwise { fo == 1 && fi == oc && ic != 0 && oc % ic == 0 } else { fo == oc && fi == ic };
        if !fits {
            return Err(invalid(
                kernel,
                format_args!("filter [{fo}, {fh}, {fw}, {fi}] does not fit the input and output"),
            ));
        }
        let (out_off, out_len) = region_len(kernel, &output, 4)?;
        let (in_off, _) = region_len(kernel, &input, 4)?;
        let (inputs, out) = split(kernel, arena, out_off, out_len)?;
        let x = inputs.f32s(in_off, n * ih * iw * ic)?;
        let out = f32s_mut(kernel, out)?;
        let bias: &[f32] = bytemuck::try_cast_slice(bias.data)
            .map_err(|_| invalid(kernel, format_args!("'bias' is not 4-byte aligned")))?;
        let filter: &[f32] = bytemuck::try_cast_slice(filter.data)
            .map_err(|_| invalid(kernel, format_args!("'filter' is not 4-byte aligned")))?;
        let multiplier = if depthwise { oc / ic } else { 1 };
        let mut o = out.iter_mut();
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    for c in 0..oc {
                        let mut acc = 0.0f32;
                        for ky in 0..fh {
                            let Some(y) = tap(oy, w.stride.h, w.pad.h, ky, w.dilation.h, ih) else {
                                continue;
                            };
                            for kx in 0..fw {
                                let Some(xx) = tap(ox, w.stride.w, w.pad.w, kx, w.dilation.w, iw) else {
                                    continue;
                                };
                                let pixel = ((b * ih + y) * iw + xx) * ic;
                                if depthwise {
                                    acc += x[pixel + c / multiplier] * filter[(ky * fw + kx) * oc + c];
                                } else {
                                    let f = &filter[((c * fh + ky) * fw + kx) * ic..][..ic];
                                    for (a, b) in x[pixel..pixel + ic].iter().zip(f) {
                                        acc += a * b;
                                    }
                                }
                            }
                        }
                        if let Some(o) = o.next() {
                            *o = (acc + bias[c]).clamp(lo, hi);
                        }
                    }
                }
            }
        }
        Ok(())
    })
}

/// `nn.conv_2d.f32`.
pub(crate) fn conv_2d_f32(frame: &KernelFrame<'_>) {
    conv_f32(frame, "nn.conv_2d.f32", Kind::Conv)
}

/// `nn.depthwise_conv_2d.f32`.
pub(crate) fn depthwise_conv_2d_f32(frame: &KernelFrame<'_>) {
    conv_f32(frame, "nn.depthwise_conv_2d.f32", Kind::Depthwise)
}
