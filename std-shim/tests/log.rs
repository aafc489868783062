//! Diagnostics and print output through the `log` facade: a program's kernel error becomes
//! one `error` record and each printed line one `info` record, with the texts the host's
//! stderr and stdout get.

use std::sync::Mutex;

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::Program;
use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{
    AlignedBytes, DIAGNOSTICS_TARGET, OUTPUT_TARGET, SystemAllocator, log_diagnostic, log_output,
};

/// Every record: level, target, text.
static RECORDS: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, r: &log::Record<'_>) {
        RECORDS.lock().unwrap().push((r.level(), r.target().to_string(), r.args().to_string()));
    }
    fn flush(&self) {}
}

#[test]
fn kernel_errors_and_printed_lines_become_records() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let text = "func.func @main() -> i32 {\n  %ch = tfrt.new.chain\n  %one = tfrt.constant.i32 1\n  \
                %zero = tfrt.constant.i32 0\n  %q, %r = tfrt.div.i32 %one, %zero\n  \
                %ch1 = tfrt.print.i32 %one, %ch\n  tfrt.return %q : i32\n}\n";
    let bef = AlignedBytes::new(&hostrt_compiler::compile("m.mlir", text, Default::default()).unwrap());
    static SYSTEM: SystemAllocator = SystemAllocator::new();
    let alloc = Allocator::register(&SYSTEM).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue).with_diagnostics(&log_diagnostic).with_output(&log_output);
    let mut registry: KernelRegistry<128> = KernelRegistry::new();
    register_basic_kernels(&mut registry).unwrap();
    let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
    let results = program.call(&host, "main", &[]).unwrap();
    assert!(results[0].get_error().is_some());
    let records = RECORDS.lock().unwrap();
    assert_eq!(
        *records,
        [
            (log::Level::Error, DIAGNOSTICS_TARGET.into(), "m.mlir:5:12: Divide by zero (INTERNAL)".into()),
            (log::Level::Info, OUTPUT_TARGET.into(), "int32 = 1".into()),
        ]
    );
}
