//! Unit tests of the binary side: the decoder's value names, locations in BEF, and the
//! writer's verifier messages.

use std::sync::OnceLock;

use hostrt_core::Allocator;
use hostrt_core::bef::{BefAttr, BefFile, BefLoc};

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
    // Its name locations' names, joined (docs/bef.md, "Locations").
    assert_eq!(module.funcs[0].body.as_ref().expect("body").ops[0].loc, Loc::Name("nameother".into()));
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

/// A function whose arguments have the tensor layer's types, with `body` before its return.
fn tensor_function(body: &str) -> String {
    format!(
        "func.func @f(%s: !ts.shape, %p: !ts.partial_shape, %t: !tfrt_tensor.tensor, %b: !ht.host_buffer, \
         %i: i32, %n: i64, %ch: !tfrt.chain) {{\n{body}\n  tfrt.return\n}}\n"
    )
}

/// `tfrt_opt`'s verifier messages for the tensor layer's ops, at the op.
#[test]
fn tensor_op_messages_are_tfrt_opts() {
    let (t, ch) = ("!tfrt_tensor.tensor", "!tfrt.chain");
    let cases = [
        // kernel_errors.mlir's case.
        (
            "\"ts.build_shape\"() { value = [1 : i64] }: () -> i64".to_string(),
            "'ts.build_shape' op result #0 must be !ts.shape type, but got 'i64'",
        ),
        (
            "\"ts.build_partial_shape\"() {value = [1]} : () -> !ts.shape".into(),
            "'ts.build_partial_shape' op result #0 must be !ts.partial_shape type, but got '!ts.shape'",
        ),
        (
            "\"ts.print_shape\"(%p, %ch) : (!ts.partial_shape, !tfrt.chain) -> !tfrt.chain".into(),
            "'ts.print_shape' op operand #0 must be !ts.shape type, but got '!ts.partial_shape'",
        ),
        (
            "\"ts.print_fixed_rank_shape.2\"(%s, %ch) : (!ts.shape, !tfrt.chain) -> !tfrt.chain".into(),
            "'ts.print_fixed_rank_shape.2' op operand #0 must be !ts.fixed_rank_shape.2 type, but got '!ts.shape'",
        ),
        (
            "\"ts.as_fixed_rank_shape.1\"(%s) : (!ts.shape) -> !ts.fixed_rank_shape.3".into(),
            "'ts.as_fixed_rank_shape.1' op result #0 must be !ts.fixed_rank_shape.1 type, but got '!ts.fixed_rank_shape.3'",
        ),
        (
            "\"ts.equal_shape\"(%s, %s) : (!ts.shape, !ts.shape) -> i32".into(),
            "'ts.equal_shape' op result #0 must be 1-bit signless integer, but got 'i32'",
        ),
        (
            "\"ts.get_dimension\"(%s, %n) : (!ts.shape, i64) -> i64".into(),
            "'ts.get_dimension' op operand #1 must be 32-bit signless integer, but got 'i64'",
        ),
        (
            "\"ts.get_num_elements\"(%s) : (!ts.shape) -> i32".into(),
            "'ts.get_num_elements' op result #0 must be 64-bit signless integer, but got 'i32'",
        ),
        (
            format!("\"tfrt_dht.print_tensor\"(%t, %n) : ({t}, i64) -> {ch}"),
            "'tfrt_dht.print_tensor' op operand #1 must be !tfrt.chain type, but got 'i64'",
        ),
        (
            format!("\"tfrt_dht.tensor_equal.i32\"(%t, %t, %ch) : ({t}, {t}, {ch}) -> (i1, i1)"),
            "'tfrt_dht.tensor_equal.i32' op result #1 must be !tfrt.chain type, but got 'i1'",
        ),
        (
            format!("\"tfrt_dht.make_tensor.f32\"(%t, %s, %ch) : ({t}, !ts.shape, {ch}) -> ({t}, {ch})"),
            "'tfrt_dht.make_tensor.f32' op operand #0 must be !ht.host_buffer type, but got '!tfrt_tensor.tensor'",
        ),
        (
            format!("\"tfrt_dht.get_buffer\"(%t, %ch) : ({t}, {ch}) -> ({t}, {ch})"),
            "'tfrt_dht.get_buffer' op result #0 must be !ht.host_buffer type, but got '!tfrt_tensor.tensor'",
        ),
        (
            "\"tfrt_dht.get_tensor_shape\"(%b) : (!ht.host_buffer) -> !ts.shape".into(),
            "'tfrt_dht.get_tensor_shape' op operand #0 must be !tfrt_tensor.tensor type, but got '!ht.host_buffer'",
        ),
        // Attributes.
        ("\"ts.build_shape\"() : () -> !ts.shape".into(), "'ts.build_shape' op requires attribute 'value'"),
        (
            format!("\"tfrt_dht.create_uninitialized_tensor.i32.2\"() {{value = [1]}} : () -> {t}"),
            "'tfrt_dht.create_uninitialized_tensor.i32.2' op requires attribute 'shape'",
        ),
        (
            "\"ts.build_shape\"() {value = [1 : i32]} : () -> !ts.shape".into(),
            "'ts.build_shape' op attribute 'value' failed to satisfy constraint: 64-bit integer array attribute",
        ),
        (
            "\"ts.build_partial_shape\"() {value = 1} : () -> !ts.partial_shape".into(),
            "'ts.build_partial_shape' op attribute 'value' failed to satisfy constraint: 64-bit integer array attribute",
        ),
        (
            "ts.build_shape [1, 2.0]".into(),
            "'ts.build_shape' op attribute 'value' failed to satisfy constraint: 64-bit integer array attribute",
        ),
        (
            "tfrt_dht.create_uninitialized_tensor.f32.1 [2 : ui64]".into(),
            "'tfrt_dht.create_uninitialized_tensor.f32.1' op attribute 'shape' failed to satisfy constraint: 64-bit integer array attribute",
        ),
        (
            format!("\"tfrt_dht.fill_tensor_with_constant.f32\"(%t, %ch) : ({t}, {ch}) -> {ch}"),
            "'tfrt_dht.fill_tensor_with_constant.f32' op requires attribute 'value'",
        ),
        (
            format!(
                "\"tfrt_dht.set_tensor_with_constant_values.i32\"(%t, %ch) {{values = 1 : i32}} : ({t}, {ch}) -> {ch}"
            ),
            "'tfrt_dht.set_tensor_with_constant_values.i32' op attribute 'values' failed to satisfy constraint: array attribute",
        ),
        // Counts, then regions.
        (
            "\"ts.equal_shape\"(%s) : (!ts.shape) -> i1".into(),
            "'ts.equal_shape' op expected 2 operands, but found 1",
        ),
        ("\"ts.to_shape\"(%p) : (!ts.partial_shape) -> ()".into(), "'ts.to_shape' op requires one result"),
        (
            "\"ts.print_shape\"(%s, %ch, %ch) : (!ts.shape, !tfrt.chain, !tfrt.chain) -> !tfrt.chain".into(),
            "'ts.print_shape' op operand group starting at #1 requires 0 or 1 element, but found 2",
        ),
        (
            "\"tfrt_dht.allocate_buffer\"(%n, %n) ({\n  }) : (i64, i64) -> !ht.host_buffer".into(),
            "'tfrt_dht.allocate_buffer' op requires zero regions",
        ),
    ];
    for (body, message) in cases {
        let e = compile_err(&tensor_function(&format!("  {body}")));
        assert_eq!((e.message.as_str(), e.line, e.col), (message, 2, 3), "{body}");
    }
    // The full text, as `kernel_errors.mlir` expects it.
    let e = compile_err(&tensor_function("  %a = \"ts.build_shape\"() { value = [1 : i64] }: () -> i64"));
    assert_eq!(
        e.to_string(),
        "t.mlir:2:8: 'ts.build_shape' op result #0 must be !ts.shape type, but got 'i64'\n  %a = \"ts.build_shape\"() { value = [1 : i64] }: () -> i64\n       ^"
    );
}

