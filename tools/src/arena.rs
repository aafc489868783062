//! `hostrt run --record-arena-peak`: measure the arena each function needs and record it in
//! the BEF file's ARENA section (docs/bef.md, "Arena sizes").
//!
//! A function runs once, as the driver runs it, through an allocator that records every
//! allocation and free. The record is then replayed into the arena's own first-fit heap
//! (`linked_list_allocator`, which `FixedArena` uses through embedded-alloc), unbounded; the
//! need is the highest block end plus one free-list node, from which on a `FixedArena` of
//! any capacity lays out the same blocks (see [`need`]).
//!
//! `hostrt compile --arena-bound` derives a bound instead, without running ([`derive`]).

use std::alloc::Layout;
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Mutex;

use hostrt_capi::program::TfProgram;
use hostrt_core::allocator::{ARENA_ALIGN, AllocError, AllocStats, HostAllocator};
use hostrt_core::driver::{DriverOptions, for_each_function_in_order, run_functions};
use hostrt_core::kernel::KernelLookup;
use hostrt_core::{Allocator, ConcurrentWorkQueue, Diagnostic, HostContext, SingleThreadedWorkQueue};
use hostrt_std::SystemAllocator;
use linked_list_allocator::hole::HoleList;

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

// SAFETY: forwards to the system allocator, which upholds the contract; the bookkeeping
// only records.
unsafe impl HostAllocator for Tracer {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        // A `FixedArena` refuses empty blocks; so does the tracer, so the replay matches.
        if layout.size() == 0 {
            return Err(AllocError::new(layout));
        }
        let p = self.system.allocate(layout)?;
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let id = s.next;
        s.next += 1;
        s.live.insert(p.as_ptr() as usize, id);
        s.events.push(Event::Alloc { id, layout });
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
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

/// What one function needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    /// Function index in the file.
    pub function: u32,
    /// Function name.
    pub name: String,
    /// Arena capacity from which on the program loads and the call completes.
    pub bytes: usize,
    /// Peak of requested bytes in use (what `AllocStats::peak` reports).
    pub requested_peak: usize,
}

/// Load `bef` as `hostrt run` does (with the C API's `tf.*` kernels) through an allocator
/// that records every allocation, and hand the program and its host to `then` (with the
/// number of events the load recorded); returns what `then` returns and the record (which
/// ends with the program's own blocks freed). An error when the program does not load.
fn traced<R>(
    bef: &[u8],
    kernels: &dyn KernelLookup,
    then: impl FnOnce(&TfProgram<'_>, &HostContext<'_>, usize) -> R,
) -> Result<(R, Vec<Event>), String> {
    let tracer: &'static Tracer =
        Box::leak(Box::new(Tracer { system: SystemAllocator::new(), state: Mutex::default() }));
    let alloc = Allocator::register(tracer).map_err(|e| format!("allocator table full: {e:?}"))?;
    let queue = SingleThreadedWorkQueue::new();
    let loaded = {
        let discard = |_: std::fmt::Arguments<'_>| {};
        let quiet = |_: &Diagnostic| {};
        let host = HostContext::new(alloc, &queue).with_output(&discard).with_diagnostics(&quiet);
        match TfProgram::load(bef, kernels, &host) {
            Ok(program) => {
                let loaded = tracer.state.lock().unwrap_or_else(|e| e.into_inner()).events.len();
                let r = then(&program, &host, loaded);
                // Before the program goes: queued work may still refer to it.
                queue.quiesce();
                Ok(r)
            }
            Err(e) => Err(format!("the program does not load: {e}")),
        }
    };
    let state = std::mem::take(&mut *tracer.state.lock().unwrap_or_else(|e| e.into_inner()));
    if state.live.is_empty() {
        let _ = alloc.unregister();
    }
    loaded.map(|r| (r, state.events))
}

/// Load `bef` and run function `name` as the driver does, recording every allocation.
fn trace(bef: &[u8], kernels: &dyn KernelLookup, name: &str) -> Result<Vec<Event>, String> {
    let run = |program: &TfProgram<'_>, host: &HostContext<'_>, _| {
        let names = [name];
        let opts = DriverOptions { functions: &names, ..DriverOptions::default() };
        let _ = run_functions(program, host, &opts, &mut |_| {});
    };
    traced(bef, kernels, run).map(|((), events)| events)
}

/// The bytes the first-fit heap gives a request: at least a free-list node, a multiple of
/// its alignment (the heap's own rounding).
fn rounded(layout: Layout) -> usize {
    HoleList::align_layout(layout).map_or(layout.size(), |l| l.size())
}

/// Replay `events` into a first-fit heap of `capacity` bytes starting at an [`ARENA_ALIGN`]
/// boundary, as in a `FixedArena` of that capacity: the highest end offset of any block, or
/// `None` if an allocation fails.
fn replay(events: &[Event], capacity: usize) -> Option<usize> {
    replay_ends(events, capacity).map(|(high, _)| high)
}

/// [`replay`], also returning the highest end of the blocks still live at the end.
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

