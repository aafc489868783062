//! Opening a Vulkan device: the loader (opened at run time), the instance, the choice of
//! physical device and compute queue, and the memory types buffers use.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use ash::vk;
use gpu_allocator::vulkan::{Allocation, AllocationCreateDesc, Allocator, AllocatorCreateDesc};
use gpu_allocator::{AllocationError, AllocationSizes, AllocatorDebugSettings};

use crate::error::{VkError, VkErrorKind};
use crate::pipeline::{Pipeline, Shader};

/// How to open a device.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Which device: its index in Vulkan's list, or part of its name (case-insensitive).
    /// `None` reads `HOSTRT_VULKAN_DEVICE`; unset, the preference is discrete, integrated,
    /// virtual, then CPU devices.
    pub device: Option<String>,
    /// Keep buffers in memory the host cannot map and move data through staging buffers,
    /// as on a discrete GPU (chosen automatically when no device-local memory is mappable).
    pub force_staging: bool,
    /// Read tensors back through a host-cached staging buffer even where their memory is
    /// mapped and cached (chosen automatically where it is mapped but not cached: a
    /// discrete GPU's resizable BAR, which the host reads uncached, at tens of MB/s).
    pub force_staged_reads: bool,
    /// The most device memory hostrt allocates, in bytes (`None`: what the device has).
    pub memory_limit: Option<u64>,
}

/// An open Vulkan device with one compute queue. Shared (`Arc`) by its buffers and work.
pub struct Device {
    entry: ash::Entry,
    instance: ash::Instance,
    pub(crate) raw: ash::Device,
    physical: vk::PhysicalDevice,
    /// The compute queue; submissions are serialised through the lock.
    pub(crate) queue: Mutex<vk::Queue>,
    pub(crate) family: u32,
    name: String,
    kind: vk::PhysicalDeviceType,
    /// Whether tensor buffers live in memory the host maps (device-local and host-visible:
    /// integrated GPUs, CPU devices, resizable BAR); otherwise data is staged.
    mapped_buffers: bool,
    /// Whether reads always go through staging buffers (`Options::force_staged_reads`).
    pub(crate) staged_reads: bool,
    /// Sub-allocates buffer memory; `None` only while dropping.
    allocator: Mutex<Option<Allocator>>,
    pub(crate) limit: Option<u64>,
    pub(crate) used: AtomicU64,
    pub(crate) pipelines: [OnceLock<Result<Pipeline, VkError>>; Shader::COUNT],
}

/// A device's raw Vulkan handles, for plugins that make their own Vulkan calls.
#[derive(Clone, Copy)]
pub struct RawHandles {
    /// The `VkInstance`.
    pub instance: vk::Instance,
    /// The `VkPhysicalDevice`.
    pub physical_device: vk::PhysicalDevice,
    /// The `VkDevice`.
    pub device: vk::Device,
    /// The family of the compute queue hostrt submits to.
    pub queue_family: u32,
    /// The loader's `vkGetInstanceProcAddr`, to load every other function.
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
}

impl std::fmt::Debug for RawHandles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawHandles").field("queue_family", &self.queue_family).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device").field("name", &self.name).field("cpu", &self.is_cpu()).finish()
    }
}

/// Rank of a device type: lower is preferred.
fn rank(t: vk::PhysicalDeviceType) -> u32 {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => 0,
        vk::PhysicalDeviceType::INTEGRATED_GPU => 1,
        vk::PhysicalDeviceType::VIRTUAL_GPU => 2,
        vk::PhysicalDeviceType::CPU => 3,
        _ => 4,
    }
}

/// Whether `props` has a memory type with all of `want`.
fn has_memory(props: &vk::PhysicalDeviceMemoryProperties, want: vk::MemoryPropertyFlags) -> bool {
    let types = &props.memory_types[..(props.memory_type_count as usize).min(props.memory_types.len())];
    types.iter().any(|t| t.property_flags.contains(want))
}

