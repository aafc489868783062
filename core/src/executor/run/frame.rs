//! The per-call executor frame: one allocator block holding a header, the register file,
//! the ready counters and the ready-list links (`bef::format::frame_bytes` bytes).

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::mem::size_of;
use core::ptr::{self, NonNull};

use crate::sync::{AtomicPtr, AtomicU32, Ordering};

use crate::allocator::Allocator;
use crate::async_value::{AsyncValue, RcAsyncValue};
use crate::bef::format::FunctionRecord;
use crate::executor::list_sort::NIL;
use crate::executor::load::Program;
#[cfg(not(loom))]
pub(crate) use crate::executor::load::frame_layout as layout;
use crate::host_context::{ExecutionContext, KeptHeader};
use crate::sync::Ordering::Relaxed;

/// Count of exclusive-path countdowns, for the loom models (a plain atomic: not modelled).
#[cfg(loom)]
pub(crate) static EXCLUSIVE_COUNTDOWNS: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// Low bit of a register: the register holds a result placeholder not yet forwarded.
pub(crate) const PLACEHOLDER: usize = 1;
/// Bytes reserved for the header: 8 words, as `bef::format::frame_bytes` counts (more under
/// loom, whose model-checked atomics are larger than the real ones).
#[cfg(not(loom))]
const HEADER_BYTES: usize = size_of::<[usize; 8]>();
#[cfg(loom)]
const HEADER_BYTES: usize = size_of::<Header>();
/// Bytes per register: a pointer, as `bef::format::frame_bytes` counts (except under loom).
const REG_BYTES: usize = size_of::<AtomicPtr<AsyncValue>>();
/// Bytes per ready counter (4, as `bef::format::frame_bytes` counts, except under loom).
const READY_BYTES: usize = size_of::<AtomicU32>();
#[cfg(not(loom))]
const _: () = assert!(REG_BYTES == size_of::<usize>() && READY_BYTES == 4);
// Every array element stays aligned: registers start at the header's alignment, counters
// after whole registers, links (`u32`) after whole counters.
const _: () = assert!(
    align_of::<AtomicPtr<AsyncValue>>() <= align_of::<Header>()
        && REG_BYTES.is_multiple_of(align_of::<AtomicU32>())
        && READY_BYTES.is_multiple_of(align_of::<u32>())
);
// The load half sizes frames as pointer-aligned blocks (`load::frame_layout`).
#[cfg(not(loom))]
const _: () = assert!(align_of::<Header>() == align_of::<usize>());

impl Header {
    /// The layout the block was allocated with (its register and kernel counts follow from
    /// the array offsets).
    fn layout(&self) -> Option<Layout> {
        let nreg = (self.ready_at as usize - HEADER_BYTES) / REG_BYTES;
        let nk = (self.link_at - self.ready_at) as usize / READY_BYTES;
        layout(nreg, nk)
    }
}

#[repr(C)]
pub(crate) struct Header {
    /// Pending work holding the frame: the kick-off, waiters, tasks.
    refs: AtomicU32,
    pub(crate) function: u32,
    /// Byte offset of the ready counters (after the header and the register file).
    ready_at: u32,
    /// Byte offset of the ready-list links (after the ready counters).
    link_at: u32,
    pub(crate) program: *const Program<'static>,
    pub(crate) exec: *const ExecutionContext<'static>,
    /// The stream task blocks this call made, freed with its last handle.
    batches: AtomicPtr<Group>,
    alloc: Allocator,
}

/// A counted handle to a frame.
pub(crate) struct Frame {
    ptr: NonNull<Header>,
}

// SAFETY: registers are written once before the consumers that read them are notified
// (release/acquire through the ready counters and the waiter word, or, for a frame counted
// down while exclusive, through the acquire read of the handle count that pairs with every
// handle's acquire-release drop), links are written only by the queue that owns the kernel,
// and the header is immutable after creation. `Frame` is deliberately not `Sync`: the
// exclusive-frame rule relies on every thread that touches a frame owning a handle.
unsafe impl Send for Frame {}

/// Under loom: the same arrays, with loom's atomics' sizes.
#[cfg(loom)]
pub(crate) fn layout(nreg: usize, nk: usize) -> Option<Layout> {
    let bytes = HEADER_BYTES + nreg * REG_BYTES + nk * (READY_BYTES + 4);
    Layout::from_size_align(bytes.next_multiple_of(align_of_header()), align_of_header()).ok()
}

#[cfg(loom)]
const fn align_of_header() -> usize {
    core::mem::align_of::<Header>()
}

