//! Constant folding: a node whose inputs are all known at import is evaluated here, so the
//! shape computations exporters emit (`Shape → Gather → Concat → Reshape`) never run.

use super::super::model::{AttrValue, Node, Tensor, checked_elements};
use super::movement::{reshape_dims, slice_plan, squeeze_dims, transpose_perm, unsqueeze_dims};
use super::{Attrs, Converter, Val, axis, broadcast};
use crate::tflite::ops::ElemType;

/// The operators folded when every input is a constant.
const FOLDED: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Neg",
    "Abs",
    "Equal",
    "Less",
    "Greater",
    "Not",
    "And",
    "Or",
    "Where",
    "Min",
    "Max",
    "Cast",
    "Identity",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Shape",
    "Size",
    "Gather",
    "Concat",
    "Slice",
    "Transpose",
    "ConstantOfShape",
    "Range",
    "Expand",
    "Sqrt",
    "Floor",
    "Ceil",
    "QuantizeLinear",
];

impl Converter {
    /// The outputs of `n` if it folds (every input a constant, or `Constant`).
    pub(super) fn fold(&self, n: &Node) -> Result<Option<Vec<Tensor>>, String> {
        if n.op_type == "Constant" {
            return constant(n).map(|t| Some(vec![t]));
        }
        if !FOLDED.contains(&n.op_type.as_str()) {
            return Ok(None);
        }
        let mut inputs = Vec::new();
        for i in 0..n.inputs.len() {
            match self.opt_val(n, i)? {
                Some(Val::Const(t)) => inputs.push(Some(t)),
                Some(Val::Rt(_)) => return Ok(None),
                None => inputs.push(None),
            }
        }
        evaluate(n, self.opset, &inputs).map(|t| Some(vec![t]))
    }
}

/// `Constant`'s value, from whichever attribute holds it.
fn constant(n: &Node) -> Result<Tensor, String> {
    let (name, v) = n.attrs.iter().next().ok_or("Constant has no value attribute")?;
    if n.attrs.len() != 1 {
        return Err("Constant needs exactly one value attribute".into());
    }
    Ok(match (name.as_str(), v) {
        ("value", AttrValue::Tensor(t)) => t.clone(),
        ("value_float", AttrValue::Float(f)) => Tensor::from_f64s(ElemType::F32, vec![], &[f64::from(*f)]),
        ("value_floats", AttrValue::Floats(f)) => Tensor::from_f64s(
            ElemType::F32,
            vec![f.len()],
            &f.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
        ),
        ("value_int", AttrValue::Int(i)) => Tensor::from_i64s(ElemType::I64, vec![], &[*i]),
        ("value_ints", AttrValue::Ints(i)) => Tensor::from_i64s(ElemType::I64, vec![i.len()], i),
        (other, _) => return Err(format!("Constant's '{other}' attribute is not supported")),
    })
}

/// `Shape` (with opset 15's `start`/`end`) or `Size` of a value of shape `dims`.
pub(super) fn shape_or_size(n: &Node, dims: &[usize]) -> Result<Tensor, String> {
    if n.op_type == "Size" {
        return Ok(Tensor::from_i64s(ElemType::I64, vec![], &[dims.iter().product::<usize>() as i64]));
    }
    let r = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let (start, end) = (clamp(n.int("start", 0)?), clamp(n.int("end", r)?));
    let v: Vec<i64> = dims[start..end.max(start)].iter().map(|&d| d as i64).collect();
    Ok(Tensor::from_i64s(ElemType::I64, vec![v.len()], &v))
}

fn need(inputs: &[Option<Tensor>], i: usize) -> Result<&Tensor, String> {
    inputs.get(i).and_then(Option::as_ref).ok_or_else(|| format!("input {i} is missing"))
}

