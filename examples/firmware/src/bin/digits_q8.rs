//! The digits model quantized to int8 (`programs/digits_q8.mlir`, from
//! `examples/digits/train.py --int8`) on a Cortex-M4F, run by the `dsp.*` kernels of
//! `hostrt-dsp`. Prints what `hostrt run --functions digits` prints on the host (the 360
//! classes and the accuracy; `scripts/firmware.sh` compares them), then counts the
//! instructions one `@classify` of the 360 images takes with the DSP-extension kernels and
//! with the portable ones (QEMU `-icount shift=0`), checks both give the same classes, and
//! reports the arena peak.
#![no_std]
#![no_main]

#[path = "../../../../targets/interrupts.rs"]
mod interrupts;

use cortex_m_rt::entry;
use cortex_m_semihosting::{heprint, hprint};
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::{control, float, integer};
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelEntry;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::tensor_kernels::{dht, math, shape};
use hostrt_core::{
    Allocator, FixedArena, HostContext, KernelRegistry, RcAsyncValue, SingleThreadedWorkQueue,
};
use hostrt_dsp::kernels::{DSP_KERNELS, PORTABLE_KERNELS};
use panic_semihosting as _;
use semihosting::{exit, print_diagnostic};

#[path = "../semihosting.rs"]
mod semihosting;

#[path = "../../../../targets/mps2-an386/instructions.rs"]
mod instructions;

const ARENA_BYTES: usize = 32 * 1024;
static ARENA: FixedArena = FixedArena::empty();
static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// The kernels the program uses, with the `dsp.*` kernels of `layers`.
fn registry(layers: &[KernelEntry]) -> Option<KernelRegistry<128>> {
    let mut r = KernelRegistry::new();
    let basics = [integer::NEW_CHAIN, float::CONSTANT_F32, shape::BUILD_SHAPE, control::CALL];
    for group in [&basics[..], dht::UNTYPED, dht::F32, dht::I32, math::I32, math::F32, math::CAST, layers] {
        r.add_entries(group).ok()?;
    }
    Some(r)
}

/// The classes `@classify` gives for `images`, and the instructions that took.
fn classify(
    program: &Program<'_>,
    host: &HostContext<'_>,
    images: &RcAsyncValue,
    counter: instructions::Counter,
    classes: &mut [i32; 360],
) -> Option<u64> {
    let mut out = None;
    let n =
        counter.instructions(1, || out = program.call(host, "classify", core::slice::from_ref(images)).ok());
    let results = out?;
    let t = results.get::<DenseHostTensor>(0).map_err(|e| print_diagnostic(&e)).ok()?;
    classes.copy_from_slice(t.read::<i32>().ok()?.get(..360)?);
    Some(n)
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else { exit(false) };
    instructions::start(peripherals.SYST);
    let counter = instructions::calibrate();
    let ok = hostrt_core::static_buffer!(ARENA_BYTES).is_some_and(|b| ARENA.init(b).is_ok());
    let Ok(alloc) = Allocator::register(&ARENA) else { exit(false) };
    let (Some(dsp), Some(portable)) = (registry(DSP_KERNELS), registry(PORTABLE_KERNELS)) else {
        exit(false)
    };
    let output = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
    let host = HostContext::new(alloc, &QUEUE).with_output(&output).with_diagnostics(&print_diagnostic);
    let bytes = hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/digits_q8.bef"));
    let (fast, plain) =
        match (Program::load_static(bytes, &dsp, &host), Program::load_static(bytes, &portable, &host)) {
            (Ok(fast), Ok(plain)) => (fast, plain),
            (Err(e), _) | (_, Err(e)) => {
                heprint!("digits_q8: the program did not load: {}\n", e);
                exit(false)
            }
        };
    // What `hostrt run --functions digits` prints.
    let options = DriverOptions { functions: &["digits"], ..DriverOptions::default() };
    let mut print = |a: core::fmt::Arguments<'_>| hprint!("{}", a);
    let ran = run_functions(&fast, &host, &options, &mut print).is_ok();

    let images = fast.call(&host, "images", &[]).ok().and_then(|r| r.first().cloned());
    let (mut a, mut b) = ([0i32; 360], [0i32; 360]);
    let counts = images.as_ref().and_then(|x| {
        let d = classify(&fast, &host, x, counter, &mut a)?;
        let p = classify(&plain, &host, x, counter, &mut b)?;
        Some((d, p))
    });
    drop((images, fast, plain, host)); // the host keeps the last call's frame block
    let same = a == b;
    heprint!("SysTick ticks per 2,000,000 instructions: {}\n", counter.ticks_per_2m);
    if let Some((d, p)) = counts {
        heprint!(
            "classify (360 images): dsp {} instructions ({} per image), portable {} ({} per image), dsp/portable {}.{:03}; same classes: {}\n",
            d,
            d / 360,
            p,
            p / 360,
            d / p.max(1),
            d * 1000 / p.max(1) % 1000,
            same
        );
    }
    let s = ARENA.stats().unwrap_or_default();
    heprint!("arena: {} bytes in use, peak {} of {} bytes\n", s.in_use, s.peak, s.capacity);
    exit(ok && ran && counts.is_some() && same && s.in_use == 0 && s.live_allocations == 0)
}
