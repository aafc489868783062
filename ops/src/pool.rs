//! Pooling: `nn.max_pool_2d.*` and `nn.average_pool_2d.*` over NHWC tensors; padding taps
//! are left out (TFLite's rule).
//!
//! Attributes, in name order: `input` and `output` (`[offset, n, h, w, c]`), `range`
//! (the fused activation: `[min, max]`, i32 for int8 and f32 for float32), `window`
//! (`[filter h, filter w, stride h, stride w, pad top, pad left]`).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_dsp::{Hw, Nhwc, PoolParams, Window};

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};
use crate::conv::tap;

/// The pooling window from the `window` attribute `[fh, fw, sh, sw, ph, pw]`.
fn geometry(a: &Attrs<'_>, output: &Region<4>) -> Result<Window, Diagnostic> {
    let [fh, fw, sh, sw, ph, pw] = a.window(3)?;
    Ok(Window {
        filter: Hw::new(fh, fw),
        stride: Hw::new(sh, sw),
        dilation: Hw::square(1),
        pad: Hw::new(ph, pw),
        output: Hw::new(output.dims[1], output.dims[2]),
    })
}

fn check_shapes(kernel: &str, input: &Region<4>, output: &Region<4>) -> Result<(), Diagnostic> {
    if input.dims[0] != output.dims[0] || input.dims[3] != output.dims[3] {
        return Err(invalid(
            kernel,
            format_args!("input {:?} and output {:?} differ in batches or channels", input.dims, output.dims),
        ));
    }
    Ok(())
}

fn pool_i8(frame: &KernelFrame<'_>, kernel: &'static str, max: bool) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let (input, output) = (a.region::<4>(0, "input")?, a.region::<4>(1, "output")?);
        let r = a.ints(2, "range", Some(2))?;
        let activation = a.int8_range(r[0], r[1])?;
        check_shapes(kernel, &input, &output)?;
        let window = geometry(&a, &output)?;
        let [n, h, w, c] = input.dims;
        let params = PoolParams { input: Nhwc::new(n, h, w, c), window, activation };
        let (inputs, out) = split(kernel, arena, output.offset, output.elements()?)?;
        let x = inputs.i8s(input.offset, input.elements()?)?;
        let run = if max { hostrt_dsp::max_pool } else { hostrt_dsp::avg_pool };
        run(&params, x, i8s_mut(out)).map_err(|e| dsp_error(kernel, e))
    })
}

fn pool_f32(frame: &KernelFrame<'_>, kernel: &'static str, max: bool) {
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, kernel, 4)?;
        let (input, output) = (a.region::<4>(0, "input")?, a.region::<4>(1, "output")?);
        let (lo, hi) = a.float_range(2)?;
        check_shapes(kernel, &input, &output)?;
        let w = geometry(&a, &output)?;
        let [n, ih, iw, c] = input.dims;
        let [_, oh, ow, _] = output.dims;
        let (inputs, out) = split(kernel, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(kernel, out)?;
        // Per output pixel, the taps in order, each over every channel (contiguous, so
        // vectorized): each channel sees the same order as one channel at a time would.
        let mut pixels = out.chunks_exact_mut(c.max(1));
        for b in 0..n {
            for oy in 0..oh {
                for ox in 0..ow {
                    let Some(px) = pixels.next() else { return Ok(()) };
                    px.fill(if max { f32::MIN } else { 0.0 });
                    let mut count = 0u32;
                    for ky in 0..w.filter.h {
                        let Some(y) = tap(oy, w.stride.h, w.pad.h, ky, 1, ih) else { continue };
                        for kx in 0..w.filter.w {
                            let Some(xx) = tap(ox, w.stride.w, w.pad.w, kx, 1, iw) else { continue };
                            let v = &x[((b * ih + y) * iw + xx) * c..][..c];
                            if max {
                                px.iter_mut().zip(v).for_each(|(a, &v)| *a = a.max(v));
                            } else {
                                px.iter_mut().zip(v).for_each(|(a, &v)| *a += v);
                            }
                            count += 1;
                        }
                    }
                    if count == 0 {
                        return Err(invalid(
                            kernel,
                            format_args!("a pooling window lies wholly in the padding"),
                        ));
                    }
                    for a in px.iter_mut() {
                        let v = if max { *a } else { *a / count as f32 };
                        *a = v.clamp(lo, hi);
                    }
                }
            }
        }
        Ok(())
    })
}

/// `nn.max_pool_2d.i8`.
pub(crate) fn max_pool_2d_i8(frame: &KernelFrame<'_>) {
    pool_i8(frame, "nn.max_pool_2d.i8", true)
}

/// `nn.average_pool_2d.i8`.
pub(crate) fn average_pool_2d_i8(frame: &KernelFrame<'_>) {
    pool_i8(frame, "nn.average_pool_2d.i8", false)
}

/// `nn.max_pool_2d.f32`.
pub(crate) fn max_pool_2d_f32(frame: &KernelFrame<'_>) {
    pool_f32(frame, "nn.max_pool_2d.f32", true)
}

/// `nn.average_pool_2d.f32`.
pub(crate) fn average_pool_2d_f32(frame: &KernelFrame<'_>) {
    pool_f32(frame, "nn.average_pool_2d.f32", false)
}
