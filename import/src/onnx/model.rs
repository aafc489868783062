//! A verified ONNX model read into the importer's form: the graph's nodes with decoded
//! attributes, its constants as little-endian bytes, and its inputs with every dimension
//! bound (symbolic ones from the caller's bindings). Every size, type and name is checked
//! here; nothing later indexes the protobuf.

use std::collections::HashMap;
use std::path::Path;

use prost::Message;

use super::proto::{self, attribute_type as at, data_type as dt};
use crate::error::ImportError;
use crate::tflite::ops::ElemType;

/// Largest tensor the importer accepts, in elements (keeps every size computation in range).
pub const MAX_ELEMENTS: usize = 1 << 31;

/// The opset versions of the default domain the importer reads. Versions past 21 changed
/// the translated operators only by adding element types; the node tests check each.
pub const OPSETS: std::ops::RangeInclusive<i64> = 7..=28;

/// A constant tensor: little-endian, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub elem: ElemType,
    pub dims: Vec<usize>,
    pub data: Vec<u8>,
}

impl Tensor {
    pub fn elements(&self) -> usize {
        self.dims.iter().product()
    }

    /// A tensor of `dims` holding `data` (whose length must fit).
    pub fn new(elem: ElemType, dims: Vec<usize>, data: Vec<u8>) -> Tensor {
        debug_assert_eq!(dims.iter().product::<usize>() * elem.size(), data.len());
        Tensor { elem, dims, data }
    }

    /// Every value as i64 (integers and bool as they are, floats truncated).
    pub fn i64s(&self) -> Vec<i64> {
        let d = &self.data;
        match self.elem {
            ElemType::I64 => d.as_chunks::<8>().0.iter().map(|b| i64::from_le_bytes(*b)).collect(),
            ElemType::I32 => d.as_chunks::<4>().0.iter().map(|b| i64::from(i32::from_le_bytes(*b))).collect(),
            ElemType::I16 => d.as_chunks::<2>().0.iter().map(|b| i64::from(i16::from_le_bytes(*b))).collect(),
            ElemType::I8 => d.iter().map(|&b| i64::from(b as i8)).collect(),
            ElemType::U8 | ElemType::Bool => d.iter().map(|&b| i64::from(b)).collect(),
            ElemType::F32 => self.f64s().into_iter().map(|v| v as i64).collect(),
        }
    }

    /// Every value as f64.
    pub fn f64s(&self) -> Vec<f64> {
        match self.elem {
            ElemType::F32 => {
                self.data.as_chunks::<4>().0.iter().map(|b| f64::from(f32::from_le_bytes(*b))).collect()
            }
            _ => self.i64s().into_iter().map(|v| v as f64).collect(),
        }
    }

    /// A tensor of `elem` from f64 values (rounded toward zero and wrapped for integers, as
    /// a C cast does; bool is `v != 0`).
    pub fn from_f64s(elem: ElemType, dims: Vec<usize>, values: &[f64]) -> Tensor {
        let data = match elem {
            ElemType::F32 => values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
            ElemType::Bool => values.iter().map(|&v| u8::from(v != 0.0)).collect(),
            _ => return Tensor::from_i64s(elem, dims, &values.iter().map(|&v| v as i64).collect::<Vec<_>>()),
        };
        Tensor { elem, dims, data }
    }

    /// A tensor of `elem` from i64 values (wrapped to the type's width; bool is `v != 0`).
    pub fn from_i64s(elem: ElemType, dims: Vec<usize>, values: &[i64]) -> Tensor {
        let data = match elem {
            ElemType::I64 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ElemType::I32 => values.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect(),
            ElemType::I16 => values.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect(),
            ElemType::I8 | ElemType::U8 => values.iter().map(|&v| v as u8).collect(),
            ElemType::Bool => values.iter().map(|&v| u8::from(v != 0)).collect(),
            ElemType::F32 => values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
        };
        Tensor { elem, dims, data }
    }
}