/// Custom forms imply their operand types: a value of another type is the parser's
/// "different type" error at the use, as in MLIR.
#[test]
fn tensor_custom_forms_check_their_operands() {
    let e = compile_err(&tensor_function("  %c = ts.print_shape %p, %ch"));
    assert_eq!(
        (e.message.as_str(), e.line, e.col),
        (
            "use of value '%p' expects different type than prior uses: '!ts.shape' vs '!ts.partial_shape'",
            2,
            23
        )
    );
}

#[test]
fn valid_tensor_ops_compile() {
    let body = "  %a = ts.build_shape [1, -1]
  %c0 = \"ts.print_shape\"(%a) : (!ts.shape) -> !tfrt.chain
  %c1 = \"tfrt_dht.print_tensor\"(%t) : (!tfrt_tensor.tensor) -> !tfrt.chain
  %c2 = \"tfrt_dht.fill_tensor_with_constant.complex64\"(%t) {value = [1.0 : f32, 0.0 : f32]} : (!tfrt_tensor.tensor) -> !tfrt.chain
  %x = ts.as_fixed_rank_shape.2 %a
  %c3 = ts.print_fixed_rank_shape.2 %x, %c0
  %d = ts.get_dimension %a, %i
  %t2 = \"tfrt_dht.create_uninitialized_tensor.f64.7\"() {shape = [1 : i32]} : () -> !tfrt_tensor.tensor
  %u:2 = \"tfrt_dht.no_such_kernel\"(%t2, %s) {k = \"v\"} : (!tfrt_tensor.tensor, !ts.shape) -> (i32, i32)";
    compile_ok(&tensor_function(body));
}

