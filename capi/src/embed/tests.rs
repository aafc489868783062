//! The embedding API through its exported functions, as a C app would call them: programs
//! with scalars and tensors, errors with locations, async calls, and every kind of misuse
//! answered with a status.

use std::ffi::{CStr, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

const PROGRAM: &str = r#"func.func @divmod(%a: i32, %b: i32) -> (i32, i32) {
  %q, %r = tfrt.div.i32 %a, %b
  tfrt.return %q, %r : i32, i32
}

func.func @same(%x: !t.tensor) -> !t.tensor {
  tfrt.return %x : !t.tensor
}

func.func @scale(%x: !t.tensor, %s: f32) -> !t.tensor {
  tfrt.return %x : !t.tensor
}
"#;

fn bef(text: &str) -> Vec<u8> {
    hostrt_compiler::compile("embed.mlir", text, Default::default()).unwrap()
}

/// A status and helpers to read it.
struct Status(*mut hostrt_status);

impl Status {
    fn new() -> Self {
        Status(hostrt_status_new())
    }
    fn code(&self) -> hostrt_code {
        // SAFETY: a live status.
        unsafe { hostrt_status_code(self.0) }
    }
    fn message(&self) -> String {
        // SAFETY: a live status; the message is valid until it is next used.
        unsafe { CStr::from_ptr(hostrt_status_message(self.0)) }.to_string_lossy().into_owned()
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        // SAFETY: made by hostrt_status_new, destroyed once.
        unsafe { hostrt_status_destroy(self.0) }
    }
}

fn host_with_arena(bytes: usize, workers: u32) -> *mut hostrt_host {
    let s = Status::new();
    // SAFETY: options initialised by the API; a live status.
    unsafe {
        let mut o = std::mem::zeroed();
        hostrt_host_options_init(&mut o);
        o.arena_bytes = bytes;
        o.worker_threads = workers;
        let h = hostrt_host_new(&o, s.0);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        h
    }
}

fn load(host: *mut hostrt_host, text: &str) -> *mut hostrt_program {
    let s = Status::new();
    let bytes = bef(text);
    // SAFETY: live handles; the bytes are copied.
    let p = unsafe { hostrt_program_load(host, bytes.as_ptr().cast(), bytes.len(), HOSTRT_LOAD_COPY, s.0) };
    assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
    p
}

fn i32v(i: i32) -> hostrt_value {
    hostrt_value { type_: HOSTRT_TYPE_I32, i: i64::from(i), f: 0.0, tensor: null_mut() }
}

fn tensor_arg(tensor: *mut hostrt_tensor) -> hostrt_value {
    hostrt_value { type_: HOSTRT_TYPE_TENSOR, i: 0, f: 0.0, tensor }
}

fn destroy(host: *mut hostrt_host, program: *mut hostrt_program) {
    let s = Status::new();
    // SAFETY: live handles, destroyed once, the program first.
    unsafe {
        assert_eq!(hostrt_program_destroy(program, s.0), HOSTRT_OK);
        assert_eq!(hostrt_host_destroy(host, s.0), HOSTRT_OK, "{}", s.message());
    }
}

