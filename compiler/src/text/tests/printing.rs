//! Printer conventions (`tfrt_opt` style), generic fallbacks and round trips of every custom form.

use super::*;
use crate::ast::{Func, Loc, Region, ResultGroup, ValueRef};
use crate::text::printer::attr::float;

/// A program using every custom form, generic ops with regions, packs and locations.
const ALL_FORMS: &str = r#"
#named = loc("alias/name")
module attributes {tfrt.cost_threshold = 1 : i64, a.flag} {
  func.func private @native(%x: i32) -> i32 attributes {tfrt.native}
  func.func @callee(%x: i32, %y: i32) -> (i32, i32) {
    tfrt.return %x, %y : i32, i32
  }
  func.func @body(%ch: !tfrt.chain, %i: i32) -> (!tfrt.chain, i32, i1) {
    %c = tfrt.constant.i1 false
    tfrt.return %ch, %i, %c : !tfrt.chain, i32, i1
  }
  func.func @all(%n: i32, %ch: !tfrt.chain) -> !tfrt.chain {
    %c0 = tfrt.new.chain loc(#named)
    %t = tfrt.constant.i1 true
    %k = tfrt.constant.ui32 4095
    %big = tfrt.constant.ui64 18446744073709551615
    %l = tfrt.constant.i64 -5
    %f = tfrt.constant.f32 0.1
    %d = tfrt.constant.f64 2.5e10
    %s = tfrt.add.i32 %n, %n
    %p = tfrt.mul.i32 %s, %n
    %q, %r = tfrt.div.i32 %p, %n
    %e = tfrt.equal.i32 %q, %r
    %ff = tfrt.add.f32 %f, %f
    %ch1 = tfrt.print.f32 %ff, %ch loc(unknown)
    %m = tfrt.merge.chains %ch1, %c0, %n : !tfrt.chain, !tfrt.chain, i32
    %x:2 = tfrt.call @callee(%n, %s) : (i32, i32) -> (i32, i32)
    %y = tfrt.if %t, %x#1, %n attributes {tag = "t"} : (i32, i32) -> i32 {
      %z = tfrt.add.i32 %x#1, %n
      tfrt.return %z : i32
    } else {
      tfrt.return %n : i32
    }
    tfrt.if %e : () -> () {
      tfrt.return
    }
    %w:2 = tfrt.repeat.i32 %n, %ch, %y : !tfrt.chain, i32 {
      %inner = tfrt.print.i32 %y, %ch
      tfrt.return %inner, %y : !tfrt.chain, i32
    }
    tfrt.repeat.i32 %n {
      tfrt.return
    }
    %cv:2 = tfrt.cond %t @callee @callee (%n, %n) : (i32, i32) -> (i32, i32)
    %cs:3 = tfrt.case %n [@body, @body] (%ch, %n) : (!tfrt.chain, i32) -> (!tfrt.chain, i32, i1)
    %wh:2 = tfrt.while %t @body(%ch, %n) parallel_iterations(3) : (!tfrt.chain, i32) -> (!tfrt.chain, i32)
    %o = tfrt.once @native(%n) : (i32) -> (i32)
    %pf = tfrt.parallel_for.i32 %n to %s fixed %n, %ch : !tfrt.chain {
      tfrt.return %ch : !tfrt.chain
    }
    %pf2 = tfrt.parallel_for.i32 %n to %s fixed %n {
      tfrt.return
    }
    %pc = tfrt.parallel_call.i32 %n to %s fixed %n @native(%ch) : !tfrt.chain
    %as:2 = tfrt_test.do.async %n, %ch attributes {k = [1, 2.0]} : (i32, !tfrt.chain) -> (i32, !tfrt.chain) {
      tfrt.return %n, %ch : i32, !tfrt.chain
    }
    %b = tfrt_test.benchmark "bench"(%n : i32, %ch : !tfrt.chain) duration_secs = 1, max_count = 100 {
      tfrt.return %ch : !tfrt.chain
    }
    %c1, %c2, %c3 = tfrt_test.count3.i32 %n
    %tc = tfrt_test.test_cost %n, %c1 {id = 0 : i64, _tfrt_cost = 100 : i64} : i32, i32
    %tc2 = tfrt_test.test_cost {id = 1 : i64}
    %tensor = tfrt_dht.create_uninitialized_tensor.f32.1 [2 : i64, 3 : i64]
    %g:2 = "t.generic"(%n) ({
    ^bb0(%arg: i32):
      "t.yield"(%arg) : (i32) -> ()
    }) {s = "x\"y", f = 1.0e-7 : f64} : (i32) -> (i32, !tfrt.chain)
    "t.unused"(%g#0) : (i32) -> i32
    tfrt.return %m : !tfrt.chain
  }
}
"#;

#[test]
fn every_form_round_trips() {
    let printed = assert_stable(ALL_FORMS);
    for (custom, generic) in [
        ("tfrt.constant.ui64 18446744073709551615", ""),
        ("tfrt.constant.f32 1.000000e-01", ""),
        ("tfrt.constant.f64 2.500000e+10", ""),
        ("%9:2 = tfrt.div.i32 %8, %arg0", ""),
        ("%10 = tfrt.equal.i32 %9#0, %9#1", ""),
        ("%13 = tfrt.merge.chains %12, %0, %arg0 : !tfrt.chain, !tfrt.chain, i32", ""),
        ("%14:2 = tfrt.call @callee(%arg0, %7) : (i32, i32) -> (i32, i32)", ""),
        ("%15 = tfrt.if %1, %14#1, %arg0 attributes {tag = \"t\"} : (i32, i32) -> (i32)  {", ""),
        ("%16 = tfrt.add.i32 %14#1, %arg0", ""),
        ("tfrt.if %10 : () -> ()  {\n      tfrt.return\n    } else  {\n      tfrt.return\n    }", ""),
        ("%17:2 = tfrt.repeat.i32 %arg0, %arg1, %15 : !tfrt.chain, i32 {", ""),
        ("tfrt.repeat.i32 %arg0 {", ""),
        ("tfrt.cond %1 @callee @callee (%arg0, %arg0) : (i32, i32) -> (i32, i32)", ""),
        ("tfrt.case %arg0 [@body, @body] (%arg1, %arg0) : (!tfrt.chain, i32) -> (!tfrt.chain, i32, i1)", ""),
        (
            "tfrt.while %1 @body(%arg1, %arg0) parallel_iterations(3) : (!tfrt.chain, i32) -> (!tfrt.chain, i32)",
            "",
        ),
        ("tfrt.once @native(%arg0) : (i32) -> (i32)", ""),
        ("tfrt.parallel_for.i32 %arg0 to %7 fixed %arg0, %arg1 : !tfrt.chain {", ""),
        ("tfrt.parallel_for.i32 %arg0 to %7 fixed %arg0 {", ""),
        ("tfrt.parallel_call.i32 %arg0 to %7 fixed %arg0 @native(%arg1) : !tfrt.chain", ""),
        (
            "tfrt_test.do.async %arg0, %arg1 attributes {k = [1 : i64, 2.000000e+00 : f64]} : (i32, !tfrt.chain) -> (i32, !tfrt.chain) {",
            "",
        ),
        (
            "tfrt_test.benchmark \"bench\"(%arg0 : i32, %arg1 : !tfrt.chain) duration_secs = 1, max_count = 100, num_warmup_runs = 1  {",
            "",
        ),
        ("%28:3 = tfrt_test.count3.i32 %arg0", ""),
        ("%29 = tfrt_test.test_cost %arg0, %28#0 {_tfrt_cost = 100 : i64, id = 0 : i64} : i32, i32", ""),
        ("tfrt_test.test_cost {id = 1 : i64}", ""),
        ("%31 = tfrt_dht.create_uninitialized_tensor.f32.1 [2, 3]", ""),
        ("%32:2 = \"t.generic\"(%arg0) ({", "^bb0(%arg2: i32):"),
        (
            "\"t.yield\"(%arg2) : (i32) -> ()",
            "}) {f = 1.000000e-07 : f64, s = \"x\\\"y\"} : (i32) -> (i32, !tfrt.chain)",
        ),
        ("\"t.unused\"(%32#0) : (i32) -> i32", ""),
        ("module attributes {a.flag, tfrt.cost_threshold = 1 : i64} {", ""),
        ("func.func private @native(%arg0: i32) -> i32 attributes {tfrt.native}", ""),
        ("func.func @body(%arg0: !tfrt.chain, %arg1: i32) -> (!tfrt.chain, i32, i1) {", ""),
    ] {
        assert!(
            printed.contains(custom) && printed.contains(generic),
            "missing {custom:?} {generic:?} in\n{printed}"
        );
    }
}

#[test]
fn locations_are_printed_when_asked() {
    let printed = print(&parse_ok(ALL_FORMS), &PrintOptions { locations: true });
    assert!(printed.contains("%0 = tfrt.new.chain loc(\"alias/name\")"), "{printed}");
    assert!(printed.contains("%12 = tfrt.print.f32 %11, %arg1 loc(unknown)"), "{printed}");
    assert!(printed.contains(
        "func.func private @native(%arg0: i32) -> i32 attributes {tfrt.native} loc(\"t.mlir\":4:3)"
    ));
    assert!(
        printed.contains("  } loc(\"t.mlir\":8:3)\n  func.func @all"),
        "function location after its body"
    );
}

#[test]
fn floats() {
    assert_eq!(float(f64::from(0.1f32), "f32"), "1.000000e-01");
    assert_eq!(float(0.1, "f64"), "1.000000e-01");
    assert_eq!(float(156.0, "f64"), "1.560000e+02");
    assert_eq!(float(-0.0, "f64"), "-0.000000e+00");
    assert_eq!(float(1.0 / 3.0, "f64"), "3.333333333333333e-01");
    assert_eq!(float(f64::from(1.0f32 / 3.0), "f32"), "3.3333334e-01");
    assert_eq!(float(1e-300, "f64"), "1.000000e-300");
    assert_eq!(float(f64::INFINITY, "f32"), "0x7F800000");
    assert_eq!(float(f64::NEG_INFINITY, "f64"), "0xFFF0000000000000");
    for v in [0.1, 1.0 / 3.0, 123456.789, 5e-324, f64::MAX, -2.5] {
        let m = parse_ok(&format!(
            "func.func @f() {{\n  \"t\"() {{v = {} : f64}} : () -> ()\n}}",
            float(v, "f64")
        ));
        let Attr::Float { value, .. } = attr(&m.funcs[0].body.as_ref().expect("body").ops[0], "v") else {
            panic!()
        };
        assert_eq!(value.to_bits(), v.to_bits(), "{v}");
    }
}

#[test]
fn ops_that_do_not_fit_their_custom_form_print_generically() {
    let chain = ty("!tfrt.chain");
    let v = |name: &str| ValueRef { name: name.into(), index: None, loc: Loc::Unknown };
    let mk = |name: &str, operands: Vec<ValueRef>, operand_types: Vec<Type>, result_types: Vec<Type>| Op {
        name: name.into(),
        results: vec![],
        operands,
        operand_types,
        result_types,
        attrs: vec![],
        regions: vec![],
        loc: Loc::Unknown,
    };
    let ops = vec![
        mk("tfrt.add.i32", vec![v("a"), v("a"), v("a")], tys(&["i32"; 3]), tys(&["i32"])),
        mk("tfrt.new.chain", vec![], vec![], tys(&["i32"])),
        mk("tfrt.return", vec![], vec![], vec![]),
        mk("tfrt.if", vec![v("a")], tys(&["i32"]), vec![]),
        mk("tfrt.merge.chains", vec![], vec![], vec![chain.clone()]),
        mk("tfrt.return", vec![v("a")], tys(&["i32"]), vec![]),
    ];
    let module = Module {
        attrs: vec![],
        funcs: vec![Func {
            name: "f".into(),
            args: vec![("a".into(), ty("i32"))],
            results: vec![],
            attrs: vec![],
            body: Some(Region { args: vec![("a".into(), ty("i32"))], ops }),
            loc: Loc::Unknown,
        }],
    };
    let printed = print(&module, &PrintOptions::default());
    let expected = "module {
  func.func @f(%arg0: i32) {
    \"tfrt.add.i32\"(%arg0, %arg0, %arg0) : (i32, i32, i32) -> i32
    \"tfrt.new.chain\"() : () -> i32
    \"tfrt.return\"() : () -> ()
    \"tfrt.if\"(%arg0) : (i32) -> ()
    \"tfrt.merge.chains\"() : () -> !tfrt.chain
    tfrt.return %arg0 : i32
  }
}
";
    assert_eq!(printed, expected);
    let reparsed = parse_ok(&printed);
    let body = &reparsed.funcs[0].body.as_ref().expect("body").ops;
    assert_eq!(body.len(), 6);
    assert_eq!(print(&reparsed, &PrintOptions::default()), printed);
}

