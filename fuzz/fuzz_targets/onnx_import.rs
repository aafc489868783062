//! ONNX import over arbitrary bytes (seeded with the test models, so mutations reach deep
//! into valid protobuf): never a panic, and every model that imports passes
//! `imported::check` (its BEF verifies, its program runs on zero inputs without a panic), and
//! imports again with every layer's output dumped (`imported::check_dumps`).
//! The bytes come without a directory, so external data is refused, never read from disk.
#![no_main]

mod imported;

use hostrt_import::onnx::model::ReadOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let read = ReadOptions::default();
    let Ok(model) = hostrt_import::onnx_with(data, &read, hostrt_import::ImportOptions::default()) else {
        return;
    };
    imported::check(&model, |host| hostrt_import::Program::from_onnx(data, host));
    // With every layer's output returned too, as the TensorFlow Lite target does.
    let options = hostrt_import::ImportOptions { dump_tensors: true, ..Default::default() };
    if let Ok(dumped) = hostrt_import::onnx_with(data, &read, options) {
        imported::check_dumps(&dumped);
    }
});
