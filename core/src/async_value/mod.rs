//! AsyncValue: the refcounted, lock-free future/promise that carries every value in hostrt.
//!
//! Layout (64-bit): a 16-byte header — `refcount: u32`, `kind: u8`, `alloc: u8` (allocator
//! id), `type_id: u16`, and one word holding the 2-bit state plus the head of the waiter
//! stack — followed by the payload stored in place. State goes
//! unconstructed → constructed (payload being written) → concrete | error, never back.
//! Waiters registered with [`RcAsyncValue::and_then`] run on the thread that makes the value
//! available, most recently registered first (LIFO), as in TFRT.
//!
//! Handles: [`RcAsyncValue`] (type-erased, owns one reference), [`AsyncValueRef<T>`] (typed)
//! and [`IndirectAsyncValue`] (a placeholder that is later forwarded to another value).

mod indirect;
mod spare;
mod type_table;
mod typed;

#[cfg(test)]
mod tests;

pub use indirect::IndirectAsyncValue;
pub use spare::Spare;
pub use type_table::{MAX_TYPES, TypeTableFull};
pub(crate) use type_table::{TypeInfo, info_of};
pub use typed::AsyncValueRef;

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::fmt;
use core::mem::ManuallyDrop;
use core::ptr::{self, NonNull};

use crate::allocator::{AllocError, Allocator, OutOfMemory};
use crate::callback::{self, CallbackHeader};
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::sync::{AtomicPtr, AtomicU32, Ordering, fence};

const STATE_MASK: usize = 0b11;
const UNCONSTRUCTED: usize = 0;
const CONSTRUCTED: usize = 1;
const CONCRETE: usize = 2;
const ERROR: usize = 3;

const KIND_CONCRETE: u8 = 0;
const KIND_INDIRECT: u8 = 1;

/// The state bits of a waiter word.
#[inline]
fn tag(w: *mut CallbackHeader) -> usize {
    w.addr() & STATE_MASK
}

/// The waiter stack head of a waiter word (nodes are pointer-aligned, so the tag bits are
/// free; the pointer keeps its provenance).
#[inline]
fn untagged(w: *mut CallbackHeader) -> *mut CallbackHeader {
    w.map_addr(|a| a & !STATE_MASK)
}

/// A waiter word from a stack head and state bits.
#[inline]
fn tagged(head: *mut CallbackHeader, state: usize) -> *mut CallbackHeader {
    debug_assert_eq!(head.addr() & STATE_MASK, 0);
    head.map_addr(|a| a | state)
}

/// The state of an async value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No payload yet.
    Unconstructed,
    /// A producer is writing the payload; not yet visible to readers.
    Constructed,
    /// Available with a payload.
    Concrete,
    /// Available with an error.
    Error,
}

impl State {
    fn from_bits(bits: usize) -> State {
        match bits & STATE_MASK {
            UNCONSTRUCTED => State::Unconstructed,
            CONSTRUCTED => State::Constructed,
            CONCRETE => State::Concrete,
            _ => State::Error,
        }
    }

    /// Concrete or error.
    pub fn is_available(self) -> bool {
        matches!(self, State::Concrete | State::Error)
    }
}

/// The common header of every async value (16 bytes on 64-bit targets, 12 on 32-bit).
#[repr(C)]
pub struct AsyncValue {
    refcount: AtomicU32,
    kind: u8,
    alloc: u8,
    type_id: u16,
    /// Bits 0-1: state. Bits 2..: head of the waiter stack (null once available).
    waiters_and_state: AtomicPtr<CallbackHeader>,
}

impl fmt::Debug for AsyncValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsyncValue")
            .field("refcount", &self.refcount.load(Ordering::Relaxed))
            .field("state", &State::from_bits(self.state_bits()))
            .finish_non_exhaustive()
    }
}

/// Size of the async value header on this target.
pub const HEADER_SIZE: usize = core::mem::size_of::<AsyncValue>();

/// A payload slot: the value, or (after an error) a pointer to the diagnostic.
#[repr(C)]
union Payload<T> {
    value: ManuallyDrop<T>,
    error: *const Diagnostic,
    forward: *const AsyncValue,
}

