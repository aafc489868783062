/* Element types of tensors (TensorFlow's TF_DataType, values of its types.proto). */
#ifndef TENSORFLOW_C_TF_DATATYPE_H_
#define TENSORFLOW_C_TF_DATATYPE_H_

#include <stddef.h>

#include "tensorflow/c/c_api_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum TF_DataType {
  TF_FLOAT = 1,
  TF_DOUBLE = 2,
  TF_INT32 = 3,
  TF_UINT8 = 4,
  TF_INT16 = 5,
  TF_INT8 = 6,
  TF_STRING = 7, /* not supported by hostrt tensors */
  TF_COMPLEX64 = 8,
  TF_COMPLEX = 8, /* the old name of TF_COMPLEX64 */
  TF_INT64 = 9,
  TF_BOOL = 10,
  TF_QINT8 = 11, /* quantized types: stored as their integer */
  TF_QUINT8 = 12,
  TF_QINT32 = 13,
  TF_BFLOAT16 = 14,
  TF_QINT16 = 15,
  TF_QUINT16 = 16,
  TF_UINT16 = 17,
  TF_COMPLEX128 = 18,
  TF_HALF = 19,
  TF_RESOURCE = 20, /* not supported by hostrt tensors */
  TF_VARIANT = 21,  /* not supported by hostrt tensors */
  TF_UINT32 = 22,
  TF_UINT64 = 23,
  TF_FLOAT8_E5M2 = 24, /* stored as bytes */
  TF_FLOAT8_E4M3FN = 25,
} TF_DataType;

/* The size in bytes of one element of `dt`; 0 for variable-length types (TF_STRING,
 * TF_RESOURCE, TF_VARIANT) and for values that are no TF_DataType. */
TF_CAPI_EXPORT extern size_t TF_DataTypeSize(TF_DataType dt);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_DATATYPE_H_ */
