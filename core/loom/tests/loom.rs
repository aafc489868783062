//! Model checks of AsyncValue's lock-free paths with loom.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p hostrt-core-loom --release`.
#![cfg(loom)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use hostrt_core::allocator::Allocator;
use hostrt_core::{AsyncValueRef, Diagnostic, IndirectAsyncValue};
use hostrt_std::SystemAllocator;
use loom::thread;

/// A fresh registered allocator for one test (registered once, outside the model).
fn allocator() -> (Allocator, &'static SystemAllocator) {
    let c: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    (Allocator::register(c).unwrap(), c)
}

struct Dropped(Arc<AtomicUsize>);
impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn emplace_races_and_then() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let v = AsyncValueRef::<u32>::unconstructed(alloc).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let producer = {
            let v = v.clone();
            thread::spawn(move || v.emplace(7))
        };
        let (w, r) = (v.clone(), ran.clone());
        v.and_then(move || {
            assert_eq!(w.get(), Some(&7));
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
        producer.join().unwrap();
        assert_eq!(ran.load(SeqCst), 1, "waiter runs exactly once");
        drop(v);
        assert_eq!(counting.profile().current, 0);
    });
}

#[test]
fn two_waiters_from_two_threads_both_run() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let v = AsyncValueRef::<u32>::unconstructed(alloc).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let waiter = {
            let (v, r) = (v.clone(), ran.clone());
            thread::spawn(move || {
                let r2 = r.clone();
                v.and_then(move || {
                    r2.fetch_add(1, SeqCst);
                })
                .unwrap();
            })
        };
        let r = ran.clone();
        v.and_then(move || {
            r.fetch_add(1, SeqCst);
        })
        .unwrap();
        v.emplace(1);
        waiter.join().unwrap();
        assert_eq!(ran.load(SeqCst), 2);
        drop(v);
        assert_eq!(counting.profile().current, 0);
    });
}

#[test]
fn concurrent_drops_destroy_payload_once() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let v = AsyncValueRef::available(alloc, Dropped(drops.clone())).unwrap();
        let other = v.clone();
        let t = thread::spawn(move || drop(other));
        drop(v);
        t.join().unwrap();
        assert_eq!(drops.load(SeqCst), 1);
        assert_eq!(counting.profile().current, 0);
    });
}

#[test]
fn emplace_races_set_error_one_wins() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let drops = Arc::new(AtomicUsize::new(0));
        let v = AsyncValueRef::<Dropped>::unconstructed(alloc).unwrap();
        let t = {
            let (v, d) = (v.clone(), drops.clone());
            thread::Builder::new()
                .stack_size(1 << 20)
                .spawn(move || v.try_emplace(Dropped(d)).is_ok())
                .unwrap()
        };
        let e = {
            let v = v.clone();
            thread::Builder::new()
                .stack_size(1 << 20)
                .spawn(move || v.set_error(Diagnostic::internal("lost race")))
                .unwrap()
        };
        let emplaced = t.join().unwrap();
        let errored = e.join().unwrap();
        assert!(errored ^ emplaced, "exactly one completion wins");
        assert_eq!(v.is_error(), errored);
        drop(v);
        assert_eq!(drops.load(SeqCst), 1, "the payload (used or refused) is dropped once");
        assert_eq!(counting.profile().current, 0);
    });
}

#[test]
fn indirect_forward_races_target_emplace() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let target = AsyncValueRef::<u32>::unconstructed(alloc).unwrap();
        let ind = IndirectAsyncValue::new(alloc).unwrap();
        let t = {
            let target = target.clone();
            thread::spawn(move || target.emplace(5))
        };
        ind.forward_to(target.clone().into_rc());
        t.join().unwrap();
        assert_eq!(ind.get::<u32>(), Some(&5));
        drop((ind, target));
        assert_eq!(counting.profile().current, 0);
    });
}

