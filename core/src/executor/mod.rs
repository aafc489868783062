//! The BEF executor: runs a function of a loaded program as a dataflow graph of kernels.
//!
//! # Walkthrough
//!
//! Running a program takes four things: memory, a work queue, the kernels the program
//! names, and the program itself. On a microcontroller all four are statics or live on
//! the stack; nothing needs a heap.
//!
//! ```
//! use hostrt_core::basic_kernels::{control, integer};
//! use hostrt_core::allocator::HostAllocator;
//! use hostrt_core::executor::Program;
//! use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
//!
//! // 1. Memory: a fixed arena over a static buffer, registered as an `Allocator` handle.
//! //    Every async value, frame and task of a run comes from it.
//! static ARENA: FixedArena = FixedArena::empty();
//! ARENA.init(hostrt_core::static_buffer!(16 * 1024).unwrap()).unwrap();
//! let alloc = Allocator::register(&ARENA).unwrap();
//!
//! // 2. A work queue: the single-threaded one runs tasks only while the host waits, so
//! //    output is deterministic. `HostContext` joins it with the allocator.
//! static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
//! let host = HostContext::new(alloc, &QUEUE);
//!
//! // 3. Kernels: only those the program uses, so the linker drops the rest.
//! let registry = KernelRegistry::<4>::with_entries(&[
//!     integer::CONSTANT_I32, integer::ADD_I32, integer::LESSEQUAL_I32, control::IF,
//! ])
//! .unwrap();
//!
//! // 4. The program: BEF bytes, verified once and read in place (firmware embeds them
//! //    with `include_bef!`; here the compiler makes them).
//! let text = r#"func.func @max(%a: i32, %b: i32) -> i32 {
//!   %le = "tfrt.lessequal.i32"(%a, %b) : (i32, i32) -> i1
//!   %r = tfrt.if %le, %a, %b : (i32, i32) -> (i32) {
//!     tfrt.return %b : i32
//!   } else {
//!     tfrt.return %a : i32
//!   }
//!   tfrt.return %r : i32
//! }"#;
//! let bef = hostrt_compiler::compile("max.mlir", text, Default::default()).unwrap();
//! let bef = hostrt_std::AlignedBytes::new(&bef);
//! let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
//!
//! // Run it: `call` starts the function, waits for its results and for the queue to go
//! // quiet, and returns the results.
//! let three = host.make_available(3i32).unwrap().into_rc();
//! let five = host.make_available(5i32).unwrap().into_rc();
//! let results = program.call(&host, "max", &[three, five]).unwrap();
//! assert_eq!(results.get::<i32>(0), Ok(&5));
//!
//! // Everything the run allocated is back in the arena once the results, the program and
//! // the host (which keeps the last call's frame block for the next call) are gone.
//! drop((results, program, host));
//! assert_eq!(ARENA.stats().unwrap().in_use, 0);
//! ```
//!
//! How the graph runs (ready counts, streams, waiters, errors, cancellation) is in
//! `docs/execution.md`. [`raw`] is the asynchronous entry for kernels and embedders that
//! drive the work queue themselves, with its safety contract.
//!
//! The executor is two halves: `load/` makes a [`Program`] of a BEF file (kernels
//! resolved, types checked, plans made) and `run/` runs its functions; the run half uses the
//! load half, never the reverse. `buf` (short-lived arrays for a kernel call) and
//! `list_sort` (lists threaded through a link array) serve both.

mod buf;
mod list_sort;
mod load;
pub mod raw;
mod run;

pub use load::Program;
#[cfg(feature = "proved-types")]
pub use load::Unbounded;
pub(crate) use run::Finished;
pub use run::{CallError, MAX_STACK_DEPTH, Results};

/// How many ready counts were counted down on the exclusive-frame path (docs/execution.md,
/// "Exclusive frames") since the process started: loom builds only, so the model checks
/// can show the path is taken.
#[cfg(loom)]
pub fn loom_exclusive_countdowns() -> usize {
    run::frame::EXCLUSIVE_COUNTDOWNS.load(core::sync::atomic::Ordering::Relaxed)
}