/// [`replay_ends`] into a heap with room to spare: the highest block end, and the highest
/// end of the blocks still live at the end.
fn replay_unbounded(events: &[Event]) -> Result<(usize, usize), String> {
    let node = 2 * size_of::<usize>();
    // Room for every block at once with its worst front padding (a node plus the alignment).
    let mut unbounded: usize =
        events
            .iter()
            .map(|e| {
                if let Event::Alloc { layout, .. } = e { rounded(*layout) + node + layout.align() } else { 0 }
            })
            .sum::<usize>()
            .max(4096);
    // The run counts as unbounded only if its blocks never came within a node of the end:
    // only then did the size refuse nothing.
    loop {
        let ends = replay_ends(events, unbounded).ok_or("the unbounded replay failed")?;
        if ends.0 + node <= unbounded {
            return Ok(ends);
        }
        unbounded = unbounded.checked_mul(2).ok_or("the replay needs more than the address space")?;
    }
}

/// The peak of requested bytes in use over `events`.
fn requested_peak(events: &[Event]) -> usize {
    let (mut now, mut peak) = (0usize, 0usize);
    for e in events {
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

/// The arena capacity from which on every capacity runs `events` exactly as an unbounded
/// heap does: the unbounded run's highest block end plus one free-list node. Below that the
/// heap can refuse a block whose leftover tail would be too small for a node, so a
/// smaller arena may succeed while a larger one fails; from it on, every leftover tail is
/// either empty or big enough.
fn need(events: &[Event]) -> Result<usize, String> {
    let (high, _) = replay_unbounded(events)?;
    let need = (high + 2 * size_of::<usize>()).next_multiple_of(8);
    replay(events, need).ok_or_else(|| format!("the replay in {need} bytes failed"))?;
    Ok(need)
}

/// The functions the driver runs: named, without arguments, not native.
fn driven_functions(bef: &[u8]) -> Result<Vec<(u32, String)>, String> {
    // Verification scratch: at most 4 bytes per register, bounded by the file's size.
    let (_, scratch) = hostrt_std::leaked_arena(bef.len() + 4096).map_err(|e| e.to_string())?;
    let file = hostrt_core::bef::BefFile::load_unresolved(bef, scratch).map_err(|e| e.to_string())?;
    let mut functions = Vec::new();
    for_each_function_in_order(&file, |fi| {
        if let Some(f) = file.function(fi)
            && f.record().num_args == 0
            && !f.name().is_empty()
            && !f.is_native()
        {
            functions.push((fi, f.name().to_string()));
        }
    });
    Ok(functions)
}

/// Measure the arena a `FixedArena` needs to load `bef` and make one call of `function`
/// with the arguments `args` makes (on the traced allocator), as [`measure`] does for the
/// functions the driver runs: an imported model's `@main` on zero inputs.
pub fn measure_call(
    bef: &[u8],
    kernels: &dyn KernelLookup,
    function: &str,
    args: impl FnOnce(&HostContext<'_>) -> Result<Vec<hostrt_core::RcAsyncValue>, String>,
) -> Result<usize, String> {
    let run = |program: &TfProgram<'_>, host: &HostContext<'_>, _| {
        let args = args(host)?;
        program.call(host, function, &args).map(drop).map_err(|e| format!("@{function}: {e:?}"))
    };
    let (called, events) = traced(bef, kernels, run)?;
    called?;
    need(&events).map_err(|e| format!("@{function}: {e}"))
}

/// Measure every named function without arguments (the ones the driver runs) but those in
/// `skip`.
pub fn measure(bef: &[u8], kernels: &dyn KernelLookup, skip: &[u32]) -> Result<Vec<Need>, String> {
    let mut needs = Vec::new();
    for (fi, name) in driven_functions(bef)? {
        if skip.contains(&fi) {
            continue;
        }
        let events = trace(bef, kernels, &name)?;
        let bytes = need(&events).map_err(|e| format!("@{name}: {e}"))?;
        needs.push(Need { function: fi, name, bytes, requested_peak: requested_peak(&events) });
    }
    Ok(needs)
}

/// A function's bound derived from the program, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Function index in the file.
    pub function: u32,
    /// Function name.
    pub name: String,
    /// Arena capacity that suffices for the load and one call, whatever the inputs.
    pub bytes: Result<usize, String>,
}

/// Derive, without running anything, the arena each function the driver runs needs
/// (docs/bef.md, "Arena sizes"). The load is the same for every input, so it is traced and
/// replayed: its highest block end, and the end of the blocks it keeps, where the heap's
/// free space above them begins. The call's blocks (`Program::call_arena_bound`: every
/// block it can allocate, with worst padding) can reach no further than that end plus their
/// sum, whatever the heap reuses below it; one free-list node on top.
pub fn derive(bef: &[u8], kernels: &dyn KernelLookup) -> Result<Vec<Bound>, String> {
    let functions = driven_functions(bef)?;
    let bound = |program: &TfProgram<'_>, _: &HostContext<'_>, loaded| {
        let calls: Vec<_> = functions
            .iter()
            .map(|(fi, _)| program.call_arena_bound(*fi).map_err(|e| e.to_string()))
            .collect();
        (calls, loaded)
    };
    let ((calls, loaded), mut load_events) = traced(bef, kernels, bound)?;
    // The load alone (deriving allocates bookkeeping of its own, which is no part of it).
    load_events.truncate(loaded);
    let (load_high, load_end) = replay_unbounded(&load_events)?;
    let node = 2 * size_of::<usize>();
    Ok(functions
        .into_iter()
        .zip(calls)
        .map(|((function, name), call)| {
            let bytes = call.map(|c| (load_high.max(load_end + c) + node).next_multiple_of(8));
            Bound { function, name, bytes }
        })
        .collect())
}
