//! Calls and control flow: ordinary kernels that start functions through the frame's
//! invoker (SPEC §3.3–§3.4).

use core::cell::Cell;

use crate::async_value::RcAsyncValue;
use crate::diagnostic::Diagnostic;
use crate::kernel::{KernelFrame, KernelRegistry, RegistryError};

/// The function index of the first function attribute.
fn callee(frame: &KernelFrame<'_>) -> Option<u32> {
    nth_function(frame, 0)
}

/// `tfrt.call @f(args)`: non-strict, the callee starts before its arguments are available.
fn call(frame: &KernelFrame<'_>) {
    let (Some(f), Some(inv)) = (callee(frame), frame.invoker()) else {
        return frame.report_error(Diagnostic::internal("tfrt.call without a callee"));
    };
    inv.invoke(frame.exec_ctx(), f, frame.args(), frame.result_slots());
}

/// `tfrt.if %cond, args { then } else { else }`.
fn if_kernel(frame: &KernelFrame<'_>) {
    let (Some(cond), Some(inv)) = (frame.arg(0), frame.invoker()) else {
        return frame.report_error(Diagnostic::internal("tfrt.if needs a condition"));
    };
    let Some(c) = cond.get::<bool>() else {
        return frame.report_error(Diagnostic::internal("tfrt.if condition is not an i1"));
    };
    let Some(&body) = frame.regions().get(if *c { 0 } else { 1 }) else {
        return frame.report_error(Diagnostic::internal("tfrt.if needs two regions"));
    };
    inv.invoke(frame.exec_ctx(), body, &frame.args()[1..], frame.result_slots());
}

/// The `n`th function named by the kernel's function attributes (in attribute-name order,
/// arrays expanded).
fn nth_function(frame: &KernelFrame<'_>, n: usize) -> Option<u32> {
    frame.attrs().iter().flat_map(|a| a.functions()).nth(n)
}

/// `tfrt.cond %c @t @f (args)`: like `tfrt.if` with named functions.
fn cond(frame: &KernelFrame<'_>) {
    let (Some(c), Some(inv)) = (frame.arg(0).and_then(|c| c.get::<bool>()), frame.invoker()) else {
        return frame.report_error(Diagnostic::internal("tfrt.cond needs an i1 condition"));
    };
    let Some(f) = nth_function(frame, if *c { 0 } else { 1 }) else {
        return frame.report_error(Diagnostic::internal("tfrt.cond needs two functions"));
    };
    inv.invoke(frame.exec_ctx(), f, &frame.args()[1..], frame.result_slots());
}

/// `tfrt.case %i [@f0, @f1, ...] (args)`: an index outside the list selects the last branch.
fn case(frame: &KernelFrame<'_>) {
    let (Some(&i), Some(inv)) = (frame.arg(0).and_then(|c| c.get::<i32>()), frame.invoker()) else {
        return frame.report_error(Diagnostic::internal("tfrt.case needs an i32 index"));
    };
    let branches = frame.attrs().iter().flat_map(|a| a.functions()).count();
    if branches == 0 {
        return frame.report_error(Diagnostic::internal("tfrt.case needs branches"));
    }
    let pick = usize::try_from(i).ok().filter(|i| *i < branches).unwrap_or(branches - 1);
    if let Some(f) = nth_function(frame, pick) {
        inv.invoke(frame.exec_ctx(), f, &frame.args()[1..], frame.result_slots());
    }
}

/// `tfrt.repeat.i32 %n, args { body }`: runs the body `n` times, each iteration's results
/// feeding the next; checks for cancellation before every iteration.
fn repeat_i32(frame: &KernelFrame<'_>) {
    let (Some(n), Some(inv), Some(&body)) = (frame.arg(0), frame.invoker(), frame.regions().first()) else {
        return frame.report_error(Diagnostic::internal("tfrt.repeat.i32 needs a count and a body"));
    };
    let Some(&n) = n.get::<i32>() else {
        return frame.report_error(Diagnostic::internal("tfrt.repeat.i32 count is not an i32"));
    };
    let exec = frame.exec_ctx();
    let mut values: heapless::Vec<RcAsyncValue, 8> = frame.args()[1..].iter().cloned().collect();
    if values.len() + 1 != frame.args().len() || values.len() != frame.num_results() {
        return frame.report_error(Diagnostic::internal(
            "tfrt.repeat.i32 supports up to 8 loop values, as many as results",
        ));
    }
    for _ in 0..n.max(0) {
        if let Some(c) = exec.request().cancel_value() {
            values.iter_mut().for_each(|v| *v = c.clone());
            break;
        }
        let slots: heapless::Vec<Cell<Option<RcAsyncValue>>, 8> =
            values.iter().map(|_| Cell::new(None)).collect();
        inv.invoke(exec, body, &values, &slots);
        for (v, s) in values.iter_mut().zip(&slots) {
            match s.take() {
                Some(next) => *v = next,
                None => {
                    return frame
                        .report_error(Diagnostic::internal("tfrt.repeat.i32 body produced no result"));
                }
            }
        }
    }
    for (i, v) in values.into_iter().enumerate() {
        frame.set_result(i, v);
    }
}

pub(super) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_non_strict_kernel("tfrt.call", call)?;
    r.add_kernel("tfrt.if", if_kernel)?;
    r.add_kernel("tfrt.cond", cond)?;
    r.add_kernel("tfrt.case", case)?;
    r.add_kernel("tfrt.repeat.i32", repeat_i32)
}
