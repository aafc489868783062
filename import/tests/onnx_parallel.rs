//! Kernels split over a multi-threaded work queue's workers (`parallel_for`): a model large
//! enough that its convolution, fully connected layer, single product and batched product
//! each split their output rows gives the single-threaded answers, as does a fully connected
//! layer over one row, which splits its outputs.

mod common;

use common::{model, value};
use hostrt_core::{Allocator, ConcurrentWorkQueue, HostContext, SingleThreadedWorkQueue};
use hostrt_import::npy::{self, NpyTensor};
use hostrt_import::onnx::proto::*;
use prost::Message;

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto { name: Some(name.into()), r#type: Some(7), ints: v.to_vec(), ..Default::default() }
}

fn node(op: &str, inputs: &[&str], output: &str, attribute: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        name: Some(output.into()),
        op_type: Some(op.into()),
        domain: None,
        attribute,
    }
}

/// Deterministic values in [-0.5, 0.5).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        })
        .collect()
}

fn tensor(name: &str, dims: &[i64], data: Vec<u8>, data_type: i32) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: Some(data_type),
        name: Some(name.into()),
        raw_data: Some(data),
        ..Default::default()
    }
}

fn floats(name: &str, dims: &[i64], seed: u64) -> TensorProto {
    let n = dims.iter().product::<i64>() as usize;
    tensor(name, dims, values(n, seed).iter().flat_map(|v| v.to_le_bytes()).collect(), data_type::FLOAT)
}

fn shape(name: &str, dims: &[i64]) -> TensorProto {
    let data = dims.iter().flat_map(|v| v.to_le_bytes()).collect();
    tensor(name, &[dims.len() as i64], data, data_type::INT64)
}

/// Conv 16 -> 32 channels 3x3 on 32x32 (147k multiply-adds per output row), a depthwise 3x3
/// of its 32 channels, the two added (32k elements), their Erf, a fully connected layer 256 -> 64 over
/// 128 rows, a 128x64 by 64x128 product, and two 64x128 by 128x64 products in one batch.
fn split_model() -> Vec<u8> {
    let window = || vec![ints("kernel_shape", &[3, 3]), ints("pads", &[1, 1, 1, 1])];
    let mut depthwise = window();
    depthwise.push(AttributeProto {
        name: Some("group".into()),
        r#type: Some(2),
        i: Some(32),
        ..Default::default()
    });
    let nodes = vec![
        node("Conv", &["x", "w", "b"], "c", window()),
        node("Conv", &["c", "dw", "db"], "d", depthwise),
        node("Add", &["c", "d"], "a", vec![]),
        node("Erf", &["a"], "e", vec![]),
        node("Reshape", &["e", "s1"], "r", vec![]),
        node("MatMul", &["r", "w1"], "m1", vec![]),
        node("Transpose", &["m1"], "t", vec![]),
        node("MatMul", &["m1", "t"], "m2", vec![]),
        node("Reshape", &["m2", "s2"], "b3", vec![]),
        node("Transpose", &["b3"], "bt", vec![ints("perm", &[0, 2, 1])]),
        node("MatMul", &["b3", "bt"], "y", vec![]),
    ];
    let inits = vec![
        floats("w", &[32, 16, 3, 3], 1),
        floats("b", &[32], 2),
        floats("dw", &[32, 1, 3, 3], 4),
        floats("db", &[32], 5),
        floats("w1", &[256, 64], 3),
        shape("s1", &[128, 256]),
        shape("s2", &[2, 64, 128]),
    ];
    model(nodes, inits, vec![value("x", &[1, 16, 32, 32])], vec![value("y", &[2, 64, 64])]).encode_to_vec()
}

fn run(queue: &dyn ConcurrentWorkQueue, bytes: &[u8], x: &NpyTensor) -> Vec<f32> {
    let alloc =
        Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("allocator");
    let host = HostContext::new(alloc, queue);
    let program = hostrt_import::Program::from_onnx(bytes, &host).expect("import");
    let out = program.call(&host, vec![npy::to_tensor(alloc, x).expect("input")]).expect("run");
    let y = npy::from_tensor(&out[0]).expect("output");
    y.data.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect()
}

