//! Tensors (the tensor layer of TFRT's host runtime), without `alloc`: element types
//! ([`DType`], [`Element`]), shapes ([`TensorShape`], [`PartialTensorShape`],
//! [`TensorMetadata`]) with TFRT's text forms, [`HostBuffer`], the reference-counted,
//! 64-byte-aligned bytes tensors live in, and [`DenseHostTensor`] over them.
//!
//! [`btf`] reads tensors of the Binary Tensor Format in place; [`gemm`] and [`conv`] are
//! the arithmetic behind the matmul and convolution kernels. Tensors may borrow bytes they
//! do not own ([`HostBuffer::from_owner`]).

pub mod btf;
mod buffer;
pub mod conv;
mod dense_host_tensor;
mod dtype;
pub mod gemm;
mod shape;

pub use buffer::{BUFFER_ALIGN, BorrowError, HostBuffer, ReadGuard, WriteGuard};
pub use dense_host_tensor::{DenseHostTensor, Elements, ElementsMut, Plain, TensorError};
pub use dtype::{DType, Element};
pub use shape::{
    FixedRankShape, MAX_RANK, NotKnown, PartialTensorShape, RankTooLarge, TensorMetadata, TensorShape,
};
