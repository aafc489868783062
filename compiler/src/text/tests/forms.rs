//! Custom forms are normalised as `text::forms` describes (and the writer expects); packs, generic ops,
//! modules, functions and attributes.

use super::*;
use crate::ast::{Loc, Region, ResultGroup, ValueRef};

#[test]
fn new_chain_and_constants() {
    let o = op("%x = tfrt.new.chain");
    assert_eq!((o.name.as_str(), o.result_types.clone()), ("tfrt.new.chain", tys(&["!tfrt.chain"])));
    assert!(o.operands.is_empty() && o.attrs.is_empty());

    let cases: &[(&str, Attr)] = &[
        ("tfrt.constant.i1 true", Attr::Bool(true)),
        ("tfrt.constant.i1 false", Attr::Bool(false)),
        ("tfrt.constant.i1 0", Attr::Bool(false)),
        ("tfrt.constant.i1 1", Attr::Bool(true)),
        ("tfrt.constant.i32 -7", int(-7, "i32")),
        ("tfrt.constant.i32 0x10", int(16, "i32")),
        ("tfrt.constant.i32 4294967295", int(-1, "i32")),
        ("tfrt.constant.i64 -9223372036854775808", int(i64::MIN, "i64")),
        ("tfrt.constant.ui32 4095", int(4095, "ui32")),
        ("tfrt.constant.ui64 18446744073709551615", int(-1, "ui64")),
        ("tfrt.constant.f32 0.1", Attr::Float { value: f64::from(0.1f32), ty: ty("f32") }),
        ("tfrt.constant.f32 -2.5e3", Attr::Float { value: -2500.0, ty: ty("f32") }),
        ("tfrt.constant.f32 0x3F800000", Attr::Float { value: 1.0, ty: ty("f32") }),
        ("tfrt.constant.f64 0.1", Attr::Float { value: 0.1, ty: ty("f64") }),
        ("tfrt.constant.f64 7", Attr::Float { value: 7.0, ty: ty("f64") }),
    ];
    for (text, value) in cases {
        let o = op(&format!("%x = {text}"));
        assert_eq!(o.attrs.len(), 1, "{text}");
        assert_eq!(attr(&o, "value"), value, "{text}");
        assert_eq!(o.result_types, vec![ty(o.name.trim_start_matches("tfrt.constant."))], "{text}");
        assert!(o.operands.is_empty() && o.operand_types.is_empty());
    }
}

#[test]
fn constant_literals_out_of_range() {
    for (text, msg) in [
        ("tfrt.constant.i32 4294967296", "out of range for type 'i32'"),
        ("tfrt.constant.i32 -2147483649", "out of range for type 'i32'"),
        ("tfrt.constant.ui32 -1", "out of range for type 'ui32'"),
        ("tfrt.constant.i1 2", "out of range for type 'i1'"),
        ("tfrt.constant.i32 1.5", "floating point literal is not valid for type 'i32'"),
        ("tfrt.constant.i64 123456789012345678901234567890123456789012", "too large"),
        ("tfrt.constant.f32 0x1FFFFFFFF", "too wide"),
        ("tfrt.constant.i32 true", "boolean literal is not valid for type 'i32'"),
    ] {
        let e = parse_err(&format!("func.func @f() {{\n  %x = {text}\n}}"));
        assert!(e.message.contains(msg), "{text}: {e}");
        // The column of the literal's digits.
        let line = format!("  %x = {text}");
        let col = line.rfind(' ').map(|i| i + 2 + usize::from(line[i + 1..].starts_with('-')));
        assert_eq!((e.line, Some(e.col as usize)), (2, col), "{text}: {e}");
    }
}

