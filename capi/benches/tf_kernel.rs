//! Per-call overhead of a C-API kernel: `tf.Relu` on a 1-element tensor, its kernel written
//! against the C API (as a plugin's would be: `TF_GetInput`, `TF_AllocateOutput`,
//! `TF_TensorData`), against the same ReLU as a native hostrt kernel (read the input,
//! allocate the output from the context, write it), each called through `Program::call` in
//! the same run. The difference is what the C API costs per call: the site lookup, the
//! `TF_Tensor` handles and the status objects.

// `Diagnostic` is the runtime's fixed-size error value, returned by value as in the core.
#![allow(clippy::result_large_err)]

use std::ffi::c_void;

use criterion::{Criterion, criterion_group, criterion_main};
use hostrt_c::tf::kernels::context::*;
use hostrt_c::tf::kernels::*;
use hostrt_c::tf::std_ops::register_standard_ops;
use hostrt_c::tf::tf_program::TfProgram;
use hostrt_c::tf::tf_status::*;
use hostrt_c::tf::tf_tensor::*;
use hostrt_core::async_value::AsyncValueRef;
use hostrt_core::kernel::{Argument, KernelEntry, Value};
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{Diagnostic, ExecutionContext, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};

unsafe extern "C-unwind" fn relu_compute(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context; handles freed once.
    unsafe {
        let status = TF_NewStatus();
        let mut x = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut x, status);
        let dims: Vec<i64> = (0..TF_NumDims(x)).map(|d| TF_Dim(x, d)).collect();
        let y = TF_AllocateOutput(
            ctx,
            0,
            TF_TensorType(x),
            dims.as_ptr(),
            dims.len() as i32,
            TF_TensorByteSize(x),
            status,
        );
        let n = TF_TensorElementCount(x) as usize;
        let (src, dst) = (TF_TensorData(x).cast::<f32>(), TF_TensorData(y).cast::<f32>());
        for i in 0..n {
            *dst.add(i) = (*src.add(i)).max(0.0);
        }
        TF_DeleteTensor(y);
        TF_DeleteTensor(x);
        TF_DeleteStatus(status);
    }
}

/// The same ReLU as a native kernel.
fn native_relu(
    x: Argument<DenseHostTensor>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    let meta = x.metadata().clone();
    let y = DenseHostTensor::new(ctx.allocator(), meta).map_err(|_| Diagnostic::internal("no memory"))?;
    {
        let src = x.read::<f32>().map_err(|_| Diagnostic::internal("dtype"))?;
        let mut dst = y.write::<f32>().map_err(|_| Diagnostic::internal("dtype"))?;
        for (d, s) in dst.iter_mut().zip(src.iter()) {
            *d = s.max(0.0);
        }
    }
    Ok(Value(y))
}

const PROGRAM: &str = r#"func.func @native(%x: !t.tensor) -> !t.tensor {
  %y = "bench.relu.f32"(%x) : (!t.tensor) -> !t.tensor
  tfrt.return %y : !t.tensor
}
func.func @capi(%x: !t.tensor) -> !t.tensor {
  %y = "tf.Relu"(%x) {T = f32} : (!t.tensor) -> !t.tensor
  tfrt.return %y : !t.tensor
}
"#;

fn bench(c: &mut Criterion) {
    register_standard_ops();
    // SAFETY: a fresh builder consumed by registration; C literals.
    unsafe {
        let b = TF_NewKernelBuilder(c"Relu".as_ptr(), c"CPU".as_ptr(), None, Some(relu_compute), None);
        let s = TF_NewStatus();
        TF_RegisterKernelBuilder(c"ReluOp".as_ptr(), b, s);
        assert_eq!(TF_GetCode(s), TF_OK);
        TF_DeleteStatus(s);
    }
    let mut registry = KernelRegistry::<8>::new();
    registry
        .add_entries(&[KernelEntry::strict("bench.relu.f32", hostrt_core::kernel!(native_relu))])
        .unwrap();
    let bef =
        AlignedBytes::new(&hostrt_compiler::compile("bench.mlir", PROGRAM, Default::default()).unwrap());
    let (_arena, alloc) = leaked_arena(1 << 20).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let program = TfProgram::load(bef.as_bytes(), &registry, alloc).unwrap();
    let meta = TensorMetadata { dtype: DType::F32, shape: TensorShape::new(&[1]).unwrap() };
    let x = DenseHostTensor::new(alloc, meta).unwrap();
    x.write::<f32>().unwrap()[0] = -3.0;
    let arg = AsyncValueRef::available(alloc, x).unwrap().into_rc();
    for f in ["native", "capi"] {
        let r = program.call(&host, f, std::slice::from_ref(&arg)).unwrap();
        assert_eq!(r.get::<DenseHostTensor>(0).unwrap().read::<f32>().unwrap()[0], 0.0, "{f}");
    }
    let mut g = c.benchmark_group("relu_1_element_call");
    for f in ["native", "capi"] {
        g.bench_function(f, |b| b.iter(|| program.call(&host, f, std::slice::from_ref(&arg)).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
