//! The global table of registered allocators, indexed by one-byte ids.

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use portable_atomic::{AtomicU8, Ordering};

use super::{AllocError, AllocStats, HostAllocator};

/// How many allocators can be registered at once.
pub const MAX_ALLOCATORS: usize = 32;

const FREE: u8 = 0;
const BUSY: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    allocator: UnsafeCell<MaybeUninit<&'static dyn HostAllocator>>,
}

// SAFETY: `allocator` is written only by the thread that moved `state` FREE -> BUSY, and is
// read only after observing READY with acquire ordering (published with release).
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot { state: AtomicU8::new(FREE), allocator: UnsafeCell::new(MaybeUninit::uninit()) };
static SLOTS: [Slot; MAX_ALLOCATORS] = [EMPTY; MAX_ALLOCATORS];

/// Registering an allocator failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// All [`MAX_ALLOCATORS`] slots are taken.
    TableFull,
    /// The allocator still has live allocations (or keeps no statistics to prove otherwise).
    InUse,
}

/// A registered allocator: a copyable one-byte handle that runtime objects store to find
/// the allocator that frees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allocator {
    id: u8,
}

impl Allocator {
    /// Register `allocator` and return its handle.
    pub fn register(allocator: &'static dyn HostAllocator) -> Result<Allocator, RegisterError> {
        for (i, slot) in SLOTS.iter().enumerate() {
            if slot.state.compare_exchange(FREE, BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                // SAFETY: we own the slot (FREE -> BUSY); nobody reads it until READY.
                unsafe { (*slot.allocator.get()).write(allocator) };
                slot.state.store(READY, Ordering::Release);
                return Ok(Allocator { id: i as u8 });
            }
        }
        Err(RegisterError::TableFull)
    }

    /// Release the handle's slot so it can be reused.
    ///
    /// Refused with [`RegisterError::InUse`] unless the allocator reports zero live
    /// allocations: objects that still point at the slot must be able to free themselves.
    pub fn unregister(self) -> Result<(), RegisterError> {
        let in_use = self.stats().map(|s| s.live_allocations);
        if in_use != Some(0) {
            return Err(RegisterError::InUse);
        }
        SLOTS[self.id as usize].state.store(FREE, Ordering::Release);
        Ok(())
    }

    /// The one-byte id stored in object headers.
    pub const fn id(self) -> u8 {
        self.id
    }

    /// The handle for a stored id (`None` when nothing is registered there).
    pub(crate) fn from_id(id: u8) -> Allocator {
        Allocator { id }
    }

    #[inline]
    fn get(self) -> Option<&'static dyn HostAllocator> {
        let slot = SLOTS.get(self.id as usize)?;
        if slot.state.load(Ordering::Acquire) != READY {
            return None;
        }
        // SAFETY: READY was published with release after the write; slots are only
        // overwritten after going back to FREE and through BUSY again.
        Some(unsafe { (*slot.allocator.get()).assume_init() })
    }

    /// Allocate through the registered allocator.
    #[inline]
    pub fn allocate(self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        match self.get() {
            Some(a) => a.allocate(layout),
            None => Err(AllocError::new(layout)),
        }
    }

    /// Free memory from [`allocate`](Self::allocate).
    ///
    /// # Safety
    /// `ptr` came from `allocate` on this handle with `layout` and is not used afterwards.
    #[inline]
    pub unsafe fn deallocate(self, ptr: NonNull<u8>, layout: Layout) {
        if let Some(a) = self.get() {
            // SAFETY: forwarded from the caller's contract; the slot still holds the
            // allocator that produced `ptr` (unregister requires zero live allocations).
            unsafe { a.deallocate(ptr, layout) }
        }
    }

    /// Statistics of the registered allocator.
    pub fn stats(self) -> Option<AllocStats> {
        self.get().and_then(|a| a.stats())
    }
}
