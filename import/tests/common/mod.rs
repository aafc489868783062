//! Building ONNX models in tests, message by message (`hostrt_import::onnx::proto`).

use hostrt_import::onnx::proto::*;

/// A float32 graph input or output of `dims`.
pub fn value(name: &str, dims: &[i64]) -> ValueInfoProto {
    let dim = dims.iter().map(|&d| Dimension { dim_value: Some(d), dim_param: None }).collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeTensor {
                elem_type: Some(data_type::FLOAT),
                shape: Some(TensorShapeProto { dim }),
            }),
            sequence_type: None,
            optional_type: None,
        }),
    }
}

/// An opset-13 model of one graph: `nodes` over `initializer`, from `input` to `output`.
pub fn model(
    node: Vec<NodeProto>,
    initializer: Vec<TensorProto>,
    input: Vec<ValueInfoProto>,
    output: Vec<ValueInfoProto>,
) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(13) }],
        producer_name: None,
        producer_version: None,
        graph: Some(GraphProto {
            node,
            name: Some("g".into()),
            initializer,
            sparse_initializer: vec![],
            input,
            output,
            value_info: vec![],
        }),
    }
}
