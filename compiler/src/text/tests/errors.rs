//! Malformed input: exact positions, helpful messages, no panics on deep nesting.

use super::*;
use crate::text::MAX_NESTING;

/// Line, column and message of the error for `src`.
fn err(src: &str) -> (u32, u32, String) {
    let e = parse_err(src);
    (e.line, e.col, e.message)
}

#[test]
fn unterminated_string() {
    let (line, col, msg) = err("func.func @f() {\n  %x = \"t.g\"() {s = \"abc\n} : () -> ()\n}");
    assert_eq!((line, col), (2, 21));
    assert_eq!(msg, "unterminated string literal (missing closing '\"')");
    let (line, col, _) = err("func.func @f() {\n  \"t.g");
    assert_eq!((line, col), (2, 3));
}

#[test]
fn bad_string_escape_and_encoding() {
    let (_, _, msg) = err("func.func @f() {\n  \"t\\q\"() : () -> ()\n}");
    assert_eq!(msg, "unknown escape sequence in string literal");
    let (_, _, msg) = err("func.func @f() {\n  \"t\\FF\"() : () -> ()\n}");
    assert_eq!(msg, "string literal is not valid UTF-8");
}

#[test]
fn missing_paren() {
    let (line, col, msg) = err("func.func @f(%a: i32) {\n  %x = \"t.g\"(%a : (i32) -> i32\n}");
    assert_eq!((line, col), (2, 17));
    assert_eq!(msg, "expected ')' after operands, found ':'");
    let (line, col, msg) = err("func.func @f(%a: i32 {\n}");
    assert_eq!((line, col), (1, 22));
    assert!(msg.starts_with("expected ')' after the function arguments"), "{msg}");
}

#[test]
fn bad_tokens() {
    let (line, col, msg) = err("func.func @f() {\n  %x = tfrt.new.chain $\n}");
    assert_eq!((line, col, msg.as_str()), (2, 23, "unexpected character '$'"));
    let (line, col, msg) = err("func.func @f() {\n  é\n}");
    assert_eq!((line, col), (2, 3));
    assert_eq!(msg, "unexpected character '\\u{e9}'");
    let (_, _, msg) = err("func.func @f() {\n  % = tfrt.new.chain\n}");
    assert_eq!(msg, "expected SSA value name after '%'");
    let (_, _, msg) = err("func.func @ () {\n}");
    assert_eq!(msg, "expected symbol name after '@'");
    let (_, _, msg) = err("func.func @f(%a: !) {\n}");
    assert_eq!(msg, "expected dialect type name after '!'");
    let (_, _, msg) = err("func.func @f(%a: !x<i32) {\n}");
    assert_eq!(msg, "unterminated '<' in type");
    let (_, _, msg) = err("func.func @f() {\n  %x = tfrt.constant.i32 0x\n}");
    assert_eq!(msg, "expected hexadecimal digits after '0x'");
}

#[test]
fn unknown_op_forms() {
    let (line, col, msg) = err("func.func @f(%a: i32) {\n  %x = tfrt.foo %a\n}");
    assert_eq!((line, col), (2, 8));
    assert!(msg.starts_with("unknown custom op form 'tfrt.foo'"), "{msg}");
    assert!(msg.contains("\"tfrt.foo\"(...)"), "{msg}");
    let (_, _, msg) = err("func.func @f() {\n  bogus\n}");
    assert_eq!(msg, "expected an operation, found 'bogus'");
    let (_, _, msg) = err("func.func @f() {\n  42\n}");
    assert_eq!(msg, "expected an operation, found '42'");
    let (_, _, msg) = err("func.func @f() {\n  tfrt.constant.i16 1\n}");
    assert!(msg.starts_with("unknown custom op form 'tfrt.constant.i16'"), "{msg}");
}

#[test]
fn structural_errors() {
    let (line, col, msg) = err("func.func @f() {\n  tfrt.return\n");
    assert_eq!((line, col), (3, 1));
    assert_eq!(msg, "expected '}' to close the region opened at 1:16, found end of file");
    let (_, _, msg) = err("func.func @f() {\n}\nfunc.func @g() {\n}\nmodule {\n}");
    assert_eq!(msg, "only one 'module' is supported per file");
    let (_, _, msg) = err("module {\n}\nfunc.func @g() {\n}");
    assert!(msg.starts_with("expected end of file or a location alias after the module"), "{msg}");
    let (_, _, msg) = err("}");
    assert_eq!(msg, "expected 'func.func', 'module' or a location alias definition, found '}'");
    let (_, _, msg) = err("func.func @f() {\n  \"t.g\"() ({\n  ^a:\n  ^b:\n  }) : () -> ()\n}");
    assert_eq!(msg, "regions with more than one block are not supported");
    let (_, _, msg) = err("func.func @f() {\n  %x:0 = \"t\"() : () -> ()\n}");
    assert!(msg.starts_with("expected a positive result count after ':'"), "{msg}");
    let (_, _, msg) = err("func.func @f() {\n  \"t\"(%x#99999999999) : (i32) -> ()\n}");
    assert_eq!(msg, "pack index too large");
    let (_, _, msg) = err("func.func @f() {\n  tfrt_test.benchmark \"b\"() max_count = 1 {\n  }\n}");
    assert_eq!(msg, "missing required benchmark option 'duration_secs'");
    let (line, col, msg) = err("func.func @f(%a: i32) {\n  tfrt.merge.chains %a, %a : i32\n}");
    assert_eq!((line, col), (2, 30));
    assert_eq!(msg, "2 operand(s) present, but 1 type(s) given");
    let (_, _, msg) = err("func.func @f(%a: i32) {\n  tfrt.return %a : foo\n}");
    assert_eq!(msg, "expected a type, found 'foo'");
}

