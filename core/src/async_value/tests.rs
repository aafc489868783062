extern crate std;

use std::string::ToString;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::vec;

use super::*;
use crate::testing::{Log, TestArena, drop_counter};

#[test]
#[cfg(target_pointer_width = "64")]
fn header_is_16_bytes_on_64_bit() {
    assert_eq!(HEADER_SIZE, 16);
    // i32 payload sits right after the header, as in TFRT's ConcreteAsyncValue<int32_t>.
    assert_eq!(core::mem::size_of::<Concrete<i32>>(), 24);
    assert_eq!(core::mem::size_of::<IndirectBlock>(), 24);
}

#[test]
fn available_value_reads_and_frees() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::available(a.alloc, 42i32).unwrap();
    assert_eq!(v.state(), State::Concrete);
    assert!(v.is_available() && v.is_concrete() && !v.is_error());
    assert_eq!(v.get(), Some(&42));
    assert_eq!((*v).get::<i64>(), None, "wrong type is refused");
    assert!(v.is_type::<i32>() && !v.is_type::<u32>());
    assert!(a.in_use() > 0);
    drop(v);
    assert_eq!(a.in_use(), 0);
}

#[test]
fn unconstructed_then_emplace_runs_waiters() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    assert_eq!(v.state(), State::Unconstructed);
    assert_eq!(v.get(), None);
    let log = Log::default();
    let (l, w) = (log.clone(), v.clone());
    v.and_then(move || l.push(std::format!("saw {}", w.get().unwrap()))).unwrap();
    assert!(log.take().is_empty(), "waiter must not run before the value is available");
    v.emplace(7);
    assert_eq!(log.take(), ["saw 7"]);
    // Once available, and_then runs inline.
    let l = log.clone();
    v.and_then(move || l.push("inline")).unwrap();
    assert_eq!(log.take(), ["inline"]);
    assert_eq!(v.try_emplace(8), Err(8), "second emplace is refused");
    assert!(!v.set_error(Diagnostic::internal("late")), "error after concrete is refused");
    assert_eq!(v.get(), Some(&7));
}

#[test]
fn waiters_run_lifo() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let log = Log::default();
    for i in 1..=4 {
        let l = log.clone();
        v.and_then(move || l.push(i.to_string())).unwrap();
    }
    v.emplace(0);
    assert_eq!(log.take(), ["4", "3", "2", "1"]);
}

#[test]
fn set_error_publishes_diagnostic_and_runs_waiters() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let log = Log::default();
    let (l, w) = (log.clone(), v.clone());
    v.and_then(move || l.push(w.get_error().unwrap().message().to_string())).unwrap();
    assert!(v.set_error(Diagnostic::internal("something bad happened")));
    assert_eq!(v.state(), State::Error);
    assert!(v.is_error() && v.is_available() && !v.is_concrete());
    assert_eq!(v.get(), None);
    assert_eq!(log.take(), ["something bad happened"]);
    assert_eq!(v.get_error().unwrap().code, ErrorCode::Internal);
    assert_eq!(v.try_emplace(1), Err(1));
}

#[test]
fn error_values_and_typed_error_values() {
    let a = TestArena::new(4096);
    let e = RcAsyncValue::error(a.alloc, Diagnostic::cancelled()).unwrap();
    assert!(e.is_error());
    assert_eq!(e.get_error().unwrap().code, ErrorCode::Cancelled);
    let t = AsyncValueRef::<u64>::error(a.alloc, Diagnostic::internal("typed")).unwrap();
    assert!(t.is_error() && t.is_type::<u64>());
    assert_eq!(t.get_error().unwrap().message(), "typed");
}

#[test]
fn error_propagates_through_and_then() {
    let a = TestArena::new(4096);
    let src = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let dst = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let (s, d) = (src.clone(), dst.clone());
    src.and_then(move || match s.get_error() {
        Some(e) => {
            d.set_error(*e);
        }
        None => d.emplace(*s.get().unwrap() * 2),
    })
    .unwrap();
    src.set_error(Diagnostic::new(ErrorCode::InvalidArgument, "bad input"));
    assert_eq!(dst.get_error().unwrap().message(), "bad input");
    assert_eq!(dst.get_error().unwrap().code, ErrorCode::InvalidArgument);
}