impl Frame {
    /// Allocate and initialise a frame for function `function`, whose record is `rec`
    /// (registers empty, ready counts set).
    ///
    /// # Safety
    /// `program` and `exec` must outlive every use of the frame (the executor's contract).
    pub(crate) unsafe fn new(
        program: &Program<'_>,
        exec: &ExecutionContext<'_>,
        function: u32,
        rec: &FunctionRecord,
    ) -> Option<Frame> {
        let (nreg, nk) = (rec.num_registers as usize, rec.num_kernels as usize);
        const _: () = assert!(size_of::<Header>() <= HEADER_BYTES);
        let alloc = exec.allocator();
        let layout = layout(nreg, nk)?;
        let block = match take_kept(exec, alloc, layout) {
            Some(block) => block,
            None => alloc.allocate(layout).ok()?.cast::<Header>(),
        };
        let header = Header {
            refs: AtomicU32::new(1),
            function,
            // Below the frame's size, which the verified BEF stores as a `u32`.
            ready_at: (HEADER_BYTES + nreg * REG_BYTES) as u32,
            link_at: (HEADER_BYTES + nreg * REG_BYTES + READY_BYTES * nk) as u32,
            program: ptr::from_ref(program).cast(),
            exec: ptr::from_ref(exec).cast(),
            batches: AtomicPtr::new(ptr::null_mut()),
            alloc,
        };
        // SAFETY: a block of `layout(nreg, nk)` bytes (fresh, or a kept block of that same
        // layout), aligned for the header; the arrays after the header are initialised here
        // before any use.
        unsafe {
            block.as_ptr().write(header);
            let frame = Frame { ptr: block };
            for r in 0..nreg {
                frame.reg_slot(r).write(AtomicPtr::new(ptr::null_mut()));
            }
            for (k, kr) in program.file.kernels_of(rec).iter().enumerate() {
                frame.ready_slot(k).write(AtomicU32::new(kr.num_args().max(1)));
                frame.link_slot(k).write(UnsafeCell::new(NIL));
            }
            Some(frame)
        }
    }

    fn base(&self) -> *mut u8 {
        self.ptr.as_ptr().cast()
    }

    fn header(&self) -> &Header {
        // SAFETY: alive while a counted handle exists.
        unsafe { self.ptr.as_ref() }
    }

    fn reg_slot(&self, r: usize) -> *mut AtomicPtr<AsyncValue> {
        // SAFETY: register `r` (`< nreg`, verified BEF) lies inside the block, after the
        // header, `REG_BYTES` each.
        unsafe { self.base().add(HEADER_BYTES + r * REG_BYTES).cast() }
    }

    fn ready_slot(&self, k: usize) -> *mut AtomicU32 {
        // SAFETY: within the block: header, registers, then `READY_BYTES` per kernel.
        unsafe { self.base().add(self.header().ready_at as usize + READY_BYTES * k).cast() }
    }

    fn link_slot(&self, k: usize) -> *mut UnsafeCell<u32> {
        // SAFETY: within the block: the link array follows the ready counters.
        unsafe { self.base().add(self.header().link_at as usize + 4 * k).cast() }
    }

    /// Register `r`.
    pub(crate) fn reg(&self, r: u32) -> &AtomicPtr<AsyncValue> {
        // SAFETY: initialised in `new`; `r` comes from verified BEF (`< num_registers`).
        unsafe { &*self.reg_slot(r as usize) }
    }

    /// Ready counter of kernel `k`.
    pub(crate) fn ready(&self, k: u32) -> &AtomicU32 {
        // SAFETY: initialised in `new`; `k < num_kernels` (verified BEF).
        unsafe { &*self.ready_slot(k as usize) }
    }

    /// Count down kernel `k`'s ready count: `true` when this was its last operand.
    #[inline]
    pub(crate) fn count_down(&self, k: u32) -> bool {
        let ready = self.ready(k);
        // The last operand readies the kernel. A frame no other thread can reach counts down
        // without a locked instruction; its count is read only once that is known (a count
        // read before could be stale by another thread's decrement).
        if self.exclusive() {
            #[cfg(loom)]
            EXCLUSIVE_COUNTDOWNS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            let left = ready.load(Ordering::Relaxed);
            ready.store(left.wrapping_sub(1), Ordering::Relaxed);
            left == 1
        } else {
            ready.load(Ordering::Acquire) == 1 || ready.fetch_sub(1, Ordering::AcqRel) == 1
        }
    }

