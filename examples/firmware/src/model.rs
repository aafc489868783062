//! What the model images share (`src/bin/{ds_cnn,mobilenet_vww,resnet8,autoencoder,
//! mobilenet_person}.rs`, each one [`image!`]): an int8 TensorFlow Lite model imported at
//! build time (`build.rs`, `hostrt_import::build::embed_tflite`) and embedded in flash, its
//! weights read in place, run by the `nn.*` kernels it calls (a `KernelTable` of only those)
//! from a static arena sized by the import's plan. The image runs `@main` on the model's test
//! input, checks the output equals the host's bit for bit (TensorFlow Lite Micro's, which the
//! host run equals: import/tests/tflite_models.rs), and prints on semihosting's stderr what a
//! firmware engineer sizes a board by: instructions per inference (QEMU `-icount`; core
//! cycles on hardware), the arena planned and used, the stack's high-water mark. The exit
//! status says whether the output matched and the arena was given back whole. Built with the
//! `layer-profile` feature, it also prints the instructions of each layer (`src/profile.rs`;
//! the counting adds a few hundred instructions per layer to the figures).

use cortex_m_semihosting::heprint;
use hostrt_core::allocator::HostAllocator;
use hostrt_core::executor::Program;
use hostrt_core::kernel::KernelLookup;
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Allocator, FixedArena, HostContext, SingleThreadedWorkQueue};

use crate::instructions;
use crate::semihosting::{exit, print_diagnostic};
use crate::stack;

/// FixedArena bytes beyond the planned activations and the input and output tensors: the
/// loaded program's tables, one call's frame, and the tensors' headers. The image prints
/// what it used; the host's `hostrt import` measures the same on 64-bit targets.
pub const OVERHEAD_BYTES: usize = 3 * 1024;

/// An imported model and its test data, from the build script's files.
pub struct Model {
    pub name: &'static str,
    /// The program (BEF), weights included, in flash.
    pub bef: &'static [u8],
    /// `@main`'s input: element type and shape (one input: the tiny-ML models have one).
    pub input_type: (&'static str, &'static [i64]),
    /// The test input's bytes, and the output TensorFlow Lite Micro gives for it.
    pub input: &'static [u8],
    pub expected: &'static [u8],
    /// The import's planned activation arena, and the weight bytes in the program.
    pub planned: usize,
    pub weights: usize,
}

/// Declares an image's statics and entry point for the model `$name` of the build script
/// (`OUT_DIR/$name.{bef,rs,input.bin,output.bin}`).
macro_rules! image {
    ($name:literal) => {
        mod imported {
            include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
        }

        /// The kernels the model calls, sorted at compile time: the linker drops the rest.
        #[cfg(not(feature = "layer-profile"))]
        static KERNELS: hostrt_core::kernel::KernelTable<{ imported::KERNELS.len() }> =
            hostrt_core::kernel::KernelTable::new(imported::KERNELS);
        /// The same, each counting its instructions per layer (`src/profile.rs`).
        #[cfg(feature = "layer-profile")]
        static KERNELS: hostrt_core::kernel::KernelTable<{ imported::KERNELS.len() }> =
            hostrt_core::kernel::KernelTable::new(profile::wrap::<Imported, { imported::KERNELS.len() }>());
        #[cfg(feature = "layer-profile")]
        struct Imported;
        #[cfg(feature = "layer-profile")]
        impl profile::Kernels for Imported {
            const ENTRIES: &'static [hostrt_core::kernel::KernelEntry] = &imported::KERNELS;
        }
        static ARENA: hostrt_core::FixedArena = hostrt_core::FixedArena::empty();

        #[cortex_m_rt::entry]
        fn main() -> ! {
            let buffer = hostrt_core::static_buffer!(
                imported::ARENA_BYTES
                    + imported::OUTPUT_BYTES
                    + model::input_bytes(imported::INPUTS)
                    + model::OVERHEAD_BYTES
            );
            let model = model::Model {
                name: $name,
                bef: hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/", $name, ".bef")),
                input_type: imported::INPUTS[0],
                input: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".input.bin")),
                expected: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".output.bin")),
                planned: imported::ARENA_BYTES,
                weights: imported::WEIGHT_BYTES,
            };
            model::main(&model, &KERNELS, &ARENA, buffer)
        }
    };
}
pub(crate) use image;

