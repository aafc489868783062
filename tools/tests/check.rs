//! `hostrt check`, run as a user would, on test files written here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn hostrt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hostrt")).args(args).output().expect("run hostrt")
}

fn tmp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostrt-check-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A test file in the suite's style: the driver's output checked with FileCheck, a runtime
/// error consumed by an `expected-error`, a `tfrt_opt` round trip and a `not` line.
const PASSING: &str = r#"// RUN: bef_executor_lite %s.bef 2>&1 | FileCheck %s
// RUN: cat %s.bef | bef_executor_lite --print_error_code --functions=bad | FileCheck %s --check-prefix=CODE
// RUN: tfrt_opt %s | tfrt_opt | FileCheck %s --check-prefix=OPT
// RUN: tfrt_translate -mlir-to-bef %s | bef_executor \
// RUN:   -work_queue_type=s | FileCheck %s --check-prefixes=CHECK,FULL --dump-input=fail
// RUN: not bef_executor_lite --functions=missing %s.bef

// CHECK: Choosing memory leak check allocator.
// CHECK-LABEL: --- Running 'sum':
// CHECK-NEXT: int32 = 42
// CHECK-NEXT: 'sum' returned [[SUM:[0-9]+]]
// FULL-NOT: runtime error
// OPT-LABEL: func.func @sum() -> i32 {
// OPT-NEXT: %0 = tfrt.constant.i32 40
func.func @sum() -> i32 {
  %a = tfrt.constant.i32 40
  %b = tfrt.constant.i32 2
  %s = tfrt.add.i32 %a, %b
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %s, %ch
  tfrt.return %s : i32
}

// CHECK-LABEL: --- Running 'bad':
// CHECK-NEXT: 'bad' returned <<error: {{Divide by zero}}>>
// CODE: 'bad' returned <<error: Divide by zero, code: INTERNAL>>
func.func @bad() -> i32 {
  %one = tfrt.constant.i32 1
  %zero = tfrt.constant.i32 0
  // expected-error @+1 {{runtime error: Divide by zero}}
  %q, %r = tfrt.div.i32 %one, %zero
  tfrt.return %q : i32
}
"#;

fn check(files: &[&Path], verbose: bool) -> (String, String, Option<i32>) {
    let mut args: Vec<&str> = vec!["check"];
    if verbose {
        args.push("-v");
    }
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let out = hostrt(&args);
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), out.status.code())
}

#[test]
fn a_passing_test_file_passes() {
    let dir = tmp_dir("pass");
    let file = dir.join("good.mlir");
    std::fs::write(&file, PASSING).unwrap();
    let (stdout, stderr, code) = check(&[&file], false);
    assert_eq!(stdout, format!("PASS {}\n1 passed, 0 failed\n", file.display()), "{stderr}");
    assert_eq!(code, Some(0));
    // Nothing is written next to the test: `%s.bef` is built in memory.
    assert!(!dir.join("good.mlir.bef").exists());
}

