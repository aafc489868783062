//! Calling native functions (docs/execution.md): a declaration `func.func private @f(...)
//! attributes {tfrt.native}` runs the registry entry of the same name. With every argument
//! available it runs at once; otherwise its results are forwarding values and it runs on the
//! thread that completes the last argument.

use core::cell::Cell;

use portable_atomic::{AtomicU32, Ordering};

use crate::async_value::{AsyncValueRef, IndirectAsyncValue, RcAsyncValue};
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::host_context::ExecutionContext;
use crate::kernel::{KernelEntry, KernelFrame};

/// Arguments and results a deferred native call can hold.
const MAX_VALUES: usize = 8;

/// Run `entry` with `args` now: every result slot ends up set (an error if the function left
/// it empty, or the last error argument if there is one, as for strict kernels).
fn call_now(
    exec: &ExecutionContext<'_>,
    entry: &KernelEntry,
    args: &[RcAsyncValue],
    results: &[Cell<Option<RcAsyncValue>>],
) {
    if let Some(e) = args.iter().rev().find(|a| a.is_error()) {
        for r in results {
            r.set(Some(e.clone()));
        }
        return;
    }
    (entry.func())(&KernelFrame::new(exec, args, &[], results));
    for r in results {
        let v = r.take();
        let v = v.unwrap_or_else(|| {
            let d = Diagnostic::new(ErrorCode::Internal, "native function did not set a result");
            RcAsyncValue::error_or_oom(exec.allocator(), d)
        });
        r.set(Some(v));
    }
}

/// A native call waiting for its arguments.
struct Deferred {
    exec: *const ExecutionContext<'static>,
    entry: KernelEntry,
    args: heapless::Vec<RcAsyncValue, MAX_VALUES>,
    results: heapless::Vec<IndirectAsyncValue, MAX_VALUES>,
    /// Arguments not yet available.
    pending: AtomicU32,
}

// SAFETY: `exec` is the execution context of the running request, which the executor's
// contract keeps alive until all of the request's work (this call included) has finished;
// the async values are Send + Sync and the counter is atomic.
unsafe impl Send for Deferred {}
// SAFETY: as above.
unsafe impl Sync for Deferred {}

fn argument_ready(call: &AsyncValueRef<Deferred>) {
    let Some(d) = call.get() else { return };
    if d.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    // SAFETY: see `Deferred`'s Send impl.
    let exec = unsafe { &*d.exec };
    let slots: heapless::Vec<Cell<Option<RcAsyncValue>>, MAX_VALUES> =
        d.results.iter().map(|_| Cell::new(None)).collect();
    call_now(exec, &d.entry, &d.args, &slots);
    for (r, s) in d.results.iter().zip(&slots) {
        if let Some(v) = s.take() {
            r.forward_to(v);
        }
    }
}

/// Call native function `entry` (docs/execution.md); `results` receive its (possibly forwarding)
/// results. Running out of memory, or more than 8 arguments or results while some argument
/// is unavailable, gives error results. Not inlined: its buffers would otherwise enlarge
/// the executor's call frame, which every nested call adds to the stack.
#[inline(never)]
pub(crate) fn call(
    exec: &ExecutionContext<'_>,
    entry: &KernelEntry,
    args: &[RcAsyncValue],
    results: &[Cell<Option<RcAsyncValue>>],
) {
    let unavailable = args.iter().filter(|a| !a.is_available()).count();
    if unavailable == 0 {
        return call_now(exec, entry, args, results);
    }
    let alloc = exec.allocator();
    let fail = |d: Diagnostic| {
        let e = RcAsyncValue::error_or_oom(alloc, d);
        for r in results {
            r.set(Some(e.clone()));
        }
    };
    let (Ok(held), true) = (heapless::Vec::from_slice(args), results.len() <= MAX_VALUES) else {
        return fail(Diagnostic::new(
            ErrorCode::Unimplemented,
            "a native function waiting for arguments takes at most 8 arguments and results",
        ));
    };
    let mut forwards = heapless::Vec::new();
    for _ in results {
        let Ok(p) = IndirectAsyncValue::new(alloc) else {
            return fail(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a native call"));
        };
        let _ = forwards.push(p);
    }
    for (slot, p) in results.iter().zip(&forwards) {
        slot.set(Some(RcAsyncValue::clone(p)));
    }
    let deferred = Deferred {
        exec: core::ptr::from_ref(exec).cast(),
        entry: *entry,
        args: held,
        results: forwards,
        pending: AtomicU32::new(unavailable as u32),
    };
    let Ok(call) = AsyncValueRef::available(alloc, deferred) else {
        return fail(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a native call"));
    };
    for a in args.iter().filter(|a| !a.is_available()) {
        let waiting = call.clone();
        if let Err(oom) = a.and_then(move || argument_ready(&waiting)) {
            drop(oom);
            // Cannot wait for this argument: give up on the call rather than run it early.
            if let Some(d) = call.get() {
                let e = Diagnostic::new(ErrorCode::ResourceExhausted, "no memory to wait for an argument");
                let e = RcAsyncValue::error_or_oom(alloc, e);
                d.results.iter().for_each(|r| r.forward_to(e.clone()));
                // The remaining waiters must not run the call: keep the count above zero.
                d.pending.fetch_add(MAX_VALUES as u32 + 1, Ordering::AcqRel);
            }
            return;
        }
    }
}
