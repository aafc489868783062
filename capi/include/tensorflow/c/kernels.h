/* Kernels written against TensorFlow's C API (tensorflow/c/kernels.h).
 *
 * A plugin registers kernels in TF_InitKernel (or the seed's InitPlugin): a builder names
 * the op, the device type ("CPU", or a plugin device type: hostrt runs every kernel on the
 * host) and three functions. hostrt calls create once per use of the op in a program, when
 * the program is loaded, compute once per execution, and delete when the program is
 * dropped. Any of the calls below reports misuse in its status (an index out of range, a
 * wrong dtype, an output set twice, an allocation larger than the arena); see docs/capi.md. */
#ifndef TENSORFLOW_C_KERNELS_H_
#define TENSORFLOW_C_KERNELS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorflow/c/c_api.h"
#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/experimental/stream_executor/stream_executor.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TF_KernelBuilder TF_KernelBuilder;
typedef struct TF_OpKernelConstruction TF_OpKernelConstruction;
typedef struct TF_OpKernelContext TF_OpKernelContext;

/* Defined by a plugin: registers its ops and kernels when the plugin is loaded. */
void TF_InitKernel(void);

/* A builder for a kernel of `op_name` on `device_name`; `compute_func` is required,
 * `create_func` and `delete_func` may be NULL (compute then gets NULL as its kernel).
 * Freed by TF_RegisterKernelBuilder, or by TF_DeleteKernelBuilder if never registered. */
TF_CAPI_EXPORT extern TF_KernelBuilder* TF_NewKernelBuilder(const char* op_name, const char* device_name,
                                                            void* (*create_func)(TF_OpKernelConstruction*),
                                                            void (*compute_func)(void*, TF_OpKernelContext*),
                                                            void (*delete_func)(void*));

/* The kernel applies only where type attr `attr_name` is `type` (may be repeated for other
 * attrs). */
TF_CAPI_EXPORT extern void TF_KernelBuilder_TypeConstraint(TF_KernelBuilder* kernel_builder, const char* attr_name,
                                                           const TF_DataType type, TF_Status* status);

/* Recorded; every hostrt tensor is in host memory. */
TF_CAPI_EXPORT extern void TF_KernelBuilder_HostMemory(TF_KernelBuilder* kernel_builder, const char* arg_name);

/* Among kernels that match, the highest priority is chosen. */
TF_CAPI_EXPORT extern void TF_KernelBuilder_Priority(TF_KernelBuilder* kernel_builder, int32_t priority_number);

/* A labelled kernel is chosen only where the program asks for the label (attr _kernel). */
TF_CAPI_EXPORT extern void TF_KernelBuilder_Label(TF_KernelBuilder* kernel_builder, const char* label);

/* Registers the kernel (taking the builder): TF_INVALID_ARGUMENT for a builder made with
 * NULL arguments, TF_ALREADY_EXISTS for the same op, device, constraints and label twice. */
TF_CAPI_EXPORT extern void TF_RegisterKernelBuilder(const char* kernel_name, TF_KernelBuilder* builder,
                                                    TF_Status* status);

/* TF_RegisterKernelBuilder when `serialized_kernel_def` is NULL; hostrt reads no protos,
 * so otherwise TF_UNIMPLEMENTED (the builder is still taken). */
TF_CAPI_EXPORT extern void TF_RegisterKernelBuilderWithKernelDef(const char* serialized_kernel_def,
                                                                 const char* name, TF_KernelBuilder* builder,
                                                                 TF_Status* status);

/* Frees a builder that was not registered (a registered one is ignored). */
TF_CAPI_EXPORT extern void TF_DeleteKernelBuilder(TF_KernelBuilder* builder);

/* NULL and TF_UNIMPLEMENTED: host kernels have no device stream. */
TF_CAPI_EXPORT extern SP_Stream TF_GetStream(TF_OpKernelContext* ctx, TF_Status* status);

/* The number of inputs and outputs of this execution. */
TF_CAPI_EXPORT extern int TF_NumInputs(TF_OpKernelContext* ctx);
TF_CAPI_EXPORT extern int TF_NumOutputs(TF_OpKernelContext* ctx);

/* A new handle on input `i` (the caller deletes it; the data is shared, not copied);
 * TF_OUT_OF_RANGE for a bad index. */
