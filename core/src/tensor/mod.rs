//! Tensors (the tensor layer of TFRT's host runtime), without `alloc`: element types
//! ([`DType`], [`Element`]) and shapes ([`TensorShape`], [`PartialTensorShape`],
//! [`TensorMetadata`]) with TFRT's text forms.
//!
//! Still to come (see the README): host buffers from the `HostAllocator`, dense host tensors
//! over them or over borrowed bytes, BTF, and the tensor kernels.

mod dtype;
mod shape;

pub use dtype::{DType, Element};
pub use shape::{MAX_RANK, NotKnown, PartialTensorShape, RankTooLarge, TensorMetadata, TensorShape};