#[test]
fn payload_dropped_exactly_once_after_last_reference() {
    let a = TestArena::new(4096);
    let (payload, drops) = drop_counter();
    let v = AsyncValueRef::available(a.alloc, payload).unwrap();
    assert!(v.is_unique());
    let clones: std::vec::Vec<_> = (0..5).map(|_| v.clone()).collect();
    assert_eq!(v.ref_count(), 6);
    assert!(!v.is_unique());
    drop(clones);
    assert_eq!(drops.load(SeqCst), 0);
    assert!(v.is_unique());
    let erased = v.into_rc();
    drop(erased);
    assert_eq!(drops.load(SeqCst), 1);
    assert_eq!(a.in_use(), 0);
}

#[test]
fn payload_dropped_once_when_emplaced_late() {
    let a = TestArena::new(4096);
    let (payload, drops) = drop_counter();
    let v = AsyncValueRef::unconstructed(a.alloc).unwrap();
    v.emplace(payload);
    let (extra, extra_drops) = drop_counter();
    assert!(v.try_emplace(extra).is_err());
    assert_eq!(extra_drops.load(SeqCst), 1, "refused payload is dropped by the caller");
    drop(v);
    assert_eq!(drops.load(SeqCst), 1);
}

#[test]
fn unavailable_value_dropped_discards_waiters() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let (captured, drops) = drop_counter();
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    v.and_then(move || {
        let _keep = &captured;
        r.store(true, SeqCst);
    })
    .unwrap();
    drop(v);
    assert!(!ran.load(SeqCst));
    assert_eq!(drops.load(SeqCst), 1, "the waiter closure is dropped");
    assert_eq!(a.in_use(), 0);
}

#[test]
fn raw_round_trip_keeps_reference() {
    let a = TestArena::new(4096);
    let v = AsyncValueRef::available(a.alloc, 3u8).unwrap().into_rc();
    let raw = v.clone().into_raw();
    assert_eq!(v.ref_count(), 2);
    // SAFETY: `raw` came from into_raw and is adopted once.
    let back = unsafe { RcAsyncValue::from_raw(raw) };
    assert!(back.ptr_eq(&v));
    drop(back);
    assert_eq!(v.ref_count(), 1);
    let typed = v.clone().downcast::<u8>().unwrap();
    assert_eq!(typed.get(), Some(&3));
    assert!(v.clone().downcast::<u16>().is_err());
}

#[test]
fn indirect_forward_to_available() {
    let a = TestArena::new(4096);
    let ind = IndirectAsyncValue::new(a.alloc).unwrap();
    assert!(!ind.is_available() && ind.is_indirect());
    let (payload, drops) = drop_counter();
    let target = AsyncValueRef::available(a.alloc, payload).unwrap();
    ind.forward_to(target.clone().into_rc());
    assert!(ind.is_concrete());
    assert!(ind.get::<crate::testing::DropCounter>().is_some());
    assert!(!ind.is_unique(), "target still shared with `target`");
    drop(target);
    assert!(ind.is_unique());
    assert_eq!(drops.load(SeqCst), 0, "the forwarder keeps its target alive");
    drop(ind);
    assert_eq!(drops.load(SeqCst), 1);
}

#[test]
fn indirect_forward_to_unavailable_then_emplace() {
    let a = TestArena::new(4096);
    let ind = IndirectAsyncValue::new(a.alloc).unwrap();
    let target = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let log = Log::default();
    let (l, w) = (log.clone(), ind.clone());
    ind.and_then(move || l.push(std::format!("indirect {}", w.get::<i32>().unwrap()))).unwrap();
    ind.forward_to(target.clone().into_rc());
    assert!(!ind.is_available());
    target.emplace(5);
    assert_eq!(log.take(), ["indirect 5"]);
    assert_eq!(ind.get::<i32>(), Some(&5));
}

