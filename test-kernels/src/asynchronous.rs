//! `tfrt_test.do.async` and the asynchronous test kernels. Each of
//! them, except `tfrt_test.as_chain`, returns unavailable results and enqueues exactly one
//! non-blocking task that completes them.

use alloc::vec::Vec;
use core::cell::Cell;

use hostrt_core::kernel::{
    Argument, AttrRef, Attribute, KernelFrame, KernelRegistry, Output, RegistryError, RemainingArguments,
};
use hostrt_core::{
    AsyncValueRef, Chain, Diagnostic, ErrorCode, ExecutionContext, IndirectAsyncValue, RcAsyncValue, kernel,
};

use crate::sys;
use hostrt_core::kernel::Detached;

/// The message of the asynchronous error kernels.
const SOMETHING_BAD_ASYNC: &str = "something bad happened asynchronously";

/// Run `task` on the host's work queue; if no memory is left for the task, run it here.
fn enqueue<F: FnOnce() + Send + 'static>(ctx: &ExecutionContext<'_>, task: F) {
    if let Err(oom) = ctx.host().enqueue_work(task) {
        (oom.into_inner())();
    }
}

/// Allocate `out` and complete it with `f()` from one task.
fn complete_later<T, F>(out: &Output<T>, ctx: &ExecutionContext<'_>, f: F)
where
    T: Send + Sync + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let Some(result) = out.allocate() else { return };
    enqueue(ctx, move || result.emplace(f()));
}

/// `tfrt_test.do.async %args { body }`: the results are indirect values; one task starts the
/// body with the (captured) operands and forwards the results to the body's results.
/// Nothing of the body runs before that task.
fn do_async(frame: &KernelFrame<'_>) {
    let d = Detached::of(frame);
    let (Some(&body), Some(_)) = (frame.regions().first(), frame.invoker()) else {
        return frame.report_error(Diagnostic::internal("tfrt_test.do.async needs a body to run"));
    };
    let alloc = frame.exec_ctx().allocator();
    let mut results: Vec<IndirectAsyncValue> = Vec::with_capacity(frame.num_results());
    for i in 0..frame.num_results() {
        match IndirectAsyncValue::new(alloc) {
            Ok(r) => {
                frame.set_result(i, RcAsyncValue::clone(&r));
                results.push(r);
            }
            Err(e) => return frame.report_error(e.into()),
        }
    }
    let args: Vec<RcAsyncValue> = frame.args().to_vec();
    let task = move || {
        let slots: Vec<Cell<Option<RcAsyncValue>>> = results.iter().map(|_| Cell::new(None)).collect();
        d.invoke(body, &args, &slots);
        for (r, slot) in results.iter().zip(slots) {
            match slot.into_inner() {
                Some(v) => r.forward_to(v),
                None => {
                    r.set_error(Diagnostic::internal("tfrt_test.do.async: the body set no result"));
                }
            }
        }
    };
    if let Err(oom) = frame.exec_ctx().host().enqueue_work(task) {
        drop(oom);
        frame.report_error(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a task"));
    }
}

pub(crate) fn async_add_i32(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let (a, b) = (*a, *b);
    complete_later(&out, ctx, move || a.wrapping_add(b));
}

fn async_constant_i32(v: Attribute<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let v = *v;
    complete_later(&out, ctx, move || v);
}

/// `value` may be written as `true`/`false` or as an integer.
fn async_constant_i1(frame: &KernelFrame<'_>) {
    let value = frame.attrs().first().and_then(|a: &AttrRef<'_>| {
        a.get::<bool>()
            .or_else(|| a.get::<i8>().map(|v| v != 0))
            .or_else(|| a.get::<i32>().map(|v| v != 0))
            .or_else(|| a.get::<i64>().map(|v| v != 0))
    });
    let Some(value) = value else {
        return frame.report_error(Diagnostic::new(
            ErrorCode::InvalidArgument,
            "tfrt_test.async_constant.i1 needs an i1 or integer 'value' attribute",
        ));
    };
    let Ok(result) = AsyncValueRef::<bool>::unconstructed(frame.exec_ctx().allocator()) else {
        return frame.report_error(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a result"));
    };
    frame.set_result(0, RcAsyncValue::clone(&result));
    enqueue(frame.exec_ctx(), move || result.emplace(value));
}

fn async_copy_i32(x: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let x = *x;
    complete_later(&out, ctx, move || x);
}

/// Sleeps 1–10 ms in the task, then copies.
fn async_copy_with_delay<T: Copy + Send + Sync + 'static>(
    x: Argument<T>,
    out: Output<T>,
    ctx: &ExecutionContext,
) {
    let x = *x;
    complete_later(&out, ctx, move || {
        sys::sleep_random_duration();
        x
    });
}

