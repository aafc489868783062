//! The tasks one flush of the outline list hands to the work queue, one per stream, in a
//! single allocator block instead of one block each (docs/execution.md, "Stream tasks").
//!
//! Each task is an ordinary work-queue task (a callback node), so queues run, order and
//! drop them as any other. The block belongs to the frame: it joins the frame's list of
//! batch blocks ([`Group`]) when it is made and is freed with the frame's last handle, which
//! every node holds one of (all taken with one increment). Running or dropping a node
//! touches nothing shared but its own frame handle, and the whole batch reaches the queue at
//! once. What a task runs is its [`ProcessStream`]'s: the run context's processing.

use core::alloc::Layout;
use core::mem::ManuallyDrop;
use core::ptr::{self, NonNull};

use super::frame::{Frame, Group, Handles};
use crate::callback::CallbackHeader;
use crate::work_queue::{ConcurrentWorkQueue, Task};

/// What a stream task does: process the ready list `inline` of `stream` in `frame`.
pub(crate) trait ProcessStream {
    /// Process the list.
    fn process_stream(frame: &Frame, stream: u32, inline: u32);
}

/// One stream task: process ready list `inline` of `stream` in `frame`.
#[repr(C)]
struct StreamNode {
    header: CallbackHeader,
    frame: ManuallyDrop<Frame>,
    stream: u32,
    inline: u32,
}

// The frame frees a batch block knowing only its `Group` (its size and its alignment,
// which the group's is).
const _: () = assert!(align_of::<StreamNode>() <= align_of::<Group>());

fn layout(len: usize) -> Option<(Layout, usize)> {
    let (l, offset) = Layout::new::<Group>().extend(Layout::array::<StreamNode>(len).ok()?).ok()?;
    Some((l.pad_to_align(), offset))
}

/// `len` stream tasks being written; [`enqueue`](Self::enqueue) hands them to the queue in
/// index order. Dropping a batch before that drops the written tasks unrun (the block
/// stays the frame's).
pub(crate) struct Batch {
    nodes: NonNull<StreamNode>,
    /// Nodes written so far (indices `0..written`).
    written: u32,
    /// One frame handle per node not yet written (none left: the batch is full).
    handles: Handles,
}

impl Batch {
    /// Room for `len` tasks (at least 1) of `frame`; `None` when its allocator has no block
    /// for them.
    pub(crate) fn new(frame: &Frame, len: usize) -> Option<Batch> {
        let (l, offset) = layout(len)?;
        let bytes = u32::try_from(l.size()).ok()?;
        let alloc = frame.exec().allocator();
        let block = alloc.allocate(l).ok()?;
        let group = block.cast::<Group>();
        // SAFETY: fresh block laid out as a `Group` followed, at `offset`, by `len` nodes;
        // the frame owns it from here on and frees it as the group says (`bytes`, aligned
        // as a `Group`: `layout` has that alignment).
        unsafe {
            group.as_ptr().write(Group { next: ptr::null_mut(), bytes, alloc });
            frame.adopt_batch(group);
            let nodes = NonNull::new_unchecked(block.as_ptr().add(offset).cast::<StreamNode>());
            Some(Batch { nodes, written: 0, handles: frame.retain_many(len as u32) })
        }
    }

    /// Whether every task has been pushed.
    pub(crate) fn is_full(&self) -> bool {
        self.handles.left() == 0
    }

    /// Write the next task (index `written`), which `P` runs.
    pub(crate) fn push<P: ProcessStream>(&mut self, stream: u32, inline: u32) {
        let Some(frame) = self.handles.take() else { panic!("batch overfilled") };
        let node = StreamNode {
            header: CallbackHeader::new(run_node::<P>, frame.exec().allocator()),
            frame: ManuallyDrop::new(frame),
            stream,
            inline,
        };
        // SAFETY: a handle was left, so index `written` is inside the block, unwritten.
        unsafe { self.nodes.as_ptr().add(self.written as usize).write(node) };
        self.written += 1;
    }

    /// Hand the tasks to `queue` at once, in index order; the batch must be full.
    pub(crate) fn enqueue(mut self, queue: &dyn ConcurrentWorkQueue) {
        debug_assert!(self.is_full());
        let mut tasks = self.tasks();
        queue.add_tasks(&mut tasks);
        // A queue that stopped short still gets every task (none may be lost).
        tasks.for_each(|t| queue.add_task(t));
    } // (dropping the spent batch drops nothing: its tasks were taken, its handles given)

    /// The written tasks, each owning its node from the moment it is yielded.
    fn tasks(&mut self) -> impl Iterator<Item = Task> + '_ {
        let nodes = self.nodes;
        let written = core::mem::take(&mut self.written);
        // SAFETY: node `i < written` is written and yielded once; the task owns it.
        (0..written as usize)
            .map(move |i| unsafe { Task::from_node(NonNull::new_unchecked(nodes.as_ptr().add(i)).cast()) })
    }
}

impl Drop for Batch {
    /// A batch dropped before [`enqueue`](Batch::enqueue): its tasks are dropped unrun (the
    /// handles of unwritten nodes go with `handles`).
    fn drop(&mut self) {
        self.tasks().for_each(drop);
    }
}

/// `invoke` of a stream node: take its data out, then process the stream (`run`) or just
/// drop the frame handle. The node is not touched after its handle goes (the last handle
/// frees the block).
unsafe fn run_node<P: ProcessStream>(node: NonNull<CallbackHeader>, run: bool) {
    let n = node.cast::<StreamNode>().as_ptr();
    // SAFETY: `invoke`'s contract: a written node we own; its data is moved out once.
    let (frame, stream, inline) = unsafe { (ManuallyDrop::take(&mut (*n).frame), (*n).stream, (*n).inline) };
    if run {
        P::process_stream(&frame, stream, inline);
    }
}
