//! `cargo xtask mcu MODEL.(tflite|onnx) --input X.npy [--input ...] [--board mps2-an386]
//! [--output-dir DIR] [--dump-tensors DIR]`: what a model costs on a Cortex-M before touching
//! a board, and what it computes there layer by layer. Imports the
//! model on the host (its errors come first and name the operator), builds the firmware image
//! `examples/firmware/src/bin/mcu.rs` embedding it (build.rs reads `HOSTRT_MCU_MODEL` and
//! `HOSTRT_MCU_INPUTS`), runs it under QEMU with `-icount shift=0`, writes its outputs as
//! `out0.npy`, ... and prints instructions per inference, the arena (planned and measured),
//! the stack's high-water mark, and flash split into runtime and model. With
//! `--dump-tensors`, the image returns every operator's output too (each in its own arena
//! slot, so the arena is larger) and they are written as `hostrt infer --dump-tensors` writes
//! them (`hostrt_import::dump`), for `scripts/compare_layers.py --on mcu`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Boards the command runs on: name, what it is, the firmware's target.
const BOARDS: &[(&str, &str)] = &[("mps2-an386", "Cortex-M4F with the DSP extension, QEMU")];

#[derive(Debug)]
struct Args {
    model: PathBuf,
    inputs: Vec<PathBuf>,
    board: String,
    output_dir: PathBuf,
    dump_tensors: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut model = None;
    let mut inputs = Vec::new();
    let mut board = BOARDS[0].0.to_string();
    let mut output_dir = PathBuf::from(".");
    let mut dump_tensors = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match a.as_str() {
            "--input" => inputs.push(PathBuf::from(value("--input")?)),
            "--board" => board = value("--board")?,
            "--output-dir" => output_dir = PathBuf::from(value("--output-dir")?),
            "--dump-tensors" => dump_tensors = Some(PathBuf::from(value("--dump-tensors")?)),
            flag if flag.starts_with('-') => return Err(format!("unknown option {flag}")),
            path if model.is_none() => model = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument {extra} (one model per run)")),
        }
    }
    let model = model.ok_or("no model given (cargo xtask mcu MODEL.tflite|MODEL.onnx --input X.npy)")?;
    if !BOARDS.iter().any(|(b, _)| *b == board) {
        let known: Vec<&str> = BOARDS.iter().map(|(b, _)| *b).collect();
        return Err(format!("unknown board {board} (boards: {})", known.join(", ")));
    }
    Ok(Args { model, inputs, board, output_dir, dump_tensors })
}

/// The figures and outputs the image printed.
#[derive(Debug, Default, PartialEq)]
struct Report {
    instructions: String,
    arena: String,
    stack: String,
    /// `(type, shape, bytes)` per output.
    outputs: Vec<(String, Vec<usize>, Vec<u8>)>,
}

