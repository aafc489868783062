//! The run half of the executor (docs/execution.md): starting a call of a loaded program
//! and running its kernels as a dataflow graph.
//!
//! Layering inside the half, each file using only those listed before it (and the load
//! half, `buf` and `list_sort`):
//!
//! | file | role |
//! |---|---|
//! | `depth` | how deeply calls and waiters nest on this stack |
//! | `failure` | why a call or kernel could not run, as error values |
//! | `native` | native functions |
//! | `frame` | the per-call frame block (registers, ready counts, links), its handles, the host's kept block, the frame's stream task blocks |
//! | `context` | [`Run`](context::Run): frame, tables and ready queue of one thread of control; the kick-off and the processing loop |
//! | `stream_tasks` | one block of work-queue tasks per flush of the outline list |
//! | `publish` | results and arguments made visible to their users, waiters for unavailable ones |
//! | `outline` | ready kernels of other streams handed to the work queue |
//! | `dispatch` | running one kernel |
//! | `scalar_dispatch` | running a kernel planned on register words |
//! | `call` | the run half's `impl Program`: `call`, `execute_with`, `Invoke` |
//!
//! The steps of the algorithm are methods of `Run`, so they call each other through the
//! type, not through imports of each other's files.

mod call;
mod context;
mod depth;
mod dispatch;
mod failure;
pub(super) mod frame;
#[cfg(feature = "native")]
mod native;
mod outline;
mod publish;
#[cfg(feature = "scalar-registers")]
mod scalar_dispatch;
mod stream_tasks;

pub(crate) use call::Finished;
pub use call::{CallError, Results};
pub use publish::MAX_STACK_DEPTH;