#[test]
fn failing_test_files_fail_with_a_reason() {
    let dir = tmp_dir("fail");
    let good = dir.join("good.mlir");
    std::fs::write(&good, PASSING).unwrap();
    // A CHECK line that does not match the output.
    let wrong_output = dir.join("wrong_output.mlir");
    std::fs::write(&wrong_output, PASSING.replace("CHECK-NEXT: int32 = 42", "CHECK-NEXT: int32 = 43"))
        .unwrap();
    // A runtime error nobody expected.
    let unexpected = dir.join("unexpected.mlir");
    std::fs::write(&unexpected, PASSING.replace("expected-error @+1", "nothing @+1")).unwrap();
    // An expected error that never comes.
    let missing = dir.join("missing.mlir");
    std::fs::write(
        &missing,
        PASSING.replace("{{runtime error: Divide by zero}}", "{{runtime error: Overflow}}"),
    )
    .unwrap();
    // Features hostrt does not have yet fail, never pass: plug-in kernel libraries make the
    // RUN line unsupported (a failure).
    let mstd = dir.join("plugins.mlir");
    std::fs::write(&mstd, PASSING.replace("-work_queue_type=s", "-work_queue_type=s -shared_libs=k.so"))
        .unwrap();
    let tool = dir.join("tool.mlir");
    std::fs::write(&tool, "// RUN: some_tool %s | FileCheck %s\n// CHECK: x\n").unwrap();

    let files = [&good, &wrong_output, &unexpected, &missing, &mstd, &tool].map(|p| p.as_path());
    let (stdout, _, code) = check(&files, false);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 7, "{stdout}");
    assert_eq!(lines[0], format!("PASS {}", good.display()));
    let fail = |p: &Path| format!("FAIL {}: RUN line ", p.display());
    assert!(lines[1].starts_with(&fail(&wrong_output)), "{stdout}");
    assert!(lines[1].contains("CHECK-NEXT at ") && lines[1].contains(":10 \"int32 = 43\""), "{}", lines[1]);
    assert!(lines[1].contains("scanning from input line 4: \"int32 = 42\""), "{}", lines[1]);
    assert!(lines[2].starts_with(&fail(&unexpected)), "{stdout}");
    assert!(lines[2].contains("unexpected error: runtime error: Divide by zero"), "{}", lines[2]);
    assert!(lines[3].starts_with(&fail(&missing)), "{stdout}");
    assert!(lines[3].contains("unexpected error: runtime error: Divide by zero"), "{}", lines[3]);
    assert!(
        lines[4].starts_with(&format!("FAIL {}: RUN line 4: unsupported: ", mstd.display())),
        "{}",
        lines[4]
    );
    assert!(lines[4].contains("--shared_libs"), "{}", lines[4]);
    assert_eq!(
        lines[5],
        format!("FAIL {}: RUN line 1: unsupported: unknown tool 'some_tool'", tool.display())
    );
    assert_eq!(lines[6], "1 passed, 5 failed");
    assert_eq!(code, Some(1));

    // Verbose mode shows FileCheck's details: directive, input position and context.
    let (stdout, _, _) = check(&[&missing], true);
    assert!(stdout.contains("expected error \"runtime error: Overflow\" was not produced"), "{stdout}");
    let (stdout, _, _) = check(&[&wrong_output], true);
    assert!(stdout.contains("error: CHECK-NEXT: expected string not found in input"), "{stdout}");
    assert!(stdout.contains("<stdin>:4:1: note: scanning from here"), "{stdout}");
}

#[test]
fn verify_diagnostics_checks_parse_and_verifier_errors() {
    let dir = tmp_dir("verify");
    let text = "// RUN: tfrt_opt %s -split-input-file --verify-diagnostics\n\
        func.func @f() -> i32 {\n\
        \x20 %x = tfrt.constant.i1 true\n\
        \x20 // expected-error @+1 {{doesn't match function result type}}\n\
        \x20 tfrt.return %x : i1\n\
        }\n\
        // -----\n\
        func.func @g() {\n\
        \x20 tfrt.return\n\
        }\n";
    let file = dir.join("verify.mlir");
    std::fs::write(&file, text).unwrap();
    let (stdout, _, code) = check(&[&file], false);
    assert_eq!(stdout, format!("PASS {}\n1 passed, 0 failed\n", file.display()));
    assert_eq!(code, Some(0));
    std::fs::write(&file, text.replace("doesn't match", "does match")).unwrap();
    let (stdout, _, code) = check(&[&file], false);
    assert!(stdout.starts_with(&format!("FAIL {}: RUN line 1: tfrt_opt: ", file.display())), "{stdout}");
    assert_eq!(code, Some(1));
}

/// Runs the checker over the whole conformance suite: one line per file, the totals, and
/// every file passes (TFRT's own programs produce the output TFRT's driver produced).
#[test]
fn conformance_suite_is_checked_file_by_file() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/tfrt");
    if !suite.is_dir() {
        println!("skipped: no conformance suite at {}", suite.display());
        return;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&suite)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    files.sort();
    let (stdout, stderr, code) = check(&[&suite], false);
    assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "{stdout}\n{stderr}");
    assert_eq!(code, Some(0), "every conformance file passes\n{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), files.len() + 1, "{stdout}");
    for (line, file) in lines.iter().zip(&files) {
        let pass = format!("PASS {}", file.display());
        let fail = format!("FAIL {}: ", file.display());
        assert!(*line == pass || line.starts_with(&fail), "{line}");
    }
    let passed = lines.iter().filter(|l| l.starts_with("PASS ")).count();
    assert_eq!(passed, files.len(), "{stdout}");
    assert_eq!(lines[files.len()], format!("{passed} passed, 0 failed"));
    println!("{stdout}");
}

