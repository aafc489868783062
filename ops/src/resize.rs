//! Image resizing over NHWC regions: `nn.resize_nearest` (any element type, a copy of the
//! nearest pixel's channels) and `nn.resize_bilinear.{i8,f32}`. The importer computes, per
//! output row and column, the source pixels (and for bilinear the fraction between them)
//! as TensorFlow Lite Micro does (docs/models.md); the kernels only index and blend.
//!
//! Attributes, in name order:
//! - `nn.resize_nearest`: `cols` (source column of each output column), `input` and
//!   `output` (`[offset, n, h, w, c]`), `rows` (source row of each output row), `size`
//!   (`[element bytes]`).
//! - `nn.resize_bilinear.*`: `col_frac`, `cols`, `input`, `output`, `row_frac`, `rows`:
//!   `cols` holds `[x0, x1]` per output column and `col_frac` its fraction (int8: in 1/1024
//!   units, TFLite's `ResizeBilinearInteger`; float32: `x - x0`, TFLite's reference).
//! - `nn.resize_separable.f32`: `col_weights`, `cols`, `input`, `output`, `row_weights`,
//!   `rows`, `taps`: each output row blends `taps[0]` source rows (`rows`, `taps[0]` per
//!   output row) with `row_weights`, each column `taps[1]` source columns likewise; ONNX's
//!   cubic Resize and its antialiased filters, whose weights the importer computes.
//!
//! Each table (`rows`, `cols`, the fractions and weights) may be an array or a rank-1 dense
//! tensor of the same values; importers write dense ones.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{f32s_mut, i8s_mut, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};

/// Checks that `input` and `output` agree in batches and channels and that every source
/// index of `rows`/`cols` (`per` of each: per output row, per output column) lies inside
/// the input.
fn check(
    a: &Attrs<'_>,
    input: &Region<4>,
    output: &Region<4>,
    rows: &[i32],
    cols: &[i32],
    per: (usize, usize),
) -> Result<(), Diagnostic> {
    let (i, o) = (input.dims, output.dims);
    if i[0] != o[0] || i[3] != o[3] {
        return Err(invalid(a.kernel, format_args!("input {:?} and output {:?} differ in n or c", i, o)));
    }
    let inside = |v: &[i32], n: usize| v.iter().all(|&x| usize::try_from(x).is_ok_and(|x| x < n));
    if rows.len() != o[1] * per.0 || cols.len() != o[2] * per.1 || !inside(rows, i[1]) || !inside(cols, i[2])
    {
        return Err(invalid(a.kernel, format_args!("source rows or columns do not fit {:?} -> {:?}", i, o)));
    }
    Ok(())
}

/// `nn.resize_nearest`.
pub(crate) fn resize_nearest(frame: &KernelFrame<'_>) {
    const K: &str = "nn.resize_nearest";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let cols = a.int_table(0, "cols")?;
        let (input, output) = (a.region::<4>(1, "input")?, a.region::<4>(2, "output")?);
        let rows = a.int_table(3, "rows")?;
        let size = a.element_size(4)?;
        check(&a, &input, &output, rows, cols, (1, 1))?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(size)?)?;
        let x = inputs.bytes(input.offset, input.byte_len(size)?)?;
        let [n, h, w, c] = input.dims;
        let pixel = c * size;
        let mut o = 0;
        for b in 0..n {
            for &y in rows {
                for &xx in cols {
                    // In range: checked above.
                    let from = ((b * h + y as usize) * w + xx as usize) * pixel;
                    out[o..o + pixel].copy_from_slice(&x[from..from + pixel]);
                    o += pixel;
                }
            }
        }
        Ok(())
    })
}

/// The bilinear blend of every output pixel: calls `f(output index, [i00, i10, i01, i11]
/// input indices, row index, column index)` (row/column index into `row_frac`/`col_frac`).
fn bilinear(
    input: &Region<4>,
    output: &Region<4>,
    rows: &[i32],
    cols: &[i32],
    mut f: impl FnMut(usize, [usize; 4], usize, usize),
) {
    let [n, h, w, c] = input.dims;
    let [_, oh, ow, _] = output.dims;
    let mut o = 0;
    for b in 0..n {
        for y in 0..oh {
            let (y0, y1) = (rows[2 * y] as usize, rows[2 * y + 1] as usize);
            for x in 0..ow {
                let (x0, x1) = (cols[2 * x] as usize, cols[2 * x + 1] as usize);
                let at = |yy: usize, xx: usize| ((b * h + yy) * w + xx) * c;
                let base = [at(y0, x0), at(y1, x0), at(y0, x1), at(y1, x1)];
                for ch in 0..c {
                    f(o, base.map(|p| p + ch), y, x);
                    o += 1;
                }
            }
        }
    }
}

