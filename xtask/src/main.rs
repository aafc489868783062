//! `cargo xtask size [--update-baseline]`: build `examples/firmware` for thumbv7em-none-eabihf
//! at opt-level `z` with LTO, report flash (.vector_table + .text + .rodata + .data) and RAM
//! (.data + .bss, with the static arena buffer shown apart from the arena's measured peak),
//! split by crate, and compare with `examples/firmware/size-baseline.txt`: growth beyond the
//! tolerance there fails unless the baseline is updated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use object::{Object, ObjectSection, ObjectSymbol};

const TARGET: &str = "thumbv7em-none-eabihf";
const TOLERANCE_PERCENT: u64 = 3;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Run cargo in the firmware directory with the toolchain route scripts/setup.sh chose.
fn firmware_cargo(args: &[&str]) -> Result<std::process::Output, String> {
    let dir = root().join("examples/firmware");
    let debian = std::env::var("HOSTRT_TOOLCHAIN").is_ok_and(|t| t == "debian");
    let mut cmd = Command::new("cargo");
    if debian {
        let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
        let config = root().join("targets/debian-toolchain.toml");
        cmd.env("PATH", path).env("RUSTC_BOOTSTRAP", "1").arg("--config").arg(config).arg("-Zconfig-include");
    }
    cmd.args(args).current_dir(&dir).output().map_err(|e| format!("cargo: {e}"))
}

#[derive(Debug, Default)]
struct Sizes {
    vector_table: u64,
    text: u64,
    rodata: u64,
    data: u64,
    bss: u64,
    arena_buffer: u64,
    /// Embedded BEF programs (`include_bef!` statics).
    programs: u64,
    by_crate: BTreeMap<String, u64>,
    /// Flash symbols of `core::fmt` (the formatter, `Display`/`Debug` impls).
    fmt_symbols: Vec<String>,
}

fn measure(elf: &Path) -> Result<Sizes, String> {
    let bytes = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", elf.display()))?;
    let mut s = Sizes::default();
    for sec in file.sections() {
        let size = sec.size();
        match sec.name().unwrap_or("") {
            ".vector_table" => s.vector_table += size,
            ".text" => s.text += size,
            ".rodata" => s.rodata += size,
            ".data" => s.data += size,
            ".bss" | ".uninit" => s.bss += size,
            _ => {}
        }
    }
    for sym in file.symbols() {
        let name = format!("{:#}", rustc_demangle::demangle(sym.name().unwrap_or("")));
        // The arena's memory: the static that `hostrt_core::static_buffer!` expands to.
        if name.ends_with("::BUFFER") {
            s.arena_buffer = sym.size();
        }
        if name.ends_with("::BEF") {
            s.programs += sym.size();
        }
        let in_flash = sym
            .section_index()
            .and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|sec| matches!(sec.name().unwrap_or(""), ".text" | ".rodata" | ".vector_table"));
        if in_flash && sym.size() > 0 && name.contains("core::fmt") {
            s.fmt_symbols.push(name.clone());
        }
        if in_flash && sym.size() > 0 {
            let path = name.trim_start_matches('<');
            let krate = match path.split_once("::") {
                Some((k, _)) if !k.contains(' ') && !k.is_empty() => k.to_string(),
                _ => "(unnamed: outlined code, literals, runtime)".to_string(),
            };
            *s.by_crate.entry(krate).or_default() += sym.size();
        }
    }
    Ok(s)
}

/// The arena peak the firmware reports when run under QEMU (if QEMU is installed).
fn arena_peak() -> Option<u64> {
    let out = firmware_cargo(&["run", "--release", "--quiet", "--bin", "hostrt-firmware-example"]).ok()?;
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.starts_with("arena:"))?;
    line.split("peak ").nth(1)?.split_whitespace().next()?.parse().ok()
}

fn read_baseline(path: &Path) -> Option<(u64, u64, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let get = |k: &str| text.lines().find_map(|l| l.strip_prefix(k)?.trim().parse::<u64>().ok());
    Some((get("flash_bytes =")?, get("ram_bytes =")?, get("minimal_flash_bytes =")?))
}

/// Flash of a built image: .vector_table + .text + .rodata + .data.
fn flash_of(s: &Sizes) -> u64 {
    s.vector_table + s.text + s.rodata + s.data
}