fn evaluate(n: &Node, opset: i64, inputs: &[Option<Tensor>]) -> Result<Tensor, String> {
    let x = need(inputs, 0);
    Ok(match n.op_type.as_str() {
        "Identity" => x?.clone(),
        "Add" | "Sub" | "Mul" | "Div" | "Min" | "Max" | "Equal" | "Less" | "Greater" | "And" | "Or" => {
            let mut acc = x?.clone();
            for i in 1..inputs.len() {
                acc = binary(&n.op_type, &acc, need(inputs, i)?)?;
            }
            acc
        }
        "Pow" => pow(x?, need(inputs, 1)?)?,
        "Neg" | "Abs" | "Sqrt" | "Floor" | "Ceil" | "Not" => unary(&n.op_type, x?),
        "Where" => {
            let (c, a, b) = (x?, need(inputs, 1)?, need(inputs, 2)?);
            let dims = broadcast(&broadcast(&c.dims, &a.dims)?, &b.dims)?;
            foldable(&dims)?;
            let (cv, av, bv) = (expand(c, &dims).f64s(), expand(a, &dims).f64s(), expand(b, &dims).f64s());
            let v: Vec<f64> = (0..cv.len()).map(|k| if cv[k] != 0.0 { av[k] } else { bv[k] }).collect();
            values(a.elem, dims, &v)
        }
        "Cast" => {
            let to = super::super::model::elem_type(n.int("to", 0)? as i32)?;
            let x = x?;
            if to == ElemType::F32 || x.elem == ElemType::F32 {
                Tensor::from_f64s(to, x.dims.clone(), &x.f64s())
            } else {
                Tensor::from_i64s(to, x.dims.clone(), &x.i64s())
            }
        }
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => {
            let x = x?;
            let dims = match n.op_type.as_str() {
                "Reshape" => {
                    let shape = match n.ints("shape")? {
                        Some(s) if opset < 5 => s,
                        _ => need(inputs, 1)?.i64s(),
                    };
                    reshape_dims(&x.dims, &shape, n.int("allowzero", 0)? != 0)?
                }
                "Flatten" => {
                    let a = n.int("axis", 1)?;
                    let r = x.dims.len() as i64;
                    if !(-r..=r).contains(&a) {
                        return Err(format!("axis {a} is outside rank {r}"));
                    }
                    let a = if a < 0 { a + r } else { a } as usize;
                    vec![x.dims[..a].iter().product(), x.dims[a..].iter().product()]
                }
                "Squeeze" => squeeze_dims(&x.dims, axes_of(n, opset, inputs, 13)?.as_deref())?,
                _ => unsqueeze_dims(&x.dims, &axes_of(n, opset, inputs, 13)?.ok_or("Unsqueeze needs axes")?)?,
            };
            Tensor { dims, ..x.clone() }
        }
        "Shape" | "Size" => shape_or_size(n, &x?.dims)?,
        "Gather" => {
            let (x, idx) = (x?, need(inputs, 1)?);
            let a = axis(n.int("axis", 0)?, x.dims.len())?;
            gather(x, idx, a)?
        }
        "Concat" => {
            let first = x?;
            let a = axis(n.int("axis", 0)?, first.dims.len())?;
            concat(inputs, a)?
        }
        "Slice" => {
            let x = x?;
            let plan = if opset < 10 {
                let (s, e) = (n.ints("starts")?.unwrap_or_default(), n.ints("ends")?.unwrap_or_default());
                slice_plan(&x.dims, &s, &e, n.ints("axes")?.as_deref(), None)?
            } else {
                let (s, e) = (need(inputs, 1)?.i64s(), need(inputs, 2)?.i64s());
                let axes = inputs.get(3).and_then(Option::as_ref).map(Tensor::i64s);
                let steps = inputs.get(4).and_then(Option::as_ref).map(Tensor::i64s);
                slice_plan(&x.dims, &s, &e, axes.as_deref(), steps.as_deref())?
            };
            let src = strides(&x.dims);
            let dims: Vec<usize> = plan.iter().map(|p| p.2).collect();
            let mut idx = Vec::new();
            for_each_index(&dims, |at| {
                let mut off = 0i64;
                for (k, &i) in at.iter().enumerate() {
                    off += (plan[k].0 + plan[k].1 * i as i64) * src[k] as i64;
                }
                idx.push(off as usize);
            });
            pick(x, dims, &idx)
        }
        "Transpose" => {
            let x = x?;
            transpose(x, &transpose_perm(n, x.dims.len())?)
        }
        "ConstantOfShape" => {
            let dims: Vec<usize> = x?
                .i64s()
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} is negative")))
                .collect::<Result<_, _>>()?;
            foldable(&dims)?;
            let value = match n.attrs.get("value") {
                Some(AttrValue::Tensor(t)) if t.elements() == 1 => t.clone(),
                None => Tensor::from_f64s(ElemType::F32, vec![1], &[0.0]),
                Some(_) => return Err("ConstantOfShape's value must be a one-element tensor".into()),
            };
            let count: usize = dims.iter().product();
            let data = value.data.repeat(count);
            Tensor { elem: value.elem, dims, data }
        }
        "Range" => {
            let (s, l, d) = (x?, need(inputs, 1)?, need(inputs, 2)?);
            if s.elements() != 1 || l.elements() != 1 || d.elements() != 1 {
                return Err("Range needs one-element start, limit and delta".into());
            }
            let (start, limit, delta) = (s.f64s()[0], l.f64s()[0], d.f64s()[0]);
            if delta == 0.0 || !(start.is_finite() && limit.is_finite() && delta.is_finite()) {
                return Err("Range needs finite bounds and a nonzero delta".into());
            }
            let count = ((limit - start) / delta).ceil().max(0.0);
            if count > (1u64 << 24) as f64 {
                return Err(format!("Range of {count} values is too long to fold"));
            }
            let v: Vec<f64> = (0..count as usize).map(|i| start + i as f64 * delta).collect();
            values(s.elem, vec![v.len()], &v)
        }
        "Expand" => {
            let x = x?;
            let shape: Vec<usize> = need(inputs, 1)?
                .i64s()
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| format!("dimension {d} is negative")))
                .collect::<Result<_, _>>()?;
            let dims = broadcast(&x.dims, &shape)?;
            foldable(&dims)?;
            expand(x, &dims)
        }
        "QuantizeLinear" => {
            let (x, scale) = (x?, need(inputs, 1)?);
            if n.int("block_size", 0)? != 0 || n.int("output_dtype", 0)? != 0 {
                return Err("blocked quantization and output_dtype are not supported".into());
            }
            let zp = inputs.get(2).and_then(Option::as_ref);
            let elem = zp.map_or(ElemType::U8, |z| z.elem);
            let (lo, hi) = match elem {
                ElemType::U8 => (0.0, 255.0),
                ElemType::I8 => (-128.0, 127.0),
                e => return Err(format!("quantizing to {} is not supported", e.name())),
            };
            let (s, z) = (scale.f64s(), zp.map_or_else(|| vec![0], Tensor::i64s));
            if s.len() != 1 || z.len() != 1 || s[0] <= 0.0 {
                return Err("QuantizeLinear of a constant needs one positive scale and zero point".into());
            }
            let v: Vec<i64> = x
                .f64s()
                .iter()
                .map(|&f| {
                    ((f as f32 / s[0] as f32).round_ties_even() as f64 + z[0] as f64).clamp(lo, hi) as i64
                })
                .collect();
            Tensor::from_i64s(elem, x.dims.clone(), &v)
        }
        other => return Err(format!("internal: {other} has no folding")),
    })
}

