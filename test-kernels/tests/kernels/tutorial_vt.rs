//! Tutorial kernels and value tracking.

use crate::harness::drive;

#[test]
fn coordinates() {
    let o = drive(
        r#"
func.func @f() -> !my.coordinate {
  %chain = tfrt.new.chain
  %two = tfrt.constant.i32 2
  %four = tfrt.constant.i32 4
  %c = "tfrt_tutorial.create_coordinate"(%two, %four) : (i32, i32) -> !my.coordinate
  %ch = "tfrt_tutorial.print_coordinate"(%c, %chain) : (!my.coordinate, !tfrt.chain) -> !tfrt.chain
  tfrt.return %c : !my.coordinate
}
"#,
    );
    // The print's chain is not returned, so its stream runs after the result (docs/execution.md).
    assert_eq!(o.section("f"), ["'f' returned !my.coordinate value", "(2, 4)"]);
}

#[test]
fn value_lifecycle_lines() {
    let o = drive(
        r#"
func.func @f() -> !tfrt.chain {
  %a = "vt.constant"() { value = 1 : i32 } : () -> !vt.value
  %b = "vt.constant"() { value = 2 : i32 } : () -> !vt.value
  %c = "vt.add"(%a, %b) : (!vt.value, !vt.value) -> !vt.value
  %ch = tfrt.new.chain
  %ch1 = "vt.print"(%c, %ch) : (!vt.value, !tfrt.chain) -> !tfrt.chain
  tfrt.return %ch1 : !tfrt.chain
}
"#,
    );
    for v in 1..=3 {
        let constructed = o.pos(&format!("constructed vt.value({v})"));
        assert_eq!(o.lines()[constructed + 1], format!("move constructed vt.value({v})"), "{}", o.output);
        assert_eq!(o.count(&format!("destroyed vt.value({v})")), 1, "{}", o.output);
        assert!(constructed < o.pos(&format!("destroyed vt.value({v})")));
    }
    // Operands die right after the kernel that used them last, before its result is used.
    let printed = o.pos("print vt_value(3)");
    assert!(o.pos("move constructed vt.value(3)") < o.pos("destroyed vt.value(1)"));
    assert!(o.pos("destroyed vt.value(2)") < printed);
    assert!(printed < o.pos("destroyed vt.value(3)"));
    assert_eq!(o.count("copy constructed vt.value(1)"), 0);
}

#[test]
fn share_to_two_shares_one_object() {
    let o = drive(
        r#"
func.func @f() -> (!vt.value, !vt.value) {
  %a = "vt.constant"() { value = 5 : i32 } : () -> !vt.value
  %x, %y = "tfrt_test.share_to_two"(%a) : (!vt.value) -> (!vt.value, !vt.value)
  tfrt.return %x, %y : !vt.value, !vt.value
}
"#,
    );
    assert_eq!(
        o.section("f"),
        [
            "constructed vt.value(5)",
            "move constructed vt.value(5)",
            "'f' returned !vt.value value,!vt.value value",
            "destroyed vt.value(5)"
        ]
    );
}
