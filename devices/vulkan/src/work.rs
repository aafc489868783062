//! Recording and submitting device work: a [`Recorder`] collects a kernel's dispatches and
//! copies into one command buffer; [`Recorder::submit`] hands it to the queue with a fence
//! and returns [`Pending`] work, which keeps every buffer it uses alive until the fence
//! signals.

use std::sync::Arc;

use ash::vk;

use crate::buffer::Buffer;
use crate::device::Device;
use crate::error::{VkError, VkErrorKind};
use crate::pipeline::Shader;

/// Dispatches one recorder holds at most (descriptor sets it can allocate).
pub(crate) const MAX_DISPATCHES: u32 = 32;

/// How long a submission may run before it is reported as a hang, in nanoseconds.
const TIMEOUT_NS: u64 = 120_000_000_000;

/// Command-buffer objects of one submission, destroyed together.
struct Objects {
    device: Arc<Device>,
    pool: vk::CommandPool,
    descriptors: vk::DescriptorPool,
    fence: vk::Fence,
    keep: Vec<Arc<Buffer>>,
    staging: Vec<Buffer>,
}

impl Drop for Objects {
    fn drop(&mut self) {
        let d = &self.device.raw;
        // SAFETY: called when the work never reached the queue or its fence signalled (or
        // after waiting for it here), so no object is in use; each is destroyed once.
        unsafe {
            if self.fence != vk::Fence::null() {
                let _ = d.wait_for_fences(&[self.fence], true, TIMEOUT_NS);
                d.destroy_fence(self.fence, None);
            }
            d.destroy_descriptor_pool(self.descriptors, None);
            d.destroy_command_pool(self.pool, None);
        }
    }
}

/// A command buffer being recorded.
pub struct Recorder {
    objects: Objects,
    cb: vk::CommandBuffer,
    dispatches: u32,
    empty: bool,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("dispatches", &self.dispatches).finish()
    }
}

/// A barrier making all earlier work's writes visible to all later work (including the
/// host): kernels are few and large, so one full barrier between them costs little.
fn full_barrier(d: &ash::Device, cb: vk::CommandBuffer) {
    let all = vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE;
    let b =
        vk::MemoryBarrier::default().src_access_mask(all).dst_access_mask(all | vk::AccessFlags::HOST_READ);
    // SAFETY: `cb` is in the recording state.
    unsafe {
        d.cmd_pipeline_barrier(
            cb,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::ALL_COMMANDS | vk::PipelineStageFlags::HOST,
            vk::DependencyFlags::empty(),
            &[b],
            &[],
            &[],
        )
    }
}

