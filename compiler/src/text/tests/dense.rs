//! Dense elements attributes: every literal form, element type and error, and printing.

use super::*;
use crate::ast::DenseAttr;

/// The program around an attribute `value = TEXT`; TEXT starts at line 2, column 25.
fn program(text: &str) -> String {
    format!("func.func @f() {{\n  %t = \"x.y\"() {{value = {text}}} : () -> i32\n  tfrt.return\n}}\n")
}

/// The dense attribute `text` parses to.
fn dense(text: &str) -> DenseAttr {
    let src = program(text);
    match attr(&ops(&src)[0], "value") {
        Attr::Dense(d) => (**d).clone(),
        other => panic!("not a dense attribute: {other:?}"),
    }
}

/// `(column within text, message)` of the error for `text` (which must be on line 2).
fn dense_err(text: &str) -> (u32, String) {
    let e = parse_err(&program(text));
    assert_eq!(e.line, 2, "{e}");
    (e.col - 24, e.message)
}

fn d(elem: &str, dims: &[i64], data: Vec<u8>) -> DenseAttr {
    DenseAttr { elem: ty(elem), dims: dims.to_vec(), data }
}

fn le<const N: usize>(values: impl IntoIterator<Item = [u8; N]>) -> Vec<u8> {
    values.into_iter().flatten().collect()
}

fn f32s(values: &[f32]) -> Vec<u8> {
    le(values.iter().map(|v| v.to_le_bytes()))
}

fn f64s(values: &[f64]) -> Vec<u8> {
    le(values.iter().map(|v| v.to_le_bytes()))
}

fn i32s(values: &[i32]) -> Vec<u8> {
    le(values.iter().map(|v| v.to_le_bytes()))
}

fn u16s(values: &[u16]) -> Vec<u8> {
    le(values.iter().map(|v| v.to_le_bytes()))
}

/// `text` printed as the attribute of an op (what `print` writes for it).
fn printed(text: &str) -> String {
    let out = assert_stable(&program(text));
    let start = out.find("{value = ").expect("the attribute") + "{value = ".len();
    let end = out[start..].find("} : () -> i32").expect("the end of the attribute") + start;
    out[start..end].to_string()
}

#[test]
fn splats_fill_the_shape() {
    assert_eq!(dense("dense<1.5> : tensor<2x3xf32>"), d("f32", &[2, 3], f32s(&[1.5; 6])));
    assert_eq!(dense("dense<-7> : tensor<3xi32>"), d("i32", &[3], i32s(&[-7; 3])));
    assert_eq!(dense("dense<true> : tensor<4xi1>"), d("i1", &[4], vec![1; 4]));
    assert_eq!(
        dense("dense<(1.0, -2.0)> : tensor<2xcomplex<f32>>"),
        d("complex<f32>", &[2], f32s(&[1.0, -2.0, 1.0, -2.0]))
    );
    // A splat of a tensor without elements has no data; rank 0 is one element.
    assert_eq!(dense("dense<1.0> : tensor<0x4xf32>"), d("f32", &[0, 4], vec![]));
    assert_eq!(dense("dense<7> : tensor<i64>"), d("i64", &[], 7i64.to_le_bytes().to_vec()));
}

#[test]
fn nested_lists_are_row_major() {
    assert_eq!(
        dense("dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>"),
        d("f32", &[2, 2], f32s(&[1.0, 2.0, 3.0, 4.0]))
    );
    assert_eq!(dense("dense<[1, -2, 3]> : tensor<3xi32>"), d("i32", &[3], i32s(&[1, -2, 3])));
    assert_eq!(
        dense("dense<[[[1], [2]], [[3], [4]], [[5], [6]]]> : tensor<3x2x1xi8>"),
        d("i8", &[3, 2, 1], vec![1, 2, 3, 4, 5, 6])
    );
    assert_eq!(dense("dense<[true, false, 1, 0]> : tensor<4xi1>"), d("i1", &[4], vec![1, 0, 1, 0]));
    assert_eq!(
        dense("dense<[(1.0, 2.0), (-0.5, 0x7FF0000000000000)]> : tensor<2xcomplex<f64>>"),
        d("complex<f64>", &[2], f64s(&[1.0, 2.0, -0.5, f64::INFINITY]))
    );
    // Lists of zero-sized dimensions, and a one-element list.
    assert_eq!(dense("dense<[]> : tensor<0xf32>"), d("f32", &[0], vec![]));
    assert_eq!(dense("dense<[[], []]> : tensor<2x0xi32>"), d("i32", &[2, 0], vec![]));
    assert_eq!(dense("dense<[5]> : tensor<1xi64>"), d("i64", &[1], 5i64.to_le_bytes().to_vec()));
}

