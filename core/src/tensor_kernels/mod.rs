//! The tensor kernels (docs/architecture.md, "Tensor kernels"): `ts.*` shapes, `tfrt_dht.*`
//! dense host tensors, and the model kernels of TFRT's MNIST and ResNet tests
//! (`tfrt_test.matmul.f32.2`, `relu`, `argmax`, `max_pooling_2d`, ...). `no_std`, no
//! `alloc`: every tensor comes from the host allocator, and exhaustion is an error value.
//!
//! Each module's tables are registration groups, so firmware links only what it registers:
//! [`shape::ALL`], [`dht::UNTYPED`] plus one table per dtype ([`dht::F32`], ...),
//! [`math::F32`] / [`math::I32`] / [`math::I64`] / [`math::CAST`], [`layers::ALL`],
//! [`eigen::F32`] (TFRT's `eigen.conv2d.*` and `eigen.batch_norm.f32`).
//! [`register_tensor_kernels`] registers them all.

pub mod dht;
mod dtype_family;
pub mod eigen;
pub mod layers;
pub mod math;
pub mod shape;

use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel::{KernelRegistry, RegistryError};
use crate::tensor::{DType, DenseHostTensor, FixedRankShape, TensorError, TensorMetadata, TensorShape};

/// Register every tensor kernel in `registry` (about 300 names).
pub fn register_tensor_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(shape::ALL)?;
    for group in dht::ALL_GROUPS {
        registry.add_entries(group)?;
    }
    for group in [math::F32, math::I32, math::I64, math::CAST, layers::ALL, eigen::F32] {
        registry.add_entries(group)?;
    }
    Ok(())
}

/// A tensor error as a kernel error (`INTERNAL`, TFRT's code for kernel failures).
fn tensor_error(e: TensorError) -> Diagnostic {
    crate::diag_fmt!(Internal, "{}", e)
}

/// A new (zeroed) tensor from the context's allocator; exhaustion gives `message`.
fn new_tensor(
    ctx: &ExecutionContext<'_>,
    dtype: DType,
    dims: &[i64],
    message: &str,
) -> Result<DenseHostTensor, Diagnostic> {
    let shape = TensorShape::new(dims).map_err(|e| crate::diag_fmt!(Internal, "{}", e))?;
    DenseHostTensor::new(ctx.allocator(), TensorMetadata { dtype, shape }).map_err(|e| match e {
        TensorError::CannotAllocate => Diagnostic::internal(message),
        other => tensor_error(other),
    })
}

/// The dims of a rank-`N` tensor, or an error naming the kernel (`what`).
fn rank<const N: usize>(t: &DenseHostTensor, what: &str) -> Result<[i64; N], Diagnostic> {
    FixedRankShape::<N>::of(t.shape())
        .map(|s| s.0)
        .ok_or_else(|| crate::diag_fmt!(Internal, "{} expects a rank-{} tensor, got {}", what, N, t.shape()))
}

/// Whether `t` has no elements: kernels return before looping over dims whose product is
/// zero (the other dims may be huge).
fn empty(t: &DenseHostTensor) -> bool {
    t.shape().checked_num_elements() == Some(0)
}

/// Whether two tensors are views of exactly the same bytes (an in-place operand).
fn same_data(a: &DenseHostTensor, b: &DenseHostTensor) -> bool {
    a.buffer().shares_block_with(b.buffer()) && a.buffer().addr() == b.buffer().addr()
}
