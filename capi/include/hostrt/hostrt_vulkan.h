/* hostrt's device stream for C kernels on the Vulkan device (not part of TensorFlow's
 * headers): what TF_GetStream returns to a kernel registered for device type
 * HOSTRT_DEVICE_VULKAN, in a hostrt built with Vulkan support (the `vulkan` feature; the
 * `hostrt` command line has it).
 *
 *   hostrt_vk_stream* s = (hostrt_vk_stream*)TF_GetStream(ctx, status);
 *
 * NULL with TF_UNAVAILABLE where no Vulkan device opens, with TF_UNIMPLEMENTED for kernels
 * of other device types or in builds without Vulkan support.
 *
 * The stream describes the Vulkan device hostrt's `vk.*` kernels use. It stays valid for
 * the life of the process. A kernel makes its own Vulkan objects on `device` (load the
 * functions with get_instance_proc_addr, then vkGetDeviceProcAddr), submits through
 * `submit` (never to the queue directly: hostrt's own work shares it), waits for its own
 * fence, and destroys what it made before returning. Its inputs and outputs are host
 * tensors, as for every hostrt kernel. The handles are declared as pointers and integers
 * so this header does not need vulkan.h: cast them to VkInstance, VkPhysicalDevice,
 * VkDevice, PFN_vkGetInstanceProcAddr, VkSubmitInfo and VkFence. */
#ifndef HOSTRT_VULKAN_H_
#define HOSTRT_VULKAN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device type to register a kernel for (TF_NewKernelBuilder's device_name) to get the
 * Vulkan stream. */
#define HOSTRT_DEVICE_VULKAN "VULKAN"

/* A function of the Vulkan loader (PFN_vkVoidFunction). */
typedef void (*hostrt_vk_void_function)(void);

typedef struct hostrt_vk_stream {
  /* sizeof(hostrt_vk_stream) of the hostrt that filled it. */
  size_t struct_size;
  /* VkInstance. */
  void* instance;
  /* VkPhysicalDevice. */
  void* physical_device;
  /* VkDevice. */
  void* device;
  /* The family of the compute queue `submit` uses (for command pools). */
  uint32_t queue_family_index;
  /* The loader's vkGetInstanceProcAddr (cast it to PFN_vkGetInstanceProcAddr). */
  hostrt_vk_void_function (*get_instance_proc_addr)(void* instance, const char* name);
  /* vkQueueSubmit(queue, submit_count, (const VkSubmitInfo*)submits, (VkFence)fence) on
   * hostrt's compute queue, holding the lock that serialises it; returns the VkResult.
   * `stream` must be this stream; every object the submissions name must belong to
   * `device`. */
  int32_t (*submit)(const struct hostrt_vk_stream* stream, uint32_t submit_count, const void* submits,
                    uint64_t fence);
} hostrt_vk_stream;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOSTRT_VULKAN_H_ */
