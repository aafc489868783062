//! The seed's thread-pool calls from a kernel inside a program: `ParallelFor` covers every
//! index exactly once, on the caller alone with the single-threaded queue and on several
//! workers with `mstd`; `Schedule` and `FuncWrap` tasks run once; `UpdateStatus` sees the
//! execution's failure.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hostrt_c::tf::kernels::context::*;
use hostrt_c::tf::kernels::threads::*;
use hostrt_c::tf::kernels::*;
use hostrt_c::tf::ops::*;
use hostrt_c::tf::tf_program::TfProgram;
use hostrt_c::tf::tf_status::*;
use hostrt_c::tf::tf_tensor::*;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, MultiThreadedWorkQueue, leaked_arena};

/// Which workers ran a range, per run (bit i: worker i).
static WORKERS: AtomicUsize = AtomicUsize::new(0);
static SCHEDULED: AtomicUsize = AtomicUsize::new(0);
static WRAPPED: AtomicUsize = AtomicUsize::new(0);
/// The output the ranges write: one slot per index, counting writes.
static HITS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

unsafe extern "C" fn range(start: i64, end: i64, worker: i32) {
    WORKERS.fetch_or(1 << worker.clamp(0, 31), Ordering::SeqCst);
    let mut hits = HITS.lock().unwrap();
    for i in start..end {
        hits[i as usize] += 1;
    }
}

unsafe extern "C" fn scheduled() {
    SCHEDULED.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C" fn call_wrapped(state: *mut c_void) {
    // SAFETY: the Box<u32> the kernel made.
    WRAPPED.fetch_add(unsafe { *state.cast::<u32>() } as usize, Ordering::SeqCst);
}

unsafe extern "C" fn delete_wrapped(state: *mut c_void) {
    // SAFETY: the Box<u32> the kernel made, freed once.
    drop(unsafe { Box::from_raw(state.cast::<u32>()) });
    WRAPPED.fetch_add(100, Ordering::SeqCst);
}

/// Op `Spread`: y = x, after a ParallelFor over 1000 indices, a scheduled task and a closure;
/// with attr `fail`, it fails and checks that UpdateStatus sees it.
unsafe extern "C-unwind" fn spread(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context; handles freed once.
    unsafe {
        *HITS.lock().unwrap() = vec![0; 1000];
        TF_ThreadPool_ParallelForWithWorkerId(ctx, 1000, 1, Some(range));
        TF_ThreadPool_Schedule(ctx, Some(scheduled));
        let state = Box::into_raw(Box::new(7u32)).cast();
        TF_ThreadPool_ScheduleFuncWrap(
            ctx,
            TF_FuncWrap {
                func_ptr: state,
                call_func_ptr: Some(call_wrapped),
                delete_func_ptr: Some(delete_wrapped),
            },
        );
        let status = TF_NewStatus();
        let mut x = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut x, status);
        TF_SetOutput(ctx, 0, x, status);
        TF_DeleteTensor(x);
        let mut after = TF_Status::default();
        TF_OpKernelContext_UpdateStatus(&mut after);
        assert_eq!(after.code(), TF_OK);
        TF_SetStatus(status, TF_ABORTED, c"stop".as_ptr());
        TF_OpKernelContext_Failure(ctx, status);
        TF_OpKernelContext_UpdateStatus(&mut after);
        assert_eq!((after.code(), after.message()), (TF_ABORTED, "stop"));
        TF_DeleteStatus(status);
    }
}

fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: fresh builders consumed by registration; C literals.
    ONCE.call_once(|| unsafe {
        let s = TF_NewStatus();
        let op = TF_NewOpDefinitionBuilder(c"Spread".as_ptr());
        TF_OpDefinitionBuilderAddInput(op, c"x: float".as_ptr());
        TF_OpDefinitionBuilderAddOutput(op, c"y: float".as_ptr());
        TF_RegisterOpDefinition(op, s);
        let b = TF_NewKernelBuilder(c"Spread".as_ptr(), c"CPU".as_ptr(), None, Some(spread), None);
        TF_RegisterKernelBuilder(c"SpreadOp".as_ptr(), b, s);
        assert_eq!(TF_GetCode(s), TF_OK);
        TF_DeleteStatus(s);
    });
}

const PROGRAM: &str = r#"func.func @main() {
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[1.0]> : tensor<1xf32>} : () -> !t.tensor
  %y = "tf.Spread"(%x) : (!t.tensor) -> !t.tensor
  %ch1 = tfrt_dht.print_tensor %y, %ch
  tfrt.return
}
"#;

/// Runs the program on `queue`; returns the errors reported.
fn run_on(queue: &dyn ConcurrentWorkQueue) -> String {
    setup();
    let bef = AlignedBytes::new(&hostrt_compiler::compile("t.mlir", PROGRAM, Default::default()).unwrap());
    let (_arena, alloc) = leaked_arena(1 << 20).unwrap();
    let mut reg = KernelRegistry::<1024>::new();
    register_basic_kernels(&mut reg).unwrap();
    register_tensor_kernels(&mut reg).unwrap();
    let errors = Mutex::new(String::new());
    let diag = |d: &Diagnostic| errors.lock().unwrap().push_str(&format!("{d}\n"));
    let host = HostContext::new(alloc, queue).with_diagnostics(&diag);
    let program = TfProgram::load(bef.as_bytes(), &reg, alloc).unwrap();
    run_functions(&program, &host, &DriverOptions::default(), &mut |_| {}).unwrap();
    queue.quiesce();
    errors.into_inner().unwrap()
}

#[test]
fn thread_pool_calls_run_on_the_programs_work_queue() {
    for (name, queue) in [
        ("s", Box::new(SingleThreadedWorkQueue::new()) as Box<dyn ConcurrentWorkQueue>),
        ("mstd", Box::new(MultiThreadedWorkQueue::new(4, 1))),
    ] {
        WORKERS.store(0, Ordering::SeqCst);
        let (s0, w0) = (SCHEDULED.load(Ordering::SeqCst), WRAPPED.load(Ordering::SeqCst));
        let errors = run_on(queue.as_ref());
        assert!(errors.contains("stop"), "{name}: the kernel's failure is the result: {errors}");
        assert!(HITS.lock().unwrap().iter().all(|h| *h == 1), "{name}: every index exactly once");
        let workers = WORKERS.load(Ordering::SeqCst);
        if name == "s" {
            assert_eq!(workers, 1, "single-threaded: the caller alone");
        } else {
            // Any of the caller (worker 0) and the 3 helpers may have claimed the shards.
            assert!(workers != 0 && workers < 1 << 4, "mstd: workers {workers:b}");
        }
        assert_eq!(SCHEDULED.load(Ordering::SeqCst), s0 + 1, "{name}: scheduled once");
        assert_eq!(WRAPPED.load(Ordering::SeqCst), w0 + 107, "{name}: the closure ran and was freed once");
    }
}