/// A node attribute's value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    Float(f32),
    Int(i64),
    String(String),
    Tensor(Tensor),
    Floats(Vec<f32>),
    Ints(Vec<i64>),
    Strings(Vec<String>),
    /// A subgraph (`If`, `Loop`, `Scan`): read only to refuse the node by name.
    Graph,
}

/// One node: an operator application.
#[derive(Clone, Debug)]
pub struct Node {
    /// Position in the graph's node list.
    pub index: usize,
    pub name: String,
    pub op_type: String,
    /// Input value names; `None` for an omitted optional input (an empty name).
    pub inputs: Vec<Option<String>>,
    /// Output value names; `None` for an output the model does not use.
    pub outputs: Vec<Option<String>>,
    pub attrs: HashMap<String, AttrValue>,
}

impl Node {
    /// `node #3 Conv 'conv1'`: the node for messages.
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("node #{} {}", self.index, self.op_type)
        } else {
            format!("node #{} {} '{}'", self.index, self.op_type, self.name)
        }
    }
}

/// A graph input: its name, element type and shape (every dimension bound).
#[derive(Clone, Debug)]
pub struct Input {
    pub name: String,
    pub elem: ElemType,
    pub dims: Vec<usize>,
}

/// A verified model.
#[derive(Clone, Debug)]
pub struct Model {
    /// The default domain's opset version.
    pub opset: i64,
    pub nodes: Vec<Node>,
    /// Initializers and nothing else: values known at import.
    pub constants: HashMap<String, Tensor>,
    /// The inputs the caller feeds (initializers listed as inputs are constants, not inputs).
    pub inputs: Vec<Input>,
    pub outputs: Vec<String>,
    pub producer: String,
}

/// Where external data files are and how symbolic dimensions are bound.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions<'p> {
    /// The model file's directory: external data `location`s are relative to it.
    pub dir: Option<&'p Path>,
    /// Values of symbolic input dimensions (`batch=4`); an unbound one is 1 when it is
    /// the first dimension (the batch), else an error naming it.
    pub dims: &'p [(String, usize)],
    /// Graph inputs bound to a value at import: they become constants, so operands that
    /// must be known at import (a filter, a shape) may be given this way.
    pub bound: &'p [(String, Tensor)],
}