TF_CAPI_EXPORT extern void TF_GetInput(TF_OpKernelContext* ctx, int i, TF_Tensor** tensor, TF_Status* status);

typedef struct TF_InputRange_Args {
  size_t struct_size;
  void* priv; /* not used */
  int start;  /* output */
  int stop;   /* output */
  TF_Status* status; /* output */
} TF_InputRange_Args;

static const size_t TF_InputRange_Args_STRUCT_SIZE = TF_OFFSET_OF_END(TF_InputRange_Args, status);

/* The inputs [start, stop) the op's input arg `name` covers. */
TF_CAPI_EXPORT extern void TF_InputRange(TF_OpKernelContext* ctx, const char* name, TF_InputRange_Args* args);

/* Output `i` shares `tensor`'s data; TF_OUT_OF_RANGE, or TF_INVALID_ARGUMENT for a dtype
 * other than the op's, or TF_FAILED_PRECONDITION when the output already holds other data. */
TF_CAPI_EXPORT extern void TF_SetOutput(TF_OpKernelContext* ctx, int i, const TF_Tensor* tensor, TF_Status* status);

/* Reports that create (compute) failed: the program does not load (the execution's outputs
 * are errors), with this status. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_Failure(TF_OpKernelConstruction* ctx, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelContext_Failure(TF_OpKernelContext* ctx, TF_Status* status);

/* The dtype output `i` must have (0 for a bad index). */
TF_CAPI_EXPORT extern TF_DataType TF_ExpectedOutputDataType(TF_OpKernelContext* ctx, int i);

/* The step id the program was run with. */
TF_CAPI_EXPORT extern int64_t TF_StepId(TF_OpKernelContext* ctx);

/* The kernel's name (the op's use in the program), valid while the kernel lives. */
TF_CAPI_EXPORT extern TF_StringView TF_GetOpKernelName(TF_OpKernelContext* ctx);

/* The name of input `index` (its arg name, with ":k" for the k-th of a list). */
TF_CAPI_EXPORT extern TF_StringView TF_GetOpKernelRequestedInput(TF_OpKernelContext* ctx, size_t index);

/* Attr readers of create. GetAttrSize: `list_size` is -1 for a scalar, else the length;
 * `total_size` is a string's bytes, the strings' bytes of a list, a shape's rank or the
 * shapes' dims of a list, else -1. A missing attr is TF_NOT_FOUND, another kind
 * TF_INVALID_ARGUMENT. Strings are copied without a NUL, up to `max_length`; lists up to
 * `max_vals` items. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrSize(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                               int32_t* list_size, int32_t* total_size,
                                                               TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrType(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                               TF_DataType* val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt32(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                                int32_t* val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt64(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                                int64_t* val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrFloat(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                                float* val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrBool(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                               TF_Bool* val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrString(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                                 char* val, size_t max_length, TF_Status* status);
/* A new handle (the caller deletes it) on the attr's tensor, a program's `dense<...>`
 * attribute; GetAttrTensorList fills up to `max_values` handles. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTensor(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                                 TF_Tensor** val, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTypeList(TF_OpKernelConstruction* ctx,
                                                                   const char* attr_name, TF_DataType* vals,
                                                                   int max_vals, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt32List(TF_OpKernelConstruction* ctx,
                                                                    const char* attr_name, int32_t* vals,
                                                                    int max_vals, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrInt64List(TF_OpKernelConstruction* ctx,
                                                                    const char* attr_name, int64_t* vals,
                                                                    int max_vals, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrFloatList(TF_OpKernelConstruction* ctx,
                                                                    const char* attr_name, float* vals,
                                                                    int max_vals, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrBoolList(TF_OpKernelConstruction* ctx,
                                                                   const char* attr_name, TF_Bool* vals,
                                                                   int max_vals, TF_Status* status);
/* `vals[i]` points into `storage` (`storage_size` bytes), `lengths[i]` is its length;
 * TF_INVALID_ARGUMENT when `storage` is too small. */
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrStringList(TF_OpKernelConstruction* ctx,
                                                                     const char* attr_name, char** vals,
                                                                     size_t* lengths, int max_values, void* storage,
                                                                     size_t storage_size, TF_Status* status);
