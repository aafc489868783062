//! TensorFlow Lite import over arbitrary bytes (seeded with the test models, so mutations
//! reach deep into valid FlatBuffers): never a panic, and every model that imports passes
//! `imported::check` (its BEF verifies, its program runs on zero inputs without a panic).
#![no_main]

mod imported;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = hostrt_import::tflite(data) else { return };
    imported::check(&model, |host| hostrt_import::Program::from_tflite(data, host));
});