#[test]
fn arithmetic_and_print() {
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("tfrt.add.i32 %a, %b", &["i32", "i32"], &["i32"]),
        ("tfrt.add.f64 %a, %b", &["f64", "f64"], &["f64"]),
        ("tfrt.mul.i32 %a, %b", &["i32", "i32"], &["i32"]),
        ("tfrt.div.i64 %a, %b", &["i64", "i64"], &["i64", "i64"]),
        ("tfrt.equal.i32 %a, %b", &["i32", "i32"], &["i1"]),
        ("tfrt.print.i1 %c, %ch", &["i1", "!tfrt.chain"], &["!tfrt.chain"]),
        ("tfrt_test.count3.i32 %a", &["i32"], &["i32", "i32", "i32"]),
    ];
    for (text, operands, results) in cases {
        let o = op(text);
        assert_eq!(o.operand_types, tys(operands), "{text}");
        assert_eq!(o.result_types, tys(results), "{text}");
        assert_eq!(o.operands.len(), operands.len());
        assert!(o.results.is_empty(), "unbound results");
    }
}

#[test]
fn merge_chains_call_return() {
    let o = op("%m = tfrt.merge.chains %a, %ch : i32, !tfrt.chain");
    assert_eq!(o.operand_types, tys(&["i32", "!tfrt.chain"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain"]));

    let o = op("%r:2 = tfrt.call @g.x(%a, %b) : (i32, i32) -> (i32, i1)");
    assert_eq!(o.attrs, vec![NamedAttr { name: "callee".into(), value: Attr::Symbol("g.x".into()) }]);
    assert_eq!((o.operand_types, o.result_types), (tys(&["i32", "i32"]), tys(&["i32", "i1"])));
    assert_eq!(op("tfrt.call @g() : () -> ()").result_types, vec![]);
    assert_eq!(
        op("%x = tfrt.call @\"odd name\"(%a) : (i32) -> i32").attrs[0].value,
        Attr::Symbol("odd name".into())
    );

    let o = op("tfrt.return %a, %ch : i32, !tfrt.chain");
    assert_eq!(
        (o.operands.len(), o.operand_types, o.result_types),
        (2, tys(&["i32", "!tfrt.chain"]), vec![])
    );
    let o = op("tfrt.return");
    assert!(o.operands.is_empty() && o.operand_types.is_empty());
}

#[test]
fn if_with_else() {
    let o = op(
        "%r = tfrt.if %c, %a, %b attributes {k = 1 : i32} : (i32, i32) -> i32 {\n tfrt.return %a : i32\n } else {\n tfrt.return %b : i32\n }",
    );
    assert_eq!(o.operands.iter().map(|v| v.name.as_str()).collect::<Vec<_>>(), ["c", "a", "b"]);
    assert_eq!(o.operand_types, tys(&["i1", "i32", "i32"]));
    assert_eq!(o.result_types, tys(&["i32"]));
    assert_eq!(o.attrs, vec![NamedAttr { name: "k".into(), value: int(1, "i32") }]);
    assert_eq!(o.regions.len(), 2);
    for r in &o.regions {
        assert_eq!(r.args, vec![("a".to_string(), ty("i32")), ("b".to_string(), ty("i32"))]);
        assert_eq!(r.ops.len(), 1);
    }
}

#[test]
fn if_without_else_gets_an_empty_else() {
    let o = op("tfrt.if %c, %ch : (!tfrt.chain) -> () {\n tfrt.return\n }");
    let [_, otherwise] = o.regions.as_slice() else { panic!("two regions") };
    assert_eq!(otherwise.args, vec![("ch".to_string(), ty("!tfrt.chain"))]);
    assert_eq!(otherwise.ops.len(), 1);
    assert_eq!(otherwise.ops[0].name, "tfrt.return");
    assert!(otherwise.ops[0].operands.is_empty());
    assert_eq!(otherwise.ops[0].loc, o.loc);

    let e = parse_err("func.func @f(%c: i1) {\n  %r = tfrt.if %c : () -> i32 {\n    tfrt.return\n  }\n}");
    assert_eq!(e.message, "expected 'else' in 'tfrt.if' with result values");
    assert_eq!((e.line, e.col), (5, 1));
}

#[test]
fn repeat() {
    let o = op(
        "%r:2 = tfrt.repeat.i32 %a, %b, %ch : i32, !tfrt.chain {\n tfrt.return %b, %ch : i32, !tfrt.chain\n }",
    );
    assert_eq!(o.operand_types, tys(&["i32", "i32", "!tfrt.chain"]));
    assert_eq!(o.result_types, tys(&["i32", "!tfrt.chain"]));
    assert_eq!(o.regions[0].args, vec![("b".to_string(), ty("i32")), ("ch".to_string(), ty("!tfrt.chain"))]);
    assert_eq!(o.results, vec![ResultGroup { name: "r".into(), count: 2 }]);

    let o = op("tfrt.repeat.i32 %a {\n tfrt.return\n }");
    assert_eq!((o.operand_types, o.result_types), (tys(&["i32"]), vec![]));
    assert!(o.regions[0].args.is_empty());
}

#[test]
fn functional_control_flow() {
    let o = op("%r = tfrt.cond %c @t @f (%a) : (i32) -> (i32)");
    assert_eq!(names(&o.attrs), ["a_true_fn", "b_false_fn"]);
    assert_eq!(*attr(&o, "b_false_fn"), Attr::Symbol("f".into()));
    assert_eq!((o.operands.len(), o.operand_types.clone()), (2, tys(&["i1", "i32"])));

    let o = op("%x, %y = tfrt.case %a [@b0, @b1] (%ch, %b) :  (!tfrt.chain, i32) -> (!tfrt.chain, i32)");
    assert_eq!(
        *attr(&o, "branches"),
        Attr::Array(vec![Attr::Symbol("b0".into()), Attr::Symbol("b1".into())])
    );
    assert_eq!(o.operand_types, tys(&["i32", "!tfrt.chain", "i32"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain", "i32"]));

    let o = op(
        "%x, %y = tfrt.while %c @body(%ch, %a) parallel_iterations(4) : (!tfrt.chain, i32) -> (!tfrt.chain, i32)",
    );
    assert_eq!(names(&o.attrs), ["body_fn", "parallel_iterations"]);
    assert_eq!(*attr(&o, "parallel_iterations"), int(4, "i64"));
    assert_eq!(o.operand_types, tys(&["i1", "!tfrt.chain", "i32"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain", "i32"]));
    let o = op("%x = tfrt.while %c @body(%a) : (i32) -> (i32)");
    assert_eq!(*attr(&o, "parallel_iterations"), int(1, "i64"));

    let o = op("%x = tfrt.once @init(%a) : (i32) -> (i32)");
    assert_eq!(*attr(&o, "function"), Attr::Symbol("init".into()));
    assert_eq!((o.operand_types, o.result_types), (tys(&["i32"]), tys(&["i32"])));
}

#[test]
fn parallel_forms() {
    let o = op("%d = tfrt.parallel_for.i32 %a to %b fixed %a, %ch, %c : !tfrt.chain, i1 {\n tfrt.return\n }");
    assert_eq!(o.operands.len(), 5);
    assert_eq!(o.operand_types, tys(&["i32", "i32", "i32", "!tfrt.chain", "i1"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain"]));
    let args: Vec<_> = o.regions[0].args.iter().map(|(n, t)| (n.as_str(), t.0.as_str())).collect();
    assert_eq!(args, [("a", "i32"), ("b", "i32"), ("ch", "!tfrt.chain"), ("c", "i1")]);

    let o = op("tfrt.parallel_for.i32 %a to %b fixed %b {\n tfrt.return\n }");
    assert_eq!(o.operand_types, tys(&["i32"; 3]));
    assert_eq!(o.regions[0].args.len(), 2);

    let o = op("%d = tfrt.parallel_call.i32 %a to %b fixed %a @body(%ch) : !tfrt.chain");
    assert_eq!(*attr(&o, "callee"), Attr::Symbol("body".into()));
    assert_eq!(o.operand_types, tys(&["i32", "i32", "i32", "!tfrt.chain"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain"]));
    let o = op("tfrt.parallel_call.i32 %a to %b fixed %a @body()");
    assert_eq!(o.operands.len(), 3);
}

#[test]
fn test_kernel_forms() {
    let o = op(
        "%y = tfrt_test.do.async %a, %ch attributes {x} : (i32, !tfrt.chain) -> (i32) {\n tfrt.return %a : i32\n }",
    );
    assert_eq!(o.operand_types, tys(&["i32", "!tfrt.chain"]));
    assert_eq!(o.regions[0].args, vec![("a".into(), ty("i32")), ("ch".into(), ty("!tfrt.chain"))]);
    assert_eq!(o.attrs, vec![NamedAttr { name: "x".into(), value: Attr::Unit }]);

    let o = op(
        "tfrt_test.benchmark \"bench\"(%a : i32, %ch : !tfrt.chain) duration_secs = 2, max_count = 10 {\n tfrt.return %a : i32\n }",
    );
    assert_eq!(names(&o.attrs), ["name", "duration_secs", "max_count", "num_warmup_runs"]);
    assert_eq!(*attr(&o, "name"), Attr::String("bench".into()));
    assert_eq!(*attr(&o, "duration_secs"), int(2, "i32"));
    assert_eq!(*attr(&o, "num_warmup_runs"), int(1, "i32"));
    assert_eq!(o.operand_types, tys(&["i32", "!tfrt.chain"]));
    assert_eq!(o.result_types, tys(&["!tfrt.chain"]));
    assert_eq!(o.regions[0].args.len(), 2);
    let o = op(
        "tfrt_test.benchmark \"b\"() num_warmup_runs = 0, max_count = 1, duration_secs = 3 {\n tfrt.return\n }",
    );
    assert_eq!(*attr(&o, "num_warmup_runs"), int(0, "i32"));
    assert_eq!(*attr(&o, "duration_secs"), int(3, "i32"));

    let o = op("%x = tfrt_test.test_cost %a, %b {id = 3 : i64, _tfrt_cost = 10 : i64} : i32, i32");
    assert_eq!((o.operand_types, o.result_types), (tys(&["i32", "i32"]), tys(&["i32"])));
    assert_eq!(names(&o.attrs), ["id", "_tfrt_cost"]);

    let o = op("%t = tfrt_dht.create_uninitialized_tensor.f32.1 [3 : i64, 4]");
    assert_eq!(*attr(&o, "shape"), Attr::Array(vec![int(3, "i64"), int(4, "i64")]));
    assert_eq!(o.result_types, tys(&["!tfrt_tensor.tensor"]));
    assert!(o.operands.is_empty() && o.operand_types.is_empty());
}

#[test]
fn generic_ops_packs_and_result_groups() {
    let ops = ops(
        "func.func @f(%h: !tfrt.chain) {\n  %v:2 = \"t.two\"(%h) {n = 1} : (!tfrt.chain) -> (i32, !tfrt.chain)\n  %a, %b = \"t.pair\"() : () -> (i32, i32)\n  \"t.sink\"(%v#1, %a) : (!tfrt.chain, i32) -> i32\n  \"use\"() : () -> ()\n  tfrt.return\n}",
    );
    assert_eq!(ops[0].results, vec![ResultGroup { name: "v".into(), count: 2 }]);
    assert_eq!(ops[0].attrs, vec![NamedAttr { name: "n".into(), value: int(1, "i64") }]);
    assert_eq!(
        ops[1].results.iter().map(|g| (g.name.as_str(), g.count)).collect::<Vec<_>>(),
        [("a", 1), ("b", 1)]
    );
    let sink = &ops[2];
    assert!(sink.results.is_empty());
    assert_eq!(sink.result_types, tys(&["i32"]));
    assert_eq!(
        sink.operands[0],
        ValueRef {
            name: "v".into(),
            index: Some(1),
            loc: Loc::FileLineCol { file: "t.mlir".into(), line: 4, col: 12 }
        }
    );
    assert_eq!(sink.operands[1].index, None);
    assert_eq!(ops[3].name, "use");
}

#[test]
fn region_args_after_pack_elements() {
    let o = op("%r = tfrt_test.do.async %p#1 : (i32) -> (i32) {\n tfrt.return %p#1 : i32\n }");
    assert_eq!(o.regions[0].args, vec![("p#1".to_string(), ty("i32"))]);
}

#[test]
fn generic_regions_with_block_arguments() {
    let o = op(
        "%r = \"t.loop\"(%a) ({\n ^bb0(%x: i32, %y: i1):\n \"t.yield\"(%x) : (i32) -> ()\n }, {\n }) : (i32) -> i32",
    );
    assert_eq!(o.regions.len(), 2);
    assert_eq!(o.regions[0].args, vec![("x".into(), ty("i32")), ("y".into(), ty("i1"))]);
    assert_eq!(o.regions[1], Region { args: vec![], ops: vec![] });
}

#[test]
fn result_count_must_match() {
    let e = parse_err("func.func @f() {\n  %a, %b = tfrt.new.chain\n}");
    assert_eq!((e.line, e.col), (2, 3));
    assert!(e.message.contains("defines 1 result(s) but 2 name(s) are bound"), "{e}");
    let e = parse_err("func.func @f() {\n  %a:3 = \"x\"() : () -> (i32, i32)\n}");
    assert!(e.message.contains("defines 2 result(s) but 3"), "{e}");
    let e = parse_err("func.func @f(%a: i32) {\n  \"x\"(%a) : () -> ()\n}");
    assert_eq!(e.message, "1 operand(s) present, but 0 type(s) given");
}

#[test]
fn modules_and_functions() {
    let m = parse_ok(
        "module attributes {tfrt.cost_threshold = 1 : i64} {\n func.func private @n(%x: i32) -> (i32, !tfrt.chain) attributes {tfrt.native}\n func.func @g() -> () {\n tfrt.return\n }\n}",
    );
    assert_eq!(m.attrs, vec![NamedAttr { name: "tfrt.cost_threshold".into(), value: int(1, "i64") }]);
    let [native, g] = m.funcs.as_slice() else { panic!("two functions") };
    assert_eq!(native.name, "n");
    assert_eq!(native.args, vec![("x".to_string(), ty("i32"))]);
    assert_eq!(native.results, tys(&["i32", "!tfrt.chain"]));
    assert_eq!(native.attrs, vec![NamedAttr { name: "tfrt.native".into(), value: Attr::Unit }]);
    assert!(native.body.is_none());
    assert!(g.results.is_empty());
    assert_eq!(native.loc, Loc::FileLineCol { file: "t.mlir".into(), line: 2, col: 2 });

    let m = parse_ok("module {\n}\n");
    assert!(m.funcs.is_empty() && m.attrs.is_empty());
    assert_eq!(parse_ok("// only a comment\n"), Module::default());

    let m = parse_ok("func.func @f(%x: i32, %y: !my.type<4, \"s>\">) -> i32 {\n tfrt.return %x : i32\n}");
    let f = &m.funcs[0];
    assert_eq!(
        f.body.as_ref().map(|b| b.args.clone()),
        Some(f.args.clone()),
        "body args are the function args"
    );
    assert_eq!(f.args[1].1, ty("!my.type<4, \"s>\">"));
}

#[test]
fn attribute_values() {
    let o = op(concat!(
        "\"t.attrs\"() {i = -42 : i32, h = 0xFF, u = 7 : ui8, f = 1.5e-3 : f32, d = -2.0, ",
        "s = \"q\\\"\\\\\\n\\t\\41\", b = true, arr = [[1, \"x\"], [], [2.0 : f64]], sym = @\"a b\", ",
        "dict = {z = 1 : i32, a}, t = !tfrt.chain, t2 = i64, u2 = unit, \"quoted key\" = false, one = 1 : i1} : () -> ()"
    ));
    let expect = [
        ("i", int(-42, "i32")),
        ("h", int(255, "i64")),
        ("u", int(7, "ui8")),
        ("f", Attr::Float { value: f64::from(1.5e-3f32), ty: ty("f32") }),
        ("d", Attr::Float { value: -2.0, ty: ty("f64") }),
        ("s", Attr::String("q\"\\\n\tA".into())),
        ("b", Attr::Bool(true)),
        (
            "arr",
            Attr::Array(vec![
                Attr::Array(vec![int(1, "i64"), Attr::String("x".into())]),
                Attr::Array(vec![]),
                Attr::Array(vec![Attr::Float { value: 2.0, ty: ty("f64") }]),
            ]),
        ),
        ("sym", Attr::Symbol("a b".into())),
        (
            "dict",
            Attr::Dict(vec![
                NamedAttr { name: "z".into(), value: int(1, "i32") },
                NamedAttr { name: "a".into(), value: Attr::Unit },
            ]),
        ),
        ("t", Attr::Type(ty("!tfrt.chain"))),
        ("t2", Attr::Type(ty("i64"))),
        ("u2", Attr::Unit),
        ("quoted key", Attr::Bool(false)),
        ("one", Attr::Bool(true)),
    ];
    assert_eq!(o.attrs.len(), expect.len());
    for (name, value) in expect {
        assert_eq!(attr(&o, name), &value, "{name}");
    }
}

/// A function whose arguments have the tensor layer's types, with `body` before its return.
fn tensor_function(body: &str) -> String {
    format!(
        "func.func @f(%s: !ts.shape, %p: !ts.partial_shape, %x: !ts.fixed_rank_shape.2, %t: !tfrt_tensor.tensor, \
         %u: !tfrt_tensor.tensor, %buf: !ht.host_buffer, %i: i32, %n: i64, %ch: !tfrt.chain) {{\n{body}\n  tfrt.return\n}}\n"
    )
}

/// What a round trip must keep of an op: everything but the locations.
fn shape_of(op: &Op) -> (String, Vec<String>, Vec<Type>, Vec<Type>, Vec<NamedAttr>, usize) {
    let operands = op.operands.iter().map(|v| v.name.clone()).collect();
    (
        op.name.clone(),
        operands,
        op.operand_types.clone(),
        op.result_types.clone(),
        op.attrs.clone(),
        op.regions.len(),
    )
}

/// Every custom form of the tensor layer gives the op its generic form
/// spells out.
#[test]
fn tensor_forms_are_their_generic_forms() {
    let (t, ch) = ("!tfrt_tensor.tensor", "!tfrt.chain");
    let cases = [
        (
            "ts.build_shape [1 : i64, 57 : i64, 92 : i64]",
            "\"ts.build_shape\"() {value = [1, 57, 92]} : () -> !ts.shape".to_string(),
        ),
        ("ts.build_shape []", "\"ts.build_shape\"() {value = []} : () -> !ts.shape".into()),
        (
            "ts.build_partial_shape [-1, 57 : i64, -1]",
            "\"ts.build_partial_shape\"() {value = [-1, 57, -1]} : () -> !ts.partial_shape".into(),
        ),
        (
            "ts.build_unranked_partial_shape",
            "\"ts.build_unranked_partial_shape\"() : () -> !ts.partial_shape".into(),
        ),
        ("ts.print_shape %s, %ch", format!("\"ts.print_shape\"(%s, %ch) : (!ts.shape, {ch}) -> {ch}")),
        (
            "ts.print_partial_shape %p, %ch",
            format!("\"ts.print_partial_shape\"(%p, %ch) : (!ts.partial_shape, {ch}) -> {ch}"),
        ),
        (
            "ts.print_fixed_rank_shape.2 %x, %ch",
            format!("\"ts.print_fixed_rank_shape.2\"(%x, %ch) : (!ts.fixed_rank_shape.2, {ch}) -> {ch}"),
        ),
        ("ts.equal_shape %s, %s", "\"ts.equal_shape\"(%s, %s) : (!ts.shape, !ts.shape) -> i1".into()),
        ("ts.get_num_elements %s", "\"ts.get_num_elements\"(%s) : (!ts.shape) -> i64".into()),
        ("ts.get_dimension %s, %i", "\"ts.get_dimension\"(%s, %i) : (!ts.shape, i32) -> i64".into()),
        (
            "ts.as_fixed_rank_shape.1 %s",
            "\"ts.as_fixed_rank_shape.1\"(%s) : (!ts.shape) -> !ts.fixed_rank_shape.1".into(),
        ),
        ("ts.to_shape %p", "\"ts.to_shape\"(%p) : (!ts.partial_shape) -> !ts.shape".into()),
        ("ts.to_partial_shape %s", "\"ts.to_partial_shape\"(%s) : (!ts.shape) -> !ts.partial_shape".into()),
        (
            "tfrt_dht.create_uninitialized_tensor.ui16.0 []",
            format!("\"tfrt_dht.create_uninitialized_tensor.ui16.0\"() {{shape = []}} : () -> {t}"),
        ),
        (
            "tfrt_dht.create_uninitialized_tensor.complex128.4 [1 : i64, 2, 3, 4]",
            format!(
                "\"tfrt_dht.create_uninitialized_tensor.complex128.4\"() {{shape = [1, 2, 3, 4]}} : () -> {t}"
            ),
        ),
        (
            "tfrt_dht.fill_tensor_with_constant.f32 %t, %ch 1.0 : f32",
            format!(
                "\"tfrt_dht.fill_tensor_with_constant.f32\"(%t, %ch) {{value = 1. : f32}} : ({t}, {ch}) -> {ch}"
            ),
        ),
        (
            "tfrt_dht.fill_tensor_with_constant.i64 %t, %ch -3",
            format!(
                "\"tfrt_dht.fill_tensor_with_constant.i64\"(%t, %ch) {{value = -3 : i64}} : ({t}, {ch}) -> {ch}"
            ),
        ),
        (
            "tfrt_dht.fill_tensor_with_constant.bool %t, %ch true",
            format!(
                "\"tfrt_dht.fill_tensor_with_constant.bool\"(%t, %ch) {{value = 1 : i1}} : ({t}, {ch}) -> {ch}"
            ),
        ),
        (
            "tfrt_dht.set_tensor_with_constant_values.i32 %t, %ch [1 : i32, -1 : i32]",
            format!(
                "\"tfrt_dht.set_tensor_with_constant_values.i32\"(%t, %ch) {{values = [1 : i32, -1 : i32]}} : ({t}, {ch}) -> {ch}"
            ),
        ),
        (
            "tfrt_dht.set_tensor_with_constant_values.complex64 %t, %ch [1. : f32, 0.0 : f32]",
            format!(
                "\"tfrt_dht.set_tensor_with_constant_values.complex64\"(%t, %ch) {{values = [1.0 : f32, 0. : f32]}} : ({t}, {ch}) -> {ch}"
            ),
        ),
        (
            "tfrt_dht.print_tensor %t, %ch",
            format!("\"tfrt_dht.print_tensor\"(%t, %ch) : ({t}, {ch}) -> {ch}"),
        ),
        (
            "tfrt_dht.tensor_equal.ui64 %t, %u, %ch",
            format!("\"tfrt_dht.tensor_equal.ui64\"(%t, %u, %ch) : ({t}, {t}, {ch}) -> (i1, {ch})"),
        ),
        (
            "tfrt_dht.make_tensor.f32 %buf, %s, %ch",
            format!(
                "\"tfrt_dht.make_tensor.f32\"(%buf, %s, %ch) : (!ht.host_buffer, !ts.shape, {ch}) -> ({t}, {ch})"
            ),
        ),
        ("tfrt_dht.get_tensor_shape %t", format!("\"tfrt_dht.get_tensor_shape\"(%t) : ({t}) -> !ts.shape")),
        (
            "tfrt_dht.allocate_buffer %n, %n",
            "\"tfrt_dht.allocate_buffer\"(%n, %n) : (i64, i64) -> !ht.host_buffer".into(),
        ),
        (
            "tfrt_dht.get_buffer %t, %ch",
            format!("\"tfrt_dht.get_buffer\"(%t, %ch) : ({t}, {ch}) -> (!ht.host_buffer, {ch})"),
        ),
        (
            "tfrt_dht.get_buffer_slice %buf, %n, %n",
            "\"tfrt_dht.get_buffer_slice\"(%buf, %n, %n) : (!ht.host_buffer, i64, i64) -> !ht.host_buffer"
                .into(),
        ),
        (
            "tfrt_dht.print_buffer %buf, %ch",
            format!("\"tfrt_dht.print_buffer\"(%buf, %ch) : (!ht.host_buffer, {ch}) -> {ch}"),
        ),
    ];
    for (custom, generic) in &cases {
        let body = format!("  {custom}\n  {generic}");
        let ops = ops(&tensor_function(&body));
        assert_eq!(shape_of(&ops[0]), shape_of(&ops[1]), "{custom}");
    }
}

#[test]
fn shape_arrays_span_lines_and_take_negative_dims() {
    let ops = ops(&tensor_function(
        "  %a = ts.build_shape [\n        0 : i64, 1 : i64,\n        -2 : i64,\n        4294967295 ]\n  %b = ts.build_partial_shape [ -1 : i64 ]",
    ));
    assert_eq!(
        *attr(&ops[0], "value"),
        Attr::Array(vec![int(0, "i64"), int(1, "i64"), int(-2, "i64"), int(4294967295, "i64")])
    );
    assert_eq!(*attr(&ops[1], "value"), Attr::Array(vec![int(-1, "i64")]));
    assert_eq!(ops[1].result_types, tys(&["!ts.partial_shape"]));
}

/// `!t.tensor` (TFRT's e94ffc4b spelling) is stored as `!tfrt_tensor.tensor` wherever a type
/// is written.
#[test]
fn old_tensor_type_is_canonicalized() {
    let m = parse_ok(
        "func.func @f(%a: !t.tensor) -> !t.tensor attributes {ty = !t.tensor} {\n  %b = \"x.y\"(%a) : (!t.tensor) -> (!t.tensor)\n  tfrt.return %b : !t.tensor\n}\n",
    );
    let f = &m.funcs[0];
    let tensor = ty("!tfrt_tensor.tensor");
    assert_eq!((f.args[0].1.clone(), f.results.clone()), (tensor.clone(), vec![tensor.clone()]));
    assert_eq!(f.attrs[0].value, Attr::Type(tensor.clone()));
    let body = &f.body.as_ref().expect("body").ops;
    assert_eq!(
        (body[0].operand_types.clone(), body[0].result_types.clone()),
        (vec![tensor.clone()], vec![tensor.clone()])
    );
    assert_eq!(body[1].operand_types, vec![tensor]);
    // Other types keep their spelling.
    assert_eq!(op("\"x\"() {t = !t.tensor2} : () -> ()").attrs[0].value, Attr::Type(ty("!t.tensor2")));
}

/// Names TFRT does not register have no custom form: other dtypes and ranks, other kernels.
#[test]
fn unregistered_tensor_ops_are_generic_only() {
    for custom in [
        "%x = tfrt_dht.create_uninitialized_tensor.f64.2 [1]",
        "%x = tfrt_dht.create_uninitialized_tensor.f32.5 [1, 1, 1, 1, 1]",
        "%x = ts.as_fixed_rank_shape.4 %s",
        "%x, %y = tfrt_dht.tensor_allclose.f32 %t, %u, %ch",
    ] {
        let e = parse_err(&tensor_function(&format!("  {custom}")));
        assert!(e.message.starts_with("unknown custom op form"), "{custom}: {e}");
    }
    let o = ops(&tensor_function(
        "  %c, %d = \"tfrt_dht.tensor_allclose.f32\"(%t, %u, %ch) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)",
    ));
    assert_eq!(o[0].result_types, tys(&["i1", "!tfrt.chain"]));
}
