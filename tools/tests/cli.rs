//! The `hostrt` command line, run as a user would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hostrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().expect("run hostrt")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostrt-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const PROGRAM: &str = "func.func @main() -> i32 {
  %x = tfrt.constant.i32 40
  %y = tfrt.constant.i32 2
  %z = tfrt.add.i32 %x, %y
  tfrt.return %z : i32
}
";

#[test]
fn compile_dis_compile_is_byte_identical() {
    let src = tmp("ok.mlir");
    std::fs::write(&src, PROGRAM).unwrap();
    let bef = tmp("ok.bef");
    let out = hostrt(&["compile", src.to_str().unwrap(), "-o", bef.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dis = hostrt(&["dis", bef.to_str().unwrap()]);
    assert!(dis.status.success());
    let text = String::from_utf8(dis.stdout).unwrap();
    assert!(text.contains("tfrt.add.i32 %0, %1"), "{text}");
    let src2 = tmp("ok2.mlir");
    std::fs::write(&src2, &text).unwrap();
    let bef2 = tmp("ok2.bef");
    assert!(hostrt(&["compile", src2.to_str().unwrap(), "-o", bef2.to_str().unwrap()]).status.success());
    assert_eq!(std::fs::read(&bef).unwrap(), std::fs::read(&bef2).unwrap());
}

#[test]
fn strip_locations_keeps_the_program_without_its_positions() {
    let src = tmp("strip.mlir");
    std::fs::write(&src, PROGRAM).unwrap();
    let (full, stripped) = (tmp("full.bef"), tmp("stripped.bef"));
    assert!(hostrt(&["compile", src.to_str().unwrap(), "-o", full.to_str().unwrap()]).status.success());
    let args = ["compile", src.to_str().unwrap(), "-o", stripped.to_str().unwrap(), "--strip-locations"];
    assert!(hostrt(&args).status.success());
    let (full_len, stripped_len) =
        (std::fs::metadata(&full).unwrap().len(), std::fs::metadata(&stripped).unwrap().len());
    assert!(stripped_len < full_len, "{stripped_len} bytes stripped, {full_len} with locations");
    let dis = |bef: &Path| String::from_utf8(hostrt(&["dis", bef.to_str().unwrap()]).stdout).unwrap();
    assert!(dis(&full).contains("strip.mlir"), "{}", dis(&full));
    assert!(!dis(&stripped).contains("strip.mlir"), "{}", dis(&stripped));
    let run = |bef: &Path| hostrt(&["run", bef.to_str().unwrap()]).stdout;
    assert_eq!(run(&stripped), run(&full));
}

#[test]
fn syntax_and_type_errors_name_file_line_col_and_show_the_line() {
    let src = tmp("bad.mlir");
    std::fs::write(&src, PROGRAM.replace("%x, %y", "%x, %nope")).unwrap();
    let out = hostrt(&["compile", src.to_str().unwrap(), "-o", tmp("bad.bef").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let want = format!("{}:4:25: use of undeclared SSA value name '%nope'", src.display());
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("  %z = tfrt.add.i32 %x, %nope"), "offending line shown: {err}");

    std::fs::write(&src, "func.func @f() {\n  %x = \"unterminated\n}\n").unwrap();
    let out = hostrt(&["compile", src.to_str().unwrap(), "-o", tmp("bad.bef").to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(&format!("{}:2:", src.display())), "{err}");
}

#[test]
fn corrupt_bef_is_a_clear_error() {
    let src = tmp("c.mlir");
    std::fs::write(&src, PROGRAM).unwrap();
    let bef = tmp("c.bef");
    assert!(hostrt(&["compile", src.to_str().unwrap(), "-o", bef.to_str().unwrap()]).status.success());
    let mut bytes = std::fs::read(&bef).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&bef, &bytes).unwrap();
    let out = hostrt(&["dis", bef.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("invalid BEF at byte offset"), "{err}");
    let missing = hostrt(&["dis", Path::new("/nonexistent/x.bef").to_str().unwrap()]);
    assert!(String::from_utf8(missing.stderr).unwrap().contains("/nonexistent/x.bef"));
}

const RUN_PROGRAM: &str = "func.func @add(%a: i32) -> i32 {
  tfrt.return %a : i32
}
func.func @main() -> (i32, i1, f32, !tfrt.chain) {
  %x = tfrt.constant.i32 40
  %y = tfrt.constant.i32 2
  %z = tfrt.add.i32 %x, %y
  %t = tfrt.constant.i1 true
  %f = tfrt.constant.f32 -0.25
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %z, %ch
  tfrt.return %z, %t, %f, %ch1 : i32, i1, f32, !tfrt.chain
}
func.func @bad() -> i32 {
  %x = tfrt.constant.i32 1
  %zero = tfrt.constant.i32 0
  %q, %r = tfrt.div.i32 %x, %zero
  tfrt.return %q : i32
}
";

#[test]
fn run_follows_the_driver_contract() {
    let src = tmp("run.mlir");
    std::fs::write(&src, RUN_PROGRAM).unwrap();
    let out = hostrt(&["run", src.to_str().unwrap(), "--functions", "main,add"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout,
        "Choosing memory leak check allocator.\nChoosing single-threaded work queue.\n--- Running 'main':\nint32 = 42\n\
         'main' returned 42,1,-2.500000e-01,!tfrt.chain value\n--- Not running 'add' because it has arguments.\n"
    );
    assert!(out.status.success());
}

#[test]
fn run_reports_runtime_errors_with_locations() {
    let src = tmp("err.mlir");
    std::fs::write(&src, RUN_PROGRAM).unwrap();
    let out = hostrt(&["run", src.to_str().unwrap(), "--functions=bad", "--print_error_code"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.ends_with("'bad' returned <<error: Divide by zero, code: INTERNAL>>\n"), "{stdout}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "hostrt: error: {}:17:12: runtime error: Divide by zero\n  %q, %r = tfrt.div.i32 %x, %zero\n           ^\n",
            src.display()
        )
    );
    assert_eq!(out.status.code(), Some(1), "an unexpected runtime error fails the run");
    let missing = hostrt(&["run", src.to_str().unwrap(), "--functions=nope"]);
    assert_eq!(String::from_utf8(missing.stderr).unwrap(), "hostrt: error: couldn't find function nope\n");
    assert_eq!(missing.status.code(), Some(1));
}

#[test]
fn run_reports_unknown_kernels_with_their_location() {
    let src = tmp("unknown.mlir");
    std::fs::write(&src, "func.func @f() {\n  %x = \"my.kernel\"() : () -> i32\n  tfrt.return\n}\n").unwrap();
    let out = hostrt(&["run", src.to_str().unwrap()]);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "hostrt: error: {}:2:8: unknown kernel name 'my.kernel'\n  %x = \"my.kernel\"() : () -> i32\n       ^\n",
            src.display()
        )
    );
    assert_eq!(out.status.code(), Some(1));
}
