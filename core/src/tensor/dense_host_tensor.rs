//! [`DenseHostTensor`]: a dtype and shape over a [`HostBuffer`], elements row-major without
//! padding, read and written as typed slices.

use core::fmt;

use super::buffer::{BorrowError, HostBuffer, ReadGuard, WriteGuard};
use super::{DType, Element, TensorMetadata, TensorShape};
use crate::allocator::Allocator;
use crate::number_format::write_c_exp;

/// Element types every bit pattern of which is a valid value, so a tensor's bytes can be
/// viewed as a slice of them (`bool` is not one: its tensors are read as bytes).
pub trait Plain: Element {}

macro_rules! plain {
    ($($t:ty),*) => { $(impl Plain for $t {})* };
}
plain!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

/// Why a tensor could not be made or accessed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorError {
    /// No memory for the data (TFRT: `Cannot allocate tensor`).
    CannotAllocate,
    /// The shape has a negative dim or more elements than memory can address.
    BadShape,
    /// A buffer of `buffer` bytes cannot hold `elements` elements of `element_size` bytes.
    BufferSize {
        /// Bytes in the buffer.
        buffer: usize,
        /// Elements of the shape.
        elements: usize,
        /// Bytes per element.
        element_size: usize,
    },
    /// The tensor holds `actual`, not the type asked for.
    DType {
        /// The tensor's dtype.
        actual: DType,
        /// The dtype asked for.
        wanted: DType,
    },
    /// The data is not aligned for the element type (a slice at an odd offset).
    Misaligned,
    /// See [`BorrowError::Busy`].
    Busy,
    /// A write to a tensor over borrowed read-only bytes.
    ReadOnly,
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorError::CannotAllocate => f.write_str("Cannot allocate tensor"),
            TensorError::BadShape => {
                f.write_str("tensor shape has a negative dimension or too many elements")
            }
            TensorError::BufferSize { buffer, elements, element_size } => write!(
                f,
                "buffer of {buffer} bytes does not hold {elements} elements of {element_size} bytes"
            ),
            TensorError::DType { actual, wanted } => write!(f, "tensor of dtype {actual} used as {wanted}"),
            TensorError::Misaligned => f.write_str("tensor data is not aligned for its element type"),
            TensorError::Busy => fmt::Display::fmt(&BorrowError::Busy, f),
            TensorError::ReadOnly => fmt::Display::fmt(&BorrowError::ReadOnly, f),
        }
    }
}

impl From<BorrowError> for TensorError {
    fn from(e: BorrowError) -> Self {
        match e {
            BorrowError::Busy => TensorError::Busy,
            BorrowError::ReadOnly => TensorError::ReadOnly,
        }
    }
}

/// TFRT's dense host tensor: metadata and a shared buffer. Tensors are mutable shared
/// objects: cloning shares the buffer, and a write through one clone is seen by all.
///
/// ```
/// use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
/// use hostrt_core::{Allocator, FixedArena};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
///
/// let shape = TensorShape::new(&[2, 2]).unwrap();
/// let t = DenseHostTensor::new(alloc, TensorMetadata { dtype: DType::I32, shape }).unwrap();
/// t.write::<i32>().unwrap().copy_from_slice(&[1, 2, 3, 4]);
/// assert_eq!(t.to_string(), "DenseHostTensor dtype = i32, shape = [2, 2], values = [1, 2, 3, 4]");
/// assert!(t.read::<f32>().is_err(), "typed access checks the dtype");
/// ```
#[derive(Clone)]
pub struct DenseHostTensor {
    metadata: TensorMetadata,
    buffer: HostBuffer,
}

/// `Ok` if `len` bytes hold exactly `metadata`'s elements.
fn check_size(metadata: &TensorMetadata, len: usize) -> Result<(), TensorError> {
    let elements = metadata.shape.checked_num_elements().ok_or(TensorError::BadShape)?;
    let element_size = metadata.dtype.size();
    if elements.checked_mul(element_size) != Some(len) {
        return Err(TensorError::BufferSize { buffer: len, elements, element_size });
    }
    Ok(())
}

