//! `AsyncValueRef<T>`: a typed owning handle to an async value whose payload is a `T`.

use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr;

use super::{
    CONCRETE, CONSTRUCTED, KIND_CONCRETE, RcAsyncValue, UNCONSTRUCTED, publish_error, typed_payload_ptr,
};
use crate::allocator::{AllocError, Allocator};
use crate::diagnostic::Diagnostic;

/// A typed reference to an async value holding (or about to hold) a `T`.
///
/// Dereferences to [`RcAsyncValue`] for the type-erased operations. Waiters added with
/// `and_then` run when the value completes, on the completing thread (last added first).
///
/// ```
/// use hostrt_core::{Allocator, AsyncValueRef, FixedArena};
/// use std::sync::atomic::{AtomicI32, Ordering};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
///
/// static SEEN: AtomicI32 = AtomicI32::new(0);
/// let later = AsyncValueRef::<i32>::unconstructed(alloc).unwrap();
/// let v = later.clone();
/// later.and_then(move || SEEN.store(*v.get().unwrap(), Ordering::SeqCst)).ok().unwrap();
/// assert!(!later.is_available());
/// later.emplace(42); // runs the waiter
/// assert_eq!(SEEN.load(Ordering::SeqCst), 42);
/// ```
pub struct AsyncValueRef<T> {
    rc: RcAsyncValue,
    _payload: PhantomData<T>,
}

impl<T: Send + Sync + 'static> AsyncValueRef<T> {
    /// An unavailable value to be completed later with [`emplace`](Self::emplace) or
    /// [`set_error`](RcAsyncValue::set_error).
    pub fn unconstructed(alloc: Allocator) -> Result<Self, AllocError> {
        RcAsyncValue::alloc_concrete::<T>(alloc, UNCONSTRUCTED).map(Self::from_rc_unchecked)
    }

    /// An available value holding `value` (dropped if allocation fails).
    pub fn available(alloc: Allocator, value: T) -> Result<Self, AllocError> {
        let rc = RcAsyncValue::alloc_concrete::<T>(alloc, CONCRETE)?;
        // SAFETY: fresh, unshared block for `Concrete<T>`; the state is already concrete but
        // nobody can observe it before we return the handle.
        unsafe {
            ptr::write(&mut (*typed_payload_ptr::<T>(rc.ptr)).value, core::mem::ManuallyDrop::new(value))
        };
        Ok(Self::from_rc_unchecked(rc))
    }

    /// An available error value typed as `T`.
    pub fn error(alloc: Allocator, diag: Diagnostic) -> Result<Self, AllocError> {
        let rc = RcAsyncValue::alloc_concrete::<T>(alloc, CONSTRUCTED)?;
        publish_error(rc.ptr, diag);
        Ok(Self::from_rc_unchecked(rc))
    }

    /// Store the payload and make the value available, running its waiters.
    ///
    /// Returns the value back if this value is already available (or being completed), or
    /// is an unresolved indirect value, which cannot hold a payload itself.
    pub fn try_emplace(&self, value: T) -> Result<(), T> {
        let h = self.rc.header();
        if h.kind != KIND_CONCRETE || !h.claim() {
            return Err(value);
        }
        // SAFETY: we hold the claim: exclusive access to the payload of a `Concrete<T>`
        // block (the type was checked when this typed handle was made).
        unsafe {
            ptr::write(&mut (*typed_payload_ptr::<T>(self.rc.ptr)).value, core::mem::ManuallyDrop::new(value))
        };
        h.notify(CONCRETE);
        Ok(())
    }

    /// Like [`try_emplace`](Self::try_emplace); a second completion is a logic error, caught
    /// by a debug assertion (release builds drop the extra value).
    pub fn emplace(&self, value: T) {
        let r = self.try_emplace(value);
        debug_assert!(r.is_ok(), "emplace on an async value that is already available");
    }

    /// The payload, when available and concrete.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        self.rc.get::<T>()
    }

    pub(crate) fn from_rc_unchecked(rc: RcAsyncValue) -> Self {
        AsyncValueRef { rc, _payload: PhantomData }
    }

    /// The type-erased handle.
    pub fn into_rc(self) -> RcAsyncValue {
        self.rc
    }
}

impl<T> Deref for AsyncValueRef<T> {
    type Target = RcAsyncValue;
    fn deref(&self) -> &RcAsyncValue {
        &self.rc
    }
}

impl<T> Clone for AsyncValueRef<T> {
    fn clone(&self) -> Self {
        AsyncValueRef { rc: self.rc.clone(), _payload: PhantomData }
    }
}

impl<T> fmt::Debug for AsyncValueRef<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rc.fmt(f)
    }
}
