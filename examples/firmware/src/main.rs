//! A minimal firmware: `hostrt-core`, the basic kernels and a fixed arena in a static run
//! BEF programs that were compiled at build time and embedded in flash. Output goes over
//! semihosting; the exit status is 0 when every program ran and the arena is empty again.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{heprint, hprint, hprintln};
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::Program;
use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use panic_semihosting as _;
use semihosting::{exit, print_diagnostic, run_program};

mod semihosting;

/// A program compiled by the build script: its name and its (aligned) BEF bytes.
macro_rules! program {
    ($name:literal) => {
        ($name, hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/", $name, ".bef")))
    };
}

const ARENA_BYTES: usize = 16 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// Bytes below the stack pointer at start-up filled with [`PAINT`], to find how deep the
/// stack got (its high-water mark) after the programs ran.
const PAINTED: usize = 64 * 1024;
const PAINT: u32 = 0x5AFE_57AC;

/// Paint [`PAINTED`] bytes below the current stack pointer (less a margin for this call);
/// returns the lowest painted address.
fn paint_stack() -> usize {
    let sp = cortex_m::register::msp::read() as usize;
    let (bottom, top) = ((sp - PAINTED) & !3, (sp - 256) & !3);
    for p in (bottom..top).step_by(4) {
        // SAFETY: the words lie below the live stack (256 bytes of margin under this frame)
        // and above all static data (RAM is 4 MiB, the statics a few KiB); nothing else
        // uses that memory before the stack grows into it.
        unsafe { (p as *mut u32).write_volatile(PAINT) };
    }
    bottom
}

/// Stack bytes used since start-up: from the top of the stack down to the deepest word no
/// longer holding [`PAINT`].
fn stack_used(bottom: usize) -> usize {
    unsafe extern "C" {
        static _stack_start: u32;
    }
    let mut p = bottom;
    // SAFETY: reads the painted words (plain RAM below the current frame).
    while unsafe { (p as *const u32).read_volatile() } == PAINT {
        p += 4;
    }
    (&raw const _stack_start) as usize - p
}

#[entry]
fn main() -> ! {
    let painted = paint_stack();
    let programs = [program!("fib"), program!("errors"), program!("loops")];
    let mut ok = hostrt_core::static_buffer!(ARENA_BYTES).is_some_and(|b| ARENA.init(b).is_ok());
    let Ok(alloc) = Allocator::register(&ARENA) else { exit(false) };
    let mut registry: KernelRegistry<64> = KernelRegistry::new();
    ok &= register_basic_kernels(&mut registry).is_ok();
    let output = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
    let host = HostContext::new(alloc, &QUEUE).with_output(&output).with_diagnostics(&print_diagnostic);
    for (name, bytes) in programs {
        hprintln!("=== {}", name);
        ok &= run_program(Program::load(bytes, &registry, &host), &host);
    }
    drop(host); // gives back the frame block it keeps for the next call
    let s = ARENA.stats().unwrap_or_default();
    heprint!("arena: {} bytes in use, peak {} of {} bytes\n", s.in_use, s.peak, s.capacity);
    heprint!("stack: {} bytes used at most\n", stack_used(painted));
    exit(ok && s.in_use == 0 && s.live_allocations == 0)
}