#[test]
fn error_display_points_at_the_column() {
    let e = parse_err("func.func @f() {\n  %x = tfrt.new.chain ?\n}");
    assert_eq!(
        e.to_string(),
        "t.mlir:2:23: expected an operation, found '?'\n  %x = tfrt.new.chain ?\n                      ^"
    );
}

#[test]
fn nesting_too_deep() {
    let deep = MAX_NESTING as usize + 10;
    let arrays = format!(
        "func.func @f() {{\n  \"t\"() {{a = {}1{}}} : () -> ()\n}}",
        "[".repeat(deep),
        "]".repeat(deep)
    );
    let (line, _, msg) = err(&arrays);
    assert_eq!(line, 2);
    assert_eq!(msg, format!("nesting too deep (more than {MAX_NESTING} levels)"));

    let regions = format!(
        "func.func @f(%n: i32) {{\n{}{}}}",
        "tfrt.repeat.i32 %n {\n".repeat(deep),
        "tfrt.return\n}\n".repeat(deep)
    );
    assert!(err(&regions).2.starts_with("nesting too deep"));

    let locs = format!(
        "func.func @f() {{\n  tfrt.return loc({}unknown{})\n}}",
        "fused[".repeat(deep),
        "]".repeat(deep)
    );
    assert!(err(&locs).2.starts_with("nesting too deep"));

    let mut chain = String::from("func.func @f() {\n  tfrt.return loc(#a0)\n}\n");
    for i in 0..deep {
        chain.push_str(&format!("#a{i} = loc(#a{})\n", i + 1));
    }
    chain.push_str(&format!("#a{deep} = loc(unknown)\n"));
    assert!(err(&chain).2.starts_with("nesting too deep"));

    // Very deep input is rejected early, without exhausting the stack.
    let huge = "[".repeat(1_000_000);
    assert!(parse("t.mlir", &format!("func.func @f() {{\n \"t\"() {{a = {huge}")).is_err());
}

#[test]
fn nesting_at_the_limit_is_accepted() {
    // Each repeat region is one level; the function body and the dictionary are two more.
    let depth = MAX_NESTING as usize - 2;
    let src = format!(
        "func.func @f(%n: i32) {{\n{}  \"t\"() {{a = 1}} : () -> ()\n{}  tfrt.return\n}}",
        "tfrt.repeat.i32 %n {\n".repeat(depth),
        "tfrt.return\n}\n".repeat(depth)
    );
    let m = parse_ok(&src);
    let printed = print(&m, &PrintOptions::default());
    assert_eq!(print(&parse_ok(&printed), &PrintOptions::default()), printed);
}

#[test]
fn tensor_form_errors() {
    let function = |body: &str| {
        format!(
            "func.func @f(%s: !ts.shape, %t: !tfrt_tensor.tensor, %ch: !tfrt.chain) {{\n  {body}\n  tfrt.return\n}}"
        )
    };
    for (body, at, msg) in [
        ("%x = ts.build_shape 1", (2, 23), "expected '[' to open the array 'value', found '1'"),
        (
            "%x = ts.build_shape [1, 2 ts.print_shape",
            (2, 29),
            "expected ']' to close the array, found 'ts.print_shape'",
        ),
        (
            "%x = tfrt_dht.create_uninitialized_tensor.i32.1 %t",
            (2, 51),
            "expected '[' to open the array 'shape', found '%t'",
        ),
        ("%x = ts.print_shape %s %ch", (2, 26), "expected ',' between the two operands, found '%ch'"),
        (
            "%x = tfrt_dht.fill_tensor_with_constant.f32 %t, %ch",
            (3, 3),
            "expected an attribute value, found 'tfrt.return'",
        ),
        (
            "%x = tfrt_dht.set_tensor_with_constant_values.i32 %t, %ch 1 : i32",
            (2, 61),
            "expected '[' to open the array 'values', found '1'",
        ),
        (
            "%x = tfrt_dht.fill_tensor_with_constant.i32 %t, %ch 1.5 : i32",
            (2, 55),
            "floating point literal is not valid for type 'i32'",
        ),
    ] {
        let (line, col, m) = err(&function(body));
        assert_eq!(((line, col), m.as_str()), (at, msg), "{body}");
    }
}