/// Reads the image's standard output (`out<i>: <type> [dims] <hex>` lines) and standard
/// error (its report lines).
fn read_report(stdout: &str, stderr: &str) -> Result<Report, String> {
    let mut r = Report::default();
    for line in stderr.lines() {
        if let Some(v) = line.strip_prefix("instructions: ") {
            r.instructions = v.to_string();
        } else if let Some(v) = line.strip_prefix("arena: ") {
            r.arena = v.to_string();
        } else if let Some(v) = line.strip_prefix("stack: ") {
            r.stack = v.to_string();
        }
    }
    for line in stdout.lines().filter(|l| l.starts_with("out")) {
        let bad = || format!("unreadable output line from the image: {line}");
        let (_, rest) = line.split_once(": ").ok_or_else(bad)?;
        let (dtype, rest) = rest.split_once(' ').ok_or_else(bad)?;
        let (dims, hex) = rest.strip_prefix('[').and_then(|r| r.split_once("] ")).ok_or_else(bad)?;
        let shape = dims
            .split(", ")
            .filter(|d| !d.is_empty())
            .map(|d| d.parse::<usize>().map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        let bytes = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad()))
            .collect::<Result<Vec<_>, _>>()?;
        r.outputs.push((dtype.to_string(), shape, bytes));
    }
    Ok(r)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let absolute = |p: &Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let model = absolute(&a.model)?;
    // The import's own errors (an unsupported operator, a malformed file) before any build.
    let bytes = std::fs::read(&model).map_err(|e| format!("{}: {e}", model.display()))?;
    let options =
        hostrt_import::ImportOptions { dump_tensors: a.dump_tensors.is_some(), ..Default::default() };
    let imported = if model.extension().is_some_and(|e| e == "onnx") {
        hostrt_import::onnx_file(&model, &[], options)
    } else {
        hostrt_import::tflite_with(&bytes, options)
    }
    .map_err(|e| format!("{}: {e}", model.display()))?;
    if a.inputs.len() != imported.inputs.len() {
        let want: Vec<String> = imported.inputs.iter().map(|(t, s)| format!("{t} {s:?}")).collect();
        return Err(format!(
            "{} takes {} input(s) ({}); {} given with --input",
            a.model.display(),
            want.len(),
            want.join(", "),
            a.inputs.len()
        ));
    }
    for (path, (dtype, shape)) in a.inputs.iter().zip(&imported.inputs) {
        let t = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let t = hostrt_import::npy::read(&t).map_err(|e| format!("{}: {e}", path.display()))?;
        if t.dtype != *dtype || t.shape != *shape {
            return Err(format!(
                "{}: a {} {:?} tensor, where the model's input is {dtype} {shape:?}",
                path.display(),
                t.dtype,
                t.shape
            ));
        }
    }
    let inputs: Vec<PathBuf> = a.inputs.iter().map(|p| absolute(p)).collect::<Result<_, _>>()?;
    let joined = std::env::join_paths(&inputs).map_err(|e| format!("input paths: {e}"))?;
    let dump = if a.dump_tensors.is_some() { "1" } else { "0" };
    let env: [(&str, OsString); 3] = [
        ("HOSTRT_MCU_MODEL", model.clone().into()),
        ("HOSTRT_MCU_INPUTS", joined),
        ("HOSTRT_MCU_DUMP", dump.into()),
    ];
    eprintln!("building and running {} on {} ...", a.model.display(), a.board);
    let out = crate::firmware_cargo_with(&["run", "--release", "--quiet", "--bin", "mcu"], &env)?;
    // The image reports in defmt frames on semihosting's stdout: decoded with its ELF, its
    // outputs come out on standard output and its figures on standard error.
    // Cargo's CARGO_TARGET_DIR, when set, is relative to the firmware crate it builds.
    let firmware = crate::root().join("examples/firmware");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(firmware.join("target"), |d| firmware.join(d));
    let elf = target.join("thumbv7em-none-eabihf/release/mcu");
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let decoded = std::fs::read(&elf)
        .map_err(|e| format!("{}: {e}", elf.display()))
        .and_then(|image| crate::defmt::decode(&image, &out.stdout, &mut stdout, &mut stderr));
    let (stdout, stderr) = (String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
    let qemu = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || decoded.is_err() {
        let why = decoded.err().map_or(String::new(), |e| format!("; its frames: {e}"));
        return Err(format!("the image failed ({}{why}):\n{stdout}{stderr}{qemu}", out.status));
    }
    let r = read_report(&stdout, &stderr)?;
    std::fs::create_dir_all(&a.output_dir).map_err(|e| format!("{}: {e}", a.output_dir.display()))?;
    let mut results = Vec::new();
    for (i, (dtype, shape, data)) in r.outputs.iter().enumerate() {
        let dtype = hostrt_import::npy::dtype_name(dtype).map_err(|e| format!("result {i}: {e}"))?;
        results.push(hostrt_import::npy::NpyTensor { dtype, shape: shape.clone(), data: data.clone() });
    }
    if results.len() != imported.results() {
        let want = imported.results();
        return Err(format!("the image printed {} results, where the program returns {want}", results.len()));
    }
    let mut written = Vec::new();
    for (i, t) in results.iter().take(imported.outputs.len()).enumerate() {
        let path = a.output_dir.join(format!("out{i}.npy"));
        std::fs::write(&path, hostrt_import::npy::write(t)?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(format!("{} ({} {:?})", path.display(), t.dtype, t.shape));
    }
    if let Some(dir) = &a.dump_tensors {
        hostrt_import::dump::write(dir, &imported.dumped, &results)?;
        written.push(format!(
            "{} operator outputs in {} (listed in layers.txt)",
            imported.dumped.len(),
            dir.display()
        ));
    }
    let s = crate::measure(&elf)?;
    let flash = s.vector_table + s.text + s.rodata + s.data;
    let board = BOARDS.iter().find(|(b, _)| *b == a.board).map_or("", |(_, d)| d);
    println!("model: {} ({} bytes) on {} ({board})", a.model.display(), bytes.len(), a.board);
    println!("instructions: {}", r.instructions);
    println!(
        "arena: {} (activations planned at import: {} bytes)",
        r.arena.split_once("; ").map_or(r.arena.as_str(), |(_, m)| m),
        imported.report.arena_bytes
    );
    println!("stack: {}", r.stack);
    println!(
        "flash: {flash} bytes = runtime {} + model {} (the program, weights {} bytes)",
        flash - s.programs,
        s.programs,
        imported.report.weight_bytes
    );
    println!("RAM: {} bytes of static data, the arena's buffer included", s.data + s.bss);
    println!("outputs: {}", written.join(", "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_images_report_and_outputs() {
        let stdout = "out0: i8 [1, 3] 7f80ff\nout1: f32 [] 0000803f\n";
        let stderr = "m: ran\ninstructions: 12 per inference (first 14), load 3\narena: a; b\nstack: 9 bytes at most\n";
        let r = read_report(stdout, stderr).unwrap();
        assert_eq!(r.instructions, "12 per inference (first 14), load 3");
        assert_eq!(r.stack, "9 bytes at most");
        assert_eq!(r.outputs[0], ("i8".into(), vec![1, 3], vec![0x7f, 0x80, 0xff]));
        assert_eq!(r.outputs[1], ("f32".into(), vec![], vec![0, 0, 0x80, 0x3f]));
        assert!(read_report("out0: i8 [1, x] 00\n", "").unwrap_err().contains("unreadable"));
        assert!(read_report("out0: i8 [1] 0g\n", "").unwrap_err().contains("unreadable"));
    }

    #[test]
    fn arguments() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let a = parse(&args(&["m.tflite", "--input", "x.npy", "--output-dir", "o"])).unwrap();
        assert_eq!(
            (a.model, a.inputs, a.board, a.output_dir, a.dump_tensors),
            ("m.tflite".into(), vec!["x.npy".into()], "mps2-an386".into(), "o".into(), None)
        );
        let a = parse(&args(&["m.onnx", "--dump-tensors", "layers"])).unwrap();
        assert_eq!(a.dump_tensors, Some("layers".into()));
        assert!(parse(&args(&["m.tflite", "--board", "esp32"])).unwrap_err().contains("boards: mps2-an386"));
        assert!(parse(&args(&["--input"])).unwrap_err().contains("--input needs a value"));
        assert!(parse(&args(&[])).unwrap_err().contains("no model"));
    }
}
