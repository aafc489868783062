//! TensorFlow Lite import over arbitrary bytes (seeded with the test models, so mutations
//! reach deep into valid FlatBuffers): never a panic, and every model that imports writes
//! BEF that the reader verifies.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

/// Verification scratch, registered once (the allocator table has 32 slots).
fn scratch() -> hostrt_core::Allocator {
    static A: OnceLock<hostrt_core::Allocator> = OnceLock::new();
    *A.get_or_init(|| hostrt_std::leaked_arena(64 << 20).expect("scratch").1)
}

fuzz_target!(|data: &[u8]| {
    let Ok(imported) = hostrt_import::tflite(data) else { return };
    let bef = imported.to_bef().expect("an imported model writes BEF");
    let bytes = hostrt_std::AlignedBytes::new(&bef);
    hostrt_core::bef::BefFile::load_unresolved(bytes.as_bytes(), scratch()).expect("the BEF verifies");
});
