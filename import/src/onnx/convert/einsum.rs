//! Einsum of the matrix-product shapes (`bij,bjk->bik`, `bhqd,bhkd->bhqk`, `ij->ji`,
//! `ij->i`): rewritten into the nodes it stands for, Transpose and Reshape around one
//! MatMul (or a ReduceSum and a Transpose for one operand), each translated as the model's
//! own would be, so constants fold and weights become fully connected layers.

use std::collections::HashMap;

use super::super::model::{AttrValue, Node, Tensor};
use super::layers::shape_of;
use super::{Attrs, Converter};
use crate::tflite::ops::ElemType;

/// One operand's letters, checked: lower or upper case, none repeated.
fn letters(term: &str) -> Result<Vec<char>, String> {
    let v: Vec<char> = term.trim().chars().collect();
    if term.contains("...") {
        return Err("Einsum with an ellipsis is not supported".into());
    }
    if let Some(c) = v.iter().find(|c| !c.is_ascii_alphabetic()) {
        return Err(format!("'{c}' is not a subscript letter"));
    }
    for (i, c) in v.iter().enumerate() {
        if v[..i].contains(c) {
            return Err(format!("subscript '{c}' repeats within '{term}' (diagonals are not supported)"));
        }
    }
    Ok(v)
}

impl Converter {
    /// `x` permuted to `order` (letters of `from`), if that moves anything.
    fn arrange(
        &mut self,
        n: &Node,
        x: String,
        from: &[char],
        order: &[char],
        tag: &str,
    ) -> Result<String, String> {
        if from == order {
            return Ok(x);
        }
        let perm: Vec<i64> =
            order.iter().map(|c| from.iter().position(|f| f == c).unwrap_or(0) as i64).collect();
        let out = format!("{}:{tag}", Self::out_name(n));
        self.part(n, "Transpose", vec![x], vec![("perm", AttrValue::Ints(perm))], &out)
    }

    /// `x` reshaped to `dims`.
    fn reshape_to(&mut self, n: &Node, x: String, dims: &[usize], tag: &str) -> Result<String, String> {
        let out = format!("{}:{tag}", Self::out_name(n));
        let shape = format!("{out}:shape");
        let values: Vec<f64> = dims.iter().map(|&d| d as f64).collect();
        self.values.insert(
            shape.clone(),
            super::Val::Const(Tensor::from_f64s(ElemType::I64, vec![dims.len()], &values)),
        );
        self.part(n, "Reshape", vec![x, shape], vec![], &out)
    }

