//! Execution semantics seen through `hostrt run`: stream scheduling, parallel loops, native functions and the
//! `test_fixed_size_1k` allocator. The programs are in `tests/programs/`.

use std::path::PathBuf;
use std::process::Command;

fn program(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "programs", name].iter().collect();
    p.to_str().unwrap().to_string()
}

/// `hostrt run PROGRAM ARGS...`: (stdout, stderr, exit status).
fn run(name: &str, args: &[&str]) -> (String, String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt"))
        .arg("run")
        .arg(program(name))
        .args(args)
        .output()
        .expect("run hostrt");
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap(), out.status.code())
}

const BANNERS: &str = "Choosing memory leak check allocator.\nChoosing single-threaded work queue.\n";

/// `constructed`, `move constructed`, `destroyed` of a `vt.value` nobody uses.
fn vt_lifetime(v: i32) -> String {
    format!("constructed vt.value({v})\nmove constructed vt.value({v})\ndestroyed vt.value({v})\n")
}

#[test]
fn cost_threshold_streams_run_in_the_reference_order() {
    // Worked example 1: `%u` runs inline; then one task per stream in ascending stream order, the
    // print joining the chain's task.
    let (out, err, code) = run("stream_threshold.mlir", &[]);
    let expected = format!(
        "{BANNERS}--- Running 'ex':\n{}{}constructed vt.value(3)\nmove constructed vt.value(3)\n\
         print vt_value(3)\ndestroyed vt.value(3)\n",
        vt_lifetime(7),
        vt_lifetime(9)
    );
    assert_eq!(out, expected, "{err}");
    assert_eq!(code, Some(0));
}

#[test]
fn independent_kernels_run_first_then_in_reverse_order() {
    // Worked example 2: without a threshold each independent kernel is its own stream; K1 runs at
    // kick-off, the rest as tasks Kk .. K2.
    let (out, err, code) = run("stream_independent.mlir", &[]);
    let expected = format!(
        "{BANNERS}--- Running 'ex':\n{}{}{}{}",
        vt_lifetime(1),
        vt_lifetime(4),
        vt_lifetime(3),
        vt_lifetime(2)
    );
    assert_eq!(out, expected, "{err}");
    assert_eq!(code, Some(0));
}

#[test]
fn an_error_operand_skips_the_add_after_the_async_print() {
    // Worked example 3: the print (stream 1) runs in the async value's waiter; the add (stream 0)
    // is enqueued and skipped because of the error operand.
    let (out, err, code) = run("stream_error_async.mlir", &[]);
    assert_eq!(
        out,
        format!("{BANNERS}--- Running 'ex2':\nint32 = 5\n'ex2' returned <<error: something bad happened>>\n")
    );
    assert!(err.ends_with("stream_error_async.mlir:3:9: runtime error: something bad happened\n"), "{err}");
    assert_eq!(code, Some(1), "the diagnostic is not expected by anything");
}

#[test]
fn parallel_loops_cover_every_block_once() {
    for queue in ["s", "mstd:2"] {
        let (out, err, code) = run("parallel.mlir", &["--work_queue_type", queue]);
        // 100 elements in blocks of 7 (15 blocks) from the region body; 10 in blocks of 3
        // through @body; a body with a non-chain result; an empty range.
        for line in [
            "'for' returned 100\n",
            "'call' returned 10\n",
            "'badbody' returned <<error: Invalid parallel body function result types>>\n",
            "'empty' returned !tfrt.chain value\n",
        ] {
            assert!(out.contains(line), "{queue}: missing {line:?} in\n{out}\n{err}");
        }
        assert_eq!(code, Some(0), "{queue}: {err}");
    }
}

#[test]
fn native_functions_run_when_their_arguments_are_available() {
    let (out, err, code) = run("native.mlir", &[]);
    for line in [
        "--- Not running 'native_add' because it has arguments.\n",
        "'native_error' returned <<error: something bad happened>>\n",
        "'sync' returned 3\n",
        // native_async_add(5, async 6) = 11, then native_add(11, 6): both wait for arguments.
        "'pending' returned 17\n",
        "'chain' returned !tfrt.chain value\n",
    ] {
        assert!(out.contains(line), "missing {line:?} in\n{out}\n{err}");
    }
    assert_eq!(err, "", "native_error reports no diagnostic");
    assert_eq!(code, Some(0));
}

#[test]
fn an_unregistered_native_function_fails_the_load() {
    let (out, err, code) = run("native_missing.mlir", &[]);
    assert_eq!(out, BANNERS, "nothing runs");
    // The declaration's location (the file name as the BEF keeps it), then the message.
    assert!(err.starts_with("hostrt: error: ") && err.contains("native_missing.mlir:1:1: "), "{err}");
    assert!(
        err.ends_with(
            "invalid FunctionIndex section in BEF file: unable to find native function in global registry: \
             '@no_such_native'\n"
        ),
        "{err}"
    );
    assert_eq!(code, Some(1));
}

#[test]
fn fixed_size_1k_allocator_logs_refuses_and_returns_everything() {
    let (out, err, code) = run("native.mlir", &["--host_allocator_type", "test_fixed_size_1k"]);
    assert!(out.starts_with("Choosing fixed size malloc.\n"), "{out}");
    assert!(out.contains("'sync' returned 3\n"), "{out}");
    let messages: Vec<&str> = err.lines().map(|l| l.split_once("] ").map_or(l, |(_, m)| m)).collect();
    assert!(messages.iter().any(|m| m.starts_with("Allocating ")), "{err}");
    assert!(
        messages.iter().any(|m| m.starts_with("Attempted to allocate ")),
        "the 1 KiB budget runs out during 'pending': {err}"
    );
    assert!(out.contains("'pending' returned <<error: "), "exhaustion is an error result: {out}");
    assert!(messages.last().is_some_and(|m| m.ends_with(" 1024 available.")), "all returned: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(code, Some(0));
}

/// A runtime error names the failing kernel's `file:line:col` (the `hostrt check` program
/// consumes the diagnostic with `expected-error`, which checks only the line).
#[test]
fn runtime_errors_carry_the_kernel_location() {
    let (_, err, code) = run("executor/errors.mlir", &[]);
    let text = std::fs::read_to_string(program("executor/errors.mlir")).unwrap();
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("tfrt.div.i32").map(|c| (i + 1, c + 1)))
        .expect("the failing kernel");
    // (Locations keep the end of a long path: diagnostics are fixed-size.)
    let at = format!("/executor/errors.mlir:{line}:{col}: runtime error: Divide by zero");
    assert!(err.contains(&at), "{at}\n{err}");
    assert_eq!(code, Some(1), "a runtime error nobody expected fails the run");
}