#[test]
fn empty_literals() {
    assert_eq!(dense("dense<> : tensor<0xf32>"), d("f32", &[0], vec![]));
    assert_eq!(dense("dense<> : tensor<3x0x2xcomplex<f64>>"), d("complex<f64>", &[3, 0, 2], vec![]));
}

#[test]
fn integer_elements() {
    // Signless types take any N-bit pattern; unsigned and 64-bit extremes.
    assert_eq!(dense("dense<[255, -128, 0x7F]> : tensor<3xi8>"), d("i8", &[3], vec![0xff, 0x80, 0x7f]));
    assert_eq!(dense("dense<[65535, -1]> : tensor<2xi16>"), d("i16", &[2], u16s(&[0xffff, 0xffff])));
    assert_eq!(dense("dense<[0, 255]> : tensor<2xui8>"), d("ui8", &[2], vec![0, 255]));
    assert_eq!(dense("dense<4294967295> : tensor<ui32>"), d("ui32", &[], vec![0xff; 4]));
    assert_eq!(dense("dense<18446744073709551615> : tensor<ui64>"), d("ui64", &[], vec![0xff; 8]));
    assert_eq!(
        dense("dense<-9223372036854775808> : tensor<i64>"),
        d("i64", &[], i64::MIN.to_le_bytes().to_vec())
    );
    assert_eq!(dense("dense<[1, 2]> : tensor<2xui16>"), d("ui16", &[2], u16s(&[1, 2])));
}

#[test]
fn float_elements() {
    // Integers read as values, hexadecimal integers as bit patterns.
    assert_eq!(dense("dense<[5, 0x7FC00000, -0.0]> : tensor<3xf32>").data, f32s(&[5.0, f32::NAN, -0.0]));
    assert_eq!(dense("dense<0.1> : tensor<f64>").data, f64s(&[0.1]));
    assert_eq!(dense("dense<0.1> : tensor<f32>").data, f32s(&[0.1]));
    assert_eq!(dense("dense<1.0e-45> : tensor<f32>").data, 1u32.to_le_bytes()); // subnormal
}

#[test]
fn sixteen_bit_floats_round_to_nearest_even() {
    let f16 = |text: &str| dense(&format!("dense<[{text}]> : tensor<1xf16>")).data;
    let bf16 = |text: &str| dense(&format!("dense<[{text}]> : tensor<1xbf16>")).data;
    assert_eq!(f16("1.0"), u16s(&[0x3c00]));
    assert_eq!(f16("0.333333333333"), u16s(&[0x3555])); // 1/3
    assert_eq!(f16("-2.5"), u16s(&[0xc100]));
    assert_eq!(f16("65504.0"), u16s(&[0x7bff])); // the largest f16
    assert_eq!(f16("6.0e-8"), u16s(&[0x0001])); // the smallest subnormal, 2^-24
    assert_eq!(f16("1.0e-8"), u16s(&[0x0000])); // below half of it: zero
    assert_eq!(f16("0x7C00"), u16s(&[0x7c00])); // infinity, by its bits
    assert_eq!(f16("1.00048828125"), u16s(&[0x3c00])); // a tie, to even
    assert_eq!(f16("1.00048828125000000000000000001"), u16s(&[0x3c01])); // just above it
    assert_eq!(bf16("1.0"), u16s(&[0x3f80]));
    assert_eq!(bf16("0.333333333333"), u16s(&[0x3eab]));
    assert_eq!(bf16("1.0e-8"), u16s(&[0x322c]));
    assert_eq!(bf16("3.0e38"), u16s(&[0x7f62]));
    assert_eq!(bf16("-0.0"), u16s(&[0x8000]));
}

