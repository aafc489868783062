//! A minimal firmware: `hostrt-core`, the basic kernels and a fixed arena in a static run
//! BEF programs that were compiled and verified at build time and embedded in flash (loaded
//! with `Program::load_preverified`, so the verifier is not in the image). Everything it prints
//! (the print kernels, the test driver, diagnostics, its own report) is defmt frames over
//! semihosting, decoded on the host by `cargo xtask defmt` with this ELF, so the image links
//! no `core::fmt`; the exit status is 0 when every program ran and the arena is empty again.
#![no_std]
#![no_main]

#[path = "../../../targets/interrupts.rs"]
mod interrupts;

use cortex_m_rt::entry;
use defmt_semihosting as _;
use frames::print_diagnostic;
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{control, float, integer, print_defmt};
use hostrt_core::bef::{BefError, BefErrorKind};
use hostrt_core::driver::{DriverOptions, Frames, run_functions_to};
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelTable;
use hostrt_core::{Allocator, Diagnostic, FixedArena, HostContext, SingleThreadedWorkQueue};
use semihosting::exit;

mod frames;
mod semihosting;
mod stack;

/// A program compiled by the build script: its name and its (aligned) BEF bytes.
macro_rules! program {
    ($name:literal) => {
        ($name, hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/", $name, ".bef")))
    };
}

const ARENA_BYTES: usize = 16 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// The kernels the three programs use, sorted at compile time, as firmware should register
/// them: the linker drops the rest, and the image has no registration code. The prints write
/// defmt frames. A program needing another kernel fails to load, naming the kernel and where
/// it is used. With every basic group registered instead (integer, float, control,
/// parallel) the image is about 15 KB larger.
static KERNELS: KernelTable<18> = KernelTable::new([
    integer::NEW_CHAIN,
    integer::MERGE_CHAINS,
    integer::CONSTANT_I32,
    integer::CONSTANT_I64,
    integer::ADD_I32,
    integer::ADD_I64,
    integer::DIV_I32,
    integer::LESSEQUAL_I32,
    float::CONSTANT_F32,
    float::ADD_F32,
    control::CALL,
    control::IF,
    control::REPEAT_I32,
    print_defmt::PRINT_I1,
    print_defmt::PRINT_I32,
    print_defmt::PRINT_I64,
    print_defmt::PRINT_F32,
    print_defmt::PRINT_F64,
]);

/// Run every function of a loaded program as `hostrt run` does; false if it did not load
/// or the driver failed.
fn run_program(loaded: Result<Program<'_>, BefError>, host: &HostContext<'_>) -> bool {
    match loaded {
        Ok(program) => run_functions_to(&program, host, &DriverOptions::default(), &mut Frames).is_ok(),
        Err(e) => {
            defmt::println!("load failed: {=str}\n", Diagnostic::from(e).message());
            false
        }
    }
}

#[entry]
fn main() -> ! {
    let painted = stack::paint();
    let programs = [program!("fib"), program!("errors"), program!("loops")];
    let mut ok = hostrt_core::static_buffer!(ARENA_BYTES).is_some_and(|b| ARENA.init(b).is_ok());
    let Ok(alloc) = Allocator::register(&ARENA) else { exit(false) };
    let host = HostContext::new(alloc, &QUEUE).with_diagnostics(&print_diagnostic);
    for (name, bytes) in programs {
        defmt::println!("=== {=str}\n", name);
        // SAFETY: build.rs verified these bytes with this hostrt-core's reader before
        // embedding them, and flash is trusted as the code is (the load's checksum check
        // still refuses a flipped bit).
        ok &= run_program(unsafe { Program::load_preverified(bytes, &KERNELS, &host) }, &host);
    }
    // Built without the `native` feature: a program declaring a native function is refused.
    // SAFETY: as above, verified by build.rs.
    let native = unsafe { Program::load_preverified(program!("native").1, &KERNELS, &host) };
    ok &= matches!(native, Err(e) if e.kind == BefErrorKind::NativeNotBuilt);
    drop(host); // gives back the frame block it keeps for the next call
    let s = ARENA.stats().unwrap_or_default();
    defmt::info!(
        "arena: {=usize} bytes in use, peak {=usize} of {=usize} bytes\n",
        s.in_use,
        s.peak,
        s.capacity
    );
    defmt::info!("stack: {=usize} bytes used at most\n", stack::used(painted));
    exit(ok && s.in_use == 0 && s.live_allocations == 0)
}
