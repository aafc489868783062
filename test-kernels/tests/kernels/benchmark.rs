//! `tfrt_test.benchmark`.

use crate::harness::drive;

#[test]
fn benchmark_runs_serially_and_summarizes() {
    let o = drive(
        r#"
func.func @f() -> !tfrt.chain {
  %c = tfrt.constant.i32 1
  %ch = tfrt_test.benchmark "add.i32"(%c : i32) duration_secs = 100, max_count = 5, num_warmup_runs = 2 {
    %sum = tfrt.add.i32 %c, %c
    %ch1 = tfrt.new.chain
    %ch2 = tfrt.print.i32 %sum, %ch1
    tfrt.return %ch2 : !tfrt.chain
  }
  tfrt.return %ch : !tfrt.chain
}
"#,
    );
    let section = o.section("f");
    assert_eq!(o.count("int32 = 2"), 7, "2 warm-up runs and 5 recorded ones:\n{}", o.output);
    let bm: Vec<&str> = section.iter().copied().filter(|l| l.starts_with("BM:add.i32:")).collect();
    let keys: Vec<&str> = bm.iter().map(|l| l.rsplit_once(": ").unwrap().0).collect();
    assert_eq!(
        keys,
        [
            "BM:add.i32:Duration(ns)",
            "BM:add.i32:Count",
            "BM:add.i32:Time Min(ns)",
            "BM:add.i32:Time 50%(ns)",
            "BM:add.i32:Time 95%(ns)",
            "BM:add.i32:Time 99%(ns)",
            "BM:add.i32:CPU Min(ns)",
            "BM:add.i32:CPU 50%(ns)",
            "BM:add.i32:CPU 95%(ns)",
            "BM:add.i32:CPU 99%(ns)",
            "BM:add.i32:CPU utilization(percent)",
        ]
    );
    assert_eq!(bm[1], "BM:add.i32:Count: 5");
    assert_eq!(*section.last().unwrap(), "'f' returned !tfrt.chain value", "the summary precedes the result");
}

#[test]
fn benchmark_stops_at_its_time_budget() {
    let o = drive(
        r#"
func.func @f() -> !tfrt.chain {
  %ch = tfrt_test.benchmark "slow"() duration_secs = 0, max_count = 1000, num_warmup_runs = 0 {
    %x = tfrt.constant.i32 1
    %y = "tfrt_test.copy.with_delay.i32"(%x) : (i32) -> i32
    tfrt.return %y : i32
  }
  tfrt.return %ch : !tfrt.chain
}
"#,
    );
    assert!(o.output.contains("BM:slow:Count: 1\n"), "the first recorded run exhausts 0 s:\n{}", o.output);
}
