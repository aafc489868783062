//! Layers with weights or windows: Conv, MaxPool/AveragePool, GlobalAveragePool, Gemm,
//! MatMul and BatchNormalization. Weights are laid out for the kernels at import (OIHW
//! filters become OHWI, or `[1, kh, kw, out]` for depthwise ones).

use super::super::model::{AttrValue, Node, Tensor};
use super::fold::permuted;
use super::{Attrs, Converter, Layout, Rt, Val, broadcast};
use crate::tflite::model::Quant;
use crate::tflite::ops::ElemType;
use crate::tflite::options::{ext, kind};

/// A layer's output: its tensor name, element type, quantization (int8) and fused
/// activation (TensorFlow Lite's code: 0 none, 1 ReLU, 3 ReLU6).
#[derive(Clone, Debug)]
pub(super) struct LayerOut {
    pub name: String,
    pub elem: ElemType,
    pub quant: Option<Quant>,
    pub act: i8,
}

/// One spatial axis of a window: input size, filter size, stride, dilation, pads.
#[derive(Clone, Copy, Debug)]
pub(super) struct Axis {
    pub input: usize,
    pub filter: usize,
    pub stride: usize,
    pub dilation: usize,
}

/// `[top, bottom, left, right]`: a pool's explicit pads, or the ones `auto_pad` gives its
/// windows `win` (`(output size, pad before)` per axis; `window` has checked the pads).
fn pool_pads(n: &Node, axes: &[Axis; 2], win: &[(usize, usize)]) -> Result<[i64; 4], String> {
    let auto = n.string("auto_pad", "NOTSET")?;
    let explicit = if auto == "NOTSET" || auto.is_empty() { n.ints("pads")? } else { None };
    let mut pads = [0i64; 4];
    for (k, (a, &(o, before))) in axes.iter().zip(win).enumerate() {
        let after = match &explicit {
            Some(p) => p[k + 2] as usize,
            None => {
                let span = a.dilation * (a.filter - 1) + 1;
                (o.saturating_sub(1) * a.stride + span).saturating_sub(a.input + before)
            }
        };
        pads[2 * k] = before as i64;
        pads[2 * k + 1] = after as i64;
    }
    Ok(pads)
}

/// The output size and top/left pad of each spatial axis (ONNX's rules for `auto_pad`,
/// `pads` and `ceil_mode`).
pub(super) fn window(n: &Node, axes: &[Axis], ceil: bool) -> Result<Vec<(usize, usize)>, String> {
    let r = axes.len();
    let auto = n.string("auto_pad", "NOTSET")?;
    let pads = n.ints("pads")?.unwrap_or_else(|| vec![0; 2 * r]);
    if pads.len() != 2 * r || pads.iter().any(|&p| !(0..=1 << 16).contains(&p)) {
        return Err(format!("pads {pads:?} are not {} values in 0..=65536", 2 * r));
    }
    let mut out = Vec::new();
    for (k, a) in axes.iter().enumerate() {
        if a.input == 0 || a.filter == 0 || a.stride == 0 || a.dilation == 0 {
            return Err(format!(
                "axis {k}: input {}, filter {}, stride {} or dilation {} is 0",
                a.input, a.filter, a.stride, a.dilation
            ));
        }
        let span = a.dilation * (a.filter - 1) + 1;
        let (size, top) = match auto.as_str() {
            "SAME_UPPER" | "SAME_LOWER" => {
                let o = a.input.div_ceil(a.stride);
                let total = ((o - 1) * a.stride + span).saturating_sub(a.input);
                (o, if auto == "SAME_UPPER" { total / 2 } else { total - total / 2 })
            }
            "VALID" => {
                if a.input < span {
                    return Err(format!("window {span} is larger than input {}", a.input));
                }
                ((a.input - span) / a.stride + 1, 0)
            }
            "NOTSET" | "" => {
                let (b, e) = (pads[k] as usize, pads[k + r] as usize);
                let padded = a.input + b + e;
                if padded < span {
                    return Err(format!("window {span} is larger than padded input {padded}"));
                }
                let mut o = if ceil {
                    (padded - span).div_ceil(a.stride) + 1
                } else {
                    (padded - span) / a.stride + 1
                };
                // The last window must start inside the input or its leading pad.
                if ceil && (o - 1) * a.stride >= a.input + b {
                    o -= 1;
                }
                (o, b)
            }
            other => return Err(format!("auto_pad '{other}' is not known")),
        };
        out.push((size, top));
    }
    Ok(out)
}

pub(super) fn spatial(n: &Node, name: &str, rank: usize, default: usize) -> Result<Vec<usize>, String> {
    match n.ints(name)? {
        None => Ok(vec![default; rank]),
        Some(v) if v.len() == rank && v.iter().all(|&x| (1..=1 << 16).contains(&x)) => {
            Ok(v.iter().map(|&x| x as usize).collect())
        }
        Some(v) => Err(format!("{name} {v:?} are not {rank} positive values")),
    }
}

