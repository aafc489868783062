//! onnxruntime's dynamic quantization: `DynamicQuantizeLinear` (as ONNX's function body
//! defines it, from the reductions, arithmetic, `Round` and `Cast` the importer has),
//! `QuantizeLinear` by a scale and zero point computed at run time, `MatMulInteger` and
//! `ConvInteger` (the exact int32 products, `nn.matmul_integer` and `nn.conv_integer`).
//! Values here are raw 8-bit tensors, not the QDQ path's int8 values with a quantization
//! (docs/onnx.md).

use super::super::model::{AttrValue, Node, Tensor};
use super::{Attrs, Converter, Val};
use crate::tflite::ops::{ElemType, ext_op};

/// ONNX's `TensorProto` element types the made-up `Cast` nodes name.
const FLOAT: i64 = 1;
const UINT8: i64 = 2;
const INT8: i64 = 3;

impl Converter {
    /// A scalar float32 constant named after `n`.
    fn scalar(&mut self, n: &Node, tag: &str, v: f64) -> String {
        let name = format!("{}:{tag}", Self::out_name(n));
        self.values.insert(name.clone(), Val::Const(Tensor::from_f64s(ElemType::F32, vec![], &[v])));
        name
    }

    /// DynamicQuantizeLinear: uint8 `y`, its scale and zero point, from `x`'s range
    /// (widened to hold 0), by ONNX's function body.
    pub(super) fn dynamic_quantize_linear(&mut self, n: &Node) -> Result<(), String> {
        let x = n.inputs.first().cloned().flatten().ok_or("input 0 is missing")?;
        let out = |i: usize, tag: &str| -> String {
            n.outputs.get(i).cloned().flatten().unwrap_or_else(|| format!("{}:{tag}", Self::out_name(n)))
        };
        let (y, scale, zero) = (out(0, "y"), out(1, "scale"), out(2, "zero_point"));
        let base = Self::out_name(n);
        let t = |tag: &str| format!("{base}:{tag}");
        let (zero_c, max_c) = (self.scalar(n, "0", 0.0), self.scalar(n, "255", 255.0));
        let keep = || vec![("keepdims", AttrValue::Int(0))];
        let lo = self.part(n, "ReduceMin", vec![x.clone()], keep(), &t("min"))?;
        let lo = self.part(n, "Min", vec![lo, zero_c.clone()], vec![], &t("min0"))?;
        let hi = self.part(n, "ReduceMax", vec![x.clone()], keep(), &t("max"))?;
        let hi = self.part(n, "Max", vec![hi, zero_c.clone()], vec![], &t("max0"))?;
        let range = self.part(n, "Sub", vec![hi, lo.clone()], vec![], &t("range"))?;
        let scale = self.part(n, "Div", vec![range, max_c.clone()], vec![], &scale)?;
        let scaled = self.part(n, "Div", vec![lo, scale.clone()], vec![], &t("min_scaled"))?;
        let zp = self.part(n, "Sub", vec![zero_c.clone(), scaled], vec![], &t("zero_fp"))?;
        let zp = self.part(n, "Max", vec![zp, zero_c], vec![], &t("zero_lo"))?;
        let zp = self.part(n, "Min", vec![zp, max_c], vec![], &t("zero_hi"))?;
        let zp = self.part(n, "Round", vec![zp], vec![], &t("zero_round"))?;
        let zp = self.part(n, "Cast", vec![zp], vec![("to", AttrValue::Int(UINT8))], &zero)?;
        let q = self.part(n, "QuantizeLinear", vec![x, scale, zp], vec![], &y)?;
        let _ = q;
        Ok(())
    }