impl Recorder {
    /// A new command buffer on `device`, recording.
    pub fn new(device: &Arc<Device>) -> Result<Recorder, VkError> {
        let d = &device.raw;
        let info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(device.family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT);
        // SAFETY: valid create-infos; what is made is owned by `Objects`, destroyed by its
        // `Drop` (also on the error paths, since `objects` exists before anything can fail).
        unsafe {
            let pool =
                d.create_command_pool(&info, None).map_err(|r| VkError::call("vkCreateCommandPool", r))?;
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: 3 * MAX_DISPATCHES,
            }];
            let descriptors = match d.create_descriptor_pool(
                &vk::DescriptorPoolCreateInfo::default().max_sets(MAX_DISPATCHES).pool_sizes(&sizes),
                None,
            ) {
                Ok(p) => p,
                Err(r) => {
                    d.destroy_command_pool(pool, None);
                    return Err(VkError::call("vkCreateDescriptorPool", r));
                }
            };
            let objects = Objects {
                device: device.clone(),
                pool,
                descriptors,
                fence: vk::Fence::null(),
                keep: Vec::new(),
                staging: Vec::new(),
            };
            let cb = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
                .map_err(|r| VkError::call("vkAllocateCommandBuffers", r))?[0];
            d.begin_command_buffer(
                cb,
                &vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
            .map_err(|r| VkError::call("vkBeginCommandBuffer", r))?;
            full_barrier(d, cb);
            Ok(Recorder { objects, cb, dispatches: 0, empty: true })
        }
    }

    /// Whether no more dispatches fit.
    pub(crate) fn is_full(&self) -> bool {
        self.dispatches >= MAX_DISPATCHES
    }

    /// Records `shader` over `buffers` (its bindings, in order) with push constants `push`
    /// and `groups` workgroups.
    pub fn dispatch(
        &mut self,
        shader: Shader,
        buffers: &[&Arc<Buffer>],
        push: &[u32],
        groups: [u32; 3],
    ) -> Result<(), VkError> {
        let device = self.objects.device.clone();
        let d = &device.raw;
        let p = device.pipeline(shader)?;
        if buffers.len() != p.bindings as usize || push.len() * 4 != p.push_bytes as usize {
            return Err(VkError::invalid(format!("{shader:?}: wrong number of buffers or constants")));
        }
        if self.dispatches == MAX_DISPATCHES {
            return Err(VkError::invalid("too many dispatches in one submission"));
        }
        let limit = 65_535;
        if groups.iter().any(|&g| g > limit) {
            return Err(VkError::invalid(format!(
                "{shader:?}: {groups:?} workgroups exceed the limit {limit}"
            )));
        }
        let layouts = [p.set_layout];
        // SAFETY: the pool and layout are live; the set is written before use; `cb` records.
        unsafe {
            let set = d
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(self.objects.descriptors)
                        .set_layouts(&layouts),
                )
                .map_err(|r| VkError::call("vkAllocateDescriptorSets", r))?[0];
            let infos: Vec<_> = buffers
                .iter()
                .map(|b| [vk::DescriptorBufferInfo { buffer: b.raw, offset: 0, range: vk::WHOLE_SIZE }])
                .collect();
            let writes: Vec<_> = infos
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(i as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
            if !self.empty {
                full_barrier(d, self.cb);
            }
            d.cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::COMPUTE, p.pipeline);
            d.cmd_bind_descriptor_sets(self.cb, vk::PipelineBindPoint::COMPUTE, p.layout, 0, &[set], &[]);
            let bytes: Vec<u8> = push.iter().flat_map(|w| w.to_ne_bytes()).collect();
            d.cmd_push_constants(self.cb, p.layout, vk::ShaderStageFlags::COMPUTE, 0, &bytes);
            d.cmd_dispatch(self.cb, groups[0], groups[1], groups[2]);
        }
        self.objects.keep.extend(buffers.iter().map(|b| Arc::clone(b)));
        self.dispatches += 1;
        self.empty = false;
        Ok(())
    }

    /// Records a copy of `src` into `dst` (the shorter length).
    fn copy(&mut self, src: vk::Buffer, dst: vk::Buffer, len: usize) {
        if len == 0 {
            return;
        }
        let d = &self.objects.device.raw;
        // SAFETY: both buffers are live (kept by this recorder) and `cb` records.
        unsafe {
            if !self.empty {
                full_barrier(d, self.cb);
            }
            d.cmd_copy_buffer(
                self.cb,
                src,
                dst,
                &[vk::BufferCopy { src_offset: 0, dst_offset: 0, size: len as u64 }],
            );
        }
        self.empty = false;
    }

    /// Fills `dst` with `bytes`: directly when it is mapped (before any work of this
    /// recorder runs), otherwise through a staging buffer copied by this recorder.
    pub fn upload(&mut self, dst: &Arc<Buffer>, bytes: &[u8]) -> Result<(), VkError> {
        if dst.is_mapped() {
            dst.write(bytes);
            return Ok(());
        }
        let staging = Buffer::staging(&self.objects.device, bytes.len(), false)?;
        staging.write(bytes);
        self.copy(staging.raw, dst.raw, bytes.len().min(dst.len()));
        self.objects.staging.push(staging);
        self.objects.keep.push(dst.clone());
        Ok(())
    }

    /// Records what brings `src` to the host; the returned reader gives its bytes once this
    /// recorder's work completed.
    pub fn download(&mut self, src: &Arc<Buffer>) -> Result<Download, VkError> {
        self.objects.keep.push(src.clone());
        if src.reads_fast() {
            return Ok(Download { from: Read::Mapped(src.clone()) });
        }
        let staging = Arc::new(Buffer::staging(&self.objects.device, src.len(), true)?);
        self.copy(src.raw, staging.raw, src.len());
        self.objects.keep.push(staging.clone());
        Ok(Download { from: Read::Staged(staging) })
    }

    /// Ends recording and submits to the queue with a fence. Work that recorded nothing
    /// completes at once.
    pub fn submit(mut self) -> Result<Pending, VkError> {
        let device = self.objects.device.clone();
        let d = &device.raw;
        if self.empty {
            return Ok(Pending { objects: self.objects, submitted: false });
        }
        full_barrier(d, self.cb);
        // SAFETY: `cb` is recording; the fence is owned by `objects` from here on; the queue
        // is held while submitting.
        unsafe {
            d.end_command_buffer(self.cb).map_err(|r| VkError::call("vkEndCommandBuffer", r))?;
            let fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .map_err(|r| VkError::call("vkCreateFence", r))?;
            self.objects.fence = fence;
            let cbs = [self.cb];
            device
                .with_queue(|q| d.queue_submit(q, &[vk::SubmitInfo::default().command_buffers(&cbs)], fence))
                .map_err(|r| {
                    // Never submitted: the fence will not signal, so `Objects` must not wait.
                    VkError::call("vkQueueSubmit", r)
                })
                .inspect_err(|_| {
                    d.destroy_fence(fence, None);
                    self.objects.fence = vk::Fence::null();
                })?;
        }
        Ok(Pending { objects: self.objects, submitted: true })
    }
}

