//! Arbitrary text into the MLIR parser. Never a panic; and whatever parses and compiles must
//! survive compile → load → disassemble → parse → compile with identical bytes.
#![no_main]

#[path = "common.rs"]
mod common;

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(module) = parse("fuzz.mlir", text) else { return };
    let Ok(bef) = write(&module, None) else { return };
    let aligned = AlignedBytes::new(&bef);
    let file = BefFile::load_unresolved(aligned.as_bytes(), common::scratch()).expect("compiled file loads");
    let decoded = decode(&file).expect("compiled file decodes");
    let dis = print(&decoded, &PrintOptions { locations: true });
    let reparsed =
        parse("fuzz.mlir", &dis).unwrap_or_else(|e| panic!("disassembly does not parse: {e}\n{dis}"));
    let again = write(&reparsed, None).unwrap_or_else(|e| panic!("disassembly does not compile: {e}\n{dis}"));
    assert!(bef == again, "text -> BEF -> text -> BEF is not byte-identical\n{dis}");
});