/// Bytes of the inputs `inputs` (element type, shape) describes, for sizing the arena at
/// compile time. Types other than int8 and float32 count 8 bytes per element.
pub const fn input_bytes(inputs: &[(&str, &[i64])]) -> usize {
    let mut total = 0;
    let mut i = 0;
    while i < inputs.len() {
        let (dtype, shape) = inputs[i];
        let mut n = match dtype.as_bytes() {
            b"i8" | b"ui8" => 1,
            b"f32" | b"i32" => 4,
            _ => 8,
        };
        let mut d = 0;
        while d < shape.len() {
            n *= shape[d] as usize;
            d += 1;
        }
        total += n;
        i += 1;
    }
    total
}

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
    instructions::start(peripherals.SYST);
    let counter = instructions::calibrate();
    let capacity = buffer.as_ref().map_or(0, |b| b.len());
    if buffer.is_none_or(|b| arena.init(b).is_err()) {
        heprint!("{}: the static arena did not initialize\n", model.name);
        exit(false)
    }
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
            heprint!("{}: the program did not load: {}\n", model.name, e);
            exit(false)
        }
        None => exit(false),
    };
    let (mut first, mut second) = (Outcome::default(), Outcome::default());
    let first_n = counter.instructions(1, || first = infer(model, &program, &host));
    let second_n = counter.instructions(1, || second = infer(model, &program, &host));
    #[cfg(feature = "layer-profile")]
    {
        crate::profile::reset();
        let _ = infer(model, &program, &host);
        crate::profile::print(counter);
    }
    drop((program, host)); // the host keeps the last call's frame block
    let stats = arena.stats().unwrap_or_default();
    let same = first.matches && second.matches;
    heprint!(
        "{}: output {} the host's ({} bytes)\n",
        model.name,
        if same { "equals" } else { "DIFFERS FROM" },
        model.expected.len()
    );
    heprint!("instructions: {} per inference (first {}), load {}\n", second_n, first_n, load);
    heprint!(
        "arena: activations {} bytes planned; FixedArena peak {} of {} bytes (the rest: program, frame, input and output tensors)\n",
        model.planned,
        stats.peak,
        capacity
    );
    heprint!("stack: {} bytes at most\n", stack::used(painted));
    heprint!("flash: weights {} bytes, program {} bytes\n", model.weights, model.bef.len());
    exit(same && first.ran && second.ran && stats.in_use == 0 && stats.live_allocations == 0)
}

/// What one inference gave.
#[derive(Default)]
struct Outcome {
    ran: bool,
    matches: bool,
}

/// One call of `@main` on the model's input, its output compared with the expected bytes.
fn infer(model: &Model, program: &Program<'_>, host: &HostContext<'_>) -> Outcome {
    let run = || -> Option<bool> {
        let (dtype, dims) = model.input_type;
        let dtype = DType::from_kernel_suffix(dtype)?;
        let shape = TensorShape::new(dims).ok()?;
        let input = DenseHostTensor::new(host.allocator(), TensorMetadata { dtype, shape }).ok()?;
        {
            let mut bytes = input.write_bytes().ok()?;
            if bytes.len() != model.input.len() {
                return None;
            }
            bytes.copy_from_slice(model.input);
        }
        let arg = host.make_available(input).ok()?.into_rc();
        let results = program.call(host, "main", core::slice::from_ref(&arg)).ok()?;
        let out = results.get::<DenseHostTensor>(0).map_err(|e| print_diagnostic(&e)).ok()?;
        Some(*out.read_bytes().ok()? == *model.expected)
    };
    match run() {
        Some(matches) => Outcome { ran: true, matches },
        None => Outcome::default(),
    }
}
