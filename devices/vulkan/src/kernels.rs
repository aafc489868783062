//! The `vk.*` kernels: programs move tensors to the device (`vk.to_device`), run device
//! operations on `!vk.tensor` values, and bring results back (`vk.to_host`).
//!
//! Device kernels record their work into the device's [`Stream`] and return their result
//! at once: a device value is available when its work is recorded, and the queue orders
//! the work. Only `vk.to_host` waits: it submits the stream and returns an unavailable
//! host tensor that a blocking task of the host's work queue completes when the device is
//! done. Host kernels run meanwhile; a failure (wrong shapes, device memory exhausted)
//! is an error value at the failing kernel and poisons only what depends on it. The
//! device is [`crate::shared`], opened on first use.

use std::sync::Arc;

use hostrt_core::kernel::{
    Argument, ArrayAttribute, Detached, KernelEntry, KernelRegistry, RegistryError, StringAttribute, Value,
};
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{AsyncValueRef, Diagnostic, RcAsyncValue, kernel};

use crate::error::VkError;
use crate::ops::{self, DeviceTensor, Elementwise};
use crate::stream::{Stream, shared_stream};
use crate::work::Recorder;

fn diag(e: VkError) -> Diagnostic {
    Diagnostic::from(&e)
}

/// The stream of the device `tensors` live on (the shared device's).
fn stream_of(tensors: &[&DeviceTensor]) -> Result<&'static Stream, Diagnostic> {
    let s = shared_stream().map_err(diag)?;
    if tensors.iter().any(|t| !Arc::ptr_eq(t.device(), s.device())) {
        return Err(hostrt_core::diag!(InvalidArgument, "vulkan: a tensor of another device"));
    }
    Ok(s)
}

/// Records a device operation on the stream of `inputs`; its result is available at once.
fn device_op(
    inputs: &[&DeviceTensor],
    record: impl FnOnce(&mut Recorder) -> Result<DeviceTensor, VkError>,
) -> Result<Value<DeviceTensor>, Diagnostic> {
    stream_of(inputs)?.record(record).map(Value).map_err(diag)
}

/// `vk.to_device %t`: a copy of a host tensor on the device.
fn to_device(t: Argument<DenseHostTensor>) -> Result<Value<DeviceTensor>, Diagnostic> {
    let s = stream_of(&[])?;
    let host: &DenseHostTensor = &t;
    s.record(|rec| DeviceTensor::upload(rec, s.device(), host)).map(Value).map_err(diag)
}

/// What a trace calls the device work `vk.to_host` submits and waits for.
const DEVICE_SPAN: &str = "vulkan: submit to fence";

/// `vk.to_host %t`: a device tensor's copy in host memory, complete when the device has
/// run everything recorded before it.
fn to_host(t: Argument<DeviceTensor>, d: Detached) -> Result<AsyncValueRef<DenseHostTensor>, Diagnostic> {
    let s = stream_of(&[&t])?;
    let fetch = s.record(|rec| t.download(rec)).map_err(diag)?;
    // The device span (docs/profiling.md): from this submission to its fence waited for.
    let span = d.host().observer().map(|o| o.device_begin(DEVICE_SPAN));
    let pending = s.flush().map_err(diag)?;
    let out = d.host().make_unconstructed::<DenseHostTensor>().map_err(Diagnostic::from)?;
    let value = out.clone();
    let complete = move || {
        let done = pending.wait().inspect_err(|e| s.fail(e)).map_err(diag);
        if let (Some(o), Some(mark)) = (d.host().observer(), span) {
            o.device_end(DEVICE_SPAN, mark);
        }
        // Release the buffers of finished work now rather than at the next submission.
        drop(pending);
        s.busy();
        match done.and_then(|()| fetch.finish(d.host().allocator())) {
            Ok(v) => value.emplace(v),
            Err(e) => {
                let rc: &RcAsyncValue = &value;
                d.report_error(e, &[rc]);
            }
        }
    };
    // If the queue refuses the task, the kernel fails with the queue's error.
    d.host().enqueue_blocking_work(complete, true)?;
    Ok(out)
}

fn matmul(a: Argument<DeviceTensor>, b: Argument<DeviceTensor>) -> Result<Value<DeviceTensor>, Diagnostic> {
    device_op(&[&a, &b], |rec| ops::matmul(rec, &a, &b))
}

fn binary<const OP: u8>(
    a: Argument<DeviceTensor>,
    b: Argument<DeviceTensor>,
) -> Result<Value<DeviceTensor>, Diagnostic> {
    let op = match OP {
        0 => Elementwise::Add,
        1 => Elementwise::Mul,
        _ => Elementwise::BiasAdd,
    };
    device_op(&[&a, &b], |rec| ops::elementwise(rec, op, &a, &b))
}

fn relu(a: Argument<DeviceTensor>) -> Result<Value<DeviceTensor>, Diagnostic> {
    device_op(&[&a], |rec| ops::elementwise(rec, Elementwise::Relu, &a, &a))
}

fn rows<const ARGMAX: bool>(x: Argument<DeviceTensor>) -> Result<Value<DeviceTensor>, Diagnostic> {
    device_op(&[&x], |rec| ops::rows(rec, &x, ARGMAX))
}

fn conv2d(
    x: Argument<DeviceTensor>,
    f: Argument<DeviceTensor>,
    padding: StringAttribute,
    strides: ArrayAttribute<i64>,
) -> Result<Value<DeviceTensor>, Diagnostic> {
    let &[sh, sw] = &*strides else {
        return Err(hostrt_core::diag!(
            InvalidArgument,
            "vk.conv2d.f32 expects 2 strides, got {}",
            strides.len()
        ));
    };
    let padding: &str = &padding;
    device_op(&[&x, &f], |rec| ops::conv2d(rec, &x, &f, padding, [sh, sw]))
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
