//! Operators that compute no arithmetic, at run time: comparisons, logic, Where, Cast,
//! ArgMax/ArgMin, Gather, Tile and Expand, and LRN. Each becomes one TensorFlow Lite
//! operator over values stored as ONNX orders them (docs/onnx.md); the shared lowering
//! turns it into `nn.compare`, `nn.logical`, `nn.where`, `nn.cast`, `nn.arg_max`,
//! `nn.gather`, a strided copy or `nn.lrn.f32`.

use super::super::model::{Node, checked_elements};
use super::{Attrs, Converter, Layout, Rt, axis, broadcast};
use crate::tflite::ops::ElemType;
use crate::tflite::options::{ext, kind};

impl Converter {
    /// Input `i` as a runtime value stored as ONNX orders it.
    pub(super) fn plain_input(&mut self, n: &Node, i: usize) -> Result<Rt, String> {
        let v = self.rt(n, i)?;
        Ok(self.plain(&v))
    }

    /// A new output 0 of `n` (ONNX order).
    pub(super) fn plain_output(&mut self, n: &Node, elem: ElemType, dims: Vec<usize>) -> Result<Rt, String> {
        checked_elements(&dims)?;
        Ok(self.new_rt(&Self::out_name(n), elem, dims, Layout::Plain))
    }

