//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: the source rows and columns of every output
//! row and column (and the bilinear fractions) computed here exactly as TensorFlow Lite
//! Micro computes them (`GetNearestNeighbor`, `ComputeInterpolationValues` and its 10-bit
//! integer form), so the kernels only index and blend. ONNX's Resize comes through the same
//! operators with its own coordinate rules, and its cubic, antialiased or
//! `exclude_outside` filters become `nn.resize_separable.f32` (`Filter`).

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, ext, kind};
use super::{AttrSpec, Lowerer, float_table, int_table, ints};

/// TFLite's `GetNearestNeighbor`, in its float arithmetic.
fn nearest(v: usize, input: usize, output: usize, align: bool, half: bool) -> i32 {
    let scale = if align && output > 1 {
        (input - 1) as f32 / (output - 1) as f32
    } else {
        input as f32 / output as f32
    };
    let offset = if half { 0.5f32 } else { 0.0 };
    let at = (v as f32 + offset) * scale;
    let mut i = (if align { at.round() } else { at.floor() } as i32).min(input as i32 - 1);
    if half {
        i = i.max(0);
    }
    i
}

/// Source `[lo, hi]` per output index and the fraction, in 1/1024 units (TFLite's
/// `ComputeInterpolationValuesInteger`).
fn bilinear_i8(input: usize, output: usize, align: bool, half: bool) -> (Vec<i32>, Vec<i32>) {
    let (i, o) = (input as i32, output as i32);
    let scale = if align && o > 1 {
        ((1 << 10) * (i - 1) + (o - 1) / 2) / (o - 1)
    } else {
        ((1 << 10) * i + o / 2) / o
    };
    let (mut idx, mut frac) = (Vec::new(), Vec::new());
    for v in 0..o {
        let scaled = if half { v * scale + scale / 2 - (1 << 9) } else { v * scale };
        let lo = (scaled / (1 << 10)).max(0);
        let hi = ((scaled + (1 << 10) - 1) / (1 << 10)).min(i - 1);
        idx.extend([lo, hi]);
        frac.push(scaled - (1 << 10) * lo);
    }
    (idx, frac)
}

/// Source `[lo, hi]` per output index and the fraction (TFLite's float
/// `ComputeInterpolationValues`).
fn bilinear_f32(input: usize, output: usize, align: bool, half: bool) -> (Vec<i32>, Vec<f32>) {
    let mut scale = input as f32 / output as f32;
    if align && output > 1 {
        scale = (input - 1) as f32 / (output - 1) as f32;
    }
    let (mut idx, mut frac) = (Vec::new(), Vec::new());
    for v in 0..output {
        let scaled = if half { (v as f32 + 0.5) * scale - 0.5 } else { v as f32 * scale };
        let lo = (scaled.floor() as i32).max(0);
        let hi = (scaled.ceil() as i32).min(input as i32 - 1);
        idx.extend([lo, hi]);
        frac.push(scaled - lo as f32);
    }
    (idx, frac)
}

/// ONNX's rule for one axis of a Resize (`ext::RESIZE_COORD`, `ext::NEAREST_MODE` and the
/// axis's scale), in f64 as its reference does.
#[derive(Clone, Copy, Debug)]
struct OnnxAxis {
    coord: u8,
    nearest: u8,
    scale: f64,
}

impl OnnxAxis {
    /// The source coordinate of output index `v` (ONNX's `coordinate_transformation_mode`).
    fn source(self, v: usize, input: usize, output: usize) -> f64 {
        let (v, i, o, s) = (v as f64, input as f64, output as f64, self.scale);
        match self.coord {
            1 => v / s,
            // The output length unrounded (`input · scale`), as ONNX's reference divides by.
            2 if i * s > 1.0 => v * (i - 1.0) / (i * s - 1.0),
            2 => 0.0,
            3 if output <= 1 => 0.0,
            4 => {
                let adjust = o / (s * i);
                i / 2.0 * (1.0 - adjust) + (v + 0.5) / s - 0.5
            }
            _ => (v + 0.5) / s - 0.5,
        }
    }

    fn nearest(self, v: usize, input: usize, output: usize) -> i32 {
        let x = self.source(v, input, output);
        let at = match self.nearest {
            0 if x.fract() == 0.5 => x.floor(),
            1 if x.fract() == 0.5 => x.ceil(),
            2 => x.floor(),
            3 => x.ceil(),
            // Opset 10: down-sampling rounds up, up-sampling truncates.
            4 if self.scale < 1.0 => x.ceil(),
            4 => x.trunc(),
            _ => x.round(),
        };
        at.clamp(0.0, (input - 1) as f64) as i32
    }

