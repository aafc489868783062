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
