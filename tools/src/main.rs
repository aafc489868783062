//! `hostrt`: compile MLIR (`tfrt` dialect) to BEF and disassemble BEF back to MLIR.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hostrt_compiler::bef::{AlignedBytes, decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::Allocator;
use hostrt_core::allocator::FixedArena;
use hostrt_core::bef::BefFile;

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

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Compile { input, output } => {
            let name = input.display().to_string();
            let bytes = read_input(&input)?;
            let text = String::from_utf8(bytes).map_err(|e| format!("{name}: not UTF-8: {e}"))?;
            let module = parse(&name, &text).map_err(|e| e.to_string())?;
            let bef = write(&module, Some((&name, &text))).map_err(|e| e.to_string())?;
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
