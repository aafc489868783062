//! `FailAfter`: fault injection for testing how a program copes with exhaustion.

use core::alloc::Layout;
use core::ptr::NonNull;

use portable_atomic::{AtomicUsize, Ordering};

use super::{AllocError, AllocStats, HostAllocator};

/// Grants the first `budget` allocation requests (passing them to `inner`) and refuses every
/// later one, as if memory had run out right there. Counts its own live blocks, so a test
/// can sweep every failure point of a run and check that each one gives everything back.
#[derive(Debug)]
pub struct FailAfter<A> {
    inner: A,
    left: AtomicUsize,
    granted: AtomicUsize,
    refused: AtomicUsize,
    live: AtomicUsize,
}

impl<A> FailAfter<A> {
    /// Grant `budget` requests through `inner`, then fail.
    pub const fn new(inner: A, budget: usize) -> Self {
        FailAfter {
            inner,
            left: AtomicUsize::new(budget),
            granted: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
        }
    }

    /// Requests refused so far (zero: the run never noticed the budget).
    pub fn refused(&self) -> usize {
        self.refused.load(Ordering::Relaxed)
    }

    /// Requests granted so far.
    pub fn granted(&self) -> usize {
        self.granted.load(Ordering::Relaxed)
    }

    /// Blocks handed out and not yet returned.
    pub fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }
}

// SAFETY: granted requests go to `inner` unchanged; refusals allocate nothing.
unsafe impl<A: HostAllocator> HostAllocator for FailAfter<A> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if self.left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return Err(AllocError::new(layout));
        }
        let p = self.inner.allocate(layout)?;
        self.granted.fetch_add(1, Ordering::Relaxed);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.live.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: the block came from `inner` (through `allocate`) with this layout.
        unsafe { self.inner.deallocate(ptr, layout) }
    }

    /// Only the counts of this wrapper's own blocks: live, granted and refused.
    fn stats(&self) -> Option<AllocStats> {
        Some(AllocStats {
            live_allocations: self.live(),
            total_allocations: self.granted(),
            failed: self.refused(),
            ..AllocStats::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestArena;

    #[test]
    fn grants_the_budget_then_refuses_and_counts_its_blocks() {
        let a = TestArena::new(1024);
        let f = FailAfter::new(a.arena, 2);
        let l = Layout::from_size_align(16, 8).unwrap();
        let (p, q) = (f.allocate(l).unwrap(), f.allocate(l).unwrap());
        assert!(f.allocate(l).is_err());
        assert_eq!((f.granted(), f.refused(), f.live()), (2, 1, 2));
        // SAFETY: both blocks came from `f` with `l`.
        unsafe {
            f.deallocate(p, l);
            f.deallocate(q, l);
        }
        assert_eq!(f.stats().unwrap().live_allocations, 0);
    }
}
