//! Host memory: the [`HostAllocator`] trait, allocator handles and the fixed arena.
//!
//! Every runtime object is allocated through a `HostAllocator`. Objects do not store a fat
//! pointer to their allocator (that would not fit a 16-byte async value header); they store
//! the one-byte index of an [`Allocator`] handle, registered once in a fixed global table.
//! Exhaustion is an [`AllocError`], never a panic.

mod arena;
mod fault;
mod registry;

pub use arena::{
    ARENA_ALIGN, ArenaInitError, FixedArena, MIN_ARENA_BYTES, arena_block_bytes, arena_block_bytes_on,
};
pub use fault::FailAfter;
pub use registry::{Allocator, MAX_ALLOCATORS, RegisterError};

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use crate::diagnostic::{Diagnostic, ErrorCode};

/// A source of memory for runtime objects.
///
/// Implementations must be thread-safe: values may be freed on any thread.
///
/// # Safety
/// `allocate` must return memory valid for `layout` (size and alignment) that stays valid
/// and unaliased until passed to `deallocate`.
pub unsafe trait HostAllocator: Sync {
    /// Allocate `layout.size()` bytes aligned to `layout.align()`.
    ///
    /// Fails with [`AllocError`] when the memory is exhausted; never panics.
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError>;

    /// Return memory obtained from [`allocate`](Self::allocate).
    ///
    /// # Safety
    /// `ptr` was returned by `allocate` on this allocator with this exact `layout`, and is not
    /// used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout);

    /// Usage statistics, when the allocator keeps them.
    fn stats(&self) -> Option<AllocStats> {
        None
    }
}

// SAFETY: forwards to the referenced allocator, which upholds the contract.
unsafe impl<A: HostAllocator + ?Sized> HostAllocator for &A {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        (**self).allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { (**self).deallocate(ptr, layout) }
    }

    fn stats(&self) -> Option<AllocStats> {
        (**self).stats()
    }
}

/// Allocation statistics (bytes are the requested sizes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllocStats {
    /// Bytes currently allocated.
    pub in_use: usize,
    /// Highest value `in_use` has reached.
    pub peak: usize,
    /// Live allocations.
    pub live_allocations: usize,
    /// Allocations that succeeded since creation.
    pub total_allocations: usize,
    /// Bytes those allocations requested in all, when the allocator counts them (hostrt-std's
    /// profiled allocators do; a [`FixedArena`] does not). With the `profile` feature only:
    /// images without it (the minimal firmware) keep the statistics they had.
    #[cfg(feature = "profile")]
    pub allocated_bytes: Option<usize>,
    /// Allocation requests that failed.
    pub failed: usize,
    /// Bytes the allocator can hand out in all, when fixed (a [`FixedArena`]'s buffer); 0
    /// when unbounded or unknown.
    pub capacity: usize,
}

/// An allocation request could not be satisfied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AllocError {
    /// Requested size in bytes.
    pub size: usize,
    /// Requested alignment.
    pub align: usize,
}

impl AllocError {
    /// The error for `layout`.
    pub const fn new(layout: Layout) -> Self {
        AllocError { size: layout.size(), align: layout.align() }
    }
}

impl crate::diagnostic::DiagArg for AllocError {
    fn write_diag(&self, out: &mut crate::diagnostic::MessageText) {
        crate::write_diag!(out, "Cannot allocate {} bytes (alignment {})", self.size, self.align);
    }
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::diagnostic::display_diag_arg(self, f)
    }
}

/// A closure (or other value) handed back unused because memory for it ran out.
pub struct OutOfMemory<F>(pub F);

impl<F> OutOfMemory<F> {
    /// The value that could not be stored.
    pub fn into_inner(self) -> F {
        self.0
    }
}

impl<F> fmt::Debug for OutOfMemory<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OutOfMemory")
    }
}

impl From<AllocError> for Diagnostic {
    fn from(e: AllocError) -> Self {
        Diagnostic::from_arg(ErrorCode::ResourceExhausted, &e)
    }
}
