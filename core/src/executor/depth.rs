//! How deeply the executor nests on the current stack: waiter callbacks that run further
//! kernels inside a completing value's notification, and synchronous calls inside kernels.
//! Past a limit the work continues in a work-queue task instead (docs/execution.md,
//! "Calls and control flow").
//!
//! With `std` each thread counts its own nesting in a thread-local cell: no locked
//! instruction, and another thread's work cannot change where this one stops. Without
//! thread-locals (`no_std`) one atomic counter per kind serves every thread; another
//! thread's nesting can then only make this one enqueue earlier, which is safe.

/// A kind of nesting.
#[derive(Clone, Copy)]
pub(super) enum Nesting {
    /// Waiter callbacks (bounded by [`MAX_STACK_DEPTH`](super::run::MAX_STACK_DEPTH)).
    Waiters = 0,
    /// Synchronous kick-offs (bounded by `HostContext::max_call_depth`).
    Calls = 1,
}

#[cfg(feature = "std")]
mod counters {
    extern crate std;
    use core::cell::Cell;

    std::thread_local! {
        static DEPTHS: [Cell<u32>; 2] = const { [Cell::new(0), Cell::new(0)] };
    }

    /// Add `delta` to counter `i`; the new value. While the thread is being torn down (its
    /// thread-locals gone) every level counts as the deepest, so work is enqueued.
    pub(super) fn add(i: usize, delta: i32) -> u32 {
        DEPTHS
            .try_with(|d| {
                let v = d[i].get().wrapping_add_signed(delta);
                d[i].set(v);
                v
            })
            .unwrap_or(u32::MAX)
    }
}

#[cfg(not(feature = "std"))]
mod counters {
    use portable_atomic::{AtomicU32, Ordering};

    static DEPTHS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

    /// Add `delta` to counter `i`; the new value.
    pub(super) fn add(i: usize, delta: i32) -> u32 {
        let c = &DEPTHS[i];
        if delta >= 0 {
            c.fetch_add(delta as u32, Ordering::Relaxed).wrapping_add(delta as u32)
        } else {
            c.fetch_sub(delta.unsigned_abs(), Ordering::Relaxed).wrapping_sub(delta.unsigned_abs())
        }
    }
}

/// One level of `kind` held until dropped.
pub(super) struct Level(Nesting);

impl Level {
    /// Enter a level of `kind`; returns it and the depth including it.
    pub(super) fn enter(kind: Nesting) -> (Level, u32) {
        (Level(kind), counters::add(kind as usize, 1))
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        counters::add(self.0 as usize, -1);
    }
}