/// The axes of Squeeze/Unsqueeze/Reduce*: an attribute before opset `since`, input 1 after.
pub(super) fn axes_of(
    n: &Node,
    opset: i64,
    inputs: &[Option<Tensor>],
    since: i64,
) -> Result<Option<Vec<i64>>, String> {
    if opset < since { n.ints("axes") } else { Ok(inputs.get(1).and_then(Option::as_ref).map(Tensor::i64s)) }
}

/// The most elements a folded value may have: larger constants would grow the program
/// (and the import's memory) instead of being computed at run time.
const FOLD_LIMIT: usize = 1 << 24;

fn foldable(dims: &[usize]) -> Result<(), String> {
    if checked_elements(dims)? > FOLD_LIMIT {
        return Err(format!("a constant of shape {dims:?} is too large to fold (over 2^24 elements)"));
    }
    Ok(())
}

/// Row-major strides of `dims`, in elements.
pub(super) fn strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1; dims.len()];
    for k in (0..dims.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * dims[k + 1];
    }
    s
}

/// Calls `f` with every index of `dims` in row-major order.
fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut at = vec![0; dims.len()];
    loop {
        f(&at);
        let mut k = dims.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            at[k] += 1;
            if at[k] < dims[k] {
                break;
            }
            at[k] = 0;
        }
    }
}

