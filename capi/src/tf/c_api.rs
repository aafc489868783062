//! The part of `c_api.h` hostrt has: `TF_Bool`, `TF_StringView`, and `TF_Buffer` (bytes and
//! the function that frees them).

use std::ffi::{c_char, c_void};

use crate::ffi::guard;

/// A C boolean (`unsigned char`).
pub type TF_Bool = u8;

/// A string that is not NUL-terminated (a plain C struct).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TF_StringView {
    /// The bytes.
    pub data: *const c_char,
    /// How many.
    pub len: usize,
}

/// TensorFlow's `TF_Buffer` (a plain C struct).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct TF_Buffer {
    /// The bytes.
    pub data: *const c_void,
    /// How many.
    pub length: usize,
    /// Frees `data` when the buffer is deleted, if set.
    pub data_deallocator: Option<unsafe extern "C" fn(data: *mut c_void, length: usize)>,
}

unsafe extern "C" fn free_copy(data: *mut c_void, length: usize) {
    // SAFETY: `TF_NewBufferFromString` made `data` from a Box<[u8]> of `length` bytes.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data.cast::<u8>(), length)) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NewBufferFromString(proto: *const c_void, proto_len: usize) -> *mut TF_Buffer {
    guard(std::ptr::null_mut(), || {
        // SAFETY: `proto_len` bytes at `proto`, by the contract (NULL only with length 0).
        let bytes = unsafe { crate::ffi::slice(proto.cast::<u8>(), proto_len as i64) }.unwrap_or_default();
        let copy = Box::into_raw(bytes.to_vec().into_boxed_slice());
        Box::into_raw(Box::new(TF_Buffer {
            data: copy.cast::<c_void>(),
            length: bytes.len(),
            data_deallocator: Some(free_copy),
        }))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_NewBuffer() -> *mut TF_Buffer {
    guard(std::ptr::null_mut(), || {
        Box::into_raw(Box::new(TF_Buffer { data: std::ptr::null(), length: 0, data_deallocator: None }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteBuffer(buffer: *mut TF_Buffer) {
    if buffer.is_null() {
        return;
    }
    // SAFETY: a buffer from `TF_NewBuffer*` (a Box), deleted once, by the contract.
    let b = unsafe { Box::from_raw(buffer) };
    if let Some(free) = b.data_deallocator {
        // SAFETY: the deallocator set for exactly these bytes.
        unsafe { free(b.data.cast_mut(), b.length) }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetBuffer(buffer: *mut TF_Buffer) -> TF_Buffer {
    // SAFETY: NULL or a live buffer, by the contract.
    unsafe { buffer.as_ref() }.copied().unwrap_or(TF_Buffer {
        data: std::ptr::null(),
        length: 0,
        data_deallocator: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_copy_and_free_their_bytes() {
        // SAFETY: 3 bytes at the literal; buffers deleted once.
        unsafe {
            let b = TF_NewBufferFromString(b"abc".as_ptr().cast(), 3);
            let view = TF_GetBuffer(b);
            assert_eq!(std::slice::from_raw_parts(view.data.cast::<u8>(), view.length), b"abc");
            TF_DeleteBuffer(b);
            let empty = TF_NewBuffer();
            assert_eq!(TF_GetBuffer(empty).length, 0);
            TF_DeleteBuffer(empty);
            TF_DeleteBuffer(std::ptr::null_mut());
        }
    }
}
