//! Arbitrary text into the MLIR parser. Never a panic; and whatever parses and compiles must
//! survive compile → load → disassemble → parse → compile with identical bytes.
#![no_main]

#[path = "common.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    common::check_round_trip(text);
});