/// Like `async_copy.i32`, but the result is allocated before the task is made and the task
/// keeps the operand value alive until it has run.
fn async_copy_2_i32(x: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(result) = out.allocate() else { return };
    let input = x.value().clone();
    enqueue(ctx, move || match input.get::<i32>() {
        Some(v) => result.emplace(*v),
        None => {
            result.set_error(Diagnostic::internal("tfrt_test.async_copy_2.i32: operand is not an i32"));
        }
    });
}

/// The task reports an error at the kernel's location; the result becomes that error.
fn report_error_async(out: Output<i32>, d: Detached) {
    let Some(result) = out.allocate() else { return };
    enqueue(d.exec(), move || d.report_error(Diagnostic::internal(SOMETHING_BAD_ASYNC), &[&*result]));
}

/// In the task: 0 gives the result 0, anything else an error reported at the kernel.
fn report_error_concrete_async(input: Argument<i32>, out: Output<i32>, d: Detached) {
    let Some(result) = out.allocate() else { return };
    let input = *input;
    enqueue(d.exec(), move || {
        if input == 0 {
            result.emplace(input);
        } else {
            d.report_error(Diagnostic::internal(SOMETHING_BAD_ASYNC), &[&*result]);
        }
    });
}

/// The result is an indirect value. In the task: 0 forwards it to a new available 0,
/// anything else reports an error at the kernel (which resolves it to the error).
fn report_error_indirect_async(frame: &KernelFrame<'_>) {
    let d = Detached::of(frame);
    let Some(input) = frame.arg(0).and_then(|v| v.get::<i32>()).copied() else {
        return frame.report_error(Diagnostic::new(
            ErrorCode::InvalidArgument,
            "tfrt_test.report_error_indirect_async expects an i32",
        ));
    };
    let result = match IndirectAsyncValue::new(frame.exec_ctx().allocator()) {
        Ok(r) => r,
        Err(e) => return frame.report_error(e.into()),
    };
    frame.set_result(0, RcAsyncValue::clone(&result));
    enqueue(d.exec(), move || {
        if input == 0 {
            match d.host().make_available(0i32) {
                Ok(v) => result.forward_to(v.into_rc()),
                Err(e) => d.report_error(e.into(), &[&*result]),
            }
        } else {
            d.report_error(Diagnostic::internal(SOMETHING_BAD_ASYNC), &[&*result]);
        }
    });
}

/// A chain available once every operand is, which strict dispatch already guarantees: no
/// task.
pub(crate) fn as_chain(_values: RemainingArguments) -> Chain {
    Chain
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_test.do.async", do_async)?;
    r.add_kernel("tfrt_test.async_add.i32", kernel!(async_add_i32))?;
    r.add_kernel("tfrt_test.async_constant.i32", kernel!(async_constant_i32))?;
    r.add_kernel("tfrt_test.async_constant.i1", async_constant_i1)?;
    r.add_kernel("tfrt_test.async_copy.i32", kernel!(async_copy_i32))?;
    r.add_kernel("tfrt_test.async_copy.with_delay.i32", kernel!(async_copy_with_delay::<i32>))?;
    r.add_kernel("tfrt_test.async_copy.with_delay.i64", kernel!(async_copy_with_delay::<i64>))?;
    r.add_kernel("tfrt_test.async_copy_2.i32", kernel!(async_copy_2_i32))?;
    r.add_kernel("tfrt_test.report_error_async", kernel!(report_error_async))?;
    r.add_kernel("tfrt_test.report_error_concrete_async", kernel!(report_error_concrete_async))?;
    r.add_kernel("tfrt_test.report_error_indirect_async", report_error_indirect_async)?;
    r.add_kernel("tfrt_test.as_chain", kernel!(as_chain))
}