    /// QuantizeLinear whose scale or zero point is computed at run time (one value each):
    /// `Cast(clamp(Round(x / scale) + zero point))` to the zero point's type (uint8 without
    /// one), rounding halves to even as ONNX does.
    pub(super) fn quantize_at_run_time(&mut self, n: &Node) -> Result<(), String> {
        self.materialize_inputs(n)?;
        let x = n.inputs.first().cloned().flatten().ok_or("input 0 is missing")?;
        let s = n.inputs.get(1).cloned().flatten().ok_or("the scale is missing")?;
        let z = n.inputs.get(2).cloned().flatten();
        let elements = |v: Val| match v {
            Val::Rt(r) => (r.shape.iter().product::<usize>(), r.elem),
            Val::Const(c) => (c.elements(), c.elem),
        };
        let (ns, se) = elements(self.val(n, 1)?);
        let to = match &z {
            Some(_) => {
                let (nz, ze) = elements(self.val(n, 2)?);
                if nz != 1 {
                    return Err("a run-time zero point per axis is not supported".into());
                }
                ze
            }
            None => ElemType::U8,
        };
        if ns != 1 || se != ElemType::F32 || !matches!(to, ElemType::U8 | ElemType::I8) {
            return Err(format!(
                "a run-time quantization by {ns} {} scale(s) to {} is not supported (one float scale, int8 or uint8)",
                se.name(),
                to.name()
            ));
        }
        if n.int("block_size", 0)? != 0 {
            return Err("blocked quantization (block_size) is not supported".into());
        }
        let base = Self::out_name(n);
        let t = |tag: &str| format!("{base}:{tag}");
        let d = self.part(n, "Div", vec![x, s], vec![], &t("scaled"))?;
        let mut r = self.part(n, "Round", vec![d], vec![], &t("rounded"))?;
        if let Some(z) = z {
            let zf = self.part(n, "Cast", vec![z], vec![("to", AttrValue::Int(FLOAT))], &t("zero_f32"))?;
            r = self.part(n, "Add", vec![r, zf], vec![], &t("shifted"))?;
        }
        let (lo, hi, code) = if to == ElemType::U8 { (0.0, 255.0, UINT8) } else { (-128.0, 127.0, INT8) };
        let (lo, hi) = (self.scalar(n, "lo", lo), self.scalar(n, "hi", hi));
        let c = self.part(n, "Max", vec![r, lo], vec![], &t("clamp_lo"))?;
        let c = self.part(n, "Min", vec![c, hi], vec![], &t("clamp_hi"))?;
        self.part(n, "Cast", vec![c], vec![("to", AttrValue::Int(code))], &base)?;
        Ok(())
    }

