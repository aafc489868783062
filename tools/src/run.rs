//! `hostrt run`: the TFRT test-driver contract (SPEC §1) over hostrt's executor.

use std::cell::Cell;
use std::io::Write;
use std::sync::Mutex;

use hostrt_compiler::bef::AlignedBytes;
use hostrt_core::bef::{BefErrorKind, BefFile};
use hostrt_core::executor::Program;
use hostrt_core::kernels::register_basic_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, ExecutionContext, HostContext, KernelRegistry, RcAsyncValue,
    RequestContext, SingleThreadedWorkQueue,
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

/// Function indices in the driver's order: a post-order walk where each op's regions come
/// (innermost first) before the function containing them (SPEC §1.3).
fn function_order(file: &BefFile<'_>) -> Vec<u32> {
    fn visit(file: &BefFile<'_>, f: u32, out: &mut Vec<u32>, depth: usize) {
        if depth > 256 {
            return;
        }
        if let Some(func) = file.function(f) {
            for k in func.kernels() {
                for &r in file.kernel_regions(k) {
                    visit(file, r, out, depth + 1);
                }
            }
        }
        out.push(f);
    }
    let mut order = Vec::new();
    for i in 0..file.num_functions() as u32 {
        if file.function(i).is_some_and(|f| !f.name().is_empty()) {
            visit(file, i, &mut order, 0);
        }
    }
    order
}

/// C's `%.6e`: `1.000000e+00`, `-2.500000e-01`, `nan`, `INF`.
fn c_exp(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "INF".into() } else { "-INF".into() };
    }
    let s = format!("{x:.6e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    format!("{mantissa}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn format_result(v: &RcAsyncValue, ty: &str, print_code: bool) -> String {
    if let Some(e) = v.get_error() {
        return if print_code {
            format!("<<error: {}, code: {}>>", e.message(), e.code.name())
        } else {
            format!("<<error: {}>>", e.message())
        };
    }
    let shown = match ty {
        "i1" => v.get::<bool>().map(|b| u8::from(*b).to_string()),
        "i32" => v.get::<i32>().map(|x| x.to_string()),
        "i64" => v.get::<i64>().map(|x| x.to_string()),
        "f32" => v.get::<f32>().map(|x| c_exp(f64::from(*x))),
        "f64" => v.get::<f64>().map(|x| c_exp(*x)),
        _ => None,
    };
    shown.unwrap_or_else(|| format!("{ty} value"))
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
    let file = program.file();
    let mut list: Vec<u32> = if opts.functions.is_empty() {
        function_order(file)
    } else {
        let mut l = Vec::new();
        for name in &opts.functions {
            match program.function_index(name) {
                Some(i) => l.push(i),
                None => {
                    eprintln!("{argv0}: couldn't find function {name}");
                    return 1;
                }
            }
        }
        l
    };
    if let Some(init) = opts.test_init_function.as_deref().and_then(|n| program.function_index(n)) {
        list.retain(|f| *f != init);
        list.insert(0, init);
    }
    for fi in list {
        let Some(f) = file.function(fi) else { continue };
        let name = f.name();
        if f.record().num_args > 0 {
            out(&format!("--- Not running '{name}' because it has arguments.\n"));
            continue;
        }
        if name.is_empty() {
            continue;
        }
        out(&format!("--- Running '{name}':\n"));
        let request = RequestContext::new();
        let exec = ExecutionContext::new(host, &request);
        let slots: Vec<Cell<Option<RcAsyncValue>>> =
            f.result_types().iter().map(|_| Cell::new(None)).collect();
        // SAFETY: the program, host and request outlive the await and quiesce below, after
        // which no work of this run remains.
        unsafe { program.execute(&exec, fi, &[], &slots) };
        let results: Vec<RcAsyncValue> = slots.into_iter().filter_map(Cell::into_inner).collect();
        if let Err(e) = host.await_values(&results) {
            eprintln!("{argv0}: '{name}': {e}");
        }
        if !results.is_empty() {
            let shown: Vec<String> = results
                .iter()
                .zip(f.result_types())
                .map(|(v, t)| format_result(v, file.type_name(*t), opts.print_error_code))
                .collect();
            out(&format!("'{name}' returned {}\n", shown.join(",")));
        }
        host.quiesce();
    }
    0
}

#[cfg(test)]
mod tests {
    use super::c_exp;

    #[test]
    fn c_style_exponents() {
        assert_eq!(c_exp(1.0), "1.000000e+00");
        assert_eq!(c_exp(-0.25), "-2.500000e-01");
        assert_eq!(c_exp(123456.0), "1.234560e+05");
        assert_eq!(c_exp(f64::NAN), "nan");
        assert_eq!(c_exp(f64::NEG_INFINITY), "-INF");
    }
}
