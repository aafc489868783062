//! `hostrt`: compile MLIR (`tfrt` dialect) to BEF, disassemble BEF, run programs, and check
//! test files against their RUN/CHECK lines.

/// `println!` for reports that does not panic when standard output is a closed pipe
/// (`hostrt import m.tflite -o m.bef | head -1`): what cannot be written is dropped.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod arena_figures;
mod check;
mod graph;
mod infer;
mod run;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hostrt_compiler::bef::{ArenaRecord, WriteOptions, decode, with_arena_records};
use hostrt_compiler::text::{PrintOptions, print};
use hostrt_core::Allocator;
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

#[derive(Parser)]
#[command(name = "hostrt", version, about = "hostrt host runtime tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile MLIR text to BEF.
    Compile {
        /// Input `.mlir` file (`-` for standard input).
        input: PathBuf,
        /// Output `.bef` file (`-` for standard output).
        #[arg(short, long)]
        output: PathBuf,
        /// Run every call on one stream, depth-first, instead of TFRT's stream assignment
        /// (smaller live state for recursive programs on firmware; see docs/bef.md).
        #[arg(long)]
        single_stream: bool,
        /// Store no source locations (diagnostics then name no `file:line:col`): a smaller
        /// file for firmware that reports errors as codes only.
        #[arg(long)]
        strip_locations: bool,
        /// Record in the file, for each function the driver runs, an arena bound derived
        /// from the program without running it (docs/bef.md, "Arena sizes"), for this
        /// machine's pointer size; functions whose kernels do not declare their allocations
        /// are listed with the reason (measure those with `hostrt run --record-arena-peak`).
        #[arg(long)]
        arena_bound: bool,
    },
    /// Run every function of a program (MLIR text or BEF), as TFRT's bef_executor does.
    ///
    /// `hostrt run [FILE] [OPTIONS]`, FILE a `.mlir` or `.bef` file (`-`, the default, reads
    /// standard input). Options, written `--name value`, `--name=value` or `-name=value` as
    /// bef_executor takes them (`hostrt check` parses RUN lines with the same parser):
    /// `--work_queue_type s|mstd[:N[,M]]` (single-threaded, the default, or N workers and M
    /// blocking threads); `--host_allocator_type` one of leak_check_allocator, malloc,
    /// profiled_allocator, test_fixed_size_1k; `--functions a,b` (only these, in order;
    /// repeatable); `--test_init_function f` (run f first); `--print_error_code`; `--plugin
    /// LIB` (a C-API plugin, a shared object, loaded first; repeatable);
    /// `--record-arena-peak[=OUT]` (instead of the usual output, measure the arena each
    /// function without arguments needs and write the BEF with an ARENA section to OUT: by
    /// default the input when it is BEF, else the input with the extension `.bef`; bounds
    /// `hostrt compile --arena-bound` derived for this pointer size are kept);
    /// `--profile[=csv]` (after the run, a table per kernel location: calls, time, share,
    /// allocations); `--trace=FILE` (a Chrome/Perfetto trace of the run: docs/profiling.md).
    #[command(override_usage = "hostrt run [FILE] [OPTIONS]")]
    Run {
        /// The input file and the driver options, as described above.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run the `// RUN:` lines of test files in process and check their output (FileCheck,
    /// `expected-*` annotations), as LLVM lit runs TFRT's tests.
    Check {
        /// Test files (`.mlir`), or directories whose `.mlir` files are checked.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// After each file, show every RUN command run, each tool's exit status and its
        /// stderr (FileCheck's failure details included).
        #[arg(short, long)]
        verbose: bool,
        /// C-API plugins (shared objects) to load first, for every RUN line (repeatable).
        #[arg(long = "plugin", value_name = "LIB")]
        plugins: Vec<PathBuf>,
    },
    /// Import a TensorFlow Lite or ONNX model: write it as a program (`.bef`, or readable
    /// `.mlir` text) and print its operators, weight bytes and planned activation arena.
    Import {
        /// The `.tflite` or `.onnx` model.
        model: PathBuf,
        /// The program to write: `.bef` or `.mlir`.
        #[arg(short, long)]
        output: PathBuf,
        /// Also lay int8 convolution and fully connected weights out for x86-64's AVX-512
        /// VNNI loops (`.tflite`; the fully connected ones its AVX2 loop reads too), and float32
        /// convolution filters over 32 KiB for its 512-bit and 256-bit tiles (as `run` and
        /// `infer` do on such a CPU): faster there, those weights held
        /// twice, the same results on every x86-64 CPU (other targets refuse the program).
        #[arg(long)]
        prepack: bool,
        /// The size of a symbolic input dimension of an ONNX model (`--dim batch=4`,
        /// repeatable); an unbound leading one is 1.
        #[arg(long = "dim", value_name = "NAME=N", value_parser = parse_dim)]
        dims: Vec<(String, usize)>,
    },
    /// Run a model's `@main` (`.tflite`, `.onnx`, `.bef` or `.mlir`) on `.npy` inputs; write its
    /// outputs as `out0.npy`, ... and optionally time it.
    Infer {
        /// The model.
        model: PathBuf,
        #[command(flatten)]
        options: infer::InferOptions,
    },
    /// Draw a program's dataflow (`--dot`, or `--svg FILE` through Graphviz) or print an
    /// imported model's memory plan as a timeline (`--plan`): docs/profiling.md.
    Graph {
        /// A `.tflite` or `.onnx` model, or a `.bef` or `.mlir` program.
        input: PathBuf,
        /// Print the graph as Graphviz DOT: kernels, and values with their types (for a model,
        /// each arena buffer with its type, size, offset and lifetime).
        #[arg(long)]
        dot: bool,
        /// Draw it into FILE as SVG (needs Graphviz's `dot`).
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Print a model's memory plan: bytes live per step, each buffer's offset and lifetime,
        /// and the step that sets the arena's size.
        #[arg(long)]
        plan: bool,
    },
    /// Disassemble BEF to MLIR text that `compile` accepts again.
    Dis {
        /// Input `.bef` file (`-` for standard input).
        input: PathBuf,
        /// Omit `loc(...)` annotations.
        #[arg(long)]
        no_locations: bool,
    },
}