/// Block layout of a concrete (typed) value.
#[repr(C)]
pub(crate) struct Concrete<T> {
    header: AsyncValue,
    payload: UnsafeCell<Payload<T>>,
}

/// Block layout of an indirect value: the payload is the forwarding target.
type IndirectBlock = Concrete<()>;

/// The layout of a block without payload: an indirect value, or an error value (whose
/// diagnostic is a block of its own).
#[cfg(feature = "proved-types")]
pub(crate) const BARE_BLOCK: Layout = Layout::new::<IndirectBlock>();

static OOM_DIAGNOSTIC: Diagnostic =
    Diagnostic::new(ErrorCode::ResourceExhausted, "Out of memory while recording an error");

/// The diagnostic used when even recording an error ran out of memory.
fn oom_diagnostic() -> &'static Diagnostic {
    &OOM_DIAGNOSTIC
}

/// An error value with [`OOM_DIAGNOSTIC`] that lives in static memory. Its reference count
/// starts at 2^30, so handles never bring it to zero and it is never destroyed; its
/// allocator id names no slot, so nothing is ever allocated or freed for it.
#[cfg(not(loom))]
struct StaticError(Concrete<()>);

// SAFETY: the block is immutable apart from its atomic reference count (the state is
// already ERROR, so no waiter is ever pushed and the payload is never written).
#[cfg(not(loom))]
unsafe impl Sync for StaticError {}

/// The out-of-memory block: an available error whose count starts at 2^30 and whose
/// allocator id names no slot. A macro because loom's atomics cannot be built in a `const`.
macro_rules! oom_block {
    () => {
        Concrete::<()> {
            header: AsyncValue {
                refcount: AtomicU32::new(1 << 30),
                kind: KIND_CONCRETE,
                alloc: u8::MAX,
                type_id: type_table::NO_TYPE,
                waiters_and_state: AtomicPtr::new(ptr::without_provenance_mut(ERROR)),
            },
            payload: UnsafeCell::new(Payload { error: &raw const OOM_DIAGNOSTIC }),
        }
    };
}

#[cfg(not(loom))]
static OOM_VALUE: StaticError = StaticError(oom_block!());

#[cfg(not(loom))]
fn oom_value() -> NonNull<AsyncValue> {
    // From the whole block, so the pointer may also reach the payload.
    NonNull::from(&OOM_VALUE.0).cast()
}

/// Under loom the atomics are not `const`: one leaked block per call (tests only).
#[cfg(loom)]
fn oom_value() -> NonNull<AsyncValue> {
    extern crate std;
    let block = std::boxed::Box::leak(std::boxed::Box::new(oom_block!()));
    NonNull::from(block).cast()
}

impl AsyncValue {
    fn new(kind: u8, alloc: Allocator, type_id: u16, state: usize) -> Self {
        AsyncValue {
            refcount: AtomicU32::new(1),
            kind,
            alloc: alloc.id(),
            type_id,
            waiters_and_state: AtomicPtr::new(tagged(ptr::null_mut(), state)),
        }
    }

    #[inline]
    fn state_bits(&self) -> usize {
        tag(self.waiters_and_state.load(Ordering::Acquire))
    }

    /// Move the state from unconstructed to constructed, claiming the right to publish.
    fn claim(&self) -> bool {
        let mut w = self.waiters_and_state.load(Ordering::Relaxed);
        loop {
            if tag(w) != UNCONSTRUCTED {
                return false;
            }
            match self.waiters_and_state.compare_exchange_weak(
                w,
                w.map_addr(|a| a | CONSTRUCTED),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => w = now,
            }
        }
    }

    /// Publish `state` (concrete or error) and hand back the detached waiter stack (most
    /// recent first), which the caller now owns and must run.
    fn publish(&self, state: usize) -> *mut CallbackHeader {
        let old = self.waiters_and_state.swap(tagged(ptr::null_mut(), state), Ordering::AcqRel);
        debug_assert_eq!(tag(old), CONSTRUCTED);
        untagged(old)
    }

