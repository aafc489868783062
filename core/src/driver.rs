//! The test driver: run every function of a program the way TFRT's test driver does
//! (`--- Running` banners, results printed by type, floats as C's `%.6e`), writing through
//! a `fmt` sink, so `hostrt run` and firmware print the same (docs/execution.md, "The test
//! driver").

use core::fmt::{self, Write};

use crate::async_value::RcAsyncValue;
use crate::bef::BefFile;
use crate::executor::{CallError, Finished, Program};
use crate::host_context::{ExecutionContext, HostContext, RequestContext};
pub use crate::number_format::write_c_exp;

/// Which functions to run and how to print results.
#[derive(Clone, Copy, Debug, Default)]
pub struct DriverOptions<'o> {
    /// Run only these functions, in this order (empty: every function, in driver order).
    pub functions: &'o [&'o str],
    /// Run this function first (and not again later).
    pub init_function: Option<&'o str>,
    /// Print error results with their status code.
    pub print_error_code: bool,
}

/// Why the driver stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverError<'o> {
    /// `--functions` named a function the program does not have.
    NoSuchFunction(&'o str),
}

/// The driver's function order: a post-order walk in which each op's regions (innermost
/// first) precede the function containing them. Calls `f` with each function index.
pub fn for_each_function_in_order(file: &BefFile<'_>, mut f: impl FnMut(u32)) {
    fn visit(file: &BefFile<'_>, fi: u32, f: &mut dyn FnMut(u32), depth: usize) {
        if depth > 256 {
            return;
        }
        if let Some(func) = file.function(fi) {
            for k in func.kernels() {
                for &r in file.kernel_regions(k) {
                    visit(file, r, f, depth + 1);
                }
            }
        }
        f(fi);
    }
    for i in 0..file.num_functions() as u32 {
        if file.function(i).is_some_and(|g| !g.name().is_empty()) {
            visit(file, i, &mut f, 0);
        }
    }
}

/// One result as the driver prints it, given its declared type.
pub fn write_result(out: &mut dyn Write, v: &RcAsyncValue, ty: &str, print_code: bool) -> fmt::Result {
    if let Some(e) = v.get_error() {
        return if print_code {
            write!(out, "<<error: {}, code: {}>>", e.message(), e.code.name())
        } else {
            write!(out, "<<error: {}>>", e.message())
        };
    }
    match ty {
        "i1" if v.is_type::<bool>() => write!(out, "{}", v.get::<bool>().map_or(0, |b| u8::from(*b))),
        "i32" if v.is_type::<i32>() => write!(out, "{}", v.get::<i32>().copied().unwrap_or(0)),
        "i64" if v.is_type::<i64>() => write!(out, "{}", v.get::<i64>().copied().unwrap_or(0)),
        "f32" if v.is_type::<f32>() => write_c_exp(out, f64::from(v.get::<f32>().copied().unwrap_or(0.0))),
        "f64" if v.is_type::<f64>() => write_c_exp(out, v.get::<f64>().copied().unwrap_or(0.0)),
        _ => write!(out, "{ty} value"),
    }
}

/// Adapts a sink closure to `fmt::Write`.
struct Sink<'s>(&'s mut dyn FnMut(fmt::Arguments<'_>));

impl Write for Sink<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        (self.0)(format_args!("{s}"));
        Ok(())
    }
}

/// Run functions as TFRT's driver does: `--- Not running '<f>' because it has arguments.`
/// for functions with parameters, `--- Running '<f>':`, then (for functions with results)
/// `'<f>' returned r1,r2`. Each function is its own request, run with
/// [`Program::call`]'s machinery (results awaited, queue quiesced).
pub fn run_functions<'o>(
    program: &Program<'_>,
    host: &HostContext<'_>,
    opts: &DriverOptions<'o>,
    out: &mut dyn FnMut(fmt::Arguments<'_>),
) -> Result<(), DriverError<'o>> {
    let file = program.file();
    let init = opts.init_function.and_then(|n| program.function_index(n));
    if let Some(i) = init {
        run_one(program, host, i, opts, out);
    }
    if opts.functions.is_empty() {
        for_each_function_in_order(file, |fi| {
            if Some(fi) != init {
                run_one(program, host, fi, opts, out);
            }
        });
        return Ok(());
    }
    for name in opts.functions {
        program.function_index(name).ok_or(DriverError::NoSuchFunction(name))?;
    }
    for name in opts.functions {
        let fi = program.function_index(name).ok_or(DriverError::NoSuchFunction(name))?;
        if Some(fi) != init {
            run_one(program, host, fi, opts, out);
        }
    }
    Ok(())
}

fn run_one(
    program: &Program<'_>,
    host: &HostContext<'_>,
    fi: u32,
    opts: &DriverOptions<'_>,
    out: &mut dyn FnMut(fmt::Arguments<'_>),
) {
    let file = program.file();
    let Some(f) = file.function(fi) else { return };
    let name = f.name();
    if f.record().num_args > 0 {
        out(format_args!("--- Not running '{name}' because it has arguments.\n"));
        return;
    }
    if name.is_empty() {
        return;
    }
    out(format_args!("--- Running '{name}':\n"));
    let request = RequestContext::new();
    let exec = ExecutionContext::new(host, &request);
    let print = &mut |finished: &Finished| {
        if let Err(e) = finished.awaited {
            out(format_args!("'{name}': {e}\n"));
        }
        if finished.results.is_empty() {
            return;
        }
        let mut sink = Sink(&mut *out);
        let _ = write!(sink, "'{name}' returned ");
        for (i, (v, t)) in finished.results.iter().zip(f.result_types()).enumerate() {
            if i > 0 {
                let _ = sink.write_str(",");
            }
            let _ = write_result(&mut sink, v, file.type_name(*t), opts.print_error_code);
        }
        let _ = sink.write_str("\n");
    };
    match program.call_and_wait(&exec, fi, &[], print) {
        Ok(_) => {}
        Err(CallError::OutOfMemory) => out(format_args!("'{name}': out of memory\n")),
        Err(e) => out(format_args!("'{name}': {e}\n")),
    }
}
