//! hostrt-core on a Cortex-M with no global allocator: every runtime object comes from a
//! fixed arena in a static. Linking this image proves the core needs no `alloc`; running it
//! under QEMU runs the shared checks (`qemu-tests/checks`) on the target. Prints
//! `N passed, N failed` over semihosting and exits with status 0 only if every check passed.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use hostrt_core::{FixedArena, SingleThreadedWorkQueue};
use panic_semihosting as _;

const ARENA_BYTES: usize = 8 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// Harness self-test (feature `deliberately-fail`): one extra check that always fails.
const INJECTED: &[(&str, bool)] =
    if cfg!(feature = "deliberately-fail") { &[("deliberately_failing", false)] } else { &[] };

#[entry]
fn main() -> ! {
    let Some(buffer) = hostrt_core::static_buffer!(ARENA_BYTES) else { exit(false) };
    let report = hostrt_qemu_checks::run(&ARENA, buffer, &QUEUE);
    let mut failed = 0;
    for &(name, ok) in report.checks.iter().chain(INJECTED) {
        failed += usize::from(!ok);
        hprintln!("test {} ... {}", name, if ok { "ok" } else { "FAILED" });
    }
    hprintln!("arena peak {} bytes of {}", report.peak, ARENA_BYTES);
    hprintln!("{} passed, {} failed", report.checks.len() + INJECTED.len() - failed, failed);
    exit(failed == 0)
}

/// Report the outcome to QEMU (semihosting exit status).
fn exit(success: bool) -> ! {
    debug::exit(if success { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
