//! Operators that only move elements, lowered to strided copies (`nn.copy`) and fills
//! (`nn.fill`) whose strides are computed here: TRANSPOSE, SLICE, STRIDED_SLICE,
//! CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, PAD and PADV2. int8 tensors keep their
//! quantization, as TensorFlow Lite Micro's kernels copy bytes without rescaling; the
//! importer refuses a model whose input and output quantizations differ rather than
//! compute something else.

use hostrt_compiler::ast::Attr;

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, ext, kind};
use super::{AttrSpec, Lowerer, dense, int, ints};

/// The most dims a copy has once unit dims are dropped and contiguous ones merged.
const RANK: usize = 6;

/// Row-major element strides of `shape`.
pub(super) fn strides(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as i64;
    }
    s
}

/// An axis attribute in `[-rank, rank)` as an index.
fn axis(a: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    if !(-r..r).contains(&a) {
        return Err(format!("axis {a} is outside a rank-{rank} tensor"));
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

/// One strided copy: `dims` counts, starting at element `from` of `src` with `src_strides`
/// and at element `to` of `dst` with `dst_strides`.
pub(super) struct Copy<'s> {
    pub src: usize,
    pub from: i64,
    pub src_strides: &'s [i64],
    pub dims: &'s [usize],
    pub dst: usize,
    pub to: i64,
    pub dst_strides: &'s [i64],
}

impl Lowerer<'_, '_> {
    /// The integer contents of constant tensor `t` (int32 or int64).
    pub(super) fn int_constant(&self, t: usize, what: &str) -> Result<Vec<i64>, String> {
        let data = self.constant(t, what)?;
        match self.t(t).elem {
            ElemType::I32 => Ok(data
                .chunks_exact(4)
                .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                .collect()),
            ElemType::I64 => Ok(data
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                .collect()),
            e => Err(format!("the {what} is {}, expected int32 or int64", e.name())),
        }
    }

    /// Checks that `out` has `x`'s element type and, for int8, its quantization.
    pub(super) fn same_kind(&self, x: usize, out: usize) -> Result<(), String> {
        let (xi, oi) = (self.t(x), self.t(out));
        if xi.elem != oi.elem {
            return Err(format!(
                "input '{}' is {} but output '{}' is {}",
                xi.name,
                xi.elem.name(),
                oi.name,
                oi.elem.name()
            ));
        }
        if xi.elem == ElemType::I8 && self.quant(x, "input")? != self.quant(out, "output")? {
            return Err(format!(
                "input '{}' and output '{}' are quantized differently (requantizing data movement is not supported)",
                xi.name, oi.name
            ));
        }
        Ok(())
    }

    /// Emits `c` as an `nn.copy` step of `op`, dropping unit dims and merging dims that are
    /// contiguous in both tensors.
    pub(super) fn copy(&mut self, op: &OpInfo<'_>, c: Copy<'_>) -> Result<(), String> {
        self.same_kind(c.src, c.dst)?;
        let size = self.t(c.src).elem.size() as i64;
        let mut d: Vec<(usize, i64, i64)> = Vec::new();
        for (k, &n) in c.dims.iter().enumerate() {
            if n == 0 {
                return Ok(());
            }
            if n == 1 {
                continue;
            }
            let (s, t) = (c.src_strides[k], c.dst_strides[k]);
            match d.last_mut() {
                Some(last)
                    if Some(last.1) == s.checked_mul(n as i64) && Some(last.2) == t.checked_mul(n as i64) =>
                {
                    *last = (last.0 * n, s, t)
                }
                _ => d.push((n, s, t)),
            }
        }
        if d.len() > RANK {
            return Err(format!("the copy needs {} dims (at most {RANK} are supported)", d.len()));
        }
        while d.len() < RANK {
            d.insert(0, (1, 0, 0));
        }
        let fits =
            |v: i64| i32::try_from(v).map_err(|_| "the tensor is too large for 32-bit strides".to_string());
        let mut dims = Vec::new();
        let (mut ss, mut ts) = (Vec::new(), Vec::new());
        for &(n, s, t) in &d {
            dims.push(int(fits(n as i64)?.into()));
            ss.push(fits(s)?);
            ts.push(fits(t)?);
        }
        let loc = self.loc(op);
        let src = self.read(c.src, &loc);
        let dst = self.arena(c.dst);
        let attrs = vec![
            ("dims", AttrSpec::Value(Attr::Array(dims))),
            ("input", AttrSpec::Strided { tensor: src, start: c.from * size, strides: ss }),
            ("output", AttrSpec::Strided { tensor: dst, start: c.to * size, strides: ts }),
            ("size", AttrSpec::Value(ints(&[size as i32]))),
        ];
        self.push(op, "nn.copy", dst, attrs);
        Ok(())
    }

    /// A copy of the whole of `src` into `dst` (whose shape, as `dst_shape`, is `src`'s
    /// with unit dims inserted or an axis stretched) at element `to` along `dst_strides`.
    fn copy_into(
        &mut self,
        op: &OpInfo<'_>,
        src: usize,
        dst: usize,
        to: i64,
        dst_strides: &[i64],
    ) -> Result<(), String> {
        let dims = self.t(src).shape.clone();
        let s = strides(&dims);
        self.copy(op, Copy { src, from: 0, src_strides: &s, dims: &dims, dst, to, dst_strides })
    }

    pub(super) fn transpose(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, p, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let perm = self.int_constant(p, "permutation")?;
        let xs = self.t(x).shape.clone();
        let mut seen = vec![false; xs.len()];
        let mut dims = Vec::new();
        let mut src_strides = Vec::new();
        let xst = strides(&xs);
        for &a in &perm {
            let a = axis(a, xs.len())?;
            if std::mem::replace(&mut seen[a], true) {
                return Err(format!("permutation {perm:?} repeats axis {a}"));
            }
            dims.push(xs[a]);
            src_strides.push(xst[a]);
        }
        if perm.len() != xs.len() || dims != self.t(out).shape {
            return Err(format!("permutation {perm:?} of {xs:?} does not give {:?}", self.t(out).shape));
        }
        let dst_strides = strides(&dims);
        self.copy(
            op,
            Copy {
                src: x,
                from: 0,
                src_strides: &src_strides,
                dims: &dims,
                dst: out,
                to: 0,
                dst_strides: &dst_strides,
            },
        )
    }

    /// SLICE and STRIDED_SLICE: per axis a start, a step and a count.
    fn slice_copy(
        &mut self,
        op: &OpInfo<'_>,
        x: usize,
        out: usize,
        axes: &[(i64, i64, usize)],
    ) -> Result<(), String> {
        let xst = strides(&self.t(x).shape);
        let big = || "slice indices overflow".to_string();
        let from = axes.iter().zip(&xst).try_fold(0i64, |f, (a, s)| f.checked_add(a.0.checked_mul(*s)?));
        let from = from.ok_or_else(big)?;
        let src_strides =
            axes.iter().zip(&xst).map(|(a, s)| a.1.checked_mul(*s)).collect::<Option<Vec<i64>>>();
        let src_strides = src_strides.ok_or_else(big)?;
        let dims: Vec<usize> = axes.iter().map(|a| a.2).collect();
        let n: usize = dims.iter().product();
        if n != self.t(out).elements() {
            return Err(format!("the slice has {dims:?} elements but the output is {:?}", self.t(out).shape));
        }
        let dst_strides = strides(&dims);
        self.copy(
            op,
            Copy {
                src: x,
                from,
                src_strides: &src_strides,
                dims: &dims,
                dst: out,
                to: 0,
                dst_strides: &dst_strides,
            },
        )
    }

    pub(super) fn slice(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, b, s, out) = (self.input(op, 0)?, self.input(op, 1)?, self.input(op, 2)?, self.output(op)?);
        let (begin, size) = (self.int_constant(b, "begin")?, self.int_constant(s, "size")?);
        let xs = self.t(x).shape.clone();
        if begin.len() != xs.len() || size.len() != xs.len() {
            return Err(format!("begin {begin:?} and size {size:?} do not match input {xs:?}"));
        }
        let mut axes = Vec::new();
        for (k, &d) in xs.iter().enumerate() {
            let (b, n) = (begin[k], size[k]);
            let n = if n == -1 { d as i64 - b } else { n };
            if b < 0 || n < 0 || i128::from(b) + i128::from(n) > d as i128 {
                return Err(format!("slice [{b}, +{n}) is outside axis {k} of {xs:?}"));
            }
            axes.push((b, 1, n as usize));
        }
        self.slice_copy(op, x, out, &axes)
    }

    pub(super) fn strided_slice(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::STRIDED_SLICE)?;
        let (begin_mask, end_mask) = (o.i32(0, 0)?, o.i32(1, 0)?);
        if o.i32(2, 0)? != 0 || o.i32(3, 0)? != 0 {
            return Err("ellipsis and new-axis masks are not supported".into());
        }
        let (shrink, offset) = (o.i32(4, 0)?, o.bool(5)?);
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let begin = self.int_constant(self.input(op, 1)?, "begin")?;
        let end = self.int_constant(self.input(op, 2)?, "end")?;
        let step = match op.inputs.get(3).copied().flatten() {
            Some(t) => self.int_constant(t, "strides")?,
            None => vec![1; begin.len()],
        };
        let xs = self.t(x).shape.clone();
        if begin.len() != xs.len() || end.len() != xs.len() || step.len() != xs.len() || xs.len() > 31 {
            return Err(format!(
                "begin {begin:?}, end {end:?} and strides {step:?} do not match input {xs:?}"
            ));
        }
        // TensorFlow's strided-slice rules: masks take the whole axis, negative indices
        // count from the end, and both ends are clamped.
        let mut axes = Vec::new();
        let mut kept = Vec::new();
        for (k, &d) in xs.iter().enumerate() {
            let (d, s, bit) = (d as i64, step[k], 1 << k);
            if s == 0 {
                return Err(format!("stride 0 on axis {k}"));
            }
            let clamp = |v: i64| if s > 0 { v.clamp(0, d) } else { v.clamp(-1, d - 1) };
            let start = if begin_mask & bit != 0 {
                if s > 0 { 0 } else { d - 1 }
            } else {
                clamp(if begin[k] < 0 { begin[k] + d } else { begin[k] })
            };
            let count = if shrink & bit != 0 {
                if !(0..d).contains(&start) {
                    return Err(format!("index {} is outside axis {k} of {xs:?}", begin[k]));
                }
                1
            } else {
                let e = if offset { begin[k].saturating_add(end[k]) } else { end[k] };
                let stop = if end_mask & bit != 0 {
                    if s > 0 { d } else { -1 }
                } else {
                    clamp(if e < 0 { e + d } else { e })
                };
                let (s, stop, start) = (i128::from(s), i128::from(stop), i128::from(start));
                let n = if s > 0 { (stop - start + s - 1) / s } else { (start - stop - s - 1) / -s };
                // At most the axis' size.
                let n = n.max(0) as usize;
                kept.push(n);
                n
            };
            axes.push((start, s, count));
        }
        if kept != self.t(out).shape {
            return Err(format!("the slice is {kept:?} but the output is {:?}", self.t(out).shape));
        }
        self.slice_copy(op, x, out, &axes)
    }

    /// CONCATENATION and PACK: every input copied into its place along `axis` of the
    /// output; PACK's inputs lack the axis (`stacked`).
    pub(super) fn concatenation(&mut self, op: &OpInfo<'_>, stacked: bool) -> Result<(), String> {
        let out = self.output(op)?;
        let os = self.t(out).shape.clone();
        let a = if stacked {
            Options::of(op, kind::PACK)?.i32(1, 0)?
        } else {
            let o = Options::of(op, kind::CONCATENATION)?;
            if o.i8(1)? != 0 {
                return Err("a fused activation on CONCATENATION is not supported".into());
            }
            o.i32(0, 0)?
        };
        let a = axis(a.into(), os.len())?;
        let ost = strides(&os);
        let mut at = 0usize;
        for i in 0..op.inputs.len() {
            let x = self.input(op, i)?;
            let mut xs = self.t(x).shape.clone();
            if stacked && a <= xs.len() {
                xs.insert(a, 1);
            }
            let mut expect = os.clone();
            if xs.len() != os.len() {
                return Err(format!("input {i} {:?} does not fit output {os:?}", self.t(x).shape));
            }
            expect[a] = xs[a];
            if xs != expect {
                return Err(format!(
                    "input {i} {:?} does not fit output {os:?} along axis {a}",
                    self.t(x).shape
                ));
            }
            self.copy_into(op, x, out, at as i64 * ost[a], &{
                let mut s = ost.clone();
                if stacked {
                    s.remove(a);
                }
                s
            })?;
            at += xs[a];
        }
        if at != os[a] {
            return Err(format!("the inputs fill {at} of the output's {} along axis {a}", os[a]));
        }
        Ok(())
    }

    /// SPLIT, SPLIT_V and UNPACK: every output copied from its place along `axis` of the
    /// input; UNPACK's outputs lack the axis (`unstacked`).
    pub(super) fn split(&mut self, op: &OpInfo<'_>, x: usize, a: i64, unstacked: bool) -> Result<(), String> {
        let xs = self.t(x).shape.clone();
        let a = axis(a, xs.len())?;
        let xst = strides(&xs);
        let mut at = 0usize;
        for &o in &op.outputs.clone() {
            if self.t(o).data.is_some() {
                return Err("an output is a constant".into());
            }
            let mut os = self.t(o).shape.clone();
            if unstacked && a <= os.len() {
                os.insert(a, 1);
            }
            let mut expect = xs.clone();
            if os.len() != xs.len() {
                return Err(format!("output {:?} does not fit input {xs:?}", self.t(o).shape));
            }
            expect[a] = os[a];
            if os != expect {
                return Err(format!("output {:?} does not fit input {xs:?} along axis {a}", self.t(o).shape));
            }
            let dst_strides = strides(&os);
            self.copy(
                op,
                Copy {
                    src: x,
                    from: at as i64 * xst[a],
                    src_strides: &xst,
                    dims: &os,
                    dst: o,
                    to: 0,
                    dst_strides: &dst_strides,
                },
            )?;
            at += os[a];
        }
        if at != xs[a] {
            return Err(format!("the outputs take {at} of the input's {} along axis {a}", xs[a]));
        }
        Ok(())
    }

    pub(super) fn split_op(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        match op.code {
            // SPLIT(axis, x)
            49 => {
                let a = self.int_constant(self.input(op, 0)?, "axis")?;
                let [a] = a[..] else { return Err("the axis must be one value".into()) };
                self.split(op, self.input(op, 1)?, a, false)
            }
            // SPLIT_V(x, sizes, axis): the outputs' shapes state the sizes.
            102 => {
                let a = self.int_constant(self.input(op, 2)?, "axis")?;
                let [a] = a[..] else { return Err("the axis must be one value".into()) };
                self.split(op, self.input(op, 0)?, a, false)
            }
            // UNPACK(x) {num, axis}
            _ => {
                let a = Options::of(op, kind::UNPACK)?.i32(1, 0)?;
                self.split(op, self.input(op, 0)?, a.into(), true)
            }
        }
    }

    /// The `[before, after]` pads of each axis from PAD's, PADV2's or MIRROR_PAD's second
    /// input, checked against the input's and the output's shapes.
    fn paddings(&self, x: usize, p: usize, out: usize) -> Result<Vec<i64>, String> {
        self.same_kind(x, out)?;
        let pads = self.int_constant(p, "paddings")?;
        let (xs, os) = (&self.t(x).shape, &self.t(out).shape);
        if pads.len() != 2 * xs.len() || os.len() != xs.len() {
            return Err(format!("paddings {pads:?} do not match input {xs:?}"));
        }
        for k in 0..xs.len() {
            let (b, a) = (pads[2 * k], pads[2 * k + 1]);
            if b < 0 || a < 0 || xs[k] as i128 + i128::from(b) + i128::from(a) != os[k] as i128 {
                return Err(format!("padding {b}+{a} of axis {k} does not take {xs:?} to {os:?}"));
            }
        }
        Ok(pads)
    }

    /// PAD and PADV2: the output filled with the pad value, then the input copied inside.
    pub(super) fn pad(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, p, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let pads = self.paddings(x, p, out)?;
        let (xs, os) = (self.t(x).shape.clone(), self.t(out).shape.clone());
        let elem = self.t(out).elem;
        let value = match op.inputs.get(2).copied().flatten() {
            Some(v) => {
                self.same_kind(v, out)?;
                let data = self.constant(v, "pad value")?;
                if data.len() != elem.size() {
                    return Err("the pad value must be one element".into());
                }
                data.to_vec()
            }
            None if elem == ElemType::I8 => vec![self.quant(out, "output")?.1 as i8 as u8],
            None => vec![0; elem.size()],
        };
        let n = self.t(out).elements();
        let o = self.arena(out);
        self.push(
            op,
            "nn.fill",
            o,
            vec![
                ("output", AttrSpec::Region { tensor: o, dims: vec![n] }),
                ("value", AttrSpec::Value(dense(elem.name(), &[1], value))),
            ],
        );
        let ost = strides(&os);
        let to = (0..xs.len()).map(|k| pads[2 * k] * ost[k]).sum();
        self.copy_into(op, x, out, to, &ost)
    }

    /// MIRROR_PAD {mode} (REFLECT 0, SYMMETRIC 1; a translating importer may also ask for
    /// the edge value repeated, 2, or the other end's values, 3): `nn.pad_border`.
    pub(super) fn mirror_pad(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, p, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let pads = self.paddings(x, p, out)?;
        let o = Options::of(op, kind::MIRROR_PAD)?;
        let (mode, own) = match o.ext(ext::PAD_MODE) {
            Some(m) => (m as i32, false),
            None => (i32::from(o.i8(0)?), true),
        };
        let xs = self.t(x).shape.clone();
        if !(0..=3).contains(&mode) || own && mode > 1 {
            return Err(format!("unknown mirror pad mode {mode}"));
        }
        if xs.len() > RANK {
            return Err(format!("input {xs:?} has more than {RANK} dims"));
        }
        for (k, &n) in xs.iter().enumerate() {
            let (b, a) = (pads[2 * k], pads[2 * k + 1]);
            // TensorFlow's limit: a mirror reaches at most the far edge (TensorFlow Lite's
            // kernel clamps past it, where numpy's pad, this kernel's rule, repeats).
            let most = n as i64 - i64::from(mode == 0);
            if n == 0 && b + a > 0 || own && (b > most || a > most) {
                return Err(format!("padding {b}+{a} of axis {k} reaches past the {n} values it mirrors"));
            }
        }
        // Every list to the kernel's 6 axes, the leading ones of count 1, unpadded.
        let lead = RANK - xs.len();
        let widen = |values: &[i64], per: usize, fill: i64| -> Result<Vec<i32>, String> {
            let lead = std::iter::repeat_n(&fill, per * lead);
            lead.chain(values)
                .map(|&v| {
                    i32::try_from(v).map_err(|_| "the tensor is too large for 32-bit strides".to_string())
                })
                .collect()
        };
        let shape: Vec<i64> = xs.iter().map(|&n| n as i64).collect();
        let (dims, padded) = (widen(&shape, 1, 1)?, widen(&pads, 2, 0)?);
        let (is, os) = (widen(&strides(&xs), 1, 0)?, widen(&strides(&self.t(out).shape), 1, 0)?);
        let size = self.t(x).elem.size() as i32;
        let loc = self.loc(op);
        let src = self.read(x, &loc);
        let dst = self.arena(out);
        let attrs = vec![
            ("dims", AttrSpec::Value(ints(&dims))),
            ("input", AttrSpec::Strided { tensor: src, start: 0, strides: is }),
            ("mode", AttrSpec::Value(ints(&[mode]))),
            ("output", AttrSpec::Strided { tensor: dst, start: 0, strides: os }),
            ("pads", AttrSpec::Value(ints(&padded))),
            ("size", AttrSpec::Value(ints(&[size]))),
        ];
        self.push(op, "nn.pad_border", dst, attrs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hostrt_compiler::ast::Op;

    use super::super::super::model::Graph;
    use super::super::testing::{self, attr, int_at, kernel, run};
    use super::super::{ints, lower};

    const MODEL: &str = "mirror_pad_f32";

    #[test]
    fn mirror_pads_past_tensorflows_limit_are_refused() {
        let bytes = testing::model(&format!("{MODEL}.tflite"));
        let g = Graph::read(&bytes).expect("reads");
        // The REFLECT pad (the first), [1, 5, 6, 4] by [[0, 0], [2, 1], [1, 3], [0, 0]]:
        // padding 6 columns after the 6 mirrors past the far edge.
        let at = g.ops.iter().position(|op| op.code == 100).expect("MIRROR_PAD");
        let mut g = g.clone();
        let (p, out) = (g.ops[at].inputs[1].expect("paddings"), g.ops[at].outputs[0]);
        let pads: Vec<u8> = [0i32, 0, 2, 1, 1, 6, 0, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
        g.tensors[p].data = Some(Box::leak(pads.into_boxed_slice()));
        g.tensors[out].shape = vec![1, 8, 13, 4];
        let e = lower(&g, Default::default()).expect_err("refused").to_string();
        assert!(
            e.contains("MIRROR_PAD") && e.contains("padding 1+6 of axis 2 reaches past the 6 values"),
            "{e}"
        );
    }

    #[test]
    fn pad_border_refuses_bad_attributes() {
        type Mutation = (&'static str, fn(&mut Op));
        let mutations: &[Mutation] = &[
            ("mode 4 is not", |op| *attr(op, "mode") = ints(&[4])),
            ("negative pad -1", |op| *attr(op, "pads") = ints(&[0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0])),
            ("axis 4 is empty", |op| *attr(op, "dims") = ints(&[1, 1, 1, 5, 0, 4])),
            ("element size 3", |op| *attr(op, "size") = ints(&[3])),
            ("output strides must be positive", |op| {
                let at = int_at(attr(op, "output"), 0);
                *attr(op, "output") = ints(&[at, 0, 0, 0, 320, 40, -1]);
            }),
            ("output strides must be positive", |op| {
                let at = int_at(attr(op, "output"), 0);
                *attr(op, "output") = ints(&[at, 0, 0, 0, 0, 40, 1]);
            }),
            ("is outside the arena", |op| {
                *attr(op, "pads") = ints(&[0, 0, 0, 0, 0, 0, 2, 1, 1, i32::MAX, 0, 0]);
            }),
            ("input strides overflow", |op| *attr(op, "input") = ints(&[0, 0, 0, 0, 24, 4, -1])),
            ("overlaps the output", |op| {
                let at = int_at(attr(op, "output"), 0);
                *attr(op, "input") = ints(&[at, 0, 0, 0, 24, 4, 1]);
            }),
        ];
        let imported = crate::tflite(&testing::model(&format!("{MODEL}.tflite"))).expect("imports");
        assert!(run(&imported.module, MODEL).is_ok());
        for (what, mutate) in mutations {
            let mut module = imported.module.clone();
            mutate(kernel(&mut module, "nn.pad_border"));
            let e = run(&module, MODEL).expect_err(what);
            assert!(e.contains("nn.pad_border") && e.contains(what), "{what}: {e}");
        }
    }
}
