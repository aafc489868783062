/* The seed's device API for host kernels (not part of TensorFlow's headers): the kernel's
 * thread pool, closures passed across the C API, and the execution's status.
 *
 * hostrt runs these on the work queue of the program's host: the multi-threaded queue where
 * there is one (`hostrt run --work_queue_type mstd`), inline on the single-threaded one.
 * Functions given here are called from any thread, each range exactly once. */
#ifndef HOSTRT_TF_DEVICE_API_H_
#define HOSTRT_TF_DEVICE_API_H_

#include <stdint.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/tf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs `fn` later on the work queue (now, where there is none). */
TF_CAPI_EXPORT extern void TF_ThreadPool_Schedule(TF_OpKernelContext* context, void (*fn)(void));

/* TF_ThreadPool_Schedule; the [start, limit) thread hint is not used. */
TF_CAPI_EXPORT extern void TF_ThreadPool_ScheduleWithHint(TF_OpKernelContext* context, void (*fn)(void), int start,
                                                          int limit);

/* Calls fn(start, end) over disjoint ranges covering [0, total), on the caller and the
 * queue's workers, and returns when all have run. `cost_per_unit` is not used. */
TF_CAPI_EXPORT extern void TF_ThreadPool_ParallelFor(TF_OpKernelContext* context, int64_t total,
                                                     int64_t cost_per_unit, void (*fn)(int64_t, int64_t));

/* TF_ThreadPool_ParallelFor, with the worker's id (0 for the calling thread) as third
 * argument. */
TF_CAPI_EXPORT extern void TF_ThreadPool_ParallelForWithWorkerId(TF_OpKernelContext* context, int64_t total,
                                                                 int64_t cost_per_unit,
                                                                 void (*fn)(int64_t, int64_t, int));

/* A closure (a std::function on the heap, say): call_func_ptr(func_ptr) runs it,
 * delete_func_ptr(func_ptr) frees it. */
typedef struct TF_FuncWrap {
  void* func_ptr;
  void (*call_func_ptr)(void*);
  void (*delete_func_ptr)(void*);
} TF_FuncWrap;

/* Runs the closure once on the work queue, then frees it. */
TF_CAPI_EXPORT extern void TF_ThreadPool_ScheduleFuncWrap(TF_OpKernelContext* context, TF_FuncWrap func);

/* Copies the current kernel execution's status (the failure it reported, else TF_OK) into
 * `status`; TF_OK outside a kernel's compute. */
TF_CAPI_EXPORT extern void TF_OpKernelContext_UpdateStatus(TF_Status* status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* HOSTRT_TF_DEVICE_API_H_ */
