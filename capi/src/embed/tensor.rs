//! `hostrt_tensor`: a dense host tensor handed between the app and programs without copies
//! (arguments share the buffer with the program; results share it with the app).

use std::ffi::c_void;
use std::sync::Arc;

use hostrt_core::tensor::{DenseHostTensor, HostBuffer};

use super::host::{HostInner, hostrt_host};
use super::raw::{self, Kind};
use super::status::{Error, HOSTRT_RESOURCE_EXHAUSTED, hostrt_code, hostrt_status, report};
use crate::ffi::guard;
use crate::tf::tf_datatype::{self, TF_DataType};
use crate::tf::tf_tensor::{CallerBytes, metadata};

/// An element type; the numbers are TensorFlow's `TF_DataType` values.
pub type hostrt_dtype = i32;
/// 32-bit float.
pub const HOSTRT_DTYPE_F32: hostrt_dtype = 1;
/// 64-bit float.
pub const HOSTRT_DTYPE_F64: hostrt_dtype = 2;
/// 32-bit signed integer.
pub const HOSTRT_DTYPE_I32: hostrt_dtype = 3;
/// 8-bit unsigned integer.
pub const HOSTRT_DTYPE_U8: hostrt_dtype = 4;
/// 16-bit signed integer.
pub const HOSTRT_DTYPE_I16: hostrt_dtype = 5;
/// 8-bit signed integer.
pub const HOSTRT_DTYPE_I8: hostrt_dtype = 6;
/// 64-bit signed integer.
pub const HOSTRT_DTYPE_I64: hostrt_dtype = 9;
/// Boolean, one byte (0 or 1).
pub const HOSTRT_DTYPE_BOOL: hostrt_dtype = 10;
/// bfloat16 (raw 16 bits).
pub const HOSTRT_DTYPE_BF16: hostrt_dtype = 14;
/// 16-bit unsigned integer.
pub const HOSTRT_DTYPE_U16: hostrt_dtype = 17;
/// IEEE half (raw 16 bits).
pub const HOSTRT_DTYPE_F16: hostrt_dtype = 19;
/// 32-bit unsigned integer.
pub const HOSTRT_DTYPE_U32: hostrt_dtype = 22;
/// 64-bit unsigned integer.
pub const HOSTRT_DTYPE_U64: hostrt_dtype = 23;

/// Gives the caller's bytes back: called once with the `data`, `len` and `arg` given to
/// [`hostrt_tensor_borrow`], from any thread.
pub type hostrt_release_fn = Option<unsafe extern "C" fn(data: *mut c_void, len: usize, arg: *mut c_void)>;

/// A tensor (opaque).
pub struct hostrt_tensor {
    pub(crate) tensor: DenseHostTensor,
    pub(crate) dtype: TF_DataType,
    /// The host whose allocator holds the buffer.
    pub(crate) _host: Arc<HostInner>,
}

impl hostrt_tensor {
    /// A handle on `tensor` (sharing its buffer), allocated from `host`.
    pub(crate) fn publish(
        tensor: DenseHostTensor,
        host: Arc<HostInner>,
    ) -> Result<*mut hostrt_tensor, Error> {
        let dtype = tf_datatype::of(tensor.dtype());
        raw::publish(Kind::Tensor, hostrt_tensor { tensor, dtype, _host: host })
    }
}

/// The metadata of a tensor of `dtype` and `dims` and its size in bytes; `given` bytes of
/// data, when there are some, must be exactly that size.
fn shape(
    dtype: hostrt_dtype,
    dims: &[i64],
    given: Option<usize>,
) -> Result<(hostrt_core::tensor::TensorMetadata, usize), Error> {
    let rank = dims.len();
    let r = i32::try_from(rank).map_err(|_| Error::invalid("rank too large"))?;
    // SAFETY: `rank` values at `dims`, a slice.
    let meta = unsafe { metadata(dtype, dims.as_ptr(), r) }.ok_or_else(|| {
        Error::invalid(format!(
            "no tensor of dtype {dtype} with these {rank} dims (a supported dtype, rank <= 16, dims >= 0)"
        ))
    })?;
    let size = meta.data_size().unwrap_or(usize::MAX);
    match given {
        Some(len) if len != size => {
            Err(Error::invalid(format!("{len} bytes given for a tensor of {size} bytes")))
        }
        _ => Ok((meta, size)),
    }
}

/// `rank` dims at `dims` as a slice.
///
/// # Safety
/// `dims` is NULL or `rank` readable values that outlive `'a`.
unsafe fn dims_of<'a>(dims: *const i64, rank: usize) -> Result<&'a [i64], Error> {
    // SAFETY: the caller's contract, passed on.
    unsafe { crate::ffi::slice(dims, i64::try_from(rank).unwrap_or(-1)) }
        .ok_or_else(|| Error::invalid("NULL dims"))
}

/// A new tensor allocated from `host`'s memory: `rank` dims at `dims`, elements copied from
/// `data` (`len` bytes, exactly the tensor's size) or zero when `data` is NULL. NULL with the
/// reason in `status`: a bad dtype or dims, `len` not the size, the arena exhausted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_new(
    host: *const hostrt_host,
    dtype: hostrt_dtype,
    dims: *const i64,
    rank: usize,
    data: *const c_void,
    len: usize,
    status: *mut hostrt_status,
) -> *mut hostrt_tensor {
    let mut out = std::ptr::null_mut();
    // SAFETY: handles checked by the table; `dims` and `data` as the contract says.
    unsafe {
        report(status, || {
            let host = super::host::host(host)?;
            let dims = dims_of(dims, rank)?;
            let bytes = (!data.is_null()).then(|| std::slice::from_raw_parts(data.cast::<u8>(), len));
            out = new_tensor(host, dtype, dims, bytes)?;
            Ok(())
        })
    };
    out
}

