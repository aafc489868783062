//! A minimal firmware: `hostrt-core`, the basic kernels and a fixed arena in a static run
//! BEF programs that were compiled at build time and embedded in flash. Output goes over
//! semihosting; the exit status is 0 when every program ran and the arena is empty again.
#![no_std]
#![no_main]

use core::mem::MaybeUninit;

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, heprint, hprint, hprintln};
use hostrt_core::allocator::HostAllocator;
use hostrt_core::executor::{DriverOptions, Program};
use hostrt_core::kernels::register_basic_kernels;
use hostrt_core::{Allocator, Diagnostic, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use panic_semihosting as _;

/// BEF bytes, 8-byte aligned as the reader requires.
#[repr(C, align(8))]
struct Bef<const N: usize>([u8; N]);

macro_rules! program {
    ($name:literal) => {{
        static BYTES: &Bef<{ include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bef")).len() }> =
            &Bef(*include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bef")));
        ($name, &BYTES.0[..])
    }};
}

const ARENA_BYTES: usize = 16 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

fn arena_buffer() -> &'static mut [u8] {
    static mut BUFFER: [MaybeUninit<u8>; ARENA_BYTES] = [MaybeUninit::uninit(); ARENA_BYTES];
    // SAFETY: called once at start-up, before anything else touches BUFFER; the arena never
    // reads bytes it has not written.
    unsafe { &mut *((&raw mut BUFFER) as *mut [u8; ARENA_BYTES]) }
}

fn print_diagnostic(d: &Diagnostic) {
    match &d.location {
        Some(l) => heprint!("{}: runtime error: {}\n", l, d.message()),
        None => heprint!("runtime error: {}\n", d.message()),
    }
}

#[entry]
fn main() -> ! {
    let programs = [program!("fib"), program!("errors"), program!("loops")];
    let mut ok = ARENA.init(arena_buffer()).is_ok();
    let Ok(alloc) = Allocator::register(&ARENA) else { exit(false) };
    let mut registry: KernelRegistry<64> = KernelRegistry::new();
    ok &= register_basic_kernels(&mut registry).is_ok();
    let output = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
    let host =
        HostContext::new(alloc, &QUEUE, &registry).with_output(&output).with_diagnostics(&print_diagnostic);
    for (name, bytes) in programs {
        hprintln!("=== {}", name);
        match Program::load(bytes, &registry, alloc) {
            Ok(program) => {
                let mut out = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
                ok &= program.run_functions(&host, &DriverOptions::default(), &mut out).is_ok();
            }
            Err(e) => {
                hprintln!("load failed: {}", e);
                ok = false;
            }
        }
    }
    let s = ARENA.stats().unwrap_or_default();
    heprint!("arena: {} bytes in use, peak {} of {} bytes\n", s.in_use, s.peak, ARENA_BYTES);
    exit(ok && s.in_use == 0 && s.live_allocations == 0)
}

fn exit(success: bool) -> ! {
    debug::exit(if success { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
