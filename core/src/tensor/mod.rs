//! Tensors (the tensor layer of TFRT's host runtime), without `alloc`: element types
//! ([`DType`], [`Element`]), shapes ([`TensorShape`], [`PartialTensorShape`],
//! [`TensorMetadata`]) with TFRT's text forms, and [`HostBuffer`], the reference-counted,
//! 64-byte-aligned bytes tensors live in.
//!
//! Still to come (see the README): dense host tensors over buffers or borrowed bytes, BTF,
//! and the tensor kernels.

mod buffer;
mod dtype;
mod shape;

pub use buffer::{BUFFER_ALIGN, BorrowError, HostBuffer, ReadGuard, WriteGuard};
pub use dtype::{DType, Element};
pub use shape::{MAX_RANK, NotKnown, PartialTensorShape, RankTooLarge, TensorMetadata, TensorShape};
