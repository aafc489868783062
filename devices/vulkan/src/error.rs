//! What can go wrong on a Vulkan device, as a value that becomes a kernel's error.

use std::fmt;

use ash::vk;
use hostrt_core::{Diagnostic, ErrorCode};

/// The kind of a device failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VkErrorKind {
    /// No Vulkan loader, no device, or none with a compute queue.
    NoDevice,
    /// Device memory (or the configured budget) is exhausted.
    OutOfMemory,
    /// The device was lost (driver reset, GPU hang).
    DeviceLost,
    /// Wrong shapes or types given to a device kernel.
    InvalidArgument,
    /// Any other Vulkan failure.
    Other,
}

/// A device failure: its kind and what happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VkError {
    /// What kind of failure.
    pub kind: VkErrorKind,
    /// What happened, for people.
    pub message: String,
}

impl VkError {
    pub(crate) fn new(kind: VkErrorKind, message: impl Into<String>) -> Self {
        VkError { kind, message: message.into() }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(VkErrorKind::InvalidArgument, message)
    }

    /// A failed Vulkan call `what`, classified by its result code.
    pub(crate) fn call(what: &str, r: vk::Result) -> Self {
        let kind = match r {
            vk::Result::ERROR_OUT_OF_DEVICE_MEMORY | vk::Result::ERROR_OUT_OF_HOST_MEMORY => {
                VkErrorKind::OutOfMemory
            }
            vk::Result::ERROR_DEVICE_LOST => VkErrorKind::DeviceLost,
            vk::Result::ERROR_INCOMPATIBLE_DRIVER | vk::Result::ERROR_INITIALIZATION_FAILED => {
                VkErrorKind::NoDevice
            }
            _ => VkErrorKind::Other,
        };
        Self::new(kind, format!("{what}: {r}"))
    }
}

impl fmt::Display for VkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for VkError {}

impl From<&VkError> for Diagnostic {
    fn from(e: &VkError) -> Self {
        let code = match e.kind {
            VkErrorKind::NoDevice => ErrorCode::Unavailable,
            VkErrorKind::OutOfMemory => ErrorCode::ResourceExhausted,
            VkErrorKind::DeviceLost => ErrorCode::Aborted,
            VkErrorKind::InvalidArgument => ErrorCode::InvalidArgument,
            VkErrorKind::Other => ErrorCode::Internal,
        };
        Diagnostic::fmt(code, format_args!("vulkan: {}", e.message))
    }
}
