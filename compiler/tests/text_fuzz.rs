//! Property-style robustness: truncated, byte-flipped and random inputs make `parse` return
//! `Ok` or `Err`, never panic or overflow the stack; whatever parses also prints to text that
//! parses again and prints the same. Uses the conformance programs (read at run time; skipped when absent) plus
//! a built-in seed program.

use hostrt_compiler::text::{MAX_NESTING, PrintOptions, parse, print};

/// A small program of our own, so the properties are exercised even without the folder.
const SEED: &str = r#"#l = loc("seed")
module attributes {tfrt.cost_threshold = 1 : i64} {
  func.func @f(%n: i32, %ch: !tfrt.chain) -> (i32, !tfrt.chain) {
    %x = tfrt.constant.f32 -1.5e3 loc(#l)
    %p:2 = "t.two"(%n) {a = [1, "s\n", @g, {k}], b = 0x10 : i8} : (i32) -> (i32, !tfrt.chain)
    %r = tfrt.if %n, %p#1 : (!tfrt.chain) -> (!tfrt.chain) {
      tfrt.return %p#1 : !tfrt.chain
    } else {
      %y = tfrt.merge.chains %p#1, %p#1 : !tfrt.chain, !tfrt.chain loc(fused["a", "b":1:2])
      tfrt.return %y : !tfrt.chain
    }
    tfrt.return %n, %r : i32, !tfrt.chain
  }
}
"#;

fn programs() -> Vec<(String, String)> {
    let mut out = vec![("seed.mlir".to_string(), SEED.to_string())];
    // Without the conformance folder, the seed program alone.
    if let Some(dir) = hostrt_testing::conformance_dir("tfrt") {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("readable conformance folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
            .collect();
        files.sort();
        for p in files {
            let text = std::fs::read_to_string(&p).expect("readable conformance program");
            out.push((p.display().to_string(), text));
        }
    }
    out
}

/// A deterministic xorshift generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Parses `text`; if that succeeds, its printed form (with and without locations) must parse
/// and print identically.
fn check(text: &str) {
    if let Ok(module) = parse("fuzz.mlir", text) {
        for locations in [false, true] {
            let printed = print(&module, &PrintOptions { locations });
            match parse("printed.mlir", &printed) {
                Err(e) => {
                    panic!("printed form does not parse:\n{e}\n--- input:\n{text}\n--- printed:\n{printed}")
                }
                Ok(again) => {
                    assert_eq!(print(&again, &PrintOptions { locations }), printed, "not idempotent:\n{text}")
                }
            }
        }
    }
}

fn check_bytes(bytes: &[u8]) {
    check(&String::from_utf8_lossy(bytes));
}

/// Bytes that make interesting tokens.
const INTERESTING: &[u8] = b"{}()[]<>%@#!^\":,=-+.0123456789axz_\n\\ \t\x00\xff";

#[test]
fn truncations_never_panic() {
    for (_, text) in programs() {
        let bytes = text.as_bytes();
        let step = (bytes.len() / 400).max(1);
        for end in (0..=bytes.len()).step_by(step) {
            check_bytes(&bytes[..end]);
            check_bytes(&bytes[end..]);
        }
    }
}

#[test]
fn byte_flips_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for (_, text) in programs() {
        for _ in 0..300 {
            let mut bytes = text.clone().into_bytes();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len());
                let b = if rng.below(4) == 0 {
                    rng.next() as u8
                } else {
                    INTERESTING[rng.below(INTERESTING.len())]
                };
                match rng.below(3) {
                    0 => bytes[at] = b,
                    1 => bytes.insert(at, b),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            check_bytes(&bytes);
        }
    }
}

#[test]
fn multibyte_characters_and_random_input_never_panic() {
    let mut rng = Rng(42);
    let seed = SEED.as_bytes();
    for _ in 0..300 {
        // Insert multi-byte characters, then cut anywhere (possibly inside one).
        let mut bytes = seed.to_vec();
        for _ in 0..3 {
            let at = rng.below(bytes.len());
            let ch = ["é", "😀", "\u{2028}", "ß"][rng.below(4)];
            bytes.splice(at..at, ch.bytes());
        }
        let end = rng.below(bytes.len() + 1);
        check_bytes(&bytes[..end]);
        check_bytes(&bytes);
        // Pure noise, biased towards token characters.
        let noise: Vec<u8> =
            (0..rng.below(200))
                .map(|_| {
                    if rng.below(3) == 0 {
                        rng.next() as u8
                    } else {
                        INTERESTING[rng.below(INTERESTING.len())]
                    }
                })
                .collect();
        check_bytes(&noise);
    }
}