#[test]
fn hex_blobs() {
    assert_eq!(dense("dense<\"0x0000803F00000040\"> : tensor<2xf32>"), d("f32", &[2], f32s(&[1.0, 2.0])));
    assert_eq!(dense("dense<\"0x0000803f00000040\"> : tensor<2xf32>").data, f32s(&[1.0, 2.0]));
    // One element's bytes: a splat.
    assert_eq!(dense("dense<\"0x01000000\"> : tensor<2x2xi32>").data, i32s(&[1; 4]));
    assert_eq!(dense("dense<\"0x0100\"> : tensor<2xi1>").data, vec![1, 0]);
    assert_eq!(dense("dense<\"0x\"> : tensor<0xf64>").data, vec![]);
    assert_eq!(dense("dense<\"0x003C\"> : tensor<f16>").data, u16s(&[0x3c00]));
}

#[test]
fn dense_attributes_anywhere_an_attribute_goes() {
    let src = "module attributes {m = dense<[1, 2]> : tensor<2xi32>} {
  func.func @f(%t: !tfrt_tensor.tensor, %ch: !tfrt.chain) -> !tfrt.chain attributes {w = dense<1.0> : tensor<f32>} {
    %w = \"tfrt_dht.const_dense_tensor\"() {value = dense<[[1.0, 2.0]]> : tensor<1x2xf32>} : () -> !tfrt_tensor.tensor
    %a = \"x.y\"() {list = [dense<1> : tensor<i8>, 2], d = {inner = dense<> : tensor<0xi1>}} : () -> i32
    %c = tfrt_dht.fill_tensor_with_constant.f32 %t, %ch dense<2.0> : tensor<f32>
    tfrt.return %c : !tfrt.chain
  }
}
";
    let m = parse_ok(src);
    assert!(matches!(&m.attrs[0].value, Attr::Dense(d) if d.data == i32s(&[1, 2])));
    let body = &m.funcs[0].body.as_ref().expect("a body").ops;
    assert_eq!(*attr(&body[0], "value"), Attr::Dense(Box::new(d("f32", &[1, 2], f32s(&[1.0, 2.0])))));
    let Attr::Array(list) = attr(&body[1], "list") else { panic!("an array") };
    assert_eq!(list[0], Attr::Dense(Box::new(d("i8", &[], vec![1]))));
    assert_eq!(*attr(&body[2], "value"), Attr::Dense(Box::new(d("f32", &[], f32s(&[2.0])))));
    let out = assert_stable(src);
    assert!(
        out.contains(
            "tfrt_dht.fill_tensor_with_constant.f32 %arg0, %arg1 dense<2.000000e+00> : tensor<f32>\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("{d = {inner = dense<> : tensor<0xi1>}, list = [dense<1> : tensor<i8>, 2 : i64]}"),
        "{out}"
    );
}

