/* Tensors of the C API (TensorFlow's TF_Tensor). In hostrt a TF_Tensor is a handle on a
 * dense host tensor: dtype, dims and a reference-counted buffer that kernels, programs and
 * other handles share without copying. */
#ifndef TENSORFLOW_C_TF_TENSOR_H_
#define TENSORFLOW_C_TF_TENSOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where TF_AllocateTemp places memory; hostrt has only host memory, so `on_host` is read
 * but every tensor is on the host. */
typedef struct TF_AllocatorAttributes {
  size_t struct_size;
  unsigned char on_host;
} TF_AllocatorAttributes;

#define TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE TF_OFFSET_OF_END(TF_AllocatorAttributes, on_host)

typedef struct TF_Tensor TF_Tensor;

/* A tensor over the caller's bytes data[0, len), not copied when `data` is aligned for the
 * dtype: `deallocator(data, len, deallocator_arg)` runs when the last handle on them goes
 * (a NULL deallocator is never called). Misaligned data is copied and handed back to the
 * deallocator at once. Returns NULL, after calling the deallocator, when dims are negative,
 * `num_dims` is negative or above 16, `len` is shorter than the elements need, or the dtype
 * is one hostrt tensors cannot hold (TF_STRING, TF_RESOURCE, TF_VARIANT). */
TF_CAPI_EXPORT extern TF_Tensor* TF_NewTensor(TF_DataType, const int64_t* dims, int num_dims, void* data, size_t len,
                                              void (*deallocator)(void* data, size_t len, void* arg),
                                              void* deallocator_arg);

/* A new zeroed tensor of `len` bytes (at least what the elements need), 64-byte aligned;
 * NULL under the same conditions as TF_NewTensor, or when memory is out. */
TF_CAPI_EXPORT extern TF_Tensor* TF_AllocateTensor(TF_DataType, const int64_t* dims, int num_dims, size_t len);

/* `tensor` itself when it is the only handle on its buffer (so the caller may take its
 * contents), else NULL and `tensor` is left as it was. */
TF_CAPI_EXPORT extern TF_Tensor* TF_TensorMaybeMove(TF_Tensor* tensor);

/* Releases this handle (NULL is ignored); the buffer goes with its last handle. */
TF_CAPI_EXPORT extern void TF_DeleteTensor(TF_Tensor*);

/* The element type. */
TF_CAPI_EXPORT extern TF_DataType TF_TensorType(const TF_Tensor*);

/* Gives the tensor new dims with the same element count (a reshape of this handle only);
 * other dims, or a NULL tensor, leave it unchanged. */
TF_CAPI_EXPORT extern void TF_SetShape(TF_Tensor* tensor, const int64_t* dims, int num_dims);

/* The alignment of tensors this API allocates: 64 bytes. */
TF_CAPI_EXPORT extern size_t TF_TensorDefaultAlignment(void);

/* The rank (0 for a NULL tensor). */
TF_CAPI_EXPORT extern int TF_NumDims(const TF_Tensor*);

/* Dim `dim_index`; -1 when the index is out of range. */
TF_CAPI_EXPORT extern int64_t TF_Dim(const TF_Tensor* tensor, int dim_index);

/* Bytes of data the elements occupy. */
TF_CAPI_EXPORT extern size_t TF_TensorByteSize(const TF_Tensor*);

/* The data; writable only for tensors whose buffer is (not for constants a program
 * borrows from read-only memory). */
TF_CAPI_EXPORT extern void* TF_TensorData(const TF_Tensor*);

/* The number of elements. */
TF_CAPI_EXPORT extern int64_t TF_TensorElementCount(const TF_Tensor* tensor);

/* Makes `to` a view of `from`'s bytes as `type` with `new_dims` (sharing the buffer);
 * TF_INVALID_ARGUMENT, and `to` unchanged, unless both types have a fixed size and the
 * byte counts agree. */
TF_CAPI_EXPORT extern void TF_TensorBitcastFrom(const TF_Tensor* from, TF_DataType type, TF_Tensor* to,
                                                const int64_t* new_dims, int num_new_dims, TF_Status* status);

/* Whether the data is 64-byte aligned. */
TF_CAPI_EXPORT extern bool TF_TensorIsAligned(const TF_Tensor*);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_TENSOR_H_ */
