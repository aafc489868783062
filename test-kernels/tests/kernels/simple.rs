//! Simple and diagnostic test kernels.

use crate::harness::{drive, drive_only};

#[test]
fn hello_strings_and_counting() {
    let o = drive(
        r#"
func.func @f() -> (i32, i32, i32, i64, i64) {
  %ch = tfrt.new.chain
  %ch1 = "tfrt_test.print_hello"(%ch) : (!tfrt.chain) -> !tfrt.chain
  %a = "tfrt_test.get_string"() { value = "foo" } : () -> !tfrt.string
  %b = "tfrt_test.get_string"() { value = "bar" } : () -> !tfrt.string
  %ab = "tfrt_test.append_string"(%a, %b) : (!tfrt.string, !tfrt.string) -> !tfrt.string
  %ch2 = "tfrt_test.print_string"(%ab, %ch1) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  %x = tfrt.constant.i32 41
  %x1, %x2, %x3 = tfrt_test.count3.i32 %x
  %y = tfrt.constant.i64 -5
  %y1, %y2, %y3 = "tfrt_test.count3.i64"(%y) : (i64) -> (i64, i64, i64)
  %d = "tfrt_test.copy.with_delay.i64"(%y3) : (i64) -> i64
  tfrt.return %x1, %x2, %x3, %y1, %d : i32, i32, i32, i64, i64
}
"#,
    );
    assert_eq!(
        o.section("f"),
        // The prints' chains are not returned: their stream runs as a task after the
        // results are available (docs/execution.md).
        ["'f' returned 42,43,44,-4,-2", "hello host executor!", "string = foobar"],
        "{}",
        o.output
    );
}

#[test]
fn copy_with_delay_sleeps_in_the_dispatching_thread() {
    let start = std::time::Instant::now();
    let o = drive(
        r#"
func.func @f() -> i32 {
  %x = tfrt.constant.i32 7
  %y = "tfrt_test.copy.with_delay.i32"(%x) : (i32) -> i32
  tfrt.return %y : i32
}
"#,
    );
    assert_eq!(o.section("f"), ["'f' returned 7"]);
    assert!(start.elapsed() >= std::time::Duration::from_millis(1), "slept 1-10 ms");
}

#[test]
fn fail_and_partial_fail_report_diagnostics() {
    let o = drive(
        r#"
func.func @fail() -> i32 {
  %x = "tfrt_test.fail"() : () -> i32
  tfrt.return %x : i32
}
func.func @partial() -> (i32, i32) {
  %x, %y = "tfrt_test.partial_fail"() : () -> (i32, i32)
  tfrt.return %x, %y : i32, i32
}
"#,
    );
    assert_eq!(
        o.section("fail"),
        [
            "t.mlir:3:8: runtime error: something bad happened",
            "'fail' returned <<error: something bad happened>>"
        ]
    );
    assert_eq!(
        o.section("partial"),
        [
            "t.mlir:7:12: runtime error: something bad happened",
            "'partial' returned 1,<<error: something bad happened>>"
        ]
    );
}

#[test]
fn identity_and_multi_arg_result_forward_their_operands() {
    let o = drive(
        r#"
func.func @f() -> (i32, i32, i32) {
  %ch = tfrt.new.chain
  %x = tfrt.constant.i32 5
  %y = tfrt.constant.i32 6
  %ix = "tfrt_test.identity"(%ch, %x) : (!tfrt.chain, i32) -> i32
  %my:2 = "tfrt_test.multi_arg_result"(%x, %y) : (i32, i32) -> (i32, i32)
  tfrt.return %ix, %my#0, %my#1 : i32, i32, i32
}
"#,
    );
    assert_eq!(o.section("f"), ["'f' returned 5,5,6"]);
}

#[test]
fn uniqueness_counts_the_kernels_own_references() {
    // %x is used once (by this kernel): unique. %y is passed twice: two references.
    let o = drive(
        r#"
func.func @f() -> (i1, i1, i1) {
  %x = tfrt.constant.i32 5
  %y = tfrt.constant.i32 6
  %u:3 = "tfrt_test.get_uniqueness"(%x, %y, %y) : (i32, i32, i32) -> (i1, i1, i1)
  tfrt.return %u#0, %u#1, %u#2 : i1, i1, i1
}
"#,
    );
    assert_eq!(o.section("f"), ["'f' returned 1,0,0"]);
}