    /// MatMulInteger of run-time 8-bit data by constant 8-bit weights `[K, N]`, each less its
    /// zero point (the data's a constant or a run-time value; the weights' per tensor or per
    /// column), as the int32 product.
    pub(super) fn matmul_integer(&mut self, n: &Node) -> Result<(), String> {
        let a = self.plain_input(n, 0)?;
        if !matches!(a.elem, ElemType::U8 | ElemType::I8) || a.shape.len() < 2 {
            return Err(format!("A {} {:?} is not 8-bit data of rank 2 or more", a.elem.name(), a.shape));
        }
        if self.from_u8.contains(&a.t) {
            return Err("A is a quantized uint8 value of the QDQ form (raw 8-bit data is supported)".into());
        }
        let b = self.constant(n, 1, "B")?;
        if b.dims.len() != 2 || !matches!(b.elem, ElemType::U8 | ElemType::I8) {
            return Err(format!("B {} {:?} is not an 8-bit matrix", b.elem.name(), b.dims));
        }
        let (k, cols) = (b.dims[0], b.dims[1]);
        if a.shape.last() != Some(&k) {
            return Err(format!("A {:?} does not fit B {:?}", a.shape, b.dims));
        }
        let bz = self.weight_zero_points(n, b.elem, cols, "B")?;
        let w = b.i64s();
        let data: Vec<u8> =
            (0..k * cols).flat_map(|i| ((w[i] - bz[i % cols]) as i16).to_le_bytes()).collect();
        let name = Self::out_name(n);
        let wt = self.tensor(&format!("{name}:weights"), ElemType::I16, vec![k, cols], Some(data));
        let mut inputs = vec![a.t, wt];
        inputs.extend(self.data_zero_point(n, a.elem, "A")?);
        let mut dims = a.shape.clone();
        *dims.last_mut().unwrap_or(&mut 0) = cols;
        let out = self.plain_output(n, ElemType::I32, dims)?;
        self.emit(ext_op::MATMUL_INTEGER, 0, vec![], inputs, vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// ConvInteger (2-D, grouped or not) of run-time 8-bit NCHW data by constant 8-bit OIHW
    /// weights, each less its zero point (the weights' per tensor or per output channel), as
    /// the int32 convolution, NHWC-stored.
    pub(super) fn conv_integer(&mut self, n: &Node) -> Result<(), String> {
        let x = self.image(n)?;
        if !matches!(x.elem, ElemType::U8 | ElemType::I8) || self.from_u8.contains(&x.t) {
            return Err(format!("x {} is not raw 8-bit data", x.elem.name()));
        }
        let w = self.constant(n, 1, "w")?;
        if w.dims.len() != 4 || !matches!(w.elem, ElemType::U8 | ElemType::I8) {
            return Err(format!("w {} {:?} is not an 8-bit OIHW filter", w.elem.name(), w.dims));
        }
        let (m, c, kh, kw) = (w.dims[0], w.dims[1], w.dims[2], w.dims[3]);
        let g = usize::try_from(n.int("group", 1)?).unwrap_or(0);
        if g == 0 || c * g != x.shape[1] || !m.is_multiple_of(g) {
            return Err(format!("w {:?} on {} channels in {g} groups does not fit", w.dims, x.shape[1]));
        }
        let wz = self.weight_zero_points(n, w.elem, m, "w")?;
        let strides = super::layers::spatial(n, "strides", 2, 1)?;
        let dil = super::layers::spatial(n, "dilations", 2, 1)?;
        let axis = |k: usize| super::layers::Axis {
            input: x.shape[2 + k],
            filter: [kh, kw][k],
            stride: strides[k],
            dilation: dil[k],
        };
        let win = super::layers::window(n, &[axis(0), axis(1)], false)?;
        // OIHW less the zero points → [kh, kw, in, out] int16.
        let v = w.i64s();
        let mut data = Vec::with_capacity(v.len() * 2);
        for ky in 0..kh {
            for kx in 0..kw {
                for ci in 0..c {
                    for (o, z) in wz.iter().enumerate() {
                        let at = ((o * c + ci) * kh + ky) * kw + kx;
                        data.extend(((v[at] - z) as i16).to_le_bytes());
                    }
                }
            }
        }
        let name = Self::out_name(n);
        let f = self.tensor(&format!("{name}:filter"), ElemType::I16, vec![kh, kw, c, m], Some(data));
        let mut inputs = vec![x.t, f];
        inputs.extend(self.data_zero_point(n, x.elem, "x")?);
        let out =
            self.new_rt(&name, ElemType::I32, vec![x.shape[0], m, win[0].0, win[1].0], super::Layout::Nhwc);
        let fields = vec![
            (1, strides[1] as f64),
            (2, strides[0] as f64),
            (crate::tflite::options::ext::DILATION_H, dil[0] as f64),
            (crate::tflite::options::ext::DILATION_W, dil[1] as f64),
            (crate::tflite::options::ext::PAD_TOP, win[0].1 as f64),
            (crate::tflite::options::ext::PAD_LEFT, win[1].1 as f64),
        ];
        self.emit(ext_op::CONV_INTEGER, 0, fields, inputs, vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// The weights' zero points (input 3 of MatMulInteger and ConvInteger): one per output
    /// column or channel, from one value or `count` values of the weights' type.
    fn weight_zero_points(
        &self,
        n: &Node,
        elem: ElemType,
        count: usize,
        what: &str,
    ) -> Result<Vec<i64>, String> {
        if self.opt_val(n, 3)?.is_none() {
            return Ok(vec![0; count]);
        }
        let z = self.constant(n, 3, &format!("{what}'s zero point"))?;
        if z.elem != elem || !(z.elements() == 1 || z.elements() == count) {
            return Err(format!("{what}'s zero point {} {:?} does not fit {what}", z.elem.name(), z.dims));
        }
        let v = z.i64s();
        Ok((0..count).map(|j| v[if v.len() == 1 { 0 } else { j }]).collect())
    }

    /// The data's zero point (input 2), if given: one value of the data's type, a constant or
    /// computed at run time, as the graph tensor the lowering reads.
    fn data_zero_point(&mut self, n: &Node, elem: ElemType, what: &str) -> Result<Option<usize>, String> {
        if self.opt_val(n, 2)?.is_none() {
            return Ok(None);
        }
        let z = self.rt(n, 2)?;
        if z.elem != elem || z.shape.iter().product::<usize>() != 1 {
            return Err(format!(
                "{what}'s zero point {} {:?} is not one value of {what}'s type",
                z.elem.name(),
                z.shape
            ));
        }
        Ok(Some(z.t))
    }
}