/// `!t.tensor` and `!tfrt_tensor.tensor` are one type: a program compiles to the same bytes
/// with either spelling, and values of both spellings mix.
#[test]
fn old_tensor_spelling_is_the_same_type() {
    let program = |ty: &str| {
        format!(
            "func.func @f(%a: {ty}, %ch: !tfrt.chain) -> {ty} {{\n  %c = tfrt_dht.print_tensor %a, %ch\n  %t = tfrt_dht.create_uninitialized_tensor.i32.1 [2]\n  %e, %c2 = \"tfrt_dht.tensor_equal.i32\"(%a, %t, %c) : ({ty}, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)\n  tfrt.return %t : {ty}\n}}\n"
        )
    };
    let old = compile_ok(&program("!t.tensor"));
    assert_eq!(old, compile_ok(&program("!tfrt_tensor.tensor")));
    let module = with_file(&old, |file| decode(file).expect("decodes"));
    let printed = print(&module, &PrintOptions::default());
    assert!(!printed.contains("!t.tensor") && printed.contains("(%arg0: !tfrt_tensor.tensor"), "{printed}");
}

/// Every DENSE attribute of `bef`, in index order: the byte offset of its blob in the file,
/// the blob's 8-byte header and its payload.
fn dense_blobs(bef: &[u8]) -> Vec<(usize, [u8; 8], Vec<u8>)> {
    let aligned = AlignedBytes::new(bef);
    let bytes = aligned.as_bytes();
    let file = BefFile::load_unresolved(bytes, scratch()).unwrap_or_else(|e| panic!("{e}"));
    (0..file.num_attrs() as u32)
        .filter_map(|i| match file.attr(i) {
            Some(BefAttr::Dense { payload, ty, .. }) => {
                assert_eq!(ty, None, "no type index");
                // The payload lies in the loaded bytes: read it (and its header) in place.
                let at = payload.as_ptr() as usize - bytes.as_ptr() as usize;
                assert_eq!(payload.as_ptr() as usize % 8, 0, "payload 8-aligned in memory");
                let header: [u8; 8] = bytes[at - 8..at].try_into().expect("8 bytes");
                Some((at - 8, header, payload.to_vec()))
            }
            _ => None,
        })
        .collect()
}

