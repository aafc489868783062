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
/// The firmware example's flash limit (48 KiB).
const EXAMPLE_LIMIT: u64 = 48 * 1024;
/// The minimal image's flash limit (16 KiB).
const MINIMAL_LIMIT: u64 = 16 * 1024;
/// The size issue #16 suggests aiming at for the minimal image (12 KiB), reported only.
const MINIMAL_AIM: u64 = 12 * 1024;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Run cargo in the firmware directory with the toolchain route scripts/setup.sh chose.
fn firmware_cargo(args: &[&str]) -> Result<std::process::Output, String> {
    firmware_cargo_with(args, &[])
}

/// [`firmware_cargo`] with environment variables set for the build script.
fn firmware_cargo_with(
    args: &[&str],
    env: &[(&str, std::ffi::OsString)],
) -> Result<std::process::Output, String> {
    let dir = root().join("examples/firmware");
    let debian = std::env::var("HOSTRT_TOOLCHAIN").is_ok_and(|t| t == "debian");
    let mut cmd = Command::new("cargo");
    if debian {
        let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
        let config = root().join("targets/debian-toolchain.toml");
        cmd.env("PATH", path).env("RUSTC_BOOTSTRAP", "1").arg("--config").arg(config).arg("-Zconfig-include");
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.args(args).current_dir(&dir).output().map_err(|e| format!("cargo: {e}"))
}

#[derive(Debug, Default)]
pub(crate) struct Sizes {
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
    /// Whether `.rodata` holds diagnostics' message templates ([`A_TEMPLATE`]).
    message_templates: bool,
}

/// Part of one of the executor's diagnostic templates: in `.rodata` exactly when the image
/// links diagnostics' message text (hostrt-core's `diagnostic-text` feature).
const A_TEMPLATE: &[u8] = b"bytes for an executor frame";

pub(crate) fn measure(elf: &Path) -> Result<Sizes, String> {
    let bytes = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let file = object::File::parse(&*bytes).map_err(|e| format!("{}: {e}", elf.display()))?;
    let mut s = Sizes::default();
    for sec in file.sections() {
        let size = sec.size();
        match sec.name().unwrap_or("") {
            ".vector_table" => s.vector_table += size,
            ".text" => s.text += size,
            ".rodata" => {
                s.rodata += size;
                let data = sec.data().map_err(|e| format!("{}: {e}", elf.display()))?;
                s.message_templates |= data.windows(A_TEMPLATE.len()).any(|w| w == A_TEMPLATE);
            }
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

/// The arena peak the firmware reports when run under QEMU (if QEMU is installed): its
/// `arena:` line is an `info` frame on semihosting's stdout, decoded with the image's ELF.
fn arena_peak(elf: &Path) -> Option<u64> {
    let out = firmware_cargo(&["run", "--release", "--quiet", "--bin", "hostrt-firmware-example"]).ok()?;
    let elf = std::fs::read(elf).ok()?;
    let (mut text, mut err) = (Vec::new(), Vec::new());
    defmt::decode(&elf, &out.stdout, &mut text, &mut err).ok()?;
    let err = String::from_utf8_lossy(&err);
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

const TABLE_START: &str = "<!-- cargo xtask size: component table -->";
const TABLE_END: &str = "<!-- end of component table -->";
/// Cells of the documented table may differ from the measurement by this many bytes (or
/// by the percentage tolerance, whichever is larger) before the table counts as stale.
const CELL_SLACK: u64 = 64;
/// The images of the table and the order of its rows.
const TABLE_IMAGES: [(&str, &str); 4] = [
    ("minimal", "minimal"),
    ("hostrt-firmware-example", "example"),
    ("digits", "digits (f32)"),
    ("digits_q8", "digits_q8 (int8)"),
];
const TABLE_ROWS: [&str; 22] = [
    "BEF reader and verifier",
    "executor",
    "async values",
    "kernel interface (frames, adaptors, registry)",
    "allocator",
    "host context and work queue",
    "diagnostics",
    "kernels: integer",
    "kernels: float",
    "kernels: control",
    "kernels: print",
    "kernels: other basic",
    "tensor kernels",
    "DSP kernels",
    "driver (printing results)",
    "other hostrt",
    "Rust core library",
    "compiler builtins (memcpy, ...)",
    "start-up, the image's own code, other crates",
    "constants and strings",
    "embedded BEF programs",
    "vector table",
];

/// The markdown table of flash bytes per component and image.
fn component_table() -> Result<String, String> {
    let mut cols = Vec::new();
    for (bin, _) in TABLE_IMAGES {
        cols.push(components::measure(
            &root().join(format!("examples/firmware/target/{TARGET}/release/{bin}")),
        )?);
    }
    let mut t = String::from("| component |");
    for (_, title) in TABLE_IMAGES {
        t += &format!(" {title} |");
    }
    t += "\n|---|";
    t += &"---:|".repeat(TABLE_IMAGES.len());
    t += "\n";
    for row in TABLE_ROWS {
        if cols.iter().all(|c| c.get(row).copied().unwrap_or(0) == 0) {
            continue;
        }
        t += &format!("| {row} |");
        for c in &cols {
            t += &format!(" {} |", c.get(row).copied().unwrap_or(0));
        }
        t += "\n";
    }
    if let Some(extra) = cols.iter().flat_map(|c| c.keys()).find(|k| !TABLE_ROWS.contains(k)) {
        return Err(format!("component '{extra}' has no row in the table"));
    }
    t += "| **total flash** |";
    for c in &cols {
        t += &format!(" **{}** |", c.values().sum::<u64>());
    }
    t += "\n";
    Ok(t)
}

/// The first cell of `documented` that differs from `measured` by more than the tolerance.
fn stale_cell(documented: &str, measured: &str) -> Option<String> {
    let rows = |t: &str| -> Vec<(String, Vec<u64>)> {
        t.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| component"))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
                let nums =
                    cells[1..].iter().map(|c| c.trim_matches('*').parse().unwrap_or(u64::MAX)).collect();
                (cells[0].to_string(), nums)
            })
            .collect()
    };
    let (doc, now) = (rows(documented), rows(measured));
    if doc.iter().map(|r| &r.0).ne(now.iter().map(|r| &r.0)) {
        return Some("its rows differ from the measured components".into());
    }
    for ((name, d), (_, m)) in doc.iter().zip(&now) {
        for (i, (d, m)) in d.iter().zip(m).enumerate() {
            let slack = (m * TOLERANCE_PERCENT / 100).max(CELL_SLACK);
            if d.abs_diff(*m) > slack {
                return Some(format!("'{name}' for {} says {d} bytes, measured {m}", TABLE_IMAGES[i].1));
            }
        }
    }
    None
}

fn run() -> Result<bool, String> {
    let update = std::env::args().any(|a| a == "--update-baseline");
    // The minimal image last, without diagnostics' text (its binary replaces the one `--bins`
    // made with the default features).
    for args in [&["--bins"][..], &["--bin", "minimal", "--no-default-features"]] {
        let build =
            firmware_cargo(&[&["build", "--release", "--quiet", "--target", TARGET][..], args].concat())?;
        if !build.status.success() {
            return Err(format!("firmware build failed:\n{}", String::from_utf8_lossy(&build.stderr)));
        }
    }
    let elf = root().join(format!("examples/firmware/target/{TARGET}/release/hostrt-firmware-example"));
    let s = measure(&elf)?;
    let flash = flash_of(&s);
    let minimal = measure(&root().join(format!("examples/firmware/target/{TARGET}/release/minimal")))?;
    let minimal_flash = flash_of(&minimal);
    let ram_static = s.data + s.bss - s.arena_buffer;
    let peak = arena_peak(&elf);
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
    // Neither the minimal image nor the example, which prints through defmt, may link the
    // formatter (docs/porting.md: "No formatter", "Output without core::fmt").
    let mut ok = true;
    for (image, sizes) in [("minimal", &minimal), ("example", &s)] {
        if sizes.fmt_symbols.is_empty() {
            println!("  {image} image links no core::fmt symbol -> ok");
        } else {
            ok = false;
            println!("  {image} image links core::fmt -> FAIL: {}", sizes.fmt_symbols.join(", "));
        }
    }
    // The minimal image reports errors as codes only: no message template in flash. The
    // example prints messages, so it must hold them (what shows that the check can fail).
    for (image, sizes, want) in [("minimal", &minimal, false), ("example", &s, true)] {
        if sizes.message_templates == want {
            println!(
                "  {image} image {} diagnostics' message templates -> ok",
                if want { "holds" } else { "holds no" }
            );
        } else {
            ok = false;
            println!(
                "  {image} image: diagnostics' message templates {} -> FAIL",
                if want { "missing" } else { "linked" }
            );
        }
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
    let table = component_table()?;
    print!("flash by component (bytes):\n{table}");
    let porting = root().join("docs/porting.md");
    let docs = std::fs::read_to_string(&porting).map_err(|e| format!("{}: {e}", porting.display()))?;
    let (Some(start), Some(end)) = (docs.find(TABLE_START), docs.find(TABLE_END)) else {
        return Err(format!("{}: no size table markers", porting.display()));
    };
    let documented = &docs[start + TABLE_START.len()..end];
    if update {
        let text = format!("{}{TABLE_START}\n{table}{}", &docs[..start], &docs[end..]);
        std::fs::write(&porting, text).map_err(|e| e.to_string())?;
        println!("docs/porting.md size table updated");
    } else if let Some(stale) = stale_cell(documented, &table) {
        ok = false;
        println!("  docs/porting.md size table -> FAIL: {stale}; run cargo xtask size --update-baseline");
    } else {
        println!(
            "  docs/porting.md size table matches (within {TOLERANCE_PERCENT}% or {CELL_SLACK} bytes per cell) -> ok"
        );
    }
    println!("example image flash by crate (symbols):");
    let mut crates: Vec<_> = s.by_crate.iter().collect();
    crates.sort_by(|a, b| b.1.cmp(a.1));
    for (k, v) in crates {
        println!("    {v:>7}  {k}");
    }
    // Issue #16's limits: both images must stay within theirs; the distance from the
    // minimal image's 12 KiB aim is reported.
    for (image, bytes, limit) in
        [("example", flash, EXAMPLE_LIMIT), ("minimal", minimal_flash, MINIMAL_LIMIT)]
    {
        if bytes > limit {
            ok = false;
            println!("  {image} flash {bytes} bytes exceeds the {limit}-byte limit -> FAIL");
        } else {
            println!("  {image} flash {bytes} bytes within the {limit}-byte limit -> ok");
        }
    }
    println!(
        "  minimal flash: {} bytes above the {MINIMAL_AIM}-byte aim",
        minimal_flash.saturating_sub(MINIMAL_AIM)
    );
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

mod components;
mod defmt;
mod libs;
mod mcu;
/// The minimal image's memory routines, tested here on the host (targets/small_mem.rs).
#[cfg(test)]
#[path = "../../targets/small_mem.rs"]
mod small_mem;

/// The exit status of subcommand `name`: success for `Ok(true)`, failure for `Ok(false)`
/// (it printed why) and for an error, which is printed.
fn exit(name: &str, result: Result<bool, String>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask {name}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(2).collect();
    match std::env::args().nth(1).as_deref() {
        Some("libs") => {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .unwrap_or(std::path::Path::new("."));
            exit("libs", libs::run(root, &args))
        }
        Some("defmt") => exit("defmt", defmt::run(&args).map(|()| true)),
        Some("mcu") => exit("mcu", mcu::run(&args).map(|()| true)),
        Some("size") => exit("size", run()),
        _ => {
            eprintln!(
                "usage: cargo xtask size [--update-baseline] | cargo xtask libs [TARGET...] | cargo xtask defmt ELF [FRAMES] | cargo xtask mcu MODEL.(tflite|onnx) --input X.npy [--board mps2-an386] [--output-dir DIR]"
            );
            ExitCode::FAILURE
        }
    }
}
