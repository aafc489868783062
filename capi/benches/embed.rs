//! What the embedding C API costs over the Rust API, same run, same program, same host
//! setup (single-threaded queue, an arena):
//! - `add`: one `tfrt.add.i32` called with two i32 arguments, results read and released —
//!   `hostrt_call` + `hostrt_results_get` + `hostrt_results_destroy` against
//!   `Program::call` with the arguments made as values (what the C API does inside), and
//!   the fast path `hostrt_call_into` (function looked up once, results written into the
//!   caller's array);
//! - `digits`: the MNIST-shaped MLP of `examples/app-c` on 360 images, the input tensor
//!   passed and the classes read back.

use std::ptr::null_mut;

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_c::embed::*;
use hostrt_c::tf::tf_program::TfProgram;
use hostrt_core::async_value::AsyncValueRef;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};

const ADD: &str =
    "func.func @add(%a: i32, %b: i32) -> i32 {\n  %c = tfrt.add.i32 %a, %b\n  tfrt.return %c : i32\n}\n";
const ARENA: usize = 4 << 20;

fn bench(c: &mut Criterion) {
    let add = AlignedBytes::new(&hostrt_compiler::compile("add.mlir", ADD, Default::default()).unwrap());
    let digits_text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/app-c/digits.mlir"))
            .unwrap();
    let digits = AlignedBytes::new(
        &hostrt_compiler::compile("digits.mlir", &digits_text, Default::default()).unwrap(),
    );

    // The Rust API: each program on a host of its own, so that the two benchmarks of a
    // program see arenas in the same state.
    let mut registry = KernelRegistry::<1024>::new();
    register_basic_kernels(&mut registry).unwrap();
    register_tensor_kernels(&mut registry).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let (_add_arena, add_alloc) = leaked_arena(ARENA).unwrap();
    let (_digits_arena, alloc) = leaked_arena(ARENA).unwrap();
    let add_host = HostContext::new(add_alloc, &queue);
    let host = HostContext::new(alloc, &queue);
    let add_rs = TfProgram::load(add.as_bytes(), &registry, add_alloc).unwrap();
    let digits_rs = TfProgram::load(digits.as_bytes(), &registry, alloc).unwrap();
    let images =
        digits_rs.call(&host, "test_images", &[]).unwrap().get::<DenseHostTensor>(0).unwrap().clone();

    // The C API, on equal hosts.
    // SAFETY: handles from the API, used while alive and destroyed at the end.
    unsafe {
        let mut options = std::mem::zeroed();
        hostrt_host_options_init(&mut options);
        options.arena_bytes = ARENA;
        let add_h = hostrt_host_new(&options, null_mut());
        let h = hostrt_host_new(&options, null_mut());
        let add_c = hostrt_program_load(
            add_h,
            add.as_bytes().as_ptr().cast(),
            add.as_bytes().len(),
            HOSTRT_LOAD_COPY,
            null_mut(),
        );
        let digits_c = hostrt_program_load(
            h,
            digits.as_bytes().as_ptr().cast(),
            digits.as_bytes().len(),
            HOSTRT_LOAD_COPY,
            null_mut(),
        );
        let dims = images.shape().dims().to_vec();
        let pixels = images.read_bytes().unwrap().to_vec();
        let x = hostrt_tensor_new(
            h,
            HOSTRT_DTYPE_F32,
            dims.as_ptr(),
            2,
            pixels.as_ptr().cast(),
            pixels.len(),
            null_mut(),
        );

        let mut g = c.benchmark_group("embed");
        g.bench_function("add: Rust Program::call", |b| {
            b.iter(|| {
                let args = [
                    AsyncValueRef::available(add_alloc, 2i32).unwrap().into_rc(),
                    AsyncValueRef::available(add_alloc, 3i32).unwrap().into_rc(),
                ];
                let r = add_rs.call(&add_host, "add", &args).unwrap();
                *r.get::<i32>(0).unwrap()
            })
        });
        let int = |i| hostrt_value { type_: HOSTRT_TYPE_I32, i, f: 0.0, tensor: null_mut() };
        g.bench_function("add: C hostrt_call", |b| {
            b.iter(|| {
                let args = [int(2), int(3)];
                let mut r = null_mut();
                hostrt_call(add_c, c"add".as_ptr(), args.as_ptr(), 2, &mut r, null_mut());
                let mut v = int(0);
                hostrt_results_get(r, 0, &mut v, null_mut());
                hostrt_results_destroy(r, null_mut());
                v.i
            })
        });
        let mut add_index = 0;
        hostrt_program_function_index(add_c, c"add".as_ptr(), &mut add_index, null_mut());
        g.bench_function("add: C hostrt_call_into", |b| {
            b.iter(|| {
                let args = [int(2), int(3)];
                let mut out = [int(0)];
                hostrt_call_into(add_c, add_index, args.as_ptr(), 2, out.as_mut_ptr(), 1, null_mut());
                out[0].i
            })
        });
        g.bench_function("digits: Rust Program::call", |b| {
            b.iter(|| {
                let arg = [AsyncValueRef::available(alloc, images.clone()).unwrap().into_rc()];
                let r = digits_rs.call(&host, "classify", &arg).unwrap();
                r.get::<DenseHostTensor>(0).unwrap().read::<i32>().unwrap()[0]
            })
        });
        g.bench_function("digits: C hostrt_call", |b| {
            b.iter(|| {
                let arg = hostrt_value { type_: HOSTRT_TYPE_TENSOR, i: 0, f: 0.0, tensor: x };
                let mut r = null_mut();
                hostrt_call(digits_c, c"classify".as_ptr(), &arg, 1, &mut r, null_mut());
                let mut v = int(0);
                hostrt_results_get(r, 0, &mut v, null_mut());
                let first = *hostrt_tensor_data(v.tensor).cast::<i32>();
                hostrt_tensor_destroy(v.tensor, null_mut());
                hostrt_results_destroy(r, null_mut());
                first
            })
        });
        let mut classify = 0;
        hostrt_program_function_index(digits_c, c"classify".as_ptr(), &mut classify, null_mut());
        g.bench_function("digits: C hostrt_call_into", |b| {
            b.iter(|| {
                let arg = hostrt_value { type_: HOSTRT_TYPE_TENSOR, i: 0, f: 0.0, tensor: x };
                let mut out = [int(0)];
                hostrt_call_into(digits_c, classify, &arg, 1, out.as_mut_ptr(), 1, null_mut());
                let first = *hostrt_tensor_data(out[0].tensor).cast::<i32>();
                hostrt_tensor_destroy(out[0].tensor, null_mut());
                first
            })
        });
        g.finish();
        hostrt_tensor_destroy(x, null_mut());
        hostrt_program_destroy(add_c, null_mut());
        hostrt_program_destroy(digits_c, null_mut());
        hostrt_host_destroy(add_h, null_mut());
        hostrt_host_destroy(h, null_mut());
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