/// A function with one op per attribute value of `values`.
fn dense_program(values: &[&str]) -> String {
    let mut s = String::from("func.func @f() {\n");
    for (i, v) in values.iter().enumerate() {
        s.push_str(&format!("  %a{i} = \"x.y\"() {{value = {v}}} : () -> i32\n"));
    }
    s.push_str("  tfrt.return\n}\n");
    s
}

/// A DENSE blob's 8-byte header and its payload.
type DenseBlob = ([u8; 8], Vec<u8>);

/// The DENSE blob of element type `code`, `dims` and `data`.
fn dense_blob(code: u8, dims: &[i64], data: &[u8]) -> DenseBlob {
    let mut payload = (dims.len() as u64).to_le_bytes().to_vec();
    for d in dims {
        payload.extend_from_slice(&d.to_le_bytes());
    }
    payload.extend_from_slice(data);
    let len = (payload.len() as u32).to_le_bytes();
    ([hostrt_core::bef::format::attr::DENSE, code, 0xff, 0xff, len[0], len[1], len[2], len[3]], payload)
}

#[test]
fn dense_attributes_have_the_documented_layout() {
    let bef = compile_ok(&dense_program(&["dense<[1.0, 2.0]> : tensor<2xf32>"]));
    assert_eq!(
        u16::from_le_bytes([bef[6], bef[7]]),
        4,
        "minor version 4 (2 added DENSE, 3 ARENA, 4 ARENA_ALT)"
    );
    let blobs = dense_blobs(&bef);
    assert_eq!(blobs.len(), 1);
    let (_, header, payload) = &blobs[0];
    assert_eq!(header, &[8, 11, 0xff, 0xff, 24, 0, 0, 0]);
    assert_eq!(
        payload,
        &[
            1, 0, 0, 0, 0, 0, 0, 0, // rank
            2, 0, 0, 0, 0, 0, 0, 0, // dims
            0, 0, 0x80, 0x3f, 0, 0, 0, 0x40, // 1.0, 2.0
        ]
    );
}

#[test]
fn dense_attributes_of_every_form() {
    let f64s = |v: &[f64]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let cases: Vec<(&str, DenseBlob)> = vec![
        ("dense<7> : tensor<i64>", dense_blob(4, &[], &7i64.to_le_bytes())),
        ("dense<[true, false, true]> : tensor<3xi1>", dense_blob(0, &[3], &[1, 0, 1])),
        ("dense<[-1, 2]> : tensor<2xi16>", dense_blob(2, &[2], &[0xff, 0xff, 2, 0])),
        ("dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xui8>", dense_blob(5, &[3, 2], &[1, 2, 3, 4, 5, 6])),
        ("dense<[1.0, 0.5]> : tensor<2xbf16>", dense_blob(10, &[2], &[0x80, 0x3f, 0x00, 0x3f])),
        ("dense<\"0x003C\"> : tensor<3xf16>", dense_blob(9, &[3], &[0x00, 0x3c, 0x00, 0x3c, 0x00, 0x3c])),
        (
            "dense<(1.0, -1.0)> : tensor<2x1xcomplex<f64>>",
            dense_blob(14, &[2, 1], &f64s(&[1.0, -1.0, 1.0, -1.0])),
        ),
        ("dense<> : tensor<0x2xf32>", dense_blob(11, &[0, 2], &[])),
        ("dense<18446744073709551615> : tensor<1x1x1xui64>", dense_blob(8, &[1, 1, 1], &[0xff; 8])),
    ];
    // A string of odd length first, so that blobs do not start aligned by luck.
    let mut values = vec!["\"abc\""];
    values.extend(cases.iter().map(|c| c.0));
    let bef = compile_ok(&dense_program(&values));
    let blobs = dense_blobs(&bef);
    assert_eq!(blobs.len(), cases.len());
    for ((text, (header, payload)), (offset, h, p)) in cases.iter().zip(&blobs) {
        assert_eq!((h, p), (header, payload), "{text}");
        // Blobs start 8-aligned, and so does the data after the rank and dims words.
        let rank = u64::from_le_bytes(p[..8].try_into().expect("rank")) as usize;
        assert_eq!(offset % 8, 0, "{text}");
        assert_eq!((offset + 8 + 8 * (rank + 1)) % 8, 0, "{text}");
    }
}

