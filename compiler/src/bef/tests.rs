//! Unit tests of the binary side: the decoder's value names, locations in BEF, and the
//! writer's verifier messages.

use std::sync::OnceLock;

use hostrt_core::Allocator;
use hostrt_core::bef::{BefFile, BefLoc};

use hostrt_std::AlignedBytes;

use super::{WriteOptions, decode, write};
use crate::CompileError;
use crate::ast::{Loc, ResultGroup};
use crate::text::{PrintOptions, parse, print};

/// One registered arena, shared by the tests, for the reader's scratch memory.
fn scratch() -> Allocator {
    static ALLOC: OnceLock<Allocator> = OnceLock::new();
    *ALLOC.get_or_init(|| hostrt_std::leaked_arena(1 << 20).expect("an arena in a free allocator slot").1)
}

fn compile_ok(src: &str) -> Vec<u8> {
    crate::compile("t.mlir", src, WriteOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn compile_err(src: &str) -> CompileError {
    match crate::compile("t.mlir", src, WriteOptions::default()) {
        Ok(_) => panic!("expected an error compiling\n{src}"),
        Err(e) => e,
    }
}

/// Loads `bef` and runs `f` on the file.
fn with_file<R>(bef: &[u8], f: impl FnOnce(&BefFile<'_>) -> R) -> R {
    let aligned = AlignedBytes::new(bef);
    let file = BefFile::load_unresolved(aligned.as_bytes(), scratch()).unwrap_or_else(|e| panic!("{e}"));
    f(&file)
}

#[test]
fn multi_result_kernels_decode_as_one_group() {
    let src = "func.func @f(%a: i32) -> i32 {
  %q, %r = tfrt.div.i32 %a, %a
  %p:3 = tfrt_test.count3.i32 %r
  %s = tfrt.add.i32 %q, %p#2
  tfrt.return %s : i32
}
";
    let bef = compile_ok(src);
    let module = with_file(&bef, |file| decode(file).expect("decodes"));
    let ops = &module.funcs[0].body.as_ref().expect("body").ops;
    assert_eq!(ops[0].results, [ResultGroup { name: "r1".into(), count: 2 }]);
    assert_eq!(ops[1].results, [ResultGroup { name: "r3".into(), count: 3 }]);
    assert_eq!(ops[2].results, [ResultGroup { name: "r6".into(), count: 1 }]);
    // Printed as MLIR prints multi-result operations.
    let printed = print(&module, &PrintOptions { locations: true });
    for line in [
        "%0:2 = tfrt.div.i32 %arg0, %arg0 loc(\"t.mlir\":2:12)",
        "%1:3 = tfrt_test.count3.i32 %0#1 loc(\"t.mlir\":3:10)",
        "%2 = tfrt.add.i32 %0#0, %1#2 loc(\"t.mlir\":4:8)",
        "tfrt.return %2 : i32 loc(unknown)",
    ] {
        assert!(printed.contains(line), "missing {line:?} in\n{printed}");
    }
    // Names do not reach the BEF file: the decoded module and its text compile to the same
    // bytes.
    assert_eq!(write(&module, None).expect("writes"), bef);
    assert_eq!(write(&parse("p.mlir", &printed).expect("parses"), None).expect("writes"), bef);
}

#[test]
fn fused_locations_store_their_position() {
    let program = |loc: &str| {
        format!(
            "func.func @f() -> !tfrt.chain {{\n  %c = tfrt.new.chain loc({loc})\n  tfrt.return %c : !tfrt.chain\n}}\n"
        )
    };
    let fused = compile_ok(&program(r#"fused["name", "x.py":9:7]"#));
    with_file(&fused, |file| {
        let main = file.function_by_name("f").expect("f");
        let k = main.kernels()[0];
        assert_eq!(file.loc(k.location), BefLoc::FileLineCol { file: "x.py", line: 9, col: 7 });
    });
    assert_eq!(fused, compile_ok(&program(r#""x.py":9:7"#)), "the name is not stored");
    let named = compile_ok(&program(r#"fused["name", "other"]"#));
    let module = with_file(&named, |file| decode(file).expect("decodes"));
    assert_eq!(module.funcs[0].body.as_ref().expect("body").ops[0].loc, Loc::Name("name".into()));
}

#[test]
fn errors_at_a_fused_location_point_at_its_position() {
    let e = compile_err(
        "func.func @f() -> i32 {\n  %c = tfrt.new.chain\n  tfrt.return %c : !tfrt.chain loc(fused[\"ret\", \"t.mlir\":3:3])\n}\n",
    );
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.mlir", 3, 3));
    assert_eq!(e.source_line, "  tfrt.return %c : !tfrt.chain loc(fused[\"ret\", \"t.mlir\":3:3])");
}

/// `tfrt_opt`'s messages for `tfrt.return` in a function (TFRT's `ReturnOp` verifier).
#[test]
fn return_messages_are_tfrt_opts() {
    let e = compile_err("func.func @f(%a: i32) -> (i32, i32) {\n  tfrt.return %a : i32\n}\n");
    assert_eq!(
        e.to_string(),
        "t.mlir:2:3: 'tfrt.return' op has 1 operands, but enclosing function returns 2\n  tfrt.return %a : i32\n  ^"
    );
    let e = compile_err("func.func @f(%a: i32) -> (i32, f32) {\n  tfrt.return %a, %a : i32, i32\n}\n");
    assert_eq!(
        e.to_string(),
        "t.mlir:2:3: type of return operand 1 ('i32') doesn't match function result type ('f32')\n  tfrt.return %a, %a : i32, i32\n  ^"
    );
}

/// A function taking `%c: i1, %a: i32` whose body is `body`.
fn in_function(body: &str) -> String {
    format!("func.func @f(%c: i1, %a: i32) -> i32 {{\n{body}\n  tfrt.return %a : i32\n}}\n")
}

/// The message and `line:col` of the error compiling `body` (see [`in_function`]).
fn if_error(body: &str) -> (String, u32, u32) {
    let e = compile_err(&in_function(body));
    (e.message, e.line, e.col)
}

/// `tfrt_opt`'s messages for `tfrt.if` (TFRT's `IfOp` verifier and op definition).
#[test]
fn if_messages_are_tfrt_opts() {
    let mismatch = "'tfrt.return' op operand types don't match 'tfrt.if' result";
    // The then branch returns another type: at that branch's tfrt.return.
    let then_i64 = "  %r = tfrt.if %c, %a : (i32) -> (i32) {
    %x = tfrt.constant.i64 1
    tfrt.return %x : i64
  } else {
    tfrt.return %a : i32
  }";
    let e = compile_err(&in_function(then_i64));
    assert_eq!(e.to_string(), format!("t.mlir:4:5: {mismatch}\n    tfrt.return %x : i64\n    ^"));
    // The else branch returns too few values.
    let else_none = "  %r = tfrt.if %c, %a : (i32) -> (i32) {\n    tfrt.return %a : i32\n  } else {\n    tfrt.return\n  }";
    assert_eq!(if_error(else_none), (mismatch.to_string(), 5, 5));
    // Too many values.
    let too_many = "  tfrt.if %c, %a : (i32) -> () {\n    tfrt.return %a : i32\n  }";
    assert_eq!(if_error(too_many), (mismatch.to_string(), 3, 5));

    // The generic form can get the rest wrong; errors are at the tfrt.if.
    let region = |args: &str, op: &str| format!("{{\n  ^bb0({args}):\n    {op}\n  }}");
    let good = region("%x: i32", "tfrt.return %x : i32");
    let no_args = "{\n    \"t.other\"() : () -> ()\n  }".to_string();
    let if_op = |operands: &str, regions: &[&String], types: &str| {
        let regions: Vec<&str> = regions.iter().map(|r| r.as_str()).collect();
        format!("  %r = \"tfrt.if\"({operands}) ({}) : ({types}) -> i32", regions.join(", "))
    };
    let cases = [
        (
            if_op("%c, %a", &[&region("%x: i32, %y: i32", "tfrt.return %x : i32"), &good], "i1, i32"),
            "'tfrt.if' op incorrect number of arguments to 'then' block",
        ),
        (
            if_op("%c, %a", &[&good, &no_args], "i1, i32"),
            "'tfrt.if' op incorrect number of arguments to 'else' block",
        ),
        (
            if_op("%c, %a", &[&good, &region("%x: i64", "tfrt.return %x : i64")], "i1, i32"),
            "'tfrt.if' op operand/argument type mismatch",
        ),
        (
            if_op("%c, %a", &[&good, &region("%x: i32", "\"t.other\"() : () -> ()")], "i1, i32"),
            "'tfrt.if' op expected tfrt.return in body",
        ),
        (
            if_op("%a, %a", &[&good, &good], "i32, i32"),
            "'tfrt.if' op operand #0 must be 1-bit signless integer, but got 'i32'",
        ),
        (if_op("%c, %a", &[&good], "i1, i32"), "'tfrt.if' op expected 2 regions"),
        (if_op("", &[&no_args, &no_args], ""), "'tfrt.if' op expected 1 or more operands, but found 0"),
    ];
    for (body, message) in cases {
        assert_eq!(if_error(&body), (message.to_string(), 2, 8), "{body}");
    }
}

#[test]
fn valid_ifs_compile() {
    let ok = "  %r = tfrt.if %c, %a : (i32) -> (i32) {
    %s = tfrt.add.i32 %a, %a
    tfrt.return %s : i32
  } else {
    tfrt.return %a : i32
  }
  tfrt.if %c : () -> () {
    tfrt.return
  }
  %g = \"tfrt.if\"(%c, %a) ({
  ^bb0(%x: i32):
    tfrt.return %x : i32
  }, {
  ^bb0(%y: i32):
    tfrt.return %y : i32
  }) : (i1, i32) -> i32";
    compile_ok(&in_function(ok));
}