/// `NAME=N` of `--dim`.
fn parse_dim(s: &str) -> Result<(String, usize), String> {
    let (name, n) = s.split_once('=').ok_or_else(|| format!("'{s}' is not NAME=N"))?;
    let n = n.parse::<usize>().map_err(|_| format!("'{n}' is not a size"))?;
    Ok((name.to_string(), n))
}

fn read_input(path: &PathBuf) -> Result<Vec<u8>, String> {
    if path.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(|e| format!("<stdin>: {e}"))?;
        return Ok(buf);
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write_output(path: &PathBuf, bytes: &[u8]) -> Result<(), String> {
    if path.as_os_str() == "-" {
        return std::io::stdout().write_all(bytes).map_err(|e| format!("<stdout>: {e}"));
    }
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Scratch memory for BEF verification (4 bytes per register of the largest function).
fn scratch_allocator(bytes: usize) -> Result<Allocator, String> {
    hostrt_std::leaked_arena(bytes.max(4096)).map(|(_, alloc)| alloc).map_err(|e| e.to_string())
}

/// The name a path goes by in messages (`<stdin>` for `-`).
fn display_name(path: &std::path::Path) -> String {
    if path.as_os_str() == "-" { "<stdin>".to_string() } else { path.display().to_string() }
}

/// BEF bytes from a file that holds BEF, a TensorFlow Lite or ONNX model (imported) or MLIR
/// text, told apart by content (the BEF magic, the model's identifier), then by extension
/// (`.onnx`, which has no identifier; `.bef`): a
/// `.bef` file without the magic (empty, or another file) is an error, not text. BEF is
/// verified here, so that an error names the file and the byte offset.
fn bef_of(path: &std::path::Path, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    let name = display_name(path);
    if bytes.starts_with(&hostrt_core::bef::format::MAGIC) {
        let aligned = AlignedBytes::new(&bytes);
        BefFile::load_unresolved(aligned.as_bytes(), scratch_allocator(bytes.len() + 64)?)
            .map_err(|e| format!("{name}: {e}"))?;
        return Ok(bytes);
    }
    if let Some(imported) =
        infer::import_model(path, &bytes, hostrt_import::ImportOptions::for_this_cpu(), &[])?
    {
        return imported.to_bef().map_err(|e| format!("{name}: {e}"));
    }
    let bef_extension = path.extension().is_some_and(|e| e == "bef");
    if bef_extension && bytes.is_empty() {
        return Err(format!("{name}: empty file: not a BEF file (a BEF file starts with its magic bytes)"));
    }
    if bef_extension {
        return Err(format!("{name}: not a BEF file (bad magic at byte offset 0)"));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        format!(
            "{name}: not a BEF file (bad magic), a TensorFlow Lite model or MLIR text (invalid UTF-8 at byte offset {})",
            e.utf8_error().valid_up_to()
        )
    })?;
    hostrt_compiler::compile(&name, &text, WriteOptions::default()).map_err(|e| e.to_string())
}

/// `hostrt run --record-arena-peak`: measure each function's arena, write `bef` with the
/// ARENA section to `out`, and list the figures. Bounds derived for this pointer size
/// (`hostrt compile --arena-bound`) are kept, not measured.
fn record_arena(bef: &[u8], opts: &run::RunOptions, out: &PathBuf) -> Result<(), String> {
    let kernels = run::kernels(opts)?;
    let bytes = AlignedBytes::new(bef);
    let derived = derived_bounds(bytes.as_bytes())?;
    let skip: Vec<u32> = derived.iter().map(|r| r.function).collect();
    let needs = arena_figures::measure(bytes.as_bytes(), &*kernels, &skip)?;
    let mut records = derived;
    records.extend(needs.iter().map(|n| ArenaRecord {
        function: n.function,
        bytes: n.bytes,
        measured: true,
    }));
    let recorded = with_arena_records(bef, &records, size_of::<usize>() as u8)?;
    write_output(out, &recorded)?;
    let mut list = String::new();
    for n in &needs {
        list +=
            &format!("@{}: arena {} bytes (peak {} bytes requested)\n", n.name, n.bytes, n.requested_peak);
    }
    if !skip.is_empty() {
        list += &format!("{} derived bounds kept\n", skip.len());
    }
    list += &format!("recorded in {}\n", out.display());
    // Through write_output: a closed pipe is an error message, not a panic.
    write_output(&PathBuf::from("-"), list.as_bytes())
}

/// The derived (not measured) arena bounds `bef` records for this machine's pointer size.
fn derived_bounds(bef: &[u8]) -> Result<Vec<ArenaRecord>, String> {
    let file =
        BefFile::load_unresolved(bef, scratch_allocator(bef.len() + 64)?).map_err(|e| e.to_string())?;
    Ok((0..file.num_functions() as u32)
        .filter_map(|fi| {
            let need = file.arena_need(fi)?;
            let ours = usize::from(need.pointer_bytes) == size_of::<usize>();
            (!need.measured && ours).then_some(ArenaRecord {
                function: fi,
                bytes: need.bytes,
                measured: false,
            })
        })
        .collect())
}

/// `hostrt compile --arena-bound`: record the bounds derived from `bef` and list them, and
/// the functions without one, on standard error.
fn with_derived_bounds(bef: &[u8]) -> Result<Vec<u8>, String> {
    let kernels = run::kernels(&run::RunOptions::default())?;
    let bytes = AlignedBytes::new(bef);
    let bounds = arena_figures::derive(bytes.as_bytes(), &*kernels)?;
    let mut records = Vec::new();
    for b in &bounds {
        match &b.bytes {
            Ok(n) => {
                eprintln!("@{}: arena {n} bytes at most", b.name);
                records.push(ArenaRecord { function: b.function, bytes: *n, measured: false });
            }
            Err(why) => {
                eprintln!("@{}: no bound ({why}); measure it with `hostrt run --record-arena-peak`", b.name)
            }
        }
    }
    with_arena_records(bef, &records, size_of::<usize>() as u8)
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Run { args } => {
            // `--help` anywhere, as after any other command's arguments (the driver's own
            // parser, TFRT's, knows no `--help`).
            if args.iter().any(|a| a == "--help" || a == "-h") {
                let mut cli = <Cli as clap::CommandFactory>::command();
                if let Some(run) = cli.find_subcommand_mut("run") {
                    run.print_long_help().map_err(|e| e.to_string())?;
                }
                return Ok(());
            }
            let (opts, input) = match run::RunOptions::parse("hostrt run", &args) {
                Ok(parsed) => parsed,
                Err(run::OptionError::Bad(message) | run::OptionError::Unsupported(message)) => {
                    return Err(message);
                }
            };
            let input = PathBuf::from(input);
            let bytes = read_input(&input)?;
            let is_bef = bytes.starts_with(&hostrt_core::bef::format::MAGIC);
            let source = (!is_bef).then(|| String::from_utf8(bytes.clone()).ok()).flatten();
            let bef = bef_of(&input, bytes)?;
            if let Some(out) = &opts.record_arena_peak {
                let out = match out.as_str() {
                    "" if input.as_os_str() == "-" => {
                        return Err("--record-arena-peak needs a file name (=OUT) for standard input".into());
                    }
                    "" if is_bef => input.clone(),
                    "" => input.with_extension("bef"),
                    path => PathBuf::from(path),
                };
                return record_arena(&bef, &opts, &out);
            }
            let diagnostics = match &source {
                Some(text) => run::PrintDiagnostics::with_source(&display_name(&input), text),
                None => run::PrintDiagnostics::default(),
            };
            // Driver errors start `hostrt: error:` as every other error of the command line.
            match run::run("hostrt: error", &bef, &opts, &run::StdIo, &diagnostics) {
                0 => Ok(()),
                code => std::process::exit(i32::from(code)),
            }
        }
        Command::Check { files, verbose, plugins } => {
            // The standard op definitions first, as `hostrt run` does: plugins may register
            // kernels for them.
            hostrt_c::tf::std_ops::register_standard_ops();
            for plugin in &plugins {
                hostrt_c::tf::plugins::load_plugin(plugin)?;
            }
            match check::main(&files, verbose) {
                0 => Ok(()),
                code => std::process::exit(i32::from(code)),
            }
        }
        Command::Compile { input, output, single_stream, strip_locations, arena_bound } => {
            let name = input.display().to_string();
            let bytes = read_input(&input)?;
            let text = String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8: {e}"))?;
            let options =
                WriteOptions { streams: !single_stream, locations: !strip_locations, ..Default::default() };
            let mut bef = hostrt_compiler::compile(&name, &text, options).map_err(|e| e.to_string())?;
            if arena_bound {
                bef = with_derived_bounds(&bef)?;
            }
            write_output(&output, &bef)
        }
        Command::Import { model, output, prepack, dims } => infer::import(&model, &output, prepack, &dims),
        Command::Infer { model, options } => infer::infer(&model, &options),
        Command::Graph { input, dot, svg, plan } => {
            if !dot && svg.is_none() && !plan {
                return Err("graph: say what to write: --dot, --svg FILE or --plan".into());
            }
            graph::graph(&input, &graph::GraphOptions { dot, svg: svg.as_deref(), plan })
        }
        Command::Dis { input, no_locations } => {
            let bytes = AlignedBytes::new(&read_input(&input)?);
            // Scratch for verification: bounded by the file size (a register costs at least
            // one POOL word of 4 bytes, so 4 bytes per register never exceeds the file).
            let scratch = scratch_allocator(bytes.as_bytes().len() + 64)?;
            let file = BefFile::load_unresolved(bytes.as_bytes(), scratch)
                .map_err(|e| format!("{}: {e}", input.display()))?;
            let module = decode(&file).map_err(|e| format!("{}: {e}", input.display()))?;
            let text = print(&module, &PrintOptions { locations: !no_locations });
            write_output(&PathBuf::from("-"), text.as_bytes())
        }
    }
}

fn main() -> ExitCode {
    // Keep every C-API function linked (and, with -rdynamic, exported) for plugins.
    std::hint::black_box(hostrt_c::tf::plugins::EXPORTS.len());
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hostrt: error: {e}");
            ExitCode::FAILURE
        }
    }
}
