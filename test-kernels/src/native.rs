//! The native functions (docs/execution.md, "Calls and control flow"): Rust functions a program declares with
//! `func.func private @name(...) attributes {tfrt.native}` and calls like BEF functions.
//! They are registry entries under their own names; the executor runs them once their
//! arguments are available. Most are kernels this crate or the core already has.

use hostrt_core::basic_kernels::integer;
use hostrt_core::kernel::{KernelRegistry, RegistryError, RemainingArguments};
use hostrt_core::{Diagnostic, ErrorCode, KernelFrame, RcAsyncValue, kernel};

use crate::asynchronous::{as_chain, async_add_i32};

/// An error result with no diagnostic (the driver prints it as the returned value only).
fn native_error(frame: &KernelFrame<'_>) {
    let d = Diagnostic::new(ErrorCode::Internal, "something bad happened");
    frame.set_result(0, RcAsyncValue::error_or_oom(frame.exec_ctx().allocator(), d));
}

fn native_sink(_values: RemainingArguments) {}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    // `native_add` is `tfrt.add.i32`; `native_async_add` is `tfrt_test.async_add.i32` (one
    // task producing the sum); `native_async_sink` is `tfrt_test.as_chain`.
    r.add_entries(&[integer::ADD_I32.renamed("native_add")])?;
    r.add_kernel("native_async_add", kernel!(async_add_i32))?;
    r.add_kernel("native_error", native_error)?;
    r.add_kernel("native_sink", kernel!(native_sink))?;
    r.add_kernel("native_async_sink", kernel!(as_chain))
}