    /// Publish `state` (concrete or error) and run the waiters, most recent first.
    ///
    /// An indirect value waiting on this one is resolved here without recursion: its own
    /// waiters are spliced in front of the remaining ones, so they run in the order a
    /// nested call would run them, and a chain of forwarders of any length (the results of
    /// a deep recursion) resolves in constant stack. The node of each such forwarder keeps
    /// it alive until its last waiter has run (`held`, innermost first).
    fn notify(&self, state: usize) {
        let mut node = self.publish(state);
        let mut held: *mut CallbackHeader = ptr::null_mut();
        while let Some(n) = NonNull::new(node) {
            // SAFETY: the detached stacks and the held nodes are ours; each node is read
            // before it is freed, and a freed node's address is only compared.
            unsafe {
                node = (*n.as_ptr()).next;
                let forward = (*n.as_ptr()).kind == callback::KIND_FORWARD;
                let first = if forward {
                    indirect::resolve_forward(n)
                } else {
                    callback::run_callback(n);
                    ptr::null_mut()
                };
                // Forwarders whose last waiter this was can go.
                while let Some(h) = NonNull::new(held)
                    && indirect::segment_end(h) == n.as_ptr()
                {
                    held = (*h.as_ptr()).next;
                    callback::discard_callback(h);
                }
                if !forward {
                    continue;
                }
                let Some(first) = NonNull::new(first) else {
                    callback::discard_callback(n);
                    continue;
                };
                let mut last = first;
                while let Some(next) = NonNull::new((*last.as_ptr()).next) {
                    last = next;
                }
                (*last.as_ptr()).next = node;
                node = first.as_ptr();
                indirect::set_segment_end(n, last.as_ptr());
                (*n.as_ptr()).next = held;
                held = n.as_ptr();
            }
        }
        // Every segment ends inside the list, so nothing is held any more.
        debug_assert!(held.is_null());
    }
}

/// Address of the payload of the block whose header is at `this`.
///
/// Always derived from the block pointer, never from a `&AsyncValue`: a shared reference to
/// the header grants no access to the payload bytes after it.
#[inline]
fn payload_ptr(this: NonNull<AsyncValue>) -> *mut u8 {
    // SAFETY: `this` points at the header of a live block; `type_id` is immutable.
    let id = unsafe { (*this.as_ptr()).type_id };
    let offset = type_table::info(id).payload_offset;
    // SAFETY: the block is at least `offset` bytes plus the payload long.
    unsafe { this.as_ptr().cast::<u8>().add(offset) }
}

/// [`payload_ptr`] of a block known to be laid out for a `T` (its type id is `T`'s): the
/// offset is a constant, no type table lookup.
#[inline]
fn typed_payload_ptr<T>(this: NonNull<AsyncValue>) -> *mut Payload<T> {
    // SAFETY: a `Concrete<T>` block holds its payload at this offset.
    unsafe { this.as_ptr().cast::<u8>().add(core::mem::offset_of!(Concrete<T>, payload)).cast() }
}

/// Record `diag` as the error payload of the claimed value at `this` and publish it.
fn publish_error(this: NonNull<AsyncValue>, diag: Diagnostic) {
    // SAFETY: `this` is a live block (the caller holds a reference).
    let h = unsafe { this.as_ref() };
    debug_assert_eq!(h.kind, KIND_CONCRETE);
    let alloc = Allocator::from_id(h.alloc);
    let boxed: *const Diagnostic = match alloc.allocate(Layout::new::<Diagnostic>()) {
        Ok(mem) => {
            let p = mem.cast::<Diagnostic>();
            // SAFETY: fresh block sized and aligned for a Diagnostic.
            unsafe { p.as_ptr().write(diag) };
            p.as_ptr()
        }
        Err(_) => oom_diagnostic(),
    };
    // SAFETY: the caller holds the claim, so nobody else reads or writes the payload.
    unsafe { (*payload_ptr(this).cast::<Payload<()>>()).error = boxed };
    h.notify(ERROR);
}

/// The resolved value: an available indirect value's target, else `this`.
#[inline]
fn resolved(this: NonNull<AsyncValue>) -> NonNull<AsyncValue> {
    // SAFETY: `this` is a live block.
    let h = unsafe { this.as_ref() };
    if h.kind == KIND_INDIRECT && h.state_bits() >= CONCRETE {
        // SAFETY: an available indirect value's payload is its forwarding target (or null
        // for an error with no target), kept alive by the reference it owns.
        let target = unsafe { (*payload_ptr(this).cast::<Payload<()>>()).forward };
        if let Some(t) = NonNull::new(target.cast_mut()) {
            return t;
        }
    }
    this
}

