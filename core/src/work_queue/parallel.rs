//! Work inside one kernel spread over a work queue's workers: [`IndexClaims`], the protocol
//! a queue's `parallel_for` runs its indices by, and [`for_row_runs`], which hands each
//! worker a run of whole rows of a kernel's output as a disjoint `&mut` slice
//! (docs/execution.md, "Inside a kernel").

use core::marker::PhantomData;

use super::ConcurrentWorkQueue;
use crate::allocator::Allocator;
use crate::sync::{AtomicUsize, Ordering};

/// The indices `0..n` of one `parallel_for`, shared by the threads that run them: each
/// thread claims the next unclaimed index until none is left and reports each one finished;
/// the caller returns once [`all_done`](Self::all_done). Every index is run exactly once,
/// and what a run wrote is visible to the thread that then sees `all_done`.
#[derive(Debug)]
pub struct IndexClaims {
    next: AtomicUsize,
    done: AtomicUsize,
    n: usize,
}

impl IndexClaims {
    /// Indices `0..n`, none claimed.
    pub fn new(n: usize) -> Self {
        IndexClaims { next: AtomicUsize::new(0), done: AtomicUsize::new(0), n }
    }

    /// Runs `f` on claimed indices until every index is claimed. An index counts as finished
    /// when `f` returns or unwinds.
    pub fn run(&self, f: &dyn Fn(usize)) {
        /// Reports the index finished however `f` leaves.
        struct Finish<'a>(&'a AtomicUsize);
        impl Drop for Finish<'_> {
            fn drop(&mut self) {
                // Release: the run's writes happen before a caller's Acquire in `all_done`.
                self.0.fetch_add(1, Ordering::Release);
            }
        }
        loop {
            // Claiming needs only atomicity: the work itself was published with the task.
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.n {
                return;
            }
            let _finish = Finish(&self.done);
            f(i);
        }
    }

    /// Whether every index has finished.
    pub fn all_done(&self) -> bool {
        self.done.load(Ordering::Acquire) >= self.n
    }
}

/// `out`'s first element, shared by the runs of one [`for_row_runs`] call.
struct Rows<'a, T> {
    base: *mut T,
    len: usize,
    _out: PhantomData<&'a mut [T]>,
}

// SAFETY: `Rows` only hands out disjoint sub-slices of the `&mut [T]` it was made from (each
// run is given to one call), so sharing it between threads shares no element; `T: Send`
// lets each element move to the thread that writes it.
unsafe impl<T: Send> Sync for Rows<'_, T> {}

impl<'a, T> Rows<'a, T> {
    fn new(out: &'a mut [T]) -> Self {
        Rows { base: out.as_mut_ptr(), len: out.len(), _out: PhantomData }
    }

    /// Elements `start..end`.
    ///
    /// # Safety
    /// `start <= end <= len`, and no other live slice from this `Rows` overlaps the range.
    unsafe fn run(&self, start: usize, end: usize) -> &'a mut [T] {
        debug_assert!(start <= end && end <= self.len);
        // SAFETY: the caller's contract: the range lies inside the slice `base` came from
        // (borrowed mutably for 'a) and overlaps no other live run.
        unsafe { core::slice::from_raw_parts_mut(self.base.add(start), end - start) }
    }
}

/// How [`for_row_runs`] cuts an output into runs of whole rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSplit {
    /// Elements per row.
    pub row_len: usize,
    /// The fewest rows worth a run of their own.
    pub min_rows: usize,
    /// Runs per thread, at most.
    pub per_thread: usize,
    /// Every run but the last is a whole number of these rows: a kernel that computes its
    /// output in tiles of several rows wastes none on a run's edge.
    pub granule: usize,
}

impl RowSplit {
    /// Runs of at least `min_rows` rows of `row_len` elements, up to four per thread, cut
    /// anywhere.
    pub fn new(row_len: usize, min_rows: usize) -> Self {
        RowSplit { row_len, min_rows, per_thread: 4, granule: 1 }
    }
}

