/* The part of TensorFlow's c_api.h that the kernel and op headers use: TF_Bool,
 * TF_StringView and TF_Buffer. Sessions, graphs and the rest of that header are not part of
 * hostrt. */
#ifndef TENSORFLOW_C_C_API_H_
#define TENSORFLOW_C_C_API_H_

#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A C boolean (TF_BOOL is the tensor dtype). */
typedef unsigned char TF_Bool;

/* A string that is not NUL-terminated: `len` bytes at `data`. */
typedef struct TF_StringView {
  const char* data;
  size_t len;
} TF_StringView;

/* Bytes and how to free them: TF_DeleteBuffer calls `data_deallocator(data, length)` when
 * it is set. */
typedef struct TF_Buffer {
  const void* data;
  size_t length;
  void (*data_deallocator)(void* data, size_t length);
} TF_Buffer;

/* A buffer holding a copy of proto[0, proto_len), freed by TF_DeleteBuffer. */
TF_CAPI_EXPORT extern TF_Buffer* TF_NewBufferFromString(const void* proto, size_t proto_len);

/* An empty buffer. */
TF_CAPI_EXPORT extern TF_Buffer* TF_NewBuffer(void);

/* Frees the buffer and, through its deallocator, its data (NULL is ignored). */
TF_CAPI_EXPORT extern void TF_DeleteBuffer(TF_Buffer*);

/* A copy of the struct (the data is not copied). */
TF_CAPI_EXPORT extern TF_Buffer TF_GetBuffer(TF_Buffer* buffer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_C_API_H_ */