#[test]
fn make_indirect_forwards_to_the_operands() {
    let o = drive(
        r#"
func.func @f() -> (i32, !tfrt.string) {
  %x = tfrt.constant.i32 9
  %s = "tfrt_test.get_string"() { value = "s" } : () -> !tfrt.string
  %r:2 = "tfrt_test.make_indirect"(%x, %s) : (i32, !tfrt.string) -> (i32, !tfrt.string)
  %ch = tfrt.new.chain
  %ch1 = "tfrt_test.print_string"(%r#1, %ch) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  tfrt.return %r#0, %r#1 : i32, !tfrt.string
}
"#,
    );
    assert_eq!(o.section("f"), ["string = s", "'f' returned 9,!tfrt.string value"]);
}

#[test]
fn cancel_skips_the_rest_of_the_run_only() {
    let o = drive(
        r#"
func.func @f() -> (i32, !tfrt.chain) {
  %ch0 = tfrt.new.chain
  %x, %ch1 = "tfrt_test.cancel"(%ch0) : (!tfrt.chain) -> (i32, !tfrt.chain)
  %ch2 = tfrt.print.i32 %x, %ch1
  tfrt.return %x, %ch2 : i32, !tfrt.chain
}
func.func @g() -> i32 {
  %x = tfrt.constant.i32 3
  tfrt.return %x : i32
}
"#,
    );
    assert_eq!(o.section("f"), ["'f' returned 0,<<error: Cancelled>>"]);
    assert_eq!(o.section("g"), ["'g' returned 3"], "the next run starts uncancelled");
}

#[test]
fn flat_reads_the_leaves_of_a_nested_array() {
    let o = drive(
        r#"
func.func @f() -> (i32, i32, f32) {
  %a, %b, %c, %d = "tfrt_test.flat"() { value = [["s", [7 : i32, 9 : i32]], [1.5 : f32]]} : () -> (!tfrt.string, i32, i32, f32)
  tfrt.return %b, %c, %d : i32, i32, f32
}
"#,
    );
    assert_eq!(o.section("f"), ["'f' returned 7,9,1.500000e+00"], "{}", o.output);
}

#[test]
fn async_value_probes() {
    let o = drive(
        r#"
func.func @f() {
  %ch = tfrt.new.chain
  %a = "tfrt_test.async_value_get"() : () -> !tfrt.string
  %b = "tfrt_test.async_value_ref"() : () -> !tfrt.string
  %ch1 = "tfrt_test.print_string"(%a, %ch) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  %ch2 = "tfrt_test.print_string"(%b, %ch1) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  tfrt.return
}
"#,
    );
    assert_eq!(
        o.section("f"),
        [
            "string = base1:base2:final_class:3",
            "string = available:2;unavailable;(3);available:3;unavailable;available:4"
        ]
    );
}

#[test]
fn logging_writes_six_lines() {
    let o = drive(
        r#"
func.func @f() {
  %s = "tfrt_test.get_string"() { value = "hi" } : () -> !tfrt.string
  %ch = "tfrt_test.logging"(%s) : (!tfrt.string) -> !tfrt.chain
  tfrt.return
}
"#,
    );
    let lines = o.section("f");
    let expected = [
        ('I', 244, "TFRT_LOG(INFO)"),
        ('W', 245, "TFRT_LOG(WARNING)"),
        ('E', 246, "TFRT_LOG(ERROR)"),
        ('I', 247, "TFRT_LOG_IF(INFO, true)"),
        ('W', 248, "TFRT_LOG_IF(WARNING, true)"),
        ('E', 249, "TFRT_LOG_IF(ERROR, true)"),
    ];
    assert_eq!(lines.len(), expected.len(), "{}", o.output);
    for (line, (s, n, what)) in lines.iter().zip(expected) {
        assert!(line.starts_with(s), "{line}");
        assert!(line.ends_with(&format!(" simple_test_kernels.cc:{n}] from {what}: hi")), "{line}");
    }
}

#[test]
fn resources_die_explicitly_or_with_their_value() {
    let o = drive(
        r#"
func.func @explicit() -> !tfrt.chain {
  %c0 = tfrt.new.chain
  %res, %c1 = "tfrt_test.allocate_resource"(%c0) : (!tfrt.chain) -> (!tfrt.test.resource, !tfrt.chain)
  %c2 = "tfrt_test.deallocate_resource"(%res, %c1) : (!tfrt.test.resource, !tfrt.chain) -> !tfrt.chain
  tfrt.return %c2 : !tfrt.chain
}
func.func @cancelled() -> !tfrt.chain {
  %c0 = tfrt.new.chain
  %res, %c1 = "tfrt_test.allocate_resource"(%c0) : (!tfrt.chain) -> (!tfrt.test.resource, !tfrt.chain)
  %x, %c2 = "tfrt_test.cancel"(%c1) : (!tfrt.chain) -> (i32, !tfrt.chain)
  %c3 = "tfrt_test.deallocate_resource"(%res, %c2) : (!tfrt.test.resource, !tfrt.chain) -> !tfrt.chain
  tfrt.return %c3 : !tfrt.chain
}
func.func @returned() -> !tfrt.test.resource {
  %c0 = tfrt.new.chain
  %res, %c1 = "tfrt_test.allocate_resource"(%c0) : (!tfrt.chain) -> (!tfrt.test.resource, !tfrt.chain)
  tfrt.return %res : !tfrt.test.resource
}
"#,
    );
    assert_eq!(
        o.section("explicit"),
        [
            "Allocated TestResource",
            "Destroyed TestResource",
            "tfrt_test.deallocate_resource done",
            "'explicit' returned !tfrt.chain value"
        ]
    );
    assert_eq!(
        o.section("cancelled"),
        ["Allocated TestResource", "Destroyed TestResource", "'cancelled' returned <<error: Cancelled>>"]
    );
    // A returned resource dies when the driver releases the results, after printing them.
    assert_eq!(
        o.section("returned"),
        ["Allocated TestResource", "'returned' returned !tfrt.test.resource value", "Destroyed TestResource"]
    );
}

#[test]
fn shared_context_bool_thread_and_debug_info() {
    let o = drive(
        r#"
func.func @f() -> i32 {
  %ch = tfrt.new.chain
  %name, %ch1 = "tfrt_test.use_sample_shared_context"(%ch) : (!tfrt.chain) -> (!tfrt.string, !tfrt.chain)
  %ch2 = "tfrt_test.print_string"(%name, %ch1) : (!tfrt.string, !tfrt.chain) -> !tfrt.chain
  %t = tfrt.constant.i1 1
  %ch3 = "tfrt_test.print_bool"(%ch2, %t) : (!tfrt.chain, i1) -> !tfrt.chain
  %ch5 = "tfrt_test.print_debug_info"(%ch3) : (!tfrt.chain) -> !tfrt.chain loc("scope/kernel")
  %ch6 = "tfrt_test.print_debug_info"(%ch5) : (!tfrt.chain) -> !tfrt.chain
  %ch7 = "tfrt_test.unique_loc"(%ch6) { name = "a" } : (!tfrt.chain) -> !tfrt.chain
  %id = "tfrt_test.get_thread_id"(%ch7) : (!tfrt.chain) -> i32
  %id2 = "tfrt_test.get_thread_id"(%ch7) : (!tfrt.chain) -> i32
  %same = "tfrt.equal.i32"(%id, %id2) : (i32, i32) -> i1
  %one = tfrt.constant.i32 1
  %zero = tfrt.constant.i32 0
  %r = tfrt.if %same, %one, %zero : (i32, i32) -> (i32) {
    tfrt.return %one : i32
  } else {
    tfrt.return %zero : i32
  }
  tfrt.return %r : i32
}
"#,
    );
    assert_eq!(
        o.section("f"),
        [
            "string = sample_shared_context0",
            "true",
            "scope/kernel",
            "Kernel has no debug info",
            "'f' returned 1"
        ]
    );
}

#[test]
fn test_cost_prints_its_id() {
    let o = drive(
        r#"
func.func @f() -> i32 {
  %x = tfrt.constant.i32 1
  %c = tfrt_test.test_cost %x {_tfrt_cost = 100 : i64, id = 7 : i64} : i32
  tfrt.return %c : i32
}
"#,
    );
    assert_eq!(o.section("f"), ["id: 7", "'f' returned 0"]);
}

#[test]
fn memory_leak_one_int32_leaks_four_bytes() {
    let o = drive_only(
        r#"
func.func @f() {
  "tfrt_test.memory_leak_one_int32"() : () -> ()
  tfrt.return
}
"#,
        &[],
    );
    assert_eq!(o.leaked.1, 1, "one block left behind");
    assert!(o.leaked.0 >= 4, "{:?}", o.leaked);
}
