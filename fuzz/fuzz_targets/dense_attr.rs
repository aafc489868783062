//! Arbitrary text as the literal of a dense elements attribute (`dense<TEXT> : TYPE`, the
//! first byte picking TYPE). Never a panic; and whatever parses and compiles must survive
//! compile → load → disassemble → parse → compile with identical bytes, whichever form the
//! disassembly prints (a splat, nested lists, a hex blob, `dense<>`).
#![no_main]

#[path = "common.rs"]
mod common;

/// Shapes and element types: every element type, ranks 0 to 3, zero-sized dimensions, and
/// sizes on either side of the printer's list limit (16 elements).
const TYPES: [&str; 24] = [
    "tensor<f32>",
    "tensor<3xi32>",
    "tensor<2x2xf32>",
    "tensor<4xi1>",
    "tensor<2xf16>",
    "tensor<3xbf16>",
    "tensor<2xcomplex<f32>>",
    "tensor<complex<f64>>",
    "tensor<0xf64>",
    "tensor<2x0xi8>",
    "tensor<2x3xi8>",
    "tensor<ui64>",
    "tensor<17xf32>",
    "tensor<2x1x2xui16>",
    "tensor<5xi64>",
    "tensor<3x3xf64>",
    "tensor<2xi16>",
    "tensor<4x4xui8>",
    "tensor<3xui32>",
    "tensor<1xf16>",
    "tensor<2x2x2xbf16>",
    "tensor<3xcomplex<f32>>",
    "tensor<i1>",
    "tensor<18xi1>",
];

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, literal)) = data.split_first() else { return };
    let Ok(literal) = std::str::from_utf8(literal) else { return };
    let ty = TYPES[pick as usize % TYPES.len()];
    common::check_round_trip(&format!(
        "func.func @f() {{\n  %t = \"x.y\"() {{value = dense<{literal}> : {ty}}} : () -> i32\n  tfrt.return\n}}\n"
    ));
});
