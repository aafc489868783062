//! The native functions of SPEC §3.13: Rust functions a program declares with
//! `func.func private @name(...) attributes {tfrt.native}` and calls like BEF functions.
//! They are registry entries under their own names; the executor runs them once their
//! arguments are available.

use hostrt_core::kernel::{Argument, KernelRegistry, Output, RegistryError, RemainingArguments};
use hostrt_core::{Chain, Diagnostic, ErrorCode, ExecutionContext, KernelFrame, RcAsyncValue, kernel};

fn native_add(a: Argument<i32>, b: Argument<i32>) -> i32 {
    a.wrapping_add(*b)
}

/// The sum, from one non-blocking task.
fn native_async_add(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let sum = a.wrapping_add(*b);
    let Some(result) = out.allocate() else { return };
    if let Err(oom) = ctx.host().enqueue_work(move || result.emplace(sum)) {
        (oom.into_inner())();
    }
}

/// An error result with no diagnostic (the driver prints it as the returned value only).
fn native_error(frame: &KernelFrame<'_>) {
    let d = Diagnostic::new(ErrorCode::Internal, "something bad happened");
    if let Ok(e) = RcAsyncValue::error(frame.exec_ctx().allocator(), d) {
        frame.set_result(0, e);
    }
}

fn native_sink(_values: RemainingArguments) {}

fn native_async_sink(_values: RemainingArguments) -> Chain {
    Chain
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("native_add", kernel!(native_add))?;
    r.add_kernel("native_async_add", kernel!(native_async_add))?;
    r.add_kernel("native_error", native_error)?;
    r.add_kernel("native_sink", kernel!(native_sink))?;
    r.add_kernel("native_async_sink", kernel!(native_async_sink))
}
