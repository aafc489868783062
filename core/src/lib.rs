//! `hostrt-core`: the `no_std` heart of hostrt, a host runtime for dataflow programs.
//!
//! It needs neither `std` nor `alloc` nor a global allocator: every runtime object (async
//! values, waiter nodes, tasks) is carved out of a [`HostAllocator`](allocator::HostAllocator),
//! typically a [`FixedArena`](allocator::FixedArena) over a static buffer. See `README.md` in
//! this directory for the layering of the modules.
#![cfg_attr(not(test), no_std)]
#![warn(missing_docs)]
// `Diagnostic` is deliberately an inline, fixed-size value (no heap on microcontrollers);
// it is only returned on cold error paths.
#![allow(clippy::result_large_err)]

pub mod allocator;
pub mod async_value;
#[macro_use]
pub mod basic_kernels;
pub mod bef;
pub mod chain;
pub mod diagnostic;
pub mod driver;
pub mod executor;
pub mod host_context;
pub mod kernel;
pub mod number_format;
#[cfg(feature = "profile")]
pub mod observe;
pub mod tensor;
pub mod tensor_kernels;
pub mod work_queue;

mod callback;
mod sync;
mod utf8;

/// What exported macros expand to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use portable_atomic::{AtomicBool, Ordering};
}

#[cfg(test)]
pub(crate) mod testing;

pub use allocator::{AllocError, Allocator, FixedArena, HostAllocator, OutOfMemory};
pub use async_value::{AsyncValueRef, IndirectAsyncValue, RcAsyncValue, State};
pub use chain::Chain;
pub use diagnostic::{Diagnostic, ErrorCode, Location};
pub use host_context::{ExecutionContext, HostContext, RequestContext};
pub use kernel::{KernelFn, KernelFrame, KernelRegistry};
pub use work_queue::{ConcurrentWorkQueue, SingleThreadedWorkQueue, Task};