#[test]
fn split_kernels_give_the_single_threaded_answers() {
    let bytes = split_model();
    let data = values(16 * 32 * 32, 9).iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = NpyTensor { dtype: "f32", shape: vec![1, 16, 32, 32], data };
    let one = run(&SingleThreadedWorkQueue::new(), &bytes, &x);
    assert_eq!(one.len(), 2 * 64 * 64);
    for workers in [2, 3, 4] {
        let queue = hostrt_std::MultiThreadedWorkQueue::new(workers, 0);
        let many = run(&queue, &bytes, &x);
        // Each output is a sum the GEMM may block differently for fewer rows.
        let worst = one.iter().zip(&many).map(|(a, b)| (a - b).abs() / a.abs().max(1.0)).fold(0f32, f32::max);
        assert!(worst <= 1e-5, "{workers} workers: largest difference {worst:e}");
    }
}

/// The split model imported for x86-64's 512-bit tiles (`prepack`: its 256 x 64 product's
/// filter, over 32 KiB, laid out in blocks) and as it is: the same answers bit for bit, on
/// one thread and on three; a layout of the wrong size is an error naming it.
#[cfg(target_arch = "x86_64")]
#[test]
fn float_filters_laid_out_ahead_give_the_same_answers() {
    use hostrt_compiler::ast::Attr;
    let bytes = split_model();
    let data = values(16 * 32 * 32, 9).iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = NpyTensor { dtype: "f32", shape: vec![1, 16, 32, 32], data };
    let import = |prepack| {
        let read = hostrt_import::onnx::model::ReadOptions::default();
        let options = hostrt_import::ImportOptions { prepack, ..Default::default() };
        hostrt_import::onnx_with(&bytes, &read, options).expect("import")
    };
    let call = |imported: hostrt_import::Imported, queue: &dyn ConcurrentWorkQueue| {
        let alloc =
            Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("allocator");
        let host = HostContext::new(alloc, queue);
        let program = hostrt_import::Program::load(imported, &host).map_err(|e| e.to_string())?;
        let out = program.call(&host, vec![npy::to_tensor(alloc, &x).expect("input")])?;
        Ok::<_, String>(npy::from_tensor(&out[0]).expect("output").data)
    };
    let packed = import(true);
    let ops = &packed.module.funcs[0].body.as_ref().unwrap().ops;
    let laid_out = ops.iter().filter(|op| op.attrs.iter().any(|a| a.name == "packed")).count();
    assert_eq!(laid_out, 1, "the 256 x 64 product's filter alone is over 32 KiB");
    // `prepack_avx2` (AVX2 CPUs) lays out the same float filter.
    let read = hostrt_import::onnx::model::ReadOptions::default();
    let options = hostrt_import::ImportOptions { prepack_avx2: true, ..Default::default() };
    let float_only = hostrt_import::onnx_with(&bytes, &read, options).expect("import");
    assert_eq!(float_only.module, packed.module);
    let queue = hostrt_std::MultiThreadedWorkQueue::new(2, 0);
    for q in [&SingleThreadedWorkQueue::new() as &dyn ConcurrentWorkQueue, &queue] {
        assert_eq!(call(import(true), q).unwrap(), call(import(false), q).unwrap());
    }
    let mut wrong = import(true);
    let ops = &mut wrong.module.funcs[0].body.as_mut().unwrap().ops;
    let attr = ops.iter_mut().flat_map(|op| &mut op.attrs).find(|a| a.name == "packed").unwrap();
    let Attr::Dense(d) = &mut attr.value else { panic!("packed is dense") };
    d.dims[0] -= 1;
    d.data.truncate(d.data.len() - 4);
    let e = call(wrong, &SingleThreadedWorkQueue::new()).unwrap_err();
    assert!(e.contains("nn.conv_2d.f32") && e.contains("packed"), "{e}");
}

/// A fully connected layer over one row (64 -> 1024, as a classifier's last layer) splits
/// its outputs in blocks over the threads: the same answers bit for bit (each output's sum
/// runs in the same order on any thread).
#[test]
fn one_row_fully_connected_splits_its_outputs() {
    let nodes = vec![node("Gemm", &["x", "w", "b"], "y", vec![])];
    let inits = vec![floats("w", &[64, 1024], 6), floats("b", &[1024], 7)];
    let bytes = model(nodes, inits, vec![value("x", &[1, 64])], vec![value("y", &[1, 1024])]).encode_to_vec();
    let data = values(64, 8).iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = NpyTensor { dtype: "f32", shape: vec![1, 64], data };
    let one = run(&SingleThreadedWorkQueue::new(), &bytes, &x);
    assert_eq!(one.len(), 1024);
    for workers in [1, 2, 3] {
        let queue = hostrt_std::MultiThreadedWorkQueue::new(workers, 0);
        assert!(run(&queue, &bytes, &x) == one, "{workers} workers");
    }
}
