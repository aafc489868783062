//! `hostrt_status`: the code, message and program location of the last failure of a call.
//! Every fallible function returns a `hostrt_code` and, given a status, fills it in (also on
//! success: `HOSTRT_OK` and an empty message).

use std::ffi::{CString, c_char};

use hostrt_core::diagnostic::Diagnostic;

use super::raw::{self, Kind};
use crate::ffi::guard;

/// A status code: `HOSTRT_OK` or one of TensorFlow's error codes (same numbers).
pub type hostrt_code = i32;

/// Success.
pub const HOSTRT_OK: hostrt_code = 0;
/// The call was cancelled.
pub const HOSTRT_CANCELLED: hostrt_code = 1;
/// An error of no other kind.
pub const HOSTRT_UNKNOWN: hostrt_code = 2;
/// A bad argument: a NULL, destroyed or wrong handle, a wrong dtype, shape or count.
pub const HOSTRT_INVALID_ARGUMENT: hostrt_code = 3;
/// No such function, file or result.
pub const HOSTRT_NOT_FOUND: hostrt_code = 5;
/// Out of memory (the host's arena is exhausted).
pub const HOSTRT_RESOURCE_EXHAUSTED: hostrt_code = 8;
/// The object is not in a state that allows the call (e.g. a host that still has programs).
pub const HOSTRT_FAILED_PRECONDITION: hostrt_code = 9;
/// An index out of range.
pub const HOSTRT_OUT_OF_RANGE: hostrt_code = 11;
/// Not supported by this build.
pub const HOSTRT_UNIMPLEMENTED: hostrt_code = 12;
/// A bug in hostrt (a panic caught at the boundary).
pub const HOSTRT_INTERNAL: hostrt_code = 13;
/// A program or file that cannot be used (corrupt BEF, an unknown kernel).
pub const HOSTRT_DATA_LOSS: hostrt_code = 15;

// The codes' numbers are the core's table of error codes (`ErrorCode`, also TensorFlow's
// numbers). cbindgen copies only literal numbers into hostrt.h, so they are written out
// above, and checked against the table here when the crate compiles.
const _: () = {
    use hostrt_core::diagnostic::ErrorCode as E;
    let codes = [
        (HOSTRT_CANCELLED, E::Cancelled),
        (HOSTRT_UNKNOWN, E::Unknown),
        (HOSTRT_INVALID_ARGUMENT, E::InvalidArgument),
        (HOSTRT_NOT_FOUND, E::NotFound),
        (HOSTRT_RESOURCE_EXHAUSTED, E::ResourceExhausted),
        (HOSTRT_FAILED_PRECONDITION, E::FailedPrecondition),
        (HOSTRT_OUT_OF_RANGE, E::OutOfRange),
        (HOSTRT_UNIMPLEMENTED, E::Unimplemented),
        (HOSTRT_INTERNAL, E::Internal),
        (HOSTRT_DATA_LOSS, E::DataLoss),
    ];
    let mut i = 0;
    while i < codes.len() {
        assert!(codes[i].0 == codes[i].1 as hostrt_code, "a hostrt_code differs from the core's table");
        i += 1;
    }
};

/// A status: code, message and, for errors raised by a program's kernel, its location.
pub struct hostrt_status {
    code: hostrt_code,
    message: CString,
    file: CString,
    line: u32,
    column: u32,
}

/// An error on its way to the caller: code, message, location.
#[derive(Debug, Clone)]
pub(crate) struct Error {
    pub(crate) code: hostrt_code,
    pub(crate) message: String,
    pub(crate) location: Option<(String, u32, u32)>,
}

impl Error {
    pub(crate) fn new(code: hostrt_code, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), location: None }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(HOSTRT_INVALID_ARGUMENT, message)
    }
}