impl DenseHostTensor {
    /// A zeroed tensor of `metadata`, its buffer from `alloc`.
    pub fn new(alloc: Allocator, metadata: TensorMetadata) -> Result<Self, TensorError> {
        let size = metadata.data_size().ok_or(TensorError::BadShape)?;
        let buffer = HostBuffer::allocate(alloc, size).map_err(|_| TensorError::CannotAllocate)?;
        Ok(DenseHostTensor { metadata, buffer })
    }

    /// A tensor of `metadata` holding a copy of `bytes`, which must be exactly its size (the
    /// buffer is not zeroed first, as [`DenseHostTensor::new`]'s is). A size that does not
    /// match is [`TensorError::BufferSize`]; exhaustion, [`TensorError::CannotAllocate`].
    ///
    /// ```
    /// use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
    /// use hostrt_core::{Allocator, FixedArena};
    ///
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    ///
    /// let meta = TensorMetadata { dtype: DType::I8, shape: TensorShape::new(&[2]).unwrap() };
    /// let t = DenseHostTensor::copy_of(alloc, meta.clone(), &[7, 9]).unwrap();
    /// assert_eq!(*t.read_bytes().unwrap(), [7, 9]);
    /// assert!(DenseHostTensor::copy_of(alloc, meta, &[1, 2, 3]).is_err(), "three bytes for two");
    /// ```
    pub fn copy_of(alloc: Allocator, metadata: TensorMetadata, bytes: &[u8]) -> Result<Self, TensorError> {
        check_size(&metadata, bytes.len())?;
        let buffer = HostBuffer::copy_of(alloc, bytes).map_err(|_| TensorError::CannotAllocate)?;
        Ok(DenseHostTensor { metadata, buffer })
    }

    /// A tensor over `buffer`, which must hold exactly the shape's elements.
    pub fn from_buffer(metadata: TensorMetadata, buffer: HostBuffer) -> Result<Self, TensorError> {
        check_size(&metadata, buffer.len())?;
        Ok(DenseHostTensor { metadata, buffer })
    }

    /// Dtype and shape.
    pub fn metadata(&self) -> &TensorMetadata {
        &self.metadata
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.metadata.dtype
    }

    /// The shape.
    pub fn shape(&self) -> &TensorShape {
        &self.metadata.shape
    }

    /// The buffer (shared).
    pub fn buffer(&self) -> &HostBuffer {
        &self.buffer
    }

    fn check<T: Plain>(&self) -> Result<(), TensorError> {
        if self.dtype() != T::DTYPE {
            return Err(TensorError::DType { actual: self.dtype(), wanted: T::DTYPE });
        }
        if !self.buffer.addr().is_multiple_of(core::mem::align_of::<T>()) {
            return Err(TensorError::Misaligned);
        }
        Ok(())
    }

    /// The elements as a `&[T]` (row-major), while no writer holds the buffer.
    pub fn read<T: Plain>(&self) -> Result<Elements<'_, T>, TensorError> {
        self.check::<T>()?;
        Ok(Elements { bytes: self.buffer.read()?, _t: core::marker::PhantomData })
    }

    /// The raw row-major bytes of any dtype (bool, f16, complex included), while no writer
    /// holds the buffer.
    pub fn read_bytes(&self) -> Result<ReadGuard<'_>, TensorError> {
        Ok(self.buffer.read()?)
    }

    /// The raw bytes for writing, while no one else reads or writes the buffer.
    pub fn write_bytes(&self) -> Result<WriteGuard<'_>, TensorError> {
        Ok(self.buffer.write()?)
    }

    /// The elements as a `&mut [T]`, while no one else reads or writes the buffer.
    pub fn write<T: Plain>(&self) -> Result<ElementsMut<'_, T>, TensorError> {
        self.check::<T>()?;
        Ok(ElementsMut { bytes: self.buffer.write()?, _t: core::marker::PhantomData })
    }
}

/// Typed read access to a tensor (see [`DenseHostTensor::read`]).
#[derive(Debug)]
pub struct Elements<'b, T> {
    bytes: ReadGuard<'b>,
    _t: core::marker::PhantomData<T>,
}

/// The bytes of a tensor as a `&[T]`.
///
/// # Safety
/// `bytes` are the data of a tensor that `DenseHostTensor::check` accepted for `T`: aligned
/// for `T`, a whole number of `T`s.
unsafe fn as_elements<T: Plain>(bytes: &[u8]) -> &[T] {
    let n = bytes.len() / core::mem::size_of::<T>();
    // SAFETY: aligned and sized for `T` (the caller's promise); every bit pattern is a valid
    // `T` (`Plain`); the shared borrow of `bytes` keeps writers out while the slice lives.
    unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n) }
}