/// A chain of forwarders (`outer` -> `inner` -> `target`) resolved by `notify` without
/// recursion, while another thread builds the chain and registers a waiter on `outer`:
/// every forwarder ends with the value, the waiter runs once, nothing leaks.
#[test]
fn forwarder_chain_resolves_while_it_is_built() {
    let (alloc, counting) = allocator();
    loom::model(move || {
        let target = AsyncValueRef::<u32>::unconstructed(alloc).unwrap();
        let inner = IndirectAsyncValue::new(alloc).unwrap();
        let outer = IndirectAsyncValue::new(alloc).unwrap();
        inner.forward_to(target.clone().into_rc());
        let runs = Arc::new(AtomicUsize::new(0));
        let t = {
            let target = target.clone();
            thread::spawn(move || target.emplace(7))
        };
        outer.forward_to((*inner).clone());
        let seen = runs.clone();
        let watched = (*outer).clone();
        outer
            .and_then(move || {
                assert_eq!(watched.get::<u32>(), Some(&7));
                seen.fetch_add(1, SeqCst);
            })
            .unwrap();
        t.join().unwrap();
        assert_eq!((inner.get::<u32>(), outer.get::<u32>()), (Some(&7), Some(&7)));
        assert_eq!(runs.load(SeqCst), 1);
        drop((outer, inner, target));
        assert_eq!(counting.profile().current, 0);
    });
}

/// A tensor buffer's borrow word (tensor/buffer.rs): a reader and a writer racing on two
/// handles of one block never both get in, and every block is freed once.
#[test]
fn buffer_reader_and_writer_exclude_each_other() {
    use hostrt_core::tensor::HostBuffer;
    let (alloc, counting) = allocator();
    loom::model(move || {
        let buf = HostBuffer::allocate(alloc, 4).unwrap();
        let other = buf.slice(0, 4).unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let seen = inside.clone();
        let t = thread::spawn(move || {
            if let Ok(mut w) = other.write() {
                assert_eq!(seen.fetch_add(1, SeqCst), 0, "the writer is alone");
                w[0] = 1;
                seen.fetch_sub(1, SeqCst);
            }
        });
        if let Ok(r) = buf.read() {
            assert_eq!(inside.fetch_add(1, SeqCst), 0, "no writer while reading");
            assert!(r[0] == 0 || r[0] == 1);
            inside.fetch_sub(1, SeqCst);
        }
        t.join().unwrap();
        drop(buf);
        assert_eq!(counting.profile().current, 0);
    });
}

/// The single-threaded queue's lock-free stack: tasks added from two threads while the
/// owner takes and runs batches all run exactly once, each thread's in its order. One
/// thread adds its two tasks as one chain (`add_tasks`), the other one at a time.
#[test]
fn tasks_added_from_two_threads_run_once_in_order() {
    use hostrt_core::{ConcurrentWorkQueue, SingleThreadedWorkQueue, Task};
    let (alloc, counting) = allocator();
    loom::model(move || {
        let queue = Arc::new(SingleThreadedWorkQueue::new());
        let log = Arc::new(loom::sync::Mutex::new(Vec::new()));
        let adders: Vec<_> = [(10, 2), (20, 1)]
            .into_iter()
            .map(|(base, n)| {
                let (q, l) = (queue.clone(), log.clone());
                thread::spawn(move || {
                    let mut tasks = (0..n).map(|i| {
                        let l = l.clone();
                        Task::new(alloc, move || l.lock().unwrap().push(base + i)).ok().unwrap()
                    });
                    if n > 1 {
                        q.add_tasks(&mut tasks);
                    } else {
                        tasks.for_each(|t| q.add_task(t));
                    }
                })
            })
            .collect();
        queue.quiesce();
        for a in adders {
            a.join().unwrap();
        }
        queue.quiesce();
        let log = log.lock().unwrap().clone();
        assert_eq!(log.len(), 3, "{log:?}");
        let first: Vec<_> = log.iter().filter(|v| **v < 20).copied().collect();
        assert_eq!(first, [10, 11], "{log:?}");
        drop(queue);
        assert_eq!(counting.profile().current, 0);
    });
}

