//! `hostrt run --record-arena-peak` (docs/bef.md, "Arena sizes") on whole programs: TFRT's
//! conformance programs (when `shared/conformance` is present) and the project's own. For
//! every function it records, `FixedArena`s of exactly the recorded capacity and of a few
//! capacities above it load the program and complete the call with no refused allocation
//! (the arena's first-fit heap is not monotone in its size: the figure is where it becomes
//! so), and the figure lies between the peak of requested bytes and twice that peak.

use std::path::Path;
use std::process::Command;

use hostrt_compiler::compile;
use hostrt_core::allocator::{ARENA_ALIGN, FixedArena, HostAllocator};
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::AlignedBytes;
use hostrt_test_kernels::register_test_kernels;

mod suites;

/// An arena of exactly `capacity` usable bytes (its buffer starts on the arena alignment).
fn arena(capacity: usize) -> &'static FixedArena {
    let buffer: &'static mut [u8] = vec![0u8; capacity + ARENA_ALIGN].leak();
    let skip = (buffer.as_ptr() as usize).wrapping_neg() % ARENA_ALIGN;
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(&mut buffer[skip..skip + capacity]).unwrap();
    assert_eq!(arena.capacity(), capacity);
    arena
}

/// Load `bef` into an arena of `capacity` bytes and run function `name` as the driver does;
/// returns the arena's peak of requested bytes and its refused allocations.
fn run_in(bef: &[u8], registry: &KernelRegistry<1024>, name: &str, capacity: usize) -> (usize, usize) {
    let arena = arena(capacity);
    let alloc = Allocator::register(arena).expect("allocator slot");
    let queue = SingleThreadedWorkQueue::new();
    {
        let discard = |_: std::fmt::Arguments<'_>| {};
        let quiet = |_: &Diagnostic| {};
        let host = HostContext::new(alloc, &queue).with_output(&discard).with_diagnostics(&quiet);
        if let Ok(program) = Program::load(bef, registry, &host) {
            program.check_arena(alloc, name).unwrap_or_else(|e| panic!("@{name}: {e}"));
            let names = [name];
            let opts = DriverOptions { functions: &names, ..DriverOptions::default() };
            let _ = run_functions(&program, &host, &opts, &mut |_| {});
            queue.quiesce();
        }
        queue.quiesce();
    }
    let stats = arena.stats().unwrap();
    assert_eq!(stats.live_allocations, 0, "@{name}: blocks left in the arena");
    alloc.unregister().expect("nothing left in the slot");
    (stats.peak, stats.failed)
}