#[test]
fn value_numbering_and_packs() {
    let src = "func.func @f(%a: i32) -> i32 {\n  %p:2 = \"t.two\"() : () -> (i32, i32)\n  %x, %y = \"t.pair\"(%p#1, %a) : (i32, i32) -> (i32, i32)\n  tfrt.return %y : i32\n}";
    let printed = assert_stable(src);
    assert!(printed.contains("%0:2 = \"t.two\"() : () -> (i32, i32)"), "{printed}");
    // Results bound one by one print as one pack, as MLIR numbers an op's results.
    assert!(printed.contains("%1:2 = \"t.pair\"(%0#1, %arg0)"), "{printed}");
    assert!(printed.contains("tfrt.return %1#1 : i32"), "{printed}");
}

#[test]
fn strings_symbols_and_dictionaries() {
    let src = "func.func @\"weird name\"() {\n  \"t\"() {z = \"tab\\there\\0A\\01\", \"a key\" = @\"sym bol\", m = {y = 1, b}, e = []} : () -> ()\n  tfrt.return\n}";
    let printed = assert_stable(src);
    assert!(printed.contains("func.func @\"weird name\"()"), "{printed}");
    assert!(
        printed
            .contains("{\"a key\" = @\"sym bol\", e = [], m = {b, y = 1 : i64}, z = \"tab\\there\\n\\01\"}"),
        "{printed}"
    );
}

