//! Shared by the model import targets (`tflite_import`, `onnx_import`): what an imported model
//! must do. Its BEF verifies, and the program runs on zero inputs (when its arena and inputs
//! are small) to results or errors, never a panic: the kernels check what the importer
//! computed.

use std::sync::OnceLock;

use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::{ImportError, Imported, Program};

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

/// `imported` writes BEF that the reader verifies.
fn verifies(imported: &Imported) {
    let bef = imported.to_bef().expect("an imported model writes BEF");
    let bytes = hostrt_std::AlignedBytes::new(&bef);
    hostrt_core::bef::BefFile::load_unresolved(bytes.as_bytes(), scratch()).expect("the BEF verifies");
}

/// Checks the same model imported with `dump_tensors`: its BEF verifies, and its dumped
/// tensors name results that exist: each model output's own, then one more each.
pub fn check_dumps(dumped: &Imported) {
    verifies(dumped);
    let outputs = dumped.outputs.len();
    let mut extra = outputs;
    for d in &dumped.dumped {
        if d.result >= outputs {
            assert_eq!(d.result, extra, "dumped results run on from the outputs");
            extra += 1;
        }
    }
}

/// Checks `imported`, and runs the program `load` makes of the same model on zero inputs.
pub fn check(imported: &Imported, load: impl FnOnce(&HostContext<'_>) -> Result<Program, ImportError>) {
    verifies(imported);
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
    let Ok(program) = load(&host) else { return };
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
}
