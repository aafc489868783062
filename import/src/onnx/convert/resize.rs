//! Resize (and the older Upsample) of the height and width of an NCHW image, nearest,
//! linear or cubic: RESIZE_NEAREST_NEIGHBOR or RESIZE_BILINEAR with ONNX's coordinate rule,
//! nearest rounding, scales and filter (cubic, its coefficient, `exclude_outside`,
//! `antialias`) stated in importer-only fields, so the lowering computes each output row's
//! and column's sources and weights as ONNX defines them (docs/onnx.md).

use super::super::model::Node;
use super::{Attrs, Converter, Val};
use crate::tflite::ops::ElemType;
use crate::tflite::options::{ext, kind};

/// `coordinate_transformation_mode` as the lowering reads it (`ext::RESIZE_COORD`).
fn coord_mode(name: &str) -> Result<f64, String> {
    Ok(match name {
        "half_pixel" => 0.0,
        "asymmetric" => 1.0,
        "align_corners" => 2.0,
        "pytorch_half_pixel" => 3.0,
        "half_pixel_symmetric" => 4.0,
        other => return Err(format!("coordinate_transformation_mode '{other}' is not supported")),
    })
}

/// `nearest_mode` as the lowering reads it (`ext::NEAREST_MODE`); 4 is opset 10's rule.
fn nearest_mode(name: &str) -> Result<f64, String> {
    Ok(match name {
        "round_prefer_floor" => 0.0,
        "round_prefer_ceil" => 1.0,
        "floor" => 2.0,
        "ceil" => 3.0,
        other => return Err(format!("nearest_mode '{other}' is not supported")),
    })
}

impl Converter {
    pub(super) fn resize(&mut self, n: &Node) -> Result<(), String> {
        let x = self.image(n)?;
        let old = n.op_type == "Upsample" || self.opset < 11;
        let mode = n.string("mode", "nearest")?;
        let (linear, cubic) = match mode.as_str() {
            "nearest" => (false, false),
            "linear" | "bilinear" => (true, false),
            "cubic" | "bicubic" => (true, true),
            other => return Err(format!("mode '{other}' is not supported (nearest, linear and cubic are)")),
        };
        if linear && x.elem != ElemType::F32 {
            return Err(format!("{mode} Resize of {} is not supported (float32 is)", x.elem.name()));
        }
        // Both change only the weights of linear and cubic filters (nearest has none).
        let (antialias, exclude) = (n.int("antialias", 0)? != 0, n.int("exclude_outside", 0)? != 0);
        let coord =
            if old { "asymmetric".into() } else { n.string("coordinate_transformation_mode", "half_pixel")? };
        let near = if old { 4.0 } else { nearest_mode(&n.string("nearest_mode", "round_prefer_floor")?)? };
        // Scales and sizes: an attribute (Upsample 7), input 1 (Upsample 9, Resize 10), or
        // inputs 2 and 3 (Resize 11 on).
        let rank = x.shape.len();
        let constant = |c: &Self, i: usize| -> Result<Option<Vec<f64>>, String> {
            match c.opt_val(n, i)? {
                Some(Val::Const(t)) if t.elements() > 0 => Ok(Some(t.f64s())),
                Some(Val::Const(_)) | None => Ok(None),
                Some(Val::Rt(_)) => Err(format!("input {i} (scales or sizes) must be a constant")),
            }
        };
        let (scales, sizes) = if n.op_type == "Upsample" && self.opset < 9 {
            let s = match n.attrs.get("scales") {
                Some(super::super::model::AttrValue::Floats(v)) => v.iter().map(|&f| f64::from(f)).collect(),
                _ => return Err("Upsample needs its scales".into()),
            };
            (Some(s), None)
        } else if old {
            (constant(self, 1)?, None)
        } else {
            (constant(self, 2)?, constant(self, 3)?)
        };
        let axes: Vec<usize> = match n.ints("axes")? {
            None => (0..rank).collect(),
            Some(a) => a.iter().map(|&v| super::axis(v, rank)).collect::<Result<_, _>>()?,
        };
        let mut scale = vec![1.0f64; rank];
        let mut out = x.shape.clone();
        match (scales, sizes) {
            (Some(s), None) if s.len() == axes.len() => {
                for (&a, &v) in axes.iter().zip(&s) {
                    if !(v > 0.0 && v <= 65536.0) {
                        return Err(format!("scale {v} is not positive and at most 65536"));
                    }
                    scale[a] = v;
                    out[a] = (x.shape[a] as f64 * v).floor() as usize;
                }
            }
            (None, Some(s)) if s.len() == axes.len() => {
                let policy = n.string("keep_aspect_ratio_policy", "stretch")?;
                let ratios: Vec<f64> = axes.iter().zip(&s).map(|(&a, &v)| v / x.shape[a] as f64).collect();
                let shared = match policy.as_str() {
                    "stretch" => None,
                    "not_larger" => Some(ratios.iter().copied().fold(f64::INFINITY, f64::min)),
                    "not_smaller" => Some(ratios.iter().copied().fold(0.0, f64::max)),
                    other => return Err(format!("keep_aspect_ratio_policy '{other}' is not known")),
                };
                for (k, (&a, &v)) in axes.iter().zip(&s).enumerate() {
                    if !(v >= 1.0 && v <= (1u64 << 24) as f64) {
                        return Err(format!("size {v} is not in 1..=2^24"));
                    }
                    match shared {
                        None => (scale[a], out[a]) = (ratios[k], v as usize),
                        Some(r) => (scale[a], out[a]) = (r, (x.shape[a] as f64 * r).round() as usize),
                    }
                }
            }
            _ => return Err(format!("Resize needs either scales or sizes, one per axis of {axes:?}")),
        }
        if out[0] != x.shape[0] || out[1] != x.shape[1] {
            return Err(format!("resizing {:?} to {out:?}: only the height and width may change", x.shape));
        }
        // (The lowering's tables hold a source, and a weight, per output row and column.)
        if out[2] == 0 || out[3] == 0 || out[2] > 1 << 20 || out[3] > 1 << 20 {
            return Err(format!("output {out:?} is empty or larger than 2^20 along an axis"));
        }
        super::super::model::checked_elements(&out)?;
        let name = Self::out_name(n);
        let size = self.i32_tensor(&format!("{name}:size"), &[out[2] as i64, out[3] as i64]);
        let y = self.new_rt(&name, x.elem, out, super::Layout::Nhwc);
        let fields = vec![
            (ext::RESIZE_COORD, coord_mode(&coord)?),
            (ext::NEAREST_MODE, near),
            (ext::SCALE_H, scale[2]),
            (ext::SCALE_W, scale[3]),
            (ext::RESIZE_CUBIC, f64::from(u8::from(cubic))),
            (ext::CUBIC_A, f64::from(n.float("cubic_coeff_a", -0.75)?)),
            (ext::EXCLUDE_OUTSIDE, f64::from(u8::from(exclude))),
            (ext::ANTIALIAS, f64::from(u8::from(antialias))),
        ];
        let (code, options) =
            if linear { (23, kind::RESIZE_BILINEAR) } else { (97, kind::RESIZE_NEAREST_NEIGHBOR) };
        self.emit(code, options, fields, vec![x.t, size], vec![y.t]);
        self.set(n, 0, y);
        Ok(())
    }
}
