//! `hostrt run`: the TFRT test-driver contract (SPEC §1) over hostrt's executor.

use std::io::Write;
use std::sync::Mutex;

use hostrt_compiler::bef::AlignedBytes;
use hostrt_core::bef::BefErrorKind;
use hostrt_core::executor::{DriverError, DriverOptions, Program};
use hostrt_core::kernels::register_basic_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::SystemAllocator;

/// Options of `hostrt run` (TFRT `bef_executor` names).
#[derive(Debug, Default)]
pub struct RunOptions {
    pub work_queue_type: String,
    pub host_allocator_type: String,
    pub functions: Vec<String>,
    pub test_init_function: Option<String>,
    pub print_error_code: bool,
}

/// One line to stdout, flushed (the driver's lines interleave with kernel output).
fn out(line: &str) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(line.as_bytes());
    let _ = o.flush();
}

/// Where a runtime error is printed: `file:line:col: runtime error: MSG`.
fn print_diagnostic(d: &Diagnostic) {
    let text = match &d.location {
        Some(l) if l.line > 0 => format!("{l}: runtime error: {}", d.message()),
        Some(l) => format!("loc(\"{}\"): runtime error: {}", l.file(), d.message()),
        None => format!("runtime error: {}", d.message()),
    };
    eprintln!("{text}");
}

/// Run `bytes` (a BEF file) per the driver contract; returns the exit status.
pub fn run(argv0: &str, bytes: &[u8], opts: &RunOptions) -> u8 {
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let banner = match opts.host_allocator_type.as_str() {
        "" | "leak_check_allocator" => "Choosing memory leak check allocator.",
        "malloc" => "Choosing malloc.",
        "profiled_allocator" => "Choosing profiled allocator based on malloc.",
        other => {
            eprintln!(
                "{argv0}: unsupported host allocator type '{other}' (supported: malloc, profiled_allocator, leak_check_allocator)"
            );
            return 1;
        }
    };
    out(&format!("{banner}\n"));
    let Ok(alloc) = Allocator::register(system) else {
        eprintln!("{argv0}: allocator table full");
        return 1;
    };
    if !matches!(opts.work_queue_type.as_str(), "" | "s") {
        eprintln!("{argv0}: couldn't create work queue type {}", opts.work_queue_type);
        return 1;
    }
    out("Choosing single-threaded work queue.\n");
    let queue = SingleThreadedWorkQueue::new();
    let mut registry: KernelRegistry<256> = KernelRegistry::new();
    if let Err(e) = register_basic_kernels(&mut registry) {
        eprintln!("{argv0}: {e}");
        return 1;
    }
    let bef = AlignedBytes::new(bytes);
    let failed = Mutex::new(false);
    let diagnostics = |d: &Diagnostic| {
        *failed.lock().unwrap_or_else(|e| e.into_inner()) = true;
        print_diagnostic(d);
    };
    let output = |a: std::fmt::Arguments<'_>| out(&a.to_string());
    let status = {
        let host =
            HostContext::new(alloc, &queue, &registry).with_output(&output).with_diagnostics(&diagnostics);
        let program = match Program::load(bef.as_bytes(), &registry, alloc) {
            Ok(p) => p,
            Err(e) if e.kind == BefErrorKind::UnknownKernel => {
                let at = e.location.map(|l| format!("{l}: ")).unwrap_or_default();
                eprintln!("{at}error: unknown kernel name '{}'", e.detail.as_str());
                return 1;
            }
            Err(e) => {
                eprintln!("{argv0}: {e}");
                return 1;
            }
        };
        run_functions(argv0, &program, &host, opts)
    };
    queue.quiesce();
    if status != 0 {
        return status;
    }
    if opts.host_allocator_type == "profiled_allocator" {
        out(&format!("{}\n", system.profile()));
    }
    if matches!(opts.host_allocator_type.as_str(), "" | "leak_check_allocator")
        && let Some(report) = system.leak_report()
    {
        out(&format!("{report}\n"));
        return 1;
    }
    u8::from(*failed.lock().unwrap_or_else(|e| e.into_inner()))
}

fn run_functions(argv0: &str, program: &Program<'_>, host: &HostContext<'_>, opts: &RunOptions) -> u8 {
    let functions: Vec<&str> = opts.functions.iter().map(String::as_str).collect();
    let driver = DriverOptions {
        functions: &functions,
        init_function: opts.test_init_function.as_deref(),
        print_error_code: opts.print_error_code,
    };
    match program.run_functions(host, &driver, &mut |a| out(&a.to_string())) {
        Ok(()) => 0,
        Err(DriverError::NoSuchFunction(name)) => {
            eprintln!("{argv0}: couldn't find function {name}");
            1
        }
    }
}
