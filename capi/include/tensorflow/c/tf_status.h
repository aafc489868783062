/* Error status of C API calls (TensorFlow's TF_Status and TF_Code). */
#ifndef TENSORFLOW_C_TF_STATUS_H_
#define TENSORFLOW_C_TF_STATUS_H_

#include "tensorflow/c/c_api_macros.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TF_Status TF_Status;

/* Error codes, with the values of TensorFlow's error_codes.proto. */
typedef enum TF_Code {
  TF_OK = 0,
  TF_CANCELLED = 1,
  TF_UNKNOWN = 2,
  TF_INVALID_ARGUMENT = 3,
  TF_DEADLINE_EXCEEDED = 4,
  TF_NOT_FOUND = 5,
  TF_ALREADY_EXISTS = 6,
  TF_PERMISSION_DENIED = 7,
  TF_UNAUTHENTICATED = 16,
  TF_RESOURCE_EXHAUSTED = 8,
  TF_FAILED_PRECONDITION = 9,
  TF_ABORTED = 10,
  TF_OUT_OF_RANGE = 11,
  TF_UNIMPLEMENTED = 12,
  TF_INTERNAL = 13,
  TF_UNAVAILABLE = 14,
  TF_DATA_LOSS = 15,
} TF_Code;

/* A new status holding TF_OK; free it with TF_DeleteStatus. NULL only if memory is out. */
TF_CAPI_EXPORT extern TF_Status* TF_NewStatus(void);

/* Frees `s` (NULL is ignored). */
TF_CAPI_EXPORT extern void TF_DeleteStatus(TF_Status* s);

/* Records `code` and `msg` (copied; NULL reads as ""), dropping what `s` held, payloads
 * included. A code outside TF_Code is recorded as TF_UNKNOWN. */
TF_CAPI_EXPORT extern void TF_SetStatus(TF_Status* s, TF_Code code, const char* msg);

/* Records the payload `key` = `value` (both copied), replacing one of the same key; ignored
 * while `s` is TF_OK. */
TF_CAPI_EXPORT extern void TF_SetPayload(TF_Status* s, const char* key, const char* value);

/* Records the error an errno value means (ENOENT is TF_NOT_FOUND, EACCES
 * TF_PERMISSION_DENIED, ...), with `context` and the system's text as message. */
TF_CAPI_EXPORT extern void TF_SetStatusFromIOError(TF_Status* s, int error_code, const char* context);

/* The recorded code (TF_OK for a NULL status). */
TF_CAPI_EXPORT extern TF_Code TF_GetCode(const TF_Status* s);

/* The recorded message, NUL-terminated, valid until `s` next changes; "" when TF_OK. */
TF_CAPI_EXPORT extern const char* TF_Message(const TF_Status* s);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_TF_STATUS_H_ */
