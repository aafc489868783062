//! BATCH_MATMUL: `nn.batch_matmul.*` with the operands' strides computed here (adj_x and
//! adj_y transpose by strides, a batch dim of 1 broadcasts with stride 0). int8 parameters
//! are TensorFlow Lite Micro's: per-tensor `lhs scale · rhs scale / output scale`.

use hostrt_dsp::quantize_multiplier;

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, ints};

impl Lowerer<'_, '_> {
    pub(super) fn batch_matmul(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::BATCH_MATMUL)?;
        let (adj_x, adj_y) = (o.bool(0)?, o.bool(1)?);
        let (x, y, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let elem = self.t(out).elem;
        if !matches!(elem, ElemType::F32 | ElemType::I8) {
            return Err(format!("{} BATCH_MATMUL is not supported", elem.name()));
        }
        self.expect(x, "lhs", elem, None)?;
        self.expect(y, "rhs", elem, None)?;
        let (xs, ys, os) = (self.t(x).shape.clone(), self.t(y).shape.clone(), self.t(out).shape.clone());
        if xs.len() < 2 || ys.len() < 2 || xs.len() > 5 || ys.len() > 5 {
            return Err(format!("operands {xs:?} and {ys:?} must have 2 to 5 dims"));
        }
        // Rows and columns of each operand as stored, and as multiplied.
        let (xr, xc) = (xs[xs.len() - 2], xs[xs.len() - 1]);
        let (yr, yc) = (ys[ys.len() - 2], ys[ys.len() - 1]);
        let (m, k) = if adj_x { (xc, xr) } else { (xr, xc) };
        let (k2, n) = if adj_y { (yc, yr) } else { (yr, yc) };
        if k != k2 {
            return Err(format!("depths differ: {xs:?} and {ys:?} (adj_x {adj_x}, adj_y {adj_y})"));
        }
        // Batch dims, right-aligned to three, broadcast.
        let batch = |s: &[usize]| {
            let mut b = vec![1usize; 3 - (s.len() - 2)];
            b.extend_from_slice(&s[..s.len() - 2]);
            b
        };
        let (xb, yb) = (batch(&xs), batch(&ys));
        let mut ob = Vec::new();
        for i in 0..3 {
            if xb[i] != yb[i] && xb[i] != 1 && yb[i] != 1 {
                return Err(format!("batch dims of {xs:?} and {ys:?} do not broadcast"));
            }
            ob.push(xb[i].max(yb[i]));
        }
        let mut want: Vec<usize> = ob.clone();
        want.extend([m, n]);
        let rank = os.len();
        if os.len() < 2 || want[5 - rank..] != os[..] || want[..5 - rank].iter().any(|&d| d != 1) {
            return Err(format!("the product is {want:?}, not the output's {os:?}"));
        }
        // Element strides of an operand: its batch dims (0 where broadcast), then rows and
        // columns as multiplied.
        let strides = |b: &[usize], r: usize, c: usize, adj: bool| -> Vec<i32> {
            let mut s = vec![0i32; 3];
            let mut step = r * c;
            for i in (0..3).rev() {
                if b[i] != 1 {
                    s[i] = step as i32;
                }
                step *= b[i];
            }
            let (row, col) = (c as i32, 1);
            s.extend(if adj { [col, row] } else { [row, col] });
            s
        };
        let sx = strides(&xb, xr, xc, adj_x);
        let sy = strides(&yb, yr, yc, adj_y);
        let dims: Vec<i32> = ob.iter().chain(&[m, n, k]).map(|&d| d as i32).collect();
        let loc = self.loc(op);
        let (xa, ya) = (self.read(x, &loc), self.read(y, &loc));
        let mut attrs = vec![
            ("dims", AttrSpec::Value(ints(&dims))),
            ("lhs", AttrSpec::Strided { tensor: xa, start: 0, strides: sx }),
            ("output", AttrSpec::Offset(out)),
        ];
        if elem == ElemType::I8 {
            let ((s1, z1), (s2, z2), (so, zo)) =
                (self.quant(x, "lhs")?, self.quant(y, "rhs")?, self.quant(out, "output")?);
            let (mult, shift) = quantize_multiplier(f64::from(s1) * f64::from(s2) / f64::from(so));
            attrs.push(("quant", AttrSpec::Value(ints(&[z1, z2, zo, mult, shift, -128, 127]))));
        }
        attrs.push(("rhs", AttrSpec::Strided { tensor: ya, start: 0, strides: sy }));
        self.push(op, &format!("nn.batch_matmul.{}", elem.name()), out, attrs);
        Ok(())
    }
}
