//! The part of ONNX's protobuf schema (`onnx.proto`) that the importer reads, as `prost`
//! messages. Field numbers and enum values are the format's; fields the importer ignores
//! (docs, training info, functions, sparse tensors, type protos) are left out, and a decoder
//! skips them.

/// `ModelProto`: the file's root message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    #[prost(int64, optional, tag = "1")]
    pub ir_version: Option<i64>,
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    #[prost(string, optional, tag = "2")]
    pub producer_name: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub producer_version: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

/// `OperatorSetIdProto`: an operator set and its version (an empty domain is the default
/// `ai.onnx` set).
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    #[prost(string, optional, tag = "1")]
    pub domain: Option<String>,
    #[prost(int64, optional, tag = "2")]
    pub version: Option<i64>,
}

/// `GraphProto`: nodes in topological order, constants, inputs and outputs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Sparse initializers are refused (read only to name them).
    #[prost(message, repeated, tag = "15")]
    pub sparse_initializer: Vec<SparseTensorProto>,
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// `NodeProto`: one operator application.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    #[prost(string, optional, tag = "3")]
    pub name: Option<String>,
    #[prost(string, optional, tag = "4")]
    pub op_type: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub domain: Option<String>,
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
}

/// `AttributeProto.AttributeType` values.
pub mod attribute_type {
    pub const FLOAT: i32 = 1;
    pub const INT: i32 = 2;
    pub const STRING: i32 = 3;
    pub const TENSOR: i32 = 4;
    pub const GRAPH: i32 = 5;
    pub const FLOATS: i32 = 6;
    pub const INTS: i32 = 7;
    pub const STRINGS: i32 = 8;
}

/// `AttributeProto`: a named constant parameter of a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    /// Set inside function bodies only; refused elsewhere.
    #[prost(string, optional, tag = "21")]
    pub ref_attr_name: Option<String>,
    #[prost(int32, optional, tag = "20")]
    pub r#type: Option<i32>,
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    #[prost(message, optional, tag = "6")]
    pub g: Option<GraphProto>,
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
}

/// `ValueInfoProto`: a graph input's or output's name and type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    #[prost(string, optional, tag = "1")]
    pub name: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `TypeProto`: the importer reads tensor types; a value of another kind (sequence, map,
/// optional, sparse) has no `tensor_type` and is refused by name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TypeTensor>,
    #[prost(message, optional, tag = "4")]
    pub sequence_type: Option<TypeNested>,
    #[prost(message, optional, tag = "9")]
    pub optional_type: Option<TypeNested>,
}

/// `TypeProto.Tensor`: element type and (possibly symbolic) shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeTensor {
    #[prost(int32, optional, tag = "1")]
    pub elem_type: Option<i32>,
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `TypeProto.Sequence` / `TypeProto.Optional`: only their presence is read.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeNested {}

/// `TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// `TensorShapeProto.Dimension`: a size, a symbolic name, or neither (unknown).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}

/// `TensorProto.DataType` values.
pub mod data_type {
    pub const FLOAT: i32 = 1;
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const UINT16: i32 = 4;
    pub const INT16: i32 = 5;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const STRING: i32 = 8;
    pub const BOOL: i32 = 9;
    pub const FLOAT16: i32 = 10;
    pub const DOUBLE: i32 = 11;
    pub const UINT32: i32 = 12;
    pub const UINT64: i32 = 13;
    pub const BFLOAT16: i32 = 16;

    /// The type's name as ONNX spells it, for messages.
    pub fn name(code: i32) -> String {
        let known = [
            (FLOAT, "float"),
            (UINT8, "uint8"),
            (INT8, "int8"),
            (UINT16, "uint16"),
            (INT16, "int16"),
            (INT32, "int32"),
            (INT64, "int64"),
            (STRING, "string"),
            (BOOL, "bool"),
            (FLOAT16, "float16"),
            (DOUBLE, "double"),
            (UINT32, "uint32"),
            (UINT64, "uint64"),
            (14, "complex64"),
            (15, "complex128"),
            (BFLOAT16, "bfloat16"),
        ];
        known
            .iter()
            .find(|(c, _)| *c == code)
            .map_or_else(|| format!("data type {code}"), |(_, n)| (*n).into())
    }
}

/// `TensorProto`: a constant (initializer, `Constant` value, test data).
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    #[prost(int32, optional, tag = "2")]
    pub data_type: Option<i32>,
    /// Segmented tensors are refused.
    #[prost(message, optional, tag = "3")]
    pub segment: Option<TypeNested>,
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// int32, and the narrower integer types and bool, one per value.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    #[prost(string, optional, tag = "8")]
    pub name: Option<String>,
    #[prost(bytes = "vec", optional, tag = "9")]
    pub raw_data: Option<Vec<u8>>,
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// 1 = EXTERNAL: the data lives in a file named by `external_data`.
    #[prost(int32, optional, tag = "14")]
    pub data_location: Option<i32>,
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
}

/// `SparseTensorProto` (refused; read for its presence only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SparseTensorProto {}

/// `StringStringEntryProto`: `location`, `offset` and `length` of external data.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    #[prost(string, optional, tag = "1")]
    pub key: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub value: Option<String>,
}