impl<T: Plain> core::ops::Deref for Elements<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the guard was made by `read`/`write` after `check::<T>()` passed.
        unsafe { as_elements(&self.bytes) }
    }
}

/// Typed write access to a tensor (see [`DenseHostTensor::write`]).
#[derive(Debug)]
pub struct ElementsMut<'b, T> {
    bytes: WriteGuard<'b>,
    _t: core::marker::PhantomData<T>,
}

impl<T: Plain> core::ops::Deref for ElementsMut<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the guard was made by `read`/`write` after `check::<T>()` passed.
        unsafe { as_elements(&self.bytes) }
    }
}

impl<T: Plain> core::ops::DerefMut for ElementsMut<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let n = self.bytes.len() / core::mem::size_of::<T>();
        // SAFETY: as for `deref`; the guard is the only access to the buffer, and any bit
        // pattern written is a valid `T` byte sequence.
        unsafe { core::slice::from_raw_parts_mut(self.bytes.as_mut_ptr().cast::<T>(), n) }
    }
}

/// Elements printed before `, ... `.
const PRINTED: usize = 16;

/// One element, its bytes `b` as stored (little-endian), in TFRT's text form.
fn write_element(f: &mut fmt::Formatter<'_>, dtype: DType, b: &[u8]) -> fmt::Result {
    let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let f32_at = |i: usize| f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let f64_at = |i: usize| f64::from_le_bytes(core::array::from_fn(|k| b[i + k]));
    let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let u64_at = |i: usize| u64::from_le_bytes(core::array::from_fn(|k| b[i + k]));
    match dtype {
        DType::U8 => write!(f, "{}", b[0]),
        DType::Bool => write!(f, "{}", u8::from(b[0] != 0)),
        DType::I8 => write!(f, "{}", b[0] as i8),
        DType::U16 => write!(f, "{}", u16_at(0)),
        DType::I16 => write!(f, "{}", u16_at(0) as i16),
        DType::U32 => write!(f, "{}", u32_at(0)),
        DType::I32 => write!(f, "{}", u32_at(0) as i32),
        DType::U64 => write!(f, "{}", u64_at(0)),
        DType::I64 => write!(f, "{}", u64_at(0) as i64),
        DType::F32 => write_c_exp(f, f64::from(f32_at(0))),
        DType::F64 => write_c_exp(f, f64_at(0)),
        DType::Complex64 => {
            f.write_str("(")?;
            write_c_exp(f, f64::from(f32_at(0)))?;
            f.write_str(",")?;
            write_c_exp(f, f64::from(f32_at(4)))?;
            f.write_str(")")
        }
        DType::Complex128 => {
            f.write_str("(")?;
            write_c_exp(f, f64_at(0))?;
            f.write_str(",")?;
            write_c_exp(f, f64_at(8))?;
            f.write_str(")")
        }
        DType::F16 => write!(f, "fp16({})", u16_at(0)),
        DType::BF16 => write!(f, "bf16({})", u16_at(0)),
    }
}

impl DenseHostTensor {
    /// TFRT's form with every element (no `, ... `): what a program that must show all its
    /// results prints (`hostrt.print_tensor_all`).
    pub fn display_all(&self) -> impl fmt::Display + '_ {
        struct All<'t>(&'t DenseHostTensor);
        impl fmt::Display for All<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write_text(f, usize::MAX)
            }
        }
        All(self)
    }

    fn write_text(&self, f: &mut fmt::Formatter<'_>, limit: usize) -> fmt::Result {
        let bytes = self.buffer.read().map_err(|_| fmt::Error)?;
        write!(f, "DenseHostTensor dtype = {}, shape = {}, values = [", self.dtype(), self.shape())?;
        let size = self.dtype().size();
        let mut elements = bytes.chunks_exact(size);
        for (i, e) in elements.by_ref().take(limit).enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write_element(f, self.dtype(), e)?;
        }
        if elements.next().is_some() {
            f.write_str(", ... ")?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for DenseHostTensor {
    /// `DenseHostTensor dtype = i32, shape = [2, 2], values = [1, 2, 3, 4]`: at most the first
    /// 16 elements, then `, ... ` when there are more. Fails (`fmt::Error`) while a writer
    /// holds the buffer.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_text(f, PRINTED)
    }
}

