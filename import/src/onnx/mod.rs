//! ONNX models (`.onnx`): the protobuf read and verified (`model`), translated into the
//! importer's operator graph (`convert`), then lowered and planned as TensorFlow Lite
//! models are (docs/models.md).

pub mod convert;
pub mod model;
pub mod proto;
