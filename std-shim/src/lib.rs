//! `hostrt-std`: the parts of hostrt that need an operating system.
//!
//! - [`SystemAllocator`]: the system heap as a `HostAllocator` with a per-thread cache of
//!   small blocks ([`CachedMallocAllocator`]), counting allocations so a driver can report
//!   leaks the way TFRT's `leak_check_allocator` does; [`MallocAllocator`] is the plain heap;
//!   [`FixedSizeTestAllocator`] is TFRT's `test_fixed_size_1k` byte budget.
//! - [`MultiThreadedWorkQueue`]: TFRT's `mstd` queue (work-stealing workers, blocking pool).
//!
//! - [`MappedFile`]: a file mapped read-only or copy-on-write, the one place files are
//!   mapped; [`MappedBef`]: zero-copy loading of BEF files through it, verified in place;
//!   [`AlignedBytes`] for BEF read into memory.
//! - [`leaked_arena`]: the firmware's fixed arena over heap memory, for tools and tests;
//!   [`ArenaTrace`]: the arena a run needs, from a record of its allocations.
//! - [`Recorder`]: per-kernel profiles and Perfetto traces of runs (docs/profiling.md).
//! - [`log_diagnostic`] and [`log_output`]: diagnostics and printed lines as `log` records.
//!
//! Planned: plugin loading.

mod allocator;
mod arena_trace;
mod block_cache;
mod bytes;
mod log;
mod mmap;
mod profile;
mod work_queue;

pub use allocator::{
    FixedSizeEvent, FixedSizeTestAllocator, MallocAllocator, Profile, ProfiledAllocator, SystemAllocator,
};
pub use arena_trace::ArenaTrace;
pub use block_cache::CachedMallocAllocator;
pub use bytes::{AlignedBytes, ArenaError, leaked_arena};
pub use log::{DIAGNOSTICS_TARGET, OUTPUT_TARGET, log_diagnostic, log_output};
pub use mmap::{MapError, MappedBef, MappedFile};
pub use profile::{ProfileRow, ProfileTable, Recorder, TaskObserver};
pub use work_queue::MultiThreadedWorkQueue;