/// The host's frame block cache (docs/execution.md, "Frame blocks"): two threads run a call
/// each on one host. Each frame block is taken from or kept in the host's one-block slot by
/// exactly one of them (no block is freed twice or lost), and every block is back once the
/// host is dropped.
#[test]
fn frame_blocks_kept_by_one_host_for_two_threads() {
    use hostrt_core::SingleThreadedWorkQueue;
    use hostrt_core::executor::{Program, raw};
    use hostrt_core::{ExecutionContext, HostContext, KernelRegistry, RcAsyncValue, RequestContext};
    use std::cell::Cell;
    let (alloc, counting) = allocator();
    let (program_alloc, _) = allocator();
    let text = "func.func @id(%a: i32) -> i32 {\n  tfrt.return %a : i32\n}\n";
    let bef = hostrt_compiler::compile("id.mlir", text, Default::default()).unwrap();
    let bef: &'static hostrt_std::AlignedBytes = Box::leak(Box::new(hostrt_std::AlignedBytes::new(&bef)));
    let registry: &'static KernelRegistry<1> = Box::leak(Box::new(KernelRegistry::new()));
    let program: &'static Program<'static> =
        Box::leak(Box::new(Program::load(bef.as_bytes(), registry, program_alloc).unwrap()));
    loom::model(move || {
        // Never runs a task: the function completes inside `execute`.
        let queue: &'static SingleThreadedWorkQueue = Box::leak(Box::new(SingleThreadedWorkQueue::new()));
        let host = Arc::new(HostContext::new(alloc, queue));
        let run = |host: &HostContext<'_>, v: i32| {
            let request = RequestContext::new();
            let exec = ExecutionContext::new(host, &request);
            let arg = host.make_available(v).unwrap().into_rc();
            let slot = [Cell::new(None::<RcAsyncValue>)];
            // SAFETY: the call completes before `execute` returns; program and contexts
            // outlive it.
            unsafe { raw::execute(program, &exec, 0, &[arg], &slot) };
            assert_eq!(slot[0].take().and_then(|r| r.get::<i32>().copied()), Some(v));
        };
        let other = {
            let host = host.clone();
            thread::spawn(move || run(&host, 1))
        };
        run(&host, 2);
        other.join().unwrap();
        drop(host);
        assert_eq!(counting.profile().current, 0);
    });
}

/// The host's kept buffer (docs/execution.md, "Frame blocks"), as two calls of a model use
/// it for their arenas on two threads: each takes the kept buffer only when no other handle
/// holds it, so the two never write one buffer at once (the borrow would refuse the second
/// writer), and nothing is freed twice or lost once the host is dropped.
#[test]
fn kept_buffers_are_never_shared_by_two_calls() {
    use hostrt_core::tensor::HostBuffer;
    use hostrt_core::{HostContext, SingleThreadedWorkQueue};
    let (alloc, counting) = allocator();
    loom::model(move || {
        let queue: &'static SingleThreadedWorkQueue = Box::leak(Box::new(SingleThreadedWorkQueue::new()));
        let host = Arc::new(HostContext::new(alloc, queue));
        let call = move |host: &HostContext<'_>| {
            let arena = host.take_buffer(8).unwrap_or_else(|| HostBuffer::allocate(alloc, 8).unwrap());
            host.keep_buffer(arena.clone());
            let mut bytes = arena.write().expect("no other call writes a buffer taken back");
            bytes[0] = bytes[0].wrapping_add(1);
        };
        let other = {
            let host = host.clone();
            thread::spawn(move || call(&host))
        };
        call(&host);
        other.join().unwrap();
        drop(host);
        assert_eq!(counting.profile().current, 0);
    });
}

