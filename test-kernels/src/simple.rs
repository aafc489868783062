//! Simple and diagnostic test kernels: strings, printing, forwarding, errors,
//! cancellation, resources and a few probes of the runtime's internals. All synchronous.

use alloc::string::String;
use alloc::sync::Arc;
use core::alloc::Layout;
use core::fmt::Write as _;
use core::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use hostrt_core::kernel::{
    Argument, KernelErrorHandler, KernelFrame, KernelRegistry, Output, RegistryError, RemainingArguments,
    RemainingResults, StringAttribute, Value,
};
use hostrt_core::{AsyncValueRef, Chain, Diagnostic, ErrorCode, ExecutionContext, kernel};

use crate::TfrtString;
use crate::sys::{self, LogPrefix, Severity};
use hostrt_core::kernel::Detached;

/// The message of `tfrt_test.fail` and `tfrt_test.partial_fail`.
pub(crate) const SOMETHING_BAD: &str = "something bad happened";

fn print_hello(ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("hello host executor!\n"));
    Chain
}

fn get_string(value: StringAttribute) -> Value<TfrtString> {
    Value(String::from(value.get()))
}

fn print_string(s: Argument<TfrtString>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("string = {}\n", s.get()));
    Chain
}

fn append_string(a: Argument<TfrtString>, b: Argument<TfrtString>) -> Value<TfrtString> {
    let mut s = String::with_capacity(a.len() + b.len());
    s.push_str(&a);
    s.push_str(&b);
    Value(s)
}

/// Results are the operands after the first (the chain), shared.
fn identity(args: RemainingArguments, results: RemainingResults, h: KernelErrorHandler) {
    forward_all(args.values().get(1..).unwrap_or(&[]), &results, h, "tfrt_test.identity")
}

/// Results are the operands, shared.
fn multi_arg_result(args: RemainingArguments, results: RemainingResults, h: KernelErrorHandler) {
    forward_all(args.values(), &results, h, "tfrt_test.multi_arg_result")
}

fn forward_all(
    values: &[hostrt_core::RcAsyncValue],
    results: &RemainingResults,
    h: KernelErrorHandler,
    name: &str,
) {
    if values.len() != results.len() {
        return h.report_error(hostrt_core::diag!(
            InvalidArgument,
            "{} has {} values to forward but {} results",
            name,
            values.len(),
            results.len()
        ));
    }
    for (i, v) in values.iter().enumerate() {
        results.set(i, v.clone());
    }
}

fn count3_i32(x: Argument<i32>) -> (i32, i32, i32) {
    (x.wrapping_add(1), x.wrapping_add(2), x.wrapping_add(3))
}

fn count3_i64(x: Argument<i64>) -> (i64, i64, i64) {
    (x.wrapping_add(1), x.wrapping_add(2), x.wrapping_add(3))
}

/// A badly behaved kernel: sleeps 1–10 ms in the dispatching thread, then copies.
fn copy_with_delay<T: Copy + Send + Sync + 'static>(x: Argument<T>) -> Value<T> {
    sys::sleep_random_duration();
    Value(*x)
}

fn fail() -> Result<i32, Diagnostic> {
    Err(Diagnostic::internal(SOMETHING_BAD))
}

fn partial_fail(one: Output<i32>, _error: Output<i32>, h: KernelErrorHandler) {
    one.emplace(1);
    h.report_error(Diagnostic::internal(SOMETHING_BAD));
}

/// Cancels the current request (docs/execution.md); result 0 is 0, result 1 the operand chain.
fn cancel(
    chain: Argument<Chain>,
    int_out: Output<i32>,
    chain_out: Output<Chain>,
    ctx: &ExecutionContext,
    h: KernelErrorHandler,
) {
    if let Err(e) = ctx.request().cancel(ctx.allocator()) {
        return h.report_error(e.into());
    }
    int_out.emplace(0);
    chain_out.set(chain.value().clone());
}

