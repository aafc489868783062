//! ONNX import over arbitrary bytes (seeded with small ONNX models, so mutations reach deep
//! into valid protobuf): never a panic, every model that imports writes BEF that the reader
//! verifies, and running that program on zero inputs (when its arena is small) ends in results
//! or errors, never a panic: the ONNX graph is converted to the same graph the TensorFlow Lite
//! lowering reads, so the kernels check what the converter and the lowering computed.
#![no_main]

use std::sync::OnceLock;

use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::onnx::model::ReadOptions;
use libfuzzer_sys::fuzz_target;

/// Verification scratch, registered once (the allocator table has 32 slots).
fn scratch() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| hostrt_std::leaked_arena(64 << 20).expect("scratch").1)
}

/// The heap for running, registered once.
fn heap() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| {
        Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("heap")
    })
}

fuzz_target!(|data: &[u8]| {
    // As bytes, without a directory: external data is refused, never read from disk.
    let read = ReadOptions::default();
    let Ok(imported) = hostrt_import::onnx_with(data, &read, hostrt_import::ImportOptions::default()) else {
        return;
    };
    let bef = imported.to_bef().expect("an imported model writes BEF");
    let bytes = hostrt_std::AlignedBytes::new(&bef);
    hostrt_core::bef::BefFile::load_unresolved(bytes.as_bytes(), scratch()).expect("the BEF verifies");
    // Shapes come from the model, so their products may overflow: such a model is not run.
    let elements = imported
        .inputs
        .iter()
        .try_fold(0usize, |n, (_, s)| n.checked_add(s.iter().try_fold(1usize, |p, &d| p.checked_mul(d))?));
    if imported.report.arena_bytes > 8 << 20 || elements.is_none_or(|e| e > 1 << 20) {
        return;
    }
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(heap(), &queue);
    let Ok(program) = hostrt_import::Program::from_onnx(data, &host) else { return };
    let mut inputs = Vec::new();
    for (dtype, shape) in &imported.inputs {
        let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        let (Some(dtype), Ok(shape)) = (DType::from_kernel_suffix(dtype), TensorShape::new(&dims)) else {
            return;
        };
        let Ok(t) = DenseHostTensor::new(heap(), TensorMetadata { dtype, shape }) else { return };
        inputs.push(t);
    }
    let _ = program.call(&host, inputs);
});