#[test]
fn indirect_chains_collapse() {
    let a = TestArena::new(4096);
    let outer = IndirectAsyncValue::new(a.alloc).unwrap();
    let inner = IndirectAsyncValue::new(a.alloc).unwrap();
    outer.forward_to(inner.clone());
    let concrete = AsyncValueRef::available(a.alloc, 9i64).unwrap();
    inner.forward_to(concrete.clone().into_rc());
    assert_eq!(outer.get::<i64>(), Some(&9));
    // `outer` points at the concrete value directly, not at `inner`.
    assert_eq!(resolved(outer.ptr), concrete.ptr);
    drop(inner);
    drop(concrete);
    assert!(outer.is_unique());
    // Forwarding to an already-resolved indirect collapses too.
    let third = IndirectAsyncValue::new(a.alloc).unwrap();
    third.forward_to(outer.clone());
    assert_eq!(third.get::<i64>(), Some(&9));
    assert_ne!(resolved(third.ptr), outer.ptr);
}

#[test]
fn long_forwarder_chains_resolve_in_order_without_recursion() {
    // chain[0] -> chain[1] -> ... -> chain[N-1] -> target, each link made while its target
    // is unresolved. Resolving the target used to recurse once per link; notify now splices
    // each forwarder's waiters in place, running them in the nested order: a forwarder's
    // waiters (most recent first) before the next-older waiter of the value it waited on.
    const N: usize = if cfg!(miri) { 50 } else { 2000 };
    let a = TestArena::new(1 << 20);
    let target = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let chain: vec::Vec<IndirectAsyncValue> =
        (0..N).map(|_| IndirectAsyncValue::new(a.alloc).unwrap()).collect();
    let log = Log::default();
    for (i, link) in chain.iter().enumerate().rev() {
        let next = chain.get(i + 1).map_or_else(|| target.clone().into_rc(), |n| (**n).clone());
        link.forward_to(next);
    }
    let (l, w) = (log.clone(), (*chain[0]).clone());
    chain[0].and_then(move || l.push(std::format!("first {}", w.get::<i32>().unwrap()))).unwrap();
    let (l, w) = (log.clone(), (*chain[N - 1]).clone());
    chain[N - 1].and_then(move || l.push(std::format!("last {}", w.get::<i32>().unwrap()))).unwrap();
    target.emplace(3);
    // The last link's own waiter (registered after the link before it started waiting on
    // it) runs first; the first link, resolved innermost, runs its waiter on the way.
    assert_eq!(log.take(), ["last 3", "first 3"]);
    assert!(chain.iter().all(|c| c.get::<i32>() == Some(&3)));
    assert!(chain.iter().all(|c| resolved(c.ptr) == target.ptr), "every link collapsed");
    drop(chain);
    drop(target);
}

#[test]
fn indirect_errors() {
    let a = TestArena::new(4096);
    let ind = IndirectAsyncValue::new(a.alloc).unwrap();
    let err = RcAsyncValue::error(a.alloc, Diagnostic::internal("boom")).unwrap();
    ind.forward_to(err);
    assert!(ind.is_error());
    assert_eq!(ind.get_error().unwrap().message(), "boom");

    let ind2 = IndirectAsyncValue::new(a.alloc).unwrap();
    assert!(ind2.set_error(Diagnostic::internal("direct")));
    assert_eq!(ind2.get_error().unwrap().message(), "direct");
    assert!(!ind2.set_error(Diagnostic::internal("again")));

    let ind3 = IndirectAsyncValue::new(a.alloc).unwrap();
    ind3.forward_to(ind3.clone());
    assert!(ind3.get_error().unwrap().message().contains("itself"));
}

#[test]
fn exhaustion_at_value_creation() {
    let a = TestArena::failing_after(0);
    assert!(AsyncValueRef::available(a.alloc, 1i32).is_err());
    assert!(AsyncValueRef::<i32>::unconstructed(a.alloc).is_err());
    assert!(RcAsyncValue::error(a.alloc, Diagnostic::internal("x")).is_err());
    assert!(IndirectAsyncValue::new(a.alloc).is_err());
}

#[test]
fn exhaustion_at_waiter_node_returns_closure() {
    let a = TestArena::failing_after(1);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    let (captured, drops) = drop_counter();
    let back = v.and_then(move || drop(captured));
    let closure = back.expect_err("no memory for the waiter node").into_inner();
    assert_eq!(drops.load(SeqCst), 0);
    drop(closure);
    assert_eq!(drops.load(SeqCst), 1);
    // Available values need no node, so and_then still works.
    v.emplace(1);
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    v.and_then(move || r.store(true, SeqCst)).unwrap();
    assert!(ran.load(SeqCst));
}