/// `tfrt_test.flat` reads the nested array attribute `[[S, [A : i32, B : i32]], [F : f32]]`
/// and returns S, A, B, F. Nested arrays are aggregates of child attribute indices, looked
/// up through the program (`Invoke::attribute`).
fn flat(frame: &KernelFrame<'_>) {
    let leaves = || -> Option<(String, i32, i32, f32)> {
        let program = frame.invoker()?;
        let outer: alloc::vec::Vec<u32> = frame.attrs().first()?.children().collect();
        let first: alloc::vec::Vec<u32> = program.attribute(*outer.first()?)?.children().collect();
        let s = program.attribute(*first.first()?)?.get_str()?;
        let ab = program.attribute(*first.get(1)?)?.get_array::<i32>()?;
        let f = program.attribute(*outer.get(1)?)?.get_array::<f32>()?;
        Some((String::from(s), *ab.first()?, *ab.get(1)?, *f.first()?))
    };
    match leaves() {
        Some((s, a, b, f)) => {
            frame.emplace_result::<TfrtString>(0, s);
            frame.emplace_result(1, a);
            frame.emplace_result(2, b);
            frame.emplace_result(3, f);
        }
        None => frame.report_error(Diagnostic::new(
            ErrorCode::InvalidArgument,
            "tfrt_test.flat: expected value = [[string, [i32, i32]], [f32]]",
        )),
    }
}

/// Reads back available values of several payload types (TFRT checks `AsyncValue::get`
/// through base classes; Rust payloads are looked up by exact type).
fn async_value_get(ctx: &ExecutionContext) -> Result<Value<TfrtString>, Diagnostic> {
    struct Child1 {
        base1: &'static str,
    }
    struct Child2 {
        base2: &'static str,
    }
    struct FinalClass {
        name: &'static str,
    }
    let host = ctx.host();
    let c1 = host.make_available(Child1 { base1: "base1" })?;
    let c2 = host.make_available(Child2 { base2: "base2" })?;
    let fc = host.make_available(FinalClass { name: "final_class" })?;
    let int = host.make_available(3i32)?;
    let missing = || Diagnostic::internal("tfrt_test.async_value_get: payload of the wrong type");
    let mut s = String::new();
    let _ = write!(
        s,
        "{}:{}:{}:{}",
        c1.get().ok_or_else(missing)?.base1,
        c2.get().ok_or_else(missing)?.base2,
        fc.get().ok_or_else(missing)?.name,
        int.get().ok_or_else(missing)?
    );
    Ok(Value(s))
}

fn describe(v: &AsyncValueRef<i32>, out: &mut String) {
    match v.get() {
        Some(x) if v.is_available() => {
            let _ = write!(out, "available:{x}");
        }
        _ => out.push_str("unavailable"),
    }
}

/// Walks an `AsyncValueRef<i32>` through its states, describing each: available at once;
/// unavailable, then completed with a waiter that runs during the completion; completed by
/// a closure owning a second reference.
fn async_value_ref(ctx: &ExecutionContext) -> Result<Value<TfrtString>, Diagnostic> {
    let host = ctx.host();
    let mut s = String::new();
    let two = host.make_available(2i32)?;
    describe(&two, &mut s);

    let three = host.make_unconstructed::<i32>()?;
    s.push(';');
    describe(&three, &mut s);
    let seen = Arc::new(AtomicI64::new(i64::MIN));
    let waiter = {
        let (three, seen) = (three.clone(), seen.clone());
        move || seen.store(three.get().map_or(-1, |v| i64::from(*v)), Ordering::SeqCst)
    };
    if three.and_then(waiter).is_err() {
        return Err(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a waiter"));
    }
    s.push(';');
    three.emplace(3);
    // The waiter ran inside `emplace`, before anything else is written.
    match seen.load(Ordering::SeqCst) {
        i64::MIN => {}
        v => {
            let _ = write!(s, "({v})");
        }
    }
    s.push(';');
    describe(&three, &mut s);

    let four = host.make_unconstructed::<i32>()?;
    s.push(';');
    describe(&four, &mut s);
    let complete = {
        let four = four.clone();
        move || four.emplace(4)
    };
    complete();
    s.push(';');
    describe(&four, &mut s);
    Ok(Value(s))
}

/// Six log lines, as TFRT_LOG / TFRT_LOG_IF would write them. hostrt's kernels have one
/// output channel (the host's output sink), so they go there rather than to stderr; the
/// conformance program that uses this kernel reads both streams merged (`2>&1`).
fn logging(s: Argument<TfrtString>, ctx: &ExecutionContext) -> Chain {
    const FILE: &str = "simple_test_kernels.cc";
    let lines = [
        (Severity::Info, "TFRT_LOG(INFO)"),
        (Severity::Warning, "TFRT_LOG(WARNING)"),
        (Severity::Error, "TFRT_LOG(ERROR)"),
        (Severity::Info, "TFRT_LOG_IF(INFO, true)"),
        (Severity::Warning, "TFRT_LOG_IF(WARNING, true)"),
        (Severity::Error, "TFRT_LOG_IF(ERROR, true)"),
    ];
    for (line, (severity, what)) in (244..).zip(lines) {
        let prefix = LogPrefix { severity, file: FILE, line };
        ctx.host().print(format_args!("{prefix}from {what}: {}\n", s.get()));
    }
    Chain
}

/// `!tfrt.test.resource`: prints when allocated and when destroyed, which happens either
/// explicitly (`tfrt_test.deallocate_resource`) or when the last value holding it dies.
pub struct TestResource {
    host: Detached,
    alive: AtomicBool,
}

impl core::fmt::Debug for TestResource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TestResource").field("alive", &self.is_alive()).finish()
    }
}