impl Converter {
    /// A 1-D Conv, MaxPool or AveragePool (`[N, C, W]`) as the 2-D one of height 1: the
    /// input and filter gain an axis of 1, the window attributes a leading 1 (pads 0), and
    /// the output loses the axis again.
    pub(super) fn one_d(
        &mut self,
        n: &Node,
        two_d: fn(&mut Self, &Node) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut m = n.clone();
        let lift = |v: &Val| -> Val {
            match v {
                Val::Const(t) if t.dims.len() == 3 => {
                    let mut dims = t.dims.clone();
                    dims.insert(2, 1);
                    Val::Const(Tensor { dims, ..t.clone() })
                }
                v => v.clone(),
            }
        };
        for i in 0..2.min(n.inputs.len()) {
            let v = self.val(n, i)?;
            let name = format!("{}:2d", n.inputs[i].clone().unwrap_or_default());
            let v = match v {
                Val::Rt(x) => {
                    let x = self.plain(&x);
                    let mut dims = x.shape.clone();
                    dims.insert(2, 1);
                    let y = self.new_rt(&name, x.elem, dims, Layout::Plain);
                    self.emit(22, 0, vec![], vec![x.t], vec![y.t]);
                    Val::Rt(y)
                }
                c => lift(&c),
            };
            self.values.insert(name.clone(), v);
            m.inputs[i] = Some(name);
        }
        for (attr, pad) in [("kernel_shape", 1), ("strides", 1), ("dilations", 1)] {
            if let Some(AttrValue::Ints(v)) = m.attrs.get_mut(attr) {
                v.insert(0, pad);
            }
        }
        if let Some(AttrValue::Ints(p)) = m.attrs.get_mut("pads")
            && p.len() == 2
        {
            *p = vec![0, p[0], 0, p[1]];
        }
        // ConvTranspose's output size along the one axis gains the height 1.
        for (attr, pad) in [("output_padding", 0), ("output_shape", 1)] {
            if let Some(AttrValue::Ints(v)) = m.attrs.get_mut(attr)
                && v.len() == 1
            {
                v.insert(0, pad);
            }
        }
        let out = n.outputs.first().cloned().flatten().ok_or("the output is not used")?;
        m.outputs[0] = Some(format!("{out}:2d"));
        two_d(self, &m)?;
        let Some(Val::Rt(y)) = self.values.get(&format!("{out}:2d")).cloned() else {
            return Err("internal: the 2-D form computed nothing".into());
        };
        let y = self.plain(&y);
        let mut dims = y.shape.clone();
        dims.remove(2);
        let z = self.new_rt(&out, y.elem, dims, Layout::Plain);
        self.emit(22, 0, vec![], vec![y.t], vec![z.t]);
        self.set(n, 0, z);
        Ok(())
    }

    /// A rank-4 float input stored NHWC, or why not.
    pub(super) fn image(&mut self, n: &Node) -> Result<Rt, String> {
        let x = self.rt(n, 0)?;
        if x.shape.len() != 4 {
            return Err(format!("input {:?} is not NCHW (only 2-D windows are supported)", x.shape));
        }
        let t = self.layout(&x, Layout::Nhwc);
        Ok(Rt { t, layout: Layout::Nhwc, ..x })
    }

    pub(super) fn conv(&mut self, n: &Node) -> Result<(), String> {
        let x = self.image(n)?;
        let w = self.constant(n, 1, "filter")?;
        if w.elem != ElemType::F32 {
            return Err(format!("filter {} {:?} is not a float filter", w.elem.name(), w.dims));
        }
        let b = match self.opt_val(n, 2)? {
            Some(_) => Some(self.constant(n, 2, "bias")?),
            None => None,
        };
        // A BatchNormalization that alone takes the output folds into the filter and bias;
        // the layer then computes its output.
        let (w, b, tail) = match self.folded_batch_norm(n, &w, b.as_ref()) {
            Some((bn, w, b)) => {
                self.skip.insert(bn.index);
                (w, Some(b), bn)
            }
            None => (w, b, n.clone()),
        };
        // A Relu or Clip to [0, 6] that alone takes the output runs inside the convolution.
        let fused = self.fused_activation(&tail);
        let (act, name) = fused.as_ref().map_or((0, Self::out_name(&tail)), |(a, m)| (*a, Self::out_name(m)));
        let out = LayerOut { name, elem: ElemType::F32, quant: None, act };
        let y = self.conv_with(n, &x, (&w, None), b, &out)?;
        self.set_fused(&tail, fused, y);
        Ok(())
    }

    /// The inference-mode BatchNormalization that alone takes float Conv `n`'s output, with
    /// `n`'s filter `w` (`[M, ...]`) and bias `b` that fold it in, as onnxruntime's graph
    /// optimizer folds it: `γ (W x + b − μ) / √(σ² + ε) + β` is `(a W) x + a (b − μ) + β`
    /// with `a = γ / √(σ² + ε)` per output channel, worked out in f64 and rounded once.
    /// `None` where it does not apply (the BatchNormalization then runs on its own).
    fn folded_batch_norm(&self, n: &Node, w: &Tensor, b: Option<&Tensor>) -> Option<(Node, Tensor, Tensor)> {
        let bn = self.sole_consumer(n, "BatchNormalization")?;
        let reads_output = bn.inputs.first()?.as_ref()? == n.outputs.first()?.as_ref()?;
        let inference =
            bn.int("training_mode", 0).ok()? == 0 && !(1..bn.outputs.len()).any(|i| Self::used(bn, i));
        let m = *w.dims.first()?;
        if !reads_output || !inference || m == 0 || b.is_some_and(|b| b.elements() != m) {
            return None;
        }
        let ([gamma, beta, mean, var], eps) = self.batch_norm_params(bn, m).ok()?;
        let a: Vec<f64> = (0..m).map(|k| gamma[k] / (var[k] + eps).sqrt()).collect();
        let per = w.elements() / m;
        let filter: Vec<f64> = w.f64s().iter().enumerate().map(|(i, &v)| v * a[i / per]).collect();
        let bias0 = b.map_or_else(|| vec![0.0; m], Tensor::f64s);
        let bias: Vec<f64> = (0..m).map(|k| a[k] * (bias0[k] - mean[k]) + beta[k]).collect();
        Some((
            bn.clone(),
            Tensor::from_f64s(ElemType::F32, w.dims.clone(), &filter),
            Tensor::from_f64s(ElemType::F32, vec![m], &bias),
        ))
    }