#[test]
fn printing() {
    // Lists up to 16 elements, splats as one value, hex beyond.
    assert_eq!(
        printed("dense<[[1.0, 2.5], [3.0, 0.1]]> : tensor<2x2xf32>"),
        "dense<[[1.000000e+00, 2.500000e+00], [3.000000e+00, 1.000000e-01]]> : tensor<2x2xf32>"
    );
    assert_eq!(printed("dense<[1.5, 1.5]> : tensor<2xf32>"), "dense<1.500000e+00> : tensor<2xf32>");
    assert_eq!(printed("dense<0.0> : tensor<1000x1000xf32>"), "dense<0.000000e+00> : tensor<1000x1000xf32>");
    assert_eq!(printed("dense<7> : tensor<i64>"), "dense<7> : tensor<i64>");
    assert_eq!(printed("dense<[]> : tensor<0xf32>"), "dense<> : tensor<0xf32>");
    assert_eq!(printed("dense<> : tensor<2x0xi32>"), "dense<> : tensor<2x0xi32>");
    let list: Vec<String> = (0..17).map(|i| i.to_string()).collect();
    assert_eq!(
        printed(&format!("dense<[{}]> : tensor<17xi8>", list.join(", "))),
        "dense<\"0x000102030405060708090A0B0C0D0E0F10\"> : tensor<17xi8>"
    );
    let list: Vec<String> = (0..16).map(|i| i.to_string()).collect();
    assert_eq!(
        printed("dense<\"0x000102030405060708090a0b0c0d0e0f\"> : tensor<4x4xui8>"),
        format!(
            "dense<[[{}], [{}], [{}], [{}]]> : tensor<4x4xui8>",
            list[..4].join(", "),
            list[4..8].join(", "),
            list[8..12].join(", "),
            list[12..].join(", ")
        )
    );
    // Every element type.
    assert_eq!(printed("dense<[true, false]> : tensor<2xi1>"), "dense<[true, false]> : tensor<2xi1>");
    assert_eq!(printed("dense<[255, 1]> : tensor<2xi8>"), "dense<[-1, 1]> : tensor<2xi8>");
    assert_eq!(printed("dense<[65535, 1]> : tensor<2xui16>"), "dense<[65535, 1]> : tensor<2xui16>");
    assert_eq!(printed("dense<[-1, 1]> : tensor<2xi32>"), "dense<[-1, 1]> : tensor<2xi32>");
    assert_eq!(
        printed("dense<[18446744073709551615, 0]> : tensor<2xui64>"),
        "dense<[18446744073709551615, 0]> : tensor<2xui64>"
    );
    assert_eq!(
        printed("dense<[-9223372036854775808, 0]> : tensor<2xi64>"),
        "dense<[-9223372036854775808, 0]> : tensor<2xi64>"
    );
    assert_eq!(
        printed("dense<[0.1, -65504.0]> : tensor<2xf16>"),
        "dense<[9.997559e-02, -6.550400e+04]> : tensor<2xf16>"
    );
    assert_eq!(
        printed("dense<[0.1, 3.0e38]> : tensor<2xbf16>"),
        "dense<[1.000977e-01, 3.004055e+38]> : tensor<2xbf16>"
    );
    assert_eq!(
        printed("dense<[0.1, 1.0e300]> : tensor<2xf64>"),
        "dense<[1.000000e-01, 1.000000e+300]> : tensor<2xf64>"
    );
    assert_eq!(
        printed("dense<[0.1, 0.30000000000000004]> : tensor<2xf64>"),
        "dense<[1.000000e-01, 3.0000000000000004e-01]> : tensor<2xf64>"
    );
    assert_eq!(
        printed("dense<[(1.0, -2.0), (0.0, 0.5)]> : tensor<2xcomplex<f32>>"),
        "dense<[(1.000000e+00, -2.000000e+00), (0.000000e+00, 5.000000e-01)]> : tensor<2xcomplex<f32>>"
    );
    // Infinities and NaN (with payloads) as bit patterns.
    assert_eq!(
        printed("dense<[0x7F800000, 0xFFC00001]> : tensor<2xf32>"),
        "dense<[0x7F800000, 0xFFC00001]> : tensor<2xf32>"
    );
    assert_eq!(printed("dense<[0x7C00, 0xFE01]> : tensor<2xf16>"), "dense<[0x7C00, 0xFE01]> : tensor<2xf16>");
    assert_eq!(
        printed("dense<[0xFFF0000000000000, 1.0]> : tensor<2xf64>"),
        "dense<[0xFFF0000000000000, 1.000000e+00]> : tensor<2xf64>"
    );
    assert_eq!(
        printed("dense<[-0.0, 0.0]> : tensor<2xf16>"),
        "dense<[-0.000000e+00, 0.000000e+00]> : tensor<2xf16>"
    );
}

