//! `hostrt run`: the TFRT test-driver contract over hostrt's executor.
//!
//! The driver writes through a [`RunIo`] and hands diagnostics to a [`DiagnosticHandler`], so
//! `hostrt run` prints straight to the process's streams ([`StdIo`], [`PrintDiagnostics`])
//! while `hostrt check` runs the same driver in process, capturing both streams and verifying
//! diagnostics against `expected-*` annotations.

use std::fmt::Write as _;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use hostrt_c::tf::plugins::load_plugin;
use hostrt_c::tf::std_ops::register_standard_ops;
use hostrt_c::tf::tf_program::{LoadError, TfProgram};
use hostrt_core::allocator::HostAllocator;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::bef::BefErrorKind;
use hostrt_core::driver::{self, DriverError, DriverOptions, for_each_function_in_order, write_result};
use hostrt_core::executor::Program;
use hostrt_core::kernel::{KernelEntry, KernelLookup};
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{
    Allocator, ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, Location,
    SingleThreadedWorkQueue,
};
use hostrt_std::AlignedBytes;
use hostrt_std::{
    FixedSizeEvent, FixedSizeTestAllocator, MallocAllocator, MultiThreadedWorkQueue, SystemAllocator,
};
use hostrt_test_kernels::{LogPrefix, Severity, register_test_kernels};

/// Options of `hostrt run`, with TFRT `bef_executor`'s names; [`RunOptions::parse`] reads
/// them for `hostrt run` and for `hostrt check`'s RUN lines alike.
#[derive(Debug)]
pub struct RunOptions {
    /// `s` (single-threaded, the default) or `mstd[:N[,M]]`.
    pub work_queue_type: String,
    /// One of [`HOST_ALLOCATOR_TYPES`]; `leak_check_allocator` by default.
    pub host_allocator_type: String,
    /// Run only these functions, in this order.
    pub functions: Vec<String>,
    /// Run this function first.
    pub test_init_function: Option<String>,
    /// Print error results with their status code.
    pub print_error_code: bool,
    /// C-API plugins (shared objects) to load before the program, in order (`--plugin`).
    pub plugins: Vec<String>,
    /// `--record-arena-peak[=OUT]`: instead of running for output, measure each function's
    /// arena and write the BEF with an ARENA section (`Some("")`: to the default path).
    pub record_arena_peak: Option<String>,
    /// `--profile[=csv]`: after the run, a table per kernel (`Some(true)`: as CSV).
    pub profile: Option<bool>,
    /// `--trace=FILE`: write a Chrome/Perfetto trace of the run to FILE.
    pub trace: Option<String>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            work_queue_type: "s".into(),
            host_allocator_type: "leak_check_allocator".into(),
            functions: Vec::new(),
            test_init_function: None,
            print_error_code: false,
            plugins: Vec::new(),
            record_arena_peak: None,
            profile: None,
            trace: None,
        }
    }
}

/// The `--host_allocator_type` values `run` supports.
pub const HOST_ALLOCATOR_TYPES: [&str; 4] =
    ["leak_check_allocator", "malloc", "profiled_allocator", "test_fixed_size_1k"];

/// Why a driver command line was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum OptionError {
    /// A malformed command line, in LLVM's option parser's words (exit status 1), without
    /// the program name the caller puts before it.
    Bad(String),
    /// A `bef_executor` option hostrt does not have (plug-in libraries).
    Unsupported(String),
}

/// An LLVM-style option: `-name`, `--name`, `-name=value`.
pub(crate) fn llvm_option(arg: &str) -> Option<(&str, Option<&str>)> {
    let body = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|b| !b.is_empty())?;
    Some(match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    })
}

fn flag_value(arg: &str, v: Option<&str>) -> Result<bool, String> {
    match v {
        None | Some("true" | "1" | "TRUE" | "True") => Ok(true),
        Some("false" | "0" | "FALSE" | "False") => Ok(false),
        Some(other) => Err(format!("'{other}' is invalid value for boolean argument '{arg}'! Try 0 or 1")),
    }
}

