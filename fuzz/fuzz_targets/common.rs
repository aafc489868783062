//! Shared by the fuzz targets: a scratch allocator, the load → decode → print check and the
//! text → BEF → text → BEF round trip.

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::Allocator;
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

/// One arena for the verifier's scratch memory, shared by every run.
pub fn scratch() -> Allocator {
    static A: std::sync::OnceLock<Allocator> = std::sync::OnceLock::new();
    *A.get_or_init(|| hostrt_std::leaked_arena(4 << 20).unwrap().1)
}

/// Load arbitrary bytes (re-sealed, so the checksum does not stop them at the door);
/// whatever loads must decode, print and parse again without panicking, and when it
/// re-compiles, the result must load too.
#[allow(dead_code)]
pub fn check_bef(bytes: &[u8]) {
    let mut sealed = bytes.to_vec();
    hostrt_core::bef::format::seal(&mut sealed);
    let aligned = AlignedBytes::new(&sealed);
    let Ok(file) = BefFile::load_unresolved(aligned.as_bytes(), scratch()) else { return };
    let Ok(module) = decode(&file) else { return };
    let text = print(&module, &PrintOptions { locations: true });
    if let Ok(reparsed) = parse("fuzz.mlir", &text)
        && let Ok(again) = write(&reparsed, None)
    {
        let a = AlignedBytes::new(&again);
        assert!(BefFile::load_unresolved(a.as_bytes(), scratch()).is_ok(), "writer produced an invalid file");
    }
}

/// Whatever of `text` parses and compiles must survive compile → load → disassemble → parse →
/// compile with identical bytes.
#[allow(dead_code)]
pub fn check_round_trip(text: &str) {
    let Ok(module) = parse("fuzz.mlir", text) else { return };
    let Ok(bef) = write(&module, None) else { return };
    let aligned = AlignedBytes::new(&bef);
    let file = BefFile::load_unresolved(aligned.as_bytes(), scratch()).expect("compiled file loads");
    let decoded = decode(&file).expect("compiled file decodes");
    let dis = print(&decoded, &PrintOptions { locations: true });
    let reparsed =
        parse("fuzz.mlir", &dis).unwrap_or_else(|e| panic!("disassembly does not parse: {e}\n{dis}"));
    let again = write(&reparsed, None).unwrap_or_else(|e| panic!("disassembly does not compile: {e}\n{dis}"));
    assert!(bef == again, "text -> BEF -> text -> BEF is not byte-identical\n{dis}");
}
