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

    /// Count one more level of counter `i`; the depth including it. While the thread is
    /// being torn down (its thread-locals gone) every level counts as the deepest, so work
    /// is enqueued.
    pub(super) fn enter(i: usize) -> u32 {
        DEPTHS.try_with(|d| d[i].replace(d[i].get() + 1) + 1).unwrap_or(u32::MAX)
    }

    /// Count one level of counter `i` less.
    pub(super) fn leave(i: usize) {
        let _ = DEPTHS.try_with(|d| d[i].set(d[i].get() - 1));
    }
}

#[cfg(not(feature = "std"))]
mod counters {
    use portable_atomic::{AtomicU32, Ordering};

    static DEPTHS: [AtomicU32; 2] = [AtomicU32::new(0), AtomicU32::new(0)];

    /// Count one more level of counter `i`; the depth including it.
    pub(super) fn enter(i: usize) -> u32 {
        DEPTHS[i].fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Count one level of counter `i` less.
    pub(super) fn leave(i: usize) {
        DEPTHS[i].fetch_sub(1, Ordering::Relaxed);
    }
}

/// One level of `kind` held until dropped.
pub(super) struct Level(Nesting);

impl Level {
    /// Enter a level of `kind`; returns it and the depth including it.
    pub(super) fn enter(kind: Nesting) -> (Level, u32) {
        (Level(kind), counters::enter(kind as usize))
    }
}

impl Drop for Level {
    fn drop(&mut self) {
        counters::leave(self.0 as usize);
    }
}
