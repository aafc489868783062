/* The stream handle type of TensorFlow's StreamExecutor C API, as kernels.h uses it
 * (TF_GetStream). A kernel registered for device type "VULKAN" gets a hostrt_vk_stream*
 * (hostrt/hostrt_vulkan.h) where hostrt is built with Vulkan support; other kernels run on
 * the host and get NULL with TF_UNIMPLEMENTED. The rest of the StreamExecutor API is not
 * part of hostrt. */
#ifndef TENSORFLOW_C_EXPERIMENTAL_STREAM_EXECUTOR_STREAM_EXECUTOR_H_
#define TENSORFLOW_C_EXPERIMENTAL_STREAM_EXECUTOR_STREAM_EXECUTOR_H_

typedef struct SP_Stream_st* SP_Stream;

#endif /* TENSORFLOW_C_EXPERIMENTAL_STREAM_EXECUTOR_STREAM_EXECUTOR_H_ */
