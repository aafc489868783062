//! A verified TensorFlow Lite model read into the importer's graph: every index, size and
//! quantization array checked, constant data borrowed from the model bytes.

use super::ops::{ElemType, builtin_name};
use super::schema;
use crate::error::ImportError;

/// Quantization of a tensor: one scale and zero point, or one per slice along `axis`.
#[derive(Clone, Debug, PartialEq)]
pub struct Quant {
    pub scale: Vec<f32>,
    pub zero_point: Vec<i64>,
    pub axis: usize,
}

impl Quant {
    /// The per-tensor scale and zero point (the first, for per-axis parameters).
    pub fn single(&self) -> (f32, i32) {
        // Validated non-empty with zero points in i32 range by `read_quant`.
        (self.scale[0], self.zero_point[0] as i32)
    }
}

/// A tensor of the graph.
#[derive(Clone, Debug)]
pub struct TensorInfo<'a> {
    pub name: String,
    pub elem: ElemType,
    pub shape: Vec<usize>,
    /// Constant contents (little-endian, row-major), borrowed from the model bytes.
    pub data: Option<&'a [u8]>,
    pub quant: Option<Quant>,
    /// A variable tensor (`is_variable`): state an operator keeps between invocations. The
    /// reader admits one only without initial data and only as an LSTM state input (which
    /// the importer starts at zero for every call).
    pub variable: bool,
    /// Holds a channels-first value of the source model (a translated ONNX graph's NCHW
    /// tensor) channels-last, with the channel dimension moved to the end.
    pub channels_last: bool,
}

impl TensorInfo<'_> {
    /// Number of elements.
    pub fn elements(&self) -> usize {
        self.shape.iter().product()
    }

    /// Size of the data in bytes.
    pub fn bytes(&self) -> usize {
        self.elements() * self.elem.size()
    }
}

/// An operator of the graph, in execution order.
#[derive(Clone, Debug)]
pub struct OpInfo<'a> {
    /// Position in the subgraph's operator list.
    pub index: usize,
    pub code: i32,
    pub name: String,
    /// Input tensors; `None` for an omitted optional input (index -1).
    pub inputs: Vec<Option<usize>>,
    pub outputs: Vec<usize>,
    /// Tensors that only carry the quantization of values inside the operator (an integer
    /// LSTM's gates and hidden state).
    pub intermediates: Vec<usize>,
    pub options_type: u8,
    pub options: OpOptions<'a>,
    /// For an operator translated from another format (ONNX): the source node's index and
    /// name, which locations and messages name instead of the operator's position.
    pub node: Option<(usize, String)>,
}

/// Where an operator's options come from.
#[derive(Clone, Debug)]
pub enum OpOptions<'a> {
    /// None in the model: every field reads as its default.
    Absent,
    /// The model's options table.
    Table(flatbuffers::Table<'a>),
    /// Fields set by a translating importer (ONNX), by field id; absent ids read as their
    /// defaults. Ids past the schema's are importer-only (`options::ext`).
    Fields(Vec<(u16, f64)>),
}

impl OpInfo<'_> {
    /// `op#12 CONV_2D`, or `node#3 Conv` for a translated node: the layer's location prefix.
    pub fn label(&self) -> String {
        match &self.node {
            Some((n, _)) => format!("node#{n} {}", self.name),
            None => format!("op#{} {}", self.index, self.name),
        }
    }

    /// The operator's error prefix: `op #12 CONV_2D`, or `node #3 Conv 'conv1'`.
    pub fn error(&self, message: String) -> ImportError {
        match &self.node {
            Some((n, name)) if name.is_empty() => {
                ImportError::model(format!("node #{n} {}: {message}", self.name))
            }
            Some((n, name)) => ImportError::model(format!("node #{n} {} '{name}': {message}", self.name)),
            None => ImportError::op(self.index, &self.name, message),
        }
    }
}