#[test]
fn printed_forms_parse_back_to_the_same_bytes() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let types = [
        "i1",
        "i8",
        "i16",
        "i32",
        "i64",
        "ui8",
        "ui16",
        "ui32",
        "ui64",
        "f16",
        "bf16",
        "f32",
        "f64",
        "complex<f32>",
        "complex<f64>",
    ];
    for (i, elem) in types.iter().enumerate() {
        let size = hostrt_core::bef::format::dense::size(i as u8);
        for n in [1usize, 2, 3, 16, 17] {
            let data: Vec<u8> = (0..n * size)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if *elem == "i1" { (x & 1) as u8 } else { x as u8 }
                })
                .collect();
            let value = Attr::Dense(Box::new(d(elem, &[n as i64], data)));
            let mut m = parse_ok(&program("unit"));
            m.funcs[0].body.as_mut().expect("a body").ops[0].attrs[0].value = value.clone();
            let text = print(&m, &PrintOptions::default());
            assert_eq!(*attr(&ops(&text)[0], "value"), value, "{text}");
        }
    }
}

#[test]
fn shape_errors() {
    let cases: &[(&str, u32, &str)] = &[
        (
            "dense<[1, 2]> : tensor<3xi32>",
            7,
            "the dense literal has shape [2] but its type 'tensor<3xi32>' has shape [3]",
        ),
        (
            "dense<[[1, 2]]> : tensor<2xi32>",
            7,
            "the dense literal has shape [1, 2] but its type 'tensor<2xi32>' has shape [2]",
        ),
        (
            "dense<[1]> : tensor<i32>",
            7,
            "the dense literal has shape [1] but its type 'tensor<i32>' has shape []",
        ),
        (
            "dense<[]> : tensor<2xf32>",
            7,
            "the dense literal has shape [0] but its type 'tensor<2xf32>' has shape [2]",
        ),
        (
            "dense<[[1, 2], [3]]> : tensor<2x2xi32>",
            16,
            "inconsistent dense literal: a list of shape [1] after a list of shape [2]",
        ),
        (
            "dense<[1, [2]]> : tensor<2xi32>",
            11,
            "inconsistent dense literal: a list of shape [1] after an element",
        ),
        (
            "dense<[[1], 2]> : tensor<2xi32>",
            13,
            "inconsistent dense literal: an element after a list of shape [1]",
        ),
        ("dense<> : tensor<2xf32>", 1, "dense<> has no elements but its type 'tensor<2xf32>' has 2"),
    ];
    for (text, col, msg) in cases {
        assert_eq!(dense_err(text), (*col, msg.to_string()), "{text}");
    }
}