#[test]
fn hostile_literals_and_nesting() {
    let n = MAX_NESTING as usize * 4;
    let cases = [
        format!("func.func @f() {{\n %x = tfrt.constant.i64 {}\n}}", "9".repeat(5000)),
        format!("func.func @f() {{\n \"t\"(%x#{}) : (i32) -> ()\n}}", "9".repeat(100)),
        format!("func.func @f() {{\n %x:{} = \"t\"() : () -> ()\n}}", "9".repeat(100)),
        format!("func.func @f() {{\n tfrt.return loc(\"f\":{}:1)\n}}", "9".repeat(100)),
        format!("func.func @f(%a: !t<{}) {{\n}}", "<".repeat(100_000)),
        format!("func.func @f() {{\n \"t\"() {{a = {}}} : () -> ()\n}}", "[".repeat(n)),
        format!("func.func @f() {{\n \"t\"() {{a = {}}} : () -> ()\n}}", "{a = ".repeat(n)),
        format!("func.func @f() {{\n \"t\"() {{a = dense<{}> : tensor<i32>}} : () -> ()\n}}", "[".repeat(n)),
        "func.func @f() {\n \"t\"() {a = dense<0.0> : tensor<99999x99999x99999xf32>} : () -> ()\n}"
            .to_string(),
        format!(
            "func.func @f() {{\n \"t\"() {{a = dense<\"0x{}\"> : tensor<2xf32>}} : () -> ()\n}}",
            "0".repeat(100_001)
        ),
        format!("func.func @f(%n: i32) {{\n{}", "tfrt.repeat.i32 %n {\n".repeat(n)),
        format!("func.func @f() {{\n{}", "\"t\"() ({\n".repeat(n)),
        format!("func.func @f() {{\n tfrt.return loc({})\n}}", "callsite(".repeat(n)),
        "\"".repeat(10_000),
        "%".repeat(10_000),
        "func.func".repeat(10_000),
    ];
    for text in &cases {
        check(text);
        assert!(parse("t.mlir", text).is_err(), "{}", &text[..text.len().min(80)]);
    }
    // Long float literals are fine (they round, or overflow to infinity).
    check(&format!(
        "func.func @f() {{\n %x = tfrt.constant.f64 1.{}e99999999999999999999\n}}",
        "5".repeat(5000)
    ));
}

#[test]
fn maximum_nesting_fits_a_test_thread_stack() {
    // Every recursive path at the nesting limit, parsed and printed on a 2 MiB stack (the
    // default for test threads, and what debug builds need most).
    let d = MAX_NESTING as usize;
    let cases = [
        format!(
            "func.func @f(%c: i1, %a: i32) {{\n{}tfrt.return\n{}}}",
            "tfrt.if %c, %a attributes {x = 1} : (i32) -> () {\n".repeat(d - 1),
            "} else { tfrt.return }\ntfrt.return\n".repeat(d - 2) + "} else { tfrt.return }\n"
        ),
        format!(
            "func.func @f(%a: i32) {{\n{}\"t\"() : () -> ()\n{}tfrt.return\n}}",
            "\"t.x\"(%a) ({\n^bb0(%q: i32):\n".repeat(d - 1),
            "}) {a = 1} : (i32) -> ()\n".repeat(d - 1)
        ),
        format!(
            "func.func @f() {{\n \"t\"() {{a = {}1{}}} : () -> ()\n}}",
            "[".repeat(d - 2),
            "]".repeat(d - 2)
        ),
        format!(
            "func.func @f() {{\n tfrt.return loc({}unknown{})\n}}",
            "fused[".repeat(d - 2),
            "]".repeat(d - 2)
        ),
        format!(
            "func.func @f() {{\n tfrt.return loc({}unknown{})\n}}",
            "callsite(".repeat(d - 2),
            " at unknown)".repeat(d - 2)
        ),
    ];
    // Dense literals nest lists as deep, though no type has that rank.
    let dense = format!(
        "func.func @f() {{\n \"t\"() {{a = dense<{}1{}> : tensor<i32>}} : () -> ()\n}}",
        "[".repeat(d - 2),
        "]".repeat(d - 2)
    );
    let worker = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        for text in &cases {
            let module = parse("t.mlir", text).unwrap_or_else(|e| panic!("{e}"));
            let printed = print(&module, &PrintOptions { locations: true });
            parse("p.mlir", &printed).unwrap_or_else(|e| panic!("{e}"));
        }
        let e = parse("t.mlir", &dense).expect_err("a rank-126 literal for a rank-0 type");
        assert!(e.message.starts_with("the dense literal has shape [1, 1, "), "{e}");
    });
    worker.expect("spawn").join().expect("no panic");
}