impl RunOptions {
    /// Parse a driver command line the way `bef_executor`'s LLVM option parser does
    /// (`-name=value`, `--name value`, `--flag`, `--flag=0`; `--functions` comma-separated
    /// and repeatable). Returns the options and the input path (`-`, standard input, when
    /// none is given).
    pub fn parse(argv0: &str, args: &[String]) -> Result<(RunOptions, String), OptionError> {
        let mut opts = RunOptions::default();
        let mut input: Option<String> = None;
        let bad = OptionError::Bad;
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let Some((name, inline)) = llvm_option(arg) else {
                if input.replace(arg.clone()).is_some() {
                    return Err(bad("Too many positional arguments specified!".into()));
                }
                continue;
            };
            let takes_value = matches!(
                name,
                "work_queue_type"
                    | "host_allocator_type"
                    | "functions"
                    | "test_init_function"
                    | "shared_libs"
                    | "plugin"
                    | "trace"
            ) || name == "tracing_level";
            let value = if takes_value {
                match inline.map(String::from).or_else(|| it.next().cloned()) {
                    Some(v) => v,
                    None => return Err(bad(format!("for the --{name} option: requires a value!"))),
                }
            } else {
                String::new()
            };
            match name {
                "work_queue_type" => opts.work_queue_type = value,
                "host_allocator_type" => opts.host_allocator_type = value,
                "functions" => {
                    opts.functions.extend(value.split(',').filter(|s| !s.is_empty()).map(String::from))
                }
                "test_init_function" => opts.test_init_function = Some(value).filter(|v| !v.is_empty()),
                "plugin" => opts.plugins.push(value),
                "shared_libs" => {
                    return Err(OptionError::Unsupported(format!(
                        "{argv0} --shared_libs (plug-in kernel libraries) is not supported"
                    )));
                }
                "tracing_level" => {}
                "profile" => opts.profile = Some(profile_format(inline).map_err(bad)?),
                "trace" => opts.trace = Some(value).filter(|v| !v.is_empty()),
                "record-arena-peak" => opts.record_arena_peak = Some(inline.unwrap_or("").to_string()),
                "print_error_code" => {
                    opts.print_error_code = flag_value(arg, inline)
                        .map_err(|e| bad(format!("for the --print_error_code option: {e}")))?;
                }
                "enable_tracing" => {
                    flag_value(arg, inline)
                        .map_err(|e| bad(format!("for the --enable_tracing option: {e}")))?;
                }
                _ => {
                    return Err(bad(format!(
                        "Unknown command line argument '{arg}'.  Try: '{argv0} --help'"
                    )));
                }
            }
        }
        if !HOST_ALLOCATOR_TYPES.contains(&opts.host_allocator_type.as_str()) {
            let other = &opts.host_allocator_type;
            return Err(bad(format!(
                "for the --host_allocator_type option: Cannot find option named '{other}'!"
            )));
        }
        Ok((opts, input.unwrap_or_else(|| "-".into())))
    }
}

/// The format `--profile[=FORMAT]` names: `true` for CSV, `false` for the table.
pub fn profile_format(value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("" | "table") => Ok(false),
        Some("csv") => Ok(true),
        Some(other) => Err(format!("for the --profile option: '{other}' is not table or csv")),
    }
}

/// [`profile_format`] as clap's value parser of `hostrt infer --profile=FORMAT`.
pub fn profile_format_arg(value: &str) -> Result<bool, String> {
    profile_format(Some(value))
}

/// Where the driver's text goes: its stdout and its stderr.
pub trait RunIo: Sync {
    /// Text for standard output (banners, driver lines, kernel output, reports).
    fn out(&self, text: &str);
    /// Text for standard error (driver errors, unconsumed diagnostics).
    fn err(&self, text: &str);
}

/// The process's own streams, flushed after every write (driver lines interleave with
/// kernel output).
#[derive(Debug, Default)]
pub struct StdIo;

impl RunIo for StdIo {
    fn out(&self, text: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(text.as_bytes());
        let _ = o.flush();
    }

    fn err(&self, text: &str) {
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(text.as_bytes());
        let _ = e.flush();
    }
}

/// Where a diagnostic came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiagnosticKind {
    /// A kernel reported an error while running; the text is `runtime error: MSG`.
    Runtime,
    /// Loading the program failed (an unknown kernel name); the text is the message.
    Load,
}

/// Receives the driver's diagnostics (MLIR's diagnostic handler in the reference).
pub trait DiagnosticHandler: Sync {
    /// One error diagnostic: `text` is its full text (`runtime error: Divide by zero`,
    /// `unknown kernel name 'x'`), `location` where it arose (line 0: a name location).
    fn emit(&self, io: &dyn RunIo, kind: DiagnosticKind, location: Option<&Location>, text: &str);
    /// Called once, after every function ran and the program was released; true when the
    /// run must fail because of its diagnostics.
    fn finish(&self, io: &dyn RunIo) -> bool;
}

