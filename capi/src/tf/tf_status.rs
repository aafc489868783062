//! `tf_status.h`: `TF_Status`, a code and a message (plus TensorFlow's payloads), which every
//! call that can fail fills in.

use std::ffi::{CString, c_char, c_int};

use hostrt_core::diagnostic::ErrorCode;

use crate::ffi::{guard, text};

/// TensorFlow's error code (a C enum: values of `error_codes.proto`). The error codes take
/// their numbers from the core's table ([`ErrorCode`]), which has TensorFlow's numbers.
pub type TF_Code = c_int;

/// Success.
pub const TF_OK: TF_Code = 0;
/// The operation was cancelled.
pub const TF_CANCELLED: TF_Code = ErrorCode::Cancelled as TF_Code;
/// An error of no other kind.
pub const TF_UNKNOWN: TF_Code = ErrorCode::Unknown as TF_Code;
/// The caller passed something invalid.
pub const TF_INVALID_ARGUMENT: TF_Code = ErrorCode::InvalidArgument as TF_Code;
/// A deadline passed.
pub const TF_DEADLINE_EXCEEDED: TF_Code = ErrorCode::DeadlineExceeded as TF_Code;
/// Something asked for does not exist.
pub const TF_NOT_FOUND: TF_Code = ErrorCode::NotFound as TF_Code;
/// Something to be made exists already.
pub const TF_ALREADY_EXISTS: TF_Code = ErrorCode::AlreadyExists as TF_Code;
/// Not allowed.
pub const TF_PERMISSION_DENIED: TF_Code = ErrorCode::PermissionDenied as TF_Code;
/// Memory (or another resource) ran out.
pub const TF_RESOURCE_EXHAUSTED: TF_Code = ErrorCode::ResourceExhausted as TF_Code;
/// The system is not in the state the call needs.
pub const TF_FAILED_PRECONDITION: TF_Code = ErrorCode::FailedPrecondition as TF_Code;
/// Aborted (a conflict).
pub const TF_ABORTED: TF_Code = ErrorCode::Aborted as TF_Code;
/// An index or size outside its range.
pub const TF_OUT_OF_RANGE: TF_Code = ErrorCode::OutOfRange as TF_Code;
/// Not supported by this runtime.
pub const TF_UNIMPLEMENTED: TF_Code = ErrorCode::Unimplemented as TF_Code;
/// A broken invariant (a panic inside a call is reported so).
pub const TF_INTERNAL: TF_Code = ErrorCode::Internal as TF_Code;
/// Unavailable for now.
pub const TF_UNAVAILABLE: TF_Code = ErrorCode::Unavailable as TF_Code;
/// Data lost or corrupt.
pub const TF_DATA_LOSS: TF_Code = ErrorCode::DataLoss as TF_Code;
/// No valid credentials.
pub const TF_UNAUTHENTICATED: TF_Code = ErrorCode::Unauthenticated as TF_Code;

/// A code and a message (opaque to C).
#[derive(Debug, Default)]
pub struct TF_Status {
    code: TF_Code,
    message: CString,
    payloads: Vec<(CString, CString)>,
}

/// `s` as text without interior NULs (C cannot hold them).
fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl TF_Status {
    /// A status holding `code` and `message` (an unknown code becomes `TF_UNKNOWN`).
    pub fn new(code: TF_Code, message: &str) -> Self {
        let mut s = Self::default();
        s.set(code, message);
        s
    }

    /// Records `code` and `message`, dropping what was held.
    pub fn set(&mut self, code: TF_Code, message: &str) {
        self.code = if code == TF_OK || ErrorCode::from_number(code).is_some() { code } else { TF_UNKNOWN };
        self.message = if self.code == TF_OK { CString::default() } else { c_string(message) };
        self.payloads.clear();
    }

    /// The code.
    pub fn code(&self) -> TF_Code {
        self.code
    }

    /// The message ("" when OK).
    pub fn message(&self) -> &str {
        self.message.to_str().unwrap_or("")
    }

    /// The payload under `key`, if any.
    pub fn payload(&self, key: &str) -> Option<&str> {
        self.payloads.iter().find(|(k, _)| k.to_bytes() == key.as_bytes()).and_then(|(_, v)| v.to_str().ok())
    }
}

