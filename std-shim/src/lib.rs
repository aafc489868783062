//! `hostrt-std`: the parts of hostrt that need an operating system.
//!
//! Today: [`SystemAllocator`], the system heap as a `HostAllocator`, counting allocations so
//! a driver can report leaks the way TFRT's `leak_check_allocator` does. Planned (issue #6):
//! the multi-threaded work queue with a blocking pool, and mmap loading.

mod allocator;

pub use allocator::{Profile, SystemAllocator};
