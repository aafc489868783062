//! The test driver: run every function of a program the way TFRT's test driver does
//! (`--- Running` banners, results printed by type, floats as C's `%.6e`), writing through
//! a `fmt` sink, so `hostrt run` and firmware print the same (docs/execution.md, "The test
//! driver").

use core::fmt::{self, Write};

use crate::async_value::RcAsyncValue;
use crate::bef::BefFile;
use crate::diagnostic::{DiagArg, Diagnostic};
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

/// A result as the driver shows it, by its declared type: what [`write_result`] and
/// [`Frames`] both print, each in its own medium.
enum ResultView<'v> {
    Error(&'v Diagnostic),
    I1(u8),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    /// A type the driver does not print: `<ty> value`.
    Other,
}

impl<'v> ResultView<'v> {
    fn of(v: &'v RcAsyncValue, ty: &str) -> Self {
        if let Some(e) = v.get_error() {
            return ResultView::Error(e);
        }
        match ty {
            "i1" if v.is_type::<bool>() => ResultView::I1(v.get::<bool>().map_or(0, |b| u8::from(*b))),
            "i32" if v.is_type::<i32>() => ResultView::I32(v.get::<i32>().copied().unwrap_or(0)),
            "i64" if v.is_type::<i64>() => ResultView::I64(v.get::<i64>().copied().unwrap_or(0)),
            "f32" if v.is_type::<f32>() => ResultView::F32(v.get::<f32>().copied().unwrap_or(0.0)),
            "f64" if v.is_type::<f64>() => ResultView::F64(v.get::<f64>().copied().unwrap_or(0.0)),
            _ => ResultView::Other,
        }
    }
}

/// One result as the driver prints it, given its declared type.
pub fn write_result(out: &mut dyn Write, v: &RcAsyncValue, ty: &str, print_code: bool) -> fmt::Result {
    match ResultView::of(v, ty) {
        ResultView::Error(e) if print_code => {
            write!(out, "<<error: {}, code: {}>>", e.message(), e.code.name())
        }
        ResultView::Error(e) => write!(out, "<<error: {}>>", e.message()),
        ResultView::I1(x) => write!(out, "{x}"),
        ResultView::I32(x) => write!(out, "{x}"),
        ResultView::I64(x) => write!(out, "{x}"),
        ResultView::F32(x) => write_c_exp(out, f64::from(x)),
        ResultView::F64(x) => write_c_exp(out, x),
        ResultView::Other => write!(out, "{ty} value"),
    }
}

/// Where the driver's lines go, piece by piece: [`run_functions`] writes them as text
/// through a `fmt` sink; [`Frames`] (feature `defmt`) as defmt frames. Each method writes
/// one piece of TFRT's driver output, newline included where the piece ends a line.
pub trait DriverOutput {
    /// `--- Not running '<f>' because it has arguments.`
    fn not_running(&mut self, name: &str);
    /// `--- Running '<f>':`
    fn running(&mut self, name: &str);
    /// `'<f>': <why>`: the call failed, or a result could not be awaited.
    fn failed(&mut self, name: &str, why: &dyn DiagArg);
    /// `'<f>' returned `, the start of the results line.
    fn returned(&mut self, name: &str);
    /// One result of the line, after a `,` unless it is the first; `ty` is its declared type.
    fn result(&mut self, first: bool, v: &RcAsyncValue, ty: &str, print_code: bool);
    /// The end of the results line.
    fn end_line(&mut self);
}

/// The driver's text through a `fmt` sink closure.
struct Text<'s>(&'s mut dyn FnMut(fmt::Arguments<'_>));

impl Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        (self.0)(format_args!("{s}"));
        Ok(())
    }
}

/// A [`DiagArg`]'s text as `Display`.
struct Shown<'a>(&'a dyn DiagArg);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::diagnostic::display_diag_arg(self.0, f)
    }
}

impl DriverOutput for Text<'_> {
    fn not_running(&mut self, name: &str) {
        (self.0)(format_args!("--- Not running '{name}' because it has arguments.\n"));
    }
    fn running(&mut self, name: &str) {
        (self.0)(format_args!("--- Running '{name}':\n"));
    }
    fn failed(&mut self, name: &str, why: &dyn DiagArg) {
        (self.0)(format_args!("'{name}': {}\n", Shown(why)));
    }
    fn returned(&mut self, name: &str) {
        (self.0)(format_args!("'{name}' returned "));
    }
    fn result(&mut self, first: bool, v: &RcAsyncValue, ty: &str, print_code: bool) {
        if !first {
            let _ = self.write_str(",");
        }
        let _ = write_result(self, v, ty, print_code);
    }
    fn end_line(&mut self) {
        let _ = self.write_str("\n");
    }
}

