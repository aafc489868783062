//! TensorFlow's C API for ops and kernels, implemented over hostrt (docs/capi.md): the
//! headers in `include/tensorflow/c/` declare TensorFlow's names and signatures, so a
//! plugin written against TensorFlow compiles unchanged, and this module exports the
//! functions they declare (`README.md` here gives the layering).
//!
//! One module per header, named after it: [`tf_status`] (`tf_status.h`), [`tf_datatype`]
//! (`tf_datatype.h`), [`tf_tensor`] (`tf_tensor.h`, a `TF_Tensor` is a handle on a
//! [`DenseHostTensor`]), [`c_api`] (`TF_Buffer`, `TF_StringView`), [`ops`] (`ops.h`, over
//! [`op_def`], the spec grammar) and [`kernels`] (`kernels.h`). Beyond the headers:
//! [`std_ops`] defines TensorFlow's standard NN ops, [`tf_program`] runs kernels inside
//! hostrt programs as `tf.<Op>`, and [`plugins`] loads shared objects that register them.
//!
//! The contract of every exported function, stated once: a pointer argument is NULL or
//! points to a live object of its type made by this API (or, for data, to as many bytes as
//! the call says); NULL where TensorFlow requires an object is answered with a neutral result
//! (and an error in the status, when the call takes one) rather than a crash. No Rust panic
//! crosses the boundary: a panic inside a call becomes `TF_INTERNAL` (or the neutral
//! result).
//!
//! [`DenseHostTensor`]: hostrt_core::tensor::DenseHostTensor

pub mod c_api;
pub mod kernels;
pub mod op_def;
pub mod ops;
pub mod plugins;
pub mod std_ops;
pub mod tf_datatype;
pub mod tf_program;
pub mod tf_status;
pub mod tf_tensor;
