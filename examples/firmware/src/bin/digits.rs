//! The digits model on a microcontroller: a 64-32-10 MLP (`programs/digits.mlir`, generated
//! by `examples/digits/train.py`) classifies 360 test images and prints the classes and the
//! accuracy, which `scripts/firmware.sh` compares with `hostrt run` on the host. The program
//! is loaded with `Program::load_static`, so the weights and test images stay in flash (the
//! tensors borrow them); the arena holds only activations. Reports the arena peak.
#![no_std]
#![no_main]

#[path = "../../../../targets/interrupts.rs"]
mod interrupts;

use cortex_m_rt::entry;
use cortex_m_semihosting::{heprint, hprint};
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{float, integer};
use hostrt_core::executor::Program;
use hostrt_core::tensor_kernels::{dht, math, shape};
use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use panic_semihosting as _;
use semihosting::{exit, print_diagnostic, run_program};

#[path = "../semihosting.rs"]
mod semihosting;

const ARENA_BYTES: usize = 128 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// The kernels the program uses: whole dtype groups of the model and tensor kernels (the
/// linker drops every other group).
fn registry() -> Option<KernelRegistry<128>> {
    let mut r = KernelRegistry::new();
    let basics = [integer::NEW_CHAIN, float::CONSTANT_F32, shape::BUILD_SHAPE];
    for group in [&basics[..], dht::UNTYPED, dht::F32, dht::I32, math::F32, math::I32, math::CAST] {
        r.add_entries(group).ok()?;
    }
    Some(r)
}

#[entry]
fn main() -> ! {
    let mut ok = hostrt_core::static_buffer!(ARENA_BYTES).is_some_and(|b| ARENA.init(b).is_ok());
    let Ok(alloc) = Allocator::register(&ARENA) else { exit(false) };
    let Some(registry) = registry() else { exit(false) };
    let output = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
    let host = HostContext::new(alloc, &QUEUE).with_output(&output).with_diagnostics(&print_diagnostic);
    let bytes = hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/digits.bef"));
    ok &= run_program(Program::load_static(bytes, &registry, &host), &host);
    drop(host); // gives back the frame block it keeps for the next call
    let s = ARENA.stats().unwrap_or_default();
    heprint!("arena: {} bytes in use, peak {} of {} bytes\n", s.in_use, s.peak, s.capacity);
    exit(ok && s.in_use == 0 && s.live_allocations == 0)
}
