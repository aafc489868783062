//! Instructions executed, counted on QEMU's mps2-an386 (Cortex-M4F) run with
//! `-icount shift=0`: the virtual clock then advances with each instruction, and SysTick,
//! clocked from it, counts them. Included with `#[path]` by the images that measure
//! (`examples/firmware`, `qemu-tests/dsp`); on real hardware it counts core cycles instead.
//!
//! Call [`start`] once, then [`calibrate`] once to learn the ticks per known instruction
//! count, then [`Counter::instructions`] around the code measured.

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::SYST;
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m_rt::exception;

const RELOAD: u32 = 0x00FF_FFFF;
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    // A load and a store, not `fetch_add`: this handler is the only writer, and Armv6-M
    // (thumbv6m, whose images run on this board too) has no atomic read-modify-write.
    WRAPS.store(WRAPS.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// SysTick ticks since [`start`] (the 24-bit counter plus the counted wraps).
pub fn ticks() -> u64 {
    loop {
        let before = WRAPS.load(Ordering::Relaxed);
        let current = SYST::get_current();
        if WRAPS.load(Ordering::Relaxed) == before {
            return u64::from(before) * u64::from(RELOAD + 1) + u64::from(RELOAD - current);
        }
    }
}

/// Starts SysTick on the core clock, wrapping with an interrupt that counts the wraps.
pub fn start(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
    // The cleared counter reads 0 until its first tick loads RELOAD: wait for that, or the
    // first reading would be RELOAD ticks ahead of the next.
    while SYST::get_current() == 0 {}
}

/// Instructions per tick, measured on a `subs`/`bne` loop of 2,000,000 instructions.
#[derive(Clone, Copy, Debug)]
pub struct Counter {
    /// Ticks the calibration loop took.
    pub ticks_per_2m: u64,
}

/// Times the calibration loop (50,000 ticks on QEMU mps2-an386 with `-icount shift=0`: 40
/// instructions per tick, the resolution of one measurement).
pub fn calibrate() -> Counter {
    let start = ticks();
    count_down(1_000_000);
    Counter { ticks_per_2m: ticks().saturating_sub(start).max(1) }
}

/// A `subs`/`bne` loop of `2 * n` instructions (`n` at least 1) that touches no memory.
#[inline(always)]
pub fn count_down(n: u32) {
    // SAFETY: a register-only countdown loop; it touches no memory and ends at zero (a zero
    // `n` wraps and runs 2^32 times, still without touching memory).
    unsafe {
        core::arch::asm!("2:", "subs {n}, {n}, #1", "bne 2b", n = inout(reg) n => _, options(nomem, nostack));
    }
}

impl Counter {
    /// Instructions per run of `f`, averaged over `reps` runs.
    pub fn instructions(&self, reps: u32, mut f: impl FnMut()) -> u64 {
        let start = ticks();
        for _ in 0..reps {
            f();
        }
        ticks().saturating_sub(start) * 2_000_000 / self.ticks_per_2m / u64::from(reps.max(1))
    }
}