#[test]
fn exhaustion_at_error_diagnostic_uses_static_oom_error() {
    let a = TestArena::failing_after(1);
    let v = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    assert!(v.set_error(Diagnostic::internal("lost for lack of memory")));
    let e = v.get_error().unwrap();
    assert_eq!(e.code, ErrorCode::ResourceExhausted);
}

#[test]
fn exhaustion_forwarding_indirect() {
    // 1: indirect, 2: target; the forwarding waiter node and the error value both fail.
    let a = TestArena::failing_after(2);
    let ind = IndirectAsyncValue::new(a.alloc).unwrap();
    let target = AsyncValueRef::<i32>::unconstructed(a.alloc).unwrap();
    ind.forward_to(target.clone().into_rc());
    assert!(ind.is_error(), "could not wait for the target, so the forwarder errors");
    assert_eq!(ind.get_error().unwrap().code, ErrorCode::ResourceExhausted);
    target.emplace(3);
}

/// Run a scenario touching every allocation point with the k-th allocation failing, for
/// every k: nothing may panic and nothing may leak.
#[test]
fn exhaustion_at_every_allocation_point() {
    for budget in 0..12 {
        let a = TestArena::failing_after(budget);
        let scenario = || -> Result<(), ()> {
            let v = AsyncValueRef::<i32>::unconstructed(a.alloc).map_err(drop)?;
            let ind = IndirectAsyncValue::new(a.alloc).map_err(drop)?;
            ind.forward_to(v.clone().into_rc());
            let log = Log::default();
            let l = log.clone();
            let _ = ind.and_then(move || l.push("ind"));
            let l = log.clone();
            let _ = v.and_then(move || l.push("v"));
            let e = AsyncValueRef::<u8>::unconstructed(a.alloc).map_err(drop)?;
            e.set_error(Diagnostic::internal("e"));
            v.emplace(1);
            let t = crate::work_queue::Task::new(a.alloc, || ()).map_err(drop)?;
            t.run();
            Ok(())
        };
        let _ = scenario();
        assert_eq!(a.in_use(), 0, "leak with allocation budget {budget}");
    }
}

#[test]
fn concurrent_emplace_and_waiters_from_threads() {
    let a = TestArena::new(1 << 20);
    for _ in 0..200 {
        let v = AsyncValueRef::<u32>::unconstructed(a.alloc).unwrap();
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let producer = {
            let v = v.clone();
            std::thread::spawn(move || v.emplace(11))
        };
        let waiters: std::vec::Vec<_> = (0..3)
            .map(|_| {
                let (v, hits) = (v.clone(), hits.clone());
                std::thread::spawn(move || {
                    let w = v.clone();
                    let h = hits.clone();
                    v.and_then(move || {
                        assert_eq!(w.get(), Some(&11));
                        h.fetch_add(1, SeqCst);
                    })
                    .unwrap();
                })
            })
            .collect();
        producer.join().unwrap();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(hits.load(SeqCst), 3);
    }
    let _ = vec![0u8; 0];
}

#[test]
fn static_out_of_memory_value_is_shared_and_never_freed() {
    let a = TestArena::new(256);
    let e = RcAsyncValue::error_or_oom(a.alloc, Diagnostic::internal("too big for the arena"));
    // The arena is too small for an error value (block + boxed diagnostic) after this:
    let filler: vec::Vec<_> = core::iter::from_fn(|| AsyncValueRef::available(a.alloc, 0u64).ok()).collect();
    let oom = RcAsyncValue::error_or_oom(a.alloc, Diagnostic::internal("lost"));
    assert!(oom.ptr_eq(&RcAsyncValue::out_of_memory()), "the static value");
    assert_eq!(oom.get_error().unwrap().message(), "Out of memory while recording an error");
    let ran = Arc::new(core::sync::atomic::AtomicBool::new(false));
    let r = ran.clone();
    oom.and_then(move || r.store(true, SeqCst)).unwrap();
    assert!(ran.load(SeqCst), "available: waiters run at once");
    assert!(!oom.set_error(Diagnostic::internal("again")));
    let copies: vec::Vec<_> = (0..1000).map(|_| oom.clone()).collect();
    drop(copies);
    drop(oom);
    assert_eq!(RcAsyncValue::out_of_memory().get_error().unwrap().code, ErrorCode::ResourceExhausted);
    drop((e, filler));
}
