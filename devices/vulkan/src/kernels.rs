//! The `vk.*` kernels: programs move tensors to the device (`vk.to_device`), run device
//! operations on `!vk.tensor` values, and bring results back (`vk.to_host`).
//!
//! Each kernel records its work and submits it at once, then returns an unavailable
//! result; a blocking task of the host's work queue waits for the work's fence and
//! completes the result (or makes it an error at the kernel's location). Host kernels
//! therefore run while device work is in flight, and a failure poisons only the values
//! that depend on it. The device is [`crate::shared`], opened on first use.

use std::sync::Arc;

use hostrt_core::kernel::{
    Argument, ArrayAttribute, Detached, KernelEntry, KernelRegistry, RegistryError, StringAttribute, Value,
};
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{Allocator, AsyncValueRef, Diagnostic, RcAsyncValue, kernel};

use crate::device::Device;
use crate::error::VkError;
use crate::ops::{self, DeviceTensor, Elementwise, Fetch};
use crate::work::Recorder;

fn diag(e: VkError) -> Diagnostic {
    Diagnostic::from(&e)
}

/// Records work on `device` with `record`, submits it, and returns a result that
/// `finish(recorded, allocator)` completes once the work is done.
fn launch<R, T>(
    d: &Detached,
    device: &Arc<Device>,
    record: impl FnOnce(&mut Recorder) -> Result<R, VkError>,
    finish: impl FnOnce(R, Allocator) -> Result<T, Diagnostic> + Send + 'static,
) -> Result<AsyncValueRef<T>, Diagnostic>
where
    R: Send + 'static,
    T: Send + Sync + 'static,
{
    let mut rec = Recorder::new(device).map_err(diag)?;
    let recorded = record(&mut rec).map_err(diag)?;
    let pending = rec.submit().map_err(diag)?;
    let out = d.host().make_unconstructed::<T>().map_err(Diagnostic::from)?;
    let (value, det) = (out.clone(), *d);
    let complete = move || {
        let done = pending.wait().map_err(diag).and_then(|()| finish(recorded, det.host().allocator()));
        match done {
            Ok(v) => value.emplace(v),
            Err(e) => {
                let rc: &RcAsyncValue = &value;
                det.report_error(e, &[rc]);
            }
        }
    };
    // If the queue refuses the task, the work is waited for as it drops and the kernel
    // fails with the queue's error.
    d.host().enqueue_blocking_work(complete, true)?;
    Ok(out)
}

/// A device operation's result tensor, complete when its work is.
fn device_op(
    d: &Detached,
    device: &Arc<Device>,
    record: impl FnOnce(&mut Recorder) -> Result<DeviceTensor, VkError>,
) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    launch(d, device, record, |t, _| Ok(t))
}

/// `vk.to_device %t`: a copy of a host tensor on the device.
fn to_device(t: Argument<DenseHostTensor>, d: Detached) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    let device = crate::device::shared().map_err(diag)?;
    let host: &DenseHostTensor = &t;
    device_op(&d, &device, |rec| DeviceTensor::upload(rec, &device, host))
}

/// `vk.to_host %t`: a device tensor's copy in host memory.
fn to_host(t: Argument<DeviceTensor>, d: Detached) -> Result<AsyncValueRef<DenseHostTensor>, Diagnostic> {
    launch(&d, t.device(), |rec| t.download(rec), |f: Fetch, alloc| f.finish(alloc))
}

fn matmul(
    a: Argument<DeviceTensor>,
    b: Argument<DeviceTensor>,
    d: Detached,
) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    device_op(&d, a.device(), |rec| ops::matmul(rec, &a, &b))
}

fn binary<const OP: u8>(
    a: Argument<DeviceTensor>,
    b: Argument<DeviceTensor>,
    d: Detached,
) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    let op = match OP {
        0 => Elementwise::Add,
        1 => Elementwise::Mul,
        _ => Elementwise::BiasAdd,
    };
    device_op(&d, a.device(), |rec| ops::elementwise(rec, op, &a, &b))
}

fn relu(a: Argument<DeviceTensor>, d: Detached) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    device_op(&d, a.device(), |rec| ops::elementwise(rec, Elementwise::Relu, &a, &a))
}

fn rows<const ARGMAX: bool>(
    x: Argument<DeviceTensor>,
    d: Detached,
) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    device_op(&d, x.device(), |rec| ops::rows(rec, &x, ARGMAX))
}

fn conv2d(
    x: Argument<DeviceTensor>,
    f: Argument<DeviceTensor>,
    padding: StringAttribute,
    strides: ArrayAttribute<i64>,
    d: Detached,
) -> Result<AsyncValueRef<DeviceTensor>, Diagnostic> {
    let &[sh, sw] = &*strides else {
        return Err(hostrt_core::diag!(
            InvalidArgument,
            "vk.conv2d.f32 expects 2 strides, got {}",
            strides.len()
        ));
    };
    let padding: &str = &padding;
    device_op(&d, x.device(), |rec| ops::conv2d(rec, &x, &f, padding, [sh, sw]))
}

/// `vk.reshape %t {shape = [...]}`: the same device buffer with other dims.
fn reshape(t: Argument<DeviceTensor>, shape: ArrayAttribute<i64>) -> Result<Value<DeviceTensor>, Diagnostic> {
    t.reshape(&shape).map(Value).map_err(diag)
}

/// The device kernels.
pub const KERNELS: &[KernelEntry] = &[
    KernelEntry::strict("vk.to_device", kernel!(to_device)),
    KernelEntry::strict("vk.to_host", kernel!(to_host)),
    KernelEntry::strict("vk.matmul.f32", kernel!(matmul)),
    KernelEntry::strict("vk.add.f32", kernel!(binary::<0>)),
    KernelEntry::strict("vk.mul.f32", kernel!(binary::<1>)),
    KernelEntry::strict("vk.bias_add.f32", kernel!(binary::<2>)),
    KernelEntry::strict("vk.relu.f32", kernel!(relu)),
    KernelEntry::strict("vk.softmax.f32", kernel!(rows::<false>)),
    KernelEntry::strict("vk.argmax.f32", kernel!(rows::<true>)),
    KernelEntry::strict("vk.conv2d.f32", kernel!(conv2d)),
    KernelEntry::strict("vk.reshape", kernel!(reshape)),
];

/// Adds the `vk.*` kernels to `registry`.
pub fn register_vulkan_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(KERNELS)
}
