use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::tf::tf_datatype::{TF_FLOAT, TF_INT32, TF_INT64, TF_QUINT8, TF_STRING, TF_UINT8};
use crate::tf::tf_status::{TF_DeleteStatus, TF_GetCode, TF_NewStatus};

/// Frees a test's bytes and counts the call in the `AtomicUsize` at `arg`.
unsafe extern "C" fn count_release(data: *mut c_void, len: usize, arg: *mut c_void) {
    // SAFETY: the test's Box<[u8]> of `len` bytes, leaked for the tensor.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(data.cast::<u8>(), len)) });
    // SAFETY: every test passes its own counter, which outlives its tensors.
    unsafe { &*arg.cast::<AtomicUsize>() }.fetch_add(1, Ordering::SeqCst);
}

fn counter(c: &AtomicUsize) -> *mut c_void {
    (c as *const AtomicUsize).cast_mut().cast()
}

/// `len` caller bytes (a leaked Box the deallocator frees).
fn caller_bytes(len: usize) -> *mut c_void {
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast()
}

#[test]
fn caller_bytes_are_shared_then_given_back_once() {
    let released = AtomicUsize::new(0);
    let data = caller_bytes(24);
    let dims = [2i64, 3];
    // SAFETY: valid dims and data; the deallocator frees the data.
    unsafe {
        let t = TF_NewTensor(TF_FLOAT, dims.as_ptr(), 2, data, 24, Some(count_release), counter(&released));
        assert!(!t.is_null());
        assert_eq!(TF_TensorData(t), data, "not copied");
        assert_eq!((TF_TensorType(t), TF_NumDims(t), TF_Dim(t, 1), TF_Dim(t, 2)), (TF_FLOAT, 2, 3, -1));
        assert_eq!((TF_TensorByteSize(t), TF_TensorElementCount(t)), (24, 6));
        TF_TensorData(t).cast::<f32>().add(5).write(2.5);
        assert_eq!((*t).dense().read::<f32>().unwrap()[5], 2.5, "the hostrt tensor sees the write");
        // A second handle on the same buffer, as a bitcast to [6] i32.
        let view = TF_AllocateTensor(TF_INT32, [1i64].as_ptr(), 1, 4);
        let status = TF_NewStatus();
        TF_TensorBitcastFrom(t, TF_INT32, view, [6i64].as_ptr(), 1, status);
        assert_eq!(TF_GetCode(status), TF_OK);
        assert_eq!((TF_TensorData(view), TF_Dim(view, 0)), (data, 6));
        assert!(TF_TensorMaybeMove(t).is_null(), "two handles share the bytes");
        TF_DeleteTensor(t);
        assert_eq!(released.load(Ordering::SeqCst), 0, "the view keeps the bytes");
        assert_eq!(TF_TensorMaybeMove(view), view, "now the only handle");
        TF_DeleteTensor(view);
        assert_eq!(released.load(Ordering::SeqCst), 1);
        TF_DeleteStatus(status);
    }
}

