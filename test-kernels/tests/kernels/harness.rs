//! Compile and run a program the way `hostrt run` does, capturing its output.

use std::sync::Mutex;

use hostrt_compiler::compile;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::executor::Program;
use hostrt_core::{
    ConcurrentWorkQueue, Diagnostic, HostAllocator, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::{AlignedBytes, leaked_arena};
use hostrt_test_kernels::register_test_kernels;

/// The file name programs are compiled under (diagnostics name it).
pub const FILE: &str = "t.mlir";

/// What a run printed, and what it left allocated.
#[derive(Debug)]
pub struct Outcome {
    /// Driver lines, kernel output and diagnostics (`t.mlir:L:C: runtime error: MSG`), in
    /// the order they were produced.
    pub output: String,
    /// Bytes and blocks still allocated from the host's arena after the run.
    pub leaked: (usize, usize),
}

impl Outcome {
    /// The output's lines.
    pub fn lines(&self) -> Vec<&str> {
        self.output.lines().collect()
    }

    /// Index of the first line equal to `line` (panics when missing).
    pub fn pos(&self, line: &str) -> usize {
        self.lines()
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in output:\n{}", self.output))
    }

    /// How many lines equal `line`.
    pub fn count(&self, line: &str) -> usize {
        self.lines().iter().filter(|l| **l == line).count()
    }

    /// The lines from `--- Running '<f>':` (exclusive) to the next `--- ` line.
    pub fn section(&self, f: &str) -> Vec<&str> {
        let lines = self.lines();
        let start = self.pos(&format!("--- Running '{f}':")) + 1;
        lines[start..].iter().take_while(|l| !l.starts_with("--- ")).copied().collect()
    }
}

/// The registry `hostrt run` uses: basic, tensor and test kernels.
pub fn registry() -> KernelRegistry<1024> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    hostrt_core::tensor_kernels::register_tensor_kernels(&mut r).unwrap();
    register_test_kernels(&mut r).unwrap();
    r
}

/// Run every function of `text` (or only `functions`), as the test driver does.
pub fn drive_only(text: &str, functions: &[&str]) -> Outcome {
    let bef = AlignedBytes::new(&compile(FILE, text, Default::default()).unwrap_or_else(|e| panic!("{e}")));
    let (arena, alloc) = leaked_arena(4 << 20).unwrap();
    let reg = registry();
    let queue = SingleThreadedWorkQueue::new();
    let output = Mutex::new(String::new());
    let sink = |a: std::fmt::Arguments<'_>| output.lock().unwrap().push_str(&a.to_string());
    let diag = |d: &Diagnostic| {
        let at = d.location.map(|l| l.to_string()).unwrap_or_default();
        output.lock().unwrap().push_str(&format!("{at}: runtime error: {}\n", d.message()));
    };
    {
        // Other streams' kernels as tasks, as TFRT's driver (and `hostrt run`) schedules them.
        let host = HostContext::new(alloc, &queue)
            .with_stream_tasks(true)
            .with_output(&sink)
            .with_diagnostics(&diag);
        let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap_or_else(|e| panic!("{e}"));
        let opts = DriverOptions { functions, ..DriverOptions::default() };
        run_functions(&program, &host, &opts, &mut |a| output.lock().unwrap().push_str(&a.to_string()))
            .unwrap();
        queue.quiesce();
    }
    let s = arena.stats().unwrap();
    let leaked = (s.in_use, s.live_allocations);
    if leaked == (0, 0) {
        alloc.unregister().unwrap();
    }
    Outcome { output: output.into_inner().unwrap(), leaked }
}

/// Run every function of `text`; nothing may stay allocated.
pub fn drive(text: &str) -> Outcome {
    let o = drive_only(text, &[]);
    assert_eq!(o.leaked, (0, 0), "the run leaked; output:\n{}", o.output);
    o
}