    /// Read the ready-list link of kernel `k`.
    pub(crate) fn link(&self, k: u32) -> u32 {
        // SAFETY: only the queue that made `k` ready touches its link (each kernel becomes
        // ready once per call).
        unsafe { *(*self.link_slot(k as usize)).get() }
    }

    /// Set the ready-list link of kernel `k`.
    pub(crate) fn set_link(&self, k: u32, next: u32) {
        // SAFETY: as for `link`.
        unsafe { *(*self.link_slot(k as usize)).get() = next }
    }

    /// The program and context of this call.
    pub(crate) fn program(&self) -> &Program<'_> {
        // SAFETY: the executor's contract keeps the program alive while frames exist.
        unsafe { &*self.header().program }
    }

    pub(crate) fn exec(&self) -> &ExecutionContext<'_> {
        // SAFETY: as for `program`.
        unsafe { &*self.header().exec }
    }

    pub(crate) fn function(&self) -> u32 {
        self.header().function
    }

    /// Whether the caller's handle is the only one: no waiter or task of this call exists, so
    /// no other thread can touch the frame until the caller makes one (docs/execution.md,
    /// "Exclusive frames"). Acquire: the work of handles dropped before is visible. Sound
    /// because the caller owns the handle it asks through (`Frame` is `Send`, not `Sync`,
    /// so a `&Frame` never reaches another thread).
    #[inline]
    pub(crate) fn exclusive(&self) -> bool {
        self.header().refs.load(Ordering::Acquire) == 1
    }

    /// Another counted handle (for a waiter or a task).
    pub(crate) fn retain(&self) -> Frame {
        self.header().refs.fetch_add(1, Ordering::Relaxed);
        Frame { ptr: self.ptr }
    }

    /// `n` more counted handles, added with one increment (for a batch of tasks).
    pub(crate) fn retain_many(&self, n: u32) -> Handles {
        self.header().refs.fetch_add(n, Ordering::Relaxed);
        Handles { ptr: self.ptr, left: n }
    }

    /// Make `group`, a stream task block, the frame's: it is freed with the last handle.
    ///
    /// # Safety
    /// `group` heads a block made by `stream_tasks::Batch::new` (`group.bytes` bytes aligned
    /// as a `Group`, from `group.alloc`), owned by the caller, whose nodes each hold a handle
    /// of this frame while in use.
    pub(crate) unsafe fn adopt_batch(&self, group: NonNull<Group>) {
        let list = &self.header().batches;
        let mut top = list.load(Relaxed);
        loop {
            // SAFETY: the caller owns the block until the exchange publishes it.
            unsafe { (*group.as_ptr()).next = top };
            // Release is not needed: the last handle's acquire-release drop orders this
            // push before the list is freed.
            match list.compare_exchange_weak(top, group.as_ptr(), Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => top = now,
            }
        }
    }

    /// Take one of register `r`'s references (or `None` if it is empty).
    pub(crate) fn take(&self, r: u32) -> Option<RcAsyncValue> {
        let p = self.reg(r).load(Ordering::Acquire);
        let p = NonNull::new(p.map_addr(|a| a & !PLACEHOLDER))?;
        // SAFETY: the register holds one reference per remaining use; each use takes one.
        Some(unsafe { RcAsyncValue::from_raw(p) })
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // SAFETY: this handle is counted and goes now.
        unsafe { release(self.ptr, 1) }
    }
}

/// Give up `n` counted handles of the frame at `ptr`; the last one ends the frame.
///
/// # Safety
/// The caller owns `n` counted handles of the frame and uses none of them afterwards.
unsafe fn release(ptr: NonNull<Header>, n: u32) {
    // SAFETY: alive while the caller's handles are counted.
    let h = unsafe { ptr.as_ref() };
    if h.refs.fetch_sub(n, Ordering::AcqRel) != n {
        return;
    }
    // Every register's references were taken by its uses before the last handle went
    // (a use that never ran keeps a waiter, and with it a handle, alive), and every stream
    // task has run or been dropped (each held a handle). The block, its header intact but
    // for the first word, goes to the host's kept-block slot for the next call, or is freed.
    // SAFETY: the last handle is gone: the block and its batch list are ours, allocated as
    // the header says; the frame's context outlives its frames (the executor's contract).
    unsafe {
        if cfg!(feature = "streams") {
            free_batches(h.batches.load(Relaxed));
        }
        keep((*h.exec).host(), ptr)
    }
}