impl fmt::Debug for DenseHostTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DenseHostTensor({}, {:?})", self.metadata, self.buffer)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::string::ToString;

    use super::*;
    use crate::testing::TestArena;

    fn meta(dtype: DType, dims: &[i64]) -> TensorMetadata {
        TensorMetadata { dtype, shape: TensorShape::new(dims).unwrap() }
    }

    #[test]
    fn tensors_print_as_tfrt_prints_them() {
        let arena = TestArena::new(16384);
        let t = DenseHostTensor::new(arena.alloc, meta(DType::I32, &[20])).unwrap();
        t.write::<i32>().unwrap().iter_mut().enumerate().for_each(|(i, x)| *x = i as i32);
        assert_eq!(
            t.to_string(),
            "DenseHostTensor dtype = i32, shape = [20], values = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ... ]"
        );
        let s = DenseHostTensor::new(arena.alloc, meta(DType::F32, &[])).unwrap();
        s.write::<f32>().unwrap()[0] = 2.0;
        assert_eq!(s.to_string(), "DenseHostTensor dtype = f32, shape = [], values = [2.000000e+00]");
        let e = DenseHostTensor::new(arena.alloc, meta(DType::I32, &[0])).unwrap();
        assert_eq!(e.to_string(), "DenseHostTensor dtype = i32, shape = [0], values = []");
        let c = DenseHostTensor::new(arena.alloc, meta(DType::Complex64, &[1])).unwrap();
        c.buffer()
            .write()
            .unwrap()
            .copy_from_slice(&[1.5f32.to_le_bytes(), (-0.0f32).to_le_bytes()].concat());
        assert_eq!(
            c.to_string(),
            "DenseHostTensor dtype = complex64, shape = [1], values = [(1.500000e+00,-0.000000e+00)]"
        );
        let b = DenseHostTensor::new(arena.alloc, meta(DType::Bool, &[2])).unwrap();
        b.buffer().write().unwrap()[1] = 1;
        assert_eq!(b.to_string(), "DenseHostTensor dtype = i1, shape = [2], values = [0, 1]");
        drop((t, s, e, c, b));
        assert_eq!(arena.in_use(), 0);
    }

    #[test]
    fn shapes_buffers_and_dtypes_are_checked() {
        let arena = TestArena::new(8192);
        let buf = HostBuffer::allocate(arena.alloc, 12).unwrap();
        let bad = DenseHostTensor::from_buffer(meta(DType::I32, &[2, 2]), buf.clone()).unwrap_err();
        assert_eq!(bad, TensorError::BufferSize { buffer: 12, elements: 4, element_size: 4 });
        let t = DenseHostTensor::from_buffer(meta(DType::I32, &[3]), buf.clone()).unwrap();
        t.write::<i32>().unwrap()[2] = -1;
        assert_eq!(&buf.read().unwrap()[8..], &(-1i32).to_le_bytes(), "the tensor shares the buffer");
        assert_eq!(
            t.read::<u32>().unwrap_err(),
            TensorError::DType { actual: DType::I32, wanted: DType::U32 }
        );
        let odd = buf.slice(1, 4).unwrap();
        let m = DenseHostTensor::from_buffer(meta(DType::I32, &[1]), odd).unwrap();
        assert_eq!(m.read::<i32>().unwrap_err(), TensorError::Misaligned);
        let r = t.read::<i32>().unwrap();
        assert_eq!(t.write::<i32>().unwrap_err(), TensorError::Busy);
        drop(r);
        assert_eq!(
            DenseHostTensor::new(arena.alloc, meta(DType::F64, &[-1])).unwrap_err(),
            TensorError::BadShape
        );
        assert_eq!(
            DenseHostTensor::new(arena.alloc, meta(DType::F64, &[1 << 20])).unwrap_err(),
            TensorError::CannotAllocate
        );
        assert_eq!(TensorError::CannotAllocate.to_string(), "Cannot allocate tensor");
        drop((buf, t, m));
        assert_eq!(arena.in_use(), 0);
    }
}