/// `hostrt run`'s handler: prints every diagnostic to stderr in the command line's one error
/// format, `hostrt: error: FILE:LINE:COL: MSG`, with the source line and a caret under the
/// column where the program's text is at hand (compiled here, or the file the location
/// names); any diagnostic fails the run.
#[derive(Debug, Default)]
pub struct PrintDiagnostics {
    failed: AtomicBool,
    /// The program's text and the file name its locations use, when it was compiled here.
    source: Option<(String, String)>,
}

impl PrintDiagnostics {
    /// A handler that quotes the lines of `text` (the program, named `name` in its locations).
    pub fn with_source(name: &str, text: &str) -> Self {
        PrintDiagnostics {
            failed: AtomicBool::new(false),
            source: Some((name.to_string(), text.to_string())),
        }
    }
}

impl DiagnosticHandler for PrintDiagnostics {
    fn emit(&self, io: &dyn RunIo, _kind: DiagnosticKind, location: Option<&Location>, text: &str) {
        self.failed.store(true, Ordering::Relaxed);
        let mut line = match location {
            Some(l) if l.line > 0 => format!("hostrt: error: {l}: {text}\n"),
            Some(l) => format!("hostrt: error: loc(\"{}\"): {text}\n", l.file()),
            None => format!("hostrt: error: {text}\n"),
        };
        // The program's text when it was compiled here, else the file its location names
        // (a BEF compiled earlier from a file still there).
        let source = location.filter(|l| l.line > 0).and_then(|l| match &self.source {
            Some((name, text)) if l.file() == name => Some(text.clone()),
            _ => std::fs::read_to_string(l.file()).ok(),
        });
        if let (Some(l), Some(source)) = (location, source)
            && let Some(quoted) = source.lines().nth(l.line as usize - 1)
        {
            let caret = " ".repeat(quoted.chars().take(l.column.saturating_sub(1) as usize).count());
            line += &format!("{quoted}\n{caret}^\n");
        }
        io.err(&line);
    }

    fn finish(&self, _io: &dyn RunIo) -> bool {
        self.failed.load(Ordering::Relaxed)
    }
}

/// Registers `system` for one run and releases the slot afterwards (when nothing leaked), so
/// that many in-process runs do not exhaust the allocator table.
struct Registered(Allocator);

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.0.unregister();
    }
}

/// The fixed-size allocator's log lines, held until the run writes its next line. The
/// allocator is leaked (it must be `'static` to register) and may log from any thread at
/// any time, so it cannot hold the run's `io`; [`Routed`] writes the held lines before
/// each of the run's own, which keeps the order of a merged `2>&1` capture, and closes the
/// route when the run ends (later lines are dropped).
struct LogRoute(std::sync::Mutex<Option<Vec<String>>>);

impl LogRoute {
    fn log(&self, e: FixedSizeEvent) {
        let (severity, line) = match e {
            FixedSizeEvent::Allocating { .. } => (Severity::Info, 67),
            FixedSizeEvent::Refused { .. } => (Severity::Error, 71),
            FixedSizeEvent::Freeing { .. } => (Severity::Info, 44),
        };
        let prefix = LogPrefix { severity, file: "test_fixed_size_allocator.cc", line };
        if let Ok(mut held) = self.0.lock()
            && let Some(held) = held.as_mut()
        {
            held.push(format!("{prefix}{e}\n"));
        }
    }

    /// The lines held so far; `close` also stops holding new ones.
    fn take(&self, close: bool) -> Vec<String> {
        let Ok(mut held) = self.0.lock() else { return Vec::new() };
        if close {
            held.take().unwrap_or_default()
        } else {
            held.as_mut().map(std::mem::take).unwrap_or_default()
        }
    }
}

/// A run's `io` with the allocator's held log lines (standard error) written first.
struct Routed<'a> {
    io: &'a dyn RunIo,
    route: &'static LogRoute,
}

impl Routed<'_> {
    fn flush_log(&self, close: bool) {
        for line in self.route.take(close) {
            self.io.err(&line);
        }
    }
}