/// The start of a block of stream tasks the frame owns (`stream_tasks::Batch`): the next
/// block of the frame's list, and how to free it.
#[repr(C)]
pub(crate) struct Group {
    pub(crate) next: *mut Group,
    /// The block's size; it is aligned as a `Group`.
    pub(crate) bytes: u32,
    pub(crate) alloc: Allocator,
}

/// Free the frame's list of batch blocks from `head` (the frame's last handle is gone).
///
/// # Safety
/// Every block of the list was adopted with [`Frame::adopt_batch`] and no node in it is in
/// use.
unsafe fn free_batches(mut head: *mut Group) {
    while let Some(group) = NonNull::new(head) {
        // SAFETY: a live block of the list (caller).
        let (next, bytes, alloc) = unsafe { ((*head).next, (*head).bytes as usize, (*head).alloc) };
        if let Ok(l) = Layout::from_size_align(bytes, align_of::<Group>()) {
            // SAFETY: allocated with this layout (`adopt_batch`'s contract).
            unsafe { alloc.deallocate(group.cast(), l) };
        }
        head = next;
    }
}

/// Counted handles of one frame, taken with one increment ([`Frame::retain_many`]) and
/// handed out one at a time; those left are given up when this is dropped.
pub(crate) struct Handles {
    ptr: NonNull<Header>,
    left: u32,
}

impl Handles {
    /// How many are left.
    pub(crate) fn left(&self) -> u32 {
        self.left
    }

    /// One of the handles, while any is left.
    pub(crate) fn take(&mut self) -> Option<Frame> {
        self.left = self.left.checked_sub(1)?;
        Some(Frame { ptr: self.ptr })
    }
}

impl Drop for Handles {
    fn drop(&mut self) {
        if self.left > 0 {
            // SAFETY: `left` counted handles are ours and go now.
            unsafe { release(self.ptr, self.left) }
        }
    }
}

// A kept block's first bytes become a `KeptHeader` (the function that frees it): they
// cover only `refs` and `function`, which a dead frame no longer needs, and leave the
// fields `take_kept` and `free_block` read intact.
const _: () = assert!(
    size_of::<KeptHeader>() <= core::mem::offset_of!(Header, ready_at)
        && align_of::<KeptHeader>() <= align_of::<Header>()
);

/// The block of the host's last finished frame (docs/execution.md, "Frame blocks"), if it
/// was allocated from `alloc` with `want`: a call allocates no frame when the previous one of
/// the same size and allocator has ended. A kept block of another size is freed.
fn take_kept(exec: &ExecutionContext<'_>, alloc: Allocator, want: Layout) -> Option<NonNull<Header>> {
    let block = exec.host().kept_block().take()?.cast::<Header>();
    // SAFETY: taken out, so ours; only frame blocks are kept (`keep`), their header intact
    // past `function`.
    let h = unsafe { block.as_ref() };
    if h.alloc == alloc && h.layout() == Some(want) {
        return Some(block);
    }
    // SAFETY: ours, allocated as its header says.
    unsafe { free_block(block) };
    None
}

/// Keep `block` in `host`'s slot for its next call, or free it when a block is kept.
///
/// # Safety
/// `block` is a frame block nobody uses any more, with its header intact.
unsafe fn keep(host: &crate::HostContext<'_>, block: NonNull<Header>) {
    let kept = block.cast::<KeptHeader>();
    // SAFETY: the block is ours and aligned for the header, which covers only fields a dead
    // frame does not read (see the assertion above).
    unsafe { kept.as_ptr().write(KeptHeader { free: free_kept }) };
    // SAFETY: it starts with the header of the function that frees it; nobody uses it.
    if unsafe { host.kept_block().keep(kept) }.is_err() {
        // SAFETY: the caller's contract; `free_block` reads only fields past the header.
        unsafe { free_block(block) };
    }
}

/// [`KeptHeader::free`] of a kept frame block.
///
/// # Safety
/// `block` is a kept frame block nobody uses.
unsafe fn free_kept(block: NonNull<KeptHeader>) {
    // SAFETY: the caller's contract; its header is intact past the first word.
    unsafe { free_block(block.cast()) }
}

/// Free a frame block.
///
/// # Safety
/// `block` is a frame block nobody uses, allocated as its (intact) header says.
unsafe fn free_block(block: NonNull<Header>) {
    // SAFETY: the header is initialised (caller).
    let h = unsafe { block.as_ref() };
    if let Some(l) = h.layout() {
        let alloc = h.alloc;
        // SAFETY: allocated with this layout from `alloc` (caller).
        unsafe { alloc.deallocate(block.cast(), l) };
    }
}
