//! A Vulkan compute device for hostrt (docs/devices.md): device tensors, compute shaders
//! compiled to SPIR-V at build time, and `vk.*` kernels that run them asynchronously.
//!
//! Layering: `device` opens the device, `buffer` holds memory, `pipeline` the shaders,
//! `work` records and submits, `stream` batches a device's work; `ops` are the tensor operations on top, `kernels` expose
//! them to programs. libvulkan is opened at run time: a machine without Vulkan gets a
//! [`VkErrorKind::NoDevice`] error value, not a link failure.

// Kernels return `Diagnostic` errors by value, as the executor's kernel ABI expects.
#![allow(clippy::result_large_err)]

mod buffer;
mod device;
mod error;
pub mod kernels;
pub mod ops;
mod pipeline;
mod stream;
mod work;

/// The `ash` this crate uses, for plugins that make their own Vulkan calls with
/// [`Device::raw_handles`].
pub use ash;
pub use buffer::Buffer;
pub use device::{Device, Options, RawHandles, shared};
pub use error::{VkError, VkErrorKind};
pub use ops::DeviceTensor;
pub use pipeline::Shader;
pub use stream::{Stream, shared_stream};
pub use work::{Download, Pending, Recorder};
