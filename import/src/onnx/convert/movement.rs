//! Data movement: Reshape, Flatten, Squeeze, Unsqueeze (aliases), Transpose, Concat, Split,
//! Slice and Pad, and the reductions. Each keeps an NHWC-stored input NHWC where it can by
//! mapping its axes, so a CNN's layers do not transpose between them.

use super::super::model::{Node, Tensor, checked_elements};
use super::fold::{axes_of, permuted};
use super::{Attrs, Converter, Layout, Rt, TO_NCHW, TO_NHWC, Val, axis};
use crate::tflite::ops::ElemType;
use crate::tflite::options::{ext, kind};

/// Reshape's output shape: `0` copies the input's dim (unless `allowzero`), one `-1` is
/// inferred.
pub(super) fn reshape_dims(input: &[usize], shape: &[i64], allowzero: bool) -> Result<Vec<usize>, String> {
    let total: usize = input.iter().product();
    let mut dims = Vec::with_capacity(shape.len());
    let mut infer = None;
    for (k, &d) in shape.iter().enumerate() {
        dims.push(match d {
            -1 if infer.is_none() => {
                infer = Some(k);
                1
            }
            0 if !allowzero => {
                *input.get(k).ok_or_else(|| format!("shape {shape:?}: dim {k} copies no input dim"))?
            }
            d => usize::try_from(d).map_err(|_| format!("shape {shape:?} has dim {d}"))?,
        });
    }
    let known = checked_elements(&dims)?;
    if let Some(k) = infer {
        if known == 0 || !total.is_multiple_of(known) {
            return Err(format!("shape {shape:?} does not fit {total} elements"));
        }
        dims[k] = total / known;
    }
    if dims.iter().product::<usize>() != total {
        return Err(format!("shape {shape:?} does not fit input {input:?}"));
    }
    Ok(dims)
}

/// Squeeze's output shape (`None`: every dim of 1).
pub(super) fn squeeze_dims(input: &[usize], axes: Option<&[i64]>) -> Result<Vec<usize>, String> {
    let drop: Vec<usize> = match axes {
        None => (0..input.len()).filter(|&k| input[k] == 1).collect(),
        Some(a) => a.iter().map(|&a| axis(a, input.len())).collect::<Result<_, _>>()?,
    };
    if let Some(&k) = drop.iter().find(|&&k| input[k] != 1) {
        return Err(format!("axis {k} of {input:?} is not 1"));
    }
    Ok(input.iter().enumerate().filter(|(k, _)| !drop.contains(k)).map(|(_, &d)| d).collect())
}

/// Unsqueeze's output shape.
pub(super) fn unsqueeze_dims(input: &[usize], axes: &[i64]) -> Result<Vec<usize>, String> {
    let r = input.len() + axes.len();
    let mut ones: Vec<usize> = axes.iter().map(|&a| axis(a, r)).collect::<Result<_, _>>()?;
    ones.sort_unstable();
    if ones.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!("axes {axes:?} repeat"));
    }
    let mut rest = input.iter();
    Ok((0..r).map(|k| if ones.contains(&k) { 1 } else { *rest.next().unwrap_or(&1) }).collect())
}

/// Transpose's `perm` (reversed axes by default), checked to be a permutation of `r` axes.
pub(super) fn transpose_perm(n: &Node, r: usize) -> Result<Vec<usize>, String> {
    let perm: Vec<usize> = match n.ints("perm")? {
        Some(p) => p.iter().map(|&a| axis(a, r)).collect::<Result<_, _>>()?,
        None => (0..r).rev().collect(),
    };
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    if sorted != (0..r).collect::<Vec<_>>() {
        return Err(format!("perm {perm:?} is not a permutation of {r} axes"));
    }
    Ok(perm)
}

