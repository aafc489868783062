//! `libhostrt.so`: the shared library of `hostrt-c`. It exports every `#[no_mangle]`
//! function of that crate (the `TF_*` C API and the `hostrt_*` embedding API); this crate
//! only links it in.

pub use hostrt_c::*;
