//! TensorFlow's C API for ops and kernels, implemented over hostrt (docs/capi.md): the
//! headers in `include/tensorflow/c/` declare TensorFlow's names and signatures, so a
//! plugin written against TensorFlow compiles unchanged, and this crate exports the
//! functions they declare.
//!
//! Built so far: [`status`] (`tf_status.h`), [`datatype`] (`tf_datatype.h`), [`tensor`]
//! (`tf_tensor.h`, a `TF_Tensor` is a handle on a [`DenseHostTensor`]), [`c_api`]
//! (`TF_Buffer`, `TF_StringView`), [`ops`] (`ops.h`, over [`op_def`]), [`std_ops`] and
//! [`kernels`] (`kernels.h`).
//!
//! The contract of every exported function, stated once: a pointer argument is NULL or
//! points to a live object of its type made by this API (or, for data, to as many bytes as
//! the call says); NULL where TensorFlow requires an object is answered with a neutral result
//! (and an error in the status, when the call takes one) rather than a crash. No Rust panic
//! crosses the boundary: a panic inside a call becomes `TF_INTERNAL` (or the neutral
//! result).
//!
//! [`DenseHostTensor`]: hostrt_core::tensor::DenseHostTensor

#![allow(non_camel_case_types, non_snake_case)]
// The safety contract of the exported functions is the one above, stated once.
#![allow(clippy::missing_safety_doc)]
// `Diagnostic` is the runtime's fixed-size error value (no heap), passed by value as in the
// core.
#![allow(clippy::result_large_err)]

pub mod c_api;
pub mod datatype;
pub mod embed;
mod ffi;
#[cfg(any(target_os = "android", feature = "jni"))]
pub mod jni;
pub mod kernels;
pub mod op_def;
pub mod ops;
pub mod plugin;
pub mod program;
pub mod status;
pub mod std_ops;
pub mod tensor;