impl RunIo for Routed<'_> {
    fn out(&self, text: &str) {
        self.flush_log(false);
        self.io.out(text);
    }

    fn err(&self, text: &str) {
        self.flush_log(false);
        self.io.err(text);
    }
}

/// Where native function `name` is declared in `bef`, and the first kernel that names it (a
/// `tfrt.call`), when the file records locations.
fn native_sites(bef: &[u8], name: &str) -> (Option<Location>, Option<Location>) {
    let Ok((_, scratch)) = hostrt_std::leaked_arena(bef.len() + 4096) else { return (None, None) };
    let Ok(file) = hostrt_core::bef::BefFile::load_unresolved(bef, scratch) else { return (None, None) };
    let Some(target) = file.function_by_name(name) else { return (None, None) };
    let declared = file.location(target.record().location);
    let calls = |a: u32| match file.attr(a) {
        Some(hostrt_core::bef::BefAttr::Function(f)) => f == target.index(),
        Some(hostrt_core::bef::BefAttr::Functions(fs)) => fs.contains(&target.index()),
        _ => false,
    };
    let used = (0..file.num_functions() as u32)
        .filter_map(|fi| file.function(fi))
        .flat_map(|f| f.kernels().iter())
        .find(|k| file.kernel_attrs(k).0.iter().any(|&a| calls(a)))
        .and_then(|k| file.location(k.location));
    (declared, used)
}

impl Drop for Routed<'_> {
    fn drop(&mut self) {
        self.flush_log(true);
    }
}