impl TestResource {
    fn new(host: Detached) -> Self {
        host.host().print(format_args!("Allocated TestResource\n"));
        TestResource { host, alive: AtomicBool::new(true) }
    }

    /// Whether the resource has not been destroyed yet.
    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Acquire)
    }

    /// Destroy the resource now (once; later calls and the drop do nothing).
    fn destroy(&self) {
        if self.alive.swap(false, Ordering::AcqRel) {
            self.host.host().print(format_args!("Destroyed TestResource\n"));
        }
    }
}

impl Drop for TestResource {
    fn drop(&mut self) {
        self.destroy();
    }
}

fn allocate_resource(
    chain: Argument<Chain>,
    res: Output<TestResource>,
    chain_out: Output<Chain>,
    host: Detached,
) {
    res.emplace(TestResource::new(host));
    chain_out.set(chain.value().clone());
}

fn deallocate_resource(
    res: Argument<TestResource>,
    chain: Argument<Chain>,
    chain_out: Output<Chain>,
    ctx: &ExecutionContext,
) {
    res.destroy();
    chain_out.set(chain.value().clone());
    ctx.host().print(format_args!("tfrt_test.deallocate_resource done\n"));
}

/// The name of the process-wide sample shared context, created on first use. There is only
/// ever one instance, the first, so its name is fixed.
fn use_sample_shared_context(chain: Argument<Chain>, name: Output<TfrtString>, chain_out: Output<Chain>) {
    name.emplace(String::from("sample_shared_context0"));
    chain_out.set(chain.value().clone());
}

/// TFRT records (op location → name) and fails on a location seen with two names; every op
/// has its own location identity, so that never happens and the kernel only makes a chain.
fn unique_loc(_name: StringAttribute) -> Chain {
    Chain
}

fn print_bool(_chain: Argument<Chain>, b: Argument<bool>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("{}\n", if *b { "true" } else { "false" }));
    Chain
}

/// `tfrt_test.test_cost`: prints its `id` attribute; result 0. Its `_tfrt_cost` attribute
/// only matters to stream assignment and should not reach the kernel (docs/execution.md); should a
/// compiler pass it anyway, it sorts before `id`, so `id` is the last attribute.
fn test_cost(frame: &KernelFrame<'_>) {
    let Some(id) = frame.attrs().last().and_then(|a| a.get::<i64>()) else {
        return frame.report_error(Diagnostic::new(
            ErrorCode::InvalidArgument,
            "tfrt_test.test_cost needs an i64 'id' attribute",
        ));
    };
    frame.exec_ctx().host().print(format_args!("id: {id}\n"));
    frame.emplace_result(0, 0i32);
}

/// Per operand: whether the kernel's reference is the only one (docs/execution.md).
fn get_uniqueness(args: RemainingArguments, results: RemainingResults) {
    for (i, v) in args.values().iter().enumerate().take(results.len()) {
        results.emplace(i, v.is_unique());
    }
}

/// Each result is a new indirect value, already forwarded to the operand.
fn make_indirect(args: RemainingArguments, results: RemainingResults) {
    for (i, v) in args.values().iter().enumerate().take(results.len()) {
        if let Some(ind) = results.allocate_indirect(i) {
            ind.forward_to(v.clone());
        }
    }
}

/// The kernel's debug name: the text of a name location (hostrt's compiler reduces fused
/// and call-site locations to one of their parts), none for a file location.
fn print_debug_info(frame: &KernelFrame<'_>) {
    let host = frame.exec_ctx().host();
    match frame.location() {
        Some(l) if l.line == 0 => host.print(format_args!("{}\n", l.file)),
        _ => host.print(format_args!("Kernel has no debug info\n")),
    }
    frame.emplace_result(0, Chain);
}

