//! RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR: the source rows and columns of every output
//! row and column (and the bilinear fractions) computed here exactly as TensorFlow Lite
//! Micro computes them (`GetNearestNeighbor`, `ComputeInterpolationValues` and its 10-bit
//! integer form), so the kernels only index and blend.

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, floats, ints};

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

impl Lowerer<'_, '_> {
    pub(super) fn resize(&mut self, op: &OpInfo<'_>, bilinear: bool) -> Result<(), String> {
        let (align, half) = if bilinear {
            let o = Options::of(op, kind::RESIZE_BILINEAR)?;
            (o.bool(2)?, o.bool(3)?)
        } else {
            let o = Options::of(op, kind::RESIZE_NEAREST_NEIGHBOR)?;
            (o.bool(0)?, o.bool(1)?)
        };
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
            let map =
                |i: usize, o: usize| (0..o).map(|v| nearest(v, i, o, align, half)).collect::<Vec<i32>>();
            let attrs = vec![
                ("cols", AttrSpec::Value(ints(&map(xs[2], os[2])))),
                ("input", input),
                ("output", output),
                ("rows", AttrSpec::Value(ints(&map(xs[1], os[1])))),
                ("size", AttrSpec::Value(ints(&[elem.size() as i32]))),
            ];
            self.push(op, "nn.resize_nearest", out, attrs);
            return Ok(());
        }
        let (rows, cols, row_frac, col_frac) = match elem {
            ElemType::I8 => {
                let (r, rf) = bilinear_i8(xs[1], os[1], align, half);
                let (c, cf) = bilinear_i8(xs[2], os[2], align, half);
                (r, c, ints(&rf), ints(&cf))
            }
            ElemType::F32 => {
                let (r, rf) = bilinear_f32(xs[1], os[1], align, half);
                let (c, cf) = bilinear_f32(xs[2], os[2], align, half);
                (r, c, floats(&rf), floats(&cf))
            }
            e => return Err(format!("{} RESIZE_BILINEAR is not supported", e.name())),
        };
        let attrs = vec![
            ("col_frac", AttrSpec::Value(col_frac)),
            ("cols", AttrSpec::Value(ints(&cols))),
            ("input", input),
            ("output", output),
            ("row_frac", AttrSpec::Value(row_frac)),
            ("rows", AttrSpec::Value(ints(&rows))),
        ];
        self.push(op, &format!("nn.resize_bilinear.{}", elem.name()), out, attrs);
        Ok(())
    }
}
