//! The MNIST-shaped MLP of examples/app-c and a small CNN on the Vulkan device give the
//! host's predictions (logits within 1e-4 relative).

mod common;

use hostrt_core::AsyncValueRef;
use hostrt_core::tensor::conv::{Conv2dParams, conv2d};
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};

#[test]
fn the_mlp_on_the_device_gives_the_host_predictions() {
    if !common::vulkan() {
        return;
    }
    let text = common::digits_program();
    let images = common::run(&text, "test_images", &[], &[]);
    let x = images.get::<DenseHostTensor>(0).unwrap().clone();
    let arg = || [AsyncValueRef::available(common::arena(), x.clone()).unwrap().into_rc()];
    let host = common::run(&text, "classify", &arg(), &[]);
    let dev = common::run(&text, "classify_vk", &arg(), &[]);
    let want = host.get::<DenseHostTensor>(0).unwrap().read::<i32>().unwrap().to_vec();
    let got = dev.get::<DenseHostTensor>(0).unwrap().read::<i32>().unwrap().to_vec();
    assert_eq!(want.len(), 360);
    assert_eq!(got, want, "the device's classes differ from the host's");
}

/// A deterministic pseudo-random f32 in [-1, 1).
fn noise(seed: &mut u64) -> f32 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

fn tensor(dims: &[i64], data: &[f32]) -> DenseHostTensor {
    let t = DenseHostTensor::new(
        common::arena(),
        TensorMetadata { dtype: DType::F32, shape: TensorShape::new(dims).unwrap() },
    )
    .unwrap();
    t.write::<f32>().unwrap().copy_from_slice(data);
    t
}

#[test]
fn a_small_cnn_on_the_device_gives_the_host_predictions() {
    if !common::vulkan() {
        return;
    }
    // 16 images 8x8x1 -> conv 3x3x1x8 same stride 1 -> relu -> conv 4x4x8x10 valid stride 4
    // -> [16, 2, 2, 10], read as [16, 40] -> argmax.
    let mut seed = 7;
    let (n, f1, f2) = (16usize, [3i64, 3, 1, 8], [4i64, 4, 8, 10]);
    let x: Vec<f32> = (0..n * 64).map(|_| noise(&mut seed)).collect();
    let w1: Vec<f32> = (0..72).map(|_| noise(&mut seed)).collect();
    let w2: Vec<f32> = (0..4 * 4 * 8 * 10).map(|_| noise(&mut seed) * 0.3).collect();
    let program = r#"
func.func @cnn(%x: !t.tensor, %w1: !t.tensor, %w2: !t.tensor) -> (!t.tensor, !t.tensor) {
  %dx = "vk.to_device"(%x) : (!t.tensor) -> !vk.tensor
  %dw1 = "vk.to_device"(%w1) : (!t.tensor) -> !vk.tensor
  %dw2 = "vk.to_device"(%w2) : (!t.tensor) -> !vk.tensor
  %c1 = "vk.conv2d.f32"(%dx, %dw1) { padding = "same", strides = [1, 1] } : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %r1 = "vk.relu.f32"(%c1) : (!vk.tensor) -> !vk.tensor
  %c2 = "vk.conv2d.f32"(%r1, %dw2) { padding = "valid", strides = [4, 4] } : (!vk.tensor, !vk.tensor) -> !vk.tensor
  %l = "vk.reshape"(%c2) { shape = [16, 40] } : (!vk.tensor) -> !vk.tensor
  %k = "vk.argmax.f32"(%l) : (!vk.tensor) -> !vk.tensor
  %classes = "vk.to_host"(%k) : (!vk.tensor) -> !t.tensor
  %logits = "vk.to_host"(%c2) : (!vk.tensor) -> !t.tensor
  tfrt.return %classes, %logits : !t.tensor, !t.tensor
}
"#;
    let args: Vec<_> = [tensor(&[n as i64, 8, 8, 1], &x), tensor(&f1, &w1), tensor(&f2, &w2)]
        .into_iter()
        .map(|t| AsyncValueRef::available(common::arena(), t).unwrap().into_rc())
        .collect();
    let out = common::run(program, "cnn", &args, &[]);
    let logits = out.get::<DenseHostTensor>(1).unwrap();
    assert_eq!(logits.shape().dims(), [16, 2, 2, 10].as_slice(), "valid 4x4 stride 4 over 8x8 gives 2x2");

    // The host's convolution on the same data.
    let p1 = Conv2dParams::new([n as i64, 8, 8, 1], f1, "same", [1, 1]).unwrap();
    let mut h1 = vec![0.0; n * 64 * 8];
    conv2d(&p1, &x, &w1, &mut h1, &mut [0.0; 9 * 512], &mut |_| {});
    h1.iter_mut().for_each(|v| *v = v.max(0.0));
    let p2 = Conv2dParams::new(p1.output, f2, "valid", [4, 4]).unwrap();
    let mut h2 = vec![0.0; n * 4 * 10];
    conv2d(&p2, &h1, &w2, &mut h2, &mut vec![0.0; 128 * 512], &mut |_| {});
    let got = logits.read::<f32>().unwrap();
    for (i, (a, b)) in got.iter().zip(&h2).enumerate() {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "logit {i}: device {a}, host {b}");
    }
    let argmax = |row: &[f32]| {
        row.iter().enumerate().fold((0, f32::MIN), |m, (j, &v)| if v > m.1 { (j, v) } else { m }).0 as i32
    };
    let want: Vec<i32> = h2.chunks(40).map(argmax).collect();
    assert_eq!(out.get::<DenseHostTensor>(0).unwrap().read::<i32>().unwrap().to_vec(), want);
}