impl Device {
    /// Opens the device `options` picks. Fails with [`VkErrorKind::NoDevice`] when there is no
    /// Vulkan loader, no device, or none with a compute queue.
    ///
    /// ```no_run
    /// let device = hostrt_vulkan::Device::open(Default::default()).unwrap();
    /// println!("{}", device.name());
    /// ```
    pub fn open(options: Options) -> Result<Arc<Device>, VkError> {
        // SAFETY: loading the system's Vulkan loader runs its initialisers; the loader is
        // trusted system code, as any Vulkan application trusts it.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| {
            VkError::new(VkErrorKind::NoDevice, format!("no Vulkan device: no Vulkan loader ({e})"))
        })?;
        let app = vk::ApplicationInfo::default().application_name(c"hostrt").api_version(vk::API_VERSION_1_1);
        // SAFETY: a valid create-info whose pointers outlive the call.
        let instance =
            unsafe { entry.create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None) }
                .map_err(|r| {
                    VkError::new(
                        VkErrorKind::NoDevice,
                        format!("no Vulkan device: cannot create an instance: {r}"),
                    )
                })?;
        // `entry` keeps the loader loaded until the instance is destroyed on failure.
        match Self::open_on(entry.clone(), instance.clone(), options) {
            Ok(d) => Ok(d),
            Err(e) => {
                // SAFETY: the instance has no children left (open_on destroys what it made).
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn open_on(entry: ash::Entry, instance: ash::Instance, options: Options) -> Result<Arc<Device>, VkError> {
        // SAFETY: a live instance.
        let physicals = unsafe { instance.enumerate_physical_devices() }
            .map_err(|r| VkError::call("vkEnumeratePhysicalDevices", r))?;
        let mut candidates = Vec::new();
        for (index, &pd) in physicals.iter().enumerate() {
            // SAFETY: `pd` comes from this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = props.device_name_as_c_str().unwrap_or(c"?").to_string_lossy().into_owned();
            // SAFETY: as above.
            let families = unsafe { instance.get_physical_device_queue_family_properties(pd) };
            if let Some(family) =
                families.iter().position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            {
                candidates.push((index, pd, name, props.device_type, family as u32));
            }
        }
        let pick =
            options.device.or_else(|| std::env::var("HOSTRT_VULKAN_DEVICE").ok()).filter(|s| !s.is_empty());
        let chosen = match &pick {
            Some(p) => candidates.iter().find(|c| {
                p.parse::<usize>().ok() == Some(c.0) || c.2.to_lowercase().contains(&p.to_lowercase())
            }),
            None => candidates.iter().min_by_key(|c| (rank(c.3), c.0)),
        };
        let Some((_, physical, name, kind, family)) = chosen.cloned() else {
            let names: Vec<_> = candidates.iter().map(|c| format!("{}: {}", c.0, c.2)).collect();
            return Err(VkError::new(
                VkErrorKind::NoDevice,
                match pick {
                    Some(p) => format!("no Vulkan device matches '{p}' (devices: {})", names.join(", ")),
                    None => "no Vulkan device with a compute queue".to_string(),
                },
            ));
        };
        let priorities = [1.0f32];
        let queues =
            [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
        // SAFETY: `physical` belongs to the instance; the create-info outlives the call.
        let raw = unsafe {
            instance.create_device(
                physical,
                &vk::DeviceCreateInfo::default().queue_create_infos(&queues),
                None,
            )
        }
        .map_err(|r| VkError::call("vkCreateDevice", r))?;
        // SAFETY: queue 0 of a family the device was created with.
        let queue = unsafe { raw.get_device_queue(family, 0) };
        // SAFETY: `physical` belongs to the instance.
        let memory = unsafe { instance.get_physical_device_memory_properties(physical) };
        let mappable = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let staging = has_memory(&memory, mappable);
        let direct = has_memory(&memory, mappable | vk::MemoryPropertyFlags::DEVICE_LOCAL);
        let mapped_buffers = direct && !options.force_staging;
        let mut debug_settings = AllocatorDebugSettings::default();
        // Buffers are freed before the device; the `log` crate is not hostrt's logger.
        debug_settings.log_leaks_on_shutdown = false;
        let desc = AllocatorCreateDesc {
            instance: instance.clone(),
            device: raw.clone(),
            physical_device: physical,
            debug_settings,
            buffer_device_address: false,
            // Blocks of 32 MiB of device memory and 8 MiB of host memory; a larger buffer
            // gets an allocation of its own.
            allocation_sizes: AllocationSizes::new(32 << 20, 8 << 20),
        };
        let allocator = match (staging, Allocator::new(&desc)) {
            (true, Ok(a)) => a,
            (false, _) | (_, Err(_)) => {
                // SAFETY: nothing was made from the device yet.
                unsafe { raw.destroy_device(None) };
                return Err(VkError::new(VkErrorKind::NoDevice, format!("{name}: no usable memory type")));
            }
        };
        Ok(Arc::new(Device {
            entry,
            instance,
            raw,
            physical,
            queue: Mutex::new(queue),
            family,
            name,
            kind,
            mapped_buffers,
            staged_reads: options.force_staged_reads,
            allocator: Mutex::new(Some(allocator)),
            limit: options.memory_limit,
            used: AtomicU64::new(0),
            pipelines: Default::default(),
        }))
    }

    /// The device's name, as the driver gives it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a CPU implementation (lavapipe, SwiftShader).
    pub fn is_cpu(&self) -> bool {
        self.kind == vk::PhysicalDeviceType::CPU
    }

    /// Whether tensor buffers go through staging buffers (no host-mappable device memory).
    pub fn uses_staging(&self) -> bool {
        !self.mapped_buffers
    }

    /// The buffer memory allocator, locked.
    pub(crate) fn allocator(&self) -> AllocatorGuard<'_> {
        AllocatorGuard(self.allocator.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Device memory hostrt holds now, in bytes.
    pub fn memory_in_use(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// The raw handles a plugin kernel may record its own work with (the device's "stream",
    /// as `TF_GetStream` hands out; docs/devices.md). Submitting to the queue must go
    /// through [`Device::with_queue`] or [`Device::submit_raw`].
    pub fn raw_handles(&self) -> RawHandles {
        RawHandles {
            instance: self.instance.handle(),
            physical_device: self.physical,
            device: self.raw.handle(),
            queue_family: self.family,
            get_instance_proc_addr: self.entry.static_fn().get_instance_proc_addr,
        }
    }

    /// Submits `submits` to the compute queue with `fence`, holding the queue's lock.
    ///
    /// # Safety
    /// Everything `submits` names (command buffers, semaphores) and `fence` must be valid
    /// objects of this device, as `vkQueueSubmit` requires.
    pub unsafe fn submit_raw(
        &self,
        submits: &[vk::SubmitInfo<'_>],
        fence: vk::Fence,
    ) -> Result<(), vk::Result> {
        // SAFETY: the caller's contract; the lock serialises the queue.
        self.with_queue(|q| unsafe { self.raw.queue_submit(q, submits, fence) })
    }

    /// Runs `f` with the compute queue held (Vulkan requires submissions to a queue to be
    /// externally synchronised).
    pub fn with_queue<R>(&self, f: impl FnOnce(vk::Queue) -> R) -> R {
        let q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        f(*q)
    }

    /// The memory properties of the physical device (for a plugin's own allocations).
    pub fn memory_properties(&self) -> vk::PhysicalDeviceMemoryProperties {
        // SAFETY: `physical` belongs to the live instance.
        unsafe { self.instance.get_physical_device_memory_properties(self.physical) }
    }
}

/// The locked buffer memory allocator (see [`Device::allocator`]).
pub(crate) struct AllocatorGuard<'a>(MutexGuard<'a, Option<Allocator>>);

impl AllocatorGuard<'_> {
    /// Sub-allocates memory as `desc` asks.
    pub(crate) fn allocate(
        &mut self,
        desc: &AllocationCreateDesc<'_>,
    ) -> Result<Allocation, AllocationError> {
        let closing = || AllocationError::Internal("the device is closing".to_owned());
        self.0.as_mut().ok_or_else(closing)?.allocate(desc)
    }

    /// Gives `allocation` back.
    pub(crate) fn free(&mut self, allocation: Allocation) -> Result<(), AllocationError> {
        self.0.as_mut().map_or(Ok(()), |a| a.free(allocation))
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: buffers and work hold an `Arc` of the device, so none is left; pipelines
        // are destroyed before the device, the device before the instance.
        unsafe {
            let _ = self.raw.device_wait_idle();
            // Its memory blocks go before the device.
            drop(self.allocator.get_mut().map(Option::take));
            for p in self.pipelines.iter_mut().filter_map(|p| p.get_mut()).filter_map(|p| p.as_ref().ok()) {
                p.destroy(&self.raw);
            }
            self.raw.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

/// The process's device for `vk.*` kernels, opened on first use with default options
/// (`HOSTRT_VULKAN_DEVICE` picks); the error is kept, so a machine without Vulkan answers
/// every device kernel with the same clear error.
pub fn shared() -> Result<Arc<Device>, VkError> {
    static SHARED: OnceLock<Result<Arc<Device>, VkError>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let limit = std::env::var("HOSTRT_VULKAN_MEMORY_LIMIT").ok().and_then(|s| s.parse().ok());
            Device::open(Options { memory_limit: limit, ..Default::default() })
        })
        .clone()
}
