//! Atomic counters and the blocking-queue kernels.

use crate::harness::drive;

#[test]
fn counters_are_shared_not_copied() {
    let o = drive(
        r#"
func.func @f() -> (i32, i32) {
  %c = "tfrt_test.atomic.create.i32"() : () -> !test.atomic.i32
  %ch0 = "tfrt_test.atomic.inc.i32"(%c) : (!test.atomic.i32) -> !tfrt.chain
  %five = tfrt.constant.i32 5
  %ch1 = "tfrt_test.atomic.add.i32"(%c, %five, %ch0) : (!test.atomic.i32, i32, !tfrt.chain) -> !tfrt.chain
  %ch2 = "tfrt_test.atomic.inc.i32"(%c, %ch1) : (!test.atomic.i32, !tfrt.chain) -> !tfrt.chain
  %v:2 = "tfrt_test.atomic.get.i32"(%c, %ch2) : (!test.atomic.i32, !tfrt.chain) -> (i32, !tfrt.chain)
  %w:2 = "tfrt_test.atomic.get.i32"(%c) : (!test.atomic.i32) -> (i32, !tfrt.chain)
  tfrt.return %v#0, %w#0 : i32, i32
}
"#,
    );
    let section = o.section("f");
    let returned = section.last().unwrap();
    assert!(returned.starts_with("'f' returned 7,"), "{}", o.output);
}

#[test]
fn usleep_prints_from_a_blocking_task() {
    let o = drive(
        r#"
func.func @f() -> !tfrt.chain {
  %ch = tfrt.new.chain
  %us = tfrt.constant.i32 100
  "tfrt_test.usleep"(%us) : (i32) -> ()
  %us2 = tfrt.constant.i32 200
  %done = "tfrt_test.blocking.usleep"(%us2) : (i32) -> !tfrt.chain
  %ch1 = tfrt.print.i32 %us2, %done
  tfrt.return %ch1 : !tfrt.chain
}
"#,
    );
    let section = o.section("f");
    assert_eq!(section.len(), 4, "{}", o.output);
    // The blocking chain orders the print after its own sleep; the plain usleep task is
    // independent: it runs from the queue, while awaiting the result or quiescing.
    assert!(o.pos("Slept for 200 microseconds") < o.pos("int32 = 200"));
    assert_eq!(o.count("Slept for 100 microseconds"), 1);
    assert_eq!(o.count("'f' returned !tfrt.chain value"), 1);
}