#[cfg(test)]
mod tests {
    use hostrt_core::kernel::AttrRef;
    use hostrt_core::{ErrorCode, kernel};

    use super::*;
    use crate::testing::with_host;

    #[test]
    fn one_task_each_and_unavailable_until_it_runs() {
        with_host(|env| {
            let (a, b) = (env.value(40i32), env.value(2i32));
            let seven = 7i32.to_le_bytes();
            let attrs = [AttrRef::scalar::<i32>(&seven).unwrap()];
            let truth = [AttrRef::scalar::<bool>(&[1]).unwrap()];
            let r = [
                env.results(kernel!(async_add_i32), &[a.clone(), b.clone()], &[], 1),
                env.results(kernel!(async_constant_i32), &[], &attrs, 1),
                env.results(async_constant_i1, &[], &truth, 1),
                env.results(kernel!(async_copy_i32), core::slice::from_ref(&a), &[], 1),
                env.results(kernel!(async_copy_2_i32), core::slice::from_ref(&b), &[], 1),
                env.results(kernel!(async_copy_with_delay::<i32>), core::slice::from_ref(&a), &[], 1),
            ];
            assert_eq!(env.tasks(), (6, 0), "exactly one non-blocking task per kernel");
            assert!(r.iter().all(|v| !v[0].is_available()));
            env.quiesce();
            let ints: Vec<Option<i32>> = r.iter().map(|v| v[0].get::<i32>().copied()).collect();
            assert_eq!(ints, [Some(42), Some(7), None, Some(40), Some(2), Some(40)]);
            assert_eq!(r[2][0].get::<bool>(), Some(&true));
        });
    }

    #[test]
    fn errors_from_tasks_are_emitted_by_the_task() {
        with_host(|env| {
            let one = env.value(1i32);
            let zero = env.value(0i32);
            let plain = env.results(kernel!(report_error_async), &[], &[], 1);
            let concrete =
                env.results(kernel!(report_error_concrete_async), core::slice::from_ref(&one), &[], 1);
            let indirect = env.results(report_error_indirect_async, core::slice::from_ref(&one), &[], 1);
            let ok = env.results(report_error_indirect_async, core::slice::from_ref(&zero), &[], 1);
            let ok2 = env.results(kernel!(report_error_concrete_async), &[zero], &[], 1);
            assert_eq!(env.tasks(), (5, 0));
            assert!(env.take_diags().is_empty(), "nothing is reported before the tasks run");
            env.quiesce();
            let diags = env.take_diags();
            assert_eq!(diags.len(), 3);
            assert!(diags.iter().all(|d| d == "test.mlir:4:7: something bad happened asynchronously"));
            for r in [&plain, &concrete, &indirect] {
                let e = r[0].get_error().unwrap();
                assert_eq!((e.code, e.message()), (ErrorCode::Internal, SOMETHING_BAD_ASYNC));
            }
            assert!(indirect[0].is_indirect());
            assert_eq!(ok[0].get::<i32>(), Some(&0));
            assert_eq!(ok2[0].get::<i32>(), Some(&0));
        });
    }

    #[test]
    fn do_async_without_a_program_is_an_error_and_as_chain_needs_no_task() {
        with_host(|env| {
            let r = env.results(do_async, &[env.value(1i32)], &[], 1);
            assert!(r[0].is_error(), "a hand-built frame has no body to run");
            assert_eq!(env.take_diags().len(), 1);
            let r = env.results(kernel!(as_chain), &[env.value(1i32), env.value(2i64)], &[], 1);
            assert!(r[0].get::<Chain>().is_some());
            assert_eq!(env.tasks(), (0, 0));
        });
    }
}