/// The error of the (resolved) value at `this`, if it is available with one.
///
/// # Safety
/// The value stays alive for `'a`.
unsafe fn error_of<'a>(this: NonNull<AsyncValue>) -> Option<&'a Diagnostic> {
    let v = resolved(this);
    // SAFETY: live (caller); a resolved target is kept alive by its forwarder.
    let h = unsafe { v.as_ref() };
    if h.state_bits() != ERROR {
        return None;
    }
    if h.kind == KIND_INDIRECT {
        return Some(oom_diagnostic());
    }
    // SAFETY: an ERROR concrete value's payload holds a valid diagnostic pointer, owned by
    // the value (or the static OOM diagnostic), alive as long as the value.
    Some(unsafe { &*(*payload_ptr(v).cast::<Payload<()>>()).error })
}

/// Free a diagnostic owned by an error value (the static OOM diagnostic is not freed).
fn free_diagnostic(alloc: Allocator, boxed: *const Diagnostic) {
    if !ptr::eq(boxed, oom_diagnostic()) {
        // SAFETY: `boxed` was allocated above from `alloc` with this layout and never shared.
        unsafe {
            ptr::drop_in_place(boxed.cast_mut());
            alloc.deallocate(NonNull::new_unchecked(boxed.cast_mut()).cast(), Layout::new::<Diagnostic>());
        }
    }
}

/// An owning, type-erased reference to an async value.
///
/// Cloning adds a reference; dropping the last reference destroys the payload and returns
/// the block to its allocator.
///
/// `repr(transparent)`: `Option<RcAsyncValue>` is one pointer, null for `None`, which lets
/// the executor's result slots become the results in place.
#[repr(transparent)]
pub struct RcAsyncValue {
    ptr: NonNull<AsyncValue>,
}

// SAFETY: the header is manipulated only through atomics; payloads are `Send + Sync`
// (enforced where values are created) and published with release/acquire ordering.
unsafe impl Send for RcAsyncValue {}
// SAFETY: as above; shared access only reads published payloads.
unsafe impl Sync for RcAsyncValue {}

impl RcAsyncValue {
    /// Allocate a block of `layout` with a fresh header; the payload is uninitialized.
    fn alloc_block(
        alloc: Allocator,
        layout: Layout,
        kind: u8,
        type_id: u16,
        state: usize,
    ) -> Result<RcAsyncValue, AllocError> {
        let block = alloc.allocate(layout)?.cast::<AsyncValue>();
        // SAFETY: fresh block, at least header-sized and aligned (every block starts with a
        // header); the payload is left uninitialized.
        unsafe { block.as_ptr().write(AsyncValue::new(kind, alloc, type_id, state)) };
        Ok(RcAsyncValue { ptr: block })
    }

