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
}

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
    let layout = Layout::new::<CallbackNode<F>>();
    let Ok(mem) = alloc.allocate(layout) else {
        return Err(OutOfMemory(f));
    };
    let node = mem.cast::<CallbackNode<F>>();
    // SAFETY: `mem` is a fresh block sized and aligned for `CallbackNode<F>`.
    unsafe {
        node.as_ptr().write(CallbackNode {
            header: CallbackHeader { next: ptr::null_mut(), invoke: invoke::<F>, alloc },
            f: ManuallyDrop::new(f),
        })
    };
    Ok(node.cast())
}

unsafe fn invoke<F: FnOnce()>(header: NonNull<CallbackHeader>, run: bool) {
    let node = header.cast::<CallbackNode<F>>();
    // SAFETY: `header` is the prefix of a live `CallbackNode<F>` created by `new_callback`,
    // owned by the caller; we move the closure out once and free the block exactly once.
    let f = unsafe {
        let alloc = (*node.as_ptr()).header.alloc;
        let f = ManuallyDrop::take(&mut (*node.as_ptr()).f);
        alloc.deallocate(node.cast(), Layout::new::<CallbackNode<F>>());
        f
    };
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

    /// Append an owned node.
    pub(crate) fn push_back(&mut self, node: NonNull<CallbackHeader>) {
        // SAFETY: we own `node` and every node in the list.
        unsafe {
            (*node.as_ptr()).next = ptr::null_mut();
            if self.tail.is_null() {
                self.head = node.as_ptr();
            } else {
                (*self.tail).next = node.as_ptr();
            }
        }
        self.tail = node.as_ptr();
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