/// A model's main subgraph.
#[derive(Clone, Debug)]
pub struct Graph<'a> {
    pub tensors: Vec<TensorInfo<'a>>,
    pub ops: Vec<OpInfo<'a>>,
    pub inputs: Vec<usize>,
    pub outputs: Vec<usize>,
    pub description: String,
}

/// Largest tensor the importer accepts, in elements (keeps every size computation in range).
const MAX_ELEMENTS: usize = 1 << 31;

impl<'a> Graph<'a> {
    /// Verifies `bytes` and reads subgraph 0.
    pub fn read(bytes: &'a [u8]) -> Result<Graph<'a>, ImportError> {
        if bytes.len() < 8 {
            return Err(ImportError::model(format!(
                "{} bytes is too short for a TensorFlow Lite model",
                bytes.len()
            )));
        }
        if &bytes[4..8] != b"TFL3" {
            return Err(ImportError::model(
                "missing the TFL3 file identifier: not a TensorFlow Lite model".into(),
            ));
        }
        let model =
            schema::root(bytes).map_err(|e| ImportError::model(format!("malformed FlatBuffer: {e}")))?;
        if model.version() != 3 {
            return Err(ImportError::model(format!("schema version {} (only 3 is read)", model.version())));
        }
        let subgraphs = model.subgraphs().ok_or_else(|| ImportError::model("no subgraphs".into()))?;
        if subgraphs.is_empty() {
            return Err(ImportError::model("no subgraphs".into()));
        }
        let sg = subgraphs.get(0);
        let buffers = model.buffers();
        let codes = model.operator_codes();

        let mut tensors = Vec::new();
        for (i, t) in sg.tensors().into_iter().flatten().enumerate() {
            tensors.push(read_tensor(bytes, i, t, buffers)?);
        }
        let tensor_index = |what: &str, v: i32, optional: bool| -> Result<Option<usize>, String> {
            if v == -1 && optional {
                return Ok(None);
            }
            usize::try_from(v)
                .ok()
                .filter(|&i| i < tensors.len())
                .map(Some)
                .ok_or_else(|| format!("{what} tensor index {v} is not in 0..{}", tensors.len()))
        };
        let list = |what: &str, v: Option<flatbuffers::Vector<'_, i32>>| -> Result<Vec<usize>, ImportError> {
            v.into_iter()
                .flatten()
                .map(|i| tensor_index(what, i, false).map(|t| t.unwrap_or(0)))
                .collect::<Result<_, _>>()
                .map_err(ImportError::model)
        };
        let inputs = list("subgraph input", sg.inputs())?;
        let outputs = list("subgraph output", sg.outputs())?;

        let mut ops = Vec::new();
        for (index, op) in sg.operators().into_iter().flatten().enumerate() {
            let code_index = op.opcode_index() as usize;
            let code =
                codes.filter(|c| code_index < c.len()).map(|c| c.get(code_index)).ok_or_else(|| {
                    ImportError::model(format!("op #{index}: opcode index {code_index} is out of range"))
                })?;
            // TensorFlow Lite's GetBuiltinCode: the larger of the old 8-bit and new 32-bit codes.
            let builtin = i32::from(code.deprecated_builtin_code()).max(code.builtin_code());
            let name = if builtin == 32 {
                format!("CUSTOM({})", code.custom_code().unwrap_or("?"))
            } else {
                builtin_name(builtin)
            };
            let at = |e: String| ImportError::op(index, &name, e);
            let mut op_inputs = Vec::new();
            for v in op.inputs().into_iter().flatten() {
                op_inputs.push(tensor_index("input", v, true).map_err(at)?);
            }
            // Outputs and intermediates: tensors that must be there (no optional -1).
            let required = |what: &str, list: Option<flatbuffers::Vector<'_, i32>>| {
                let index = |v| tensor_index(what, v, false).map(|t| t.unwrap_or(0)).map_err(at);
                list.into_iter().flatten().map(index).collect::<Result<Vec<_>, _>>()
            };
            let op_outputs = required("output", op.outputs())?;
            let intermediates = required("intermediate", op.intermediates())?;
            let options = op.builtin_options().map_or(OpOptions::Absent, |o| OpOptions::Table(o.table()));
            ops.push(OpInfo {
                index,
                code: builtin,
                name,
                inputs: op_inputs,
                outputs: op_outputs,
                intermediates,
                options_type: op.builtin_options_type(),
                options,
                node: None,
            });
        }
        check_variables(&tensors, &ops, &inputs, &outputs)?;
        Ok(Graph {
            tensors,
            ops,
            inputs,
            outputs,
            description: model.description().unwrap_or("").to_string(),
        })
    }

    /// The tensor's name for messages.
    pub fn tensor_name(&self, t: usize) -> &str {
        self.tensors.get(t).map_or("?", |t| t.name.as_str())
    }
}

