//! What every exported function needs: panics kept on this side of the boundary, and C
//! strings read without trusting them.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`, or returns `default` if it panics (a panic must not unwind into C).
pub(crate) fn guard<R>(default: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(default)
}

/// The bytes of a NUL-terminated string as text (`None` for NULL; invalid UTF-8 is
/// replaced, since names and messages are for people).
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn text<'a>(p: *const c_char) -> Option<std::borrow::Cow<'a, str>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy())
}

/// `len` values at `p` as a slice (empty for `len <= 0`); `None` for NULL with `len > 0`.
///
/// # Safety
/// With `len > 0`, `p` is NULL or points to `len` initialized values that outlive `'a`.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: i64) -> Option<&'a [T]> {
    let Ok(len) = usize::try_from(len) else { return Some(&[]) };
    if len == 0 {
        return Some(&[]);
    }
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, `len` values, by the caller's contract.
    Some(unsafe { std::slice::from_raw_parts(p, len) })
}