    /// BatchNormalization `n`'s constant scale, bias, mean and variance, each of `c` values,
    /// and its epsilon.
    fn batch_norm_params(&self, n: &Node, c: usize) -> Result<([Vec<f64>; 4], f64), String> {
        let eps = f64::from(n.float("epsilon", 1e-5)?);
        let param = |i: usize, what: &str| {
            let t = self.constant(n, i, what)?;
            if t.elements() != c {
                return Err(format!("the {what} has {} values for {c} channels", t.elements()));
            }
            Ok(t.f64s())
        };
        Ok(([param(1, "scale")?, param(2, "bias")?, param(3, "mean")?, param(4, "variance")?], eps))
    }

    /// ConvTranspose (float): TRANSPOSE_CONV with the ONNX filter `[in, out, kh, kw]` laid
    /// out `[out, kh, kw, in]`, the output size from `output_shape` or from the pads and
    /// `output_padding`, and the top and left pads stated explicitly. A grouped one runs as
    /// one TRANSPOSE_CONV per group between a channel split and a concatenation.
    pub(super) fn conv_transpose(&mut self, n: &Node) -> Result<(), String> {
        let x = self.image(n)?;
        let w = self.constant(n, 1, "filter")?;
        if w.elem != ElemType::F32 || x.elem != ElemType::F32 || w.dims.len() != 4 {
            return Err(format!(
                "filter {} {:?} is not a float [in, out, kh, kw] filter",
                w.elem.name(),
                w.dims
            ));
        }
        let (c, mg, kh, kw) = (w.dims[0], w.dims[1], w.dims[2], w.dims[3]);
        let g = usize::try_from(n.int("group", 1)?).ok().filter(|&g| g > 0 && c.is_multiple_of(g));
        let g = g.ok_or_else(|| {
            format!("group {} does not divide {c} input channels", n.int("group", 1).unwrap_or(0))
        })?;
        let m = mg * g;
        if c != x.shape[1] || m == 0 {
            return Err(format!("filter {:?} does not fit {} input channels", w.dims, x.shape[1]));
        }
        if let Some(ks) = n.ints("kernel_shape")?
            && ks != [kh as i64, kw as i64]
        {
            return Err(format!("kernel_shape {ks:?} differs from the filter's {kh}x{kw}"));
        }
        let strides = spatial(n, "strides", 2, 1)?;
        let dil = spatial(n, "dilations", 2, 1)?;
        let out_pad = match n.ints("output_padding")? {
            None => vec![0, 0],
            Some(v)
                if v.len() == 2 && (0..2).all(|k| v[k] >= 0 && (v[k] as usize) < strides[k].max(dil[k])) =>
            {
                v.iter().map(|&p| p as usize).collect()
            }
            Some(v) => return Err(format!("output_padding {v:?} is not 2 values below the strides")),
        };
        let auto = n.string("auto_pad", "NOTSET")?;
        let stated = n.ints("output_shape")?;
        let mut size = [0usize; 2];
        let mut top = [0usize; 2];
        for k in 0..2 {
            let (input, filter) = (x.shape[2 + k], [kh, kw][k]);
            if input == 0 || filter == 0 {
                return Err(format!("input {:?} or filter {:?} is empty", x.shape, w.dims));
            }
            // What the window reaches without padding.
            let full = strides[k]
                .checked_mul(input - 1)
                .and_then(|v| v.checked_add(out_pad[k] + dil[k] * (filter - 1) + 1))
                .filter(|&v| v <= 1 << 24)
                .ok_or_else(|| format!("the output on axis {k} is larger than 2^24"))?;
            let pick = |want: usize, upper: bool| -> Result<(usize, usize), String> {
                // An output past the window's reach gets only the bias there (onnxruntime's
                // rule: the padding is at least 0).
                let total = full.saturating_sub(want);
                Ok((want, if upper { total / 2 } else { total - total / 2 }))
            };
            (size[k], top[k]) = if let Some(s) = &stated {
                let want = s.get(s.len().wrapping_sub(2) + k).copied().filter(|&v| v > 0 && v <= 1 << 24);
                pick(
                    want.ok_or_else(|| format!("output_shape {s:?} does not give 2 sizes"))? as usize,
                    auto == "SAME_UPPER",
                )?
            } else if auto == "SAME_UPPER" || auto == "SAME_LOWER" {
                pick(input * strides[k], auto == "SAME_UPPER")?
            } else if auto == "NOTSET" || auto == "VALID" || auto.is_empty() {
                let pads =
                    if auto == "VALID" { vec![0; 4] } else { n.ints("pads")?.unwrap_or_else(|| vec![0; 4]) };
                if pads.len() != 4 || pads.iter().any(|&p| !(0..=1 << 16).contains(&p)) {
                    return Err(format!("pads {pads:?} are not 4 values in 0..=65536"));
                }
                let (b, e) = (pads[k] as usize, pads[k + 2] as usize);
                let want = full
                    .checked_sub(b + e)
                    .filter(|&v| v > 0)
                    .ok_or_else(|| format!("pads {pads:?} leave no output on axis {k}"))?;
                (want, b)
            } else {
                return Err(format!("auto_pad '{auto}' is not known"));
            };
        }
        let b = match self.opt_val(n, 2)? {
            Some(_) => {
                let b = self.constant(n, 2, "bias")?;
                if b.elements() != m || b.elem != ElemType::F32 {
                    return Err(format!(
                        "bias {} {:?} does not fit {m} output channels",
                        b.elem.name(),
                        b.dims
                    ));
                }
                Some(b)
            }
            None => None,
        };
        let fused = self.fused_activation(n);
        let (act, name) = fused.as_ref().map_or((0, Self::out_name(n)), |(a, f)| (*a, Self::out_name(f)));
        let y = self.new_rt(&name, ElemType::F32, vec![x.shape[0], m, size[0], size[1]], Layout::Nhwc);
        let fields = vec![
            (0, 1.0),
            (1, strides[1] as f64),
            (2, strides[0] as f64),
            (3, f64::from(act)),
            (ext::PAD_TOP, top[0] as f64),
            (ext::PAD_LEFT, top[1] as f64),
            (ext::DILATION_H, dil[0] as f64),
            (ext::DILATION_W, dil[1] as f64),
        ];
        // One input, filter, bias and output per group (the whole when `g` is 1).
        let cg = c / g;
        let (xs, ys) = if g == 1 {
            (vec![x.t], vec![y.t])
        } else {
            let sizes = self.i32_tensor(&format!("{name}:groups"), &vec![cg as i64; g]);
            let axis = self.i32_tensor(&format!("{name}:axis"), &[3]);
            let mut xs = Vec::new();
            let mut ys = Vec::new();
            for k in 0..g {
                let dims = vec![x.shape[0], cg, x.shape[2], x.shape[3]];
                xs.push(self.new_rt(&format!("{name}:in{k}"), ElemType::F32, dims, Layout::Nhwc).t);
                let dims = vec![x.shape[0], mg, size[0], size[1]];
                ys.push(self.new_rt(&format!("{name}:out{k}"), ElemType::F32, dims, Layout::Nhwc).t);
            }
            self.emit(102, 0, vec![], vec![x.t, sizes, axis], xs.clone());
            (xs, ys)
        };
        let per = cg * mg * kh * kw * 4;
        for (k, (&xt, &yt)) in xs.iter().zip(&ys).enumerate() {
            let part = Tensor {
                dims: vec![cg, mg, kh, kw],
                data: w.data[k * per..(k + 1) * per].to_vec(),
                ..w.clone()
            };
            let filter = permuted(&part, &[1, 2, 3, 0]);
            let f = self.tensor(
                &format!("{name}:filter{k}"),
                ElemType::F32,
                filter.dims.clone(),
                Some(filter.data),
            );
            let bias = b.as_ref().map(|b| {
                let data = b.data[k * mg * 4..(k + 1) * mg * 4].to_vec();
                self.tensor(&format!("{name}:bias{k}"), ElemType::F32, vec![mg], Some(data))
            });
            let dims = self.out.tensors[yt].shape.iter().map(|&d| d as i64).collect::<Vec<_>>();
            let shape = self.i32_tensor(&format!("{name}:shape{k}"), &dims);
            self.emit_opt(
                67,
                kind::TRANSPOSE_CONV,
                fields.clone(),
                vec![Some(shape), Some(f), Some(xt), bias],
                vec![yt],
            );
        }
        if g > 1 {
            self.emit(2, kind::CONCATENATION, vec![(0, 3.0)], ys, vec![y.t]);
        }
        self.set_fused(n, fused, y);
        Ok(())
    }

