//! Calls and control flow: ordinary kernels that start functions through the frame's
//! invoker (docs/execution.md). One `KernelEntry` constant per kernel; `ALL` is the group.

use core::cell::Cell;

use crate::async_value::{IndirectAsyncValue, RcAsyncValue};
use crate::diagnostic::Diagnostic;
use crate::kernel::{Detached, KernelEntry, KernelFrame};

/// Report a malformed use of a control-flow kernel. Cold and out of line, so the
/// `Diagnostic` it builds does not enlarge the kernels' frames, which nested calls stack up.
#[cold]
#[inline(never)]
fn fail(frame: &KernelFrame<'_>, message: &'static str) {
    frame.report_error(Diagnostic::internal(message));
}

/// The function index of the first function attribute.
fn callee(frame: &KernelFrame<'_>) -> Option<u32> {
    nth_function(frame, 0)
}

/// `tfrt.call @f(args)`: non-strict, the callee starts before its arguments are available.
fn call(frame: &KernelFrame<'_>) {
    let (Some(f), Some(_)) = (callee(frame), frame.invoker()) else {
        return fail(frame, "tfrt.call without a callee");
    };
    frame.invoke(f, frame.args(), frame.result_slots());
}

/// `tfrt.if %cond, args { then } else { else }`.
fn if_kernel(frame: &KernelFrame<'_>) {
    let (Some(cond), Some(_)) = (frame.arg(0), frame.invoker()) else {
        return fail(frame, "tfrt.if needs a condition");
    };
    let Some(c) = cond.get::<bool>() else {
        return fail(frame, "tfrt.if condition is not an i1");
    };
    let Some(&body) = frame.regions().get(if *c { 0 } else { 1 }) else {
        return fail(frame, "tfrt.if needs two regions");
    };
    frame.invoke(body, &frame.args()[1..], frame.result_slots());
}

/// The `n`th function named by the kernel's function attributes (in attribute-name order,
/// arrays expanded).
fn nth_function(frame: &KernelFrame<'_>, mut n: usize) -> Option<u32> {
    // Plain loops: a `flat_map` costs firmware about 100 bytes more.
    for a in frame.attrs() {
        for f in a.functions() {
            if n == 0 {
                return Some(f);
            }
            n -= 1;
        }
    }
    None
}

/// `tfrt.cond %c @t @f (args)`: like `tfrt.if` with named functions.
fn cond(frame: &KernelFrame<'_>) {
    let (Some(c), Some(_)) = (frame.arg(0).and_then(|c| c.get::<bool>()), frame.invoker()) else {
        return fail(frame, "tfrt.cond needs an i1 condition");
    };
    let Some(f) = nth_function(frame, if *c { 0 } else { 1 }) else {
        return fail(frame, "tfrt.cond needs two functions");
    };
    frame.invoke(f, &frame.args()[1..], frame.result_slots());
}

/// `tfrt.case %i [@f0, @f1, ...] (args)`: an index outside the list selects the last branch.
fn case(frame: &KernelFrame<'_>) {
    let (Some(&i), Some(_)) = (frame.arg(0).and_then(|c| c.get::<i32>()), frame.invoker()) else {
        return fail(frame, "tfrt.case needs an i32 index");
    };
    let branches = frame.attrs().iter().flat_map(|a| a.functions()).count();
    if branches == 0 {
        return fail(frame, "tfrt.case needs branches");
    }
    let pick = usize::try_from(i).ok().filter(|i| *i < branches).unwrap_or(branches - 1);
    if let Some(f) = nth_function(frame, pick) {
        frame.invoke(f, &frame.args()[1..], frame.result_slots());
    }
}

