//! `Task`: an owned, allocator-backed `FnOnce` for a work queue.

use core::fmt;
use core::ptr::NonNull;

use crate::allocator::{Allocator, OutOfMemory};
use crate::callback::{self, CallbackHeader, CallbackList};

/// A unit of work: a closure stored in one block from a [`HostAllocator`](crate::HostAllocator).
/// Dropping a task without running it drops the closure and frees the block.
pub struct Task {
    node: NonNull<CallbackHeader>,
}

// SAFETY: the closure inside is `Send`, and the task owns its node exclusively.
unsafe impl Send for Task {}

impl Task {
    /// Box `f` in `alloc`. On exhaustion the closure is returned unrun.
    pub fn new<F: FnOnce() + Send + 'static>(alloc: Allocator, f: F) -> Result<Task, OutOfMemory<F>> {
        callback::new_callback(alloc, f).map(|node| Task { node })
    }

    /// Run the task (consuming it and freeing its block).
    pub fn run(self) {
        let node = self.into_node();
        // SAFETY: we owned the node; it is run once and never touched again.
        unsafe { callback::run_callback(node) }
    }

    pub(crate) fn into_node(self) -> NonNull<CallbackHeader> {
        let n = self.node;
        core::mem::forget(self);
        n
    }

    /// Re-adopt a node taken from a task list.
    ///
    /// # Safety
    /// `node` came from [`Task::into_node`] and is owned by the caller.
    pub(crate) unsafe fn from_node(node: NonNull<CallbackHeader>) -> Task {
        Task { node }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        // SAFETY: we own the node; it is discarded once.
        unsafe { callback::discard_callback(self.node) }
    }
}

impl fmt::Debug for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Task")
    }
}

/// A FIFO of tasks.
pub(crate) struct TaskList(CallbackList);

impl TaskList {
    pub(crate) const fn new() -> Self {
        TaskList(CallbackList::new())
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub(crate) fn pop_front(&mut self) -> Option<Task> {
        // SAFETY: every node in the list was a task's.
        self.0.pop_front().map(|n| unsafe { Task::from_node(n) })
    }
    pub(crate) fn prepend(&mut self, front: TaskList) {
        self.0.prepend(front.0);
    }
    /// Move all of `back`'s tasks after this list's.
    pub(crate) fn append(&mut self, mut back: TaskList) {
        back.0.prepend(self.0.take());
        *self = back;
    }
    /// The list of the nodes of a chain linked through `next`, newest first (the order of a
    /// stack), in reverse: oldest first.
    ///
    /// # Safety
    /// Every node of the chain is a task's, owned by the caller.
    pub(crate) unsafe fn from_stack(mut top: *mut CallbackHeader) -> TaskList {
        let mut list = CallbackList::new();
        while let Some(node) = NonNull::new(top) {
            // SAFETY: the caller owns the chain; `next` is read before `push_front` rewrites it.
            top = unsafe { (*node.as_ptr()).next };
            list.push_front(node);
        }
        TaskList(list)
    }

    pub(crate) fn take(&mut self) -> TaskList {
        TaskList(self.0.take())
    }
}
