//! Arena figures from a traced run (docs/bef.md, "Arena sizes"): an allocator that records
//! every allocation and free, and the record replayed into the arena's own first-fit heap
//! (`linked_list_allocator`, which `FixedArena` uses through embedded-alloc).
//!
//! [`ArenaTrace::need`] is what a `FixedArena` on this machine needs: the unbounded replay's
//! highest block end plus one free-list node. [`ArenaTrace::bound_on`] is a bound for a
//! target with narrower pointers, derived from the same record.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Mutex;

use hostrt_core::Allocator;
use hostrt_core::allocator::{ARENA_ALIGN, AllocError, AllocStats, HostAllocator, arena_block_bytes_on};
use linked_list_allocator::hole::HoleList;

use crate::SystemAllocator;

/// One allocator event of a traced run.
#[derive(Clone, Copy, Debug)]
enum Event {
    /// Allocation number `id`.
    Alloc { id: usize, layout: Layout },
    /// Allocation `id` freed.
    Free { id: usize, layout: Layout },
}

/// An allocator that forwards to the system heap and records what it is asked.
struct Tracer {
    system: SystemAllocator,
    state: Mutex<TraceState>,
}

#[derive(Default)]
struct TraceState {
    events: Vec<Event>,
    /// Live blocks: address to allocation number.
    live: HashMap<usize, usize>,
    next: usize,
}

impl Tracer {
    fn state(&self) -> std::sync::MutexGuard<'_, TraceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

// SAFETY: forwards to the system allocator, which upholds the contract; the bookkeeping
// only records.
unsafe impl HostAllocator for Tracer {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // A `FixedArena` refuses empty blocks; so does the tracer, so the replay matches.
        if layout.size() == 0 {
            return Err(AllocError::new(layout));
        }
        let p = self.system.allocate(layout)?;
        let mut s = self.state();
        let id = s.next;
        s.next += 1;
        s.live.insert(p.as_ptr() as usize, id);
        s.events.push(Event::Alloc { id, layout });
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        {
            let mut s = self.state();
            if let Some(id) = s.live.remove(&(ptr.as_ptr() as usize)) {
                s.events.push(Event::Free { id, layout });
            }
        }
        // SAFETY: `ptr` came from `allocate`, so from the system allocator, with `layout`.
        unsafe { self.system.deallocate(ptr, layout) }
    }

    fn stats(&self) -> Option<AllocStats> {
        self.system.stats()
    }
}

/// What one traced run asked of its allocator, in order.
///
/// ```
/// use hostrt_core::AsyncValueRef;
/// use hostrt_std::ArenaTrace;
///
/// let ((), trace) = ArenaTrace::record(|alloc, _| {
///     let v = AsyncValueRef::available(alloc, 42i64).unwrap();
///     drop(v);
/// })
/// .unwrap();
/// assert_eq!(trace.len(), 2); // one allocation, one free
/// assert!(trace.need().unwrap() >= trace.requested_peak());
/// assert!(trace.bound_on(4) >= trace.requested_peak());
/// ```
#[derive(Clone, Debug, Default)]
pub struct ArenaTrace {
    events: Vec<Event>,
}

impl ArenaTrace {
    /// Run `f` with an allocator that forwards to the system heap and records every
    /// allocation and free; `f`'s second argument counts the events so far (to mark a
    /// point, see [`truncate`](Self::truncate)). Fails only when the process's allocator
    /// table is full.
    pub fn record<R>(f: impl FnOnce(Allocator, &dyn Fn() -> usize) -> R) -> Result<(R, ArenaTrace), String> {
        // Leaked: blocks a run leaves behind may still name it.
        let tracer: &'static Tracer =
            Box::leak(Box::new(Tracer { system: SystemAllocator::new(), state: Mutex::default() }));
        let alloc = Allocator::register(tracer).map_err(|e| format!("allocator table full: {e:?}"))?;
        let r = f(alloc, &|| tracer.state().events.len());
        let state = std::mem::take(&mut *tracer.state());
        if state.live.is_empty() {
            let _ = alloc.unregister();
        }
        Ok((r, ArenaTrace { events: state.events }))
    }

