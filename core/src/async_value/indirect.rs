//! `IndirectAsyncValue`: a placeholder whose type is unknown when it is created, later
//! forwarded to the value that carries the result (TFRT's `IndirectAsyncValue`).

use core::alloc::Layout;
use core::fmt;
use core::ops::Deref;
use core::ptr::NonNull;

use super::{
    AsyncValue, IndirectBlock, KIND_INDIRECT, Payload, RcAsyncValue, UNCONSTRUCTED, payload_ptr, resolved,
    type_table,
};
use crate::allocator::{AllocError, Allocator};
use crate::diagnostic::{Diagnostic, ErrorCode};

/// An owning handle to an indirect value. Dereferences to [`RcAsyncValue`].
pub struct IndirectAsyncValue {
    rc: RcAsyncValue,
}

/// A pointer to a value that is alive whenever the closure holding it runs.
struct LivePtr(NonNull<AsyncValue>);
// SAFETY: only used to take a new reference while the pointee is being made available by
// a thread that holds a reference to it.
unsafe impl Send for LivePtr {}

impl LivePtr {
    fn get(&self) -> NonNull<AsyncValue> {
        self.0
    }
}

impl IndirectAsyncValue {
    /// A new unresolved indirect value.
    pub fn new(alloc: Allocator) -> Result<Self, AllocError> {
        let rc = RcAsyncValue::alloc_block(
            alloc,
            Layout::new::<IndirectBlock>(),
            KIND_INDIRECT,
            type_table::NO_TYPE,
            UNCONSTRUCTED,
        )?;
        Ok(IndirectAsyncValue { rc })
    }

    pub(crate) fn from_rc_unchecked(rc: RcAsyncValue) -> Self {
        debug_assert!(rc.is_indirect());
        IndirectAsyncValue { rc }
    }

    /// Forward to `target`: this value becomes available with `target`'s state once `target`
    /// is available, and keeps one reference to it until destroyed. Chains of indirect
    /// values collapse to the final concrete value. Forwarding twice is a logic error
    /// (caught by a debug assertion; release builds ignore the second call).
    pub fn forward_to(&self, target: RcAsyncValue) {
        let ok = self.try_forward(target);
        debug_assert!(ok, "indirect async value forwarded twice");
    }

    /// [`forward_to`](Self::forward_to), returning `false` if this value was already
    /// forwarded or completed.
    pub(crate) fn try_forward(&self, target: RcAsyncValue) -> bool {
        let h = self.rc.header();
        if target.ptr_eq(&self.rc) {
            return self
                .rc
                .set_error(Diagnostic::new(ErrorCode::Internal, "indirect async value forwarded to itself"));
        }
        // Collapse: an available indirect target always points at a non-indirect value.
        let target = if target.is_indirect() && target.is_available() {
            let r = resolved(target.ptr);
            if r == target.ptr {
                target // targetless error (out of memory): keep as is
            } else {
                // SAFETY: `r` is kept alive by `target`, which we still hold.
                unsafe { RcAsyncValue::clone_from_ptr(r) }
            }
        } else {
            target
        };
        if target.is_available() {
            if !h.claim() {
                return false;
            }
            let state = target.header().state_bits();
            let raw = target.into_raw();
            // SAFETY: claimed: exclusive access to our payload, which becomes the owned
            // forwarding reference.
            unsafe { (*payload_ptr(self.rc.ptr).cast::<Payload<()>>()).forward = raw.as_ptr() };
            h.notify(state);
            return true;
        }
        if h.state_bits() != UNCONSTRUCTED {
            return false;
        }
        let this = self.rc.clone();
        let live = LivePtr(target.ptr);
        let waiter = move || {
            // SAFETY: waiters run while the target is being made available by a thread that
            // holds a reference to it (or inline by `and_then`, whose caller holds one).
            let t = unsafe { RcAsyncValue::clone_from_ptr(live.get()) };
            IndirectAsyncValue { rc: this }.try_forward(t);
        };
        if target.and_then(waiter).is_err() {
            return self.rc.set_error(Diagnostic::new(
                ErrorCode::ResourceExhausted,
                "Out of memory registering a forwarding waiter",
            ));
        }
        true
    }

    /// The type-erased handle.
    pub fn into_rc(self) -> RcAsyncValue {
        self.rc
    }
}

impl Deref for IndirectAsyncValue {
    type Target = RcAsyncValue;
    fn deref(&self) -> &RcAsyncValue {
        &self.rc
    }
}

impl fmt::Debug for IndirectAsyncValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.rc.fmt(f)
    }
}
