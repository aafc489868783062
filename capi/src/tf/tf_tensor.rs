//! `tf_tensor.h`: `TF_Tensor`, a handle on a [`DenseHostTensor`] plus the `TF_DataType` it
//! was made as (quantized types share their integer's storage). Handles share buffers by
//! reference count, in both directions: a kernel's input is the program's tensor, and a
//! tensor made here becomes the program's value, without a copy.
//!
//! Tensors made outside a kernel (`TF_NewTensor`, `TF_AllocateTensor`) take their buffer
//! header (and data) from the system heap, registered once as a hostrt allocator.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use hostrt_core::allocator::Allocator;
use hostrt_core::tensor::{DenseHostTensor, HostBuffer, MAX_RANK, TensorMetadata, TensorShape};
use hostrt_std::CachedMallocAllocator;

use crate::ffi::{guard, slice};
use crate::tf::tf_datatype::{self, TF_DataType};
use crate::tf::tf_status::{TF_INTERNAL, TF_INVALID_ARGUMENT, TF_OK, TF_Status, report};

/// A dense host tensor as the C API sees it (opaque to C).
#[derive(Debug, Clone)]
pub struct TF_Tensor {
    dtype: TF_DataType,
    tensor: DenseHostTensor,
}

impl TF_Tensor {
    /// A handle on `tensor` (sharing its buffer), typed as its dtype's `TF_DataType`.
    pub fn from_dense(tensor: DenseHostTensor) -> Self {
        TF_Tensor { dtype: tf_datatype::of(tensor.dtype()), tensor }
    }

    /// A handle on `tensor` typed as `dtype` (a quantized type over its integer storage).
    pub(crate) fn with_dtype(dtype: TF_DataType, tensor: DenseHostTensor) -> Self {
        TF_Tensor { dtype, tensor }
    }

    /// The tensor this handle shares.
    pub fn dense(&self) -> &DenseHostTensor {
        &self.tensor
    }

    /// The `TF_DataType` it was made as.
    pub fn dtype(&self) -> TF_DataType {
        self.dtype
    }
}

/// `TF_AllocatorAttributes` (a plain C struct): hostrt has host memory only, so it is read
/// by nothing.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TF_AllocatorAttributes {
    /// `TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE`.
    pub struct_size: usize,
    /// 1 for host memory.
    pub on_host: u8,
}

/// The system heap as a hostrt allocator, with its per-thread cache of small blocks,
/// registered on first use (`None` if every allocator slot is taken).
pub(crate) fn heap() -> Option<Allocator> {
    static HEAP: CachedMallocAllocator = CachedMallocAllocator;
    static HANDLE: OnceLock<Option<Allocator>> = OnceLock::new();
    *HANDLE.get_or_init(|| Allocator::register(&HEAP).ok())
}

/// Metadata for `dtype` and the `num_dims` dims at `dims`, if they describe a tensor hostrt
/// can hold (fixed-size dtype, rank ≤ 16, dims ≥ 0, bytes addressable).
///
/// # Safety
/// `dims` is NULL or points to `num_dims` values.
pub(crate) unsafe fn metadata(
    dtype: TF_DataType,
    dims: *const i64,
    num_dims: c_int,
) -> Option<TensorMetadata> {
    let storage = tf_datatype::storage(dtype)?;
    if num_dims < 0 || num_dims as usize > MAX_RANK {
        return None;
    }
    // SAFETY: `num_dims` values at `dims`, by the caller's contract.
    let dims = unsafe { slice(dims, i64::from(num_dims)) }?;
    if dims.iter().any(|&d| d < 0) {
        return None;
    }
    let metadata = TensorMetadata { dtype: storage, shape: TensorShape::new(dims).ok()? };
    metadata.data_size()?;
    Some(metadata)
}

/// The caller's bytes and how to give them back (`TF_NewTensor`'s deallocator, the
/// embedding API's release function).
pub(crate) struct CallerBytes {
    pub(crate) data: *mut u8,
    pub(crate) len: usize,
    pub(crate) deallocator: Option<unsafe extern "C" fn(*mut c_void, usize, *mut c_void)>,
    pub(crate) arg: *mut c_void,
}

// SAFETY: the bytes belong to the tensor until the deallocator runs; TensorFlow's contract
// lets any thread release a tensor, so the caller's deallocator must accept that.
unsafe impl Send for CallerBytes {}
// SAFETY: shared access only reads the pointer fields; the bytes are guarded by the
// buffer's borrow flag.
unsafe impl Sync for CallerBytes {}