/// The exclusive-frame rule (docs/execution.md, "Exclusive frames"). In `@f`, `%z` waits
/// for `%x`, which a waiter runs once `%a` is set (on the producer's thread, or on the
/// caller's when `%a` is set before the waiter is pushed; the waiter holds a frame handle),
/// and for `%y`, which the calling thread runs: the thread that counts `%z` down last may
/// find the other's handle gone and count without a locked instruction. In every
/// interleaving `%z` runs exactly once, with both operands, and some interleavings take the
/// exclusive path (counted by the executor under loom).
#[test]
fn ready_counts_shared_by_a_waiter_and_the_caller() {
    use hostrt_core::SingleThreadedWorkQueue;
    use hostrt_core::basic_kernels::register_integer_kernels;
    use hostrt_core::executor::{Program, raw};
    use hostrt_core::{ExecutionContext, HostContext, KernelRegistry, RcAsyncValue, RequestContext};
    use std::cell::Cell;
    let (alloc, counting) = allocator();
    let (program_alloc, _) = allocator();
    let text = "func.func @f(%a: i32, %b: i32) -> i32 {\n  %x = tfrt.add.i32 %a, %b\n  \
                %y = tfrt.add.i32 %b, %b\n  %z = tfrt.add.i32 %x, %y\n  tfrt.return %z : i32\n}\n";
    let options =
        hostrt_compiler::bef::WriteOptions { streams: false, locations: true, ..Default::default() };
    let bef = hostrt_compiler::compile("f.mlir", text, options).unwrap();
    let bef: &'static hostrt_std::AlignedBytes = Box::leak(Box::new(hostrt_std::AlignedBytes::new(&bef)));
    let mut registry = KernelRegistry::<64>::new();
    register_integer_kernels(&mut registry).unwrap();
    let registry: &'static KernelRegistry<64> = Box::leak(Box::new(registry));
    let program: &'static Program<'static> =
        Box::leak(Box::new(Program::load(bef.as_bytes(), registry, program_alloc).unwrap()));
    // Two preemptions reach the race this checks (a count read, the waiter's whole run in
    // between, then the write) in seconds; the unbounded search takes many minutes.
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(2);
    model.check(move || {
        let queue: &'static SingleThreadedWorkQueue = Box::leak(Box::new(SingleThreadedWorkQueue::new()));
        let host = HostContext::new(alloc, queue);
        let request = RequestContext::new();
        let exec = ExecutionContext::new(&host, &request);
        let a = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
        let b = host.make_available(1i32).unwrap().into_rc();
        let producer = {
            let a = a.clone();
            thread::spawn(move || a.emplace(5))
        };
        let slot = [Cell::new(None::<RcAsyncValue>)];
        // SAFETY: program and contexts outlive the run, which ends by the join below (no
        // task is made: one stream, and the waiter runs on one of the two threads).
        unsafe { raw::execute(program, &exec, 0, &[a.clone().into_rc(), b], &slot) };
        producer.join().unwrap();
        let z = slot[0].take().unwrap();
        assert_eq!(z.get::<i32>(), Some(&8), "(5 + 1) + (1 + 1): {z:?}");
        drop((z, a));
        drop(host);
        assert_eq!(counting.profile().current, 0);
    });
    assert!(
        hostrt_core::executor::loom_exclusive_countdowns() > 0,
        "no interleaving took the exclusive path"
    );
}

/// `parallel_for`'s protocol (`IndexClaims`): two threads claim indices; each index runs
/// exactly once, and the caller, once it sees `all_done`, reads every run's plain writes
/// without a data race.
#[test]
fn parallel_for_claims_each_index_once_and_publishes_its_writes() {
    use hostrt_core::work_queue::IndexClaims;
    use loom::cell::UnsafeCell;

    loom::model(|| {
        let claims = Arc::new(IndexClaims::new(3));
        let cells: Arc<[UnsafeCell<usize>; 3]> = Arc::new(std::array::from_fn(|_| UnsafeCell::new(0)));
        // Index i is claimed once, so only one thread writes cell i until the caller reads
        // it after `all_done`.
        let bump = |cell: &UnsafeCell<usize>| {
            cell.with_mut(|p| {
                // SAFETY: the one thread that claimed this cell's index writes it (above).
                unsafe { *p += 1 }
            })
        };
        let helper = {
            let (c, d) = (claims.clone(), cells.clone());
            thread::spawn(move || c.run(&|i| bump(&d[i])))
        };
        claims.run(&|i| bump(&cells[i]));
        while !claims.all_done() {
            thread::yield_now();
        }
        for c in cells.iter() {
            c.with(|p| {
                // SAFETY: every run has finished: all_done's Acquire saw each run's Release.
                assert_eq!(unsafe { *p }, 1);
            });
        }
        helper.join().unwrap();
    });
}
