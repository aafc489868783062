//! Memory exhaustion at (a sample of) every allocation of whole programs: TFRT's conformance
//! programs (when `shared/conformance` is present), the project's own programs in
//! `tests/programs/` (and `tests/programs/executor/`) and the quantized digits model, run as
//! `hostrt run` runs them, with the basic and test kernels on the single-threaded queue. With the k-th allocation and every later one refused, every run
//! must finish: no await left waiting (the queue reports that as a deadlock), no panic, and
//! every block handed out comes back.

use std::path::Path;

mod suites;

use hostrt_compiler::compile;
use hostrt_core::allocator::{FailAfter, FixedArena};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, leaked_arena};
use hostrt_test_kernels::register_test_kernels;

/// Failure points tried per program, spread evenly over its allocations.
const SAMPLES: usize = 40;

/// Run every function of `program` with allocations refused after `budget`; returns the
/// allocator's record of the run and the driver's output.
fn run(program: &Program<'_>, backing: &'static FixedArena, budget: usize) -> (usize, usize, usize, String) {
    let faulty: &'static FailAfter<&FixedArena> = Box::leak(Box::new(FailAfter::new(backing, budget)));
    let alloc = Allocator::register(faulty).expect("allocator slot");
    let queue = SingleThreadedWorkQueue::new();
    let mut out = String::new();
    {
        let discard = |_: std::fmt::Arguments<'_>| {};
        let no_diagnostics = |_: &Diagnostic| {};
        let host = HostContext::new(alloc, &queue).with_output(&discard).with_diagnostics(&no_diagnostics);
        let opts = DriverOptions::default();
        let _ = run_functions(program, &host, &opts, &mut |a| out.push_str(&a.to_string()));
        queue.quiesce();
    }
    let live = faulty.live();
    if live == 0 {
        alloc.unregister().expect("nothing left in the slot");
    }
    (faulty.granted(), faulty.refused(), live, out)
}

fn sweep(path: &Path) -> usize {
    sweep_text(path, std::fs::read_to_string(path).unwrap())
}

fn sweep_text(path: &Path, text: String) -> usize {
    let name = path.display().to_string();
    let bef = AlignedBytes::new(&compile(&name, &text, Default::default()).unwrap_or_else(|e| panic!("{e}")));
    let mut registry: KernelRegistry<1024> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    register_tensor_kernels(&mut registry).unwrap();
    registry.add_entries(hostrt_dsp::kernels::KERNELS).unwrap();
    register_test_kernels(&mut registry).unwrap();
    let (backing, loader) = leaked_arena(8 << 20).unwrap();
    let Ok(program) = Program::load(bef.as_bytes(), &registry, loader) else {
        return 0; // e.g. the unknown-kernel test: nothing runs
    };
    let (total, refused, live, out) = run(&program, backing, usize::MAX);
    assert_eq!((refused, live), (0, 0), "{name}: the unlimited run");
    assert!(!out.contains("deadlock:"), "{name}: {out}");
    let step = (total / SAMPLES).max(1);
    let mut tried = 0;
    for k in (0..total).step_by(step) {
        let (_, _, live, out) = run(&program, backing, k);
        assert!(
            !out.contains("deadlock:"),
            "{name}, allocations refused from #{k}: a result never completed\n{out}"
        );
        assert_eq!(live, 0, "{name}, allocations refused from #{k}: {live} blocks never returned");
        tried += 1;
    }
    tried
}

#[test]
fn project_programs_survive_exhaustion_at_every_sampled_point() {
    let tried: usize = suites::project_programs().iter().map(|p| sweep(p)).sum();
    assert!(tried > 100, "{tried} failure points");
}

#[test]
fn quantized_digits_survive_exhaustion_at_every_sampled_point() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/firmware/programs/digits_q8.mlir");
    assert!(sweep(&path) >= SAMPLES / 2);
}

#[test]
fn conformance_programs_survive_exhaustion_at_every_sampled_point() {
    let Some(programs) = suites::conformance_programs() else { return };
    // control_flow.mlir's long `tfrt.repeat.i32` chains of waiters used to overflow the
    // stack here: past the depth guard, the task that continues such a chain could not be
    // allocated. The waiter node itself now becomes that task.
    let tried: usize = programs.iter().map(|p| sweep(p)).sum();
    assert!(tried > 200, "{tried} failure points");
}

#[test]
fn tensor_conformance_programs_survive_exhaustion_at_every_sampled_point() {
    let Some(programs) = suites::tensor_programs() else { return };
    let tried: usize = programs.into_iter().map(|(path, text)| sweep_text(&path, text)).sum();
    assert!(tried > 100, "{tried} failure points");
}