#[test]
fn element_errors() {
    let cases: &[(&str, u32, &str)] = &[
        ("dense<300> : tensor<i8>", 7, "integer literal out of range for type 'i8'"),
        ("dense<[1, 70000]> : tensor<2xi16>", 11, "integer literal out of range for type 'i16'"),
        ("dense<-1> : tensor<ui8>", 8, "integer literal out of range for type 'ui8'"),
        ("dense<4294967296> : tensor<ui32>", 7, "integer literal out of range for type 'ui32'"),
        (
            "dense<99999999999999999999999999999999999999999> : tensor<i64>",
            7,
            "integer literal '99999999999999999999999999999999999999999' too large",
        ),
        ("dense<2> : tensor<i1>", 7, "integer literal out of range for type 'i1' (expected 0 or 1)"),
        ("dense<[1.5, 2]> : tensor<2xi32>", 8, "floating point literal is not valid for type 'i32'"),
        ("dense<true> : tensor<f32>", 7, "boolean literal is not valid for type 'f32'"),
        ("dense<[1, false]> : tensor<2xui8>", 11, "boolean literal is not valid for type 'ui8'"),
        ("dense<(1.0, 2.0)> : tensor<f32>", 7, "complex literal is not valid for type 'f32'"),
        (
            "dense<[1.0]> : tensor<1xcomplex<f32>>",
            8,
            "expected a complex value (real, imaginary) for type 'complex<f32>'",
        ),
        ("dense<70000.0> : tensor<f16>", 7, "float literal out of range for type 'f16'"),
        ("dense<[1.0, -65520.0]> : tensor<2xf16>", 14, "float literal out of range for type 'f16'"),
        ("dense<3.4e38> : tensor<bf16>", 7, "float literal out of range for type 'bf16'"),
        ("dense<1.0e39> : tensor<f32>", 7, "float literal out of range for type 'f32'"),
        ("dense<(1.0, 1.0e309)> : tensor<complex<f64>>", 13, "float literal out of range for type 'f64'"),
        ("dense<0x10000> : tensor<f16>", 7, "hexadecimal literal too wide for type 'f16'"),
        (
            "dense<0x100000000> : tensor<complex<f32>>",
            7,
            "expected a complex value (real, imaginary) for type 'complex<f32>'",
        ),
        (
            "dense<(0x100000000, 0.0)> : tensor<complex<f32>>",
            8,
            "hexadecimal literal too wide for type 'f32'",
        ),
        ("dense<-0x3C00> : tensor<f16>", 8, "hexadecimal float literals cannot be negative"),
    ];
    for (text, col, msg) in cases {
        assert_eq!(dense_err(text), (*col, msg.to_string()), "{text}");
    }
}

#[test]
fn hex_errors() {
    let cases: &[(&str, &str)] = &[
        ("dense<\"0000803F\"> : tensor<f32>", "hex data of a dense attribute must start with '0x'"),
        ("dense<\"0X0000803F\"> : tensor<f32>", "hex data of a dense attribute must start with '0x'"),
        ("dense<\"0x0000803\"> : tensor<f32>", "hex data of a dense attribute has an odd number of digits"),
        ("dense<\"0x0000803G\"> : tensor<f32>", "invalid hex digit 'G' in the data of a dense attribute"),
        ("dense<\"0x00 0803F\"> : tensor<f32>", "invalid hex digit ' ' in the data of a dense attribute"),
        (
            "dense<\"0x0000803F00\"> : tensor<2xf32>",
            "hex data of 5 bytes does not match the dense attribute type 'tensor<2xf32>' (8 bytes, or 4 for a splat)",
        ),
        (
            "dense<\"0x\"> : tensor<f32>",
            "hex data of 0 bytes does not match the dense attribute type 'tensor<f32>' (4 bytes, or 4 for a splat)",
        ),
        (
            "dense<\"0x0002\"> : tensor<2xi1>",
            "hex data of an i1 dense attribute must hold bytes 0 or 1, found 0x02",
        ),
    ];
    for (text, msg) in cases {
        assert_eq!(dense_err(text), (7, msg.to_string()), "{text}");
    }
}

