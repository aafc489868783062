//! Device memory exhaustion is an error value at the kernel that asked, and the device goes
//! on serving the kernels that fit (one test: the limit is set before the device opens).

mod common;

use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{AsyncValueRef, ErrorCode};

#[test]
fn exhausted_device_memory_is_an_error_and_nothing_else_fails() {
    // SAFETY: set before any thread of this test binary reads the environment (one test).
    unsafe { std::env::set_var("HOSTRT_VULKAN_MEMORY_LIMIT", "1048576") };
    if !common::vulkan() {
        return;
    }
    let program = r#"
func.func @f(%big: !t.tensor, %small: !t.tensor) -> (!t.tensor, !t.tensor) {
  %db = "vk.to_device"(%big) : (!t.tensor) -> !vk.tensor
  %hb = "vk.to_host"(%db) : (!vk.tensor) -> !t.tensor
  %ds = "vk.to_device"(%small) : (!t.tensor) -> !vk.tensor
  %r = "vk.relu.f32"(%ds) : (!vk.tensor) -> !vk.tensor
  %hs = "vk.to_host"(%r) : (!vk.tensor) -> !t.tensor
  tfrt.return %hb, %hs : !t.tensor, !t.tensor
}
"#;
    let t = |n: i64| {
        let t = DenseHostTensor::new(
            common::arena(),
            TensorMetadata { dtype: DType::F32, shape: TensorShape::new(&[n]).unwrap() },
        )
        .unwrap();
        t.write::<f32>().unwrap().fill(-2.0);
        AsyncValueRef::available(common::arena(), t).unwrap().into_rc()
    };
    let out = common::run(program, "f", &[t(1 << 19), t(8)], &[]);
    let e = out[0].get_error().expect("2 MiB does not fit a 1 MiB budget");
    assert_eq!(e.code, ErrorCode::ResourceExhausted);
    assert!(e.message().contains("out of device memory"), "{}", e.message());
    assert_eq!(e.location.map(|l| l.line), Some(3));
    assert_eq!(out.get::<DenseHostTensor>(1).unwrap().read::<f32>().unwrap().to_vec(), vec![0.0; 8]);
    assert!(!hostrt_vulkan::shared_stream().unwrap().busy());
    assert_eq!(hostrt_vulkan::shared().unwrap().memory_in_use(), 0, "every buffer was released");
}