fn get_thread_id() -> i32 {
    sys::thread_index()
}

/// Allocates 4 bytes from the host allocator and never frees them (a leak for the
/// leak-check allocator to find).
fn memory_leak_one_int32(ctx: &ExecutionContext, h: KernelErrorHandler) {
    if let Err(e) = ctx.allocator().allocate(Layout::new::<i32>()) {
        h.report_error(e.into());
    }
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_test.print_hello", kernel!(print_hello))?;
    r.add_kernel("tfrt_test.get_string", kernel!(get_string))?;
    r.add_kernel("tfrt_test.print_string", kernel!(print_string))?;
    r.add_kernel("tfrt_test.append_string", kernel!(append_string))?;
    r.add_kernel("tfrt_test.identity", kernel!(identity))?;
    r.add_kernel("tfrt_test.multi_arg_result", kernel!(multi_arg_result))?;
    r.add_kernel("tfrt_test.count3.i32", kernel!(count3_i32))?;
    r.add_kernel("tfrt_test.count3.i64", kernel!(count3_i64))?;
    r.add_kernel("tfrt_test.copy.with_delay.i32", kernel!(copy_with_delay::<i32>))?;
    r.add_kernel("tfrt_test.copy.with_delay.i64", kernel!(copy_with_delay::<i64>))?;
    r.add_kernel("tfrt_test.fail", kernel!(fail))?;
    r.add_kernel("tfrt_test.partial_fail", kernel!(partial_fail))?;
    r.add_kernel("tfrt_test.cancel", kernel!(cancel))?;
    r.add_kernel("tfrt_test.flat", flat)?;
    r.add_kernel("tfrt_test.async_value_get", kernel!(async_value_get))?;
    r.add_kernel("tfrt_test.async_value_ref", kernel!(async_value_ref))?;
    r.add_kernel("tfrt_test.logging", kernel!(logging))?;
    r.add_kernel("tfrt_test.allocate_resource", kernel!(allocate_resource))?;
    r.add_kernel("tfrt_test.deallocate_resource", kernel!(deallocate_resource))?;
    r.add_kernel("tfrt_test.use_sample_shared_context", kernel!(use_sample_shared_context))?;
    r.add_kernel("tfrt_test.unique_loc", kernel!(unique_loc))?;
    r.add_kernel("tfrt_test.print_bool", kernel!(print_bool))?;
    r.add_kernel("tfrt_test.test_cost", test_cost)?;
    r.add_kernel("tfrt_test.get_uniqueness", kernel!(get_uniqueness))?;
    r.add_kernel("tfrt_test.make_indirect", kernel!(make_indirect))?;
    r.add_kernel("tfrt_test.print_debug_info", print_debug_info)?;
    r.add_kernel("tfrt_test.get_thread_id", kernel!(get_thread_id))?;
    r.add_kernel("tfrt_test.memory_leak_one_int32", kernel!(memory_leak_one_int32))
}

#[cfg(test)]
mod tests {

    use hostrt_core::kernel::{AttrRef, LocRef};
    use hostrt_core::{Chain, ErrorCode, kernel};

    use super::*;
    use crate::testing::with_host;

    #[test]
    fn forwarding_kernels_share_the_operand_objects() {
        with_host(|env| {
            let ch = env.value(Chain);
            let (x, y) = (env.value(1i32), env.value(2i32));
            let r = env.results(kernel!(identity), &[ch.clone(), x.clone(), y.clone()], &[], 2);
            assert!(r[0].ptr_eq(&x) && r[1].ptr_eq(&y));
            let r = env.results(kernel!(multi_arg_result), &[x.clone(), y.clone()], &[], 2);
            assert!(r[0].ptr_eq(&x) && r[1].ptr_eq(&y));
            let r = env.call(kernel!(identity), &[ch.clone(), x.clone()], &[], 2);
            assert!(r[0].as_ref().unwrap().is_error(), "arity mismatch is a kernel error");
            assert_eq!(env.take_diags().len(), 1);
            let r = env.results(kernel!(cancel), core::slice::from_ref(&ch), &[], 2);
            assert_eq!(r[0].get::<i32>(), Some(&0));
            assert!(r[1].ptr_eq(&ch), "the chain passes through");
            assert!(env.exec.request().is_cancelled());
            assert_eq!(env.tasks(), (0, 0), "all synchronous");
        });
    }

