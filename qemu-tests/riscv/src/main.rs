//! hostrt-core on RISC-V (riscv32imac, QEMU `virt`) with no global allocator: every runtime
//! object comes from a fixed arena in a static. Linking this image proves the core needs no
//! `alloc`; running it under QEMU runs the shared checks (`qemu-tests/checks`) on the target.
//! Prints `N passed, N failed` over semihosting and exits with status 0 only if every check
//! passed.
#![no_std]
#![no_main]

use hostrt_core::{FixedArena, SingleThreadedWorkQueue};
use semihosting::{println, process};

// Links the `critical-section` implementation (feature `critical-section-single-hart`).
use riscv as _;

const ARENA_BYTES: usize = 8 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// Harness self-test (feature `deliberately-fail`): one extra check that always fails.
const INJECTED: &[(&str, bool)] =
    if cfg!(feature = "deliberately-fail") { &[("deliberately_failing", false)] } else { &[] };

#[riscv_rt::entry]
fn main() -> ! {
    let Some(buffer) = hostrt_core::static_buffer!(ARENA_BYTES) else { process::exit(1) };
    let report = hostrt_qemu_checks::run(&ARENA, buffer, &QUEUE);
    let mut failed = 0;
    for &(name, ok) in report.checks.iter().chain(INJECTED) {
        failed += usize::from(!ok);
        println!("test {} ... {}", name, if ok { "ok" } else { "FAILED" });
    }
    println!("arena peak {} bytes of {}", report.peak, ARENA_BYTES);
    println!("{} passed, {} failed", report.checks.len() + INJECTED.len() - failed, failed);
    process::exit(if failed == 0 { 0 } else { 1 })
}
