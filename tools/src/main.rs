//! `hostrt`: compile MLIR (`tfrt` dialect) to BEF, disassemble BEF, run programs, and check
//! test files against their RUN/CHECK lines.

mod check;
mod run;

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hostrt_compiler::bef::{WriteOptions, decode, write, write_with};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::Allocator;
use hostrt_core::allocator::FixedArena;
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
    },
    /// Run every function of a program (MLIR text or BEF), as TFRT's bef_executor does.
    Run {
        /// `.mlir` or `.bef` file; `-` (the default) reads standard input.
        #[arg(default_value = "-")]
        input: PathBuf,
        /// Work queue: `s` (single-threaded).
        #[arg(long = "work_queue_type", default_value = "s")]
        work_queue_type: String,
        /// `malloc`, `profiled_allocator` or `leak_check_allocator` (the default).
        #[arg(long = "host_allocator_type", default_value = "leak_check_allocator")]
        host_allocator_type: String,
        /// Run only these functions, in this order (comma-separated, repeatable).
        #[arg(long, value_delimiter = ',')]
        functions: Vec<String>,
        /// Run this function first.
        #[arg(long = "test_init_function")]
        test_init_function: Option<String>,
        /// Print error results with their status code.
        #[arg(long = "print_error_code")]
        print_error_code: bool,
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
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(Box::leak(vec![0u8; bytes.max(4096)].into_boxed_slice())).map_err(|e| format!("{e:?}"))?;
    Allocator::register(arena).map_err(|e| format!("{e:?}"))
}

/// BEF bytes from a file that holds either BEF or MLIR text.
fn bef_of(path: &std::path::Path, bytes: Vec<u8>) -> Result<Vec<u8>, String> {
    if bytes.starts_with(&hostrt_core::bef::format::MAGIC) {
        return Ok(bytes);
    }
    let name = if path.as_os_str() == "-" { "<stdin>".to_string() } else { path.display().to_string() };
    let text = String::from_utf8(bytes).map_err(|e| format!("{name}: neither BEF nor UTF-8 text: {e}"))?;
    let module = parse(&name, &text).map_err(|e| e.to_string())?;
    write(&module, Some((&name, &text))).map_err(|e| e.to_string())
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Run {
            input,
            work_queue_type,
            host_allocator_type,
            functions,
            test_init_function,
            print_error_code,
        } => {
            let bytes = read_input(&input).map_err(|e| format!("cannot open input file {e}"))?;
            let bef = bef_of(&input, bytes)?;
            let opts = run::RunOptions {
                work_queue_type,
                host_allocator_type,
                functions,
                test_init_function,
                print_error_code,
            };
            let argv0 = std::env::args().next().unwrap_or_else(|| "hostrt".into());
            match run::run(&argv0, &bef, &opts, &run::StdIo, &run::PrintDiagnostics::default()) {
                0 => Ok(()),
                code => std::process::exit(i32::from(code)),
            }
        }
        Command::Check { files, verbose } => match check::main(&files, verbose) {
            0 => Ok(()),
            code => std::process::exit(i32::from(code)),
        },
        Command::Compile { input, output, single_stream } => {
            let name = input.display().to_string();
            let bytes = read_input(&input)?;
            let text = String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8: {e}"))?;
            let module = parse(&name, &text).map_err(|e| e.to_string())?;
            let options = WriteOptions { streams: !single_stream };
            let bef = write_with(&module, Some((&name, &text)), options).map_err(|e| e.to_string())?;
            write_output(&output, &bef)
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
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