/// ONNX Slice per axis of `dims`: `(start, step, count)`.
pub(super) fn slice_plan(
    dims: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Result<Vec<(i64, i64, usize)>, String> {
    let mut plan: Vec<(i64, i64, usize)> = dims.iter().map(|&d| (0, 1, d)).collect();
    if starts.len() != ends.len() {
        return Err(format!("{} starts but {} ends", starts.len(), ends.len()));
    }
    let all: Vec<i64> = (0..starts.len() as i64).collect();
    let axes = axes.unwrap_or(&all);
    if axes.len() != starts.len() || steps.is_some_and(|s| s.len() != starts.len()) {
        return Err("starts, ends, axes and steps differ in length".into());
    }
    let mut seen = vec![false; dims.len()];
    for (i, &a) in axes.iter().enumerate() {
        let k = axis(a, dims.len())?;
        if std::mem::replace(&mut seen[k], true) {
            return Err(format!("axis {a} is sliced twice"));
        }
        let d = dims[k] as i64;
        let step = steps.map_or(1, |s| s[i]);
        if step == 0 {
            return Err(format!("step 0 on axis {a}"));
        }
        let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
        let (start, end) = if step > 0 {
            (norm(starts[i]).clamp(0, d), norm(ends[i]).clamp(0, d))
        } else {
            (norm(starts[i]).clamp(0, d - 1), norm(ends[i]).clamp(-1, d - 1))
        };
        let (span, by) = if step > 0 { (end - start, step) } else { (start - end, -step) };
        let count = if span <= 0 { 0 } else { ((span as i128 + by as i128 - 1) / by as i128) as usize };
        plan[k] = (start, step, count);
    }
    Ok(plan)
}

impl Converter {
    /// Reshape, Flatten, Squeeze, Unsqueeze: the same bytes under a new shape.
    pub(super) fn reshape(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let consts: Vec<Option<Tensor>> = (0..n.inputs.len())
            .map(|i| match self.opt_val(n, i) {
                Ok(Some(Val::Const(t))) => Some(t),
                _ => None,
            })
            .collect();
        let dims = match n.op_type.as_str() {
            "Reshape" => {
                let shape = match n.ints("shape")? {
                    Some(s) if self.opset < 5 => s,
                    _ => self.constant(n, 1, "shape")?.i64s(),
                };
                reshape_dims(&x.shape, &shape, n.int("allowzero", 0)? != 0)?
            }
            "Flatten" => {
                let r = x.shape.len() as i64;
                let a = n.int("axis", 1)?;
                if !(-r..=r).contains(&a) {
                    return Err(format!("axis {a} is outside rank {r}"));
                }
                let a = if a < 0 { a + r } else { a } as usize;
                vec![x.shape[..a].iter().product(), x.shape[a..].iter().product()]
            }
            "Squeeze" => {
                if self.opset >= 13
                    && n.inputs.len() > 1
                    && consts.get(1).is_some_and(Option::is_none)
                    && n.inputs[1].is_some()
                {
                    return Err("the axes (input 1) must be a constant".into());
                }
                squeeze_dims(&x.shape, axes_of(n, self.opset, &consts, 13)?.as_deref())?
            }
            _ => {
                let axes = axes_of(n, self.opset, &consts, 13)?.ok_or("the axes must be a constant")?;
                unsqueeze_dims(&x.shape, &axes)?
            }
        };
        let x = self.plain(&x);
        let out = self.new_rt(&Self::out_name(n), x.elem, dims, Layout::Plain);
        self.emit(22, 0, vec![], vec![x.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    pub(super) fn transpose(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let perm = transpose_perm(n, x.shape.len())?;
        let dims: Vec<usize> = perm.iter().map(|&p| x.shape[p]).collect();
        // An NHWC-stored input is transposed from its stored order.
        let stored: Vec<i64> = match x.layout {
            Layout::Plain => perm.iter().map(|&p| p as i64).collect(),
            Layout::Nhwc => perm.iter().map(|&p| TO_NCHW[p] as i64).collect(),
        };
        let name = Self::out_name(n);
        let p = self.i32_tensor(&format!("{name}:perm"), &stored);
        let out = self.new_rt(&name, x.elem, dims, Layout::Plain);
        self.emit(39, 0, vec![], vec![x.t, p], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// The layout a group of operands shares: NHWC when every runtime one is NHWC.
    fn shared_layout(&self, vals: &[Val]) -> Layout {
        let rts: Vec<&Rt> =
            vals.iter().filter_map(|v| if let Val::Rt(r) = v { Some(r) } else { None }).collect();
        if !rts.is_empty() && rts.iter().all(|r| r.layout == Layout::Nhwc) {
            Layout::Nhwc
        } else {
            Layout::Plain
        }
    }

    /// A value's tensor in `layout` (constants permuted at import).
    pub(super) fn in_layout(&mut self, v: &Val, layout: Layout, name: &str) -> usize {
        match (v, layout) {
            (Val::Rt(r), _) => self.layout(r, layout),
            (Val::Const(c), Layout::Plain) => self.const_rt(c, name).t,
            (Val::Const(c), Layout::Nhwc) => {
                let p = permuted(c, &TO_NHWC);
                self.const_rt(&p, name).t
            }
        }
    }

    /// The stored axis of ONNX axis `a` in `layout`.
    fn stored_axis(a: usize, layout: Layout) -> usize {
        match layout {
            Layout::Plain => a,
            Layout::Nhwc => TO_NCHW[a],
        }
    }

    pub(super) fn concat(&mut self, n: &Node) -> Result<(), String> {
        let vals: Vec<Val> = (0..n.inputs.len()).map(|i| self.val(n, i)).collect::<Result<_, _>>()?;
        let shapes: Vec<Vec<usize>> = vals
            .iter()
            .map(|v| match v {
                Val::Rt(r) => r.shape.clone(),
                Val::Const(c) => c.dims.clone(),
            })
            .collect();
        let first = shapes.first().ok_or("Concat has no inputs")?;
        let a = axis(n.int("axis", if self.opset < 4 { 1 } else { i64::MAX })?, first.len())?;
        let fits = |s: &Vec<usize>| {
            s.len() == first.len() && s.iter().zip(first).enumerate().all(|(k, (x, y))| k == a || x == y)
        };
        if let Some(s) = shapes.iter().find(|s| !fits(s)) {
            return Err(format!("input {s:?} does not concatenate with {first:?} on axis {a}"));
        }
        let mut dims = first.clone();
        dims[a] = shapes.iter().map(|s| s[a]).sum();
        checked_elements(&dims)?;
        let layout = self.shared_layout(&vals);
        let name = Self::out_name(n);
        let inputs: Vec<usize> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| self.in_layout(v, layout, &format!("{name}:in{i}")))
            .collect();
        let elem = self.out.tensors[inputs[0]].elem;
        let out = self.new_rt(&name, elem, dims, layout);
        let fields = vec![(0, Self::stored_axis(a, layout) as f64)];
        self.emit(2, kind::CONCATENATION, fields, inputs, vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    pub(super) fn split(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let a = axis(n.int("axis", 0)?, x.shape.len())?;
        let d = x.shape[a];
        let parts = n.outputs.len();
        let size = |v: &i64| usize::try_from(*v).ok().filter(|&v| v <= d);
        let sizes: Vec<usize> = match (self.opset, n.ints("split")?, self.opt_val(n, 1)?) {
            (..13, Some(s), _) => {
                s.iter().map(size).collect::<Option<_>>().ok_or("a split size is outside the axis")?
            }
            (13.., _, Some(Val::Const(t))) => {
                t.i64s().iter().map(size).collect::<Option<_>>().ok_or("a split size is outside the axis")?
            }
            (13.., _, Some(Val::Rt(_))) => return Err("the split sizes (input 1) must be a constant".into()),
            _ => {
                let k = if self.opset >= 18 { n.int("num_outputs", parts as i64)? as usize } else { parts };
                if k == 0 {
                    return Err("Split into no parts".into());
                }
                let each = d.div_ceil(k);
                (0..k).map(|i| each.min(d.saturating_sub(i * each))).collect()
            }
        };
        if sizes.len() != parts || sizes.iter().sum::<usize>() != d {
            return Err(format!(
                "sizes {sizes:?} do not split axis {a} of {:?} into {parts} outputs",
                x.shape
            ));
        }
        let layout = x.layout;
        let name = Self::out_name(n);
        let sizes_t =
            self.i32_tensor(&format!("{name}:sizes"), &sizes.iter().map(|&s| s as i64).collect::<Vec<_>>());
        let axis_t = self.i32_tensor(&format!("{name}:axis"), &[Self::stored_axis(a, layout) as i64]);
        let mut outs = Vec::new();
        for (i, &s) in sizes.iter().enumerate() {
            let mut dims = x.shape.clone();
            dims[a] = s;
            let oname = n.outputs[i].clone().unwrap_or_else(|| format!("{name}:unused{i}"));
            let out = self.new_rt(&oname, x.elem, dims, layout);
            outs.push(out.t);
            self.set(n, i, out);
        }
        self.emit(102, 0, vec![], vec![x.t, sizes_t, axis_t], outs);
        Ok(())
    }

    pub(super) fn slice(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let plan = if self.opset < 10 {
            let (s, e) = (n.ints("starts")?.unwrap_or_default(), n.ints("ends")?.unwrap_or_default());
            slice_plan(&x.shape, &s, &e, n.ints("axes")?.as_deref(), None)?
        } else {
            let (s, e) = (self.constant(n, 1, "starts")?.i64s(), self.constant(n, 2, "ends")?.i64s());
            let axes = match self.opt_val(n, 3)? {
                Some(_) => Some(self.constant(n, 3, "axes")?.i64s()),
                None => None,
            };
            let steps = match self.opt_val(n, 4)? {
                Some(_) => Some(self.constant(n, 4, "steps")?.i64s()),
                None => None,
            };
            slice_plan(&x.shape, &s, &e, axes.as_deref(), steps.as_deref())?
        };
        let dims: Vec<usize> = plan.iter().map(|p| p.2).collect();
        let stored: Vec<(i64, i64, usize)> = match x.layout {
            Layout::Plain => plan,
            Layout::Nhwc => TO_NHWC.iter().map(|&k| plan[k]).collect(),
        };
        let (mut begin, mut end, mut steps, mut end_mask) = (vec![], vec![], vec![], 0i64);
        for (k, &(start, step, count)) in stored.iter().enumerate() {
            let stop = start + step * count as i64;
            begin.push(start);
            steps.push(step);
            if stop < 0 {
                end_mask |= 1 << k;
                end.push(0);
            } else {
                end.push(stop);
            }
        }
        let name = Self::out_name(n);
        let b = self.i32_tensor(&format!("{name}:begin"), &begin);
        let e = self.i32_tensor(&format!("{name}:end"), &end);
        let s = self.i32_tensor(&format!("{name}:strides"), &steps);
        let out = self.new_rt(&name, x.elem, dims, x.layout);
        self.emit(45, kind::STRIDED_SLICE, vec![(1, end_mask as f64)], vec![x.t, b, e, s], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    pub(super) fn pad(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let mode = n.string("mode", "constant")?;
        // The other modes take their values from the input (MIRROR_PAD's kernel).
        let rule = match mode.as_str() {
            "constant" => None,
            "reflect" => Some(0),
            "edge" => Some(2),
            "wrap" => Some(3),
            m => {
                return Err(format!(
                    "pad mode '{m}' is not supported (constant, reflect, edge and wrap are)"
                ));
            }
        };
        let r = x.shape.len();
        let (pads, mut value) = if self.opset < 11 {
            let p = n.ints("pads")?.or(n.ints("paddings")?).ok_or("Pad needs pads")?;
            let v = n.float("value", 0.0)?;
            (p, Tensor::from_f64s(x.elem, vec![], &[f64::from(v)]))
        } else {
            let p = self.constant(n, 1, "pads")?.i64s();
            let v = match self.opt_val(n, 2)? {
                Some(_) => self.constant(n, 2, "constant_value")?,
                None => Tensor::from_f64s(x.elem, vec![], &[0.0]),
            };
            (p, v)
        };
        // Inside a QDQ group (on the int8 values of a dequantized input) a float pad value
        // (or the default 0) is a real number: quantized as the input is.
        let default =
            if self.opset >= 11 { self.opt_val(n, 2)?.is_none() } else { !n.attrs.contains_key("value") };
        if let (Some(q), ElemType::I8) = (&self.quant_ctx, x.elem)
            && value.elements() == 1
            && (default || value.elem == ElemType::F32)
        {
            let real = if default { 0.0 } else { value.f64s()[0] };
            let (scale, zp) = (f64::from(q.scale[0]), q.zero_point[0] as f64);
            let v = ((real / scale).round_ties_even() + zp).clamp(-128.0, 127.0);
            value = Tensor::from_f64s(ElemType::I8, vec![], &[v]);
        }
        // Opset 18's `axes` input names the padded axes.
        let axes: Vec<usize> = match self.opt_val(n, 3)? {
            Some(_) => {
                self.constant(n, 3, "axes")?.i64s().iter().map(|&a| axis(a, r)).collect::<Result<_, _>>()?
            }
            None => (0..r).collect(),
        };
        if pads.len() != 2 * axes.len() || value.elements() != 1 || value.elem != x.elem {
            return Err(format!("pads {pads:?} or the pad value do not fit input {:?}", x.shape));
        }
        let mut per = vec![(0i64, 0i64); r];
        for (i, &k) in axes.iter().enumerate() {
            per[k] = (pads[i], pads[i + axes.len()]);
        }
        if per.iter().any(|&(b, e)| b < 0 || e < 0) {
            return Err(format!("negative pads {pads:?} are not supported"));
        }
        if per.iter().any(|&(b, e)| b > 1 << 24 || e > 1 << 24) {
            return Err(format!("pads {pads:?} are larger than 2^24"));
        }
        let dims: Vec<usize> =
            x.shape.iter().zip(&per).map(|(&d, &(b, e))| d + b as usize + e as usize).collect();
        checked_elements(&dims)?;
        let stored: Vec<(i64, i64)> = match x.layout {
            Layout::Plain => per,
            Layout::Nhwc => TO_NHWC.iter().map(|&k| per[k]).collect(),
        };
        let name = Self::out_name(n);
        let flat: Vec<i64> = stored.iter().flat_map(|&(b, e)| [b, e]).collect();
        let p = self.i32_tensor(&format!("{name}:pads"), &flat);
        self.out.tensors[p].shape = vec![r, 2];
        if let Some(rule) = rule {
            let out = self.new_rt(&name, x.elem, dims, x.layout);
            self.emit(100, kind::MIRROR_PAD, vec![(ext::PAD_MODE, rule as f64)], vec![x.t, p], vec![out.t]);
            self.set(n, 0, out);
            return Ok(());
        }
        let v = self.tensor(&format!("{name}:value"), x.elem, vec![], Some(value.data));
        // An int8 pad value is quantized as the input it pads.
        self.out.tensors[v].quant = self.out.tensors[x.t].quant.clone();
        let out = self.new_rt(&name, x.elem, dims, x.layout);
        self.emit(60, 0, vec![], vec![x.t, p, v], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// ReduceMean, ReduceSum, ReduceMax, ReduceMin and ReduceProd over constant axes.
    pub(super) fn reduce(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let since = if n.op_type == "ReduceSum" { 13 } else { 18 };
        let axes = if self.opset < since {
            n.ints("axes")?
        } else {
            match self.opt_val(n, 1)? {
                Some(_) => Some(self.constant(n, 1, "axes")?.i64s()),
                None => None,
            }
        };
        let r = x.shape.len();
        let axes: Vec<usize> = match axes {
            Some(a) if !a.is_empty() => a.iter().map(|&v| axis(v, r)).collect::<Result<_, _>>()?,
            _ if n.int("noop_with_empty_axes", 0)? != 0 => {
                let out = x.clone();
                self.set(n, 0, out);
                return Ok(());
            }
            _ => (0..r).collect(),
        };
        let keep = n.int("keepdims", 1)? != 0;
        let dims: Vec<usize> = (0..r)
            .filter_map(|k| match axes.contains(&k) {
                false => Some(x.shape[k]),
                true if keep => Some(1),
                true => None,
            })
            .collect();
        let layout = if keep { x.layout } else { Layout::Plain };
        let src = self.layout(&x, layout);
        let stored: Vec<i64> = axes.iter().map(|&a| Self::stored_axis(a, layout) as i64).collect();
        let name = Self::out_name(n);
        let a = self.i32_tensor(&format!("{name}:axes"), &stored);
        let out = self.new_rt(&name, x.elem, dims, layout);
        let code = match n.op_type.as_str() {
            "ReduceMean" => 40,
            "ReduceSum" => 74,
            "ReduceMax" => 82,
            "ReduceMin" => 89,
            _ => 81,
        };
        self.emit(code, kind::REDUCER, vec![(0, f64::from(u8::from(keep)))], vec![src, a], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }
}
