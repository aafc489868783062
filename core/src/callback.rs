//! A type-erased `FnOnce` stored in one allocator block with an intrusive `next` link.
//!
//! Used for async value waiters (a LIFO stack) and work queue tasks (a FIFO list), so
//! neither needs `alloc` or a separate list allocation.

use core::alloc::Layout;
use core::mem::ManuallyDrop;
use core::ptr::{self, NonNull};

use crate::allocator::{Allocator, OutOfMemory};

/// Common prefix of every callback node. Nodes are pointer-aligned, so the low two bits of a
/// node address are free for tags.
#[repr(C)]
pub(crate) struct CallbackHeader {
    pub(crate) next: *mut CallbackHeader,
    /// Runs (`true`) or just drops (`false`) the closure, then frees the node.
    invoke: unsafe fn(NonNull<CallbackHeader>, bool),
    alloc: Allocator,
    /// [`KIND_CLOSURE`], or a kind whose owner may handle the node's data itself (see
    /// [`take_data`]) instead of running it.
    pub(crate) kind: u8,
}

impl CallbackHeader {
    /// The header of a node whose memory its `invoke` manages itself (a node inside a larger
    /// block, such as the executor's stream task batches); `alloc` is recorded, not used here.
    pub(crate) fn new(invoke: unsafe fn(NonNull<CallbackHeader>, bool), alloc: Allocator) -> Self {
        CallbackHeader { next: ptr::null_mut(), invoke, alloc, kind: KIND_CLOSURE }
    }
}

/// A node holding an `FnOnce` closure.
pub(crate) const KIND_CLOSURE: u8 = 0;
/// A node holding an async value forwarding request (`async_value::indirect`).
pub(crate) const KIND_FORWARD: u8 = 1;

#[repr(C)]
struct CallbackNode<F> {
    header: CallbackHeader,
    f: ManuallyDrop<F>,
}

/// Allocate a node holding `f`; on exhaustion the closure is handed back.
pub(crate) fn new_callback<F: FnOnce() + Send + 'static>(
    alloc: Allocator,
    f: F,
) -> Result<NonNull<CallbackHeader>, OutOfMemory<F>> {
    new_data_node(alloc, KIND_CLOSURE, f, invoke::<F>)
}

/// Allocate a node of `kind` holding `data`, run or dropped by `invoke` (which must treat
/// the node as a `CallbackNode<T>`, for example through [`take_data`]).
pub(crate) fn new_data_node<T: Send + 'static>(
    alloc: Allocator,
    kind: u8,
    data: T,
    invoke: unsafe fn(NonNull<CallbackHeader>, bool),
) -> Result<NonNull<CallbackHeader>, OutOfMemory<T>> {
    let layout = Layout::new::<CallbackNode<T>>();
    let Ok(mem) = alloc.allocate(layout) else {
        return Err(OutOfMemory(data));
    };
    let node = mem.cast::<CallbackNode<T>>();
    // SAFETY: `mem` is a fresh block sized and aligned for `CallbackNode<T>`.
    unsafe {
        node.as_ptr().write(CallbackNode {
            header: CallbackHeader { next: ptr::null_mut(), invoke, alloc, kind },
            f: ManuallyDrop::new(data),
        })
    };
    Ok(node.cast())
}

/// The data of a node made by [`new_data_node`] with a `T`.
///
/// # Safety
/// `node` was made by `new_data_node::<T>` and is alive; the caller decides who may access
/// the data through the pointer.
pub(crate) unsafe fn data_ptr<T>(node: NonNull<CallbackHeader>) -> *mut T {
    // SAFETY: caller's contract: `node` is the header of a live `CallbackNode<T>`.
    unsafe { (&raw mut (*node.cast::<CallbackNode<T>>().as_ptr()).f).cast::<T>() }
}

/// Move the data out of a node made by [`new_data_node`] with a `T`, and free the node.
///
/// # Safety
/// `node` was made by `new_data_node::<T>`, is owned by the caller and not used afterwards.
pub(crate) unsafe fn take_data<T>(node: NonNull<CallbackHeader>) -> T {
    let node = node.cast::<CallbackNode<T>>();
    // SAFETY: caller's contract: a live `CallbackNode<T>` we own; the data is moved out
    // once and the block freed once, with the layout it was allocated with.
    unsafe {
        let alloc = (*node.as_ptr()).header.alloc;
        let data = ManuallyDrop::take(&mut (*node.as_ptr()).f);
        alloc.deallocate(node.cast(), Layout::new::<CallbackNode<T>>());
        data
    }
}

unsafe fn invoke<F: FnOnce()>(header: NonNull<CallbackHeader>, run: bool) {
    // SAFETY: `header` is the prefix of a live `CallbackNode<F>` created by `new_callback`,
    // owned by the caller.
    let f: F = unsafe { take_data(header) };
    if run {
        f();
    }
}

/// Run the callback and free its node.
///
/// # Safety
/// `node` came from [`new_callback`], is owned by the caller and not used afterwards.
pub(crate) unsafe fn run_callback(node: NonNull<CallbackHeader>) {
    // SAFETY: caller's contract; `invoke` was set by `new_callback` for the node's type.
    unsafe { ((*node.as_ptr()).invoke)(node, true) }
}

/// Drop the callback without running it and free its node.
///
/// # Safety
/// As for [`run_callback`].
pub(crate) unsafe fn discard_callback(node: NonNull<CallbackHeader>) {
    // SAFETY: caller's contract.
    unsafe { ((*node.as_ptr()).invoke)(node, false) }
}

/// An intrusive FIFO of callback nodes (not thread-safe by itself).
pub(crate) struct CallbackList {
    head: *mut CallbackHeader,
    tail: *mut CallbackHeader,
}

// SAFETY: the list exclusively owns its nodes, and the closures in them are `Send`.
unsafe impl Send for CallbackList {}

impl CallbackList {
    pub(crate) const fn new() -> Self {
        CallbackList { head: ptr::null_mut(), tail: ptr::null_mut() }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// Put an owned node first.
    pub(crate) fn push_front(&mut self, node: NonNull<CallbackHeader>) {
        // SAFETY: we own `node`.
        unsafe { (*node.as_ptr()).next = self.head };
        if self.tail.is_null() {
            self.tail = node.as_ptr();
        }
        self.head = node.as_ptr();
    }

    pub(crate) fn pop_front(&mut self) -> Option<NonNull<CallbackHeader>> {
        let head = NonNull::new(self.head)?;
        // SAFETY: `head` is a node owned by this list.
        self.head = unsafe { (*head.as_ptr()).next };
        if self.head.is_null() {
            self.tail = ptr::null_mut();
        }
        Some(head)
    }

    /// Move all of `front`'s nodes before this list's nodes.
    pub(crate) fn prepend(&mut self, mut front: CallbackList) {
        if front.is_empty() {
            return;
        }
        // SAFETY: `front.tail` is a node owned by `front`, which we consume.
        unsafe { (*front.tail).next = self.head };
        if self.tail.is_null() {
            self.tail = front.tail;
        }
        self.head = front.head;
        front.head = ptr::null_mut();
        front.tail = ptr::null_mut();
    }

    pub(crate) fn take(&mut self) -> CallbackList {
        core::mem::replace(self, CallbackList::new())
    }
}

impl Drop for CallbackList {
    fn drop(&mut self) {
        while let Some(node) = self.pop_front() {
            // SAFETY: the list owned the node; it is dropped without running.
            unsafe { discard_callback(node) };
        }
    }
}