#[test]
fn scalars_in_and_out_and_a_failing_result_with_its_location() {
    let host = host_with_arena(1 << 20, 0);
    let program = load(host, PROGRAM);
    let s = Status::new();
    // SAFETY: live handles; outputs are locals.
    unsafe {
        assert_eq!(hostrt_program_function_count(program), 3);
        assert_eq!(CStr::from_ptr(hostrt_program_function_name(program, 0)).to_str(), Ok("divmod"));
        let (mut na, mut nr) = (0, 0);
        assert_eq!(hostrt_program_signature(program, c"scale".as_ptr(), &mut na, &mut nr, s.0), HOSTRT_OK);
        assert_eq!((na, nr), (2, 1));
        let mut t = 0;
        hostrt_program_type(program, c"scale".as_ptr(), false, 1, &mut t, s.0);
        assert_eq!(t, HOSTRT_TYPE_F32);
        assert_eq!(
            hostrt_program_type(program, c"scale".as_ptr(), true, 1, &mut t, s.0),
            HOSTRT_OUT_OF_RANGE
        );

        let mut results = null_mut();
        let args = [i32v(17), i32v(5)];
        assert_eq!(hostrt_call(program, c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0), HOSTRT_OK);
        assert_eq!(hostrt_results_count(results), 2);
        let mut v = i32v(0);
        assert_eq!(hostrt_results_get(results, 1, &mut v, s.0), HOSTRT_OK);
        assert_eq!((v.type_, v.i), (HOSTRT_TYPE_I32, 2));
        assert_eq!(hostrt_results_get(results, 2, &mut v, s.0), HOSTRT_OUT_OF_RANGE);
        hostrt_results_destroy(results, s.0);

        // Division by zero fails the results, not the call: each result carries the error
        // and the kernel's location.
        let args = [i32v(1), i32v(0)];
        assert_eq!(hostrt_call(program, c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0), HOSTRT_OK);
        assert_eq!(hostrt_results_get(results, 0, &mut v, s.0), HOSTRT_INTERNAL);
        assert!(s.message().contains("Divide by zero"), "{}", s.message());
        let (mut file, mut line, mut col) = (std::ptr::null(), 0, 0);
        assert!(hostrt_status_location(s.0, &mut file, &mut line, &mut col));
        assert_eq!((CStr::from_ptr(file).to_str(), line, col), (Ok("embed.mlir"), 2, 12));
        hostrt_results_destroy(results, s.0);
    }
    destroy(host, program);
}

#[test]
fn tensors_cross_without_copies() {
    let host = host_with_arena(1 << 20, 0);
    let program = load(host, PROGRAM);
    let s = Status::new();
    // SAFETY: live handles; data and dims arrays as long as the counts given.
    unsafe {
        let values = [1.5f32, -2.0, 4.0];
        let t =
            hostrt_tensor_new(host, HOSTRT_DTYPE_F32, [3i64].as_ptr(), 1, values.as_ptr().cast(), 12, s.0);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let arg = tensor_arg(t);
        let mut results = null_mut();
        assert_eq!(hostrt_call(program, c"same".as_ptr(), &arg, 1, &mut results, s.0), HOSTRT_OK);
        let mut v = i32v(0);
        assert_eq!(hostrt_results_get(results, 0, &mut v, s.0), HOSTRT_OK);
        assert_eq!(v.type_, HOSTRT_TYPE_TENSOR);
        assert_eq!(
            hostrt_tensor_data(v.tensor),
            hostrt_tensor_data(t),
            "the result shares the argument's buffer"
        );
        assert_eq!((hostrt_tensor_dtype(v.tensor), hostrt_tensor_rank(v.tensor)), (HOSTRT_DTYPE_F32, 1));
        assert_eq!(*hostrt_tensor_dims(v.tensor), 3);
        assert_eq!(std::slice::from_raw_parts(hostrt_tensor_data(v.tensor).cast::<f32>(), 3), values);
        hostrt_results_destroy(results, s.0);
        // The host refuses to go while tensors of it live.
        assert_eq!(hostrt_host_destroy(host, s.0), HOSTRT_FAILED_PRECONDITION);
        assert!(s.message().contains("destroy them first"));
        hostrt_tensor_destroy(v.tensor, s.0);
        hostrt_tensor_destroy(t, s.0);
    }
    destroy(host, program);
}