impl Model {
    /// Decodes and verifies `bytes`, an ONNX `ModelProto`.
    pub fn read(bytes: &[u8], options: &ReadOptions<'_>) -> Result<Model, ImportError> {
        let m = proto::ModelProto::decode(bytes)
            .map_err(|e| ImportError::model(format!("not an ONNX model (malformed protobuf: {e})")))?;
        // Other domains may be declared (onnxruntime's optimizer adds ai.onnx.ml to models
        // it writes); a node of one is refused by name (`read_node`).
        let mut opset = None;
        let mut others = Vec::new();
        for o in &m.opset_import {
            match o.domain.as_deref().unwrap_or("") {
                "" | "ai.onnx" => opset = Some(o.version.unwrap_or(0)),
                other => others.push(other),
            }
        }
        let opset = opset.ok_or_else(|| {
            let declared =
                if others.is_empty() { String::new() } else { format!(" (only {})", others.join(", ")) };
            ImportError::model(format!("the model imports no ai.onnx opset{declared}"))
        })?;
        if !OPSETS.contains(&opset) {
            return Err(ImportError::model(format!(
                "opset {opset} is not supported (opsets {} to {} are)",
                OPSETS.start(),
                OPSETS.end()
            )));
        }
        let g = m.graph.ok_or_else(|| ImportError::model("the model has no graph".into()))?;
        if !g.sparse_initializer.is_empty() {
            return Err(ImportError::model("sparse initializers are not supported".into()));
        }
        let mut constants = HashMap::new();
        for (i, t) in g.initializer.iter().enumerate() {
            let name = t.name.clone().unwrap_or_default();
            let tensor = read_tensor(t, options.dir)
                .map_err(|e| ImportError::model(format!("initializer #{i} '{name}': {e}")))?;
            if name.is_empty() {
                return Err(ImportError::model(format!("initializer #{i} has no name")));
            }
            constants.insert(name, tensor);
        }
        let mut inputs = Vec::new();
        for (i, v) in g.input.iter().enumerate() {
            let name = v.name.clone().unwrap_or_default();
            if constants.contains_key(&name) {
                continue;
            }
            if let Some((_, t)) = options.bound.iter().find(|(n, _)| *n == name) {
                let (elem, dims) = value_type(v, options.dims)
                    .map_err(|e| ImportError::model(format!("graph input #{i} '{name}': {e}")))?;
                // A value of the declared size binds under the declared shape ([1] for []).
                let fits = |d: &Vec<usize>| d.iter().product::<usize>() == t.elements();
                if elem != t.elem || dims.as_ref().is_some_and(|d| !fits(d)) {
                    return Err(ImportError::model(format!(
                        "graph input #{i} '{name}' is {} {dims:?}, bound to {} {:?}",
                        elem.name(),
                        t.elem.name(),
                        t.dims
                    )));
                }
                let dims = dims.unwrap_or_else(|| t.dims.clone());
                constants.insert(name, Tensor { dims, ..t.clone() });
                continue;
            }
            let (elem, dims) = value_type(v, options.dims)
                .map_err(|e| ImportError::model(format!("graph input #{i} '{name}': {e}")))?;
            let dims = dims.ok_or_else(|| {
                ImportError::model(format!("graph input #{i} '{name}': its shape is not given"))
            })?;
            inputs.push(Input { name, elem, dims });
        }
        let outputs: Vec<String> = g.output.iter().map(|v| v.name.clone().unwrap_or_default()).collect();
        if outputs.is_empty() {
            return Err(ImportError::model("the graph has no outputs".into()));
        }
        let mut nodes = Vec::new();
        for (index, n) in g.node.iter().enumerate() {
            nodes.push(read_node(index, n, options.dir)?);
        }
        Ok(Model {
            opset,
            nodes,
            constants,
            inputs,
            outputs,
            producer: format!(
                "{} {}",
                m.producer_name.unwrap_or_default(),
                m.producer_version.unwrap_or_default()
            )
            .trim()
            .to_string(),
        })
    }
}

fn read_node(index: usize, n: &proto::NodeProto, dir: Option<&Path>) -> Result<Node, ImportError> {
    let op_type = n.op_type.clone().unwrap_or_default();
    let name = n.name.clone().unwrap_or_default();
    let label = Node { index, name: name.clone(), op_type: op_type.clone(), ..empty_node() }.label();
    let err = |m: String| ImportError::model(format!("{label}: {m}"));
    match n.domain.as_deref().unwrap_or("") {
        "" | "ai.onnx" => {}
        d => return Err(err(format!("operator domain '{d}' is not supported (only ai.onnx)"))),
    }
    if op_type.is_empty() {
        return Err(err("the node has no op_type".into()));
    }
    let optional = |s: &String| if s.is_empty() { None } else { Some(s.clone()) };
    let mut attrs = HashMap::new();
    for a in &n.attribute {
        let aname = a.name.clone().unwrap_or_default();
        let value = read_attr(a, dir).map_err(|e| err(format!("attribute '{aname}': {e}")))?;
        attrs.insert(aname, value);
    }
    Ok(Node {
        index,
        name,
        op_type,
        inputs: n.input.iter().map(optional).collect(),
        outputs: n.output.iter().map(optional).collect(),
        attrs,
    })
}

fn empty_node() -> Node {
    Node {
        index: 0,
        name: String::new(),
        op_type: String::new(),
        inputs: vec![],
        outputs: vec![],
        attrs: HashMap::new(),
    }
}

