//! Pooling: `nn.max_pool_2d.*` and `nn.average_pool_2d.*` over NHWC tensors; padding taps
//! are left out (TFLite's rule).
//!
//! Attributes, in name order: `input` and `output` (`[offset, n, h, w, c]`), `range`
//! (the fused activation: `[min, max]`, i32 for int8 and f32 for float32), `window`
//! (`[filter h, filter w, stride h, stride w, pad top, pad left]`, then optionally the
//! dilation `[h, w]`: ONNX's pooling has one, TFLite's not).

use hostrt_core::Diagnostic;
use hostrt_core::kernel::{KernelFrame, PrepareInput, Prepared};
use hostrt_dsp::{ActivationRange, Hw, Nhwc, PoolParams, Window};

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, dsp_error, invalid};
use crate::prepared::{keep, record, sizes, words};

/// The pooling window from the `window` attribute `[fh, fw, sh, sw, ph, pw]` or
/// `[fh, fw, sh, sw, ph, pw, dh, dw]`.
fn geometry(a: &Attrs<'_>, output: &Region<4>) -> Result<Window, Diagnostic> {
    let ([fh, fw, sh, sw, ph, pw], [dh, dw]) = a.pool_window(3)?;
    Ok(Window {
        filter: Hw::new(fh, fw),
        stride: Hw::new(sh, sw),
        dilation: Hw::new(dh, dw),
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

/// An int8 pooling layer as its attributes describe it, checked: its parameters and the
/// input's offset and element count, the output's offset and element count.
struct PoolI8 {
    params: PoolParams,
    regions: [usize; 4],
}

fn decode_pool_i8(a: &Attrs<'_>, kernel: &'static str) -> Result<PoolI8, Diagnostic> {
    let (input, output) = (a.region::<4>(0, "input")?, a.region::<4>(1, "output")?);
    let r = a.ints(2, "range", Some(2))?;
    let activation = a.int8_range(r[0], r[1])?;
    check_shapes(kernel, &input, &output)?;
    let window = geometry(a, &output)?;
    let [n, h, w, c] = input.dims;
    let params = PoolParams { input: Nhwc::new(n, h, w, c), window, activation };
    Ok(PoolI8 { params, regions: [input.offset, input.elements()?, output.offset, output.elements()?] })
}

/// [`PoolI8`] as prepared state keeps it (docs/execution.md, "Prepared state").
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct RecordI8 {
    /// The input's `[n, h, w, c]`; the window's filter, stride, dilation, padding and
    /// output, each `[h, w]`; the regions.
    sizes: [u32; 18],
    range: [i32; 2],
}

fn prepare_pool_i8(input: &PrepareInput<'_>, kernel: &'static str) -> Option<Prepared> {
    let l = decode_pool_i8(&Attrs::of_slice(input.attrs(), kernel, 4).ok()?, kernel).ok()?;
    let (i, w) = (l.params.input, l.params.window);
    let [f, s, d, p, o] = [w.filter, w.stride, w.dilation, w.pad, w.output];
    let [r0, r1, r2, r3] = l.regions;
    let all = [i.n, i.h, i.w, i.c, f.h, f.w, s.h, s.w, d.h, d.w, p.h, p.w, o.h, o.w, r0, r1, r2, r3];
    keep(&RecordI8 { sizes: words(all)?, range: [l.params.activation.min, l.params.activation.max] })
}

/// `nn.max_pool_2d.i8`'s prepare function.
pub(crate) fn prepare_max_pool_2d_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_pool_i8(input, "nn.max_pool_2d.i8")
}

/// `nn.average_pool_2d.i8`'s prepare function.
pub(crate) fn prepare_average_pool_2d_i8(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_pool_i8(input, "nn.average_pool_2d.i8")
}

/// The layer back from its prepared record.
fn pool_from_record(r: &RecordI8, kernel: &'static str) -> Result<PoolI8, Diagnostic> {
    let v = sizes(r.sizes);
    let hw = |i: usize| Hw::new(v[i], v[i + 1]);
    let window = Window { filter: hw(4), stride: hw(6), dilation: hw(8), pad: hw(10), output: hw(12) };
    let activation = ActivationRange::new(r.range[0], r.range[1]).map_err(|e| dsp_error(kernel, e))?;
    let params = PoolParams { input: Nhwc::new(v[0], v[1], v[2], v[3]), window, activation };
    Ok(PoolI8 { params, regions: [v[14], v[15], v[16], v[17]] })
}

fn pool_i8(frame: &KernelFrame<'_>, kernel: &'static str, max: bool) {
    with_arena(frame, |arena| {
        let PoolI8 { params, regions: [at, len, to, out_len] } =
            match frame.prepared().and_then(record::<RecordI8>) {
                Some(r) => pool_from_record(r, kernel)?,
                None => decode_pool_i8(&Attrs::of(frame, kernel, 4)?, kernel)?,
            };
        let (inputs, out) = split(kernel, arena, to, out_len)?;
        let x = inputs.i8s(at, len)?;
        let run = if max { hostrt_dsp::max_pool } else { hostrt_dsp::avg_pool };
        run(&params, x, i8s_mut(out)).map_err(|e| dsp_error(kernel, e))?;
        // A deliberate off-by-one for the layer-by-layer comparison's own test: built only
        // with `--cfg hostrt_test_off_by_one` (docs/profiling.md, "Layer by layer").
        #[cfg(hostrt_test_off_by_one)]
        if let Some(v) = out.first_mut() {
            *v = v.wrapping_add(1);
        }
        Ok(())
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
        // Per output pixel, the taps in order, for each block of channels: each channel sees
        // the same order as one channel at a time would, and a block's sums stay in
        // registers. A window's taps inside the image are one run of columns (a dilation
        // apart) in each of a range of rows.
        let (dh, dw) = (w.dilation.h, w.dilation.w);
        let mut pixels = out.chunks_exact_mut(c.max(1));
        for b in 0..n {
            for oy in 0..oh {
                let (ky0, ky1, y) = span(oy, (w.stride.h, w.pad.h, w.filter.h, dh), ih);
                for ox in 0..ow {
                    let Some(px) = pixels.next() else { return Ok(()) };
                    let (kx0, kx1, x0) = span(ox, (w.stride.w, w.pad.w, w.filter.w, dw), iw);
                    let count = (ky1 - ky0) * (kx1 - kx0);
                    if count == 0 {
                        return Err(invalid(
                            kernel,
                            format_args!("a pooling window lies wholly in the padding"),
                        ));
                    }
                    // An undilated window over whole rows (a global pool) reads one run: its
                    // rows are consecutive, so their pixels follow one another in the input,
                    // in the order the sums take.
                    let whole = kx1 - kx0 == iw && (dh, dw) == (1, 1);
                    let (runs, len) = if whole { (1, count) } else { (ky1 - ky0, kx1 - kx0) };
                    let window = (((b * ih + y) * iw + x0) * c, dh * iw * c, runs, dw * c);
                    if max {
                        pool_pixel(px, x, window, (len, c), f32::MIN, f32::max);
                    } else {
                        pool_pixel(px, x, window, (len, c), 0.0, |a, v| a + v);
                    }
                    for a in px.iter_mut() {
                        let v = if max { *a } else { *a / count as f32 };
                        *a = crate::clamp_to(v, (lo, hi));
                    }
                }
            }
        }
        Ok(())
    })
}

/// The taps `k0..k1` of output row or column `o`'s window (`(stride, pad, filter,
/// dilation)`) that lie inside an image `size` long (`k0 == k1` when none), and the input
/// row or column of tap `k0`.
fn span(
    o: usize,
    (stride, pad, filter, dilation): (usize, usize, usize, usize),
    size: usize,
) -> (usize, usize, usize) {
    // Every factor is below 2^31 (region dims) or 2^16 (window), so i64 cannot overflow;
    // the dilation is at least 1 (`Attrs::pool_window`).
    let (start, d, filter) = (o as i64 * stride as i64 - pad as i64, dilation as i64, filter as i64);
    // Tap k reads start + k * d: the first at or after 0, the last before `size`.
    let k0 = if start < 0 { (-start + d - 1) / d } else { 0 }.min(filter);
    let room = size as i64 - start;
    let k1 = if room > 0 { (room + d - 1) / d } else { 0 }.clamp(k0, filter);
    (k0 as usize, k1 as usize, (start + k0 * d).max(0) as usize)
}

/// One output pixel `px` of `c` channels: from `init`, `f` of each input pixel in order,
/// over `runs` runs of `len` pixels `pixel` values apart, the first run at `first` in `x`
/// and each `step` after the last (`(first, step, runs, pixel)`, `(len, c)`). Blocks of 32, 16, 8 and 4 channels, each in
/// a function compiled for the widest registers the CPU has, keep their sums in registers;
/// each channel's sum waits on its last operation, and a wider block's chains overlap.
#[inline(always)]
fn pool_pixel(
    px: &mut [f32],
    x: &[f32],
    window: (usize, usize, usize, usize),
    (len, c): (usize, usize),
    init: f32,
    f: impl Fn(f32, f32) -> f32 + Copy,
) {
    let mut c0 = 0;
    while c - c0 >= 4 {
        let at = (len, c0);
        c0 += match c - c0 {
            32.. => pool_block::<32>(px, x, window, at, init, f),
            16.. => pool_block::<16>(px, x, window, at, init, f),
            8.. => pool_block::<8>(px, x, window, at, init, f),
            _ => pool_block::<4>(px, x, window, at, init, f),
        };
    }
    // The last channels, in place.
    if c0 < c {
        let px = &mut px[c0..c];
        px.fill(init);
        let (first, step, runs, pixel) = window;
        for r in 0..runs {
            for p in 0..len {
                let v = &x[first + r * step + p * pixel + c0..][..c - c0];
                px.iter_mut().zip(v).for_each(|(a, &v)| *a = f(*a, v));
            }
        }
    }
}

/// Channels `c0..c0 + N` of [`pool_pixel`]'s pixel (`(len, c0)`) into `px`; returns `N`.
#[inline(always)]
fn pool_block<const N: usize>(
    px: &mut [f32],
    x: &[f32],
    (first, step, runs, pixel): (usize, usize, usize, usize),
    (len, c0): (usize, usize),
    init: f32,
    f: impl Fn(f32, f32) -> f32 + Copy,
) -> usize {
    let acc = crate::on_widest(
        #[inline(always)]
        || {
            let mut acc = [init; N];
            for r in 0..runs {
                for p in 0..len {
                    let at = first + r * step + p * pixel + c0;
                    let v: &[f32; N] = x[at..][..N].try_into().unwrap_or(&[0.0; N]);
                    for k in 0..N {
                        acc[k] = f(acc[k], v[k]);
                    }
                }
            }
            acc
        },
    );
    px[c0..c0 + N].copy_from_slice(&acc);
    N
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

#[cfg(test)]
mod tests {
    use super::span;
    use std::vec::Vec;

    /// `span` against counting the taps one by one: every output position, stride, pad,
    /// filter size and dilation of a few small images, windows wholly in the padding among
    /// them.
    #[test]
    fn span_is_the_taps_inside_the_image() {
        for size in 1..7 {
            for (stride, pad, filter, dilation) in (1..3).flat_map(|s| {
                (0..4).flat_map(move |p| (1..5).flat_map(move |f| (1..4).map(move |d| (s, p, f, d))))
            }) {
                for o in 0..size + 3 {
                    let at = |k: usize| (o * stride + k * dilation) as i64 - pad as i64;
                    let inside: Vec<usize> =
                        (0..filter).filter(|&k| (0..size as i64).contains(&at(k))).collect();
                    let (k0, k1, first) = span(o, (stride, pad, filter, dilation), size);
                    assert_eq!(
                        (k0..k1).collect::<Vec<_>>(),
                        inside,
                        "o {o} {stride} {pad} {filter} {dilation}"
                    );
                    if k0 < k1 {
                        assert_eq!(first as i64, at(k0));
                    }
                }
            }
        }
    }
}
