//! Test support: a fresh arena per test that proves, when dropped, that nothing leaked.

extern crate std;

use std::boxed::Box;
use std::vec;

use crate::allocator::{Allocator, FixedArena, HostAllocator};
use crate::host_context::{ExecutionContext, HostContext, RequestContext};
use crate::work_queue::SingleThreadedWorkQueue;

/// An arena registered as an allocator; asserts zero bytes in use when dropped.
pub(crate) struct TestArena {
    pub(crate) alloc: Allocator,
    pub(crate) arena: &'static FixedArena,
}

impl TestArena {
    /// An arena of exactly `bytes` (its buffer is cut to start on the arena alignment).
    pub(crate) fn new(bytes: usize) -> Self {
        let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        let align = crate::allocator::ARENA_ALIGN;
        let buffer = vec![0u8; bytes + align - 1].leak();
        let skip = (buffer.as_ptr() as usize).wrapping_neg() % align;
        arena.init(&mut buffer[skip..skip + bytes]).unwrap();
        let alloc = Allocator::register(arena).expect("allocator table full");
        TestArena { alloc, arena }
    }

    pub(crate) fn in_use(&self) -> usize {
        self.arena.stats().unwrap().in_use
    }
}

impl Drop for TestArena {
    fn drop(&mut self) {
        let s = self.arena.stats().unwrap();
        if !std::thread::panicking() {
            assert_eq!((s.in_use, s.live_allocations), (0, 0), "arena leaked: {s:?}");
        }
        let _ = self.alloc.unregister();
    }
}

/// A complete single-threaded host over a test arena.
pub(crate) struct TestHost {
    pub(crate) arena: TestArena,
    pub(crate) queue: SingleThreadedWorkQueue,
}

impl TestHost {
    pub(crate) fn new(bytes: usize) -> Self {
        TestHost { arena: TestArena::new(bytes), queue: SingleThreadedWorkQueue::new() }
    }

    pub(crate) fn with_arena(arena: TestArena) -> Self {
        TestHost { arena, queue: SingleThreadedWorkQueue::new() }
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(&ExecutionContext<'_>) -> R) -> R {
        let host = HostContext::new(self.arena.alloc, &self.queue);
        let request = RequestContext::new();
        let exec = ExecutionContext::new(&host, &request);
        f(&exec)
    }
}

/// An arena that fails the allocation after `budget` successful ones (fault injection).
pub(crate) struct FailingArena {
    inner: &'static FixedArena,
    budget: portable_atomic::AtomicUsize,
}

// SAFETY: forwards to a FixedArena, or fails.
unsafe impl HostAllocator for FailingArena {
    fn allocate(&self, layout: core::alloc::Layout) -> Result<core::ptr::NonNull<u8>, crate::AllocError> {
        use portable_atomic::Ordering;
        if self.budget.fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| b.checked_sub(1)).is_err() {
            return Err(crate::AllocError::new(layout));
        }
        self.inner.allocate(layout)
    }
    unsafe fn deallocate(&self, ptr: core::ptr::NonNull<u8>, layout: core::alloc::Layout) {
        // SAFETY: forwarded contract; the block came from `inner`.
        unsafe { self.inner.deallocate(ptr, layout) }
    }
    fn stats(&self) -> Option<crate::allocator::AllocStats> {
        self.inner.stats()
    }
}

impl TestArena {
    /// An arena whose allocations fail after `budget` have succeeded.
    pub(crate) fn failing_after(budget: usize) -> Self {
        let inner: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        inner.init(vec![0u8; 64 * 1024].leak()).unwrap();
        let failing: &'static FailingArena =
            Box::leak(Box::new(FailingArena { inner, budget: portable_atomic::AtomicUsize::new(budget) }));
        let alloc = Allocator::register(failing).expect("allocator table full");
        TestArena { alloc, arena: inner }
    }
}

/// A payload that counts its drops.
#[derive(Debug)]
pub(crate) struct DropCounter(pub(crate) std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for DropCounter {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

pub(crate) fn drop_counter() -> (DropCounter, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    (DropCounter(n.clone()), n)
}

/// A shared log that closures can append to.
#[derive(Clone, Default)]
pub(crate) struct Log(pub(crate) std::sync::Arc<std::sync::Mutex<std::vec::Vec<std::string::String>>>);

impl Log {
    pub(crate) fn push(&self, s: impl Into<std::string::String>) {
        self.0.lock().unwrap().push(s.into());
    }
    pub(crate) fn take(&self) -> std::vec::Vec<std::string::String> {
        core::mem::take(&mut *self.0.lock().unwrap())
    }
}
