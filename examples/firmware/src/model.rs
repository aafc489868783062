//! What the model images share (`src/bin/{ds_cnn,mobilenet_vww,resnet8,autoencoder,
//! mobilenet_person}.rs`, each one [`image!`]): an int8 TensorFlow Lite model imported at
//! build time (`build.rs`, `hostrt_import::build::embed_tflite`) and embedded in flash, its
//! weights read in place, run by the `nn.*` kernels it calls (a `KernelTable` of only those)
//! from a static arena of the size the import recorded for a 32-bit target. The image runs `@main` on the model's test
//! input, checks the output equals the host's bit for bit (TensorFlow Lite Micro's, which the
//! host run equals: import/tests/tflite_models.rs), and reports in defmt frames (decoded by
//! `cargo xtask defmt`: its outputs on standard output, the rest on standard error) what a
//! firmware engineer sizes a board by: instructions per inference (QEMU `-icount`; core
//! cycles on hardware), the arena planned and used, the stack's high-water mark. The exit
//! status says whether the output matched and the arena was given back whole. Built with the
//! `layer-profile` feature, it runs the model once more with the executor's observer
//! counting each kernel (`src/profile.rs`) and prints the host's `--profile` table with
//! instructions per layer; the counts above run without the observer.

use hostrt_core::allocator::HostAllocator;
use hostrt_core::executor::{Program, Results};
use hostrt_core::kernel::KernelLookup;
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Allocator, FixedArena, HostContext, RcAsyncValue, SingleThreadedWorkQueue};

use crate::frames::print_diagnostic;
use crate::instructions;
use crate::semihosting::exit;
use crate::stack;

/// An imported model and its test data, from the build script's files.
pub struct Model {
    pub name: &'static str,
    /// The program (BEF), weights included, in flash.
    pub bef: &'static [u8],
    /// `@main`'s inputs: element type and shape; and the test data's bytes of each.
    pub inputs: &'static [(&'static str, &'static [i64])],
    pub data: &'static [&'static [u8]],
    /// The first output TensorFlow Lite Micro gives for the test data, when known; without it
    /// the image prints the outputs (`cargo xtask mcu` reads them).
    pub expected: Option<&'static [u8]>,
    /// The import's planned activation arena, and the weight bytes in the program.
    pub planned: usize,
    /// The `FixedArena` the BEF records for this target (the buffer is sized from it at
    /// compile time, so no check at run time).
    pub fixed_arena: usize,
    pub weights: usize,
}

/// Declares an image's modules (their paths relative to `src/bin/`, where it is invoked),
/// statics and entry point for the model `$name` of the build script
/// (`OUT_DIR/$name.{bef,rs,data.rs}` and the tensor files `data.rs` includes).
macro_rules! image {
    ($name:literal) => {
        #[path = "../frames.rs"]
        mod frames;
        #[path = "../../../../targets/mps2-an386/instructions.rs"]
        mod instructions;
        #[path = "../../../../targets/interrupts.rs"]
        mod interrupts;
        #[cfg(feature = "layer-profile")]
        #[path = "../profile.rs"]
        mod profile;
        #[path = "../semihosting.rs"]
        mod semihosting;
        #[path = "../stack.rs"]
        mod stack;
        use defmt_semihosting as _;

        mod imported {
            #![allow(dead_code)] // what an image does not use of the build script's constants
            include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
            include!(concat!(env!("OUT_DIR"), "/", $name, ".data.rs"));
        }

        /// The kernels the model calls, sorted at compile time: the linker drops the rest.
        static KERNELS: hostrt_core::kernel::KernelTable<{ imported::KERNELS.len() }> =
            hostrt_core::kernel::KernelTable::new(imported::KERNELS);
        static ARENA: hostrt_core::FixedArena = hostrt_core::FixedArena::empty();

        #[cortex_m_rt::entry]
        fn main() -> ! {
            // The arena the import recorded for this target, from the buffer's first 64-byte
            // boundary.
            let buffer = hostrt_core::static_buffer!(
                imported::FIXED_ARENA_BYTES + hostrt_core::allocator::ARENA_ALIGN - 1
            );
            let model = model::Model {
                name: $name,
                bef: hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/", $name, ".bef")),
                inputs: imported::INPUTS,
                data: imported::INPUT_DATA,
                expected: imported::EXPECTED,
                planned: imported::ARENA_BYTES,
                fixed_arena: imported::FIXED_ARENA_BYTES,
                weights: imported::WEIGHT_BYTES,
            };
            model::main(&model, &KERNELS, &ARENA, buffer)
        }
    };
}
pub(crate) use image;

static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();