    pub(super) fn einsum(&mut self, n: &Node) -> Result<(), String> {
        let eq = n.string("equation", "")?.replace(' ', "");
        let (lhs, out) = match eq.split_once("->") {
            Some((l, o)) => (l.to_string(), Some(o.to_string())),
            None => (eq.clone(), None),
        };
        let terms: Vec<Vec<char>> = lhs.split(',').map(letters).collect::<Result<_, _>>()?;
        if terms.len() != n.inputs.len() || !(1..=2).contains(&terms.len()) {
            return Err(format!(
                "equation '{eq}' for {} inputs: one or two operands are supported",
                n.inputs.len()
            ));
        }
        let all: Vec<char> = terms.concat();
        let out: Vec<char> = match out {
            Some(o) => letters(&o)?,
            None => {
                // Implicit: the letters that appear once, in alphabetical order.
                let mut once: Vec<char> =
                    all.iter().copied().filter(|c| all.iter().filter(|d| *d == c).count() == 1).collect();
                once.sort_unstable();
                once
            }
        };
        if let Some(c) = out.iter().find(|c| !all.contains(c)) {
            return Err(format!("output subscript '{c}' is in no operand"));
        }
        // Each letter's size, the same wherever it appears.
        let mut size: HashMap<char, usize> = HashMap::new();
        let names: Vec<String> = n.inputs.iter().map(|i| i.clone().unwrap_or_default()).collect();
        for (k, term) in terms.iter().enumerate() {
            let shape = shape_of(&self.val(n, k)?);
            if shape.len() != term.len() {
                return Err(format!(
                    "operand {k} {shape:?} does not have the {} axes of '{}'",
                    term.len(),
                    term.iter().collect::<String>()
                ));
            }
            for (c, &d) in term.iter().zip(&shape) {
                if *size.entry(*c).or_insert(d) != d {
                    return Err(format!("subscript '{c}' is {d} in operand {k} but {} elsewhere", size[c]));
                }
            }
        }
        let dims = |v: &[char]| v.iter().map(|c| size[c]).collect::<Vec<usize>>();
        let prod = |v: &[char]| v.iter().map(|c| size[c]).product::<usize>();
        let result = Self::out_name(n);
        let y = if terms.len() == 1 {
            // A permutation, after summing the letters the output drops.
            let a = &terms[0];
            let summed: Vec<i64> = (0..a.len()).filter(|&k| !out.contains(&a[k])).map(|k| k as i64).collect();
            let (x, kept): (String, Vec<char>) = if summed.is_empty() {
                (names[0].clone(), a.clone())
            } else {
                let axes = format!("{result}:axes");
                let values: Vec<f64> = summed.iter().map(|&v| v as f64).collect();
                self.values.insert(
                    axes.clone(),
                    super::Val::Const(Tensor::from_f64s(ElemType::I64, vec![summed.len()], &values)),
                );
                let s = self.part(
                    n,
                    "ReduceSum",
                    vec![names[0].clone(), axes],
                    vec![("keepdims", AttrValue::Int(0))],
                    &format!("{result}:sum"),
                )?;
                (s, a.iter().copied().filter(|c| out.contains(c)).collect())
            };
            self.arrange(n, x, &kept, &out, "out")?
        } else {
            let (a, b) = (&terms[0], &terms[1]);
            let batch: Vec<char> = out.iter().copied().filter(|c| a.contains(c) && b.contains(c)).collect();
            let left: Vec<char> = out.iter().copied().filter(|c| a.contains(c) && !b.contains(c)).collect();
            let right: Vec<char> = out.iter().copied().filter(|c| b.contains(c) && !a.contains(c)).collect();
            let inner: Vec<char> = a.iter().copied().filter(|c| b.contains(c) && !out.contains(c)).collect();
            if let Some(c) = all.iter().find(|c| !out.contains(c) && !inner.contains(c)) {
                return Err(format!("subscript '{c}' is summed within one operand (not supported)"));
            }
            let order_a = [&batch[..], &left, &inner].concat();
            let order_b = [&batch[..], &inner, &right].concat();
            let xa = self.arrange(n, names[0].clone(), a, &order_a, "a")?;
            // Without batch letters the product is 2-D, so a constant right operand becomes
            // a fully connected layer's weights.
            let three = |p: [usize; 3]| if batch.is_empty() { p[1..].to_vec() } else { p.to_vec() };
            let xa = self.reshape_to(n, xa, &three([prod(&batch), prod(&left), prod(&inner)]), "a3")?;
            let xb = self.arrange(n, names[1].clone(), b, &order_b, "b")?;
            let xb = self.reshape_to(n, xb, &three([prod(&batch), prod(&inner), prod(&right)]), "b3")?;
            let m = self.part(n, "MatMul", vec![xa, xb], vec![], &format!("{result}:matmul"))?;
            let natural = [&batch[..], &left, &right].concat();
            let m = self.reshape_to(n, m, &dims(&natural), "natural")?;
            self.arrange(n, m, &natural, &out, "out")?
        };
        let v = self.val(&Node { inputs: vec![Some(y)], ..n.clone() }, 0)?;
        if let Some(Some(name)) = n.outputs.first() {
            self.values.insert(name.clone(), v);
        }
        Ok(())
    }
}