#[test]
fn identical_dense_attributes_are_stored_once() {
    let bef = compile_ok(&dense_program(&[
        "dense<1.0> : tensor<2xf32>",
        "dense<[1.0, 1.0]> : tensor<2xf32>",
        "dense<\"0x0000803F\"> : tensor<2xf32>",
        "dense<\"0x0000803F0000803F\"> : tensor<2xf32>",
        "dense<1.0> : tensor<1x2xf32>",
        "dense<1> : tensor<2xi32>",
    ]));
    let blobs = dense_blobs(&bef);
    assert_eq!(blobs.len(), 3, "one blob per distinct value");
    assert_eq!(blobs[1].2[8..16], 1i64.to_le_bytes()); // tensor<1x2xf32>
    assert_eq!(blobs[2].1[1], 3); // i32
}

#[test]
fn dense_attributes_round_trip_through_bef() {
    let src = r#"module attributes {m = dense<[1, 2, 3]> : tensor<3xi64>} {
  func.func @f(%ch: !tfrt.chain) -> !tfrt.chain attributes {w = dense<2.5> : tensor<f64>} {
    %w = "tfrt_dht.const_dense_tensor"() {value = dense<0.5> : tensor<64x32xf32>} : () -> !tfrt_tensor.tensor
    %b = "x.y"() {big = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 0.1]> : tensor<17xf32>} : () -> i32
    %c = "x.y"() {l = [dense<[(1.0, 2.0), (0x7FC00000, -0.0)]> : tensor<2xcomplex<f32>>, dense<> : tensor<0xi1>], h = dense<[0.1, 65504.0, 6.0e-8]> : tensor<3xf16>} : () -> i32
    %d = "x.y"() {v = dense<[[true, false], [false, true]]> : tensor<2x2xi1>, q = dense<"0x0180FF7F"> : tensor<2x2xi8>, b = dense<[1.0e-8, -3.0e38]> : tensor<2xbf16>} : () -> i32
    tfrt.return %ch : !tfrt.chain
  }
}
"#;
    let bef = compile_ok(src);
    let module = with_file(&bef, |file| decode(file).expect("decodes"));
    let parsed = parse("t.mlir", src).expect("parses");
    assert_eq!(module.attrs, parsed.attrs);
    assert_eq!(module.funcs[0].attrs, parsed.funcs[0].attrs);
    let decoded_ops = &module.funcs[0].body.as_ref().expect("a body").ops;
    let parsed_ops = &parsed.funcs[0].body.as_ref().expect("a body").ops;
    for (d, p) in decoded_ops.iter().zip(parsed_ops) {
        let mut sorted = p.attrs.clone();
        sorted.sort_by(|a, b| a.name.cmp(&b.name));
        assert_eq!(d.attrs, sorted, "{}", p.name);
    }
    // With locations, the disassembly compiles to the same bytes.
    let text = print(&module, &PrintOptions { locations: true });
    assert!(text.contains("{value = dense<5.000000e-01> : tensor<64x32xf32>}"), "{text}");
    assert!(text.contains("{big = dense<\"0x000000000000803F"), "{text}");
    assert!(text.contains("q = dense<[[1, -128], [-1, 127]]> : tensor<2x2xi8>"), "{text}");
    let again =
        write(&parse("p.mlir", &text).unwrap_or_else(|e| panic!("{e}\n{text}")), None).expect("writes");
    assert!(again == bef, "text -> BEF -> text -> BEF differs\n{text}");
}