/// The `hostrt` built with these tests. Under qemu-user (`scripts/qemu.sh arena32`, which
/// checks the 32-bit figures) it is a binary of the emulated target, which this machine
/// runs only through the emulator: `HOSTRT_EXEC_WRAPPER` names it, with its arguments.
fn hostrt_command() -> Command {
    let wrapper = std::env::var("HOSTRT_EXEC_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    let Some(first) = words.next() else { return Command::new(env!("CARGO_BIN_EXE_hostrt")) };
    let mut c = Command::new(first);
    c.args(words).arg(env!("CARGO_BIN_EXE_hostrt"));
    c
}

/// `hostrt run INPUT --record-arena-peak=OUTPUT`.
fn record(input: &Path, output: &Path) -> std::process::Output {
    let recorded = format!("--record-arena-peak={}", output.display());
    hostrt_command().args(["run", input.to_str().unwrap(), &recorded]).output().unwrap()
}

/// Record arena needs for the program `text` (named `path`) with the CLI and check each.
/// Returns how many functions were checked, and the largest figure to peak ratio.
fn check(path: &Path, text: &str) -> Checked {
    let name = path.display().to_string();
    let dir = std::env::temp_dir().join(format!("hostrt-arena-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = path.file_stem().unwrap().to_string_lossy().to_string();
    let Ok(bef) = compile(&name, text, Default::default()) else { return Checked::default() };
    let (input, output) = (dir.join(format!("{stem}.bef")), dir.join(format!("{stem}.arena.bef")));
    std::fs::write(&input, &bef).unwrap();
    let run = record(&input, &output);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() && stderr.contains("the program does not load") {
        return Checked::default(); // e.g. the unknown-kernel tests: nothing runs, nothing to record
    }
    assert!(run.status.success(), "{name}: {stderr}");
    let recorded = AlignedBytes::new(&std::fs::read(&output).unwrap());
    let registry = registry();
    let scratch = scratch();
    let Ok(program) = Program::load(recorded.as_bytes(), &registry, scratch) else {
        return Checked::default();
    };
    let mut checked = Checked::default();
    for fi in 0..program.file().num_functions() as u32 {
        let f = program.file().function(fi).unwrap();
        let Some(need) = program.file().arena_need(fi) else {
            assert!(
                f.record().num_args > 0 || f.name().is_empty() || f.is_native(),
                "{name}: @{} has no recorded arena",
                f.name()
            );
            continue;
        };
        assert!(need.measured && usize::from(need.pointer_bytes) == size_of::<usize>());
        let fname = f.name().to_string();
        let (peak, failed) = run_in(recorded.as_bytes(), &registry, &fname, need.bytes);
        assert_eq!(failed, 0, "{name}: @{fname} refused allocations in its recorded {} bytes", need.bytes);
        assert!(
            need.bytes >= peak && need.bytes <= 2 * peak.max(1),
            "{name}: @{fname} recorded {} bytes for a peak of {peak}",
            need.bytes
        );
        for more in [8, 24, 40, 72, 136] {
            let (_, failed) = run_in(recorded.as_bytes(), &registry, &fname, need.bytes + more);
            assert_eq!(failed, 0, "{name}: @{fname} refused allocations in {} bytes", need.bytes + more);
        }
        checked.functions += 1;
        checked.worst_ratio = checked.worst_ratio.max(need.bytes as f64 / peak.max(1) as f64);
    }
    checked
}

/// Derive bounds for the program `text` (named `path`) with `hostrt compile --arena-bound`
/// and check each against a measured run: the program loads and the call completes in an
/// arena of exactly the bound, which lies between the measured figure (from which on the
/// arena runs as an unlimited one) and twice the peak of requested bytes. Then
/// `hostrt run --record-arena-peak` keeps the derived figures and measures the rest.
fn check_derived(path: &Path, text: &str) -> Checked {
    let name = path.display().to_string();
    let dir = std::env::temp_dir().join(format!("hostrt-bound-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let stem = path.file_stem().unwrap().to_string_lossy().to_string();
    let (source, derived) = (dir.join(format!("{stem}.mlir")), dir.join(format!("{stem}.bound.bef")));
    std::fs::write(&source, text).unwrap();
    let compiled = hostrt_command()
        .args(["compile", source.to_str().unwrap(), "-o", derived.to_str().unwrap(), "--arena-bound"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&compiled.stderr);
    if !compiled.status.success() && (stderr.contains("does not load") || !derived.exists()) {
        return Checked::default(); // does not compile or load: nothing to bound
    }
    assert!(compiled.status.success(), "{name}: {stderr}");
    let bef = AlignedBytes::new(&std::fs::read(&derived).unwrap());
    let registry = registry();
    let scratch = scratch();
    let program = Program::load(bef.as_bytes(), &registry, scratch).unwrap();
    let file = program.file();
    let bounds: Vec<(u32, String, usize)> = (0..file.num_functions() as u32)
        .filter_map(|fi| {
            let need = file.arena_need(fi)?;
            assert!(!need.measured && usize::from(need.pointer_bytes) == size_of::<usize>());
            Some((fi, file.function(fi).unwrap().name().to_string(), need.bytes))
        })
        .collect();
    if bounds.is_empty() {
        return Checked::default();
    }
    // Measure the same file: the derived figures are kept, so measure a copy without them.
    let plain = dir.join(format!("{stem}.plain.bef"));
    let measured = dir.join(format!("{stem}.measured.bef"));
    std::fs::write(&plain, compile(&name, text, Default::default()).unwrap()).unwrap();
    let run = record(&plain, &measured);
    assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
    let measured = AlignedBytes::new(&std::fs::read(&measured).unwrap());
    let measured = Program::load(measured.as_bytes(), &registry, scratch).unwrap();
    let mut checked = Checked::default();
    for (fi, fname, bound) in bounds {
        let need = measured.file().arena_need(fi).unwrap().bytes;
        let (peak, failed) = run_in(bef.as_bytes(), &registry, &fname, bound);
        assert_eq!(failed, 0, "{name}: @{fname} refused allocations in its derived {bound} bytes");
        assert!(
            bound >= need && bound <= 2 * peak.max(1),
            "{name}: @{fname} derived {bound} bytes, measured {need} for a peak of {peak}"
        );
        checked.functions += 1;
        checked.worst_ratio = checked.worst_ratio.max(bound as f64 / peak.max(1) as f64);
    }
    // Recording keeps the derived figures and measures only the others.
    let kept = dir.join(format!("{stem}.kept.bef"));
    let run = record(&derived, &kept);
    assert!(run.status.success(), "{name}: {}", String::from_utf8_lossy(&run.stderr));
    let kept = AlignedBytes::new(&std::fs::read(&kept).unwrap());
    let kept = hostrt_core::bef::BefFile::load_unresolved(kept.as_bytes(), scratch).unwrap();
    for fi in 0..file.num_functions() as u32 {
        if let Some(derived) = file.arena_need(fi) {
            assert_eq!(kept.arena_need(fi), Some(derived), "{name}: function {fi}'s derived figure kept");
        }
    }
    checked
}

/// One arena for the tests' own loads (the allocator table is finite and the tests run in
/// parallel; every program is dropped before its test moves on).
fn scratch() -> Allocator {
    static SCRATCH: std::sync::OnceLock<Allocator> = std::sync::OnceLock::new();
    *SCRATCH.get_or_init(|| hostrt_std::leaked_arena(16 << 20).unwrap().1)
}

/// The kernels the arena tests load programs with.
fn registry() -> KernelRegistry<1024> {
    let mut registry: KernelRegistry<1024> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    register_tensor_kernels(&mut registry).unwrap();
    registry.add_entries(hostrt_dsp::kernels::KERNELS).unwrap();
    register_test_kernels(&mut registry).unwrap();
    registry
}

/// What [`check`] checked.
#[derive(Clone, Copy, Debug, Default)]
struct Checked {
    functions: usize,
    /// The largest recorded figure over the function's peak of requested bytes.
    worst_ratio: f64,
}

impl std::iter::Sum for Checked {
    fn sum<I: Iterator<Item = Checked>>(iter: I) -> Checked {
        iter.fold(Checked::default(), |a, b| Checked {
            functions: a.functions + b.functions,
            worst_ratio: a.worst_ratio.max(b.worst_ratio),
        })
    }
}

impl Checked {
    /// Print the summary (pointer size included: `scripts/qemu.sh arena32` runs these on a
    /// 32-bit target) and require at least `min` functions.
    fn report(self, min: usize) {
        let bits = usize::BITS;
        let (n, worst) = (self.functions, self.worst_ratio);
        println!("{n} functions run in their recorded {bits}-bit arenas; figure/peak at most {worst:.2}");
        assert!(n >= min, "{n} functions");
    }
}

fn check_file(path: &Path) -> Checked {
    check(path, &std::fs::read_to_string(path).unwrap())
}

#[test]
fn project_programs_run_in_their_recorded_arena() {
    let mut files = suites::project_programs();
    files.extend(suites::mlir_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/firmware/programs"),
    ));
    files.iter().map(|p| check_file(p)).sum::<Checked>().report(30);
}

#[test]
fn conformance_programs_run_in_their_recorded_arena() {
    let Some(programs) = suites::conformance_programs() else { return };
    programs.iter().map(|p| check_file(p)).sum::<Checked>().report(60);
}

#[test]
fn tensor_conformance_programs_run_in_their_recorded_arena() {
    let Some(programs) = suites::tensor_programs() else { return };
    programs.iter().map(|(path, text)| check(path, text)).sum::<Checked>().report(18);
}

#[test]
fn derived_bounds_hold_for_project_programs() {
    let mut files = suites::project_programs();
    files.extend(suites::mlir_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/firmware/programs"),
    ));
    let checked =
        files.iter().map(|p| check_derived(p, &std::fs::read_to_string(p).unwrap())).sum::<Checked>();
    checked.report(8);
}

#[test]
fn derived_bounds_hold_for_conformance_programs() {
    let Some(programs) = suites::conformance_programs() else { return };
    let checked =
        programs.iter().map(|p| check_derived(p, &std::fs::read_to_string(p).unwrap())).sum::<Checked>();
    checked.report(16);
}
