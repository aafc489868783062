//! Tensors (the tensor layer of TFRT's host runtime), without `alloc`: element types
//! ([`DType`], [`Element`]), shapes ([`TensorShape`], [`PartialTensorShape`],
//! [`TensorMetadata`]) with TFRT's text forms, [`HostBuffer`], the reference-counted,
//! 64-byte-aligned bytes tensors live in, and [`DenseHostTensor`] over them.
//!
//! Still to come (see the README): tensors over borrowed bytes (BEF attributes, mmap), BTF,
//! and the tensor kernels.

mod buffer;
mod dense;
mod dtype;
mod shape;

pub use buffer::{BUFFER_ALIGN, BorrowError, HostBuffer, ReadGuard, WriteGuard};
pub use dense::{DenseHostTensor, Elements, ElementsMut, Plain, TensorError};
pub use dtype::{DType, Element};
pub use shape::{MAX_RANK, NotKnown, PartialTensorShape, RankTooLarge, TensorMetadata, TensorShape};