/// Calls `f(first_row, rows)` for runs of whole rows of `out` (`out.len() / row_len` rows)
/// that together cover it, as `split` says, spread over `queue`'s threads (the runs claimed
/// as threads come free). With one worker, or too few rows to split, it is `f(0, out)` on
/// the caller. Elements after the last whole row go to the last run.
///
/// ```
/// use hostrt_core::{Allocator, FixedArena, SingleThreadedWorkQueue};
/// use hostrt_core::work_queue::{RowSplit, for_row_runs};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(1024).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
/// let queue = SingleThreadedWorkQueue::new();
/// let mut out = [0u32; 12];
/// for_row_runs(&queue, alloc, &mut out, RowSplit::new(3, 1), &|first, rows: &mut [u32]| {
///     for (i, v) in rows.iter_mut().enumerate() {
///         *v = (first * 3 + i) as u32;
///     }
/// });
/// assert_eq!(out[11], 11);
/// ```
pub fn for_row_runs<T: Send>(
    queue: &dyn ConcurrentWorkQueue,
    alloc: Allocator,
    out: &mut [T],
    split: RowSplit,
    f: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    let RowSplit { row_len, min_rows, per_thread, granule } = split;
    let rows = out.len().checked_div(row_len).unwrap_or(0);
    let threads = queue.parallel_threads();
    if threads <= 1 || rows < 2 * min_rows.max(1) {
        return f(0, out);
    }
    // Several runs per thread let a helper that starts late take fewer of them (the caller
    // waits only for the run the helper is in); one per thread suits work that repeats a
    // setup per run (a GEMM packs its right-hand matrix).
    let parts = (per_thread.max(1) * threads).min(rows / min_rows.max(1)).max(1);
    let per = rows.div_ceil(parts).next_multiple_of(granule.max(1));
    let parts = rows.div_ceil(per);
    if parts < 2 {
        return f(0, out);
    }
    let total = out.len();
    let shared = Rows::new(out);
    queue.parallel_for(alloc, parts, &|p| {
        let first = p * per;
        let last = ((p + 1) * per).min(rows);
        if first >= last {
            return;
        }
        let end = if last == rows { total } else { last * row_len };
        // SAFETY: run `p` covers rows first..last (the last run also the tail), inside `out`
        // (last <= rows, rows · row_len <= total); runs of distinct `p` are disjoint, and
        // `parallel_for` calls each `p` once.
        f(first, unsafe { shared.run(first * row_len, end) });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestArena;
    use crate::work_queue::SingleThreadedWorkQueue;

    /// A queue that reports `level` threads for a `parallel_for` and runs the indices in
    /// reverse order.
    struct Wide(SingleThreadedWorkQueue, usize);

    impl ConcurrentWorkQueue for Wide {
        fn name(&self) -> &str {
            "wide"
        }
        fn add_task(&self, task: crate::work_queue::Task) {
            self.0.add_task(task)
        }
        fn add_blocking_task(
            &self,
            task: crate::work_queue::Task,
            q: bool,
        ) -> Option<crate::work_queue::Task> {
            self.0.add_blocking_task(task, q)
        }
        fn await_values(&self, v: &[crate::RcAsyncValue]) -> Result<(), super::super::AwaitError> {
            self.0.await_values(v)
        }
        fn quiesce(&self) {
            self.0.quiesce()
        }
        fn parallelism_level(&self) -> usize {
            self.1
        }
        fn is_in_worker_thread(&self) -> bool {
            false
        }
        fn parallel_threads(&self) -> usize {
            self.1
        }
        fn parallel_for(&self, _: Allocator, n: usize, f: &(dyn Fn(usize) + Sync)) {
            (0..n).rev().for_each(f)
        }
    }

    #[test]
    fn runs_cover_every_row_once() {
        for (rows, row_len, tail, level, min_rows, granule) in [
            (10, 3, 0, 4, 1, 1),
            (7, 5, 2, 3, 2, 1),
            (1, 4, 0, 8, 1, 1),
            (9, 1, 0, 2, 5, 1),
            (40, 1, 3, 2, 2, 12),
            (13, 2, 0, 4, 1, 6),
        ] {
            let mut out = [0usize; 64];
            let len = rows * row_len + tail;
            let q = Wide(SingleThreadedWorkQueue::new(), level);
            let calls = core::sync::atomic::AtomicUsize::new(0);
            for_row_runs(
                &q,
                TestArena::new(256).alloc,
                &mut out[..len],
                RowSplit { row_len, min_rows, per_thread: 4, granule },
                &|first, run: &mut [usize]| {
                    calls.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
                    // Every run starts on a granule; all but the last are whole granules.
                    assert!(first.is_multiple_of(granule));
                    assert!(
                        first * row_len + run.len() == len || (run.len() / row_len).is_multiple_of(granule)
                    );
                    for (i, v) in run.iter_mut().enumerate() {
                        *v += first * row_len + i + 1;
                    }
                },
            );
            let want: [usize; 64] = core::array::from_fn(|i| if i < len { i + 1 } else { 0 });
            assert_eq!(out, want, "{rows}x{row_len}+{tail}");
            let parts = calls.load(core::sync::atomic::Ordering::Relaxed);
            assert!(parts >= 1 && parts <= (4 * level).min((rows / min_rows).max(1)), "{parts}");
        }
    }
}
