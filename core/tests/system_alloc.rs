//! Public-API integration tests over an allocator backed by the plain system heap (no block
//! cache), so memory checkers (ASan, valgrind) see every block's bounds individually and
//! every free.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use hostrt_core::allocator::Allocator;
use hostrt_core::{AsyncValueRef, Diagnostic, IndirectAsyncValue, RcAsyncValue};
use hostrt_std::{MallocAllocator, ProfiledAllocator};

fn with_allocator(f: impl FnOnce(Allocator)) {
    let c: &'static ProfiledAllocator<MallocAllocator> =
        Box::leak(Box::new(ProfiledAllocator::wrap(MallocAllocator)));
    let a = Allocator::register(c).unwrap();
    f(a);
    assert_eq!(c.profile().current, 0, "leaked blocks");
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
