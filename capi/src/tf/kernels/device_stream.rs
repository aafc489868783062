//! The device stream `TF_GetStream` hands a kernel registered for device type `VULKAN`
//! (feature `vulkan`): a [`hostrt_vk_stream`] with the Vulkan device's raw handles and a
//! submit function on hostrt's compute queue (docs/capi.md, "Device streams"). It is the
//! same device hostrt's `vk.*` kernels use, opened on first use and kept for the process.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, OnceLock};

use hostrt_vulkan::ash::vk::{self, Handle};
use hostrt_vulkan::{Device, VkError};

/// The device type whose kernels get the Vulkan stream (`HOSTRT_DEVICE_VULKAN`).
pub const DEVICE_VULKAN: &str = "VULKAN";

/// `vkGetInstanceProcAddr` as C sees it.
pub type GetInstanceProcAddr = unsafe extern "system" fn(
    instance: *mut c_void,
    name: *const c_char,
) -> Option<unsafe extern "system" fn()>;

/// `hostrt_vk_stream` of `hostrt/hostrt_vulkan.h` (the layouts must agree).
#[repr(C)]
#[derive(Debug)]
#[allow(non_camel_case_types)]
pub struct hostrt_vk_stream {
    /// `sizeof(hostrt_vk_stream)` of the hostrt that filled it.
    pub struct_size: usize,
    /// The `VkInstance`.
    pub instance: *mut c_void,
    /// The `VkPhysicalDevice`.
    pub physical_device: *mut c_void,
    /// The `VkDevice`.
    pub device: *mut c_void,
    /// The family of the compute queue `submit` uses.
    pub queue_family_index: u32,
    /// The loader's `vkGetInstanceProcAddr`.
    pub get_instance_proc_addr: GetInstanceProcAddr,
    /// `vkQueueSubmit` on hostrt's compute queue, under its lock.
    pub submit: unsafe extern "C" fn(
        stream: *const hostrt_vk_stream,
        submit_count: u32,
        submits: *const c_void,
        fence: u64,
    ) -> i32,
}

/// The process's stream and the device it describes.
struct Shared {
    c: hostrt_vk_stream,
    device: Arc<Device>,
}

// SAFETY: the handles are plain values, valid as long as `device` (kept for the process);
// Vulkan allows them on any thread, and `submit` serialises the queue.
unsafe impl Send for Shared {}
// SAFETY: as above; nothing in `Shared` is mutated after it is made.
unsafe impl Sync for Shared {}

fn shared() -> Result<&'static Shared, &'static VkError> {
    static SHARED: OnceLock<Result<Shared, VkError>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let device = hostrt_vulkan::shared()?;
            let raw = device.raw_handles();
            // SAFETY: both are `extern "system"` functions of two pointer arguments
            // returning an optional function pointer; only the pointee types differ
            // (`VkInstance` and `*mut c_void` are the same pointer).
            let get_instance_proc_addr: GetInstanceProcAddr = unsafe {
                std::mem::transmute::<vk::PFN_vkGetInstanceProcAddr, _>(raw.get_instance_proc_addr)
            };
            let c = hostrt_vk_stream {
                struct_size: size_of::<hostrt_vk_stream>(),
                instance: raw.instance.as_raw() as *mut c_void,
                physical_device: raw.physical_device.as_raw() as *mut c_void,
                device: raw.device.as_raw() as *mut c_void,
                queue_family_index: raw.queue_family,
                get_instance_proc_addr,
                submit,
            };
            Ok(Shared { c, device })
        })
        .as_ref()
}

/// The stream for a kernel registered on `device_type`, or why there is none.
pub(crate) fn stream_for(
    device_type: &str,
) -> Result<*const hostrt_vk_stream, (crate::tf::tf_status::TF_Code, String)> {
    if device_type != DEVICE_VULKAN {
        return Err((
            crate::tf::tf_status::TF_UNIMPLEMENTED,
            format!(
                "TF_GetStream: the kernel is registered for device '{device_type}', which hostrt runs on the host \
                 (no device stream); kernels registered for '{DEVICE_VULKAN}' get the Vulkan stream"
            ),
        ));
    }
    shared()
        .map(|s| &s.c as *const hostrt_vk_stream)
        .map_err(|e| (crate::tf::tf_status::TF_UNAVAILABLE, format!("TF_GetStream: {e}")))
}

/// `hostrt_vk_stream::submit`: `vkQueueSubmit(queue, submit_count, submits, fence)` with
/// the queue's lock held. A stream pointer other than the one `TF_GetStream` gave is
/// `VK_ERROR_INITIALIZATION_FAILED`.
unsafe extern "C" fn submit(
    stream: *const hostrt_vk_stream,
    submit_count: u32,
    submits: *const c_void,
    fence: u64,
) -> i32 {
    let Ok(s) = shared() else { return vk::Result::ERROR_INITIALIZATION_FAILED.as_raw() };
    if !std::ptr::eq(stream, &s.c) || (submit_count > 0 && submits.is_null()) {
        return vk::Result::ERROR_INITIALIZATION_FAILED.as_raw();
    }
    let infos: &[vk::SubmitInfo<'_>] = if submit_count == 0 {
        &[]
    } else {
        // SAFETY: the caller passes `submit_count` VkSubmitInfo structures (the header's
        // contract), which is what `vk::SubmitInfo` is (`#[repr(C)]`).
        unsafe { std::slice::from_raw_parts(submits.cast::<vk::SubmitInfo<'_>>(), submit_count as usize) }
    };
    let fence = vk::Fence::from_raw(fence);
    // SAFETY: the objects named are the caller's, of this device (the header's contract).
    match unsafe { s.device.submit_raw(infos, fence) } {
        Ok(()) => vk::Result::SUCCESS.as_raw(),
        Err(e) => e.as_raw(),
    }
}