    /// `[lo, hi]` per output index and the fraction (onnxruntime's linear rule: the source
    /// clamped to the input).
    fn linear(self, input: usize, output: usize) -> (Vec<i32>, Vec<f32>) {
        let (mut idx, mut frac) = (Vec::new(), Vec::new());
        for v in 0..output {
            let x = self.source(v, input, output).clamp(0.0, (input - 1) as f64);
            let lo = x.floor();
            idx.extend([lo as i32, (lo as i32 + 1).min(input as i32 - 1)]);
            frac.push((x - lo) as f32);
        }
        (idx, frac)
    }
}

/// ONNX's filters other than its plain linear one (cubic, antialiased, excluding the
/// outside), as its reference implementation computes them.
#[derive(Clone, Copy, Debug)]
struct Filter {
    cubic: bool,
    /// The cubic coefficient `a` (`cubic_coeff_a`).
    a: f64,
    antialias: bool,
    exclude_outside: bool,
}

impl Filter {
    /// Most taps per output index (`nn.resize_separable.f32`'s limit): antialiasing scales
    /// down to 1/16 (cubic) and 1/32 (linear).
    const MAX_TAPS: f64 = 64.0;

    /// The first and past-the-last tap, relative to the source index below the coordinate,
    /// and the filter's scale, for an axis scaled by `scale`; an error past
    /// [`Self::MAX_TAPS`].
    fn window(self, scale: f64) -> Result<(i64, i64, f64), String> {
        // Antialiasing widens the filter by 1 / scale when down-sampling.
        let s = if self.antialias { scale.min(1.0) } else { 1.0 };
        let reach = if self.cubic { 2.0 } else { 1.0 };
        let start = (-reach / s).floor() + 1.0;
        if 2.0 - 2.0 * start > Self::MAX_TAPS {
            return Err(format!(
                "antialiased Resize by {scale} needs {} taps per output pixel (at most 64)",
                2.0 - 2.0 * start
            ));
        }
        Ok((start as i64, 2 - start as i64, s))
    }

    /// The weights of taps `start..end` (source indices `base + start ..`) of `window`
    /// (from [`Self::window`], its filter scale `s`) for a source coordinate `ratio` past
    /// `base` (in `(0, 1]`).
    fn weights(self, ratio: f64, (start, end, s): (i64, i64, f64)) -> Vec<f64> {
        let a = self.a;
        let cubic = |x: f64| {
            let x = x.abs();
            if x <= 1.0 {
                ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
            } else if x < 2.0 {
                ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
            } else {
                0.0
            }
        };
        let w: Vec<f64> = (start..end)
            .map(|i| {
                let x = s * (i as f64 - ratio);
                if self.cubic { cubic(x) } else { (1.0 - x.abs()).clamp(0.0, 1.0) }
            })
            .collect();
        if !self.antialias {
            return w;
        }
        let sum: f64 = w.iter().sum();
        w.iter().map(|v| v / sum).collect()
    }
}

impl OnnxAxis {
    /// Most sources (and weights) per axis of a filtered Resize: each is an attribute
    /// element of the program.
    const MAX_TABLE: usize = 1 << 22;

    /// Per output index, the `taps` source indices (clamped to the input, as the edge
    /// value repeated) and their weights: ONNX's reference Resize with `filter`.
    fn filtered(
        self,
        input: usize,
        output: usize,
        filter: Filter,
    ) -> Result<(Vec<i32>, Vec<f32>, usize), String> {
        let window = filter.window(self.scale)?;
        let (start, end, _) = window;
        let entries = (end - start) as usize * output;
        if entries > Self::MAX_TABLE {
            return Err(format!(
                "Resize to {output} along an axis with {} taps needs {entries} sources, more than 2^22",
                end - start
            ));
        }
        let (mut idx, mut weights, mut taps) = (Vec::new(), Vec::new(), 0);
        for v in 0..output {
            let x = self.source(v, input, output);
            // The pixel on the left of `x` is preferred: an integer `x` has ratio 1.
            let ratio = if x.fract() == 0.0 { 1.0 } else { x - x.floor() };
            let base = (x - ratio).round() as i64;
            let mut w = filter.weights(ratio, window);
            let at = |k: usize| base + start + k as i64;
            if filter.exclude_outside {
                for (k, w) in w.iter_mut().enumerate() {
                    if !(0..input as i64).contains(&at(k)) {
                        *w = 0.0;
                    }
                }
                let sum: f64 = w.iter().sum();
                w.iter_mut().for_each(|w| *w /= sum);
            }
            taps = w.len();
            idx.extend((0..w.len()).map(|k| at(k).clamp(0, input as i64 - 1) as i32));
            weights.extend(w.iter().map(|&w| w as f32));
        }
        Ok((idx, weights, taps))
    }
}