    /// Number of events (allocations and frees).
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether nothing was allocated.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Keep the first `events` events (a point [`record`](Self::record)'s counter gave).
    pub fn truncate(&mut self, events: usize) {
        self.events.truncate(events);
    }

    /// The peak of requested bytes in use (what `AllocStats::peak` reports).
    pub fn requested_peak(&self) -> usize {
        let (mut now, mut peak) = (0usize, 0usize);
        for e in &self.events {
            match e {
                Event::Alloc { layout, .. } => {
                    now += layout.size();
                    peak = peak.max(now);
                }
                Event::Free { layout, .. } => now -= layout.size(),
            }
        }
        peak
    }

    /// The arena capacity from which on every capacity runs the record exactly as an
    /// unbounded heap does: the unbounded run's highest block end plus one free-list node.
    /// Below that the heap can refuse a block whose leftover tail would be too small for a
    /// node, so a smaller arena may succeed while a larger one fails; from it on, every
    /// leftover tail is either empty or big enough. An error only when the replay fails.
    pub fn need(&self) -> Result<usize, String> {
        let (high, _) = self.replay_unbounded()?;
        let need = (high + 2 * size_of::<usize>()).next_multiple_of(8);
        replay_ends(&self.events, need).ok_or_else(|| format!("the replay in {need} bytes failed"))?;
        Ok(need)
    }

    /// A `FixedArena` capacity that suffices for the same run on a target whose pointers are
    /// `word` bytes (at most this machine's): every block the record allocates, with the worst
    /// padding that target's first-fit heap can give it (`arena_block_bytes_on`), plus one
    /// free-list node. A first-fit heap reaches past its free top only by blocks placed
    /// there, so its highest end is at most the sum, however it frees and reuses below.
    ///
    /// It trusts that no block is bigger, or more aligned, on the narrower target than here:
    /// the same types and counts, whose fields are no bigger with narrower pointers.
    pub fn bound_on(&self, word: usize) -> usize {
        let blocks = self.events.iter().map(|e| match e {
            Event::Alloc { layout, .. } => arena_block_bytes_on(*layout, word),
            Event::Free { .. } => 0,
        });
        (blocks.fold(2 * word, usize::saturating_add)).next_multiple_of(8)
    }

    /// The unbounded replay: the highest block end, and the highest end of the blocks still
    /// live at the end (where the heap's free space above them begins).
    pub fn replay_unbounded(&self) -> Result<(usize, usize), String> {
        let node = 2 * size_of::<usize>();
        // Room for every block at once with its worst front padding (a node plus the alignment).
        let mut unbounded: usize = self
            .events
            .iter()
            .map(|e| {
                if let Event::Alloc { layout, .. } = e { rounded(*layout) + node + layout.align() } else { 0 }
            })
            .sum::<usize>()
            .max(4096);
        // The run counts as unbounded only if its blocks never came within a node of the end:
        // only then did the size refuse nothing.
        loop {
            let ends = replay_ends(&self.events, unbounded).ok_or("the unbounded replay failed")?;
            if ends.0 + node <= unbounded {
                return Ok(ends);
            }
            unbounded = unbounded.checked_mul(2).ok_or("the replay needs more than the address space")?;
        }
    }
}

/// The bytes the first-fit heap gives a request: at least a free-list node, a multiple of
/// its alignment (the heap's own rounding).
fn rounded(layout: Layout) -> usize {
    HoleList::align_layout(layout).map_or(layout.size(), |l| l.size())
}

/// Replay `events` into a first-fit heap of `capacity` bytes starting at an [`ARENA_ALIGN`]
/// boundary, as in a `FixedArena` of that capacity: the highest end offset of any block and
/// the highest end of the blocks still live at the end, or `None` if an allocation fails.
fn replay_ends(events: &[Event], capacity: usize) -> Option<(usize, usize)> {
    let mut buffer = vec![0u8; capacity + ARENA_ALIGN];
    let skip = (buffer.as_ptr() as usize).wrapping_neg() % ARENA_ALIGN;
    // SAFETY: the pointer stays inside `buffer` (`skip < ARENA_ALIGN`).
    let base = unsafe { buffer.as_mut_ptr().add(skip) };
    // SAFETY: `base..base + capacity` is owned, valid and outlives `heap`, which is dropped
    // (with every block it handed out) before `buffer`.
    let mut heap = unsafe { linked_list_allocator::Heap::new(base, capacity) };
    let mut blocks: HashMap<usize, NonNull<u8>> = HashMap::new();
    let mut high = 0;
    for e in events {
        match *e {
            Event::Alloc { id, layout } => {
                let p = heap.allocate_first_fit(layout).ok()?;
                high = high.max(p.as_ptr() as usize - base as usize + rounded(layout));
                blocks.insert(id, p);
            }
            Event::Free { id, layout } => {
                if let Some(p) = blocks.remove(&id) {
                    // SAFETY: `p` came from this heap's `allocate_first_fit` with `layout`.
                    unsafe { heap.deallocate(p, layout) };
                }
            }
        }
    }
    let mut live_end = 0;
    for e in events {
        if let Event::Alloc { id, layout } = e
            && let Some(p) = blocks.get(id)
        {
            live_end = live_end.max(p.as_ptr() as usize - base as usize + rounded(*layout));
        }
    }
    // Before the heap goes: blocks still live belong to it.
    drop(blocks);
    Some((high, live_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(events: &[(bool, usize, usize, usize)]) -> ArenaTrace {
        let events = events
            .iter()
            .map(|&(alloc, id, size, align)| {
                let layout = Layout::from_size_align(size, align).unwrap();
                if alloc { Event::Alloc { id, layout } } else { Event::Free { id, layout } }
            })
            .collect();
        ArenaTrace { events }
    }

    #[test]
    fn the_need_lets_every_capacity_from_it_run_the_record() {
        let t = trace(&[
            (true, 0, 100, 8),
            (true, 1, 64, 64),
            (false, 0, 100, 8),
            (true, 2, 40, 8),
            (true, 3, 300, 8),
        ]);
        let need = t.need().unwrap();
        assert_eq!(t.requested_peak(), 64 + 40 + 300);
        for capacity in need..need + 200 {
            assert!(replay_ends(&t.events, capacity).is_some(), "{capacity}");
        }
        // The freed 100 bytes were reused: less than every block side by side.
        assert!(need < 100 + 64 + 40 + 300 + 64, "{need}");
    }

    #[test]
    fn the_narrow_bound_adds_every_block_with_its_worst_padding() {
        let t = trace(&[(true, 0, 3, 1), (true, 1, 64, 64), (false, 0, 3, 1), (true, 2, 13, 4)]);
        // 8 (a node) + (64 + 8 + 60) + 16, then a node: 164, a multiple of 8 = 168.
        assert_eq!(t.bound_on(4), 168);
        // On this machine's word it bounds the measured need.
        assert!(t.bound_on(size_of::<usize>()) >= t.need().unwrap());
    }

    #[test]
    fn recording_counts_events_and_lets_a_point_be_kept() {
        let ((), mut t) = ArenaTrace::record(|alloc, events| {
            let a = alloc.allocate(Layout::from_size_align(24, 8).unwrap()).unwrap();
            assert_eq!(events(), 1);
            // SAFETY: `a` came from `alloc` with this layout.
            unsafe { alloc.deallocate(a, Layout::from_size_align(24, 8).unwrap()) };
            assert!(alloc.allocate(Layout::from_size_align(0, 1).unwrap()).is_err(), "empty blocks refused");
        })
        .unwrap();
        assert_eq!(t.len(), 2);
        t.truncate(1);
        assert_eq!((t.len(), t.requested_peak()), (1, 24));
    }
}