/// The UNIDIRECTIONAL_SEQUENCE_LSTM operator and its state inputs (output state, cell state).
const LSTM: (i32, [usize; 2]) = (44, [18, 19]);

/// Every variable tensor is an LSTM state input only: not a subgraph input or output, no
/// operator's output, no other operand (its value is then the zero state the LSTM kernel
/// starts from, not arena contents).
fn check_variables(
    tensors: &[TensorInfo<'_>],
    ops: &[OpInfo<'_>],
    inputs: &[usize],
    outputs: &[usize],
) -> Result<(), ImportError> {
    let at = |t: usize, m: String| ImportError::tensor(t, &tensors[t].name, m);
    let variable = |t: &usize| tensors.get(*t).is_some_and(|i| i.variable);
    if let Some(&t) = inputs.iter().chain(outputs).find(|t| variable(t)) {
        return Err(at(t, "a variable tensor cannot be a model input or output".into()));
    }
    for op in ops {
        if let Some(&t) = op.outputs.iter().find(|t| variable(t)) {
            return Err(ImportError::op(op.index, &op.name, format!("writes variable tensor {t}")));
        }
        for (k, t) in op.inputs.iter().enumerate() {
            if let Some(t) = t.filter(variable)
                && !(op.code == LSTM.0 && LSTM.1.contains(&k))
            {
                return Err(ImportError::op(
                    op.index,
                    &op.name,
                    format!(
                        "input {k} is variable tensor {t} '{}': variable tensors are supported only as \
                         the state inputs of UNIDIRECTIONAL_SEQUENCE_LSTM",
                        tensors[t].name
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn read_tensor<'a>(
    bytes: &'a [u8],
    i: usize,
    t: schema::Tensor<'a>,
    buffers: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<schema::Buffer<'a>>>>,
) -> Result<TensorInfo<'a>, ImportError> {
    let name = t.name().unwrap_or("").to_string();
    let at = |m: String| ImportError::tensor(i, &name, m);
    let elem = ElemType::from_code(t.tensor_type())
        .ok_or_else(|| at(format!("element type {} is not supported", t.tensor_type())))?;
    let mut shape = Vec::new();
    for d in t.shape().into_iter().flatten() {
        shape.push(
            usize::try_from(d)
                .map_err(|_| at(format!("dimension {d} is negative (dynamic shapes are not supported)")))?,
        );
    }
    let elements = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| at(format!("shape {shape:?} has more than 2^31 elements")))?;
    if t.sparsity().is_some() {
        return Err(at("sparse tensors are not supported".into()));
    }
    let b = t.buffer() as usize;
    let data = if b == 0 {
        None
    } else {
        let buffer = buffers
            .filter(|v| b < v.len())
            .map(|v| v.get(b))
            .ok_or_else(|| at(format!("buffer index {b} is out of range")))?;
        let data = match buffer.data() {
            Some(d) => Some(d.bytes()),
            None if buffer.offset() > 1 => {
                let (o, s) = (buffer.offset(), buffer.size());
                let range = usize::try_from(o)
                    .ok()
                    .zip(usize::try_from(s).ok())
                    .and_then(|(o, s)| Some(o..o.checked_add(s)?));
                Some(range.and_then(|r| bytes.get(r)).ok_or_else(|| {
                    at(format!(
                        "buffer {b} at offset {o}, {s} bytes, is outside the {}-byte file",
                        bytes.len()
                    ))
                })?)
            }
            None => None,
        };
        data.filter(|d| !d.is_empty())
    };
    if let Some(d) = data
        && d.len() != elements * elem.size()
    {
        return Err(at(format!(
            "buffer {b} holds {} bytes, but a {} tensor of shape {shape:?} needs {}",
            d.len(),
            elem.name(),
            elements * elem.size()
        )));
    }
    let variable = t.is_variable();
    if variable && data.is_some() {
        return Err(at("variable tensors with initial values are not supported".into()));
    }
    let quant = match t.quantization() {
        Some(q) => read_quant(q, &shape).map_err(at)?,
        None => None,
    };
    Ok(TensorInfo { name, elem, shape, data, quant, variable, channels_last: false })
}

fn read_quant(q: schema::QuantizationParameters<'_>, shape: &[usize]) -> Result<Option<Quant>, String> {
    let scale: Vec<f32> = q.scale().into_iter().flatten().collect();
    let zero_point: Vec<i64> = q.zero_point().into_iter().flatten().collect();
    if q.details_type() != 0 {
        return Err("custom or blockwise quantization is not supported".into());
    }
    if scale.is_empty() && zero_point.is_empty() {
        return Ok(None);
    }
    if scale.len() != zero_point.len() {
        return Err(format!("{} scales but {} zero points", scale.len(), zero_point.len()));
    }
    if let Some(s) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(format!("scale {s} is not positive and finite"));
    }
    if let Some(z) = zero_point.iter().find(|z| i32::try_from(**z).is_err()) {
        return Err(format!("zero point {z} is out of range"));
    }
    let axis =
        usize::try_from(q.quantized_dimension()).map_err(|_| "negative quantized dimension".to_string())?;
    if scale.len() > 1 {
        match shape.get(axis) {
            Some(&d) if d == scale.len() => {}
            Some(&d) => {
                return Err(format!("{} per-axis scales for dimension {axis} of size {d}", scale.len()));
            }
            None => return Err(format!("quantized dimension {axis} is outside shape {shape:?}")),
        }
    }
    Ok(Some(Quant { scale, zero_point, axis }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(variable: bool) -> TensorInfo<'static> {
        TensorInfo {
            name: "t".into(),
            elem: ElemType::F32,
            shape: vec![1],
            data: None,
            quant: None,
            variable,
            channels_last: false,
        }
    }

    fn op(code: i32, inputs: Vec<Option<usize>>, outputs: Vec<usize>) -> OpInfo<'static> {
        OpInfo {
            index: 0,
            code,
            name: builtin_name(code),
            inputs,
            outputs,
            intermediates: Vec::new(),
            options_type: 0,
            options: OpOptions::Absent,
            node: None,
        }
    }

    #[test]
    fn variable_tensors_are_lstm_states_only() {
        // Tensor 1 is variable.
        let tensors = [tensor(false), tensor(true), tensor(false)];
        let mut lstm = vec![None; 24];
        lstm[0] = Some(0);
        lstm[18] = Some(1);
        assert!(check_variables(&tensors, &[op(44, lstm.clone(), vec![2])], &[0], &[2]).is_ok());
        let errors = [
            check_variables(&tensors, &[op(0, vec![Some(0), Some(1)], vec![2])], &[0], &[2]),
            check_variables(&tensors, &[op(44, lstm.clone(), vec![1])], &[0], &[2]),
            check_variables(&tensors, &[op(44, lstm, vec![2])], &[1], &[2]),
        ];
        let messages = errors.map(|e| e.expect_err("refused").to_string());
        assert!(messages[0].contains("only as the state inputs"), "{}", messages[0]);
        assert!(messages[1].contains("writes variable tensor 1"), "{}", messages[1]);
        assert!(messages[2].contains("model input or output"), "{}", messages[2]);
    }
}
