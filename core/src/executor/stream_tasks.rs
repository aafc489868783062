//! The tasks one flush of the outline list hands to the work queue, one per stream, in a
//! single allocator block instead of one block each (docs/execution.md, "Stream tasks").
//!
//! Each task is an ordinary work-queue task (a callback node), so queues run, order and
//! drop them as any other; they share the block, which the last one to run (or be
//! dropped) frees. A task copies what it needs out of its node and gives up its share
//! before it processes the stream, so the block never outlives the shortest-lived share.

use core::alloc::Layout;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use portable_atomic::{AtomicU32, Ordering};

use super::frame::Frame;
use crate::allocator::Allocator;
use crate::callback::CallbackHeader;
use crate::work_queue::Task;

/// The start of a batch block: how many nodes still hold a share, and how to free it.
#[repr(C)]
struct Group {
    shares: AtomicU32,
    len: u32,
    alloc: Allocator,
}

/// One stream task: process ready list `inline` of `stream` in `frame`.
#[repr(C)]
struct StreamNode {
    header: CallbackHeader,
    group: NonNull<Group>,
    frame: ManuallyDrop<Frame>,
    stream: u32,
    inline: u32,
}

fn layout(len: usize) -> Option<(Layout, usize)> {
    let (l, offset) = Layout::new::<Group>().extend(Layout::array::<StreamNode>(len).ok()?).ok()?;
    Some((l.pad_to_align(), offset))
}

/// `len` stream tasks being written; [`enqueue`](Self::enqueue) hands them to the queue in
/// index order. Dropping a batch before that drops the written tasks unrun.
pub(crate) struct Batch {
    group: NonNull<Group>,
    nodes: NonNull<StreamNode>,
    /// Nodes written so far (indices `0..written`).
    written: u32,
}

impl Batch {
    /// Room for `len` tasks (at least 1); `None` when the allocator has no block for it.
    pub(crate) fn new(alloc: Allocator, len: usize) -> Option<Batch> {
        let (l, offset) = layout(len)?;
        let block = alloc.allocate(l).ok()?;
        let group = block.cast::<Group>();
        // SAFETY: fresh block laid out as a `Group` followed, at `offset`, by `len` nodes.
        unsafe {
            group.as_ptr().write(Group { shares: AtomicU32::new(len as u32), len: len as u32, alloc });
            let nodes = NonNull::new_unchecked(block.as_ptr().cast::<u8>().add(offset).cast::<StreamNode>());
            Some(Batch { group, nodes, written: 0 })
        }
    }

    /// Whether every task has been pushed.
    pub(crate) fn is_full(&self) -> bool {
        self.written == self.len()
    }

    fn len(&self) -> u32 {
        // SAFETY: the group lives until every share is released; ours are not.
        unsafe { self.group.as_ref() }.len
    }

    /// Write the next task (index `written`), holding `frame`.
    pub(crate) fn push(&mut self, frame: Frame, stream: u32, inline: u32) {
        assert!(self.written < self.len(), "batch overfilled");
        let node = StreamNode {
            header: CallbackHeader::new(run_node, self.alloc()),
            group: self.group,
            frame: ManuallyDrop::new(frame),
            stream,
            inline,
        };
        // SAFETY: index `written < len` is inside the block and not yet written.
        unsafe { self.nodes.as_ptr().add(self.written as usize).write(node) };
        self.written += 1;
    }

    fn alloc(&self) -> Allocator {
        // SAFETY: as in `len`.
        unsafe { self.group.as_ref() }.alloc
    }

    /// Hand the tasks to `add`, in index order; the batch must be full.
    pub(crate) fn enqueue(self, add: impl FnMut(Task)) {
        debug_assert_eq!(self.written, self.len());
        ManuallyDrop::new(self).hand_over(add);
    }

    /// Give every written task to `add` and the share of every unwritten node back. Spends
    /// the batch: the block may be gone afterwards (tasks run, elsewhere too, once added).
    fn hand_over(&mut self, mut add: impl FnMut(Task)) {
        let (written, len) = (self.written, self.len());
        for i in 0..written as usize {
            // SAFETY: node `i` is written; from here on the task owns it and its share.
            add(unsafe { Task::from_node(NonNull::new_unchecked(self.nodes.as_ptr().add(i)).cast()) });
        }
        for _ in written..len {
            // SAFETY: each unwritten node's share is ours and released once.
            unsafe { release(self.group) };
        }
    }
}

impl Drop for Batch {
    /// A batch dropped before [`enqueue`](Batch::enqueue): its tasks are dropped unrun.
    fn drop(&mut self) {
        self.hand_over(drop);
    }
}

/// Give up one share of the block; the last frees it.
///
/// # Safety
/// The caller holds a share and does not touch the block afterwards.
unsafe fn release(group: NonNull<Group>) {
    // SAFETY: the block is alive while a share is held.
    let g = unsafe { group.as_ref() };
    if g.shares.fetch_sub(1, Ordering::AcqRel) != 1 {
        return;
    }
    let (alloc, len) = (g.alloc, g.len as usize);
    if let Some((l, _)) = layout(len) {
        // SAFETY: allocated in `Batch::new` with this layout; no share is left.
        unsafe { alloc.deallocate(group.cast(), l) };
    }
}

/// `invoke` of a stream node: take its data out, release its share, then process the
/// stream (`run`) or just drop the frame handle.
unsafe fn run_node(node: NonNull<CallbackHeader>, run: bool) {
    let n = node.cast::<StreamNode>().as_ptr();
    // SAFETY: `invoke`'s contract: a written node we own; its data is moved out once.
    let (frame, stream, inline, group) =
        unsafe { (ManuallyDrop::take(&mut (*n).frame), (*n).stream, (*n).inline, (*n).group) };
    // SAFETY: the node held a share; it is not touched again.
    unsafe { release(group) };
    if run {
        super::run::run_stream(&frame, stream, inline);
    }
}