/// Work on the queue; its buffers live until it completed (dropping it waits for that).
pub struct Pending {
    objects: Objects,
    submitted: bool,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("submitted", &self.submitted).finish()
    }
}

impl Pending {
    /// Blocks until the work completed: `Err` when the device failed it (lost, or a hang
    /// past two minutes). Several threads may wait at once.
    pub fn wait(&self) -> Result<(), VkError> {
        if !self.submitted {
            return Ok(());
        }
        // SAFETY: the fence is live (destroyed only when this is dropped) and was submitted
        // with the work; waiting needs no external synchronisation.
        let r = unsafe { self.objects.device.raw.wait_for_fences(&[self.objects.fence], true, TIMEOUT_NS) };
        match r {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => {
                Err(VkError::new(VkErrorKind::DeviceLost, "device work did not finish within 120 s"))
            }
            Err(r) => Err(VkError::call("device work failed", r)),
        }
    }

    /// Whether the work completed (or failed), without waiting.
    pub fn is_done(&self) -> bool {
        // SAFETY: as for `wait`.
        !self.submitted
            || !matches!(unsafe { self.objects.device.raw.get_fence_status(self.objects.fence) }, Ok(false))
    }
}

/// Where a download's bytes are read from.
#[derive(Debug)]
enum Read {
    Mapped(Arc<Buffer>),
    Staged(Arc<Buffer>),
}

/// A buffer's bytes on their way to the host.
#[derive(Debug)]
pub struct Download {
    from: Read,
}

impl Download {
    /// Copies the bytes into `out`: call only after the recorder's work completed.
    pub fn read(&self, out: &mut [u8]) {
        match &self.from {
            Read::Mapped(b) | Read::Staged(b) => b.read(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::Recorder;
    use crate::buffer::Buffer;
    use crate::device::{Device, Options};
    use crate::error::VkErrorKind;

    fn open(options: Options) -> Option<Arc<Device>> {
        match Device::open(options) {
            Ok(d) => Some(d),
            Err(e) if std::env::var("HOSTRT_REQUIRE_VULKAN").is_ok_and(|v| v == "1") => panic!("{e}"),
            Err(e) => {
                eprintln!("SKIP: {e}");
                None
            }
        }
    }

    /// More buffers live at once than drivers allow allocations (4096 is a common cap):
    /// they share the allocator's blocks, and all the memory comes back.
    #[test]
    fn many_small_buffers_share_memory_blocks() {
        let Some(d) = open(Options::default()) else { return };
        let buffers: Vec<_> = (0..5000).map(|i| Buffer::new(&d, 64 + i % 7).unwrap()).collect();
        assert!(d.memory_in_use() >= 5000 * 64);
        drop(buffers);
        assert_eq!(d.memory_in_use(), 0);
    }

    /// 1000 bytes up into a new buffer and back; returns how the download read them. All
    /// the device memory comes back afterwards.
    fn round_trip(d: &Arc<Device>, check: impl Fn(&Buffer)) -> bool {
        let bytes: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
        let b = Buffer::new(d, bytes.len()).unwrap();
        check(&b);
        let mut rec = Recorder::new(d).unwrap();
        rec.upload(&b, &bytes).unwrap();
        let down = rec.download(&b).unwrap();
        let staged = matches!(down.from, super::Read::Staged(_));
        rec.submit().unwrap().wait().unwrap();
        let mut back = vec![0u8; bytes.len()];
        down.read(&mut back);
        assert_eq!(back, bytes);
        drop((b, down));
        assert_eq!(d.memory_in_use(), 0);
        staged
    }

    /// Data goes up and comes back through staging buffers, as on a discrete GPU.
    #[test]
    fn staging_uploads_and_downloads_round_trip() {
        let Some(d) = open(Options { force_staging: true, ..Default::default() }) else { return };
        assert!(d.uses_staging());
        assert!(round_trip(&d, |b| assert!(!b.is_mapped())));
    }

    /// Mapped buffers whose memory the host reads uncached (a discrete GPU's resizable BAR)
    /// are read back through a cached staging copy; forced here on any device.
    #[test]
    fn staged_reads_of_mapped_buffers_round_trip() {
        let Some(d) = open(Options { force_staged_reads: true, ..Default::default() }) else { return };
        assert!(round_trip(&d, |b| assert!(!b.reads_fast())));
    }

    /// Asking for a device that is not there names the devices that are.
    #[test]
    fn an_unknown_device_is_a_no_device_error() {
        if open(Options::default()).is_none() {
            return;
        }
        let e =
            Device::open(Options { device: Some("no such gpu".into()), ..Default::default() }).unwrap_err();
        assert_eq!(e.kind, VkErrorKind::NoDevice);
        assert!(e.message.contains("no Vulkan device matches 'no such gpu' (devices: 0: "), "{e}");
    }
}
