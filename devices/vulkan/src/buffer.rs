//! Device buffers: one `VkBuffer` with its own memory each. Tensors on a device are few and
//! large (weights, activations), so a dedicated allocation per buffer wastes little and
//! needs no sub-allocator; what hostrt holds is counted against an optional budget, so
//! exhaustion is an error value before the driver is asked.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ash::vk;

use crate::device::Device;
use crate::error::{VkError, VkErrorKind};

/// A storage buffer in device memory (mapped for the host when the memory allows it).
pub struct Buffer {
    pub(crate) device: Arc<Device>,
    pub(crate) raw: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Bytes asked for.
    len: usize,
    /// Bytes charged against the budget.
    charged: u64,
    /// The host address of the memory, when mapped.
    mapped: Option<*mut u8>,
}

// SAFETY: the handles are plain identifiers Vulkan lets any thread use; the mapping is only
// written before the buffer is shared and read after the work writing it completed (the
// fences in `work` order them).
unsafe impl Send for Buffer {}
// SAFETY: as above.
unsafe impl Sync for Buffer {}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer").field("len", &self.len).field("mapped", &self.mapped.is_some()).finish()
    }
}

impl Buffer {
    /// A buffer of `len` bytes for tensors (storage, copy source and destination).
    pub fn new(device: &Arc<Device>, len: usize) -> Result<Arc<Buffer>, VkError> {
        let (ty, mapped) = device.buffer_memory;
        Self::make(device, len, ty, mapped).map(Arc::new)
    }

    /// A host-visible buffer of `len` bytes to move data through.
    pub(crate) fn staging(device: &Arc<Device>, len: usize) -> Result<Buffer, VkError> {
        Self::make(device, len, device.staging_memory, true)
    }

    fn make(device: &Arc<Device>, len: usize, memory_type: u32, map: bool) -> Result<Buffer, VkError> {
        let d = &device.raw;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        // Vulkan buffers are never empty; an empty tensor gets 4 bytes.
        let size = (len.max(4) as u64).next_multiple_of(4);
        // SAFETY: a valid create-info; the buffer is destroyed on every error path below and
        // otherwise by `Drop`.
        let raw = unsafe { d.create_buffer(&vk::BufferCreateInfo::default().size(size).usage(usage), None) }
            .map_err(|r| VkError::call("vkCreateBuffer", r))?;
        // SAFETY: a live buffer of this device.
        let req = unsafe { d.get_buffer_memory_requirements(raw) };
        let destroy = || {
            // SAFETY: not bound, not used by any work.
            unsafe { d.destroy_buffer(raw, None) }
        };
        if req.memory_type_bits & (1 << memory_type) == 0 {
            destroy();
            return Err(VkError::new(VkErrorKind::Other, "the buffer cannot live in the chosen memory type"));
        }
        let before = device.used.fetch_add(req.size, Ordering::Relaxed);
        let uncharge = || device.used.fetch_sub(req.size, Ordering::Relaxed);
        if let Some(limit) = device.limit.filter(|&l| before + req.size > l) {
            uncharge();
            destroy();
            return Err(VkError::new(
                VkErrorKind::OutOfMemory,
                format!("out of device memory: {len} bytes asked, {before} of {limit} in use"),
            ));
        }
        let info = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(memory_type);
        // SAFETY: a valid allocate-info; the memory is freed on the error paths and by `Drop`.
        let memory = match unsafe { d.allocate_memory(&info, None) } {
            Ok(m) => m,
            Err(r) => {
                uncharge();
                destroy();
                return Err(VkError::call(&format!("out of device memory: allocating {len} bytes"), r));
            }
        };
        // SAFETY: fresh memory of a type the buffer accepts, bound once at offset 0.
        let bound = unsafe { d.bind_buffer_memory(raw, memory, 0) }
            .map_err(|r| VkError::call("vkBindBufferMemory", r));
        let mapped = bound.and_then(|()| {
            if map {
                // SAFETY: host-visible memory (only such types are mapped), mapped once.
                unsafe { d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                    .map(|p| Some(p.cast::<u8>()))
                    .map_err(|r| VkError::call("vkMapMemory", r))
            } else {
                Ok(None)
            }
        });
        match mapped {
            Ok(mapped) => Ok(Buffer { device: device.clone(), raw, memory, len, charged: req.size, mapped }),
            Err(e) => {
                uncharge();
                destroy();
                // SAFETY: not in use.
                unsafe { d.free_memory(memory, None) };
                Err(e)
            }
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the host reads and writes it directly.
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
    }

    /// Writes `bytes` at the start of a mapped buffer (no work may be using it).
    pub(crate) fn write(&self, bytes: &[u8]) {
        if let Some(p) = self.mapped {
            let n = bytes.len().min(self.len);
            // SAFETY: the mapping holds at least `len` bytes, and no device work uses the
            // buffer while it is written (it is new, or a staging buffer not yet submitted).
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, n) }
        }
    }

    /// Reads the start of a mapped buffer into `out` (after the work writing it completed).
    pub(crate) fn read(&self, out: &mut [u8]) {
        if let Some(p) = self.mapped {
            let n = out.len().min(self.len);
            // SAFETY: as for `write`: the fence of the last work writing it has signalled and
            // a host barrier made the writes visible.
            unsafe { std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), n) }
        }
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: work holds an `Arc` of each buffer it uses until its fence signalled, so
        // nothing uses this one; unmapped by freeing.
        unsafe {
            self.device.raw.destroy_buffer(self.raw, None);
            self.device.raw.free_memory(self.memory, None);
        }
        self.device.used.fetch_sub(self.charged, Ordering::Relaxed);
    }
}