#[test]
fn type_errors() {
    let rank17 = format!("tensor<{}f32>", "1x".repeat(17));
    let all =
        "i1, i8, i16, i32, i64, ui8, ui16, ui32, ui64, f16, bf16, f32, f64, complex<f32> or complex<f64>";
    let cases: Vec<(String, String)> = vec![
        ("tensor<?x3xf32>".into(), "dynamic dimension '?' in the dense attribute type 'tensor<?x3xf32>'".into()),
        ("tensor<2x?xf32>".into(), "dynamic dimension '?' in the dense attribute type 'tensor<2x?xf32>'".into()),
        ("tensor<-1xf32>".into(), "negative dimension in the dense attribute type 'tensor<-1xf32>'".into()),
        ("tensor<*xf32>".into(), "a dense attribute needs a ranked tensor type, found 'tensor<*xf32>'".into()),
        ("vector<4xf32>".into(), "a dense attribute needs a ranked tensor type, found 'vector<4xf32>'".into()),
        ("f32".into(), "a dense attribute needs a ranked tensor type, found 'f32'".into()),
        ("!tfrt_tensor.tensor".into(), "a dense attribute needs a ranked tensor type, found '!tfrt_tensor.tensor'".into()),
        ("tensor<4>".into(), "invalid tensor type 'tensor<4>'".into()),
        ("tensor<4xf80>".into(), format!("unsupported element type 'f80' for a dense attribute (expected {all})")),
        ("tensor<si32>".into(), format!("unsupported element type 'si32' for a dense attribute (expected {all})")),
        ("tensor<4xf32, #enc>".into(), format!("unsupported element type 'f32, #enc' for a dense attribute (expected {all})")),
        (rank17.clone(), format!("the dense attribute type '{rank17}' has more than 16 dimensions")),
        (
            "tensor<99999999999999999999xf32>".into(),
            "dimension 99999999999999999999 too large in 'tensor<99999999999999999999xf32>'".into(),
        ),
        (
            "tensor<65536x4097xf32>".into(),
            "the dense attribute type 'tensor<65536x4097xf32>' is too large (more than 1073741824 bytes)".into(),
        ),
        (
            "tensor<4294967296x4294967296x4294967296xi8>".into(),
            "the dense attribute type 'tensor<4294967296x4294967296x4294967296xi8>' is too large (more than 1073741824 bytes)"
                .into(),
        ),
    ];
    for (t, msg) in &cases {
        assert_eq!(dense_err(&format!("dense<0> : {t}")), (12, msg.clone()), "{t}");
    }
    // Rank 16 and 1 GiB are fine.
    assert_eq!(
        dense(&format!("dense<[{}1.0{}]> : tensor<{}f32>", "[".repeat(15), "]".repeat(15), "1x".repeat(16)))
            .dims,
        [1; 16]
    );
    assert_eq!(dense("dense<0.0> : tensor<0x65536x4096xf32>").dims, [0, 65536, 4096]);
}

#[test]
fn syntax_errors() {
    let cases: &[(&str, u32, &str)] = &[
        ("dense<1.0>", 11, "expected ':' and a tensor type after the dense literal, found '}'"),
        (
            "dense<1.0> tensor<f32>",
            12,
            "expected ':' and a tensor type after the dense literal, found 'tensor<f32>'",
        ),
        ("dense<1.0> : 5", 14, "expected a type, found '5'"),
        ("dense 1", 7, "expected '<' after 'dense', found '1'"),
        ("dense", 6, "expected '<' after 'dense', found '}'"),
        ("dense<[1 2]> : tensor<2xi32>", 10, "expected ']' to close the list, found '2'"),
        (
            "dense<[1, ]> : tensor<2xi32>",
            11,
            "expected a dense element: a number, 'true', 'false', '(' or '[', found ']'",
        ),
        (
            "dense<x> : tensor<i32>",
            7,
            "expected a dense element: a number, 'true', 'false', '(' or '[', found 'x'",
        ),
        ("dense<\"0x00\", 1> : tensor<i8>", 13, "expected '>' to close the dense literal, found ','"),
        (
            "dense<(1.0 2.0)> : tensor<complex<f32>>",
            12,
            "expected ',' between the real and imaginary parts, found '2.0'",
        ),
        ("dense<(1.0, 2.0> : tensor<complex<f32>>", 16, "expected ')' to close the complex value, found '>'"),
        ("dense<(true, 2.0)> : tensor<complex<f32>>", 8, "expected a number, found 'true'"),
        ("dense<1.0 2.0> : tensor<2xf32>", 11, "expected '>' to close the dense literal, found '2.0'"),
        ("dense<-x> : tensor<i32>", 8, "expected a number, found 'x'"),
        ("dense<1.0> : tensor<f32", 14, "unterminated '<' in type"),
    ];
    for (text, col, msg) in cases {
        assert_eq!(dense_err(text), (*col, msg.to_string()), "{text}");
    }
    let deep = format!("dense<{}1{}> : tensor<i32>", "[".repeat(200), "]".repeat(200));
    let (_, msg) = dense_err(&deep);
    assert_eq!(msg, format!("nesting too deep (more than {} levels)", crate::text::MAX_NESTING));
}
