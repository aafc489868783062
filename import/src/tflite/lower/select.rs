//! Operators over any element type that compute no arithmetic: comparisons (EQUAL,
//! NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL) to `nn.compare`, LOGICAL_AND,
//! LOGICAL_OR and LOGICAL_NOT to `nn.logical`, SELECT and SELECT_V2 to `nn.where`, CAST to
//! `nn.cast`, ARG_MAX and ARG_MIN to `nn.arg_max`, GATHER (indices read at run time) to
//! `nn.gather`, and TILE and BROADCAST_TO to strided copies (`nn.copy` with stride 0 along
//! the repeated axes). int8 operands are refused where their quantization would matter.

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, ext};
use super::movement::{Copy, strides};
use super::{AttrSpec, Lowerer, dense, ints};

/// The kernels' name for an element type (`element.rs` in hostrt-ops).
fn type_name(e: ElemType) -> Result<&'static str, String> {
    match e {
        ElemType::F32 | ElemType::I32 | ElemType::I64 | ElemType::I8 | ElemType::U8 => Ok(e.name()),
        ElemType::Bool => Ok("bool"),
        e => Err(format!("{} values are not supported here", e.name())),
    }
}

/// `shape` with leading 1s to rank 4, or why not.
pub(super) fn four(shape: &[usize]) -> Result<Vec<usize>, String> {
    if shape.len() > 4 {
        return Err(format!("shape {shape:?} has rank {} (at most 4 is supported)", shape.len()));
    }
    let mut d = vec![1usize; 4 - shape.len()];
    d.extend_from_slice(shape);
    Ok(d)
}

impl Lowerer<'_, '_> {
    /// An operand of a broadcasting kernel: a constant read in place, or its arena region,
    /// as rank 4.
    fn operand4(&mut self, t: usize, loc: &str) -> Result<AttrSpec, String> {
        let dims = four(&self.t(t).shape)?;
        let bool_or = |e: ElemType| if e == ElemType::Bool { "i1" } else { e.name() };
        Ok(match self.t(self.arena(t)).data {
            Some(data) => AttrSpec::Value(dense(bool_or(self.t(t).elem), &dims, data.to_vec())),
            None => AttrSpec::Region { tensor: self.read(t, loc), dims },
        })
    }

    /// Checks that the operands broadcast to `out` (rank ≤ 4).
    fn broadcasts(&self, operands: &[usize], out: usize) -> Result<(), String> {
        let od = four(&self.t(out).shape)?;
        for &t in operands {
            let d = four(&self.t(t).shape)?;
            if d.iter().zip(&od).any(|(&a, &o)| a != o && a != 1) {
                return Err(format!(
                    "shape {:?} does not broadcast to {:?}",
                    self.t(t).shape,
                    self.t(out).shape
                ));
            }
        }
        Ok(())
    }

    fn no_int8(&self, t: usize, what: &str) -> Result<(), String> {
        if matches!(self.t(t).elem, ElemType::I8 | ElemType::U8) && self.t(t).quant.is_some() {
            return Err(format!("the {what} is quantized int8 (not supported here)"));
        }
        Ok(())
    }