/// `nn.resize_bilinear.i8`: TFLite's `ResizeBilinearInteger` (10-bit fractions, the sum
/// rounded half away from zero by 2^20).
pub(crate) fn resize_bilinear_i8(frame: &KernelFrame<'_>) {
    const K: &str = "nn.resize_bilinear.i8";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let (col_frac, cols) = (a.int_table(0, "col_frac")?, a.int_table(1, "cols")?);
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let (row_frac, rows) = (a.int_table(4, "row_frac")?, a.int_table(5, "rows")?);
        check(&a, &input, &output, rows, cols, (2, 2))?;
        let unit = |v: &[i32], n: usize| v.len() == n && v.iter().all(|f| (-1024..=2048).contains(f));
        if !unit(row_frac, output.dims[1]) || !unit(col_frac, output.dims[2]) {
            return Err(invalid(K, format_args!("fractions must be one per row/column, in -1024..=2048")));
        }
        let (inputs, out) = split(K, arena, output.offset, output.elements()?)?;
        let x = inputs.i8s(input.offset, input.elements()?)?;
        let out = i8s_mut(out);
        bilinear(&input, &output, rows, cols, |o, [p00, p10, p01, p11], y, xx| {
            let (fy, fx) = (i64::from(row_frac[y]), i64::from(col_frac[xx]));
            let v = |p: usize| i64::from(x[p]);
            let sum = v(p00) * (1024 - fy) * (1024 - fx)
                + v(p10) * fy * (1024 - fx)
                + v(p01) * (1024 - fy) * fx
                + v(p11) * fy * fx;
            let round = if sum > 0 { 1 << 19 } else { -(1 << 19) };
            // Wraps as TFLite's cast does where half-pixel fractions overshoot.
            out[o] = ((sum + round) / (1 << 20)) as i8;
        });
        Ok(())
    })
}

/// `nn.resize_bilinear.f32`: TFLite's reference blend.
pub(crate) fn resize_bilinear_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.resize_bilinear.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 6)?;
        let col_frac = a.float_table(0, "col_frac", a.int_table(1, "cols")?.len() / 2)?;
        let cols = a.int_table(1, "cols")?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let rows = a.int_table(5, "rows")?;
        let row_frac = a.float_table(4, "row_frac", rows.len() / 2)?;
        check(&a, &input, &output, rows, cols, (2, 2))?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        bilinear(&input, &output, rows, cols, |o, [p00, p10, p01, p11], y, xx| {
            let (fy, fx) = (row_frac[y], col_frac[xx]);
            out[o] = x[p00] * (1.0 - fy) * (1.0 - fx)
                + x[p10] * fy * (1.0 - fx)
                + x[p01] * (1.0 - fy) * fx
                + x[p11] * fy * fx;
        });
        Ok(())
    })
}

/// `nn.resize_separable.f32`: `out[y][x] = Σ_i Σ_j row_weights[y][i] · col_weights[x][j] ·
/// in[rows[y][i]][cols[x][j]]` per channel.
pub(crate) fn resize_separable_f32(frame: &KernelFrame<'_>) {
    const K: &str = "nn.resize_separable.f32";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 7)?;
        let cols = a.int_table(1, "cols")?;
        let (input, output) = (a.region::<4>(2, "input")?, a.region::<4>(3, "output")?);
        let rows = a.int_table(5, "rows")?;
        let taps = a.ints(6, "taps", Some(2))?;
        let (tr, tc) = match (usize::try_from(taps[0]), usize::try_from(taps[1])) {
            (Ok(r @ 1..=64), Ok(c @ 1..=64)) => (r, c),
            _ => return Err(invalid(K, format_args!("taps {:?} are not in 1..=64", taps))),
        };
        let (row_weights, col_weights) =
            (a.float_table(4, "row_weights", rows.len())?, a.float_table(0, "col_weights", cols.len())?);
        check(&a, &input, &output, rows, cols, (tr, tc))?;
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(4)?)?;
        let x = inputs.f32s(input.offset, input.elements()?)?;
        let out = f32s_mut(K, out)?;
        if out.is_empty() {
            return Ok(());
        }
        // Every output dim is non-zero, so `check` found the input's non-zero too.
        let [n, h, w, c] = input.dims;
        let mut pixels = out.chunks_exact_mut(c);
        for image in x.chunks_exact(h * w * c).take(n) {
            for ys in rows.chunks_exact(tr).zip(row_weights.chunks_exact(tr)) {
                for xs in cols.chunks_exact(tc).zip(col_weights.chunks_exact(tc)) {
                    // One output pixel per pair: `check` sized `out` for all of them.
                    if let Some(pixel) = pixels.next() {
                        blend(pixel, image, (w, c), ys, xs);
                    }
                }
            }
        }
        Ok(())
    })
}

/// One output pixel's channels: the sum over its source rows `ys` and columns `xs` (with
/// their weights) of `image`'s pixels, `image` being `[h, w, c]` (indices checked).
fn blend(
    pixel: &mut [f32],
    image: &[f32],
    (w, c): (usize, usize),
    ys: (&[i32], &[f32]),
    xs: (&[i32], &[f32]),
) {
    pixel.fill(0.0);
    for (&yy, &fy) in ys.0.iter().zip(ys.1) {
        for (&xx, &fx) in xs.0.iter().zip(xs.1) {
            let at = (yy as usize * w + xx as usize) * c;
            let f = fy * fx;
            for (v, &s) in pixel.iter_mut().zip(&image[at..at + c]) {
                *v += f * s;
            }
        }
    }
}