/// `tfrt.repeat.i32 %n, args { body }`: runs the body `n` times, each iteration's results
/// feeding the next; checks for cancellation before every iteration.
fn repeat_i32(frame: &KernelFrame<'_>) {
    let (Some(n), Some(_), Some(&body)) = (frame.arg(0), frame.invoker(), frame.regions().first()) else {
        return fail(frame, "tfrt.repeat.i32 needs a count and a body");
    };
    let Some(&n) = n.get::<i32>() else {
        return fail(frame, "tfrt.repeat.i32 count is not an i32");
    };
    let exec = frame.exec_ctx();
    let mut values: heapless::Vec<RcAsyncValue, 8> = frame.args()[1..].iter().cloned().collect();
    if values.len() + 1 != frame.args().len() || values.len() != frame.num_results() {
        return fail(frame, "tfrt.repeat.i32 supports up to 8 loop values, as many as results");
    }
    for _ in 0..n.max(0) {
        if let Some(c) = exec.request().cancel_value() {
            values.iter_mut().for_each(|v| *v = c.clone());
            break;
        }
        let slots: heapless::Vec<Cell<Option<RcAsyncValue>>, 8> =
            values.iter().map(|_| Cell::new(None)).collect();
        frame.invoke(body, &values, &slots);
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

/// `tfrt.once @f(args)`: the first execution in a request runs `f`; every execution returns
/// the results of that first run (later calls ignore their operands).
fn once(frame: &KernelFrame<'_>) {
    let (Some(f), Some(_)) = (nth_function(frame, 0), frame.invoker()) else {
        return fail(frame, "tfrt.once needs a function");
    };
    let request = frame.exec_ctx().request();
    if let Some(results) = request.once_results(f) {
        for (i, v) in results.into_iter().enumerate() {
            frame.set_result(i, v);
        }
        return;
    }
    frame.invoke(f, frame.args(), frame.result_slots());
    let mut results: heapless::Vec<RcAsyncValue, { crate::host_context::MAX_ONCE_RESULTS }> =
        heapless::Vec::new();
    let mut fits = true;
    for s in frame.result_slots() {
        let v = s.take();
        s.set(v.clone());
        // More results than a request remembers: this run's results stand, later runs
        // call the function again (reported below).
        fits &= v.is_none_or(|v| results.push(v).is_ok());
    }
    if !fits || request.remember_once(f, &results).is_err() {
        fail(frame, "tfrt.once: too many once functions or results in one request");
    }
}

/// Loop state of a `tfrt.while` that may outlive the kernel call (it continues from a task
/// when the condition is not yet available).
struct WhileLoop {
    /// The kernel's context and program, kept for the rest of the loop.
    ctx: Detached,
    body: u32,
    /// `parallel_iterations > 1`: bodies start with the asynchronous kick-off and the loop
    /// continues in the waiter on the next condition (not in a new task).
    parallel: bool,
    values: heapless::Vec<RcAsyncValue, 8>,
    results: heapless::Vec<IndirectAsyncValue, 8>,
}

impl WhileLoop {
    /// Iterate while the condition is available and true; wait (then continue in a task)
    /// while it is unavailable; forward the results when it is false or an error.
    fn run(mut self, mut cond: RcAsyncValue) {
        loop {
            if !cond.is_available() {
                // Without memory for the waiter the loop cannot continue: its results become
                // errors (never left unresolved, which would hang a multi-threaded await).
                let results: heapless::Vec<RcAsyncValue, 8> =
                    self.results.iter().map(|r| (**r).clone()).collect();
                let c = cond.clone();
                let waiter = move || {
                    if self.parallel {
                        return self.run(c);
                    }
                    let ctx = self.ctx;
                    let task = move || self.run(c);
                    if let Err(oom) = ctx.host().enqueue_work(task) {
                        (oom.into_inner())();
                    }
                };
                if cond.and_then(waiter).is_err() {
                    cannot_wait(&results);
                }
                return;
            }
            if cond.is_error() {
                return forward_error_when_available(self.values, self.results, cond);
            }
            if !cond.get::<bool>().copied().unwrap_or(false) {
                for (r, v) in self.results.iter().zip(self.values.iter()) {
                    r.forward_to(v.clone());
                }
                return;
            }
            let n = self.values.len();
            let slots: heapless::Vec<Cell<Option<RcAsyncValue>>, 9> =
                (0..=n).map(|_| Cell::new(None)).collect();
            if self.parallel {
                self.ctx.invoke_async(self.body, &self.values, &slots);
            } else {
                self.ctx.invoke(self.body, &self.values, &slots);
            }
            let mut next = heapless::Vec::<RcAsyncValue, 8>::new();
            for s in &slots[..n] {
                match s.take() {
                    Some(v) => {
                        let _ = next.push(v);
                    }
                    None => return cannot_wait(self.results.iter().map(|r| &**r)),
                }
            }
            let Some(c) = slots[n].take() else { return cannot_wait(self.results.iter().map(|r| &**r)) };
            self.values = next;
            cond = c;
        }
    }
}

/// `tfrt.while` cannot go on (no memory to wait, or a body without results): every result
/// that is still unresolved becomes an out-of-memory error.
#[cold]
#[inline(never)]
fn cannot_wait<'r>(results: impl IntoIterator<Item = &'r RcAsyncValue>) {
    for r in results {
        r.set_error(Diagnostic::new(
            crate::diagnostic::ErrorCode::ResourceExhausted,
            "tfrt.while: no memory to continue the loop",
        ));
    }
}

/// A `tfrt.while` whose condition is an error: once every loop value is available, every
/// result becomes that error (docs/execution.md).
fn forward_error_when_available(
    values: heapless::Vec<RcAsyncValue, 8>,
    results: heapless::Vec<IndirectAsyncValue, 8>,
    err: RcAsyncValue,
) {
    if let Some(pending) = values.iter().find(|v| !v.is_available()).cloned() {
        let held: heapless::Vec<RcAsyncValue, 8> = results.iter().map(|r| (**r).clone()).collect();
        let wait = move || forward_error_when_available(values, results, err);
        if pending.and_then(wait).is_err() {
            cannot_wait(&held);
        }
        return;
    }
    for r in &results {
        r.forward_to(err.clone());
    }
}

/// `tfrt.while %cond @body(args) parallel_iterations(N)`: the body returns the next loop
/// values and a trailing `i1` condition. With `N <= 1` each body runs synchronously and an
/// unavailable condition continues the loop in a new task; with `N > 1` each body starts with
/// the asynchronous kick-off and the loop continues in the condition's waiter (docs/execution.md).
fn while_kernel(frame: &KernelFrame<'_>) {
    let (Some(cond), Some(_), Some(body)) = (frame.arg(0), frame.invoker(), nth_function(frame, 0)) else {
        return fail(frame, "tfrt.while needs a condition and a body function");
    };
    let values: heapless::Vec<RcAsyncValue, 8> = frame.args()[1..].iter().cloned().collect();
    if values.len() + 1 != frame.args().len() || values.len() != frame.num_results() {
        return fail(frame, "tfrt.while supports up to 8 loop values, as many as results");
    }
    let mut results = heapless::Vec::<IndirectAsyncValue, 8>::new();
    for i in 0..frame.num_results() {
        let Ok(r) = IndirectAsyncValue::new(frame.exec_ctx().allocator()) else {
            return frame.report_error(Diagnostic::new(
                crate::diagnostic::ErrorCode::ResourceExhausted,
                "no memory for tfrt.while",
            ));
        };
        frame.set_result(i, r.clone());
        let _ = results.push(r);
    }
    // The one integer attribute is `parallel_iterations` (the other is `body_fn`).
    let parallel = frame.attrs().iter().find_map(|a| a.get::<i64>()).is_some_and(|n| n > 1);
    WhileLoop { ctx: Detached::of(frame), body, parallel, values, results }.run(cond.clone());
}

/// `tfrt.call`: non-strict, so the callee starts before its arguments are available.
pub const CALL: KernelEntry = KernelEntry::non_strict("tfrt.call", call).calling(crate::kernel::Calls::Call);

entries! {
    [CALL]
    IF = "tfrt.if" => calls(if_kernel, If),
    COND = "tfrt.cond" => calls(cond, Cond),
    CASE = "tfrt.case" => calls(case, Case),
    WHILE = "tfrt.while" => raw(while_kernel),
    ONCE = "tfrt.once" => calls(once, Once),
    REPEAT_I32 = "tfrt.repeat.i32" => raw(repeat_i32),
}
