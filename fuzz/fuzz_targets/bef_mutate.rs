//! Structured mutations of a valid BEF file: the input is a list of (offset, value) edits
//! applied to a compiled program, so most cases are near-valid and reach deep checks.
#![no_main]

#[path = "common.rs"]
mod common;

const PROGRAM: &str = r#"
module attributes {tfrt.cost_threshold = 1 : i64} {
  func.func @callee(%x: i32, %ch: !tfrt.chain) -> (i32, !tfrt.chain) {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    %ch1 = tfrt.print.i32 %y, %ch
    tfrt.return %y, %ch1 : i32, !tfrt.chain
  }
  func.func @main() -> i32 {
    %ch = tfrt.new.chain
    %c = tfrt.constant.i1 true
    %a = tfrt.constant.i32 41
    %r = tfrt.if %c, %a, %ch : (i32, !tfrt.chain) -> (i32) {
      %v, %ch2 = tfrt.call @callee(%a, %ch) : (i32, !tfrt.chain) -> (i32, !tfrt.chain)
      tfrt.return %v : i32
    } else {
      tfrt.return %a : i32
    }
    %s = "test.attrs"() {f = 2.5 : f32, list = [1, [2, "x"], @callee], name = "n"} : () -> i64
    tfrt.return %r : i32
  }
}
"#;

fn valid() -> &'static [u8] {
    static V: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        let m = hostrt_compiler::text::parse("seed.mlir", PROGRAM).expect("seed program parses");
        hostrt_compiler::bef::write(&m, None).expect("seed program compiles")
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let mut bytes = common::apply_edits(valid(), data);
    if data.len() % 3 == 1 {
        bytes.truncate(usize::from(data[0]) * bytes.len() / 256);
    }
    common::check_bef(&bytes);
});