#[test]
fn region_args_follow_printed_operand_names() {
    let src = "func.func @f(%a: i32) {\n  %p:2 = \"t.two\"() : () -> (i32, i32)\n  %r = tfrt_test.do.async %p#1, %a : (i32, i32) -> (i32) {\n    %s = tfrt.add.i32 %p#1, %a\n    tfrt.return %s : i32\n  }\n  tfrt.return\n}";
    let printed = assert_stable(src);
    assert!(printed.contains("%1 = tfrt_test.do.async %0#1, %arg0 : (i32, i32) -> (i32) {"), "{printed}");
    assert!(printed.contains("%2 = tfrt.add.i32 %0#1, %arg0"), "{printed}");
    let reparsed = parse_ok(&printed);
    let region = &reparsed.funcs[0].body.as_ref().expect("body").ops[1].regions[0];
    assert_eq!(region.args, vec![("0#1".to_string(), ty("i32")), ("arg0".to_string(), ty("i32"))]);
}

#[test]
fn results_are_bound_only_when_named() {
    let m = parse_ok("func.func @f() {\n  \"t\"() : () -> i32\n  tfrt.return\n}");
    let op = &m.funcs[0].body.as_ref().expect("body").ops[0];
    assert_eq!(op.results, Vec::<ResultGroup>::new());
    let printed = print(&m, &PrintOptions::default());
    assert!(printed.contains("\n    \"t\"() : () -> i32\n"), "{printed}");
}

