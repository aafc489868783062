//! Shared by the fuzz targets: a scratch allocator and the load → decode → print check.

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
