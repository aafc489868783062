//! The MNIST-shaped MLP (examples/app-c, 360 images) on the Vulkan device against the same
//! model on the host's GEMM path, same run. On lavapipe (a CPU device) this measures the
//! device path's overhead; on a GPU, its speed.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_core::executor::Program;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{AsyncValueRef, HostContext, SingleThreadedWorkQueue};
use hostrt_std::AlignedBytes;

fn bench(c: &mut Criterion) {
    if !common::vulkan() {
        return;
    }
    let text = common::digits_program();
    let bef = AlignedBytes::new(&hostrt_compiler::compile("vk.mlir", &text, Default::default()).unwrap());
    let registry = common::registry(&[]);
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(common::arena(), &queue);
    let program = Program::load(bef.as_bytes(), &registry, common::arena()).unwrap();
    let images = program.call(&host, "test_images", &[]).unwrap().get::<DenseHostTensor>(0).unwrap().clone();
    let mut g = c.benchmark_group("mlp");
    for (label, f) in [("host GEMM", "classify"), (common::device_label(), "classify_vk")] {
        g.bench_function(label, |b| {
            b.iter(|| {
                let arg = [AsyncValueRef::available(common::arena(), images.clone()).unwrap().into_rc()];
                let r = program.call(&host, f, &arg).unwrap();
                r.get::<DenseHostTensor>(0).unwrap().read::<i32>().unwrap()[0]
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