TF_CAPI_EXPORT extern void TF_OpKernelConstruction_GetAttrTensorList(TF_OpKernelConstruction* ctx,
                                                                     const char* attr_name, TF_Tensor** vals,
                                                                     int max_values, TF_Status* status);
TF_CAPI_EXPORT extern bool TF_OpKernelConstruction_HasAttr(TF_OpKernelConstruction* ctx, const char* attr_name,
                                                           TF_Status* status);

/* The kernel's name, valid during create. */
TF_CAPI_EXPORT extern TF_StringView TF_OpKernelConstruction_GetName(TF_OpKernelConstruction* ctx);

/* Function attrs and NodeDef protos do not exist in hostrt: NULL and TF_UNIMPLEMENTED. */
TF_CAPI_EXPORT extern TF_Buffer* TF_OpKernelConstruction_GetAttrFunction(TF_OpKernelConstruction* ctx,
                                                                         const char* attr_name, TF_Status* status);
TF_CAPI_EXPORT extern TF_Buffer* TF_OpKernelConstruction_GetNodeDef(TF_OpKernelConstruction* ctx,
                                                                    TF_Status* status);

/* A new handle on output `i` as set so far; NULL and TF_FAILED_PRECONDITION when it is not
 * set yet, TF_OUT_OF_RANGE for a bad index. */
TF_CAPI_EXPORT extern TF_Tensor* TF_GetMutableOutput(TF_OpKernelContext* ctx, int i, TF_Status* status);

/* Protos of a TensorFlow session: TF_UNIMPLEMENTED, the buffer left unchanged. */
TF_CAPI_EXPORT extern void TF_GetSerializedFunctionDefLibrary(TF_OpKernelContext* ctx,
                                                              TF_Buffer* serialized_function_def_library,
                                                              TF_Status* status);
TF_CAPI_EXPORT extern void TF_GetSerializedConfigProto(TF_OpKernelContext* ctx, TF_Buffer* serialized_config_proto,
                                                       TF_Status* status);

/* Every input and output is in host memory: true for a valid index, else false and
 * TF_OUT_OF_RANGE. */
TF_CAPI_EXPORT extern bool TF_IsHostMemoryInput(TF_OpKernelContext* ctx, int i, TF_Status* status);
TF_CAPI_EXPORT extern bool TF_IsHostMemoryOutput(TF_OpKernelContext* ctx, int i, TF_Status* status);

/* hostrt programs have no control-flow frames and no GraphDef: 0, 0 and 0. */
TF_CAPI_EXPORT extern uint64_t TF_GetFrameId(TF_OpKernelContext* ctx);
TF_CAPI_EXPORT extern int64_t TF_GetIterId(TF_OpKernelContext* ctx);
TF_CAPI_EXPORT extern int TF_GetGraphDefVersion(TF_OpKernelContext* ctx);

/* No resource manager: an empty name. */
TF_CAPI_EXPORT extern TF_StringView TF_GetResourceMgrDefaultContainerName(TF_OpKernelContext* ctx);

/* A new tensor from the run's arena set as output `index` (the returned handle is the
 * caller's to delete); TF_RESOURCE_EXHAUSTED when the arena is out of memory. */
TF_CAPI_EXPORT TF_Tensor* TF_AllocateOutput(TF_OpKernelContext* context, int index, TF_DataType dtype,
                                            const int64_t* dims, int num_dims, size_t len, TF_Status* status);

/* Output `output_index` reuses the buffer of the first candidate input that has the
 * output's dtype and byte size and that no one else holds (`*forwarded_input` names it), or
 * a new one (`*forwarded_input` is -1). */
TF_CAPI_EXPORT TF_Tensor* TF_ForwardInputOrAllocateOutput(TF_OpKernelContext* context,
                                                          const int* candidate_input_indices,
                                                          int num_candidate_input_indices, int output_index,
                                                          const int64_t* output_dims, int output_num_dims,
                                                          int* forwarded_input, TF_Status* status);

/* A temporary tensor from the run's arena (the caller deletes it). */
TF_CAPI_EXPORT extern TF_Tensor* TF_AllocateTemp(TF_OpKernelContext* context, TF_DataType dtype,
                                                 const int64_t* dims, int num_dims,
                                                 TF_AllocatorAttributes* alloc_attrs, TF_Status* status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_KERNELS_H_ */