#[test]
fn the_writer_rejects_malformed_dense_attributes() {
    use crate::ast::{Attr, DenseAttr, Type};
    let mut module = parse("t.mlir", &dense_program(&["unit"])).expect("parses");
    let cases = [
        (
            DenseAttr { elem: Type("f32".into()), dims: vec![2], data: vec![0; 3] },
            "dense attribute data of 3 bytes does not match its type 'tensor<2xf32>'",
        ),
        (
            DenseAttr { elem: Type("f32".into()), dims: vec![-1], data: vec![] },
            "dense attribute data of 0 bytes does not match its type 'tensor<-1xf32>'",
        ),
        (
            DenseAttr { elem: Type("f80".into()), dims: vec![], data: vec![0; 10] },
            "unsupported dense attribute element type 'f80'",
        ),
        (
            DenseAttr { elem: Type("i8".into()), dims: vec![1; 17], data: vec![0] },
            "dense attribute of rank 17 (at most 16)",
        ),
        (
            DenseAttr { elem: Type("i1".into()), dims: vec![1], data: vec![2] },
            "dense attribute of type i1 with a byte other than 0 or 1",
        ),
    ];
    for (d, msg) in cases {
        module.funcs[0].body.as_mut().expect("a body").ops[0].attrs[0].value = Attr::Dense(Box::new(d));
        match write(&module, None) {
            Ok(_) => panic!("expected an error: {msg}"),
            Err(e) => assert_eq!(e.message, msg),
        }
        // The printer writes such attributes too.
        let text = print(&module, &PrintOptions::default());
        assert!(text.contains("value = dense<"), "{text}");
    }
}

#[test]
fn arena_records_round_trip_and_a_bad_section_is_refused() {
    let bef = compile_ok("func.func @a() { tfrt.return }\nfunc.func @b(%x: i32) { tfrt.return }");
    with_file(&bef, |f| assert_eq!(f.arena_need(0), None, "no ARENA section yet"));
    let recorded = super::with_arena(&bef, &[(0, 4096)], 4).unwrap();
    with_file(&recorded, |f| {
        let need = f.arena_need(0).unwrap();
        assert_eq!((need.bytes, need.measured, need.pointer_bytes), (4096, true, 4));
        assert_eq!(f.arena_need(1), None, "a function left out records nothing");
        assert_eq!(f.function(0).unwrap().name(), "a", "the other sections are kept");
    });
    // Recording again replaces the section rather than adding a second one.
    let again = super::with_arena(&recorded, &[(1, 64)], 8).unwrap();
    with_file(&again, |f| {
        assert_eq!(f.arena_need(0), None);
        assert_eq!(f.arena_need(1).unwrap().bytes, 64);
    });
    assert!(super::with_arena(&bef, &[(2, 1)], 8).is_err(), "no function 2");
    // One word short: a clear load error, not a misread.
    let short = super::with_section(&bef, hostrt_core::bef::format::section::ARENA, &[0u8; 12]).unwrap();
    let aligned = hostrt_std::AlignedBytes::new(&short);
    let e = BefFile::load_unresolved(aligned.as_bytes(), scratch()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "invalid BEF at byte offset {}: malformed section directory entry (arena: not two words per function)",
            e.offset
        )
    );
}

