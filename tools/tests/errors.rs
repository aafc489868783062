//! The command line's one error format, `hostrt: error: FILE[:LINE:COL]: message` (with the
//! source line and a caret where the text exists), case by case with the exact message; and
//! the behaviours a first-time user met: `--help` after arguments, `check DIR` descending into
//! folders, region bodies not listed as functions.

use std::path::PathBuf;
use std::process::{Command, Output};

fn hostrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().expect("run hostrt")
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostrt-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `hostrt ARGS` fails with status 1 and exactly `stderr`.
fn fails_with(args: &[&str], stderr: &str) {
    let out = hostrt(args);
    assert_eq!(String::from_utf8(out.stderr).unwrap(), stderr, "hostrt {args:?}");
    assert_eq!(out.status.code(), Some(1), "hostrt {args:?}");
}

const PROGRAM: &str = "func.func @main() -> i32 {
  %x = tfrt.constant.i32 40
  tfrt.return %x : i32
}
";

/// A compiled PROGRAM at `name`.
fn bef(name: &str) -> PathBuf {
    let (src, out) = (tmp(&format!("{name}.mlir")), tmp(name));
    std::fs::write(&src, PROGRAM).unwrap();
    assert!(hostrt(&["compile", src.to_str().unwrap(), "-o", out.to_str().unwrap()]).status.success());
    out
}

#[test]
fn an_empty_bef_file_is_an_error_naming_it() {
    let f = tmp("empty.bef");
    std::fs::write(&f, b"").unwrap();
    let f = f.to_str().unwrap();
    let want =
        format!("hostrt: error: {f}: empty file: not a BEF file (a BEF file starts with its magic bytes)\n");
    fails_with(&["run", f], &want);
}

#[test]
fn a_truncated_bef_file_names_the_file_and_the_byte_offset() {
    let f = bef("trunc.bef");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..40]).unwrap();
    let f = f.to_str().unwrap();
    let want = format!(
        "hostrt: error: {f}: invalid BEF at byte offset 8: file truncated or size field wrong (file_size)\n"
    );
    fails_with(&["run", f], &want);
    fails_with(&["dis", f], &want);
}

#[test]
fn other_bytes_are_not_a_bef_file() {
    let f = tmp("random.bin");
    std::fs::write(&f, [0xff, 0xfe, 0x00, 0x13]).unwrap();
    let f = f.to_str().unwrap();
    let want = format!(
        "hostrt: error: {f}: not a BEF file (bad magic), a TensorFlow Lite model or MLIR text (invalid UTF-8 at byte \
         offset 0)\n"
    );
    fails_with(&["run", f], &want);
    // With the `.bef` extension, text is not taken for a program either.
    let g = tmp("text.bef");
    std::fs::write(&g, PROGRAM).unwrap();
    let g = g.to_str().unwrap();
    fails_with(&["run", g], &format!("hostrt: error: {g}: not a BEF file (bad magic at byte offset 0)\n"));
}

#[test]
fn a_missing_file_and_a_bad_option_are_errors() {
    fails_with(
        &["run", "/nonexistent/p.mlir"],
        "hostrt: error: /nonexistent/p.mlir: No such file or directory (os error 2)\n",
    );
    let f = bef("opt.bef");
    fails_with(
        &["run", f.to_str().unwrap(), "--bogus"],
        "hostrt: error: Unknown command line argument '--bogus'.  Try: 'hostrt run --help'\n",
    );
}

#[test]
fn a_syntax_error_has_the_format_and_a_caret() {
    let f = tmp("syntax.mlir");
    std::fs::write(&f, PROGRAM.replace("%x : i32", "%nope : i32")).unwrap();
    let f = f.to_str().unwrap();
    let want = format!(
        "hostrt: error: {f}:3:15: use of undeclared SSA value name '%nope'\n  tfrt.return %nope : i32\n              ^\n"
    );
    fails_with(&["run", f], &want);
    fails_with(&["compile", f, "-o", tmp("syntax.bef").to_str().unwrap()], &want);
}