    /// A convolution of the NHWC-stored `x` by the OIHW filter `w` (float, or int8 with its
    /// per-channel quantization along O) and bias `b` (float, or int32 for int8), with
    /// the attributes of `n`.
    pub(super) fn conv_with(
        &mut self,
        n: &Node,
        x: &Rt,
        (w, wq): (&Tensor, Option<&Quant>),
        b: Option<Tensor>,
        o: &LayerOut,
    ) -> Result<Rt, String> {
        let [c, h, wd] = [x.shape[1], x.shape[2], x.shape[3]];
        if w.dims.len() != 4 {
            return Err(format!("filter {:?} is not OIHW", w.dims));
        }
        let (m, cg, kh, kw) = (w.dims[0], w.dims[1], w.dims[2], w.dims[3]);
        if c == 0 || m == 0 {
            return Err(format!("filter {:?} on {c} channels has no channels", w.dims));
        }
        let group = n.int("group", 1)?;
        if let Some(ks) = n.ints("kernel_shape")?
            && ks != [kh as i64, kw as i64]
        {
            return Err(format!("kernel_shape {ks:?} differs from the filter's {kh}x{kw}"));
        }
        let strides = spatial(n, "strides", 2, 1)?;
        let dil = spatial(n, "dilations", 2, 1)?;
        let axes = [
            Axis { input: h, filter: kh, stride: strides[0], dilation: dil[0] },
            Axis { input: wd, filter: kw, stride: strides[1], dilation: dil[1] },
        ];
        let win = window(n, &axes, false)?;
        let depthwise = group != 1;
        if depthwise && !(group == c as i64 && cg == 1 && m.is_multiple_of(c)) {
            return Err(format!(
                "group {group} with filter {:?} on {c} channels: only 1 and depthwise groups are supported",
                w.dims
            ));
        }
        if !depthwise && cg != c {
            return Err(format!("filter {:?} does not fit {c} input channels", w.dims));
        }
        let name = &o.name;
        // OIHW → OHWI (quantized along axis 0), or [M, 1, kh, kw] → [1, kh, kw, M] (axis 3).
        let filter = if depthwise { permuted(w, &[1, 2, 3, 0]) } else { permuted(w, &[0, 2, 3, 1]) };
        let f = self.tensor(&format!("{name}:filter"), w.elem, filter.dims.clone(), Some(filter.data));
        if let Some(q) = wq {
            self.out.tensors[f].quant = Some(Quant { axis: if depthwise { 3 } else { 0 }, ..q.clone() });
        }
        let bias_elem = if o.elem == ElemType::F32 { ElemType::F32 } else { ElemType::I32 };
        let b = match b {
            Some(b) => {
                if b.elements() != m || b.elem != bias_elem {
                    return Err(format!(
                        "bias {} {:?} does not fit {m} output channels",
                        b.elem.name(),
                        b.dims
                    ));
                }
                Some(self.tensor(&format!("{name}:bias"), bias_elem, vec![m], Some(b.data)))
            }
            None => None,
        };
        let out = self.new_rt(name, o.elem, vec![x.shape[0], m, win[0].0, win[1].0], Layout::Nhwc);
        self.out.tensors[out.t].quant = o.quant.clone();
        let pad = [(ext::PAD_TOP, win[0].1 as f64), (ext::PAD_LEFT, win[1].1 as f64)];
        let act = f64::from(o.act);
        let (code, options, mut fields) = if depthwise {
            let fields = vec![(0, 1.0), (1, strides[1] as f64), (2, strides[0] as f64), (3, (m / c) as f64)];
            (
                4,
                kind::DEPTHWISE_CONV_2D,
                [fields, vec![(4, act), (5, dil[1] as f64), (6, dil[0] as f64)]].concat(),
            )
        } else {
            let fields = vec![(0, 1.0), (1, strides[1] as f64), (2, strides[0] as f64), (3, act)];
            (3, kind::CONV_2D, [fields, vec![(4, dil[1] as f64), (5, dil[0] as f64)]].concat())
        };
        fields.extend(pad);
        self.emit_opt(code, options, fields, vec![Some(x.t), Some(f), b], vec![out.t]);
        Ok(out)
    }