/// ARENA_ALT holds a second record per function, for another pointer size: `arena_need_for`
/// finds each size's record in either section, and `arena_need` prefers this machine's.
#[test]
fn a_second_pointer_size_is_recorded_beside_the_first() {
    use super::{ArenaRecord, with_arena_alt_records, with_arena_records};
    let bef = compile_ok("func.func @a() { tfrt.return }\nfunc.func @b() { tfrt.return }");
    let host = size_of::<usize>() as u8;
    let other = if host == 8 { 4 } else { 8 };
    let a = |bytes, measured| [ArenaRecord { function: 0, bytes, measured }];
    let both = with_arena_records(&bef, &a(4096, true), other).unwrap();
    let both = with_arena_alt_records(&both, &a(3000, false), host).unwrap();
    with_file(&both, |f| {
        let (mine, theirs) = (f.arena_need_for(0, host).unwrap(), f.arena_need_for(0, other).unwrap());
        assert_eq!((mine.bytes, mine.measured, mine.pointer_bytes), (3000, false, host));
        assert_eq!((theirs.bytes, theirs.measured, theirs.pointer_bytes), (4096, true, other));
        assert_eq!(f.arena_need(0), Some(mine), "this machine's record first, wherever it is");
        assert_eq!(f.arena_need_for(0, 2), None, "no record for 2-byte pointers");
        assert_eq!(f.arena_need(1), None, "function 1 records nothing in either section");
    });
    // Without a record of this machine's size, ARENA's (as before ARENA_ALT).
    let alt_only_other = with_arena_alt_records(&bef, &a(100, true), 2).unwrap();
    let first = with_arena_records(&alt_only_other, &a(4096, true), other).unwrap();
    with_file(&first, |f| assert_eq!(f.arena_need(0).map(|n| n.bytes), Some(4096)));
    // A short ARENA_ALT is refused as a short ARENA is.
    let short = super::with_section(&bef, hostrt_core::bef::format::section::ARENA_ALT, &[0u8; 4]).unwrap();
    let aligned = hostrt_std::AlignedBytes::new(&short);
    let e = BefFile::load_unresolved(aligned.as_bytes(), scratch()).unwrap_err();
    assert!(e.to_string().ends_with("(arena: not two words per function)"), "{e}");
}

/// With `dense_align: 64`, dense elements of 64 bytes or more start on 64-byte boundaries
/// in the file (and in memory, where the file is), and replacing a section keeps them there.
#[test]
fn dense_elements_start_on_64_byte_boundaries_when_asked() {
    // Odd-sized attributes between them, so that blobs do not start aligned by luck.
    let values = [
        "\"abc\"",
        "dense<1> : tensor<17xi8>",
        "dense<2> : tensor<100xi8>",
        "\"de\"",
        "dense<3> : tensor<70xi8>",
    ];
    let module = parse("dense.mlir", &dense_program(&values)).unwrap();
    for (align, expect) in [(16, 16), (64, 64), (40, 64), (0, 16), (1000, 64)] {
        let options = WriteOptions { dense_align: align, ..WriteOptions::default() };
        let bef = super::write_with(&module, None, options).unwrap();
        // Sections added one by one (each a directory entry of 16 bytes) move the rest.
        let mut files = vec![bef];
        for id in 100..104 {
            let last = files.last().unwrap();
            files.push(super::with_section(last, id, &[0; 8]).unwrap());
        }
        for bef in &files {
            let mut seen = 0;
            for (offset, _, payload) in dense_blobs(bef) {
                let rank = u64::from_le_bytes(payload[..8].try_into().expect("rank")) as usize;
                let data = offset + 8 + 8 * (rank + 1);
                let len = payload.len() - 8 * (rank + 1);
                if len >= expect {
                    assert_eq!(data % expect, 0, "dense_align {align}: data at {data}");
                    seen += 1;
                }
                // Smaller ones of 16 bytes or more still start 16-aligned.
                assert!(len < 16 || data.is_multiple_of(16), "dense_align {align}: {len} bytes at {data}");
            }
            assert_eq!(seen, if expect == 64 { 2 } else { 3 }, "dense_align {align}");
            with_file(bef, |f| assert!(f.num_attrs() >= 5));
        }
    }
}