/// The driver's output as defmt frames through the application's global logger, one frame
/// per piece (feature `defmt`). A host decoder (`cargo xtask defmt`) joins the pieces into
/// the same text [`run_functions`] writes: float results carry the `:?` display hint, which
/// it prints as C's `%.6e` (docs/porting.md, "Output without core::fmt").
#[cfg(feature = "defmt")]
#[derive(Clone, Copy, Debug, Default)]
pub struct Frames;

#[cfg(feature = "defmt")]
impl DriverOutput for Frames {
    fn not_running(&mut self, name: &str) {
        defmt::println!("--- Not running '{=str}' because it has arguments.\n", name);
    }
    fn running(&mut self, name: &str) {
        defmt::println!("--- Running '{=str}':\n", name);
    }
    fn failed(&mut self, name: &str, why: &dyn DiagArg) {
        let mut text = crate::diagnostic::MessageText::new("", false);
        why.write_diag(&mut text);
        defmt::println!("'{=str}': {=str}\n", name, text.as_str());
    }
    fn returned(&mut self, name: &str) {
        defmt::println!("'{=str}' returned ", name);
    }
    fn result(&mut self, first: bool, v: &RcAsyncValue, ty: &str, print_code: bool) {
        if !first {
            defmt::println!(",");
        }
        match ResultView::of(v, ty) {
            ResultView::Error(e) if print_code => {
                defmt::println!("<<error: {=str}, code: {=str}>>", e.message(), e.code.name())
            }
            ResultView::Error(e) => defmt::println!("<<error: {=str}>>", e.message()),
            ResultView::I1(x) => defmt::println!("{=u8}", x),
            ResultView::I32(x) => defmt::println!("{=i32}", x),
            ResultView::I64(x) => defmt::println!("{=i64}", x),
            ResultView::F32(x) => defmt::println!("{=f32:?}", x),
            ResultView::F64(x) => defmt::println!("{=f64:?}", x),
            ResultView::Other => defmt::println!("{=str} value", ty),
        }
    }
    fn end_line(&mut self) {
        defmt::println!("\n");
    }
}

/// Run functions as TFRT's driver does: `--- Not running '<f>' because it has arguments.`
/// for functions with parameters, `--- Running '<f>':`, then (for functions with results)
/// `'<f>' returned r1,r2`. Each function is its own request, run with
/// [`Program::call`]'s machinery (results awaited, queue quiesced). The text goes to `out`.
pub fn run_functions<'o>(
    program: &Program<'_>,
    host: &HostContext<'_>,
    opts: &DriverOptions<'o>,
    out: &mut dyn FnMut(fmt::Arguments<'_>),
) -> Result<(), DriverError<'o>> {
    run_functions_to(program, host, opts, &mut Text(out))
}

/// [`run_functions`], writing through any [`DriverOutput`] (for example [`Frames`]).
pub fn run_functions_to<'o>(
    program: &Program<'_>,
    host: &HostContext<'_>,
    opts: &DriverOptions<'o>,
    out: &mut dyn DriverOutput,
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
    out: &mut dyn DriverOutput,
) {
    let file = program.file();
    let Some(f) = file.function(fi) else { return };
    let name = f.name();
    // Region bodies (anonymous functions) are not the program's functions: skipped silently,
    // with or without arguments. (TFRT's bef_executor lists those with arguments as
    // `--- Not running ''`; docs/execution.md.)
    if name.is_empty() {
        return;
    }
    if f.record().num_args > 0 {
        out.not_running(name);
        return;
    }
    out.running(name);
    let request = RequestContext::new();
    let exec = ExecutionContext::new(host, &request);
    let print = &mut |finished: &Finished| {
        if let Err(e) = finished.awaited {
            out.failed(name, &e);
        }
        if finished.results.is_empty() {
            return;
        }
        out.returned(name);
        for (i, (v, t)) in finished.results.iter().zip(f.result_types()).enumerate() {
            out.result(i == 0, v, file.type_name(*t), opts.print_error_code);
        }
        out.end_line();
    };
    match program.call_and_wait(&exec, fi, &[], print) {
        Ok(_) => {}
        Err(CallError::OutOfMemory) => out.failed(name, &"out of memory"),
        Err(e) => out.failed(name, &e),
    }
}
