//! The embedding C API (`include/hostrt/hostrt.h`, generated from this module by cbindgen):
//! what an app links to run hostrt programs. A host (arena and work queue) loads programs;
//! a program's functions are called with tensors and scalars and return results. The
//! contract every function keeps is in docs/embedding.md: handles are checked before use
//! (NULL, destroyed or of another kind is `HOSTRT_INVALID_ARGUMENT`, not a crash), every
//! fallible call returns a code and fills an optional `hostrt_status`, and no panic crosses
//! the boundary (it becomes `HOSTRT_INTERNAL`).
//!
//! Layering (`README.md` here): `raw` keeps the table of live handles, the only place
//! handles become references; `status`, `host`, `program`, `tensor` and `call` are one per
//! handle kind, `trace` the hosts' tracing switch, and `jni` is the Android binding over them. This room uses `crate::tf` only
//! where an embedded program needs TensorFlow's API; `tf` never uses it.

pub(crate) mod call;
pub(crate) mod host;
#[cfg(any(target_os = "android", feature = "jni"))]
pub mod jni;
pub(crate) mod program;
pub(crate) mod raw;
pub(crate) mod status;
pub(crate) mod tensor;
pub(crate) mod trace;

pub use call::*;
pub use host::*;
pub use program::*;
pub use status::*;
pub use tensor::*;

raw::opaque_debug!(
    hostrt_host,
    hostrt_program,
    hostrt_tensor,
    hostrt_results,
    hostrt_async_call,
    hostrt_status
);

#[cfg(test)]
mod tests;

/// The version of the library, `"MAJOR.MINOR.PATCH"` (a static string).
#[unsafe(no_mangle)]
pub extern "C" fn hostrt_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The ABI version of `hostrt.h` this library implements; compare with `HOSTRT_ABI_VERSION`.
#[unsafe(no_mangle)]
pub extern "C" fn hostrt_abi_version() -> u32 {
    HOSTRT_ABI_VERSION
}

/// The ABI version of this header: bumped when a declared signature, struct layout or
/// constant changes; adding functions keeps it.
pub const HOSTRT_ABI_VERSION: u32 = 1;
