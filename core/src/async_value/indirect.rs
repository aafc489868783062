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
use crate::callback::{self, CallbackHeader};
use crate::diagnostic::{Diagnostic, ErrorCode};

/// An owning handle to an indirect value. Dereferences to [`RcAsyncValue`].
pub struct IndirectAsyncValue {
    rc: RcAsyncValue,
}

/// A forwarder waiting for its target: a waiter node of kind `KIND_FORWARD` on the target.
/// `notify` resolves these itself ([`resolve_forward`]) to avoid recursion; run as an
/// ordinary callback (when `push_waiter` finds the target already available) it forwards.
struct Forward {
    this: RcAsyncValue,
    target: LivePtr,
    /// While `notify` runs the forwarder's own waiters: the last of them (see
    /// [`segment_end`]).
    end: *mut CallbackHeader,
}

// SAFETY: `end` is only touched by the thread running `notify`, which owns the node then;
// the value handles are Send.
unsafe impl Send for Forward {}

/// `invoke` of a forward node: forward (run) or just drop the request.
unsafe fn run_forward(node: NonNull<CallbackHeader>, run: bool) {
    // SAFETY: forwarded from `invoke`'s contract: a `Forward` node we own.
    let request: Forward = unsafe { callback::take_data(node) };
    if run {
        // SAFETY: the target is being (or was) made available by a thread holding a
        // reference to it, or by `push_waiter`, whose caller holds one.
        let t = unsafe { RcAsyncValue::clone_from_ptr(request.target.get()) };
        IndirectAsyncValue { rc: request.this }.try_forward(t);
    }
}

/// Resolve the forwarder of forward node `node` (its target has just been published) and
/// return the forwarder's detached waiter stack for the caller to run, instead of running
/// it (null when there is nothing to run or the forwarder was completed otherwise). The
/// node, which keeps the forwarder alive, stays the caller's: it must outlive the
/// forwarder's waiters (forward nodes among them point at the forwarder without owning it)
/// and is then dropped with `callback::discard_callback`.
///
/// # Safety
/// `node` is a `KIND_FORWARD` node owned by the caller, whose target is available and kept
/// alive by the caller.
pub(super) unsafe fn resolve_forward(node: NonNull<CallbackHeader>) -> *mut CallbackHeader {
    // SAFETY: caller's contract: a live `Forward` node.
    let request: &Forward = unsafe { &*callback::data_ptr::<Forward>(node) };
    // SAFETY: the caller holds the target alive while running its waiters.
    let target = collapse(unsafe { RcAsyncValue::clone_from_ptr(request.target.get()) });
    let h = request.this.header();
    if !h.claim() {
        return core::ptr::null_mut();
    }
    let state = target.header().state_bits();
    let raw = target.into_raw();
    // SAFETY: claimed: exclusive access to the forwarder's payload, which becomes its owned
    // forwarding reference.
    unsafe { (*payload_ptr(request.this.ptr).cast::<Payload<()>>()).forward = raw.as_ptr() };
    h.publish(state)
}

/// The last waiter of the forwarder held by forward node `node`, as recorded by
/// [`set_segment_end`].
///
/// # Safety
/// `node` is a live `KIND_FORWARD` node owned by the caller.
pub(super) unsafe fn segment_end(node: NonNull<CallbackHeader>) -> *mut CallbackHeader {
    // SAFETY: caller's contract.
    unsafe { (*callback::data_ptr::<Forward>(node)).end }
}

/// Record the last waiter of the forwarder held by forward node `node`.
///
/// # Safety
/// As for [`segment_end`].
pub(super) unsafe fn set_segment_end(node: NonNull<CallbackHeader>, end: *mut CallbackHeader) {
    // SAFETY: caller's contract: we own the node exclusively.
    unsafe { (*callback::data_ptr::<Forward>(node)).end = end }
}

/// An available indirect target stands for the non-indirect value it resolved to.
fn collapse(target: RcAsyncValue) -> RcAsyncValue {
    if target.is_indirect() && target.is_available() {
        let r = resolved(target.ptr);
        if r == target.ptr {
            target // targetless error (out of memory): keep as is
        } else {
            // SAFETY: `r` is kept alive by `target`, which we still hold.
            unsafe { RcAsyncValue::clone_from_ptr(r) }
        }
    } else {
        target
    }
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
        if target.is_available() {
            // Collapse: an available indirect target always points at a non-indirect value.
            // (Checked after availability: collapsing first would race with the target
            // becoming available in between and forward to the indirect itself.)
            let target = collapse(target);
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
        let request =
            Forward { this: self.rc.clone(), target: LivePtr(target.ptr), end: core::ptr::null_mut() };
        let alloc = Allocator::from_id(target.header().alloc);
        match callback::new_data_node(alloc, callback::KIND_FORWARD, request, run_forward) {
            Ok(node) => {
                target.push_waiter(node);
                true
            }
            Err(_) => self.rc.set_error(Diagnostic::new(
                ErrorCode::ResourceExhausted,
                "Out of memory registering a forwarding waiter",
            )),
        }
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