/// The elements of `x` at element indices `idx`, as a tensor of `dims`.
fn pick(x: &Tensor, dims: Vec<usize>, idx: &[usize]) -> Tensor {
    let size = x.elem.size();
    let mut data = Vec::with_capacity(idx.len() * size);
    for &i in idx {
        data.extend_from_slice(&x.data[i * size..(i + 1) * size]);
    }
    Tensor { elem: x.elem, dims, data }
}

/// `x` broadcast to `dims` (which `broadcast` accepted).
fn expand(x: &Tensor, dims: &[usize]) -> Tensor {
    let r = dims.len();
    let mut xd = vec![1; r - x.dims.len()];
    xd.extend(&x.dims);
    let xs = strides(&xd);
    let mut idx = Vec::new();
    for_each_index(dims, |at| {
        idx.push(at.iter().enumerate().map(|(k, &i)| if xd[k] == 1 { 0 } else { i * xs[k] }).sum());
    });
    pick(x, dims.to_vec(), &idx)
}

fn transpose(x: &Tensor, perm: &[usize]) -> Tensor {
    let xs = strides(&x.dims);
    let dims: Vec<usize> = perm.iter().map(|&p| x.dims[p]).collect();
    let mut idx = Vec::new();
    for_each_index(&dims, |at| idx.push(at.iter().enumerate().map(|(k, &i)| i * xs[perm[k]]).sum()));
    pick(x, dims, &idx)
}

/// `x` broadcast to `dims` (which must be its broadcast with them).
pub(super) fn broadcast_to(x: &Tensor, dims: &[usize]) -> Tensor {
    expand(x, dims)
}

/// `x` transposed by `perm` (public to the converter for weights).
pub(super) fn permuted(x: &Tensor, perm: &[usize]) -> Tensor {
    transpose(x, perm)
}

fn gather(x: &Tensor, idx: &Tensor, a: usize) -> Result<Tensor, String> {
    let d = x.dims[a] as i64;
    let picks: Vec<usize> = idx
        .i64s()
        .iter()
        .map(|&i| {
            let j = if i < 0 { i + d } else { i };
            usize::try_from(j)
                .ok()
                .filter(|&j| (j as i64) < d)
                .ok_or_else(|| format!("index {i} is outside axis of {d}"))
        })
        .collect::<Result<_, _>>()?;
    let mut dims = x.dims[..a].to_vec();
    dims.extend(&idx.dims);
    dims.extend(&x.dims[a + 1..]);
    foldable(&dims)?;
    let outer: usize = x.dims[..a].iter().product();
    let inner: usize = x.dims[a + 1..].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for &p in &picks {
            for i in 0..inner {
                out.push((o * x.dims[a] + p) * inner + i);
            }
        }
    }
    Ok(pick(x, dims, &out))
}

fn concat(inputs: &[Option<Tensor>], a: usize) -> Result<Tensor, String> {
    let parts: Vec<&Tensor> = inputs.iter().flatten().collect();
    let first = parts[0];
    let mut dims = first.dims.clone();
    dims[a] = 0;
    for p in &parts {
        let mut same = p.dims.clone();
        if same.len() != dims.len() || p.elem != first.elem {
            return Err(format!("inputs {:?} and {:?} do not concatenate", first.dims, p.dims));
        }
        same[a] = 0;
        let mut expect = first.dims.clone();
        expect[a] = 0;
        if same != expect {
            return Err(format!("inputs {:?} and {:?} do not concatenate on axis {a}", first.dims, p.dims));
        }
        dims[a] += p.dims[a];
    }
    let outer: usize = dims[..a].iter().product();
    let size = first.elem.size();
    let mut data = Vec::new();
    for o in 0..outer {
        for p in &parts {
            let row = p.dims[a..].iter().product::<usize>() * size;
            data.extend_from_slice(&p.data[o * row..(o + 1) * row]);
        }
    }
    Ok(Tensor { elem: first.elem, dims, data })
}

/// Values of `elem` (floats for float32, else integers).
fn values(elem: ElemType, dims: Vec<usize>, v: &[f64]) -> Tensor {
    Tensor::from_f64s(elem, dims, v)
}