/// The image: load `model`, run it twice on its input (the first call counted apart: it
/// would include one-time work), compare, report, exit.
pub fn main(
    model: &Model,
    kernels: &dyn KernelLookup,
    arena: &'static FixedArena,
    buffer: Option<&'static mut [u8]>,
) -> ! {
    let painted = stack::paint();
    let Some(peripherals) = cortex_m::Peripherals::take() else { exit(false) };
    // The profiler counts cycles where the core's DWT unit counts them (not under QEMU).
    #[cfg(feature = "layer-profile")]
    let mut peripherals = peripherals;
    #[cfg(feature = "layer-profile")]
    crate::profile::use_cycle_counter(&mut peripherals.DCB, &mut peripherals.DWT);
    instructions::start(peripherals.SYST);
    let counter = instructions::calibrate();
    if buffer.is_none_or(|b| arena.init(b).is_err()) {
        defmt::error!("{=str}: the static arena did not initialize\n", model.name);
        exit(false)
    }
    let capacity = arena.capacity();
    let Ok(alloc) = Allocator::register(arena) else { exit(false) };
    let host = HostContext::new(alloc, &QUEUE).with_diagnostics(&print_diagnostic);
    let mut loaded = None;
    // SAFETY: build.rs verified these bytes with this hostrt-core's reader before embedding
    // them (embed_tflite), and flash is trusted as the code is (the load's checksum check
    // still refuses a flipped bit).
    let load = counter
        .instructions(1, || loaded = Some(unsafe { Program::load_preverified(model.bef, kernels, alloc) }));
    let program = match loaded {
        Some(Ok(p)) => p,
        Some(Err(e)) => {
            let d = hostrt_core::Diagnostic::from(e);
            defmt::error!("{=str}: the program did not load: {=str}\n", model.name, d.message());
            exit(false)
        }
        None => exit(false),
    };
    let (mut first, mut second) = (None, None);
    let first_n = counter.instructions(1, || first = infer(model, &program, &host));
    let first = check(model, first, false);
    let second_n = counter.instructions(1, || second = infer(model, &program, &host));
    let mut second = check(model, second, false);
    if model.expected.is_none() {
        // Once more, printing the outputs (not counted).
        second = check(model, infer(model, &program, &host), true);
    }
    // Once more, each kernel counted by the profiler, on a host context that carries it (the
    // counts above ran without it).
    #[cfg(feature = "layer-profile")]
    {
        // The first host's kept activation arena and frame block go back first: the static
        // arena holds one call's worth.
        host.trim();
        crate::profile::reset();
        let profiled = HostContext::new(alloc, &QUEUE).with_observer(&crate::profile::PROFILER);
        let run = check(model, infer(model, &program, &profiled), false);
        drop(profiled);
        if !run.ran || !run.matches {
            defmt::error!("{=str}: the profiled inference failed or differs\n", model.name);
            exit(false)
        }
        crate::profile::print(counter);
    }
    drop((program, host)); // the host keeps the last call's frame block and activation arena
    let stats = arena.stats().unwrap_or_default();
    let same = first.matches && second.matches;
    match model.expected {
        Some(e) => defmt::info!(
            "{=str}: output {=str} the host's ({=usize} bytes)\n",
            model.name,
            if same { "equals" } else { "DIFFERS FROM" },
            e.len()
        ),
        None => defmt::info!("{=str}: ran\n", model.name),
    }
    defmt::info!("instructions: {=u64} per inference (first {=u64}), load {=u64}\n", second_n, first_n, load);
    defmt::info!(
        "arena: activations {=usize} bytes planned; FixedArena peak {=usize} of {=usize} bytes, {=usize} recorded in the BEF (beyond the activations: program, frame, input and output tensors)\n",
        model.planned,
        stats.peak,
        capacity,
        model.fixed_arena
    );
    defmt::info!("stack: {=usize} bytes at most\n", stack::used(painted));
    defmt::info!("flash: weights {=usize} bytes, program {=usize} bytes\n", model.weights, model.bef.len());
    exit(same && first.ran && second.ran && stats.in_use == 0 && stats.live_allocations == 0)
}

/// What one inference gave.
#[derive(Default)]
struct Outcome {
    ran: bool,
    /// The first output equals the expected bytes (true when none are known).
    matches: bool,
}

/// Most inputs a model image passes to `@main`.
const MAX_INPUTS: usize = 8;

/// One call of `@main` on the model's test data: the input tensors made and filled, the
/// call, its results. This is what an image counts per inference; checking the results is
/// [`check`]'s, outside the count (as TFLite Micro's figure, `Invoke()`, leaves its
/// comparison out).
fn infer(model: &Model, program: &Program<'_>, host: &HostContext<'_>) -> Option<Results> {
    let n = model.inputs.len();
    if n == 0 || n > MAX_INPUTS || n != model.data.len() {
        return None;
    }
    let make = |i: usize| -> Option<RcAsyncValue> {
        let ((dtype, dims), bytes) = (model.inputs[i], model.data[i]);
        let shape = TensorShape::new(dims).ok()?;
        let meta = TensorMetadata { dtype: DType::from_kernel_suffix(dtype)?, shape };
        let input = DenseHostTensor::copy_of(host.allocator(), meta, bytes).ok()?;
        Some(host.make_available(input).ok()?.into_rc())
    };
    // The first input fills the unused slots (references to it, not copies).
    let first = make(0)?;
    let mut args: [RcAsyncValue; MAX_INPUTS] = core::array::from_fn(|_| first.clone());
    for (i, arg) in args.iter_mut().enumerate().take(n).skip(1) {
        *arg = make(i)?;
    }
    program.call(host, "main", &args[..n]).ok()
}

/// One inference's results checked: its first output compared with the expected bytes; with
/// `print`, every output as `out<i>: <type> <shape> <hex bytes>` on standard output.
fn check(model: &Model, results: Option<Results>, print: bool) -> Outcome {
    let run = || -> Option<bool> {
        let results = results?;
        let first = results.get::<DenseHostTensor>(0).map_err(|e| print_diagnostic(&e)).ok()?;
        let matches = match model.expected {
            Some(e) => *first.read_bytes().ok()? == *e,
            None => true,
        };
        if print {
            for i in 0..results.len() {
                let t = results.get::<DenseHostTensor>(i).map_err(|e| print_diagnostic(&e)).ok()?;
                let dtype = t.dtype().kernel_suffix().unwrap_or("?");
                defmt::println!("out{=usize}: {=str} {=[?]} ", i, dtype, t.shape().dims());
                for &b in t.read_bytes().ok()?.iter() {
                    defmt::println!("{=u8:02x}", b);
                }
                defmt::println!("\n");
            }
        }
        Some(matches)
    };
    match run() {
        Some(matches) => Outcome { ran: true, matches },
        None => Outcome::default(),
    }
}