    /// EQUAL (71), NOT_EQUAL (72), LESS (58), LESS_EQUAL (63), GREATER (61), GREATER_EQUAL
    /// (62).
    pub(super) fn compare(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let code = match op.code {
            71 => 0,
            58 => 1,
            63 => 2,
            61 => 3,
            62 => 4,
            _ => 5,
        };
        let (a, b, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        self.expect(out, "output", ElemType::Bool, None)?;
        let e = self.t(a).elem;
        self.expect(b, "second input", e, None)?;
        self.no_int8(a, "first input")?;
        self.no_int8(b, "second input")?;
        self.broadcasts(&[a, b], out)?;
        let loc = self.loc(op);
        let (lhs, rhs) = (self.operand4(a, &loc)?, self.operand4(b, &loc)?);
        let attrs = vec![
            ("dtype", AttrSpec::Value(hostrt_compiler::ast::Attr::String(type_name(e)?.into()))),
            ("lhs", lhs),
            ("op", AttrSpec::Value(ints(&[code]))),
            ("output", AttrSpec::Region { tensor: out, dims: four(&self.t(out).shape)? }),
            ("rhs", rhs),
        ];
        self.push(op, "nn.compare", out, attrs);
        Ok(())
    }

    /// LOGICAL_AND (86), LOGICAL_OR (84), LOGICAL_NOT (87: an XOR with true).
    pub(super) fn logical(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let out = self.output(op)?;
        self.expect(out, "output", ElemType::Bool, None)?;
        let a = self.input(op, 0)?;
        self.expect(a, "input", ElemType::Bool, None)?;
        let loc = self.loc(op);
        let (code, rhs) = if op.code == 87 {
            if self.t(a).shape != self.t(out).shape {
                return Err("input and output shapes differ".into());
            }
            (2, AttrSpec::Value(dense("i1", &[1, 1, 1, 1], vec![1])))
        } else {
            let b = self.input(op, 1)?;
            self.expect(b, "second input", ElemType::Bool, None)?;
            self.broadcasts(&[a, b], out)?;
            (if op.code == 86 { 0 } else { 1 }, self.operand4(b, &loc)?)
        };
        self.broadcasts(&[a], out)?;
        let lhs = self.operand4(a, &loc)?;
        let attrs = vec![
            ("lhs", lhs),
            ("op", AttrSpec::Value(ints(&[code]))),
            ("output", AttrSpec::Region { tensor: out, dims: four(&self.t(out).shape)? }),
            ("rhs", rhs),
        ];
        self.push(op, "nn.logical", out, attrs);
        Ok(())
    }

    /// SELECT (64, operands of one shape) and SELECT_V2 (123, broadcasting).
    pub(super) fn select(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (c, x, y, out) = (self.input(op, 0)?, self.input(op, 1)?, self.input(op, 2)?, self.output(op)?);
        self.expect(c, "condition", ElemType::Bool, None)?;
        let e = self.t(out).elem;
        self.expect(x, "second input", e, None)?;
        self.expect(y, "third input", e, None)?;
        if e == ElemType::I8
            && (self.quant(x, "second input")? != self.quant(out, "output")?
                || self.quant(y, "third input")? != self.quant(out, "output")?)
        {
            return Err("int8 operands quantized unlike the output are not supported".into());
        }
        if op.code == 64 && [c, x, y].iter().any(|&t| self.t(t).shape != self.t(out).shape) {
            return Err("SELECT's operands differ in shape (SELECT_V2 broadcasts)".into());
        }
        self.broadcasts(&[c, x, y], out)?;
        let loc = self.loc(op);
        let (cond, lhs, rhs) = (self.operand4(c, &loc)?, self.operand4(x, &loc)?, self.operand4(y, &loc)?);
        let attrs = vec![
            ("cond", cond),
            ("dtype", AttrSpec::Value(hostrt_compiler::ast::Attr::String(type_name(e)?.into()))),
            ("lhs", lhs),
            ("output", AttrSpec::Region { tensor: out, dims: four(&self.t(out).shape)? }),
            ("rhs", rhs),
        ];
        self.push(op, "nn.where", out, attrs);
        Ok(())
    }

    /// CAST (53) between float32, int32, int64, int8, uint8 and bool.
    pub(super) fn cast(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.no_int8(x, "input")?;
        self.no_int8(out, "output")?;
        let (from, to) = (type_name(self.t(x).elem)?, type_name(self.t(out).elem)?);
        let str_attr = |s: &str| AttrSpec::Value(hostrt_compiler::ast::Attr::String(s.into()));
        let n = self.t(x).elements();
        if n != self.t(out).elements() {
            return Err("input and output sizes differ".into());
        }
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("from", str_attr(from)),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![n] }),
            ("output", AttrSpec::Region { tensor: out, dims: vec![n] }),
            ("to", str_attr(to)),
        ];
        self.push(op, "nn.cast", out, attrs);
        Ok(())
    }

    /// ARG_MAX (56) and ARG_MIN (79) along a constant axis; the importer-only
    /// `ext::SELECT_LAST` field asks for the last of equal values.
    pub(super) fn arg(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, a, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        self.no_int8(x, "input")?;
        let index = self.t(out).elem;
        if !matches!(index, ElemType::I32 | ElemType::I64) {
            return Err(format!("the output is {}, expected int32 or int64", index.name()));
        }
        let xs = self.t(x).shape.clone();
        let axis = match self.int_constant(a, "axis")?.as_slice() {
            [v] if (-(xs.len() as i64)..xs.len() as i64).contains(v) => {
                v.rem_euclid(xs.len() as i64) as usize
            }
            v => return Err(format!("axis {v:?} does not fit input {xs:?}")),
        };
        if xs[axis] == 0 || self.t(out).elements() * xs[axis] != self.t(x).elements() {
            return Err(format!(
                "output {:?} does not fit input {xs:?} reduced on axis {axis}",
                self.t(out).shape
            ));
        }
        let last = Options::of(op, 0).ok().and_then(|o| o.ext(ext::SELECT_LAST)).is_some_and(|v| v != 0.0);
        let code = i32::from(op.code == 79) + if last { 2 } else { 0 };
        let dims = [xs[..axis].iter().product::<usize>(), xs[axis], xs[axis + 1..].iter().product()];
        let str_attr = |s: &str| AttrSpec::Value(hostrt_compiler::ast::Attr::String(s.into()));
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("dims", AttrSpec::Value(ints(&dims.map(|d| d as i32)))),
            ("dtype", str_attr(type_name(self.t(x).elem)?)),
            ("index", str_attr(index.name())),
            ("input", AttrSpec::Offset(xr)),
            ("op", AttrSpec::Value(ints(&[code]))),
            ("output", AttrSpec::Offset(out)),
        ];
        self.push(op, "nn.arg_max", out, attrs);
        Ok(())
    }

    /// GATHER (36) along GatherOptions' axis (field 0; batch_dims, field 1, must be 0).
    pub(super) fn gather(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, super::super::options::kind::GATHER)?;
        if o.i32(1, 0)? != 0 {
            return Err("GATHER with batch_dims is not supported".into());
        }
        let (x, i, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        self.same_kind(x, out)?;
        let index = self.t(i).elem;
        if !matches!(index, ElemType::I32 | ElemType::I64) {
            return Err(format!("the indices are {}, expected int32 or int64", index.name()));
        }
        let xs = self.t(x).shape.clone();
        let r = xs.len() as i64;
        let axis = o.i32(0, 0)? as i64;
        if !(-r..r).contains(&axis) {
            return Err(format!("axis {axis} does not fit input {xs:?}"));
        }
        let axis = axis.rem_euclid(r) as usize;
        let count = self.t(i).elements();
        let want: Vec<usize> = [&xs[..axis], &self.t(i).shape[..], &xs[axis + 1..]].concat();
        if self.t(out).shape != want {
            return Err(format!("output {:?} is not {want:?}", self.t(out).shape));
        }
        let dims = [xs[..axis].iter().product::<usize>(), xs[axis], xs[axis + 1..].iter().product()];
        let fits = |v: usize| i32::try_from(v).map_err(|_| "the tensor is too large".to_string());
        let dims = [fits(dims[0])?, fits(dims[1])?, fits(dims[2])?];
        let loc = self.loc(op);
        let (xr, ir) = (self.read(x, &loc), self.read(i, &loc));
        let attrs = vec![
            ("dims", AttrSpec::Value(ints(&dims))),
            ("index", AttrSpec::Value(hostrt_compiler::ast::Attr::String(index.name().into()))),
            ("indices", AttrSpec::Region { tensor: ir, dims: vec![count] }),
            ("input", AttrSpec::Offset(xr)),
            ("output", AttrSpec::Offset(out)),
            ("size", AttrSpec::Value(ints(&[self.t(x).elem.size() as i32]))),
        ];
        self.push(op, "nn.gather", out, attrs);
        Ok(())
    }

    /// TILE (69) by constant multiples, and BROADCAST_TO (130): one strided copy reading
    /// the input with stride 0 along each repetition.
    pub(super) fn tile(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        let (xs, os) = (self.t(x).shape.clone(), self.t(out).shape.clone());
        let src = strides(&xs);
        let dst = strides(&os);
        let (mut dims, mut ss, mut ts) = (Vec::new(), Vec::new(), Vec::new());
        if op.code == 69 {
            let m = self.int_constant(self.input(op, 1)?, "multiples")?;
            let tiles =
                |k: usize| usize::try_from(m[k]).ok().and_then(|r| xs[k].checked_mul(r)) == Some(os[k]);
            if m.len() != xs.len() || !(0..xs.len()).all(tiles) {
                return Err(format!("multiples {m:?} do not tile {xs:?} into {os:?}"));
            }
            // Each axis as [repeat, element]: the repeat steps a whole input axis in the output.
            for k in 0..xs.len() {
                dims.extend([m[k] as usize, xs[k]]);
                ss.extend([0, src[k]]);
                ts.extend([dst[k] * xs[k] as i64, dst[k]]);
            }
        } else {
            if xs.len() > os.len() {
                return Err(format!("{xs:?} does not broadcast to {os:?}"));
            }
            let lead = os.len() - xs.len();
            for k in 0..os.len() {
                let d = if k < lead { 1 } else { xs[k - lead] };
                if d != os[k] && d != 1 {
                    return Err(format!("{xs:?} does not broadcast to {os:?}"));
                }
                dims.push(os[k]);
                ss.push(if d == 1 { 0 } else { src[k - lead] });
                ts.push(dst[k]);
            }
        }
        let c = Copy { src: x, from: 0, src_strides: &ss, dims: &dims, dst: out, to: 0, dst_strides: &ts };
        self.copy(op, c)
    }

    /// LOCAL_RESPONSE_NORMALIZATION (13): radius (field 0), bias (1), alpha (2), beta (3),
    /// and the importer-only `ext::RADIUS_HI`.
    pub(super) fn lrn(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, super::super::options::kind::LRN)?;
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.expect(x, "input", ElemType::F32, None)?;
        self.expect(out, "output", ElemType::F32, None)?;
        let xs = self.t(x).shape.clone();
        if xs != self.t(out).shape || xs.is_empty() {
            return Err(format!("input {xs:?} and output {:?} differ", self.t(out).shape));
        }
        let radius = o.i32(0, 0)?;
        let hi = o.ext(ext::RADIUS_HI).map_or(radius, |v| v as i32);
        if !(0..=1 << 16).contains(&radius) || !(0..=1 << 16).contains(&hi) {
            return Err(format!("radius {radius} is not in 0..=65536"));
        }
        let (bias, alpha, beta) = (o.f32(1, 0.0)?, o.f32(2, 0.0)?, o.f32(3, 0.0)?);
        let c = *xs.last().unwrap_or(&1);
        let rows = self.t(x).elements() / c.max(1);
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("input", AttrSpec::Region { tensor: xr, dims: vec![rows, c] }),
            ("output", AttrSpec::Region { tensor: out, dims: vec![rows, c] }),
            ("params", AttrSpec::Value(super::floats(&[alpha, beta, bias]))),
            ("radius", AttrSpec::Value(ints(&[radius, hi]))),
        ];
        self.push(op, "nn.lrn.f32", out, attrs);
        Ok(())
    }

    /// The zero point of 8-bit data `a` from optional input `i`: a constant, or the offset
    /// of the run-time one (`nn.matmul_integer`'s `lhs_zero` and `lhs_zero_at`).
    fn zero_of(&mut self, op: &OpInfo<'_>, a: usize, i: usize, loc: &str) -> Result<(i32, AttrSpec), String> {
        let none = || AttrSpec::Value(ints(&[-1]));
        Ok(match op.inputs.get(i).copied().flatten() {
            None => (0, none()),
            Some(z) if self.t(z).elements() != 1 || self.t(z).elem != self.t(a).elem => {
                return Err("the data's zero point is not one value of its type".into());
            }
            Some(z) => match self.t(self.arena(z)).data {
                Some(d) if self.t(a).elem == ElemType::I8 => (i32::from(d[0] as i8), none()),
                Some(d) => (i32::from(d[0]), none()),
                None => (0, AttrSpec::Offset(self.read(z, loc))),
            },
        })
    }

    /// The importer-only CONV_INTEGER: the exact int32 convolution of 8-bit NHWC data
    /// (less its zero point) by int16 weights (`nn.conv_integer`).
    pub(super) fn conv_integer(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (x, f, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let input_type = match self.t(x).elem {
            ElemType::U8 => "ui8",
            ElemType::I8 => "i8",
            e => return Err(format!("the data is {}, expected 8-bit", e.name())),
        };
        self.expect(x, "input", self.t(x).elem, Some(4))?;
        self.expect(f, "filter", ElemType::I16, Some(4))?;
        self.expect(out, "output", ElemType::I32, Some(4))?;
        let o = Options::of(op, 0)?;
        // The kernel checks the window's values (strides and dilations at least 1).
        let ext_or = |id: u16, default: f64| o.ext(id).unwrap_or(default) as i32;
        let window = [
            o.i32(2, 1)?,
            o.i32(1, 1)?,
            ext_or(ext::DILATION_H, 1.0),
            ext_or(ext::DILATION_W, 1.0),
            ext_or(ext::PAD_TOP, 0.0),
            ext_or(ext::PAD_LEFT, 0.0),
        ];
        let (xs, fs, os) = (self.t(x).shape.clone(), self.t(f).shape.clone(), self.t(out).shape.clone());
        let filter = dense("i16", &fs, self.constant(f, "filter")?.to_vec());
        let loc = self.loc(op);
        let (zero, zero_at) = self.zero_of(op, x, 2, &loc)?;
        let xr = self.read(x, &loc);
        let groups = xs[3] / fs[2].max(1);
        let attrs = vec![
            ("filter", AttrSpec::Value(filter)),
            ("groups", AttrSpec::Value(ints(&[groups as i32]))),
            ("input", AttrSpec::Region { tensor: xr, dims: xs }),
            ("input_type", AttrSpec::Value(hostrt_compiler::ast::Attr::String(input_type.into()))),
            ("input_zero", AttrSpec::Value(ints(&[zero]))),
            ("input_zero_at", zero_at),
            ("output", AttrSpec::Region { tensor: out, dims: os }),
            ("window", AttrSpec::Value(ints(&window))),
        ];
        self.push(op, "nn.conv_integer", out, attrs);
        Ok(())
    }

    /// The importer-only MATMUL_INTEGER: the exact int32 product of 8-bit data (less its
    /// zero point, a constant or a run-time value) and int16 weights (`nn.matmul_integer`).
    pub(super) fn matmul_integer(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let (a, b, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let lhs_type = match self.t(a).elem {
            ElemType::U8 => "ui8",
            ElemType::I8 => "i8",
            e => return Err(format!("the data is {}, expected 8-bit", e.name())),
        };
        self.expect(b, "weights", ElemType::I16, Some(2))?;
        self.expect(out, "output", ElemType::I32, None)?;
        let (xs, ws) = (self.t(a).shape.clone(), self.t(b).shape.clone());
        let depth = *xs.last().ok_or("the data is a scalar")?;
        let rows = self.t(a).elements() / depth.max(1);
        if ws[0] != depth || self.t(out).elements() != rows * ws[1] {
            return Err(format!(
                "data {xs:?} and weights {ws:?} do not give the output {:?}",
                self.t(out).shape
            ));
        }
        let weights = dense("i16", &ws, self.constant(b, "weights")?.to_vec());
        let loc = self.loc(op);
        let (zero, zero_at) = self.zero_of(op, a, 2, &loc)?;
        let xr = self.read(a, &loc);
        let attrs = vec![
            ("lhs", AttrSpec::Region { tensor: xr, dims: vec![rows, depth] }),
            ("lhs_type", AttrSpec::Value(hostrt_compiler::ast::Attr::String(lhs_type.into()))),
            ("lhs_zero", AttrSpec::Value(ints(&[zero]))),
            ("lhs_zero_at", zero_at),
            ("output", AttrSpec::Offset(out)),
            ("rhs", AttrSpec::Value(weights)),
        ];
        self.push(op, "nn.matmul_integer", out, attrs);
        Ok(())
    }
}