#[test]
fn a_missing_native_function_names_itself_and_where_it_is_used() {
    let f = tmp("native.mlir");
    std::fs::write(
        &f,
        "func.func private @no_such_native(%a: i32) -> i32 attributes {tfrt.native}
func.func @main() -> i32 {
  %x = tfrt.constant.i32 40
  %y = tfrt.call @no_such_native(%x) : (i32) -> i32
  tfrt.return %y : i32
}
",
    )
    .unwrap();
    let out = hostrt(&["run", f.to_str().unwrap()]);
    let f = f.display();
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "hostrt: error: {f}:4:8: invalid FunctionIndex section in BEF file: unable to find native function in \
             global registry: '@no_such_native' (declared at {f}:1:1)\n  %y = tfrt.call @no_such_native(%x) : (i32) \
             -> i32\n       ^\n"
        )
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn help_works_after_arguments() {
    let f = bef("help.bef");
    for args in [vec!["run", f.to_str().unwrap(), "--help"], vec!["run", "--functions=main", "-h"]] {
        let out = hostrt(&args);
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("Usage: hostrt run [FILE] [OPTIONS]"), "{text}");
        assert!(text.contains("--plugin"), "the run options include --plugin: {text}");
    }
    // clap's own subcommands take it after their arguments too.
    assert!(hostrt(&["dis", f.to_str().unwrap(), "--help"]).status.success());
}

#[test]
fn check_descends_into_folders() {
    let root = tmp("suite");
    let nested = root.join("a/b");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    let test = "// RUN: bef_executor %s | FileCheck %s\n// CHECK: --- Running 'main'\n".to_string() + PROGRAM;
    std::fs::write(nested.join("deep.mlir"), &test).unwrap();
    std::fs::write(root.join("top.mlir"), &test).unwrap();
    std::fs::write(root.join(".hidden/skipped.mlir"), "not a test").unwrap();
    let out = hostrt(&["check", root.to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("a/b/deep.mlir") && text.contains("top.mlir"), "{text}");
    assert!(text.ends_with("2 passed, 0 failed\n"), "{text}");
}

#[test]
fn region_bodies_are_not_listed_as_functions() {
    let f = tmp("regions.mlir");
    std::fs::write(
        &f,
        "func.func @select(%c: i1, %a: i32, %b: i32) -> i32 {
  %r = tfrt.if %c, %a, %b : (i32, i32) -> (i32) {
    tfrt.return %a : i32
  } else {
    tfrt.return %b : i32
  }
  tfrt.return %r : i32
}
"
        .to_string()
            + PROGRAM,
    )
    .unwrap();
    let out = hostrt(&["run", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "Choosing memory leak check allocator.\nChoosing single-threaded work queue.\n--- Not running 'select' \
         because it has arguments.\n--- Running 'main':\n'main' returned 40\n"
    );
}

#[test]
fn a_closed_output_pipe_is_not_a_panic() {
    // `hostrt import m.tflite -o m.bef | head -1`: the reader goes away (here before the
    // import has printed anything), and the rest of the report is dropped quietly.
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/../import/tests/models/ds_cnn_i8.tflite");
    let out = tmp("pipe.bef");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hostrt"))
        .args(["import", model, "-o", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(done.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(done.status.success(), "{stderr}");
    assert!(out.exists(), "the program is still written");
}

#[test]
fn a_runtime_error_of_a_compiled_program_quotes_its_source_file() {
    let src = tmp("div.mlir");
    std::fs::write(
        &src,
        "func.func @main() -> i32 {\n  %x = tfrt.constant.i32 1\n  %z = tfrt.constant.i32 0\n  %q, %r = tfrt.div.i32 %x, %z\n  tfrt.return %q : i32\n}\n",
    )
    .unwrap();
    let bef = tmp("div.bef");
    assert!(hostrt(&["compile", src.to_str().unwrap(), "-o", bef.to_str().unwrap()]).status.success());
    let out = hostrt(&["run", bef.to_str().unwrap()]);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!(
            "hostrt: error: {}:4:12: runtime error: Divide by zero\n  %q, %r = tfrt.div.i32 %x, %z\n           ^\n",
            src.display()
        )
    );
    assert_eq!(out.status.code(), Some(1));
}