    /// Equal, Less, LessOrEqual, Greater, GreaterOrEqual, And, Or, Xor and Not.
    pub(super) fn logic(&mut self, n: &Node) -> Result<(), String> {
        let code = match n.op_type.as_str() {
            "Equal" => 71,
            "Less" => 58,
            "LessOrEqual" => 63,
            "Greater" => 61,
            "GreaterOrEqual" => 62,
            "And" => 86,
            "Or" => 84,
            // Xor of two booleans is their inequality.
            "Xor" => 72,
            _ => 87,
        };
        let a = self.plain_input(n, 0)?;
        let (inputs, dims) = if code == 87 {
            (vec![a.t], a.shape.clone())
        } else {
            let b = self.plain_input(n, 1)?;
            if a.elem != b.elem {
                return Err(format!("operands of {} and {}", a.elem.name(), b.elem.name()));
            }
            let dims = broadcast(&a.shape, &b.shape)?;
            (vec![a.t, b.t], dims)
        };
        if matches!(code, 84 | 86 | 87 | 72) && n.op_type != "Equal" && a.elem != ElemType::Bool {
            return Err(format!("{} of {} is not supported (bool is)", n.op_type, a.elem.name()));
        }
        let out = self.plain_output(n, ElemType::Bool, dims)?;
        self.emit(code, 0, vec![], inputs, vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// Where(condition, x, y): SELECT_V2.
    pub(super) fn where_op(&mut self, n: &Node) -> Result<(), String> {
        let (c, x, y) = (self.plain_input(n, 0)?, self.plain_input(n, 1)?, self.plain_input(n, 2)?);
        if c.elem != ElemType::Bool || x.elem != y.elem {
            return Err(format!(
                "condition {} and values {} and {}: expected bool and one type",
                c.elem.name(),
                x.elem.name(),
                y.elem.name()
            ));
        }
        let dims = broadcast(&broadcast(&c.shape, &x.shape)?, &y.shape)?;
        let out = self.plain_output(n, x.elem, dims)?;
        self.emit(123, 0, vec![], vec![c.t, x.t, y.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// Cast at run time: the same type passes through; others are an `nn.cast`.
    pub(super) fn cast(&mut self, n: &Node) -> Result<(), String> {
        let x = self.rt(n, 0)?;
        let to = super::super::model::elem_type(n.int("to", 0)? as i32)?;
        if to == x.elem {
            self.set(n, 0, x);
            return Ok(());
        }
        if self.from_u8.contains(&x.t) || x.elem == ElemType::I16 || to == ElemType::I16 {
            return Err(format!("a run-time cast from {} to {} is not supported", x.elem.name(), to.name()));
        }
        // Element-wise: the layout stays.
        let out = self.new_rt(&Self::out_name(n), to, x.shape.clone(), x.layout);
        self.emit(53, 0, vec![], vec![x.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// ArgMax and ArgMin (int64 indices).
    pub(super) fn arg(&mut self, n: &Node) -> Result<(), String> {
        let x = self.plain_input(n, 0)?;
        if x.shape.is_empty() {
            return Err("the input is a scalar".into());
        }
        let a = axis(n.int("axis", 0)?, x.shape.len())?;
        let keep = n.int("keepdims", 1)? != 0;
        let mut dims = x.shape.clone();
        if keep {
            dims[a] = 1;
        } else {
            dims.remove(a);
        }
        let out = self.plain_output(n, ElemType::I64, dims)?;
        let at = self.i32_tensor(&format!("{}:axis", Self::out_name(n)), &[a as i64]);
        let last = n.int("select_last_index", 0)? != 0;
        let fields = if last { vec![(ext::SELECT_LAST, 1.0)] } else { vec![] };
        self.emit(if n.op_type == "ArgMin" { 79 } else { 56 }, 0, fields, vec![x.t, at], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// Gather along `axis` with indices read at run time (or a constant placed in the
    /// graph).
    pub(super) fn gather(&mut self, n: &Node) -> Result<(), String> {
        let x = self.plain_input(n, 0)?;
        let i = self.plain_input(n, 1)?;
        if !matches!(i.elem, ElemType::I32 | ElemType::I64) {
            return Err(format!("indices of {} (int32 or int64 are supported)", i.elem.name()));
        }
        if x.shape.is_empty() {
            return Err("the data is a scalar".into());
        }
        let a = axis(n.int("axis", 0)?, x.shape.len())?;
        let dims: Vec<usize> = [&x.shape[..a], &i.shape[..], &x.shape[a + 1..]].concat();
        let out = self.plain_output(n, x.elem, dims)?;
        self.emit(36, kind::GATHER, vec![(0, a as f64)], vec![x.t, i.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// Tile by constant repeats: one TILE per repeated axis (each a strided copy of at
    /// most three dims).
    pub(super) fn tile(&mut self, n: &Node) -> Result<(), String> {
        let mut x = self.plain_input(n, 0)?;
        let reps = self.constant(n, 1, "repeats")?.i64s();
        if reps.len() != x.shape.len() || reps.iter().any(|&r| !(0..=1 << 24).contains(&r)) {
            return Err(format!("repeats {reps:?} do not fit input {:?}", x.shape));
        }
        let name = Self::out_name(n);
        let repeated: Vec<usize> = (0..reps.len()).filter(|&k| reps[k] != 1).collect();
        for (j, &k) in repeated.iter().enumerate() {
            let mut dims = x.shape.clone();
            dims[k] *= reps[k] as usize;
            let step = if j + 1 == repeated.len() { name.clone() } else { format!("{name}:axis{k}") };
            checked_elements(&dims)?;
            let out = self.new_rt(&step, x.elem, dims, Layout::Plain);
            let mut m = vec![1; reps.len()];
            m[k] = reps[k];
            let m = self.i32_tensor(&format!("{step}:repeats"), &m);
            self.emit(69, 0, vec![], vec![x.t, m], vec![out.t]);
            x = out;
        }
        self.set(n, 0, x);
        Ok(())
    }

    /// Expand of a runtime value to a constant shape: BROADCAST_TO.
    pub(super) fn expand(&mut self, n: &Node) -> Result<(), String> {
        let x = self.plain_input(n, 0)?;
        let shape = self.constant(n, 1, "shape")?.i64s();
        let shape: Vec<usize> = shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| format!("shape {shape:?} has a negative dimension")))
            .collect::<Result<_, _>>()?;
        let dims = broadcast(&x.shape, &shape)?;
        let out = self.plain_output(n, x.elem, dims.clone())?;
        let s = self.i32_tensor(
            &format!("{}:shape", Self::out_name(n)),
            &dims.iter().map(|&d| d as i64).collect::<Vec<_>>(),
        );
        self.emit(130, 0, vec![], vec![x.t, s], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }

    /// LRN across the channels of an NCHW value (stored NHWC, channels last).
    pub(super) fn lrn(&mut self, n: &Node) -> Result<(), String> {
        let x = self.image(n)?;
        if x.elem != ElemType::F32 {
            return Err(format!("LRN of {} is not supported (float32 is)", x.elem.name()));
        }
        let size = n.int("size", 0)?;
        if !(1..=1 << 16).contains(&size) {
            return Err(format!("size {size} is not in 1..=65536"));
        }
        let (alpha, beta, bias) = (n.float("alpha", 1e-4)?, n.float("beta", 0.75)?, n.float("bias", 1.0)?);
        // ONNX sums channels c − ⌊(size−1)/2⌋ ..= c + ⌈(size−1)/2⌉ and scales by alpha/size.
        let (lo, hi) = ((size - 1) / 2, (size - 1) - (size - 1) / 2);
        let out = self.new_rt(&Self::out_name(n), ElemType::F32, x.shape.clone(), Layout::Nhwc);
        let fields = vec![
            (0, lo as f64),
            (1, f64::from(bias)),
            (2, f64::from(alpha) / size as f64),
            (3, f64::from(beta)),
            (ext::RADIUS_HI, hi as f64),
        ];
        self.emit(13, kind::LRN, fields, vec![x.t], vec![out.t]);
        self.set(n, 0, out);
        Ok(())
    }
}