fn run() -> Result<bool, String> {
    let update = std::env::args().any(|a| a == "--update-baseline");
    let build = firmware_cargo(&["build", "--release", "--quiet", "--target", TARGET, "--bins"])?;
    if !build.status.success() {
        return Err(format!("firmware build failed:\n{}", String::from_utf8_lossy(&build.stderr)));
    }
    let elf = root().join(format!("examples/firmware/target/{TARGET}/release/hostrt-firmware-example"));
    let s = measure(&elf)?;
    let flash = flash_of(&s);
    let minimal = measure(&root().join(format!("examples/firmware/target/{TARGET}/release/minimal")))?;
    let minimal_flash = flash_of(&minimal);
    let ram_static = s.data + s.bss - s.arena_buffer;
    let peak = arena_peak();
    println!("firmware example, {TARGET}, opt-level z, LTO:");
    println!(
        "  flash {flash} bytes  (.vector_table {}, .text {}, .rodata {}, .data {})",
        s.vector_table, s.text, s.rodata, s.data
    );
    println!(
        "  RAM   {} bytes static (.data {}, .bss {} of which arena buffer {})",
        s.data + s.bss,
        s.data,
        s.bss,
        s.arena_buffer
    );
    match peak {
        Some(p) => println!(
            "  RAM needed: {ram_static} static outside the arena + {p} arena peak = {} bytes",
            ram_static + p
        ),
        None => println!("  arena peak: not measured (QEMU unavailable)"),
    }
    println!(
        "minimal image (BEF reader + executor + the 5 kernels fib uses, no printing): flash {minimal_flash} bytes \
         (.text {}, .rodata {}), static RAM {} bytes (arena buffer {})",
        minimal.text,
        minimal.rodata,
        minimal.data + minimal.bss,
        minimal.arena_buffer
    );
    // The minimal image must link no formatter (docs/porting.md: diagnostics without core::fmt).
    let mut ok = true;
    if minimal.fmt_symbols.is_empty() {
        println!("  minimal image links no core::fmt symbol -> ok");
    } else {
        ok = false;
        println!("  minimal image links core::fmt -> FAIL: {}", minimal.fmt_symbols.join(", "));
    }
    for (bin, what) in [
        ("digits", "64-32-10 MLP, tensor kernels, weights and 360 test images in flash"),
        ("digits_q8", "the MLP in int8 on the dsp.* kernels, DSP and portable tables"),
    ] {
        let m = measure(&root().join(format!("examples/firmware/target/{TARGET}/release/{bin}")))?;
        println!(
            "{bin} image ({what}): flash {} bytes, of which the program {} bytes and code and constants {} \
             bytes; static RAM {} bytes (arena buffer {})",
            flash_of(&m),
            m.programs,
            flash_of(&m) - m.programs,
            m.data + m.bss,
            m.arena_buffer
        );
    }
    println!("example image flash by crate (symbols):");
    let mut crates: Vec<_> = s.by_crate.iter().collect();
    crates.sort_by(|a, b| b.1.cmp(a.1));
    for (k, v) in crates {
        println!("    {v:>7}  {k}");
    }
    let ram = ram_static + peak.unwrap_or(0);
    let baseline = root().join("examples/firmware/size-baseline.txt");
    if update {
        let text = format!(
            "# cargo xtask size baseline ({TARGET}, opt-level z, LTO). CI fails when flash or RAM\n\
             # grows by more than {TOLERANCE_PERCENT}% over these; update with `cargo xtask size --update-baseline`.\n\
             flash_bytes = {flash}\nram_bytes = {ram}\nminimal_flash_bytes = {minimal_flash}\n"
        );
        std::fs::write(&baseline, text).map_err(|e| e.to_string())?;
        println!("baseline updated: flash {flash}, RAM {ram}");
        return Ok(ok);
    }
    let Some((base_flash, base_ram, base_minimal)) = read_baseline(&baseline) else {
        return Err(format!(
            "{} missing or malformed; run cargo xtask size --update-baseline",
            baseline.display()
        ));
    };
    let limit = |b: u64| b + b * TOLERANCE_PERCENT / 100;
    for (what, now, base) in
        [("flash", flash, base_flash), ("RAM", ram, base_ram), ("minimal flash", minimal_flash, base_minimal)]
    {
        if what == "RAM" && peak.is_none() {
            continue;
        }
        let verdict = if now > limit(base) {
            ok = false;
            "FAIL: grew beyond tolerance"
        } else {
            "ok"
        };
        println!("  {what}: {now} bytes vs baseline {base} (+{TOLERANCE_PERCENT}% allowed) -> {verdict}");
    }
    Ok(ok)
}

mod libs;

fn main() -> ExitCode {
    match std::env::args().nth(1).as_deref() {
        Some("libs") => {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or(std::path::Path::new("."));
            match libs::run(root) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("xtask libs: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("size") => match run() {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                eprintln!("xtask size: {e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo xtask size [--update-baseline] | cargo xtask libs");
            ExitCode::FAILURE
        }
    }
}
