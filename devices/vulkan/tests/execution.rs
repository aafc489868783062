//! How device kernels run among host kernels: host work proceeds while device work is in
//! flight, and a failing device kernel poisons only the values that depend on it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use hostrt_core::kernel::{KernelEntry, KernelFrame};
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{AsyncValueRef, ErrorCode};

static SAW_PENDING: AtomicBool = AtomicBool::new(false);

/// `test.probe %back, %x`: a host kernel (non-strict, so it runs without waiting for
/// `%back`, a `vk.to_host` result) that records whether the device was still computing
/// that value when it ran, and returns `%x`.
fn probe(frame: &KernelFrame<'_>) {
    let (Some(dev), Some(x)) = (frame.arg(0), frame.arg(1)) else { return };
    if !dev.is_available() {
        SAW_PENDING.store(true, Ordering::SeqCst);
    }
    frame.set_result(0, x.clone());
}

const PROBE: KernelEntry = KernelEntry::non_strict("test.probe", probe);

#[test]
fn host_kernels_run_while_device_work_is_in_flight() {
    if !common::vulkan() {
        return;
    }
    // A 512x512x512 product takes lavapipe about a tenth of a second; the host kernels
    // after it (a probe and a host matmul) run before it completes.
    let program = r#"
func.func @overlap() -> (!t.tensor, !t.tensor, !tfrt.chain) {
  %ch = tfrt.new.chain
  %one = tfrt.constant.f32 1.0
  %a = "tfrt_dht.const_dense_tensor"() { value = dense<0.5> : tensor<512x512xf32> } : () -> !t.tensor
  %d = "vk.to_device"(%a) : (!t.tensor) -> !vk.tensor
  %p = "vk.matmul.f32"(%d, %d) : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %back = "vk.to_host"(%p) : (!vk.tensor) -> !t.tensor
  %x = "test.probe"(%back, %a) : (!t.tensor, !t.tensor) -> !t.tensor
  %h = "tfrt_dht.create_uninitialized_tensor.f32.2"() { shape = [512, 512] } : () -> !t.tensor
  %ch1 = "tfrt_dht.fill_tensor_with_constant.f32"(%h, %ch) { value = 0.0 : f32 } : (!t.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = "tfrt_test.matmul.f32.2"(%one, %x, %x, %one, %h, %ch1) : (f32, !t.tensor, !t.tensor, f32, !t.tensor, !tfrt.chain) -> !tfrt.chain
  tfrt.return %back, %h, %ch2 : !t.tensor, !t.tensor, !tfrt.chain
}
"#;
    let out = common::run(program, "overlap", &[], &[PROBE]);
    assert!(SAW_PENDING.load(Ordering::SeqCst), "the host kernel ran only after the device work completed");
    let dev = out.get::<DenseHostTensor>(0).unwrap().read::<f32>().unwrap().to_vec();
    let host = out.get::<DenseHostTensor>(1).unwrap().read::<f32>().unwrap().to_vec();
    assert_eq!(dev.len(), 512 * 512);
    assert!(dev.iter().zip(&host).all(|(a, b)| (a - b).abs() < 1e-3), "device and host products differ");
    assert!((dev[0] - 128.0).abs() < 1e-3, "{}", dev[0]);
}

#[test]
fn a_device_error_poisons_only_its_dependents() {
    if !common::vulkan() {
        return;
    }
    let program = r#"
func.func @errors(%x: !t.tensor, %y: !t.tensor) -> (!t.tensor, !t.tensor, i32) {
  %dx = "vk.to_device"(%x) : (!t.tensor) -> !vk.tensor
  %dy = "vk.to_device"(%y) : (!t.tensor) -> !vk.tensor
  %bad = "vk.matmul.f32"(%dx, %dy) : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %bad_host = "vk.to_host"(%bad) : (!vk.tensor) -> !t.tensor
  %good = "vk.relu.f32"(%dx) : (!vk.tensor) -> !vk.tensor
  %good_host = "vk.to_host"(%good) : (!vk.tensor) -> !t.tensor
  %one = tfrt.constant.i32 1
  %two = tfrt.add.i32 %one, %one
  tfrt.return %bad_host, %good_host, %two : !t.tensor, !t.tensor, i32
}
"#;
    let t = |dims: &[i64], v: f32| {
        use hostrt_core::tensor::{DType, TensorMetadata, TensorShape};
        let t = DenseHostTensor::new(
            common::arena(),
            TensorMetadata { dtype: DType::F32, shape: TensorShape::new(dims).unwrap() },
        )
        .unwrap();
        t.write::<f32>().unwrap().fill(v);
        AsyncValueRef::available(common::arena(), t).unwrap().into_rc()
    };
    let out = common::run(program, "errors", &[t(&[2, 3], -1.5), t(&[4, 5], 1.0)], &[]);
    let e = out[0].get_error().expect("the matmul's dependents are errors");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message().contains("inner dims differ"), "{}", e.message());
    let at = e.location.expect("the error names the kernel");
    assert_eq!((at.file(), at.line), ("vk.mlir", 5));
    let good = out.get::<DenseHostTensor>(1).expect("the independent device result");
    assert_eq!(good.read::<f32>().unwrap().to_vec(), vec![0.0; 6]);
    assert_eq!(out.get::<i32>(2).ok(), Some(&2));
}