fn read_attr(a: &proto::AttributeProto, dir: Option<&Path>) -> Result<AttrValue, String> {
    if a.ref_attr_name.is_some() {
        return Err("attribute references belong in functions only".into());
    }
    let utf8 = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| "a string is not UTF-8".to_string());
    // Old exporters leave `type` unset; the one field that is set then decides.
    let ty = match a.r#type {
        Some(t) if t != 0 => t,
        _ => infer_attr_type(a).ok_or("the attribute has no type and no value")?,
    };
    Ok(match ty {
        at::FLOAT => AttrValue::Float(a.f.unwrap_or(0.0)),
        at::INT => AttrValue::Int(a.i.unwrap_or(0)),
        at::STRING => AttrValue::String(utf8(a.s.as_deref().unwrap_or(&[]))?),
        at::TENSOR => {
            AttrValue::Tensor(read_tensor(a.t.as_ref().ok_or("a tensor attribute without its tensor")?, dir)?)
        }
        at::GRAPH => AttrValue::Graph,
        at::FLOATS => AttrValue::Floats(a.floats.clone()),
        at::INTS => AttrValue::Ints(a.ints.clone()),
        at::STRINGS => AttrValue::Strings(a.strings.iter().map(|s| utf8(s)).collect::<Result<_, _>>()?),
        t => return Err(format!("attribute type {t} is not supported")),
    })
}

fn infer_attr_type(a: &proto::AttributeProto) -> Option<i32> {
    Some(if a.f.is_some() {
        at::FLOAT
    } else if a.i.is_some() {
        at::INT
    } else if a.s.is_some() {
        at::STRING
    } else if a.t.is_some() {
        at::TENSOR
    } else if a.g.is_some() {
        at::GRAPH
    } else if !a.floats.is_empty() {
        at::FLOATS
    } else if !a.ints.is_empty() {
        at::INTS
    } else if !a.strings.is_empty() {
        at::STRINGS
    } else {
        return None;
    })
}

/// The importer's element type of ONNX data type `code`.
pub fn elem_type(code: i32) -> Result<ElemType, String> {
    Ok(match code {
        dt::FLOAT => ElemType::F32,
        dt::UINT8 => ElemType::U8,
        dt::INT8 => ElemType::I8,
        dt::INT16 => ElemType::I16,
        dt::INT32 => ElemType::I32,
        dt::INT64 => ElemType::I64,
        dt::BOOL => ElemType::Bool,
        c => return Err(format!("element type {} is not supported", dt::name(c))),
    })
}

/// A graph input's element type and shape (`None` when no shape is given).
fn value_type(
    v: &proto::ValueInfoProto,
    bindings: &[(String, usize)],
) -> Result<(ElemType, Option<Vec<usize>>), String> {
    let ty = v.r#type.as_ref().ok_or("it has no type")?;
    let Some(t) = &ty.tensor_type else {
        let kind = if ty.sequence_type.is_some() {
            "a sequence"
        } else if ty.optional_type.is_some() {
            "an optional"
        } else {
            "not a tensor"
        };
        return Err(format!("it is {kind}; only tensors are supported"));
    };
    let elem = elem_type(t.elem_type.unwrap_or(0))?;
    let Some(shape) = &t.shape else { return Ok((elem, None)) };
    let mut dims = Vec::new();
    for (k, d) in shape.dim.iter().enumerate() {
        let size = match (&d.dim_value, &d.dim_param) {
            (Some(v), _) => usize::try_from(*v).map_err(|_| format!("dimension {k} is {v}"))?,
            (None, Some(p)) if !p.is_empty() => match bindings.iter().find(|(n, _)| n == p) {
                Some(&(_, v)) => v,
                None if k == 0 => 1,
                None => return Err(format!("dimension {k} is symbolic ('{p}'): bind it (--dim {p}=N)")),
            },
            _ if k == 0 => 1,
            _ => return Err(format!("dimension {k} is unknown")),
        };
        dims.push(size);
    }
    checked_elements(&dims)?;
    Ok((elem, Some(dims)))
}

