//! QLinearConv and QLinearMatMul (onnxruntime's QOperator form): each is the QDQ group it
//! abbreviates, `DequantizeLinear` of its data, weights and bias, the float Conv or MatMul,
//! and a `QuantizeLinear` by its output parameters, and runs as the same int8 layer
//! (`qdq.rs`, docs/onnx.md).

use super::super::model::{AttrValue, Node, Tensor};
use super::{Converter, Val};
use crate::tflite::ops::ElemType;

impl Converter {
    pub(super) fn qlinear(&mut self, n: &Node) -> Result<(), String> {
        let conv = n.op_type == "QLinearConv";
        let name = Self::out_name(n);
        let input = |i: usize| n.inputs.get(i).cloned().flatten();
        let required = |i: usize| input(i).ok_or_else(|| format!("input {i} is missing"));
        // Data (0, 1, 2) per tensor; weights (3, 4, 5) per output channel: axis 0 of a
        // filter, axis 1 (columns) of a matrix.
        let x = format!("{name}:x");
        let deq = Self::made_up(
            n,
            "DequantizeLinear",
            vec![Some(required(0)?), Some(required(1)?), input(2)],
            &x,
            vec![],
        );
        self.dequantize_linear(&deq)?;
        let w = format!("{name}:w");
        let axis = AttrValue::Int(if conv { 0 } else { 1 });
        let deq = Self::made_up(
            n,
            "DequantizeLinear",
            vec![Some(required(3)?), Some(required(4)?), input(5)],
            &w,
            vec![("axis", axis)],
        );
        self.dequantize_linear(&deq)?;
        if let Some(d) = self.deq.get(&w)
            && d.zp.iter().any(|&z| z != 0)
        {
            return Err(format!(
                "weights with zero points {:?} (held as int8: asymmetric) are not supported: the int8 kernels take \
                 symmetric weights (zero point 0 for int8, 128 for uint8)",
                d.zp
            ));
        }
        let mut inputs = vec![Some(x), Some(w)];
        if conv && input(8).is_some() {
            // The int32 bias at scale x_scale · w_scale[c], zero point 0.
            let xs = self.constant(n, 1, "data scale")?.f64s();
            let ws = self.constant(n, 4, "weight scale")?.f64s();
            let [xs] = xs.as_slice() else { return Err("the data scale is not one value".into()) };
            let scales: Vec<f64> = ws.iter().map(|&s| f64::from((*xs as f32) * (s as f32))).collect();
            let sname = format!("{name}:bias_scale");
            let t = Tensor::from_f64s(ElemType::F32, vec![scales.len()], &scales);
            self.values.insert(sname.clone(), Val::Const(t));
            let b = format!("{name}:b");
            let deq = Self::made_up(
                n,
                "DequantizeLinear",
                vec![input(8), Some(sname), None],
                &b,
                vec![("axis", AttrValue::Int(0))],
            );
            self.dequantize_linear(&deq)?;
            inputs.push(Some(b));
        }
        let float = format!("{name}:float");
        let op = if conv { "Conv" } else { "MatMul" };
        let m = Node { op_type: op.into(), inputs, outputs: vec![Some(float.clone())], ..n.clone() };
        let q = Self::made_up(
            n,
            "QuantizeLinear",
            vec![Some(float), Some(required(6)?), input(7)],
            &name,
            vec![],
        );
        let (s, z, u8) = self.quantize_params(&q)?;
        match self.int8_layer(&m, (s, z), 0, &name)? {
            Some(y) => {
                self.finish_group(n, vec![], y, u8);
                Ok(())
            }
            None => Err(format!(
                "{} of this form is not supported (int8 data computed in the graph, or uint8 data \
                 from a QuantizeLinear, constant weights and an int32 bias are)",
                n.op_type
            )),
        }
    }
}