impl Lowerer<'_, '_> {
    pub(super) fn resize(&mut self, op: &OpInfo<'_>, bilinear: bool) -> Result<(), String> {
        let o =
            Options::of(op, if bilinear { kind::RESIZE_BILINEAR } else { kind::RESIZE_NEAREST_NEIGHBOR })?;
        let (align, half) = if bilinear { (o.bool(2)?, o.bool(3)?) } else { (o.bool(0)?, o.bool(1)?) };
        let onnx = |scale: u16| -> Option<OnnxAxis> {
            Some(OnnxAxis {
                coord: o.ext(ext::RESIZE_COORD)? as u8,
                nearest: o.ext(ext::NEAREST_MODE)? as u8,
                scale: o.ext(scale).filter(|s| *s > 0.0)?,
            })
        };
        let onnx = onnx(ext::SCALE_H).zip(onnx(ext::SCALE_W));
        if align && half {
            return Err("align_corners and half_pixel_centers together are not supported".into());
        }
        let (x, s, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        self.same_kind(x, out)?;
        let (xs, os) = (self.t(x).shape.clone(), self.t(out).shape.clone());
        let size = self.int_constant(s, "size")?;
        if xs.len() != 4
            || os.len() != 4
            || xs[0] != os[0]
            || xs[3] != os[3]
            || size != [os[1] as i64, os[2] as i64]
        {
            return Err(format!("resizing {xs:?} to size {size:?} does not give the output's {os:?}"));
        }
        if xs[1] == 0 || xs[2] == 0 || os[1] == 0 || os[2] == 0 {
            return Err(format!("empty image {xs:?} -> {os:?}"));
        }
        let elem = self.t(x).elem;
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let (input, output) = (
            AttrSpec::Region { tensor: xr, dims: xs.clone() },
            AttrSpec::Region { tensor: out, dims: os.clone() },
        );
        if !bilinear {
            let map = |i: usize, o: usize, a: Option<OnnxAxis>| -> Vec<i32> {
                (0..o)
                    .map(|v| match a {
                        Some(a) => a.nearest(v, i, o),
                        None => nearest(v, i, o, align, half),
                    })
                    .collect()
            };
            let attrs = vec![
                ("cols", AttrSpec::Value(int_table(&map(xs[2], os[2], onnx.map(|a| a.1))))),
                ("input", input),
                ("output", output),
                ("rows", AttrSpec::Value(int_table(&map(xs[1], os[1], onnx.map(|a| a.0))))),
                ("size", AttrSpec::Value(ints(&[elem.size() as i32]))),
            ];
            self.push(op, "nn.resize_nearest", out, attrs);
            return Ok(());
        }
        let filter = Filter {
            cubic: o.ext(ext::RESIZE_CUBIC).is_some_and(|v| v != 0.0),
            a: o.ext(ext::CUBIC_A).unwrap_or(-0.75),
            antialias: o.ext(ext::ANTIALIAS).is_some_and(|v| v != 0.0),
            exclude_outside: o.ext(ext::EXCLUDE_OUTSIDE).is_some_and(|v| v != 0.0),
        };
        if let (ElemType::F32, Some((h, w))) = (elem, onnx)
            && (filter.cubic || filter.antialias || filter.exclude_outside)
        {
            let (rows, row_weights, tr) = h.filtered(xs[1], os[1], filter)?;
            let (cols, col_weights, tc) = w.filtered(xs[2], os[2], filter)?;
            let attrs = vec![
                ("col_weights", AttrSpec::Value(float_table(&col_weights))),
                ("cols", AttrSpec::Value(int_table(&cols))),
                ("input", input),
                ("output", output),
                ("row_weights", AttrSpec::Value(float_table(&row_weights))),
                ("rows", AttrSpec::Value(int_table(&rows))),
                ("taps", AttrSpec::Value(ints(&[tr as i32, tc as i32]))),
            ];
            self.push(op, "nn.resize_separable.f32", out, attrs);
            return Ok(());
        }
        let (rows, cols, row_frac, col_frac) = match (elem, onnx) {
            (ElemType::F32, Some((h, w))) => {
                let (r, rf) = h.linear(xs[1], os[1]);
                let (c, cf) = w.linear(xs[2], os[2]);
                (r, c, float_table(&rf), float_table(&cf))
            }
            (ElemType::I8, None) => {
                let (r, rf) = bilinear_i8(xs[1], os[1], align, half);
                let (c, cf) = bilinear_i8(xs[2], os[2], align, half);
                (r, c, int_table(&rf), int_table(&cf))
            }
            (ElemType::F32, None) => {
                let (r, rf) = bilinear_f32(xs[1], os[1], align, half);
                let (c, cf) = bilinear_f32(xs[2], os[2], align, half);
                (r, c, float_table(&rf), float_table(&cf))
            }
            (e, _) => return Err(format!("{} RESIZE_BILINEAR is not supported", e.name())),
        };
        let attrs = vec![
            ("col_frac", AttrSpec::Value(col_frac)),
            ("cols", AttrSpec::Value(int_table(&cols))),
            ("input", input),
            ("output", output),
            ("row_frac", AttrSpec::Value(row_frac)),
            ("rows", AttrSpec::Value(int_table(&rows))),
        ];
        self.push(op, &format!("nn.resize_bilinear.{}", elem.name()), out, attrs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hostrt_compiler::ast::Op;

    use super::super::testing::{self, attr, int_at, kernel, run};
    use super::super::{float_table, floats, ints};
    use super::Filter;

    /// The ONNX model of Resize's cubic and antialiased filters (tests/models/onnx).
    const MODEL: &str = "onnx/resize_filters";

    #[test]
    fn antialiasing_takes_at_most_64_taps() {
        let f = |cubic| Filter { cubic, a: -0.75, antialias: true, exclude_outside: false };
        assert_eq!(f(true).window(1.0 / 16.0), Ok((-31, 33, 1.0 / 16.0)));
        assert_eq!(f(false).window(1.0 / 32.0), Ok((-31, 33, 1.0 / 32.0)));
        assert_eq!(f(true).window(4.0), Ok((-1, 3, 1.0)));
        for (cubic, scale) in [(true, 0.06), (false, 0.03), (true, 1e-300)] {
            let e = f(cubic).window(scale).expect_err("too many taps");
            assert!(e.contains("taps per output pixel (at most 64)"), "{e}");
        }
        // 64 taps for each of 2^16 + 1 columns: more than 2^22 sources.
        let axis = super::OnnxAxis { coord: 0, nearest: 0, scale: 1.0 / 16.0 };
        let e = axis.filtered(1 << 20, (1 << 16) + 1, f(true)).expect_err("too large a table");
        assert!(e.contains("64 taps needs 4194368 sources, more than 2^22"), "{e}");
    }

    #[test]
    fn resize_separable_refuses_bad_attributes() {
        type Mutation = (&'static str, fn(&mut Op));
        let mutations: &[Mutation] = &[
            ("taps [0, 4] are not in 1..=64", |op| *attr(op, "taps") = ints(&[0, 4])),
            ("taps [4, 65] are not in 1..=64", |op| *attr(op, "taps") = ints(&[4, 65])),
            ("source rows or columns do not fit", |op| *attr(op, "taps") = ints(&[2, 4])),
            ("source rows or columns do not fit", |op| {
                // Written as a dense tensor; an array of the same length is read alike.
                let n = match attr(op, "rows") {
                    hostrt_compiler::ast::Attr::Dense(d) => d.dims[0] as usize,
                    _ => unreachable!(),
                };
                *attr(op, "rows") = ints(&vec![6; n]);
            }),
            ("'row_weights' must be an array", |op| *attr(op, "row_weights") = floats(&[1.0])),
            ("'row_weights' must hold", |op| *attr(op, "row_weights") = float_table(&[1.0])),
            ("differ in n or c", |op| {
                let at = int_at(attr(op, "output"), 0);
                *attr(op, "output") = ints(&[at, 1, 11, 13, 3]);
            }),
        ];
        let bytes = testing::model(&format!("{MODEL}.onnx"));
        let read = crate::onnx::model::ReadOptions { dir: None, dims: &[], bound: &[] };
        let imported = crate::onnx_with(&bytes, &read, Default::default()).expect("imports");
        assert!(run(&imported.module, MODEL).is_ok());
        for (what, mutate) in mutations {
            let mut module = imported.module.clone();
            mutate(kernel(&mut module, "nn.resize_separable.f32"));
            let e = run(&module, MODEL).expect_err(what);
            assert!(e.contains("nn.resize_separable.f32") && e.contains(what), "{what}: {e}");
        }
    }
}