/// TFRT's tensor-layer programs (tensors, shapes, BTF, MNIST and ResNet kernels), checked as
/// the suite's README says: from the suite's folder, each program named by its relative path
/// (the programs open their data files by paths relative to that folder).
#[test]
fn tensor_conformance_suite_passes_from_its_folder() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance/tfrt-tensor");
    if !suite.is_dir() {
        println!("skipped: no tensor conformance suite at {}", suite.display());
        return;
    }
    let mut files = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(suite.join(&dir)).unwrap() {
            let name = dir.join(entry.unwrap().file_name());
            if suite.join(&name).is_dir() {
                dirs.push(name);
            } else if name.extension().is_some_and(|x| x == "mlir") {
                files.push(name.to_str().unwrap().to_owned());
            }
        }
    }
    files.sort();
    assert_eq!(files.len(), 7, "{files:?}");
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt"))
        .arg("check")
        .args(&files)
        .current_dir(&suite)
        .output()
        .expect("run hostrt");
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(!stderr.contains("panicked") && !stdout.contains("panicked"), "{stdout}\n{stderr}");
    for file in &files {
        assert!(stdout.lines().any(|l| l == format!("PASS {file}")), "{file} passes\n{stdout}\n{stderr}");
    }
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    println!("{stdout}");
}

/// Every option `hostrt run` accepts works in a RUN line too (one parser serves both).
#[test]
fn run_options_work_in_run_lines() {
    let dir = tmp_dir("run-options");
    let file = dir.join("options.mlir");
    std::fs::write(
        &file,
        r#"// RUN: bef_executor %s.bef -host_allocator_type=test_fixed_size_1k | FileCheck %s --check-prefix=FIXED
// RUN: bef_executor %s.bef --work_queue_type mstd:2 --functions=two,one | FileCheck %s --check-prefix=MSTD
// RUN: bef_executor %s.bef --test_init_function=two --print_error_code | FileCheck %s --check-prefix=INIT
// RUN: bef_executor %s.bef --host_allocator_type=profiled_allocator --host_allocator_type malloc | FileCheck %s --check-prefix=MALLOC

// FIXED: Choosing fixed size malloc.
// FIXED: 'one' returned 1
// MSTD: Choosing Multi-threaded C++ work queue (2 threads, 256 blocking threads) work queue.
// MSTD: --- Running 'two':
// MSTD: --- Running 'one':
// INIT: --- Running 'two':
// INIT-NEXT: 'two' returned 2
// INIT-NEXT: --- Running 'one':
// MALLOC: Choosing malloc.
func.func @one() -> i32 {
  %x = tfrt.constant.i32 1
  tfrt.return %x : i32
}

func.func @two() -> i32 {
  %x = tfrt.constant.i32 2
  tfrt.return %x : i32
}
"#,
    )
    .unwrap();
    let (stdout, _, code) = check(&[&file], true);
    assert_eq!(code, Some(0), "{stdout}");
    // A wrong expectation still fails: the parser does not make RUN lines vacuous.
    std::fs::write(
        &file,
        std::fs::read_to_string(&file).unwrap().replace("'one' returned 1", "'one' returned 7"),
    )
    .unwrap();
    let (stdout, _, code) = check(&[&file], false);
    assert_eq!(code, Some(1), "{stdout}");
}

/// The executor's own test programs (`tests/programs/executor/`, TFRT-style: RUN lines and
/// CHECK lines over the driver's output) all pass.
#[test]
fn executor_programs_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/executor");
    let (stdout, stderr, code) = check(&[&dir], false);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let passed = stdout.lines().filter(|l| l.starts_with("PASS ")).count();
    assert!(passed >= 3, "{stdout}");
    assert_eq!(stdout.lines().last(), Some(format!("{passed} passed, 0 failed").as_str()));
}
