//! Device buffers: a `VkBuffer` bound to memory that `gpu-allocator` sub-allocates from a
//! few large blocks per memory type (drivers cap the number of allocations, often at
//! 4096). What hostrt holds is counted against an optional budget, so exhaustion is an
//! error value before the driver is asked.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use ash::vk;
use gpu_allocator::MemoryLocation;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, AllocationScheme};

use crate::device::Device;
use crate::error::{VkError, VkErrorKind};

/// A storage buffer in device memory (mapped for the host when the memory allows it).
pub struct Buffer {
    pub(crate) device: Arc<Device>,
    pub(crate) raw: vk::Buffer,
    /// Its memory; `None` only while dropping.
    memory: Option<Allocation>,
    /// Bytes asked for.
    len: usize,
    /// Bytes charged against the budget.
    charged: u64,
    /// The host address of the memory, when mapped.
    mapped: Option<*mut u8>,
    /// Whether the host reads the memory through its caches (`HOST_CACHED`).
    cached: bool,
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
        let mapped = !device.uses_staging();
        let location = if mapped { MemoryLocation::CpuToGpu } else { MemoryLocation::GpuOnly };
        Self::make(device, len, location, mapped).map(Arc::new)
    }

    /// A host-visible buffer of `len` bytes to move data through; `download` when the host
    /// reads it (cached memory preferred), otherwise the host writes it.
    pub(crate) fn staging(device: &Arc<Device>, len: usize, download: bool) -> Result<Buffer, VkError> {
        let location = if download { MemoryLocation::GpuToCpu } else { MemoryLocation::CpuToGpu };
        Self::make(device, len, location, true)
    }

    fn make(
        device: &Arc<Device>,
        len: usize,
        location: MemoryLocation,
        map: bool,
    ) -> Result<Buffer, VkError> {
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
        let requirements = unsafe { d.get_buffer_memory_requirements(raw) };
        let destroy = || {
            // SAFETY: not bound, or bound to memory not yet freed; not used by any work.
            unsafe { d.destroy_buffer(raw, None) }
        };
        let before = device.used.fetch_add(requirements.size, Ordering::Relaxed);
        let uncharge = || device.used.fetch_sub(requirements.size, Ordering::Relaxed);
        if let Some(limit) = device.limit.filter(|&l| before + requirements.size > l) {
            uncharge();
            destroy();
            return Err(VkError::new(
                VkErrorKind::OutOfMemory,
                format!("out of device memory: {len} bytes asked, {before} of {limit} in use"),
            ));
        }
        let desc = AllocationCreateDesc {
            name: "hostrt buffer",
            requirements,
            location,
            linear: true,
            allocation_scheme: AllocationScheme::GpuAllocatorManaged,
        };
        let memory = match device.allocator().allocate(&desc) {
            Ok(m) => m,
            Err(e) => {
                uncharge();
                destroy();
                let kind = match e {
                    gpu_allocator::AllocationError::OutOfMemory => VkErrorKind::OutOfMemory,
                    _ => VkErrorKind::Other,
                };
                return Err(VkError::new(kind, format!("out of device memory: allocating {len} bytes: {e}")));
            }
        };
        // SAFETY: memory of a type the buffer accepts (the allocator checked the
        // requirements), at an offset with the required alignment, bound once.
        let bound = unsafe { d.bind_buffer_memory(raw, memory.memory(), memory.offset()) };
        let mapped = match (map, memory.mapped_ptr()) {
            (false, _) => Ok(None),
            (true, Some(p)) => Ok(Some(p.as_ptr().cast::<u8>())),
            (true, None) => Err(VkError::new(VkErrorKind::Other, "the allocator gave unmapped host memory")),
        };
        let cached = memory.memory_properties().contains(vk::MemoryPropertyFlags::HOST_CACHED);
        match bound.map_err(|r| VkError::call("vkBindBufferMemory", r)).and(mapped) {
            Ok(mapped) => Ok(Buffer {
                device: device.clone(),
                raw,
                memory: Some(memory),
                len,
                charged: requirements.size,
                mapped,
                cached,
            }),
            Err(e) => {
                uncharge();
                destroy();
                let _ = device.allocator().free(memory);
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

    /// Whether the host reads it directly at the speed of its own memory: mapped, and
    /// cached. A discrete GPU's mapped device memory is not: reading 16 MiB of it took
    /// 282 ms on an H200 (docs/devices.md), so downloads go through a staging copy.
    pub fn reads_fast(&self) -> bool {
        self.mapped.is_some() && self.cached && !self.device.staged_reads
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
        // nothing uses this one; the buffer goes before its memory.
        unsafe { self.device.raw.destroy_buffer(self.raw, None) };
        if let Some(memory) = self.memory.take() {
            let _ = self.device.allocator().free(memory);
        }
        self.device.used.fetch_sub(self.charged, Ordering::Relaxed);
    }
}