/// Run `bytes` (a BEF file) per the driver contract; returns the exit status.
pub fn run(
    argv0: &str,
    bytes: &[u8],
    opts: &RunOptions,
    io: &dyn RunIo,
    diags: &dyn DiagnosticHandler,
) -> u8 {
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let route: &'static LogRoute = Box::leak(Box::new(LogRoute(std::sync::Mutex::new(Some(Vec::new())))));
    let routed = Routed { io, route };
    let io: &dyn RunIo = &routed;
    let (banner, host_allocator): (&str, &'static dyn HostAllocator) = match opts.host_allocator_type.as_str()
    {
        "leak_check_allocator" => ("Choosing memory leak check allocator.", system),
        "malloc" => ("Choosing malloc.", system),
        "profiled_allocator" => ("Choosing profiled allocator based on malloc.", system),
        "test_fixed_size_1k" => {
            let fixed = FixedSizeTestAllocator::new(MallocAllocator, 1024, move |e| route.log(e));
            ("Choosing fixed size malloc.", Box::leak(Box::new(fixed)))
        }
        other => {
            io.err(&format!(
                "{argv0}: unsupported host allocator type '{other}' (supported: malloc, test_fixed_size_1k, profiled_allocator, leak_check_allocator)\n"
            ));
            return 1;
        }
    };
    io.out(&format!("{banner}\n"));
    let Ok(alloc) = Allocator::register(host_allocator) else {
        io.err(&format!("{argv0}: allocator table full\n"));
        return 1;
    };
    let alloc = Registered(alloc);
    // `--profile` and `--trace`: one recorder sees the kernels, calls and tasks.
    let recorder = (opts.profile.is_some() || opts.trace.is_some())
        .then(|| std::sync::Arc::new(hostrt_std::Recorder::new(opts.trace.is_some())));
    let single;
    let multi;
    let queue: &dyn ConcurrentWorkQueue = match opts.work_queue_type.as_str() {
        "s" => {
            single = SingleThreadedWorkQueue::new();
            io.out("Choosing single-threaded work queue.\n");
            &single
        }
        config => match MultiThreadedWorkQueue::from_config(config) {
            Some(q) => {
                multi = q;
                if let Some(r) = &recorder {
                    multi.set_task_observer(r.clone());
                }
                io.out(&format!("Choosing {} work queue.\n", multi.description()));
                &multi
            }
            None => {
                io.err(&format!("{argv0}: couldn't create work queue type {config}\n"));
                return 1;
            }
        },
    };
    let registry = match kernels(opts) {
        Ok(r) => r,
        Err(e) => {
            io.err(&format!("{argv0}: {e}\n"));
            return 1;
        }
    };
    let bef = AlignedBytes::new(bytes);
    let on_diagnostic = |d: &Diagnostic| {
        diags.emit(
            io,
            DiagnosticKind::Runtime,
            d.location.as_ref(),
            &format!("runtime error: {}", d.message()),
        )
    };
    let output = |a: std::fmt::Arguments<'_>| io.out(&a.to_string());
    let status = {
        // TFRT's driver runs other streams' kernels as tasks on every queue; so does this
        // one, so that its output interleaves as TFRT's does (an embedder's single-threaded
        // host runs them inline: docs/execution.md, "Streams on one thread").
        let mut host = HostContext::new(alloc.0, queue)
            .with_stream_tasks(true)
            .with_output(&output)
            .with_diagnostics(&on_diagnostic);
        if let Some(r) = &recorder {
            host = host.with_observer(&**r);
        }
        match TfProgram::load(bef.as_bytes(), &*registry, alloc.0) {
            Ok(program) => run_functions(argv0, &program, &host, opts, io),
            Err(LoadError::Kernel(d)) => {
                diags.emit(io, DiagnosticKind::Load, d.location.as_ref(), d.message());
                0
            }
            Err(LoadError::Bef(e)) if e.kind == BefErrorKind::UnknownKernel => {
                let text = format!("unknown kernel name '{}'", e.detail.as_str());
                diags.emit(io, DiagnosticKind::Load, e.location.as_ref(), &text);
                0
            }
            Err(LoadError::Bef(e)) if e.kind == BefErrorKind::UnknownNativeFunction => {
                // TFRT's text, then the function's name and where it is used (TFRT's names
                // neither).
                let name = e.detail.as_str();
                let (declared, used) = native_sites(bef.as_bytes(), name);
                let mut text = format!(
                    "invalid FunctionIndex section in BEF file: unable to find native function in global registry: '@{name}'"
                );
                if let (Some(_), Some(d)) = (&used, &declared) {
                    text += &format!(" (declared at {d})");
                }
                diags.emit(io, DiagnosticKind::Load, used.as_ref().or(declared.as_ref()), &text);
                0
            }
            Err(LoadError::Bef(e)) => {
                io.err(&format!("{argv0}: {e}\n"));
                return 1;
            }
        }
    };
    queue.quiesce();
    if status != 0 {
        return status;
    }
    if let Some(r) = &recorder
        && let Err(e) = crate::infer::report_recording(r, opts.profile, opts.trace.as_deref(), &|t| io.out(t))
    {
        io.err(&format!("{argv0}: {e}\n"));
        return 1;
    }
    let failed = diags.finish(io);
    if opts.host_allocator_type == "profiled_allocator" {
        io.out(&format!("{}\n", system.profile()));
    }
    if opts.host_allocator_type == "leak_check_allocator"
        && let Some(report) = system.leak_report()
    {
        io.out(&format!("{report}\n"));
        return 1;
    }
    u8::from(failed)
}

/// The kernels `hostrt run` links: the basic, tensor, int8 `dsp.*` and Vulkan `vk.*` kernels
/// (the device opens on first use), and TFRT's test kernels as `bef_executor` links them;
/// then TensorFlow's standard NN op definitions and the C-API plugins `opts` names, whose
/// kernels run as `tf.<Op>` (docs/capi.md).
pub fn kernels(opts: &RunOptions) -> Result<Box<KernelRegistry<1024>>, String> {
    let mut registry: Box<KernelRegistry<1024>> = Box::default();
    register_basic_kernels(&mut registry)
        .and_then(|()| register_tensor_kernels(&mut registry))
        .and_then(|()| registry.add_entries(hostrt_dsp::kernels::KERNELS))
        .and_then(|()| registry.add_entries(hostrt_ops::KERNELS))
        .and_then(|()| hostrt_vulkan::kernels::register_vulkan_kernels(&mut registry))
        .and_then(|()| register_test_kernels(&mut registry))
        .map_err(|e| e.to_string())?;
    register_standard_ops();
    for plugin in &opts.plugins {
        load_plugin(std::path::Path::new(plugin)).map_err(|e| e.to_string())?;
    }
    Ok(registry)
}

fn run_functions(
    argv0: &str,
    program: &Program<'_>,
    host: &HostContext<'_>,
    opts: &RunOptions,
    io: &dyn RunIo,
) -> u8 {
    let functions: Vec<&str> = opts.functions.iter().map(String::as_str).collect();
    let options = DriverOptions {
        functions: &functions,
        init_function: opts.test_init_function.as_deref(),
        print_error_code: opts.print_error_code,
    };
    match driver::run_functions(program, host, &options, &mut |a| io.out(&a.to_string())) {
        Ok(()) => 0,
        Err(DriverError::NoSuchFunction(name)) => {
            io.err(&format!("{argv0}: couldn't find function {name}\n"));
            1
        }
    }
}

/// The kernels `code_size_test_driver` links: integer and control-flow families.
pub fn code_size_kernel(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "tfrt.new.chain",
        "tfrt.merge.chains",
        "tfrt.call",
        "tfrt.if",
        "tfrt.cond",
        "tfrt.case",
        "tfrt.repeat.i32",
        "tfrt.while",
        "tfrt.once",
        "tfrt.alias.value",
        "tfrt.print.i1",
        "tfrt.print.i32",
        "tfrt.print.i64",
        "tfrt.constant.i32",
        "tfrt.constant.i64",
        "tfrt.constant.ui32",
        "tfrt.constant.ui64",
    ];
    const INT_FAMILIES: &[&str] = &["add", "minus", "equal", "lessequal", "div", "mul"];
    if EXACT.contains(&name) || name.starts_with("tfrt.cast.") {
        return true;
    }
    name.strip_prefix("tfrt.")
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(op, ty)| INT_FAMILIES.contains(&op) && matches!(ty, "i32" | "i64"))
}

