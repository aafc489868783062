//! Cycles or instructions per layer, for the model images built with the `layer-profile`
//! feature (which turns on hostrt-core's `profile`): [`PROFILER`] is the executor's observer
//! (docs/profiling.md) on the host context of one profiled inference. It counts every
//! kernel call and adds the count to the row of the kernel's location, which for an imported
//! model names the layer (`op#12 CONV_2D:conv1/Relu`). [`print`] writes the rows as the
//! host's `--profile` table, with cycles or instructions where the host has microseconds.
//!
//! What it counts: core cycles from the DWT unit's cycle counter where the core has one that
//! runs (Cortex-M3 and up, on hardware: [`use_cycle_counter`]); otherwise SysTick ticks,
//! which under QEMU's `-icount shift=0` count instructions (`instructions.rs`), as QEMU
//! models no DWT cycle counter.

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m::interrupt::{Mutex, free};
use cortex_m::peripheral::{DCB, DWT};
use hostrt_core::observe::{KernelSpan, Observer};

use crate::instructions::{self, Counter};

/// Most rows (layers) the table keeps; calls past them count in the last row.
const ROWS: usize = 64;
/// Bytes of a layer's name kept.
const NAME: usize = 48;
/// Bytes of a kernel's name kept (`nn.depthwise_conv_2d.i8` has 23).
const KERNEL: usize = 32;

#[derive(Clone, Copy)]
struct Row {
    kernel: [u8; KERNEL],
    kernel_len: usize,
    name: [u8; NAME],
    name_len: usize,
    line: u32,
    calls: u32,
    ticks: u64,
}

const EMPTY: Row =
    Row { kernel: [0; KERNEL], kernel_len: 0, name: [0; NAME], name_len: 0, line: 0, calls: 0, ticks: 0 };

struct Table {
    rows: [Row; ROWS],
    used: usize,
}

static TABLE: Mutex<RefCell<Table>> = Mutex::new(RefCell::new(Table { rows: [EMPTY; ROWS], used: 0 }));

/// Whether the profiler reads the DWT cycle counter (else SysTick).
static CYCLES: AtomicBool = AtomicBool::new(false);

/// Counts with the DWT cycle counter if this core has one that runs: turns it on and checks
/// that it advances over a short loop. Returns whether it does; if not (no DWT, as on
/// Cortex-M0 or under QEMU), the profiler keeps SysTick.
pub fn use_cycle_counter(dcb: &mut DCB, dwt: &mut DWT) -> bool {
    let counting = DWT::has_cycle_counter() && {
        dcb.enable_trace();
        dwt.enable_cycle_counter();
        let before = DWT::cycle_count();
        instructions::count_down(100);
        DWT::cycle_count() != before
    };
    CYCLES.store(counting, Ordering::Relaxed);
    counting
}

/// Now, in the profiler's unit: the 32-bit cycle count, or SysTick ticks.
fn now() -> u64 {
    if CYCLES.load(Ordering::Relaxed) { u64::from(DWT::cycle_count()) } else { instructions::ticks() }
}

/// Ticks from `mark` to now: the cycle counter wraps at 32 bits (a kernel of 2^32 cycles
/// or more, 25 s at 168 MHz, would read short).
fn since(mark: u64) -> u64 {
    if CYCLES.load(Ordering::Relaxed) {
        u64::from(DWT::cycle_count().wrapping_sub(mark as u32))
    } else {
        instructions::ticks() - mark
    }
}

/// The observer a profiled inference's host context carries.
pub struct Profiler;

/// The one profiler.
pub static PROFILER: Profiler = Profiler;

impl Observer for Profiler {
    fn kernel_begin(&self, _: &KernelSpan<'_>) -> u64 {
        now()
    }

    fn kernel_end(&self, kernel: &KernelSpan<'_>, mark: u64) {
        record(kernel, since(mark));
    }
}

/// Adds one call of `ticks` to the row of `kernel`'s location.
fn record(kernel: &KernelSpan<'_>, ticks: u64) {
    let (file, line) = kernel.location.map_or(("", 0), |l| (l.file, l.line));
    let name = &file.as_bytes()[..file.len().min(NAME)];
    let kname = &kernel.name.as_bytes()[..kernel.name.len().min(KERNEL)];
    free(|cs| {
        let mut t = TABLE.borrow(cs).borrow_mut();
        let used = t.used;
        let at = t.rows[..used]
            .iter()
            .position(|r| &r.kernel[..r.kernel_len] == kname && r.line == line && &r.name[..r.name_len] == name);
        let at = match at {
            Some(at) => at,
            None if used < ROWS => {
                let mut row = Row { line, name_len: name.len(), kernel_len: kname.len(), ..EMPTY };
                row.name[..name.len()].copy_from_slice(name);
                row.kernel[..kname.len()].copy_from_slice(kname);
                t.rows[used] = row;
                t.used += 1;
                used
            }
            None => ROWS - 1,
        };
        let r = &mut t.rows[at];
        r.calls += 1;
        r.ticks += ticks;
    });
}

/// Clears the table (before the inference profiled).
pub fn reset() {
    free(|cs| TABLE.borrow(cs).borrow_mut().used = 0);
}

/// Prints the table as the host's `hostrt infer --profile` does: a row per kernel location,
/// most counted first, with its kernel, calls, cycles (or instructions) in all and per call,
/// and share.
pub fn print(counter: Counter) {
    let cycles = CYCLES.load(Ordering::Relaxed);
    let unit = if cycles { "cycles" } else { "instructions" };
    free(|cs| {
        let mut t = TABLE.borrow(cs).borrow_mut();
        let used = t.used;
        let rows = &mut t.rows[..used];
        rows.sort_unstable_by_key(|r| core::cmp::Reverse(r.ticks));
        let total: u64 = rows.iter().map(|r| r.ticks).sum::<u64>().max(1);
        let n = |ticks: u64| if cycles { ticks } else { ticks * 2_000_000 / counter.ticks_per_2m.max(1) };
        defmt::info!("location  kernel  calls  self {=str}  mean {=str}  share\n", unit, unit);
        for r in rows.iter() {
            let name = core::str::from_utf8(&r.name[..r.name_len]).unwrap_or("?");
            let kernel = core::str::from_utf8(&r.kernel[..r.kernel_len]).unwrap_or("?");
            let share = r.ticks * 1000 / total;
            defmt::info!(
                "{=str}  {=str}  {=u32}  {=u64}  {=u64}  {=u64}.{=u64}%\n",
                name,
                kernel,
                r.calls,
                n(r.ticks),
                n(r.ticks) / u64::from(r.calls.max(1)),
                share / 10,
                share % 10
            );
        }
        defmt::info!("{=u64} {=str} in kernels\n", n(total), unit);
    });
}