/// The tensor layer's custom forms, some written generically.
const TENSOR_FORMS: &str = r#"
func.func @tensors(%i: i32, %n: i64, %ch: !tfrt.chain) -> !tfrt.chain {
  %s = ts.build_shape [1 : i64, 57 : i64, 92 : i64]
  %e = "ts.build_shape"() { value = [] } : () -> !ts.shape
  %p = "ts.build_partial_shape"() { value = [-1 : i64, 57 : i64,
                                              -1 : i64] } : () -> !ts.partial_shape
  %u = ts.build_unranked_partial_shape
  %ch0 = ts.print_shape %s, %ch
  %ch1 = ts.print_partial_shape %p, %ch0
  %x = ts.as_fixed_rank_shape.3 %s
  %ch2 = ts.print_fixed_rank_shape.3 %x, %ch1
  %eq = ts.equal_shape %s, %e
  %ne = ts.get_num_elements %s
  %d = ts.get_dimension %s, %i
  %s2 = ts.to_shape %p
  %p2 = ts.to_partial_shape %s2
  %t = tfrt_dht.create_uninitialized_tensor.f32.2 [2 : i64, 3 : i64]
  %t0 = "tfrt_dht.create_uninitialized_tensor.bool.0"() { shape = [] } : () -> !t.tensor
  %ch3 = tfrt_dht.fill_tensor_with_constant.f32 %t, %ch2 1.0 : f32
  %ch4 = "tfrt_dht.set_tensor_with_constant_values.f32"(%t, %ch3) { values = [1. : f32, 2.5 : f32] } : (!t.tensor, !tfrt.chain) -> !tfrt.chain
  %ch5 = tfrt_dht.set_tensor_with_constant_values.i64 %t, %ch4 [1, -1 : i64, 7]
  %ch6 = tfrt_dht.print_tensor %t, %ch5
  %same, %ch7 = tfrt_dht.tensor_equal.f32 %t, %t, %ch6
  %shape = tfrt_dht.get_tensor_shape %t
  %buf = tfrt_dht.allocate_buffer %n, %n
  %slice = tfrt_dht.get_buffer_slice %buf, %n, %n
  %made, %ch8 = tfrt_dht.make_tensor.i32 %slice, %shape, %ch7
  %b2, %ch9 = tfrt_dht.get_buffer %made, %ch8
  %ch10 = tfrt_dht.print_buffer %b2, %ch9
  %c, %ch11 = "tfrt_dht.tensor_allclose.f32"(%t, %t, %ch10) : (!t.tensor, !t.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
  tfrt.return %ch11 : !tfrt.chain
}
"#;

/// `tfrt_opt` prints the tensor layer's ops in their custom forms, i64 array elements
/// without their type.
#[test]
fn tensor_forms_print_as_tfrt_opt_does() {
    let printed = assert_stable(TENSOR_FORMS);
    let expected = "module {
  func.func @tensors(%arg0: i32, %arg1: i64, %arg2: !tfrt.chain) -> !tfrt.chain {
    %0 = ts.build_shape [1, 57, 92]
    %1 = ts.build_shape []
    %2 = ts.build_partial_shape [-1, 57, -1]
    %3 = ts.build_unranked_partial_shape
    %4 = ts.print_shape %0, %arg2
    %5 = ts.print_partial_shape %2, %4
    %6 = ts.as_fixed_rank_shape.3 %0
    %7 = ts.print_fixed_rank_shape.3 %6, %5
    %8 = ts.equal_shape %0, %1
    %9 = ts.get_num_elements %0
    %10 = ts.get_dimension %0, %arg0
    %11 = ts.to_shape %2
    %12 = ts.to_partial_shape %11
    %13 = tfrt_dht.create_uninitialized_tensor.f32.2 [2, 3]
    %14 = tfrt_dht.create_uninitialized_tensor.bool.0 []
    %15 = tfrt_dht.fill_tensor_with_constant.f32 %13, %7 1.000000e+00 : f32
    %16 = tfrt_dht.set_tensor_with_constant_values.f32 %13, %15 [1.000000e+00 : f32, 2.500000e+00 : f32]
    %17 = tfrt_dht.set_tensor_with_constant_values.i64 %13, %16 [1, -1, 7]
    %18 = tfrt_dht.print_tensor %13, %17
    %19:2 = tfrt_dht.tensor_equal.f32 %13, %13, %18
    %20 = tfrt_dht.get_tensor_shape %13
    %21 = tfrt_dht.allocate_buffer %arg1, %arg1
    %22 = tfrt_dht.get_buffer_slice %21, %arg1, %arg1
    %23:2 = tfrt_dht.make_tensor.i32 %22, %20, %19#1
    %24:2 = tfrt_dht.get_buffer %23#0, %23#1
    %25 = tfrt_dht.print_buffer %24#0, %24#1
    %26:2 = \"tfrt_dht.tensor_allclose.f32\"(%13, %13, %25) : (!tfrt_tensor.tensor, !tfrt_tensor.tensor, !tfrt.chain) -> (i1, !tfrt.chain)
    tfrt.return %26#1 : !tfrt.chain
  }
}
";
    assert_eq!(printed, expected);
}