/// A registry that only exposes the names `allowed` accepts.
struct Restricted<'r> {
    inner: &'r dyn KernelLookup,
    allowed: fn(&str) -> bool,
}

impl KernelLookup for Restricted<'_> {
    fn lookup(&self, name: &str) -> Option<KernelEntry> {
        if (self.allowed)(name) { self.inner.lookup(name) } else { None }
    }
}

/// `code_size_test_driver`: no options and no banners, program on stdin, only
/// integer and control-flow kernels, diagnostics discarded, results other than `i32` printed
/// as `<type> value`; exit status 0 (134, "aborted", when the program cannot be loaded).
pub fn run_code_size(bytes: &[u8], io: &dyn RunIo) -> u8 {
    let system: &'static SystemAllocator = Box::leak(Box::new(SystemAllocator::new()));
    let Ok(alloc) = Allocator::register(system) else {
        io.err("code_size_test_driver: allocator table full\n");
        return 134;
    };
    let alloc = Registered(alloc);
    let queue = SingleThreadedWorkQueue::new();
    let mut full: KernelRegistry<256> = KernelRegistry::new();
    if register_basic_kernels(&mut full).is_err() {
        return 134;
    }
    let registry = Restricted { inner: &full, allowed: code_size_kernel };
    let bef = AlignedBytes::new(bytes);
    let output = |a: std::fmt::Arguments<'_>| io.out(&a.to_string());
    let discard = |_: &Diagnostic| {};
    {
        let host = HostContext::new(alloc.0, &queue)
            .with_stream_tasks(true) // as TFRT's driver (see `run`)
            .with_output(&output)
            .with_diagnostics(&discard);
        let Ok(program) = Program::load(bef.as_bytes(), &registry, alloc.0) else {
            io.out("Could not BEFFile::Open fib.bef.\n");
            return 134;
        };
        for_each_function_in_order(program.file(), |fi| code_size_run_one(&program, &host, fi, io));
    }
    queue.quiesce();
    0
}

fn code_size_run_one(program: &Program<'_>, host: &HostContext<'_>, fi: u32, io: &dyn RunIo) {
    let file = program.file();
    let Some(f) = file.function(fi) else { return };
    let name = f.name();
    // Region bodies are skipped, as by the driver (hostrt_core::driver).
    if name.is_empty() {
        return;
    }
    if f.record().num_args > 0 {
        io.out(&format!("--- Not running '{name}' because it has arguments.\n"));
        return;
    }
    io.out(&format!("--- Running '{name}':\n"));
    let results = match program.call(host, name, &[]) {
        Ok(results) => results,
        Err(e) => return io.out(&format!("'{name}': {e}\n")),
    };
    if results.is_empty() {
        return;
    }
    let mut line = format!("'{name}' returned ");
    for (i, (v, t)) in results.iter().zip(f.result_types()).enumerate() {
        if i > 0 {
            line.push(',');
        }
        let ty = file.type_name(*t);
        if v.get_error().is_some() || ty == "i32" {
            let _ = write_result(&mut line, v, ty, false);
        } else {
            let _ = write!(line, "{ty} value");
        }
    }
    line.push('\n');
    io.out(&line);
}