/// A new tensor of `host` with `dims`, its elements copied from `data` (exactly its size) or
/// zero.
pub(crate) fn new_tensor(
    host: Arc<HostInner>,
    dtype: hostrt_dtype,
    dims: &[i64],
    data: Option<&[u8]>,
) -> Result<*mut hostrt_tensor, Error> {
    let (meta, size) = shape(dtype, dims, data.map(<[u8]>::len))?;
    let tensor = DenseHostTensor::new(host.allocator(), meta)
        .map_err(|e| Error::new(HOSTRT_RESOURCE_EXHAUSTED, format!("tensor of {size} bytes: {e}")))?;
    if let Some(d) = data
        && size > 0
    {
        tensor.write_bytes().map_err(|e| Error::invalid(e.to_string()))?.copy_from_slice(d);
    }
    hostrt_tensor::publish(tensor, host)
}

/// A tensor over the caller's `len` bytes at `data`, without a copy: they must be aligned
/// for the dtype and hold exactly the tensor's size. `release(data, len, arg)` runs exactly
/// once: when the last user of the tensor (the handle, a program value, a result) is gone
/// or, if this call fails, before it returns. Until then the bytes belong to the tensor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_borrow(
    host: *const hostrt_host,
    dtype: hostrt_dtype,
    dims: *const i64,
    rank: usize,
    data: *mut c_void,
    len: usize,
    release: hostrt_release_fn,
    arg: *mut c_void,
    status: *mut hostrt_status,
) -> *mut hostrt_tensor {
    // Owned from here on: every path releases the bytes once (on drop at the latest).
    let bytes = CallerBytes { data: data.cast(), len, deallocator: release, arg };
    let mut out = std::ptr::null_mut();
    let out_ref = &mut out;
    // SAFETY: handles checked by the table; `dims` and `data` as the contract says.
    unsafe {
        report(status, move || {
            let host = super::host::host(host)?;
            let (meta, size) = shape(dtype, dims_of(dims, rank)?, Some(len))?;
            if data.is_null() && size > 0 {
                return Err(Error::invalid(format!("{len} bytes given for a tensor of {size} bytes")));
            }
            if !(data as usize).is_multiple_of(meta.dtype.align()) {
                return Err(Error::invalid(format!(
                    "borrowed data at {data:p} is not aligned to {} bytes for its dtype",
                    meta.dtype.align()
                )));
            }
            let buffer = HostBuffer::from_owner_mut(host.allocator(), bytes)
                .map_err(|e| Error::new(HOSTRT_RESOURCE_EXHAUSTED, format!("{e:?}")))?;
            let tensor =
                DenseHostTensor::from_buffer(meta, buffer).map_err(|e| Error::invalid(e.to_string()))?;
            *out_ref = hostrt_tensor::publish(tensor, host)?;
            Ok(())
        })
    };
    out
}

/// Destroys a tensor handle; the buffer goes when no program value or result shares it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_destroy(
    tensor: *mut hostrt_tensor,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table.
    unsafe { report(status, || raw::take(tensor, Kind::Tensor).map(drop).map_err(Error::invalid)) }
}

/// Reads a tensor handle (a neutral value for a bad one).
///
/// # Safety
/// As for `raw::get`.
unsafe fn with<R>(t: *const hostrt_tensor, default: R, f: impl FnOnce(&hostrt_tensor) -> R) -> R {
    // SAFETY: checked by the table, by the caller's contract.
    guard(None, || unsafe { raw::get(t, Kind::Tensor) }.ok().map(f)).unwrap_or(default)
}

/// The dtype (0 for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_dtype(tensor: *const hostrt_tensor) -> hostrt_dtype {
    // SAFETY: checked by the table.
    unsafe { with(tensor, 0, |t| t.dtype) }
}

/// The rank (0 for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_rank(tensor: *const hostrt_tensor) -> usize {
    // SAFETY: checked by the table.
    unsafe { with(tensor, 0, |t| t.tensor.shape().rank()) }
}

/// The dims, `rank` values valid while the handle lives (NULL for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_dims(tensor: *const hostrt_tensor) -> *const i64 {
    // SAFETY: checked by the table.
    unsafe { with(tensor, std::ptr::null(), |t| t.tensor.shape().dims().as_ptr()) }
}

/// The size of the data in bytes (0 for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_byte_size(tensor: *const hostrt_tensor) -> usize {
    // SAFETY: checked by the table.
    unsafe { with(tensor, 0, |t| t.tensor.buffer().len()) }
}

/// The elements, row-major, 64-byte aligned when hostrt allocated them; valid while the
/// handle lives. Write them only while no call that uses the tensor runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_tensor_data(tensor: *const hostrt_tensor) -> *mut c_void {
    // SAFETY: checked by the table.
    unsafe { with(tensor, std::ptr::null_mut(), |t| t.tensor.buffer().addr() as *mut c_void) }
}