#[test]
fn the_index_fast_path_writes_results_into_caller_memory() {
    let text = format!(
        "{PROGRAM}\nfunc.func @both(%x: !t.tensor, %a: i32, %b: i32) -> (!t.tensor, i32) {{\n  \
         %q, %r = tfrt.div.i32 %a, %b\n  tfrt.return %x, %q : !t.tensor, i32\n}}\n"
    );
    let host = host_with_arena(1 << 20, 0);
    let program = load(host, &text);
    let s = Status::new();
    // SAFETY: live handles; argument and result arrays as long as the counts given.
    unsafe {
        let (mut divmod, mut both) = (99, 99);
        assert_eq!(hostrt_program_function_index(program, c"divmod".as_ptr(), &mut divmod, s.0), HOSTRT_OK);
        assert_eq!(hostrt_program_function_index(program, c"both".as_ptr(), &mut both, s.0), HOSTRT_OK);
        assert_eq!((divmod, both), (0, 3));
        assert_eq!(
            hostrt_program_function_index(program, c"nope".as_ptr(), &mut both, s.0),
            HOSTRT_NOT_FOUND
        );

        let mut out = [i32v(0), i32v(0)];
        let args = [i32v(17), i32v(5)];
        assert_eq!(hostrt_call_into(program, divmod, args.as_ptr(), 2, out.as_mut_ptr(), 2, s.0), HOSTRT_OK);
        assert_eq!((out[0].i, out[1].i), (3, 2));
        // Misuse: room for the wrong number of results, no room, an index out of range.
        assert_eq!(
            hostrt_call_into(program, divmod, args.as_ptr(), 2, out.as_mut_ptr(), 1, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert!(s.message().contains("'divmod' has 2 results"), "{}", s.message());
        assert_eq!(
            hostrt_call_into(program, divmod, args.as_ptr(), 2, null_mut(), 2, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(
            hostrt_call_into(program, 4, args.as_ptr(), 2, out.as_mut_ptr(), 2, s.0),
            HOSTRT_OUT_OF_RANGE
        );
        assert_eq!(
            hostrt_call_into(program, usize::MAX, args.as_ptr(), 2, out.as_mut_ptr(), 2, s.0),
            HOSTRT_OUT_OF_RANGE
        );
        assert_eq!(
            hostrt_call_into(program, divmod, args.as_ptr(), 1, out.as_mut_ptr(), 2, s.0),
            HOSTRT_INVALID_ARGUMENT
        );

        // A tensor result is a new handle; a failing later result takes it back (all or
        // nothing) and reports the kernel's location.
        let values = [1.0f32, 2.0];
        let t = hostrt_tensor_new(host, HOSTRT_DTYPE_F32, [2i64].as_ptr(), 1, values.as_ptr().cast(), 8, s.0);
        let args = [tensor_arg(t), i32v(7), i32v(2)];
        let mut out = [i32v(0), i32v(0)];
        assert_eq!(hostrt_call_into(program, both, args.as_ptr(), 3, out.as_mut_ptr(), 2, s.0), HOSTRT_OK);
        assert_eq!((out[0].type_, out[1].i), (HOSTRT_TYPE_TENSOR, 3));
        assert_eq!(hostrt_tensor_data(out[0].tensor), hostrt_tensor_data(t));
        hostrt_tensor_destroy(out[0].tensor, s.0);
        let args = [tensor_arg(t), i32v(7), i32v(0)];
        assert_eq!(
            hostrt_call_into(program, both, args.as_ptr(), 3, out.as_mut_ptr(), 2, s.0),
            HOSTRT_INTERNAL
        );
        assert!(s.message().contains("Divide by zero"), "{}", s.message());
        let (mut file, mut line, mut col) = (std::ptr::null(), 0, 0);
        assert!(hostrt_status_location(s.0, &mut file, &mut line, &mut col));
        assert_eq!((CStr::from_ptr(file).to_str(), line), (Ok("embed.mlir"), 15));
        hostrt_tensor_destroy(t, s.0);
    }
    // The host goes: no tensor handle was left behind by the failed call.
    destroy(host, program);
}

static RELEASED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn release(data: *mut c_void, len: usize, arg: *mut c_void) {
    // The length given: 8, or 7 for the test's failing borrow.
    if !(arg as usize == 42 && (len == 8 || len == 7)) {
        std::process::abort();
    }
    // SAFETY: the Box leaked for the test.
    drop(unsafe { Box::from_raw(data.cast::<[f32; 2]>()) });
    RELEASED.fetch_add(1, Ordering::SeqCst);
}

/// Borrows `len` bytes at `data` as an f32[2] tensor released by `release` (argument 42).
///
/// # Safety
/// `data` is a leaked box of two floats that `release` frees.
unsafe fn borrow_two_floats(
    host: *mut hostrt_host,
    data: *mut [f32; 2],
    len: usize,
    s: &Status,
) -> *mut hostrt_tensor {
    let arg = 42 as *mut c_void;
    // SAFETY: one dim; the bytes are the caller's until `release` runs.
    unsafe {
        hostrt_tensor_borrow(
            host,
            HOSTRT_DTYPE_F32,
            [2i64].as_ptr(),
            1,
            data.cast(),
            len,
            Some(release),
            arg,
            s.0,
        )
    }
}

#[test]
fn borrowed_tensors_give_their_bytes_back_once() {
    let host = host_with_arena(1 << 16, 0);
    let program = load(host, PROGRAM);
    let s = Status::new();
    // SAFETY: live handles; the data is a leaked box released by `release`.
    unsafe {
        let data = Box::into_raw(Box::new([3.0f32, 4.0]));
        let t = borrow_two_floats(host, data, 8, &s);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        assert_eq!(hostrt_tensor_data(t), data.cast());
        let arg = tensor_arg(t);
        let mut results = null_mut();
        assert_eq!(hostrt_call(program, c"same".as_ptr(), &arg, 1, &mut results, s.0), HOSTRT_OK);
        let before = RELEASED.load(Ordering::SeqCst);
        hostrt_tensor_destroy(t, s.0);
        assert_eq!(RELEASED.load(Ordering::SeqCst), before, "the results still share the bytes");
        hostrt_results_destroy(results, s.0);
        assert_eq!(RELEASED.load(Ordering::SeqCst), before + 1);
        // A failed borrow releases at once: 7 bytes are not a [2] f32 tensor.
        let data = Box::into_raw(Box::new([0.0f32, 0.0]));
        let t = borrow_two_floats(host, data, 7, &s);
        assert!(t.is_null());
        assert_eq!(s.code(), HOSTRT_INVALID_ARGUMENT);
        assert_eq!(RELEASED.load(Ordering::SeqCst), before + 2);
    }
    destroy(host, program);
}

#[test]
fn misuse_is_a_status_not_a_crash() {
    let host = host_with_arena(1 << 16, 0);
    let program = load(host, PROGRAM);
    let s = Status::new();
    // SAFETY: every handle passed is live, NULL or deliberately wrong; the table checks them.
    unsafe {
        let mut results = null_mut();
        let args = [i32v(1), i32v(2)];
        // NULL and wrongly typed handles.
        assert_eq!(
            hostrt_call(null_mut(), c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(s.message(), "NULL hostrt_program");
        assert_eq!(
            hostrt_call(host.cast(), c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(s.message(), "a hostrt_host was passed where a hostrt_program is expected");
        // No such function, wrong count, wrong types, an i64 that is not an i32.
        assert_eq!(
            hostrt_call(program, c"nope".as_ptr(), args.as_ptr(), 2, &mut results, s.0),
            HOSTRT_NOT_FOUND
        );
        assert_eq!(
            hostrt_call(program, c"divmod".as_ptr(), args.as_ptr(), 1, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(s.message(), "'divmod' takes 2 arguments, got 1");
        let bad = [i32v(1), hostrt_value { type_: HOSTRT_TYPE_F32, i: 0, f: 1.0, tensor: null_mut() }];
        assert_eq!(
            hostrt_call(program, c"divmod".as_ptr(), bad.as_ptr(), 2, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(s.message(), "argument 1 of 'divmod' has type f32, but the function takes i32");
        let big = [i32v(1), hostrt_value { type_: HOSTRT_TYPE_I32, i: 1 << 40, f: 0.0, tensor: null_mut() }];
        assert_eq!(
            hostrt_call(program, c"divmod".as_ptr(), big.as_ptr(), 2, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        // A tensor argument that is not a live tensor.
        let t = tensor_arg(program.cast());
        assert_eq!(hostrt_call(program, c"same".as_ptr(), &t, 1, &mut results, s.0), HOSTRT_INVALID_ARGUMENT);
        assert!(results.is_null());
        // Bad tensors: wrong size, bad dtype, negative dim.
        assert!(
            hostrt_tensor_new(host, HOSTRT_DTYPE_F32, [2i64].as_ptr(), 1, [0u8; 4].as_ptr().cast(), 4, s.0)
                .is_null()
        );
        assert_eq!(s.message(), "4 bytes given for a tensor of 8 bytes");
        assert!(hostrt_tensor_new(host, 7, [2i64].as_ptr(), 1, std::ptr::null(), 0, s.0).is_null());
        assert!(
            hostrt_tensor_new(host, HOSTRT_DTYPE_F32, [-1i64].as_ptr(), 1, std::ptr::null(), 0, s.0)
                .is_null()
        );
        // The arena is exhausted: an error, and nothing is left allocated.
        let mut stats = hostrt_allocator_stats::default();
        hostrt_host_allocator_stats(host, &mut stats, s.0);
        let in_use = stats.in_use;
        assert!(
            hostrt_tensor_new(host, HOSTRT_DTYPE_F32, [1i64 << 20].as_ptr(), 1, std::ptr::null(), 0, s.0)
                .is_null()
        );
        assert_eq!(s.code(), HOSTRT_RESOURCE_EXHAUSTED);
        hostrt_host_allocator_stats(host, &mut stats, s.0);
        assert_eq!((stats.in_use, stats.capacity), (in_use, 1 << 16));
        assert!(stats.failed > 0);
        // Corrupt program bytes: a clear error, no program.
        let mut bytes = bef(PROGRAM);
        bytes.truncate(bytes.len() / 2);
        assert!(
            hostrt_program_load(host, bytes.as_ptr().cast(), bytes.len(), HOSTRT_LOAD_COPY, s.0).is_null()
        );
        assert_eq!(s.code(), HOSTRT_DATA_LOSS);
        assert!(hostrt_program_load(host, bytes.as_ptr().cast(), bytes.len(), 9, s.0).is_null());
        // Use after destroy: the table knows the handle is gone.
        let p2 = load(host, PROGRAM);
        assert_eq!(hostrt_program_destroy(p2, s.0), HOSTRT_OK);
        assert_eq!(hostrt_program_destroy(p2, s.0), HOSTRT_INVALID_ARGUMENT);
        assert!(s.message().contains("is not live"));
        assert_eq!(
            hostrt_call(p2, c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0),
            HOSTRT_INVALID_ARGUMENT
        );
        assert_eq!(hostrt_program_function_count(p2), 0);
        // A bad status handle is ignored, a NULL one allowed.
        assert_eq!(
            hostrt_call(program, c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, null_mut()),
            HOSTRT_OK
        );
        assert_eq!(hostrt_results_destroy(results, program.cast()), HOSTRT_OK);
        assert_eq!(hostrt_results_destroy(results, s.0), HOSTRT_INVALID_ARGUMENT);
        // Options with a wrong struct size.
        let mut o = std::mem::zeroed();
        hostrt_host_options_init(&mut o);
        o.struct_size = 3;
        assert!(hostrt_host_new(&o, s.0).is_null());
        assert_eq!(s.code(), HOSTRT_INVALID_ARGUMENT);
    }
    destroy(host, program);
}

static DONE: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn done(user: *mut c_void, results: *mut hostrt_results, status: *const hostrt_status) {
    // SAFETY: the handles the call hands over; `user` points at the test's i64.
    unsafe {
        // The call ran (a cancelled one has CANCELLED results): no panic may leave here.
        let mut v = i32v(-1);
        let ok = hostrt_status_code(status) == HOSTRT_OK
            && hostrt_results_get(results, 0, &mut v, null_mut()) == HOSTRT_OK;
        *user.cast::<i64>() = if ok { v.i } else { -1 };
        hostrt_results_destroy(results, null_mut());
    }
    DONE.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn asynchronous_calls_complete_through_their_callback() {
    for workers in [0, 2] {
        let host = host_with_arena(1 << 20, workers);
        let program = load(host, PROGRAM);
        let s = Status::new();
        let mut quotient = 0i64;
        // SAFETY: live handles; `quotient` outlives the call (destroy waits for it).
        unsafe {
            let mut call = null_mut();
            let args = [i32v(42), i32v(5)];
            let user = std::ptr::from_mut(&mut quotient).cast();
            let before = DONE.load(Ordering::SeqCst);
            let code = hostrt_call_async(
                program,
                c"divmod".as_ptr(),
                args.as_ptr(),
                2,
                Some(done),
                user,
                &mut call,
                s.0,
            );
            assert_eq!(code, HOSTRT_OK, "{}", s.message());
            // Cancelling a call that may have ended already is harmless.
            assert_eq!(hostrt_async_call_cancel(call, s.0), HOSTRT_OK);
            assert_eq!(hostrt_async_call_destroy(call, s.0), HOSTRT_OK);
            assert_eq!(DONE.load(Ordering::SeqCst), before + 1);
            // Argument errors are reported at once, and the callback never runs.
            let code = hostrt_call_async(
                program,
                c"divmod".as_ptr(),
                args.as_ptr(),
                1,
                Some(done),
                user,
                &mut call,
                s.0,
            );
            assert_eq!((code, call), (HOSTRT_INVALID_ARGUMENT, null_mut()));
        }
        assert!(quotient == 8 || quotient == -1, "{quotient}");
        destroy(host, program);
    }
}

unsafe extern "C" fn record(user: *mut c_void, results: *mut hostrt_results, status: *const hostrt_status) {
    // SAFETY: the handles the call hands over; `user` points at the test's code slot.
    unsafe {
        let mut v = i32v(0);
        let code = if hostrt_status_code(status) == HOSTRT_OK {
            hostrt_results_get(results, 0, &mut v, null_mut())
        } else {
            hostrt_status_code(status)
        };
        *user.cast::<hostrt_code>() = code;
        hostrt_results_destroy(results, null_mut());
    }
}

#[test]
fn a_running_call_is_cancelled() {
    const SPIN: &str = r#"func.func @spin(%n: i32) -> i32 {
  %zero = tfrt.constant.i32 0
  %total = tfrt.repeat.i32 %n, %zero : i32 {
    %one = tfrt.constant.i32 1
    tfrt.return %one : i32
  }
  tfrt.return %total : i32
}
"#;
    let host = host_with_arena(1 << 20, 0);
    let program = load(host, SPIN);
    let s = Status::new();
    let mut code: hostrt_code = -1;
    let started = std::time::Instant::now();
    // SAFETY: live handles; `code` outlives the call (destroy waits for it).
    unsafe {
        let mut call = null_mut();
        let args = [i32v(i32::MAX)];
        let user = std::ptr::from_mut(&mut code).cast();
        assert_eq!(
            hostrt_call_async(
                program,
                c"spin".as_ptr(),
                args.as_ptr(),
                1,
                Some(record),
                user,
                &mut call,
                s.0
            ),
            HOSTRT_OK
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(hostrt_async_call_cancel(call, s.0), HOSTRT_OK);
        assert_eq!(hostrt_async_call_destroy(call, s.0), HOSTRT_OK);
    }
    assert_eq!(code, HOSTRT_CANCELLED, "the loop's result is the cancellation");
    assert!(started.elapsed().as_secs() < 60, "2^31 iterations would take far longer");
    destroy(host, program);
}

#[test]
fn an_arena_too_large_to_pad_is_refused() {
    let s = Status::new();
    // SAFETY: options initialised by the API; a live status.
    unsafe {
        let mut o = std::mem::zeroed();
        hostrt_host_options_init(&mut o);
        o.arena_bytes = usize::MAX - 3;
        assert!(hostrt_host_new(&o, s.0).is_null());
        assert_eq!(s.code(), HOSTRT_INVALID_ARGUMENT);
        assert_eq!(s.message(), format!("arena of {} bytes: too large", usize::MAX - 3));
    }
}

#[test]
fn a_tflite_model_imports_from_bytes_and_runs() {
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/models");
    let read = |f: &str| std::fs::read(models.join(f)).unwrap();
    let model = read("fc_relu_i8.tflite");
    let input = hostrt_import::npy::read(&read("fc_relu_i8.input.npy")).unwrap();
    let golden = hostrt_import::npy::read(&read("fc_relu_i8.output.npy")).unwrap();
    let host = host_with_arena(1 << 20, 0);
    let s = Status::new();
    // SAFETY: live handles; the model bytes are read during the call only; outputs are locals.
    unsafe {
        let program = hostrt_program_from_tflite(host, model.as_ptr().cast(), model.len(), s.0);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let dims: Vec<i64> = input.shape.iter().map(|&d| d as i64).collect();
        let x = hostrt_tensor_new(
            host,
            HOSTRT_DTYPE_I8,
            dims.as_ptr(),
            dims.len(),
            input.data.as_ptr().cast(),
            input.data.len(),
            s.0,
        );
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let mut results = null_mut();
        assert_eq!(hostrt_call(program, c"main".as_ptr(), &tensor_arg(x), 1, &mut results, s.0), HOSTRT_OK);
        let mut y = i32v(0);
        assert_eq!(hostrt_results_get(results, 0, &mut y, s.0), HOSTRT_OK, "{}", s.message());
        let got = std::slice::from_raw_parts(hostrt_tensor_data(y.tensor).cast::<u8>(), golden.data.len());
        assert_eq!(got, &golden.data[..], "bit-exact with TensorFlow Lite Micro");
        hostrt_tensor_destroy(y.tensor, s.0);
        hostrt_results_destroy(results, s.0);
        hostrt_tensor_destroy(x, s.0);

        // A malformed model is refused with the reason; nothing is published.
        let truncated = &model[..model.len() / 2];
        let bad = hostrt_program_from_tflite(host, truncated.as_ptr().cast(), truncated.len(), s.0);
        assert!(bad.is_null());
        assert_eq!(s.code(), HOSTRT_INVALID_ARGUMENT);
        assert!(s.message().starts_with("cannot import the model"), "{}", s.message());
        destroy(host, program);
    }
}

#[test]
fn an_onnx_model_imports_from_bytes_and_from_its_file() {
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/models/onnx");
    let read = |f: &str| std::fs::read(models.join(f)).unwrap();
    let model = read("cnn_small.onnx");
    let input = hostrt_import::npy::read(&read("cnn_small.input.npy")).unwrap();
    let golden = hostrt_import::npy::read(&read("cnn_small.output.npy")).unwrap();
    let host = host_with_arena(1 << 20, 0);
    let s = Status::new();
    let path = std::ffi::CString::new(models.join("cnn_small.onnx").to_str().unwrap()).unwrap();
    // SAFETY: live handles; the model bytes are read during the call only; outputs are locals.
    unsafe {
        let from_bytes = hostrt_program_from_onnx(host, model.as_ptr().cast(), model.len(), s.0);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let from_file = hostrt_program_from_onnx_file(host, path.as_ptr(), s.0);
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let dims: Vec<i64> = input.shape.iter().map(|&d| d as i64).collect();
        let x = hostrt_tensor_new(
            host,
            HOSTRT_DTYPE_F32,
            dims.as_ptr(),
            dims.len(),
            input.data.as_ptr().cast(),
            input.data.len(),
            s.0,
        );
        assert_eq!(s.code(), HOSTRT_OK, "{}", s.message());
        let f32s = |b: &[u8]| b.as_chunks::<4>().0.iter().map(|c| f32::from_le_bytes(*c)).collect::<Vec<_>>();
        for program in [from_bytes, from_file] {
            let mut results = null_mut();
            assert_eq!(
                hostrt_call(program, c"main".as_ptr(), &tensor_arg(x), 1, &mut results, s.0),
                HOSTRT_OK
            );
            let mut y = i32v(0);
            assert_eq!(hostrt_results_get(results, 0, &mut y, s.0), HOSTRT_OK, "{}", s.message());
            let got =
                std::slice::from_raw_parts(hostrt_tensor_data(y.tensor).cast::<u8>(), golden.data.len());
            for (a, b) in f32s(got).iter().zip(f32s(&golden.data)) {
                assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} vs onnxruntime's {b}");
            }
            hostrt_tensor_destroy(y.tensor, s.0);
            hostrt_results_destroy(results, s.0);
        }
        hostrt_tensor_destroy(x, s.0);

        // A malformed model is refused with the reason; nothing is published.
        let bad = hostrt_program_from_onnx(host, model.as_ptr().cast(), model.len() / 2, s.0);
        assert!(bad.is_null());
        assert_eq!(s.code(), HOSTRT_INVALID_ARGUMENT);
        assert!(s.message().starts_with("cannot import the model"), "{}", s.message());
        hostrt_program_destroy(from_file, s.0);
        destroy(host, from_bytes);
    }
}

#[test]
fn a_trace_records_the_calls_between_begin_and_end() {
    for workers in [0, 2] {
        let host = host_with_arena(1 << 20, workers);
        let program = load(host, PROGRAM);
        let s = Status::new();
        let call = || {
            let mut results = null_mut();
            let args = [i32v(17), i32v(5)];
            // SAFETY: live handles; outputs are locals.
            unsafe {
                assert_eq!(
                    hostrt_call(program, c"divmod".as_ptr(), args.as_ptr(), 2, &mut results, s.0),
                    HOSTRT_OK
                );
                hostrt_results_destroy(results, s.0);
            }
        };
        // SAFETY: live handles; buffers are locals with their sizes.
        unsafe {
            let mut size = 0usize;
            assert_eq!(hostrt_trace_end(host, null_mut(), &mut size, s.0), HOSTRT_FAILED_PRECONDITION);
            assert!(s.message().contains("hostrt_trace_begin first"), "{}", s.message());
            call(); // not traced
            assert_eq!(hostrt_trace_begin(host, s.0), HOSTRT_OK);
            assert_eq!(hostrt_trace_begin(host, s.0), HOSTRT_FAILED_PRECONDITION);
            call();
            call();
            // Too small: the length needed, and the trace kept.
            let mut small = [0 as std::ffi::c_char; 16];
            size = small.len();
            assert_eq!(hostrt_trace_end(host, small.as_mut_ptr(), &mut size, s.0), HOSTRT_OUT_OF_RANGE);
            assert!(size > 16, "{size}");
            assert_eq!(hostrt_trace_begin(host, s.0), HOSTRT_FAILED_PRECONDITION, "an unread trace");
            call(); // not traced: the trace has ended
            let mut buffer = vec![0u8; size];
            let mut got = buffer.len();
            assert_eq!(hostrt_trace_end(host, buffer.as_mut_ptr().cast(), &mut got, s.0), HOSTRT_OK);
            assert_eq!(got, size);
            let json = std::str::from_utf8(&buffer).unwrap();
            assert!(json.starts_with("{\"traceEvents\":["), "{json}");
            assert_eq!(json.matches("\"name\":\"call @divmod\",\"ph\":\"B\"").count(), 2, "{json}");
            assert_eq!(json.matches("\"ph\":\"B\"").count(), json.matches("\"ph\":\"E\"").count(), "{json}");
            assert!(json.contains("\"name\":\"embed.mlir:2:12\",\"ph\":\"B\""), "{json}");
            // Read once; a second trace to a file.
            assert_eq!(
                hostrt_trace_end(host, buffer.as_mut_ptr().cast(), &mut got, s.0),
                HOSTRT_FAILED_PRECONDITION
            );
            assert_eq!(hostrt_trace_begin(host, s.0), HOSTRT_OK);
            call();
            let path =
                std::env::temp_dir().join(format!("hostrt-capi-trace-{}-{workers}.json", std::process::id()));
            let c_path = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
            assert_eq!(hostrt_trace_end_to_file(host, c_path.as_ptr(), s.0), HOSTRT_OK, "{}", s.message());
            let written = std::fs::read_to_string(&path).unwrap();
            assert_eq!(written.matches("call @divmod").count(), 2, "{written}");
            let _ = std::fs::remove_file(&path);
        }
        destroy(host, program);
    }
}