/// Tensor-layer ops that differ from their custom form's shape (an optional chain left out, an
/// extra attribute, other types) print generically, so the round trip keeps them as they are.
#[test]
fn tensor_ops_off_their_form_print_generically() {
    let src = r#"func.func @f(%s: !ts.shape, %t: !tfrt_tensor.tensor, %ch: !tfrt.chain) {
  %a = "ts.print_shape"(%s) : (!ts.shape) -> !tfrt.chain
  %b = "ts.build_shape"() {value = [1 : i32]} : () -> !ts.shape
  %c = "ts.build_shape"() {value = [1], other = 2 : i32} : () -> !ts.shape
  %d = "ts.build_shape"() : () -> !ts.shape
  %e = "ts.get_num_elements"(%s) : (!ts.shape) -> i32
  %f = "tfrt_dht.set_tensor_with_constant_values.i32"(%t, %ch) {values = 1 : i32} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %g = "tfrt_dht.fill_tensor_with_constant.i64"(%t, %ch) {value = [1.5, 0x7FF0000000000000 : f64, [2]]} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %h = "tfrt_dht.fill_tensor_with_constant.i32"(%t) {value = 1 : i32} : (!tfrt_tensor.tensor) -> !tfrt.chain
  tfrt.return
}
"#;
    let printed = assert_stable(src);
    for line in [
        "%0 = \"ts.print_shape\"(%arg0) : (!ts.shape) -> !tfrt.chain",
        // Not an i64 array, but the form's shape: the custom form keeps the element type.
        "%1 = ts.build_shape [1 : i32]",
        "%2 = \"ts.build_shape\"() {other = 2 : i32, value = [1 : i64]} : () -> !ts.shape",
        "%3 = \"ts.build_shape\"() : () -> !ts.shape",
        "%4 = \"ts.get_num_elements\"(%arg0) : (!ts.shape) -> i32",
        "%5 = \"tfrt_dht.set_tensor_with_constant_values.i32\"(%arg1, %arg2) {values = 1 : i32}",
        // Array elements drop the default types, except where a bare literal would read back
        // as another value.
        "%6 = tfrt_dht.fill_tensor_with_constant.i64 %arg1, %arg2 [1.500000e+00, 0x7FF0000000000000 : f64, [2]]",
        "%7 = \"tfrt_dht.fill_tensor_with_constant.i32\"(%arg1) {value = 1 : i32}",
    ] {
        assert!(printed.contains(line), "missing {line:?} in\n{printed}");
    }
}
