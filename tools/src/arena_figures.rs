//! `hostrt run --record-arena-peak`: measure the arena each function needs and record it in
//! the BEF file's ARENA section (docs/bef.md, "Arena sizes").
//!
//! A function runs once, as the driver runs it, through an allocator that records every
//! allocation and free ([`ArenaTrace`]). The record is then replayed into the arena's own
//! first-fit heap, unbounded; the need is the highest block end plus one free-list node,
//! from which on a `FixedArena` of any capacity lays out the same blocks
//! ([`ArenaTrace::need`]).
//!
//! `hostrt compile --arena-bound` derives a bound instead, without running ([`derive`]).

use hostrt_c::tf::tf_program::TfProgram;
use hostrt_core::driver::{DriverOptions, for_each_function_in_order, run_functions};
use hostrt_core::kernel::KernelLookup;
use hostrt_core::{ConcurrentWorkQueue, Diagnostic, HostContext, SingleThreadedWorkQueue};
use hostrt_std::ArenaTrace;

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
) -> Result<(R, ArenaTrace), String> {
    let (loaded, trace) = ArenaTrace::record(|alloc, events| {
        let queue = SingleThreadedWorkQueue::new();
        let discard = |_: std::fmt::Arguments<'_>| {};
        let quiet = |_: &Diagnostic| {};
        let host = HostContext::new(alloc, &queue).with_output(&discard).with_diagnostics(&quiet);
        match TfProgram::load(bef, kernels, &host) {
            Ok(program) => {
                let r = then(&program, &host, events());
                // Before the program goes: queued work may still refer to it.
                queue.quiesce();
                Ok(r)
            }
            Err(e) => Err(format!("the program does not load: {e}")),
        }
    })?;
    loaded.map(|r| (r, trace))
}

/// Load `bef` and run function `name` as the driver does, recording every allocation.
fn trace(bef: &[u8], kernels: &dyn KernelLookup, name: &str) -> Result<ArenaTrace, String> {
    let run = |program: &TfProgram<'_>, host: &HostContext<'_>, _| {
        let names = [name];
        let opts = DriverOptions { functions: &names, ..DriverOptions::default() };
        let _ = run_functions(program, host, &opts, &mut |_| {});
    };
    traced(bef, kernels, run).map(|((), trace)| trace)
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

/// Measure every named function without arguments (the ones the driver runs) but those in
/// `skip`.
pub fn measure(bef: &[u8], kernels: &dyn KernelLookup, skip: &[u32]) -> Result<Vec<Need>, String> {
    let mut needs = Vec::new();
    for (fi, name) in driven_functions(bef)? {
        if skip.contains(&fi) {
            continue;
        }
        let trace = trace(bef, kernels, &name)?;
        let bytes = trace.need().map_err(|e| format!("@{name}: {e}"))?;
        needs.push(Need { function: fi, name, bytes, requested_peak: trace.requested_peak() });
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
    let ((calls, loaded), mut load) = traced(bef, kernels, bound)?;
    // The load alone (deriving allocates bookkeeping of its own, which is no part of it).
    load.truncate(loaded);
    let (load_high, load_end) = load.replay_unbounded()?;
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
