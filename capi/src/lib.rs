//! hostrt's C library, in two rooms (`README.md` of each gives its goal and layering):
//!
//! - [`tf`]: TensorFlow's C API for ops and kernels (`include/tensorflow/c/`, docs/capi.md),
//!   so plugins written against TensorFlow run on hostrt, and the `tf.<Op>` kernels that
//!   run them inside hostrt programs;
//! - [`embed`]: hostrt's embedding API (`include/hostrt/hostrt.h`, docs/embedding.md), what
//!   an app links to load and call programs, and its JNI binding.
//!
//! `embed` uses `tf` where an embedded program runs `tf.*` kernels or loads plugins; `tf`
//! never uses `embed`. Both use `ffi`, what every exported function needs at the boundary.
//! The package builds this crate (`hostrt_c`) and the static `libhostrt_c.a`, which the
//! build copies to the `libhostrt.a` that apps link (docs/embedding.md).

#![allow(non_camel_case_types, non_snake_case)]
// The safety contract of the exported functions is the one of each room's module docs,
// stated once.
#![allow(clippy::missing_safety_doc)]
// `Diagnostic` is the runtime's fixed-size error value (no heap), passed by value as in the
// core.
#![allow(clippy::result_large_err)]

pub mod embed;
mod ffi;
pub mod tf;