    /// Allocate a concrete block for `T` in `state`.
    #[inline]
    fn alloc_concrete<T: 'static>(alloc: Allocator, state: usize) -> Result<RcAsyncValue, AllocError> {
        Self::alloc_typed(alloc, type_table::info_of::<T>(), state)
    }

    /// [`alloc_concrete`](Self::alloc_concrete) for the type `info` describes (one copy for
    /// every type).
    fn alloc_typed(
        alloc: Allocator,
        info: &'static type_table::TypeInfo,
        state: usize,
    ) -> Result<RcAsyncValue, AllocError> {
        let type_id = type_table::id_of(info).map_err(|_| AllocError::new(info.layout))?;
        Self::alloc_block(alloc, info.layout, KIND_CONCRETE, type_id, state)
    }

    /// A new available error value with no payload type.
    pub fn error(alloc: Allocator, diag: Diagnostic) -> Result<RcAsyncValue, AllocError> {
        let rc = Self::alloc_block(
            alloc,
            Layout::new::<Concrete<()>>(),
            KIND_CONCRETE,
            type_table::NO_TYPE,
            CONSTRUCTED,
        )?;
        publish_error(rc.ptr, diag);
        Ok(rc)
    }

    /// An error value carrying `diag`, or, when not even that can be allocated, the shared
    /// static "Out of memory while recording an error" value. Never fails, so every result
    /// slot can always be completed and no waiter is left hanging.
    pub fn error_or_oom(alloc: Allocator, diag: Diagnostic) -> RcAsyncValue {
        Self::error(alloc, diag).unwrap_or_else(|_| Self::out_of_memory())
    }

    /// A handle to the static, never freed "Out of memory while recording an error" value.
    pub fn out_of_memory() -> RcAsyncValue {
        let ptr = oom_value();
        // SAFETY: a static block that is never destroyed: its count starts far above any
        // number of handles, and each handle adds one before it can drop one.
        unsafe { RcAsyncValue::clone_from_ptr(ptr) }
    }

    #[inline]
    fn header(&self) -> &AsyncValue {
        // SAFETY: we own a reference, so the block is alive.
        unsafe { self.ptr.as_ref() }
    }

    /// Current state (of the forwarding target, for a resolved indirect value).
    #[inline]
    pub fn state(&self) -> State {
        State::from_bits(self.header().state_bits())
    }

    /// Concrete or error.
    #[inline]
    pub fn is_available(&self) -> bool {
        self.header().state_bits() >= CONCRETE
    }

    /// Available with a payload.
    #[inline]
    pub fn is_concrete(&self) -> bool {
        self.header().state_bits() == CONCRETE
    }

    /// Available with an error.
    #[inline]
    pub fn is_error(&self) -> bool {
        self.header().state_bits() == ERROR
    }

    /// Whether this is an indirect (forwarding) value.
    pub fn is_indirect(&self) -> bool {
        self.header().kind == KIND_INDIRECT
    }

    /// The error, if the value is available with one.
    pub fn get_error(&self) -> Option<&Diagnostic> {
        // SAFETY: we hold a reference for the borrow's duration.
        unsafe { error_of(self.ptr) }
    }

    /// The payload, if the value is concrete and holds a `T`.
    #[inline]
    pub fn get<T: 'static>(&self) -> Option<&T> {
        self.get_proved(false)
    }

    /// [`get`](Self::get), except that when `proved` (the value's type was proved `T` when
    /// its program loaded; docs/execution.md, "Types checked at load") release builds skip
    /// the type check. Debug builds keep it, and panic if the proof was wrong, which would
    /// be a bug in hostrt.
    #[inline]
    pub(crate) fn get_proved<T: 'static>(&self, proved: bool) -> Option<&T> {
        let p = resolved(self.ptr);
        // SAFETY: alive while we hold our reference (directly or via the forwarder).
        let v = unsafe { p.as_ref() };
        if v.state_bits() != CONCRETE || v.kind != KIND_CONCRETE {
            return None;
        }
        if (cfg!(debug_assertions) || !proved) && !type_table::id_is::<T>(v.type_id) {
            debug_assert!(
                !proved,
                "load proved a {} but the value holds a {}",
                core::any::type_name::<T>(),
                (type_table::info(v.type_id).name)()
            );
            return None;
        }
        // SAFETY: concrete, and its type is `T`: checked above, or proved at load (the
        // register's producer only ever sets a `T` there, or an error, excluded above). The
        // payload is immutable once published and alive while we hold a reference.
        Some(unsafe { &(*typed_payload_ptr::<T>(p)).value })
    }

    /// Whether the (resolved) value's payload type is `T`.
    pub fn is_type<T: 'static>(&self) -> bool {
        // SAFETY: alive while we hold our reference.
        let v = unsafe { resolved(self.ptr).as_ref() };
        v.kind == KIND_CONCRETE && type_table::id_is::<T>(v.type_id)
    }

    /// Name of the payload type, for diagnostics: empty without the `diagnostic-text`
    /// feature, whose diagnostics have no text to put it in.
    pub fn type_name(&self) -> &'static str {
        // SAFETY: alive while we hold our reference.
        type_table::name_of(unsafe { resolved(self.ptr).as_ref() }.type_id)
    }

    /// Run `f` when the value becomes available (now, if it already is).
    ///
    /// Waiters run on the thread that makes the value available, most recently registered
    /// first. Fails only when the value is unavailable and no memory is left for the waiter
    /// node: the closure is then returned unrun.
    pub fn and_then<F: FnOnce() + Send + 'static>(&self, f: F) -> Result<(), OutOfMemory<F>> {
        let h = self.header();
        if tag(h.waiters_and_state.load(Ordering::Acquire)) >= CONCRETE {
            f();
            return Ok(());
        }
        let node = callback::new_callback(Allocator::from_id(h.alloc), f)?;
        self.push_waiter(node);
        Ok(())
    }

    /// Add an owned waiter node, or run it now if the value is (or becomes) available.
    /// Touches neither the value nor the node once it has published or run the node, so the
    /// node may own the only reference to the value (see [`borrowed`](Self::borrowed)).
    pub(crate) fn push_waiter(&self, node: NonNull<CallbackHeader>) {
        let h = self.header();
        let mut w = h.waiters_and_state.load(Ordering::Acquire);
        if tag(w) >= CONCRETE {
            // SAFETY: the node was never published; we own it.
            unsafe { callback::run_callback(node) };
            return;
        }
        loop {
            // SAFETY: the node is ours until the CAS publishes it.
            unsafe { (*node.as_ptr()).next = untagged(w) };
            match h.waiters_and_state.compare_exchange_weak(
                w,
                tagged(node.as_ptr(), tag(w)),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(now) => {
                    w = now;
                    if tag(w) >= CONCRETE {
                        // Became available meanwhile: run it here.
                        // SAFETY: the node was never published; we still own it.
                        unsafe { callback::run_callback(node) };
                        return;
                    }
                }
            }
        }
    }

    /// Make the value available as an error. Returns `false` (and does nothing) when the
    /// value is already available or being constructed by someone else.
    pub fn set_error(&self, diag: Diagnostic) -> bool {
        let h = self.header();
        if h.kind == KIND_INDIRECT {
            let Ok(err) = RcAsyncValue::error(Allocator::from_id(h.alloc), diag) else {
                // Could not allocate the error value: publish a targetless error.
                if !h.claim() {
                    return false;
                }
                // SAFETY: claimed; the forward pointer stays null (read as OOM error).
                unsafe { (*payload_ptr(self.ptr).cast::<Payload<()>>()).forward = ptr::null() };
                h.notify(ERROR);
                return true;
            };
            return IndirectAsyncValue::from_rc_unchecked(self.clone()).try_forward(err);
        }
        if !h.claim() {
            return false;
        }
        publish_error(self.ptr, diag);
        true
    }

    /// Whether this is the only reference (and, for an indirect value, it is resolved and
    /// its target is unique too).
    pub fn is_unique(&self) -> bool {
        let h = self.header();
        if h.refcount.load(Ordering::Acquire) != 1 {
            return false;
        }
        if h.kind != KIND_INDIRECT {
            return true;
        }
        let r = resolved(self.ptr);
        // SAFETY: the target is kept alive by the forwarder we hold.
        r != self.ptr && unsafe { r.as_ref() }.refcount.load(Ordering::Acquire) == 1
    }

    /// Current reference count (a snapshot; for tests and diagnostics).
    pub fn ref_count(&self) -> u32 {
        self.header().refcount.load(Ordering::Relaxed)
    }

    /// Whether both handles refer to the same value.
    pub fn ptr_eq(&self, other: &RcAsyncValue) -> bool {
        self.ptr == other.ptr
    }

    /// View as a typed reference if the value is (or may become, for an unresolved indirect
    /// value) a `T`.
    pub fn downcast<T: Send + Sync + 'static>(self) -> Result<AsyncValueRef<T>, RcAsyncValue> {
        // SAFETY: alive while we hold our reference.
        let r = unsafe { resolved(self.ptr).as_ref() };
        let ok = if r.kind == KIND_INDIRECT { true } else { type_table::id_is::<T>(r.type_id) };
        if ok { Ok(AsyncValueRef::from_rc_unchecked(self)) } else { Err(self) }
    }

    /// The allocator this value lives in.
    pub fn allocator(&self) -> Allocator {
        Allocator::from_id(self.header().alloc)
    }

    /// A second handle to the value that owns no reference (it must never be dropped, and it
    /// is valid only while someone else's reference keeps the value alive): how the executor
    /// hands its own reference to a waiter node and still pushes that node.
    pub(crate) fn borrowed(&self) -> ManuallyDrop<RcAsyncValue> {
        ManuallyDrop::new(RcAsyncValue { ptr: self.ptr })
    }

    /// Give up the handle without dropping the reference.
    pub fn into_raw(self) -> NonNull<AsyncValue> {
        let p = self.ptr;
        core::mem::forget(self);
        p
    }

    /// Re-adopt a reference released by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `ptr` came from `into_raw` and that reference has not been re-adopted before.
    pub unsafe fn from_raw(ptr: NonNull<AsyncValue>) -> RcAsyncValue {
        RcAsyncValue { ptr }
    }

    /// Another reference to a value no other thread can reach yet (just made and not
    /// shared): the count is bumped with a plain load and store, not a locked add.
    ///
    /// # Safety
    /// No other reference to the value exists outside the calling thread.
    pub(crate) unsafe fn clone_unshared(&self) -> RcAsyncValue {
        let count = &self.header().refcount;
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        RcAsyncValue { ptr: self.ptr }
    }

    /// Add `n` references at once (the executor hands one to each future use).
    pub(crate) fn add_refs(&self, n: u32) {
        if n > 0 {
            self.header().refcount.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// A new reference to a value we only have a pointer to.
    ///
    /// # Safety
    /// The value must be alive (someone holds a reference) for the duration of the call.
    pub(crate) unsafe fn clone_from_ptr(ptr: NonNull<AsyncValue>) -> RcAsyncValue {
        // SAFETY: caller guarantees liveness.
        unsafe { ptr.as_ref() }.refcount.fetch_add(1, Ordering::Relaxed);
        RcAsyncValue { ptr }
    }

    fn destroy(ptr: NonNull<AsyncValue>) {
        // SAFETY: the last reference is gone: we have exclusive access to the block.
        let h = unsafe { ptr.as_ref() };
        let alloc = Allocator::from_id(h.alloc);
        let word = h.waiters_and_state.load(Ordering::Acquire);
        let state = tag(word);
        if state < CONCRETE {
            // Never made available: drop the pending waiters unrun.
            let mut node = untagged(word);
            while let Some(n) = NonNull::new(node) {
                // SAFETY: nobody else can reach the stack any more.
                unsafe {
                    node = (*n.as_ptr()).next;
                    callback::discard_callback(n);
                }
            }
        }
        let info = type_table::info(h.type_id);
        let payload = payload_ptr(ptr);
        let layout = if h.kind == KIND_INDIRECT {
            if state >= CONCRETE {
                // SAFETY: an available indirect value owns one reference to its target.
                let target = unsafe { (*payload.cast::<Payload<()>>()).forward };
                if let Some(t) = NonNull::new(target.cast_mut()) {
                    // SAFETY: that reference is released exactly once, here.
                    drop(unsafe { RcAsyncValue::from_raw(t) });
                }
            }
            Layout::new::<IndirectBlock>()
        } else {
            match state {
                // SAFETY: a concrete value holds an initialized payload of its type.
                CONCRETE => unsafe { info.drop_payload_in(ptr) },
                ERROR => {
                    // SAFETY: an error value's payload is the diagnostic it owns.
                    let d = unsafe { (*payload.cast::<Payload<()>>()).error };
                    free_diagnostic(alloc, d);
                }
                _ => {}
            }
            info.layout
        };
        // SAFETY: the block came from `alloc` with this layout (recorded by type / kind).
        unsafe { alloc.deallocate(ptr.cast(), layout) };
    }
}

impl Clone for RcAsyncValue {
    #[inline]
    fn clone(&self) -> Self {
        self.header().refcount.fetch_add(1, Ordering::Relaxed);
        RcAsyncValue { ptr: self.ptr }
    }
}

impl Drop for RcAsyncValue {
    #[inline]
    fn drop(&mut self) {
        let rc = &self.header().refcount;
        // Last owner: nobody else can add a reference, so no read-modify-write is needed.
        if rc.load(Ordering::Acquire) == 1 || rc.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            Self::destroy(self.ptr);
        }
    }
}

impl fmt::Debug for RcAsyncValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("RcAsyncValue");
        d.field("state", &self.state()).field("type", &self.type_name());
        if let Some(e) = self.get_error() {
            d.field("error", e);
        }
        d.finish()
    }
}