    #[test]
    fn errors_are_reported_at_the_kernel() {
        with_host(|env| {
            let r = env.results(kernel!(fail), &[], &[], 1);
            let e = r[0].get_error().unwrap();
            assert_eq!((e.code, e.message()), (ErrorCode::Internal, SOMETHING_BAD));
            assert_eq!(env.take_diags(), ["test.mlir:4:7: something bad happened"]);
            let r = env.results(kernel!(partial_fail), &[], &[], 2);
            assert_eq!(r[0].get::<i32>(), Some(&1), "the result made before the error stays");
            assert_eq!(r[1].get_error().unwrap().message(), SOMETHING_BAD);
            assert_eq!(env.take_diags().len(), 1);
            // Without a program to resolve nested attributes, flat reports a clear error.
            let r = env.results(flat, &[], &[], 4);
            assert!(r.iter().all(|v| v.get_error().unwrap().code == ErrorCode::InvalidArgument));
        });
    }

    #[test]
    fn strings_and_counts() {
        with_host(|env| {
            let r = env.results(kernel!(get_string), &[], &[AttrRef::string("ab")], 1);
            let r = env.results(kernel!(append_string), &[r[0].clone(), r[0].clone()], &[], 1);
            assert_eq!(r[0].get::<TfrtString>().map(String::as_str), Some("abab"));
            env.results(kernel!(print_string), &[r[0].clone(), env.value(Chain)], &[], 1);
            assert_eq!(env.take_output(), "string = abab\n");
            let r = env.results(kernel!(count3_i32), &[env.value(i32::MAX)], &[], 3);
            assert_eq!(r[0].get::<i32>(), Some(&i32::MIN), "wrapping");
            assert_eq!(r[2].get::<i32>(), Some(&(i32::MIN + 2)));
        });
    }

    #[test]
    fn resources_are_destroyed_once() {
        with_host(|env| {
            let ch = env.value(Chain);
            let r = env.results(kernel!(allocate_resource), core::slice::from_ref(&ch), &[], 2);
            assert!(r[1].ptr_eq(&ch));
            let res = r[0].clone();
            let r2 = env.results(kernel!(deallocate_resource), &[res.clone(), ch.clone()], &[], 1);
            assert!(r2[0].ptr_eq(&ch));
            assert!(!res.get::<TestResource>().unwrap().is_alive());
            drop((r, r2, res));
            assert_eq!(
                env.take_output(),
                "Allocated TestResource\nDestroyed TestResource\ntfrt_test.deallocate_resource done\n",
                "destroyed once: not again when the value dies"
            );
            let r = env.results(kernel!(allocate_resource), core::slice::from_ref(&ch), &[], 2);
            drop(r);
            assert_eq!(env.take_output(), "Allocated TestResource\nDestroyed TestResource\n");
        });
    }

    #[test]
    fn probes_of_values_and_locations() {
        with_host(|env| {
            let x = env.value(3i32);
            let r = env.results(kernel!(get_uniqueness), core::slice::from_ref(&x), &[], 1);
            assert_eq!(r[0].get::<bool>(), Some(&true), "the frame's reference is the only one");
            let other = x.clone();
            let r = env.results(kernel!(get_uniqueness), core::slice::from_ref(&x), &[], 1);
            assert_eq!(r[0].get::<bool>(), Some(&false), "the test holds another reference");
            drop(other);
            let r = env.results(kernel!(make_indirect), core::slice::from_ref(&x), &[], 1);
            assert!(r[0].is_indirect() && r[0].is_available());
            assert_eq!(r[0].get::<i32>(), Some(&3));
            let named = LocRef { file: "scope/k", line: 0, column: 0 };
            env.call_at(print_debug_info, &[], &[], 1, named);
            env.call(print_debug_info, &[], &[], 1);
            assert_eq!(env.take_output(), "scope/k\nKernel has no debug info\n");
            let r = env.results(kernel!(async_value_ref), &[], &[], 1);
            assert_eq!(
                r[0].get::<TfrtString>().unwrap(),
                "available:2;unavailable;(3);available:3;unavailable;available:4"
            );
            let r = env.results(kernel!(get_thread_id), &[], &[], 1);
            let here = *r[0].get::<i32>().unwrap();
            assert_eq!(here, crate::sys::thread_index());
        });
    }
}