/// The number of elements of `dims`, refused past [`MAX_ELEMENTS`] (and any one dimension
/// past it too, which an empty tensor could otherwise carry into the program).
pub fn checked_elements(dims: &[usize]) -> Result<usize, String> {
    if let Some(d) = dims.iter().find(|&&d| d > MAX_ELEMENTS) {
        return Err(format!("dimension {d} of shape {dims:?} is larger than 2^31"));
    }
    dims.iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| format!("shape {dims:?} has more than 2^31 elements"))
}

/// Decodes a `TensorProto`'s values (raw, typed or external) into little-endian bytes.
pub fn read_tensor(t: &proto::TensorProto, dir: Option<&Path>) -> Result<Tensor, String> {
    let code = t.data_type.unwrap_or(0);
    let elem = elem_type(code)?;
    if t.segment.is_some() {
        return Err("segmented tensors are not supported".into());
    }
    let mut dims = Vec::new();
    for &d in &t.dims {
        dims.push(usize::try_from(d).map_err(|_| format!("dimension {d} is negative"))?);
    }
    let n = checked_elements(&dims)?;
    let bytes = n * elem.size();
    let data = if t.data_location == Some(1) {
        external(t, dir, bytes)?
    } else if let Some(raw) = &t.raw_data {
        if raw.len() != bytes {
            return Err(format!(
                "raw_data holds {} bytes, but {} of shape {dims:?} needs {bytes}",
                raw.len(),
                elem.name()
            ));
        }
        raw.clone()
    } else {
        let typed = match code {
            dt::FLOAT => Tensor::from_f64s(elem, vec![t.float_data.len()], &to_f64(&t.float_data)),
            dt::INT64 => Tensor::from_i64s(elem, vec![t.int64_data.len()], &t.int64_data),
            _ => Tensor::from_i64s(
                elem,
                vec![t.int32_data.len()],
                &t.int32_data.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
            ),
        };
        if typed.elements() != n {
            return Err(format!("{} values for shape {dims:?} ({n} elements)", typed.elements()));
        }
        typed.data
    };
    Ok(Tensor { elem, dims, data })
}

fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&f| f64::from(f)).collect()
}

/// The bytes of a tensor stored in an external file next to the model, read through a
/// read-only mapping. The location must stay inside the model's directory.
fn external(t: &proto::TensorProto, dir: Option<&Path>, bytes: usize) -> Result<Vec<u8>, String> {
    let get =
        |k: &str| t.external_data.iter().find(|e| e.key.as_deref() == Some(k)).and_then(|e| e.value.clone());
    let location = get("location").ok_or("external data without a location")?;
    let dir =
        dir.ok_or("its data is in an external file, but the model was given as bytes (import the file)")?;
    let rel = Path::new(&location);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        return Err(format!("external data location '{location}' leaves the model's directory"));
    }
    let number = |k: &str| -> Result<Option<usize>, String> {
        get(k)
            .map(|v| v.parse::<usize>().map_err(|_| format!("external data {k} '{v}' is not a size")))
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let length = number("length")?.unwrap_or(bytes);
    if length != bytes {
        return Err(format!("external data of {length} bytes where {bytes} belong"));
    }
    let path = dir.join(rel);
    let file = std::fs::File::open(&path).map_err(|e| format!("external data {}: {e}", path.display()))?;
    if bytes == 0 {
        return Ok(Vec::new());
    }
    let map = hostrt_std::MappedFile::read_only(&file)
        .map_err(|e| format!("external data {}: {e}", path.display()))?;
    let range = offset.checked_add(bytes).map(|end| offset..end);
    range.and_then(|r| map.bytes().get(r)).map(<[u8]>::to_vec).ok_or_else(|| {
        format!("external data at offset {offset}, {bytes} bytes, is outside {}", path.display())
    })
}
