//! TensorFlow Lite import over arbitrary bytes (seeded with the test models, so mutations
//! reach deep into valid FlatBuffers): never a panic, and every model that imports passes
//! `imported::check` (its BEF verifies, its program runs on zero inputs without a panic), and
//! imports again with every layer's output dumped (`imported::check_dumps`).
#![no_main]

mod imported;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(model) = hostrt_import::tflite(data) else { return };
    imported::check(&model, |host| hostrt_import::Program::from_tflite(data, host));
    // With every layer's output returned too (`hostrt infer --dump-tensors`). That may be
    // refused where the plain import is not (every tensor in its own slot can overflow the
    // arena's size), but must never panic.
    let options = hostrt_import::ImportOptions { dump_tensors: true, ..Default::default() };
    if let Ok(dumped) = hostrt_import::tflite_with(data, options) {
        imported::check_dumps(&dumped);
    }
});
