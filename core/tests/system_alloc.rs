//! Public-API integration tests over an allocator backed by the system heap, so memory
//! checkers (ASan, valgrind) see every block's bounds individually.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use hostrt_core::allocator::{AllocError, AllocStats, Allocator, HostAllocator};
use hostrt_core::{AsyncValueRef, Diagnostic, IndirectAsyncValue, RcAsyncValue};

struct Counting {
    live: AtomicUsize,
}

// SAFETY: forwards to the global allocator with the caller's layout.
unsafe impl HostAllocator for Counting {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: runtime objects never have zero size.
        let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or(AllocError::new(layout))?;
        self.live.fetch_add(1, SeqCst);
        Ok(p)
    }
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.live.fetch_sub(1, SeqCst);
        // SAFETY: allocated above with the same layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
    fn stats(&self) -> Option<AllocStats> {
        Some(AllocStats { live_allocations: self.live.load(SeqCst), ..Default::default() })
    }
}

fn with_allocator(f: impl FnOnce(Allocator)) {
    let c: &'static Counting = Box::leak(Box::new(Counting { live: AtomicUsize::new(0) }));
    let a = Allocator::register(c).unwrap();
    f(a);
    assert_eq!(c.live.load(SeqCst), 0, "leaked blocks");
    a.unregister().unwrap();
}

#[test]
fn error_paths_stay_in_bounds() {
    with_allocator(|a| {
        let v = AsyncValueRef::<u32>::unconstructed(a).unwrap();
        assert!(v.set_error(Diagnostic::internal("x")));
        let e = RcAsyncValue::error(a, Diagnostic::internal("y")).unwrap();
        assert_eq!(e.get_error().unwrap().message(), "y");
        let t = AsyncValueRef::<[u8; 3]>::error(a, Diagnostic::internal("z")).unwrap();
        assert!(t.is_error());
        let ind = IndirectAsyncValue::new(a).unwrap();
        assert!(ind.set_error(Diagnostic::internal("w")));
    });
}

#[test]
fn values_waiters_and_forwarding() {
    with_allocator(|a| {
        let v = AsyncValueRef::<u64>::unconstructed(a).unwrap();
        let ind = IndirectAsyncValue::new(a).unwrap();
        ind.forward_to(v.clone().into_rc());
        let seen = std::sync::Arc::new(AtomicUsize::new(0));
        let (s, w) = (seen.clone(), ind.clone());
        ind.and_then(move || s.store(*w.get::<u64>().unwrap() as usize, SeqCst)).unwrap();
        v.emplace(99);
        assert_eq!(seen.load(SeqCst), 99);
        let big = AsyncValueRef::available(a, [7u128; 4]).unwrap();
        assert_eq!(big.get().unwrap()[3], 7);
    });
}

#[test]
fn racing_completions_from_threads() {
    with_allocator(|a| {
        for _ in 0..500 {
            let v = AsyncValueRef::<String>::unconstructed(a).unwrap();
            let t = {
                let v = v.clone();
                std::thread::spawn(move || v.try_emplace("won".to_string()).is_ok())
            };
            let errored = v.set_error(Diagnostic::internal("lost"));
            let emplaced = t.join().unwrap();
            assert!(errored ^ emplaced);
        }
    });
}
