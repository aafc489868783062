/* The embedding API for Swift and Objective-C (module `Hostrt`, module.modulemap): every
 * function of hostrt.h declared again with nullability and a Swift name. Handles a function
 * needs are _Nonnull (hostrt still checks them); statuses, options and outputs that may be
 * NULL are _Nullable, and so is every result that is NULL on failure.
 * capi/tests/header.rs keeps this file complete and compiles it as C, C++ and Objective-C. */
#ifndef HOSTRT_SWIFT_H
#define HOSTRT_SWIFT_H

#include "hostrt.h"

#if defined(__clang__)
#define HOSTRT_NULLABLE _Nullable
#define HOSTRT_NONNULL _Nonnull
#define HOSTRT_SWIFT_NAME(name) __attribute__((swift_name(#name)))
#else
#define HOSTRT_NULLABLE
#define HOSTRT_NONNULL
#define HOSTRT_SWIFT_NAME(name)
#endif

#ifdef __cplusplus
extern "C" {
#endif

const char* HOSTRT_NONNULL hostrt_version(void) HOSTRT_SWIFT_NAME(hostrtVersion());
uint32_t hostrt_abi_version(void) HOSTRT_SWIFT_NAME(hostrtABIVersion());

hostrt_status* HOSTRT_NULLABLE hostrt_status_new(void) HOSTRT_SWIFT_NAME(hostrtStatusNew());
void hostrt_status_destroy(hostrt_status* HOSTRT_NULLABLE status) HOSTRT_SWIFT_NAME(hostrtStatusDestroy(_:));
hostrt_code hostrt_status_code(const hostrt_status* HOSTRT_NONNULL status) HOSTRT_SWIFT_NAME(hostrtStatusCode(_:));
const char* HOSTRT_NONNULL hostrt_status_message(const hostrt_status* HOSTRT_NONNULL status)
    HOSTRT_SWIFT_NAME(hostrtStatusMessage(_:));
bool hostrt_status_location(const hostrt_status* HOSTRT_NONNULL status,
                            const char* HOSTRT_NULLABLE* HOSTRT_NULLABLE file, uint32_t* HOSTRT_NULLABLE line,
                            uint32_t* HOSTRT_NULLABLE column)
    HOSTRT_SWIFT_NAME(hostrtStatusLocation(_:file:line:column:));

void hostrt_host_options_init(hostrt_host_options* HOSTRT_NONNULL options)
    HOSTRT_SWIFT_NAME(hostrtHostOptionsInit(_:));
hostrt_host* HOSTRT_NULLABLE hostrt_host_new(const hostrt_host_options* HOSTRT_NULLABLE options,
                                             hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtHostNew(options:status:));
hostrt_code hostrt_host_destroy(hostrt_host* HOSTRT_NONNULL host, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtHostDestroy(_:status:));
hostrt_code hostrt_host_allocator_stats(const hostrt_host* HOSTRT_NONNULL host,
                                        hostrt_allocator_stats* HOSTRT_NONNULL stats,
                                        hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtHostAllocatorStats(_:stats:status:));
hostrt_code hostrt_load_plugin(const char* HOSTRT_NONNULL path, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtLoadPlugin(path:status:));
hostrt_code hostrt_trace_begin(const hostrt_host* HOSTRT_NONNULL host, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTraceBegin(_:status:));
hostrt_code hostrt_trace_end(const hostrt_host* HOSTRT_NONNULL host, char* HOSTRT_NULLABLE buffer,
                             size_t* HOSTRT_NONNULL size, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTraceEnd(_:buffer:size:status:));
hostrt_code hostrt_trace_end_to_file(const hostrt_host* HOSTRT_NONNULL host, const char* HOSTRT_NONNULL path,
                                     hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTraceEndToFile(_:path:status:));

hostrt_program* HOSTRT_NULLABLE hostrt_program_load(const hostrt_host* HOSTRT_NONNULL host,
                                                    const void* HOSTRT_NONNULL bytes, size_t len,
                                                    hostrt_load_mode mode, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramLoad(host:bytes:length:mode:status:));
hostrt_program* HOSTRT_NULLABLE hostrt_program_load_file(const hostrt_host* HOSTRT_NONNULL host,
                                                         const char* HOSTRT_NONNULL path,
                                                         hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramLoadFile(host:path:status:));
hostrt_program* HOSTRT_NULLABLE hostrt_program_from_tflite(const hostrt_host* HOSTRT_NONNULL host,
                                                           const void* HOSTRT_NONNULL bytes, size_t len,
                                                           hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramFromTflite(host:bytes:length:status:));
hostrt_program* HOSTRT_NULLABLE hostrt_program_from_tflite_file(const hostrt_host* HOSTRT_NONNULL host,
                                                                const char* HOSTRT_NONNULL path,
                                                                hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramFromTfliteFile(host:path:status:));
hostrt_program* HOSTRT_NULLABLE hostrt_program_from_onnx(const hostrt_host* HOSTRT_NONNULL host,
                                                         const void* HOSTRT_NONNULL bytes, size_t len,
                                                         hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramFromOnnx(host:bytes:length:status:));
hostrt_program* HOSTRT_NULLABLE hostrt_program_from_onnx_file(const hostrt_host* HOSTRT_NONNULL host,
                                                              const char* HOSTRT_NONNULL path,
                                                              hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramFromOnnxFile(host:path:status:));
hostrt_code hostrt_program_destroy(hostrt_program* HOSTRT_NONNULL program, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramDestroy(_:status:));
size_t hostrt_program_function_count(const hostrt_program* HOSTRT_NONNULL program)
    HOSTRT_SWIFT_NAME(hostrtProgramFunctionCount(_:));
const char* HOSTRT_NULLABLE hostrt_program_function_name(const hostrt_program* HOSTRT_NONNULL program, size_t index)
    HOSTRT_SWIFT_NAME(hostrtProgramFunctionName(_:index:));
hostrt_code hostrt_program_function_index(const hostrt_program* HOSTRT_NONNULL program,
                                          const char* HOSTRT_NONNULL name, size_t* HOSTRT_NONNULL index,
                                          hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramFunctionIndex(_:name:index:status:));
hostrt_code hostrt_program_signature(const hostrt_program* HOSTRT_NONNULL program, const char* HOSTRT_NONNULL name,
                                     size_t* HOSTRT_NULLABLE num_args, size_t* HOSTRT_NULLABLE num_results,
                                     hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramSignature(_:function:arguments:results:status:));
hostrt_code hostrt_program_type(const hostrt_program* HOSTRT_NONNULL program, const char* HOSTRT_NONNULL name,
                                bool is_result, size_t index, hostrt_type* HOSTRT_NONNULL type_,
                                hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtProgramType(_:function:isResult:index:type:status:));

hostrt_tensor* HOSTRT_NULLABLE hostrt_tensor_new(const hostrt_host* HOSTRT_NONNULL host, hostrt_dtype dtype,
                                                 const int64_t* HOSTRT_NULLABLE dims, size_t rank,
                                                 const void* HOSTRT_NULLABLE data, size_t len,
                                                 hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTensorNew(host:dtype:dims:rank:data:length:status:));
hostrt_tensor* HOSTRT_NULLABLE hostrt_tensor_borrow(const hostrt_host* HOSTRT_NONNULL host, hostrt_dtype dtype,
                                                    const int64_t* HOSTRT_NULLABLE dims, size_t rank,
                                                    void* HOSTRT_NULLABLE data, size_t len, hostrt_release_fn HOSTRT_NULLABLE release,
                                                    void* HOSTRT_NULLABLE arg, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTensorBorrow(host:dtype:dims:rank:data:length:release:argument:status:));
hostrt_code hostrt_tensor_destroy(hostrt_tensor* HOSTRT_NONNULL tensor, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtTensorDestroy(_:status:));
hostrt_dtype hostrt_tensor_dtype(const hostrt_tensor* HOSTRT_NONNULL tensor) HOSTRT_SWIFT_NAME(hostrtTensorDtype(_:));
size_t hostrt_tensor_rank(const hostrt_tensor* HOSTRT_NONNULL tensor) HOSTRT_SWIFT_NAME(hostrtTensorRank(_:));
const int64_t* HOSTRT_NULLABLE hostrt_tensor_dims(const hostrt_tensor* HOSTRT_NONNULL tensor)
    HOSTRT_SWIFT_NAME(hostrtTensorDims(_:));
size_t hostrt_tensor_byte_size(const hostrt_tensor* HOSTRT_NONNULL tensor)
    HOSTRT_SWIFT_NAME(hostrtTensorByteSize(_:));
void* HOSTRT_NULLABLE hostrt_tensor_data(const hostrt_tensor* HOSTRT_NONNULL tensor)
    HOSTRT_SWIFT_NAME(hostrtTensorData(_:));

hostrt_code hostrt_call(const hostrt_program* HOSTRT_NONNULL program, const char* HOSTRT_NONNULL name,
                        const hostrt_value* HOSTRT_NULLABLE args, size_t nargs,
                        hostrt_results* HOSTRT_NULLABLE* HOSTRT_NONNULL results,
                        hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtCall(_:function:arguments:count:results:status:));
hostrt_code hostrt_call_into(const hostrt_program* HOSTRT_NONNULL program, size_t function,
                             const hostrt_value* HOSTRT_NULLABLE args, size_t nargs,
                             hostrt_value* HOSTRT_NULLABLE results, size_t nresults,
                             hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtCallInto(_:function:arguments:count:results:resultCount:status:));
hostrt_code hostrt_call_async(const hostrt_program* HOSTRT_NONNULL program, const char* HOSTRT_NONNULL name,
                              const hostrt_value* HOSTRT_NULLABLE args, size_t nargs, hostrt_done_fn HOSTRT_NULLABLE done,
                              void* HOSTRT_NULLABLE user, hostrt_async_call* HOSTRT_NULLABLE* HOSTRT_NONNULL call,
                              hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtCallAsync(_:function:arguments:count:done:user:call:status:));
hostrt_code hostrt_async_call_cancel(const hostrt_async_call* HOSTRT_NONNULL call,
                                     hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtAsyncCallCancel(_:status:));
hostrt_code hostrt_async_call_destroy(hostrt_async_call* HOSTRT_NONNULL call, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtAsyncCallDestroy(_:status:));
size_t hostrt_results_count(const hostrt_results* HOSTRT_NONNULL results) HOSTRT_SWIFT_NAME(hostrtResultsCount(_:));
hostrt_code hostrt_results_get(const hostrt_results* HOSTRT_NONNULL results, size_t index,
                               hostrt_value* HOSTRT_NONNULL value, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtResultsGet(_:index:value:status:));
hostrt_code hostrt_results_destroy(hostrt_results* HOSTRT_NONNULL results, hostrt_status* HOSTRT_NULLABLE status)
    HOSTRT_SWIFT_NAME(hostrtResultsDestroy(_:status:));

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOSTRT_SWIFT_H */