    pub(super) fn pool(&mut self, n: &Node) -> Result<(), String> {
        let max = n.op_type == "MaxPool";
        if max && Self::used(n, 1) {
            return Err("MaxPool's Indices output is not supported".into());
        }
        let x = self.image(n)?;
        let k = n.ints("kernel_shape")?.ok_or("kernel_shape is required")?;
        let k = spatial(n, "kernel_shape", k.len().max(2), 0)?;
        let strides = spatial(n, "strides", 2, 1)?;
        let dil = spatial(n, "dilations", 2, 1)?;
        if max && n.int("storage_order", 0)? != 0 {
            return Err("storage_order 1 is not supported".into());
        }
        let axes = [
            Axis { input: x.shape[2], filter: k[0], stride: strides[0], dilation: dil[0] },
            Axis { input: x.shape[3], filter: k[1], stride: strides[1], dilation: dil[1] },
        ];
        let mut win = window(n, &axes, n.int("ceil_mode", 0)? != 0)?;
        let mut x = x;
        if !max && n.int("count_include_pad", 0)? != 0 {
            // The pads count as zeros: padded first, then averaged over each window's part
            // inside the padded image (a ceil_mode window past the end pad counts less).
            let pads = pool_pads(n, &axes, &win)?;
            if pads.iter().any(|&p| p > 0) {
                x = self.pool_padded(n, &x, pads);
                win.iter_mut().for_each(|w| w.1 = 0);
            }
        }
        let out = self.new_rt(
            &Self::out_name(n),
            x.elem,
            vec![x.shape[0], x.shape[1], win[0].0, win[1].0],
            Layout::Nhwc,
        );
        let mut fields = vec![
            (0, 1.0),
            (1, strides[1] as f64),
            (2, strides[0] as f64),
            (3, k[1] as f64),
            (4, k[0] as f64),
            (ext::PAD_TOP, win[0].1 as f64),
            (ext::PAD_LEFT, win[1].1 as f64),
        ];
        if dil != [1, 1] {
            fields.extend([(ext::DILATION_H, dil[0] as f64), (ext::DILATION_W, dil[1] as f64)]);
        }
        self.emit(if max { 17 } else { 1 }, kind::POOL_2D, fields, vec![x.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// `x` (NHWC-stored NCHW) padded by `[top, bottom, left, right]` with zeros (an int8
    /// tensor's zero point), for an AveragePool with `count_include_pad`.
    fn pool_padded(&mut self, n: &Node, x: &Rt, pads: [i64; 4]) -> Rt {
        let name = format!("{}:padded", Self::out_name(n));
        let [top, bottom, left, right] = pads;
        let p = self.i32_tensor(&format!("{name}:pads"), &[0, 0, top, bottom, left, right, 0, 0]);
        self.out.tensors[p].shape = vec![4, 2];
        let dims = vec![
            x.shape[0],
            x.shape[1],
            x.shape[2] + (top + bottom) as usize,
            x.shape[3] + (left + right) as usize,
        ];
        let out = self.new_rt(&name, x.elem, dims, Layout::Nhwc);
        self.out.tensors[out.t].quant = self.out.tensors[x.t].quant.clone();
        if self.from_u8.contains(&x.t) {
            self.from_u8.insert(out.t);
        }
        self.emit(34, 0, vec![], vec![x.t, p], vec![out.t]);
        out
    }

    /// GlobalAveragePool (`code` MEAN) and GlobalMaxPool (REDUCE_MAX): over H and W of the
    /// NHWC-stored input.
    pub(super) fn global_pool(&mut self, n: &Node, code: i32) -> Result<(), String> {
        let x = self.image(n)?;
        let name = Self::out_name(n);
        let a = self.i32_tensor(&format!("{name}:axes"), &[1, 2]);
        let out = self.new_rt(&name, x.elem, vec![x.shape[0], x.shape[1], 1, 1], Layout::Nhwc);
        self.emit(code, kind::REDUCER, vec![(0, 1.0)], vec![x.t, a], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// `y = x · W + b` with constant `[in, out]` float weights `w` (as ONNX stores MatMul's
    /// B): FULLY_CONNECTED over the last axis of `x`.
    fn fully_connected(
        &mut self,
        n: &Node,
        x: &Rt,
        w: &Tensor,
        bias: Option<Vec<f32>>,
    ) -> Result<Rt, String> {
        let bias = bias.map(|b| {
            Tensor::from_f64s(
                ElemType::F32,
                vec![b.len()],
                &b.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
            )
        });
        let out = LayerOut { name: Self::out_name(n), elem: ElemType::F32, quant: None, act: 0 };
        self.fully_connected_with(x, (w, None), bias, &out)
    }

    /// FULLY_CONNECTED of `x` by `[in, out]` weights `w` (float, or int8 with per-tensor or
    /// per-output quantization along axis 1) and bias `b` (float, or int32 for int8).
    pub(super) fn fully_connected_with(
        &mut self,
        x: &Rt,
        (w, wq): (&Tensor, Option<&Quant>),
        b: Option<Tensor>,
        o: &LayerOut,
    ) -> Result<Rt, String> {
        let (k, units) = (w.dims[0], w.dims[1]);
        if x.shape.last() != Some(&k) {
            return Err(format!("input {:?} does not fit weights {:?}", x.shape, w.dims));
        }
        let name = &o.name;
        let rows: usize = x.shape[..x.shape.len() - 1].iter().product();
        if o.elem == ElemType::F32 && rows >= 4 && x.shape.len() >= 2 {
            return self.pointwise(x, w, b, o);
        }
        let wt = permuted(w, &[1, 0]);
        let f = self.tensor(&format!("{name}:weights"), w.elem, wt.dims.clone(), Some(wt.data));
        if let Some(q) = wq {
            self.out.tensors[f].quant = Some(Quant { axis: 0, ..q.clone() });
        }
        let bias_elem = if o.elem == ElemType::F32 { ElemType::F32 } else { ElemType::I32 };
        let b = match b {
            Some(b) if b.elements() == units && b.elem == bias_elem => {
                Some(self.tensor(&format!("{name}:bias"), bias_elem, vec![units], Some(b.data)))
            }
            Some(b) => {
                return Err(format!("bias {} {:?} does not fit {units} outputs", b.elem.name(), b.dims));
            }
            None => None,
        };
        let mut dims = x.shape.clone();
        *dims.last_mut().unwrap_or(&mut 0) = units;
        let x = self.plain(x);
        let out = self.new_rt(name, o.elem, dims, Layout::Plain);
        self.out.tensors[out.t].quant = o.quant.clone();
        let fields = vec![(0, f64::from(o.act)), (2, 1.0)];
        self.emit_opt(9, kind::FULLY_CONNECTED, fields, vec![Some(x.t), Some(f), b], vec![out.t]);
        Ok(out)
    }

    /// A float layer of several rows, `x · W + b` with `[in, out]` weights `w`, as the 1x1
    /// convolution of the rows as an image `[1, rows, 1, in]` (the same bytes): the
    /// convolution kernels are x86-64's AVX-512 and AVX2 tiles, and split over threads
    /// without packing the weights again per run.
    fn pointwise(&mut self, x: &Rt, w: &Tensor, b: Option<Tensor>, o: &LayerOut) -> Result<Rt, String> {
        let (k, units) = (w.dims[0], w.dims[1]);
        let rows: usize = x.shape[..x.shape.len() - 1].iter().product();
        let x = self.plain(x);
        // [rows, in] as NCHW [1, in, rows, 1] stored NHWC: the same bytes.
        let image =
            self.new_rt(&format!("{}:rows", o.name), ElemType::F32, vec![1, k, rows, 1], Layout::Nhwc);
        self.emit(22, 0, vec![], vec![x.t], vec![image.t]);
        let mut filter = permuted(w, &[1, 0]);
        filter.dims = vec![units, k, 1, 1];
        let layer = LayerOut { name: format!("{}:pointwise", o.name), ..o.clone() };
        let none = Node {
            index: self.node,
            name: String::new(),
            op_type: "Conv".into(),
            inputs: vec![],
            outputs: vec![],
            attrs: Default::default(),
        };
        let y = self.conv_with(&none, &image, (&filter, None), b, &layer)?;
        let mut dims = x.shape.clone();
        *dims.last_mut().unwrap_or(&mut 0) = units;
        let out = self.new_rt(&o.name, ElemType::F32, dims, Layout::Plain);
        self.emit(22, 0, vec![], vec![y.t], vec![out.t]);
        Ok(out)
    }

    pub(super) fn gemm(&mut self, n: &Node) -> Result<(), String> {
        let a = self.rt(n, 0)?;
        let (alpha, beta) = (n.float("alpha", 1.0)?, n.float("beta", 1.0)?);
        let (ta, tb) = (n.int("transA", 0)? != 0, n.int("transB", 0)? != 0);
        if a.shape.len() != 2 || a.elem != ElemType::F32 {
            return Err(format!("A {} {:?} is not a float matrix", a.elem.name(), a.shape));
        }
        let a = if ta { self.transposed(n, &a)? } else { a };
        let b = match self.val(n, 1)? {
            Val::Const(b) if b.dims.len() == 2 && b.elem == ElemType::F32 => b,
            _ => return Err("B must be a constant float matrix".into()),
        };
        let b = if tb { permuted(&b, &[1, 0]) } else { b };
        let b = if alpha == 1.0 {
            b
        } else {
            Tensor::from_f64s(
                ElemType::F32,
                b.dims.clone(),
                &b.f64s().iter().map(|&v| f64::from(v as f32 * alpha)).collect::<Vec<_>>(),
            )
        };
        let units = b.dims[1];
        let c = self.opt_val(n, 2)?;
        // A bias that is one row (or a scalar) goes into the layer; another is added after.
        let (bias, after) = match c {
            Some(Val::Const(c))
                if c.elem == ElemType::F32
                    && c.elements() == units
                    && c.dims.last().is_none_or(|&d| d == units) =>
            {
                (Some(c.f64s().iter().map(|&v| v as f32 * beta).collect::<Vec<_>>()), None)
            }
            Some(Val::Const(c)) if c.elem == ElemType::F32 && c.elements() == 1 => {
                (Some(vec![c.f64s()[0] as f32 * beta; units]), None)
            }
            Some(c) if beta != 0.0 => (None, Some(c)),
            _ => (None, None),
        };
        let y = self.fully_connected(n, &a, &b, bias)?;
        let Some(c) = after else {
            self.set(n, 0, y);
            return Ok(());
        };
        let c = match c {
            Val::Const(t) => Val::Const(Tensor::from_f64s(
                t.elem,
                t.dims.clone(),
                &t.f64s().iter().map(|&v| f64::from(v as f32 * beta)).collect::<Vec<_>>(),
            )),
            Val::Rt(r) if beta == 1.0 => Val::Rt(r),
            Val::Rt(_) => return Err("a computed C with beta other than 1 is not supported".into()),
        };
        let dims = broadcast(&y.shape, &shape_of(&c))?;
        let name = format!("{}:bias_add", Self::out_name(n));
        let ct = self.in_layout(&c, Layout::Plain, &format!("{name}:c"));
        let out = self.new_rt(&name, ElemType::F32, dims, Layout::Plain);
        self.emit(0, kind::ADD, vec![], vec![y.t, ct], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// The Add that alone takes `n`'s output and adds a constant float row of `units` values
    /// to it (a bias), with that row.
    fn bias_add(&self, n: &Node, units: usize) -> Option<(Node, Tensor)> {
        let add = self.sole_consumer(n, "Add")?;
        let other = Self::other_input(add, n.outputs.first()?.as_ref()?)?;
        match self.values.get(other)? {
            Val::Const(t)
                if t.elem == ElemType::F32 && t.elements() == units && t.dims.last() == Some(&units) =>
            {
                Some((add.clone(), Tensor::new(ElemType::F32, vec![units], t.data.clone())))
            }
            _ => None,
        }
    }

    /// A runtime matrix transposed.
    fn transposed(&mut self, n: &Node, a: &Rt) -> Result<Rt, String> {
        let a = self.plain(a);
        let name = format!("{}:transposed_a", Self::out_name(n));
        let p = self.i32_tensor(&format!("{name}:perm"), &[1, 0]);
        let out = self.new_rt(&name, a.elem, vec![a.shape[1], a.shape[0]], Layout::Plain);
        self.emit(39, 0, vec![], vec![a.t, p], vec![out.t]);
        Ok(out)
    }

    pub(super) fn matmul(&mut self, n: &Node) -> Result<(), String> {
        let a = self.rt(n, 0)?;
        if a.elem != ElemType::F32 {
            return Err(format!("{} MatMul is not supported", a.elem.name()));
        }
        // A constant 2-D right-hand side: a fully connected layer over the last axis.
        if let Val::Const(b) = self.val(n, 1)?
            && b.dims.len() == 2
            && a.shape.len() >= 2
            && b.elem == ElemType::F32
        {
            // A Linear layer as exporters write it, MatMul then Add of a constant row: the
            // row is the layer's bias.
            if let Some((add, bias)) = self.bias_add(n, b.dims[1]) {
                let out = LayerOut { name: Self::out_name(&add), elem: ElemType::F32, quant: None, act: 0 };
                let y = self.fully_connected_with(&a, (&b, None), Some(bias), &out)?;
                self.set(&add, 0, y);
                self.skip.insert(add.index);
                return Ok(());
            }
            let y = self.fully_connected(n, &a, &b, None)?;
            self.set(n, 0, y);
            return Ok(());
        }
        let b = self.rt(n, 1)?;
        let (a, b) = (self.plain(&a), self.plain(&b));
        // numpy's rules: a 1-D left operand is a row, a 1-D right one a column, and the
        // added axis leaves the result.
        let (a1, b1) = (a.shape.len() == 1, b.shape.len() == 1);
        let a = if a1 {
            self.reshaped(
                &a,
                vec![1, a.shape[0]],
                &format!("{}:row", n.inputs[0].clone().unwrap_or_default()),
            )
        } else {
            a
        };
        let b = if b1 {
            self.reshaped(
                &b,
                vec![b.shape[0], 1],
                &format!("{}:column", n.inputs[1].clone().unwrap_or_default()),
            )
        } else {
            b
        };
        let (ra, rb) = (a.shape.len(), b.shape.len());
        if ra < 2 || rb < 2 {
            return Err(format!("MatMul of {:?} and {:?}: scalars do not multiply", a.shape, b.shape));
        }
        if a.shape[ra - 1] != b.shape[rb - 2] {
            return Err(format!("MatMul of {:?} and {:?}: inner dims differ", a.shape, b.shape));
        }
        let mut dims = broadcast(&a.shape[..ra - 2], &b.shape[..rb - 2])?;
        dims.extend([a.shape[ra - 2], b.shape[rb - 1]]);
        let name = Self::out_name(n);
        let mm = if a1 || b1 { format!("{name}:matmul") } else { name.clone() };
        let out = self.new_rt(&mm, ElemType::F32, dims.clone(), Layout::Plain);
        self.emit(126, kind::BATCH_MATMUL, vec![], vec![a.t, b.t], vec![out.t]);
        if !(a1 || b1) {
            self.set(n, 0, out);
            return Ok(());
        }
        let k = dims.len();
        let kept: Vec<usize> = dims
            .iter()
            .enumerate()
            .filter(|&(i, _)| !((a1 && i == k - 2) || (b1 && i == k - 1)))
            .map(|(_, &d)| d)
            .collect();
        let y = self.reshaped(&out, kept, &name);
        self.set(n, 0, y);
        Ok(())
    }

    /// `x` (stored plainly) under another shape of as many elements, as tensor `name`.
    fn reshaped(&mut self, x: &Rt, dims: Vec<usize>, name: &str) -> Rt {
        let y = self.new_rt(name, x.elem, dims, Layout::Plain);
        self.emit(22, 0, vec![], vec![x.t], vec![y.t]);
        y
    }

    /// BatchNormalization in inference: `x · a + b` per channel, `a = scale / sqrt(var + ε)`
    /// and `b = bias − mean · a`, folded at import.
    pub(super) fn batch_norm(&mut self, n: &Node) -> Result<(), String> {
        if (1..n.outputs.len()).any(|i| Self::used(n, i)) || n.int("training_mode", 0)? != 0 {
            return Err("training-mode outputs (running mean and variance) are not supported".into());
        }
        let x = self.rt(n, 0)?;
        if x.shape.len() < 2 || x.elem != ElemType::F32 {
            return Err(format!("input {} {:?} is not float [N, C, ...]", x.elem.name(), x.shape));
        }
        let c = x.shape[1];
        let (p, eps) = self.batch_norm_params(n, c)?;
        let p = p.map(|v| v.iter().map(|&v| v as f32).collect::<Vec<f32>>());
        let eps = eps as f32;
        let a: Vec<f32> = (0..c).map(|k| p[0][k] / (p[3][k] + eps).sqrt()).collect();
        let b: Vec<f32> = (0..c).map(|k| p[1][k] - p[2][k] * a[k]).collect();
        // Per-channel constants: `[C]` against NHWC storage, `[C, 1, ...]` against ONNX's order.
        let dims = match x.layout {
            Layout::Nhwc => vec![c],
            Layout::Plain => {
                let mut d = vec![c];
                d.extend(vec![1; x.shape.len() - 2]);
                d
            }
        };
        let name = Self::out_name(n);
        let at = self.f32_tensor(&format!("{name}:scale"), dims.clone(), &a);
        let bt = self.f32_tensor(&format!("{name}:shift"), dims, &b);
        let scaled = self.new_rt(&format!("{name}:scaled"), ElemType::F32, x.shape.clone(), x.layout);
        self.emit(18, kind::MUL, vec![], vec![x.t, at], vec![scaled.t]);
        let out = self.new_rt(&name, ElemType::F32, x.shape.clone(), x.layout);
        self.emit(0, kind::ADD, vec![], vec![scaled.t, bt], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }
}

/// A value's ONNX shape.
pub(super) fn shape_of(v: &Val) -> Vec<usize> {
    match v {
        Val::Rt(r) => r.shape.clone(),
        Val::Const(c) => c.dims.clone(),
    }
}