impl From<&Diagnostic> for Error {
    fn from(d: &Diagnostic) -> Self {
        Error {
            code: d.code as hostrt_code,
            message: d.message().to_owned(),
            location: d.location.as_ref().map(|l| (l.file().to_owned(), l.line, l.column)),
        }
    }
}

/// Runs `f` and reports its outcome to `status` (NULL: not reported); a panic becomes
/// `HOSTRT_INTERNAL`.
///
/// # Safety
/// `status` is NULL or a handle from [`hostrt_status_new`] that no other thread uses.
pub(crate) unsafe fn report(
    status: *mut hostrt_status,
    f: impl FnOnce() -> Result<(), Error>,
) -> hostrt_code {
    // The panic's error is made only on a panic (not a String per call).
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(Error::new(HOSTRT_INTERNAL, "a panic inside hostrt (a bug)")));
    let code = r.as_ref().err().map_or(HOSTRT_OK, |e| e.code);
    if !status.is_null() {
        // SAFETY: live and unshared, by the caller's contract; a bad handle is ignored.
        if let Ok(s) = unsafe { raw::get_mut(status, Kind::Status) } {
            s.set(r.err());
        }
    }
    code
}

impl hostrt_status {
    fn set(&mut self, e: Option<Error>) {
        let c = |s: String| CString::new(s.replace('\0', " ")).unwrap_or_default();
        match e {
            None => *self = hostrt_status::ok(),
            Some(e) => {
                let (file, line, column) = e.location.unwrap_or_default();
                *self = hostrt_status { code: e.code, message: c(e.message), file: c(file), line, column };
            }
        }
    }

    fn ok() -> Self {
        hostrt_status {
            code: HOSTRT_OK,
            message: CString::default(),
            file: CString::default(),
            line: 0,
            column: 0,
        }
    }
}

/// A new status (`HOSTRT_OK`); free it with [`hostrt_status_destroy`]. A status is used by
/// one thread at a time.
#[unsafe(no_mangle)]
pub extern "C" fn hostrt_status_new() -> *mut hostrt_status {
    guard(std::ptr::null_mut(), || {
        raw::publish(Kind::Status, hostrt_status::ok()).unwrap_or(std::ptr::null_mut())
    })
}

/// Frees a status (NULL or an already destroyed one: nothing happens).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_status_destroy(status: *mut hostrt_status) {
    // SAFETY: checked by the table; a bad handle is left alone.
    guard((), || drop(unsafe { raw::take(status, Kind::Status) }));
}

/// The status's code (`HOSTRT_INVALID_ARGUMENT` for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_status_code(status: *const hostrt_status) -> hostrt_code {
    guard(HOSTRT_INTERNAL, || {
        // SAFETY: checked by the table.
        unsafe { raw::get(status, Kind::Status) }.map_or(HOSTRT_INVALID_ARGUMENT, |s| s.code)
    })
}

/// The status's message, "" on success; valid until the status is next used or destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_status_message(status: *const hostrt_status) -> *const c_char {
    guard(c"".as_ptr(), || {
        // SAFETY: checked by the table.
        unsafe { raw::get(status, Kind::Status) }.map_or(c"".as_ptr(), |s| s.message.as_ptr())
    })
}

/// The program location of the error (the failing kernel's file, line and column): false,
/// and nothing written, when the error has none. Outputs may be NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_status_location(
    status: *const hostrt_status,
    file: *mut *const c_char,
    line: *mut u32,
    column: *mut u32,
) -> bool {
    guard(false, || {
        // SAFETY: checked by the table.
        let Ok(s) = (unsafe { raw::get(status, Kind::Status) }) else { return false };
        if s.line == 0 {
            return false;
        }
        // SAFETY: each output is NULL or writable, by the contract.
        unsafe {
            if let Some(f) = file.as_mut() {
                *f = s.file.as_ptr();
            }
            if let Some(l) = line.as_mut() {
                *l = s.line;
            }
            if let Some(c) = column.as_mut() {
                *c = s.column;
            }
        }
        true
    })
}