/// Records `code` and `message` in `s` when it is not NULL.
///
/// # Safety
/// `s` is NULL or a live status from [`TF_NewStatus`].
pub(crate) unsafe fn report(s: *mut TF_Status, code: TF_Code, message: &str) {
    // SAFETY: NULL or a live status, by the caller's contract.
    if let Some(s) = unsafe { s.as_mut() } {
        s.set(code, message);
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_NewStatus() -> *mut TF_Status {
    guard(std::ptr::null_mut(), || Box::into_raw(Box::default()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteStatus(s: *mut TF_Status) {
    if !s.is_null() {
        // SAFETY: a status from `TF_NewStatus` (a Box), deleted once by the contract.
        guard((), || drop(unsafe { Box::from_raw(s) }));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_SetStatus(s: *mut TF_Status, code: TF_Code, msg: *const c_char) {
    // SAFETY: `msg` is NULL or a C string; `s` NULL or live (the contract).
    guard((), || unsafe { report(s, code, &text(msg).unwrap_or_default()) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_SetPayload(s: *mut TF_Status, key: *const c_char, value: *const c_char) {
    guard((), || {
        // SAFETY: NULL or live / C strings, by the contract.
        let (Some(s), Some(key), Some(value)) =
            (unsafe { s.as_mut() }, unsafe { text(key) }, unsafe { text(value) })
        else {
            return;
        };
        if s.code == TF_OK {
            return;
        }
        let (key, value) = (c_string(&key), c_string(&value));
        match s.payloads.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => s.payloads.push((key, value)),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_SetStatusFromIOError(
    s: *mut TF_Status,
    error_code: c_int,
    context: *const c_char,
) {
    use std::io::ErrorKind as K;
    guard((), || {
        let e = std::io::Error::from_raw_os_error(error_code);
        let code = match e.kind() {
            K::NotFound => TF_NOT_FOUND,
            K::PermissionDenied | K::ReadOnlyFilesystem => TF_PERMISSION_DENIED,
            K::AlreadyExists => TF_ALREADY_EXISTS,
            K::InvalidInput | K::InvalidFilename | K::NotADirectory | K::IsADirectory => TF_INVALID_ARGUMENT,
            K::TimedOut => TF_DEADLINE_EXCEEDED,
            K::WouldBlock | K::Interrupted | K::ConnectionRefused | K::ConnectionReset => TF_UNAVAILABLE,
            K::OutOfMemory | K::StorageFull | K::QuotaExceeded | K::FileTooLarge => TF_RESOURCE_EXHAUSTED,
            K::Unsupported => TF_UNIMPLEMENTED,
            K::ResourceBusy => TF_UNAVAILABLE,
            _ => TF_UNKNOWN,
        };
        // SAFETY: a C string or NULL, by the contract.
        let context = unsafe { text(context) }.unwrap_or_default();
        // SAFETY: NULL or a live status, by the contract.
        unsafe { report(s, code, &format!("{context}; {e}")) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetCode(s: *const TF_Status) -> TF_Code {
    // SAFETY: NULL or a live status, by the contract.
    unsafe { s.as_ref() }.map_or(TF_OK, |s| s.code)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_Message(s: *const TF_Status) -> *const c_char {
    // SAFETY: NULL or a live status, by the contract; the message lives in it.
    unsafe { s.as_ref() }.map_or(c"".as_ptr(), |s| s.message.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(s: *const TF_Status) -> String {
        // SAFETY: a live status.
        unsafe { std::ffi::CStr::from_ptr(TF_Message(s)) }.to_string_lossy().into_owned()
    }

    #[test]
    fn statuses_record_codes_messages_and_payloads() {
        let s = TF_NewStatus();
        // SAFETY: `s` is live until deleted at the end; strings are C literals.
        unsafe {
            assert_eq!((TF_GetCode(s), message(s)), (TF_OK, String::new()));
            TF_SetPayload(s, c"k".as_ptr(), c"ignored while OK".as_ptr());
            assert_eq!((*s).payload("k"), None);
            TF_SetStatus(s, TF_OUT_OF_RANGE, c"index 3 of 2".as_ptr());
            assert_eq!((TF_GetCode(s), message(s)), (TF_OUT_OF_RANGE, "index 3 of 2".to_owned()));
            TF_SetPayload(s, c"k".as_ptr(), c"v1".as_ptr());
            TF_SetPayload(s, c"k".as_ptr(), c"v2".as_ptr());
            assert_eq!((*s).payload("k"), Some("v2"));
            TF_SetStatus(s, 99, std::ptr::null());
            assert_eq!((TF_GetCode(s), message(s), (*s).payload("k")), (TF_UNKNOWN, String::new(), None));
            TF_SetStatus(s, TF_OK, c"dropped".as_ptr());
            assert_eq!(message(s), "", "an OK status has no message");
            TF_SetStatusFromIOError(s, 2, c"opening model.bef".as_ptr());
            assert_eq!(TF_GetCode(s), TF_NOT_FOUND);
            assert!(message(s).starts_with("opening model.bef; "), "{}", message(s));
            TF_DeleteStatus(s);
            // NULL is harmless everywhere.
            TF_DeleteStatus(std::ptr::null_mut());
            TF_SetStatus(std::ptr::null_mut(), TF_INTERNAL, c"x".as_ptr());
            assert_eq!((TF_GetCode(std::ptr::null()), message(std::ptr::null())), (TF_OK, String::new()));
        }
    }
}