#[test]
fn inconsistent_tensors_are_refused_and_their_bytes_given_back() {
    let released = AtomicUsize::new(0);
    let make = |dtype, dims: &[i64], num_dims, len| {
        // SAFETY: `dims` holds at least `num_dims` values or `num_dims` is refused first.
        unsafe {
            TF_NewTensor(
                dtype,
                dims.as_ptr(),
                num_dims,
                caller_bytes(len),
                len,
                Some(count_release),
                counter(&released),
            )
        }
    };
    assert!(make(TF_FLOAT, &[2, 3], 2, 20).is_null(), "too short");
    assert!(make(TF_FLOAT, &[-1], 1, 4).is_null(), "negative dim");
    assert!(make(TF_FLOAT, &[1], -1, 4).is_null(), "negative rank");
    assert!(make(TF_FLOAT, &[1; 17], 17, 4).is_null(), "rank above 16");
    assert!(make(TF_STRING, &[1], 1, 16).is_null(), "no string tensors");
    assert!(make(99, &[1], 1, 16).is_null(), "no such dtype");
    assert!(make(TF_INT64, &[i64::MAX, 4], 2, 8).is_null(), "more bytes than memory");
    assert_eq!(released.load(Ordering::SeqCst), 7, "every refused buffer went back");
    // SAFETY: NULL and invalid dims are part of the contract's misuse cases.
    unsafe {
        assert!(TF_AllocateTensor(TF_FLOAT, std::ptr::null(), 1, 4).is_null());
        assert!(TF_AllocateTensor(TF_FLOAT, [4i64].as_ptr(), 1, 15).is_null());
        let status = TF_NewStatus();
        let (a, b) = (
            TF_AllocateTensor(TF_FLOAT, [4i64].as_ptr(), 1, 16),
            TF_AllocateTensor(TF_UINT8, [1i64].as_ptr(), 1, 1),
        );
        TF_TensorBitcastFrom(a, TF_INT64, b, [3i64].as_ptr(), 1, status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        assert_eq!(TF_Dim(b, 0), 1, "unchanged on error");
        TF_TensorBitcastFrom(a, TF_STRING, b, [3i64].as_ptr(), 1, status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        TF_TensorBitcastFrom(std::ptr::null(), TF_INT64, b, [2i64].as_ptr(), 1, status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        TF_TensorBitcastFrom(a, TF_INT64, b, [2i64].as_ptr(), 1, status);
        assert_eq!((TF_GetCode(status), TF_TensorType(b), TF_Dim(b, 0)), (TF_OK, TF_INT64, 2));
        TF_DeleteTensor(a);
        TF_DeleteTensor(b);
        TF_DeleteStatus(status);
        // NULL handles read as empty.
        assert_eq!((TF_NumDims(std::ptr::null()), TF_TensorByteSize(std::ptr::null())), (0, 0));
        TF_DeleteTensor(std::ptr::null_mut());
    }
}

#[test]
fn misaligned_bytes_are_copied_and_given_back_at_once() {
    /// Frees the whole 9-byte allocation (the tensor saw it from byte 1) and counts.
    unsafe extern "C" fn release_from_start(data: *mut c_void, _: usize, arg: *mut c_void) {
        // SAFETY: `data` is one byte into the test's 9-byte allocation.
        unsafe { count_release(data.cast::<u8>().sub(1).cast(), 9, arg) }
    }
    let released = AtomicUsize::new(0);
    let data = caller_bytes(9);
    // SAFETY: one byte in, 8 bytes remain for the 2 floats.
    unsafe {
        let at = data.cast::<u8>().add(1);
        at.cast::<[u8; 4]>().write_unaligned(1.5f32.to_le_bytes());
        let t = TF_NewTensor(
            TF_FLOAT,
            [2i64].as_ptr(),
            1,
            at.cast(),
            8,
            Some(release_from_start),
            counter(&released),
        );
        assert!(!t.is_null());
        assert_eq!(released.load(Ordering::SeqCst), 1, "copied, so given back at once");
        assert!(TF_TensorIsAligned(t));
        assert_eq!(&(*t).dense().read::<f32>().unwrap()[..], &[1.5, 0.0]);
        TF_DeleteTensor(t);
        assert_eq!(released.load(Ordering::SeqCst), 1);
    }
}

#[test]
fn quantized_tensors_keep_their_type_over_integer_storage() {
    // SAFETY: valid dims.
    unsafe {
        let t = TF_AllocateTensor(TF_QUINT8, [3i64].as_ptr(), 1, 3);
        assert_eq!((TF_TensorType(t), (*t).dense().dtype()), (TF_QUINT8, hostrt_core::tensor::DType::U8));
        TF_DeleteTensor(t);
    }
}

#[test]
fn set_shape_reshapes_one_handle_with_the_same_element_count() {
    // SAFETY: dims arrays as long as the counts given; handles deleted once.
    unsafe {
        let t = TF_AllocateTensor(TF_FLOAT, [2i64, 3].as_ptr(), 2, 24);
        let other = Box::into_raw(Box::new((*t).clone()));
        TF_SetShape(t, [3i64, 2].as_ptr(), 2);
        assert_eq!((TF_NumDims(t), TF_Dim(t, 0), TF_Dim(t, 1)), (2, 3, 2));
        assert_eq!((TF_Dim(other, 0), TF_Dim(other, 1)), (2, 3), "another handle keeps its dims");
        assert_eq!(TF_TensorData(t), TF_TensorData(other), "the buffer is shared");
        TF_SetShape(t, [6i64].as_ptr(), 1);
        assert_eq!((TF_NumDims(t), TF_Dim(t, 0)), (1, 6));
        // Another element count, a negative dim or NULL changes nothing.
        TF_SetShape(t, [7i64].as_ptr(), 1);
        TF_SetShape(t, [-2i64, -3].as_ptr(), 2);
        TF_SetShape(std::ptr::null_mut(), [6i64].as_ptr(), 1);
        assert_eq!((TF_NumDims(t), TF_Dim(t, 0)), (1, 6));
        assert_eq!(TF_TensorDefaultAlignment(), 64);
        assert_eq!(TF_TensorData(t) as usize % TF_TensorDefaultAlignment(), 0);
        TF_DeleteTensor(other);
        TF_DeleteTensor(t);
    }
}