fn unary(op: &str, x: &Tensor) -> Tensor {
    if x.elem == ElemType::F32 {
        let f = |v: f64| match op {
            "Neg" => -v,
            "Abs" => v.abs(),
            "Sqrt" => (v as f32).sqrt() as f64,
            "Floor" => v.floor(),
            "Ceil" => v.ceil(),
            _ => f64::from(u8::from(v == 0.0)),
        };
        values(x.elem, x.dims.clone(), &x.f64s().into_iter().map(f).collect::<Vec<_>>())
    } else {
        let f = |v: i64| match op {
            "Neg" => v.wrapping_neg(),
            "Abs" => v.wrapping_abs(),
            "Sqrt" => (v as f64).sqrt() as i64,
            "Not" => i64::from(v == 0),
            _ => v,
        };
        Tensor::from_i64s(x.elem, x.dims.clone(), &x.i64s().into_iter().map(f).collect::<Vec<_>>())
    }
}

/// `Pow`: of the base's type whatever the exponent's (ONNX's rule), as numpy computes it: a
/// float32 power, an integer one (wrapping) of integers, and a float one of an integer base
/// and float exponent, truncated back to the base's type.
fn pow(a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
    let dims = broadcast(&a.dims, &b.dims)?;
    foldable(&dims)?;
    let (x, y) = (expand(a, &dims), expand(b, &dims));
    if a.elem == ElemType::F32 {
        let v: Vec<f64> =
            x.f64s().iter().zip(y.f64s()).map(|(&p, q)| f64::from((p as f32).powf(q as f32))).collect();
        return Ok(values(a.elem, dims, &v));
    }
    let mut v = Vec::with_capacity(dims.iter().product());
    if b.elem == ElemType::F32 {
        for (p, q) in x.i64s().into_iter().zip(y.f64s()) {
            v.push((p as f64).powf(q) as i64);
        }
    } else {
        for (p, q) in x.i64s().into_iter().zip(y.i64s()) {
            let q = u32::try_from(q).map_err(|_| format!("integer Pow exponent {q} is not in 0..=2^32-1"))?;
            v.push(p.wrapping_pow(q));
        }
    }
    Ok(Tensor::from_i64s(a.elem, dims, &v))
}

fn binary(op: &str, a: &Tensor, b: &Tensor) -> Result<Tensor, String> {
    if a.elem != b.elem {
        return Err(format!("{op} of {} and {}", a.elem.name(), b.elem.name()));
    }
    let dims = broadcast(&a.dims, &b.dims)?;
    foldable(&dims)?;
    let compare = matches!(op, "Equal" | "Less" | "Greater");
    let out_elem = if compare { ElemType::Bool } else { a.elem };
    if a.elem == ElemType::F32 {
        let (x, y) = (expand(a, &dims).f64s(), expand(b, &dims).f64s());
        let f = |p: f64, q: f64| -> f64 {
            // float32 arithmetic, as a runtime would do it.
            let (p32, q32) = (p as f32, q as f32);
            f64::from(match op {
                "Add" => p32 + q32,
                "Sub" => p32 - q32,
                "Mul" => p32 * q32,
                "Div" => p32 / q32,
                "Min" => p32.min(q32),
                "Max" => p32.max(q32),
                "Equal" => f32::from(u8::from(p32 == q32)),
                "Less" => f32::from(u8::from(p32 < q32)),
                "Greater" => f32::from(u8::from(p32 > q32)),
                _ => f32::from(u8::from(if op == "And" {
                    p32 != 0.0 && q32 != 0.0
                } else {
                    p32 != 0.0 || q32 != 0.0
                })),
            })
        };
        let v: Vec<f64> = x.iter().zip(&y).map(|(&p, &q)| f(p, q)).collect();
        return Ok(values(out_elem, dims, &v));
    }
    let (x, y) = (expand(a, &dims).i64s(), expand(b, &dims).i64s());
    let mut v = Vec::with_capacity(x.len());
    for (&p, &q) in x.iter().zip(&y) {
        v.push(match op {
            "Add" => p.wrapping_add(q),
            "Sub" => p.wrapping_sub(q),
            "Mul" => p.wrapping_mul(q),
            "Div" if q == 0 => return Err("integer division by zero".into()),
            "Div" => p.wrapping_div(q),
            "Min" => p.min(q),
            "Max" => p.max(q),
            "Equal" => i64::from(p == q),
            "Less" => i64::from(p < q),
            "Greater" => i64::from(p > q),
            "And" => i64::from(p != 0 && q != 0),
            _ => i64::from(p != 0 || q != 0),
        });
    }
    Ok(Tensor::from_i64s(out_elem, dims, &v))
}