impl CallerBytes {
    pub(crate) fn release(&mut self) {
        if let Some(f) = self.deallocator.take() {
            // SAFETY: the caller gave this function, data, length and argument together for
            // exactly this call, made once (`take`).
            unsafe { f(self.data.cast(), self.len, self.arg) }
        }
    }
}

impl AsMut<[u8]> for CallerBytes {
    fn as_mut(&mut self) -> &mut [u8] {
        if self.len == 0 || self.data.is_null() {
            return &mut [];
        }
        // SAFETY: `TF_NewTensor`'s caller handed over `len` bytes at `data` until the
        // deallocator runs, which happens only on drop.
        unsafe { std::slice::from_raw_parts_mut(self.data, self.len) }
    }
}

impl Drop for CallerBytes {
    fn drop(&mut self) {
        self.release();
    }
}

/// A tensor of `metadata` over the first bytes of `buffer`.
fn over(dtype: TF_DataType, metadata: TensorMetadata, buffer: HostBuffer) -> Option<Box<TF_Tensor>> {
    let size = metadata.data_size()?;
    let buffer = buffer.slice(0, size)?;
    let tensor = DenseHostTensor::from_buffer(metadata, buffer).ok()?;
    Some(Box::new(TF_Tensor { dtype, tensor }))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NewTensor(
    dtype: TF_DataType,
    dims: *const i64,
    num_dims: c_int,
    data: *mut c_void,
    len: usize,
    deallocator: Option<unsafe extern "C" fn(data: *mut c_void, len: usize, arg: *mut c_void)>,
    deallocator_arg: *mut c_void,
) -> *mut TF_Tensor {
    // Owned from here on: every path below releases the bytes exactly once.
    let mut bytes = CallerBytes { data: data.cast(), len, deallocator, arg: deallocator_arg };
    guard(std::ptr::null_mut(), move || {
        // SAFETY: `num_dims` dims at `dims`, by the contract.
        let Some(meta) = (unsafe { metadata(dtype, dims, num_dims) }) else {
            return std::ptr::null_mut();
        };
        let (Some(size), Some(heap)) = (meta.data_size(), heap()) else { return std::ptr::null_mut() };
        if len < size || (data.is_null() && size > 0) {
            return std::ptr::null_mut();
        }
        let aligned = (data as usize).is_multiple_of(meta.dtype.size().max(1));
        let buffer = if aligned {
            HostBuffer::from_owner_mut(heap, bytes).ok()
        } else {
            // Copied into an aligned buffer; the caller's bytes go back at once.
            let copy = HostBuffer::allocate(heap, size).ok().filter(|copy| match copy.write() {
                Ok(mut to) => {
                    to.copy_from_slice(&bytes.as_mut()[..size]);
                    true
                }
                Err(_) => false,
            });
            bytes.release();
            copy
        };
        buffer.and_then(|b| over(dtype, meta, b)).map_or(std::ptr::null_mut(), Box::into_raw)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_AllocateTensor(
    dtype: TF_DataType,
    dims: *const i64,
    num_dims: c_int,
    len: usize,
) -> *mut TF_Tensor {
    guard(None, || {
        // SAFETY: `num_dims` dims at `dims`, by the contract.
        let meta = unsafe { metadata(dtype, dims, num_dims) }?;
        if len < meta.data_size()? {
            return None;
        }
        let buffer = HostBuffer::allocate(heap()?, len).ok()?;
        over(dtype, meta, buffer).map(Box::into_raw)
    })
    .unwrap_or(std::ptr::null_mut())
}

/// The tensor behind a handle.
///
/// # Safety
/// `t` is NULL or a live tensor from this API.
pub(crate) unsafe fn tensor<'a>(t: *const TF_Tensor) -> Option<&'a TF_Tensor> {
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { t.as_ref() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorMaybeMove(t: *mut TF_Tensor) -> *mut TF_Tensor {
    // SAFETY: NULL or live, by the contract.
    let unique = unsafe { tensor(t) }.is_some_and(|t| t.tensor.buffer().is_unique());
    if unique { t } else { std::ptr::null_mut() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteTensor(t: *mut TF_Tensor) {
    if !t.is_null() {
        // SAFETY: a tensor from this API (a Box), deleted once by the contract.
        guard((), || drop(unsafe { Box::from_raw(t) }));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorType(t: *const TF_Tensor) -> TF_DataType {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.map_or(0, |t| t.dtype)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_SetShape(tensor: *mut TF_Tensor, dims: *const i64, num_dims: c_int) {
    // SAFETY: NULL or live, by the contract.
    let Some(t) = (unsafe { tensor.as_mut() }) else { return };
    // SAFETY: `num_dims` dims at `dims`, by the contract.
    let Some(meta) = (unsafe { metadata(t.dtype, dims, num_dims) }) else { return };
    if meta.shape.checked_num_elements() != t.tensor.shape().checked_num_elements() {
        return;
    }
    let meta = TensorMetadata { dtype: t.tensor.dtype(), shape: meta.shape };
    if let Ok(reshaped) = DenseHostTensor::from_buffer(meta, t.tensor.buffer().clone()) {
        t.tensor = reshaped;
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_TensorDefaultAlignment() -> usize {
    hostrt_core::tensor::BUFFER_ALIGN
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NumDims(t: *const TF_Tensor) -> c_int {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.map_or(0, |t| t.tensor.shape().rank() as c_int)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_Dim(t: *const TF_Tensor, dim_index: c_int) -> i64 {
    // SAFETY: NULL or live, by the contract.
    let t = unsafe { tensor(t) };
    t.and_then(|t| t.tensor.shape().dim(usize::try_from(dim_index).ok()?)).unwrap_or(-1)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorByteSize(t: *const TF_Tensor) -> usize {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.map_or(0, |t| t.tensor.buffer().len())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorData(t: *const TF_Tensor) -> *mut c_void {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.map_or(std::ptr::null_mut(), |t| t.tensor.buffer().addr() as *mut c_void)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorElementCount(t: *const TF_Tensor) -> i64 {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.map_or(0, |t| t.tensor.shape().num_elements())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorBitcastFrom(
    from: *const TF_Tensor,
    dtype: TF_DataType,
    to: *mut TF_Tensor,
    new_dims: *const i64,
    num_new_dims: c_int,
    status: *mut TF_Status,
) {
    let done = guard(Err((TF_INTERNAL, "TF_TensorBitcastFrom panicked".to_owned())), || {
        // SAFETY: NULL or live, by the contract; `from` and `to` may be the same tensor, so
        // `from` is cloned before `to` is written.
        let (Some(from), Some(to)) = (unsafe { tensor(from) }.cloned(), unsafe { to.as_mut() }) else {
            return Err((TF_INVALID_ARGUMENT, "TF_TensorBitcastFrom: a NULL tensor".to_owned()));
        };
        let (from_size, to_size) = (tf_datatype::size(from.dtype), tf_datatype::size(dtype));
        if from_size == 0 || to_size == 0 {
            return Err((
                TF_INVALID_ARGUMENT,
                format!("cannot bitcast between dtypes {} and {dtype}: no fixed element size", from.dtype),
            ));
        }
        // SAFETY: `num_new_dims` dims at `new_dims`, by the contract.
        let meta = unsafe { metadata(dtype, new_dims, num_new_dims) }
            .ok_or((TF_INVALID_ARGUMENT, "TF_TensorBitcastFrom: invalid dims".to_owned()))?;
        let (have, want) = (from.tensor.buffer().len(), meta.data_size().unwrap_or(usize::MAX));
        if have != want {
            return Err((
                TF_INVALID_ARGUMENT,
                format!(
                    "cannot bitcast a tensor of {have} bytes to shape {} of dtype {dtype} ({want} bytes)",
                    meta.shape
                ),
            ));
        }
        let tensor = DenseHostTensor::from_buffer(meta, from.tensor.buffer().clone())
            .map_err(|e| (TF_INVALID_ARGUMENT, e.to_string()))?;
        *to = TF_Tensor { dtype, tensor };
        Ok(())
    });
    let (code, message) = done.err().unwrap_or((TF_OK, String::new()));
    // SAFETY: NULL or a live status, by the contract.
    unsafe { report(status, code, &message) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_TensorIsAligned(t: *const TF_Tensor) -> bool {
    // SAFETY: NULL or live, by the contract.
    unsafe { tensor(t) }.is_some_and(|t| t.tensor.buffer().addr().is_multiple_of(64))
}

#[cfg(test)]
mod tests;
