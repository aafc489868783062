//! Why a call or a kernel could not run, and the error values that say so. The diagnostics
//! are built here, cold and out of line, so the hot paths, which nest once per call level,
//! keep small stack frames.

use core::cell::Cell;

use crate::async_value::RcAsyncValue;
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::host_context::ExecutionContext;

/// Why a call or a kernel could not run.
pub(crate) enum Failure<'a> {
    NoFunction(u32),
    Arity { name: &'a str, want: (u32, u32), args: usize, results: usize },
    NativeMissing(&'a str),
    NoFrame(u32),
    NoResult,
    NoMemoryToWait,
    NoMemoryForCall(&'a str),
    OperandsUndefined(&'a str),
    NoMemoryForAttributes(&'a str),
    NoResultSet,
}

/// The error value for `why`.
#[cold]
#[inline(never)]
pub(crate) fn failure(exec: &ExecutionContext<'_>, why: Failure<'_>) -> RcAsyncValue {
    let d = match why {
        Failure::NoFunction(i) => crate::diag!(NotFound, "no function with index {}", i),
        Failure::Arity { name, want, args, results } => crate::diag!(
            InvalidArgument,
            "function '{}' takes {} arguments and returns {} results; called with {} and {}",
            name,
            want.0,
            want.1,
            args,
            results
        ),
        Failure::NativeMissing(name) => {
            crate::diag!(Unimplemented, "native function '{}' is not registered", name)
        }
        Failure::NoFrame(bytes) => {
            crate::diag!(ResourceExhausted, "Cannot allocate {} bytes for an executor frame", bytes)
        }
        Failure::NoResult => crate::diag!(ResourceExhausted, "no memory for a result"),
        Failure::NoMemoryToWait => crate::diag!(ResourceExhausted, "no memory to wait for a value"),
        Failure::NoMemoryForCall(k) => crate::diag!(ResourceExhausted, "no memory to call kernel '{}'", k),
        Failure::OperandsUndefined(k) => {
            crate::diag!(Internal, "kernel '{}' ran before its operands were defined", k)
        }
        Failure::NoMemoryForAttributes(k) => {
            crate::diag!(ResourceExhausted, "no memory for the attributes of '{}'", k)
        }
        Failure::NoResultSet => Diagnostic::new(ErrorCode::Internal, "kernel did not set a result"),
    };
    RcAsyncValue::error_or_oom(exec.allocator(), d)
}

/// Every result slot gets one shared error value for `why`.
#[cold]
#[inline(never)]
pub(crate) fn fill_error(
    exec: &ExecutionContext<'_>,
    results: &[Cell<Option<RcAsyncValue>>],
    why: Failure<'_>,
) {
    let e = failure(exec, why);
    for r in results {
        r.set(Some(e.clone()));
    }
}
