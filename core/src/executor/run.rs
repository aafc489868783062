//! The BEF executor algorithm (docs/execution.md): kick-off with the pseudo kernel, ready counts,
//! inline LIFO processing of the current stream, other streams handed to the work queue as
//! one task per stream, publication of results (waiting on unavailable ones), error
//! poisoning and cancellation.

use core::cell::Cell;
use core::mem::{ManuallyDrop, MaybeUninit};

use crate::sync::{AtomicPtr, Ordering};

use super::buf::{CallBuf, INLINE, WideArrays};
use super::depth::{Level, Nesting};
use super::frame::{Frame, NIL, PLACEHOLDER};
use super::program::Program;
use super::stream_tasks::Batch;
use crate::async_value::{AsyncValue, IndirectAsyncValue, RcAsyncValue, Spare};
use crate::bef::BefFile;
use crate::bef::format::{KernelRecord, RegisterRecord};
use crate::callback::{self, CallbackHeader};
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::host_context::ExecutionContext;
use crate::kernel::{AttrRef, Invoke, InvokeToken, KernelEntry, KernelFrame, LocRef};
use crate::work_queue::Task;
use core::ptr::NonNull;

/// Count of exclusive-path countdowns, for the loom models (a plain atomic: not modelled).
#[cfg(loom)]
pub(super) static EXCLUSIVE_COUNTDOWNS: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(0);

/// Waiter callbacks nested on this stack beyond this depth are re-enqueued as tasks instead.
pub const MAX_STACK_DEPTH: u32 = 100;

/// Ready kernels of one thread of control (docs/execution.md): those of the current
/// stream run inline (LIFO), the others (the outline list, in notification order) go to the
/// work queue. Both lists are threaded through the frame's link array: a kernel becomes
/// ready once per call, so it is on at most one list.
pub(super) struct ReadyQueue<'a> {
    /// Stream id of each kernel (empty: every kernel is in stream 0).
    streams: &'a [u32],
    stream: u32,
    inline: u32,
    out_head: u32,
    out_tail: u32,
    out_len: usize,
    /// The block of the last operand whose last reference a kernel dropped, offered to the
    /// next kernel's result (docs/execution.md, "Result blocks"); freed with the queue.
    pub(super) spare: Cell<Option<Spare>>,
}

/// The tables of a function the executor reads per kernel, fetched once per call (each
/// `Function` accessor re-checks bounds and alignment). Small on purpose: a `Function`
/// carries a copy of the whole `BefFile`, and every nested call keeps its `Body` on the stack.
pub(super) struct Body<'a> {
    pub(super) regs: &'a [RegisterRecord],
    kernels: &'a [KernelRecord],
    /// Each kernel's planned mode (docs/execution.md, "Scalar registers"); empty when every
    /// kernel runs the generic path.
    #[cfg(feature = "scalar-registers")]
    modes: &'a [u8],
    /// Stream of each kernel (empty: all in stream 0).
    streams: &'a [u32],
    root_stream: u32,
}

impl<'a> Body<'a> {
    /// The body of the function a frame runs.
    fn of(frame: &Frame) -> Option<Body<'_>> {
        Body::of_function(frame.program(), frame.function())
    }

    /// The body of function `index` of `file`, straight from its record (a `Function` would
    /// copy the whole `BefFile`, and tasks ask for it every time they start).
    #[inline(never)]
    fn of_function(program: &'a Program<'_>, index: u32) -> Option<Body<'a>> {
        let file: &BefFile<'_> = &program.file;
        let rec = file.function_record(index)?;
        Some(Body {
            regs: file.registers_of(rec),
            kernels: file.kernels_of(rec),
            #[cfg(feature = "scalar-registers")]
            modes: program.modes_of(rec),
            // Without the `streams` feature every kernel is on stream 0 (`ReadyQueue::of`).
            streams: if cfg!(feature = "streams") { file.kernel_streams_of(rec) } else { &[] },
            root_stream: if cfg!(feature = "streams") { file.root_stream_of(index) } else { 0 },
        })
    }
}

impl<'a> ReadyQueue<'a> {
    /// The ready queue of `frame`'s call on `stream`, holding the ready list `inline`.
    /// Without stream tasks (the default on a queue that runs one task at a time,
    /// docs/execution.md, "Streams on one thread") every kernel is on one stream.
    fn of(frame: &Frame, f: &Body<'a>, stream: u32, inline: u32) -> Self {
        let (streams, stream) = if cfg!(feature = "streams") && frame.exec().host().stream_tasks() {
            (f.streams, stream)
        } else {
            (&[][..], 0)
        };
        ReadyQueue {
            streams,
            stream,
            inline,
            out_head: NIL,
            out_tail: NIL,
            out_len: 0,
            spare: Cell::new(None),
        }
    }

    #[inline]
    fn stream_of(&self, k: u32) -> u32 {
        self.streams.get(k as usize).copied().unwrap_or(0)
    }

    /// Whether kernel `k` runs on the current stream: always, without the `streams`
    /// feature (every call is one stream, as `--single-stream` compiles it), which leaves
    /// the outline list and stream tasks out of the build.
    #[inline]
    fn on_current_stream(&self, k: u32) -> bool {
        !cfg!(feature = "streams") || self.stream_of(k) == self.stream
    }

    /// Whether ready kernels of other streams wait on the outline list.
    #[inline]
    fn has_outline(&self) -> bool {
        cfg!(feature = "streams") && self.out_head != NIL
    }
}
impl Program<'_> {
    /// Start `function` (see [`raw::execute`](super::raw::execute)), optionally with TFRT's
    /// *asynchronous kick-off*: the frame and result placeholders are made now, the kernels
    /// start in a new work-queue task.
    ///
    /// # Safety
    /// The contract of [`raw`](super::raw).
    pub(crate) unsafe fn execute_with(
        &self,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
        asynchronous: bool,
    ) {
        // SAFETY: forwarded from this function's contract.
        let Some((frame, body)) = (unsafe { self.prepare(exec, function, args, results) }) else { return };
        // Deep nesting (recursion) continues in a task instead of growing the stack.
        let (_level, depth) = Level::enter(Nesting::Calls);
        let asynchronous = asynchronous || depth > exec.host().max_call_depth();
        if asynchronous {
            return kick_off_in_task(exec, frame, &body, args);
        }
        kick_off(&frame, &body, args);
    }

    /// Steps 1-2 of a call (docs/execution.md): check the call, allocate the frame and set the result
    /// placeholders. `None` when the call is already complete (error results, or a native
    /// function ran). Not inlined: its temporaries (a `Function` copies the whole `BefFile`)
    /// would otherwise stay in `execute_with`'s frame, which every nested call adds.
    ///
    /// # Safety
    /// The contract of [`raw`](super::raw).
    #[inline(never)]
    unsafe fn prepare<'p>(
        &'p self,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) -> Option<(Frame, Body<'p>)> {
        let fail = |why: Failure<'_>| {
            fill_error(exec, results, why);
            None
        };
        // The record, not a `Function` view, which would copy the whole file view.
        let file = &self.file;
        let Some(rec) = file.function_record(function) else {
            return fail(Failure::NoFunction(function));
        };
        if args.len() != rec.num_args as usize || results.len() != rec.num_results as usize {
            let want = (rec.num_args, rec.num_results);
            let name = file.str_verified(rec.name);
            return fail(Failure::Arity { name, want, args: args.len(), results: results.len() });
        }
        if rec.kind == crate::bef::format::FUNC_NATIVE {
            #[cfg(feature = "native")]
            if let Some(entry) = self.native(function) {
                super::native::call(exec, entry, args, results);
                return None;
            }
            return fail(Failure::NativeMissing(file.str_verified(rec.name)));
        }
        // SAFETY: forwarded from this function's contract.
        let Some(frame) = (unsafe { Frame::new(self, exec, function, rec) }) else {
            return fail(Failure::NoFrame(rec.frame_bytes64));
        };
        let regs = file.registers_of(rec);
        // Result placeholders: one forwarding value per returned register, shared by every
        // result slot that returns it.
        for (slot, &r) in results.iter().zip(file.result_regs_of(rec)) {
            let existing = frame.reg(r).load(Ordering::Acquire);
            if existing.is_null() {
                let Ok(p) = IndirectAsyncValue::new(exec.allocator()) else {
                    slot.set(Some(failure(exec, Failure::NoResult)));
                    continue;
                };
                let p = p.into_rc();
                p.add_refs(regs[r as usize].num_users);
                slot.set(Some(p.clone()));
                frame.reg(r).store(p.into_raw().as_ptr().map_addr(|a| a | PLACEHOLDER), Ordering::Release);
            } else {
                let p = core::ptr::NonNull::new(existing.map_addr(|a| a & !PLACEHOLDER)).map(|p| {
                    // SAFETY: the register holds references to the placeholder; we add one.
                    unsafe { RcAsyncValue::clone_from_ptr(p) }
                });
                slot.set(p);
            }
        }
        let body = Body::of_function(self, function)?; // `function` exists: see above
        Some((frame, body))
    }
}

/// The asynchronous kick-off's second half: steps 3-4 in a new task, with the arguments
/// captured (more than [`ASYNC_ARGS`] start synchronously instead). Kept out of
/// `execute_with`, whose frame every nested call adds to the stack.
#[inline(never)]
fn kick_off_in_task(exec: &ExecutionContext<'_>, frame: Frame, body: &Body<'_>, args: &[RcAsyncValue]) {
    let Ok(held) = heapless::Vec::<RcAsyncValue, ASYNC_ARGS>::from_slice(args) else {
        return kick_off(&frame, body, args); // too many arguments to carry: start it here
    };
    let task = move || {
        if let Some(f) = Body::of(&frame) {
            kick_off(&frame, &f, &held);
        }
    };
    if let Err(oom) = exec.host().enqueue_work(task) {
        (oom.into_inner())(); // no memory for a task: start it here after all
    }
}

/// Arguments an asynchronous kick-off can carry into its task; a call with more starts
/// synchronously instead.
const ASYNC_ARGS: usize = 16;

/// Steps 3-4 of a call (docs/execution.md): the pseudo kernel (zero-operand kernels in textual order, then the
/// arguments), then processing of the ready queue.
#[inline(never)] // keeps `execute_with`'s frame, which every nested call adds, small
fn kick_off(frame: &Frame, f: &Body<'_>, args: &[RcAsyncValue]) {
    let regs = f.regs;
    let mut queue = ReadyQueue::of(frame, f, f.root_stream, NIL);
    for (k, kr) in f.kernels.iter().enumerate() {
        if kr.num_args() == 0 {
            notify(frame, k as u32, &mut queue);
        }
    }
    for (i, a) in args.iter().enumerate() {
        if regs[i].num_uses > 0 {
            publish(frame, f, a.clone(), i as u32, &regs[i], &mut queue);
        }
    }
    process(frame, f, &mut queue);
}

/// Why a call or a kernel could not run (the diagnostics are built in the cold [`failure`]
/// so the hot paths, which nest once per call level, keep small stack frames).
pub(super) enum Failure<'a> {
    NoFunction(u32),
    Arity { name: &'a str, want: (u32, u32), args: usize, results: usize },
    NativeMissing(&'a str),
    NoFrame(u32),
    NoResult,
    NoMemoryToWait,
    NoMemoryForCall(&'a str),
    OperandsUndefined(&'a str),
    NoMemoryForAttributes(&'a str),
    NoResultSet,
}

/// The error value for `why`.
#[cold]
#[inline(never)]
pub(super) fn failure(exec: &ExecutionContext<'_>, why: Failure<'_>) -> RcAsyncValue {
    let d = match why {
        Failure::NoFunction(i) => crate::diag!(NotFound, "no function with index {}", i),
        Failure::Arity { name, want, args, results } => crate::diag!(
            InvalidArgument,
            "function '{}' takes {} arguments and returns {} results; called with {} and {}",
            name,
            want.0,
            want.1,
            args,
            results
        ),
        Failure::NativeMissing(name) => {
            crate::diag!(Unimplemented, "native function '{}' is not registered", name)
        }
        Failure::NoFrame(bytes) => {
            crate::diag!(ResourceExhausted, "Cannot allocate {} bytes for an executor frame", bytes)
        }
        Failure::NoResult => crate::diag!(ResourceExhausted, "no memory for a result"),
        Failure::NoMemoryToWait => crate::diag!(ResourceExhausted, "no memory to wait for a value"),
        Failure::NoMemoryForCall(k) => crate::diag!(ResourceExhausted, "no memory to call kernel '{}'", k),
        Failure::OperandsUndefined(k) => {
            crate::diag!(Internal, "kernel '{}' ran before its operands were defined", k)
        }
        Failure::NoMemoryForAttributes(k) => {
            crate::diag!(ResourceExhausted, "no memory for the attributes of '{}'", k)
        }
        Failure::NoResultSet => Diagnostic::new(ErrorCode::Internal, "kernel did not set a result"),
    };
    RcAsyncValue::error_or_oom(exec.allocator(), d)
}

/// Every result slot gets one shared error value for `why`.
#[cold]
#[inline(never)]
fn fill_error(exec: &ExecutionContext<'_>, results: &[Cell<Option<RcAsyncValue>>], why: Failure<'_>) {
    let e = failure(exec, why);
    for r in results {
        r.set(Some(e.clone()));
    }
}

#[inline]
pub(super) fn notify(frame: &Frame, k: u32, queue: &mut ReadyQueue<'_>) {
    if count_down(frame, k) {
        queue.push_ready(frame, k);
    }
}

/// Count down kernel `k`'s ready count: `true` when this was its last operand.
#[inline]
fn count_down(frame: &Frame, k: u32) -> bool {
    let ready = frame.ready(k);
    // The last operand readies the kernel. A frame no other thread can reach counts down
    // without a locked instruction; its count is read only once that is known (a count
    // read before could be stale by another thread's decrement).
    if frame.exclusive() {
        #[cfg(loom)]
        EXCLUSIVE_COUNTDOWNS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        let left = ready.load(Ordering::Relaxed);
        ready.store(left.wrapping_sub(1), Ordering::Relaxed);
        left == 1
    } else {
        ready.load(Ordering::Acquire) == 1 || ready.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

impl ReadyQueue<'_> {
    /// Queue kernel `k`, just readied: on the inline list when it is on the current stream,
    /// else at the end of the outline list.
    #[inline]
    fn push_ready(&mut self, frame: &Frame, k: u32) {
        if self.on_current_stream(k) {
            frame.set_link(k, self.inline);
            self.inline = k;
        } else {
            frame.set_link(k, NIL);
            if self.out_tail == NIL {
                self.out_head = k;
            } else {
                frame.set_link(self.out_tail, k);
            }
            self.out_tail = k;
            self.out_len += 1;
        }
    }
}

/// Process the ready queue (docs/execution.md): run inline kernels LIFO; whenever the inline list runs dry, adopt
/// the stream of the first outline kernel; after each step hand the outline to the queue.
fn process(frame: &Frame, f: &Body<'_>, queue: &mut ReadyQueue<'_>) {
    if queue.has_outline() {
        flush_outline(frame, queue, queue.inline == NIL);
    }
    while queue.inline != NIL {
        let k = queue.inline;
        queue.inline = frame.link(k);
        run_kernel(frame, f, k, queue);
        if queue.has_outline() {
            flush_outline(frame, queue, queue.inline == NIL);
        }
    }
}

/// "Switch" (when `switch` is set: the first outline kernel's stream becomes current and
/// its kernels move to the inline list, using the reference's exchange partition so the
/// order matches), then "enqueue outline": one task per stream, in ascending stream order.
fn flush_outline(frame: &Frame, queue: &mut ReadyQueue<'_>, switch: bool) {
    let (head, n) = (queue.out_head, queue.out_len);
    queue.out_head = NIL;
    queue.out_tail = NIL;
    queue.out_len = 0;
    let links = (|k| frame.link(k), |k, next| frame.set_link(k, next));
    let Some(rest) = order_outline(head, n, switch, links, |k| queue.stream_of(k)) else {
        return switch_partitioned(frame, queue, head, n);
    };
    if switch {
        queue.stream = queue.stream_of(head);
        frame.set_link(head, queue.inline);
        queue.inline = head;
    }
    enqueue_streams(frame, queue, rest);
}

/// The order [`flush_outline`] gives the `n` kernels of the outline list at `head` (linked
/// through `links`), without the first one when `switch` adopts it: the head of the rest
/// sorted stably by stream, as the reference's exchange partition and (stream, position)
/// sort leave it. `None` when `switch` is set and the first kernel's stream occurs again,
/// which needs the partition itself ([`switch_partitioned`]).
fn order_outline(
    head: u32,
    n: usize,
    switch: bool,
    (link, set_link): (impl Fn(u32) -> u32 + Copy, impl Fn(u32, u32) + Copy),
    stream_of: impl Fn(u32) -> u32 + Copy,
) -> Option<u32> {
    let mut first = head;
    if switch {
        let s = stream_of(head);
        let (mut before_last, mut prev, mut k) = (NIL, head, link(head));
        while k != NIL {
            if stream_of(k) == s {
                return None;
            }
            let after = link(k);
            if after == NIL {
                before_last = prev;
            }
            prev = k;
            k = after;
        }
        // Alone in its stream, the first kernel is all the partition moves; it swaps places
        // with the last kernel, which thus leads the rest.
        first = link(head);
        if n > 2 {
            let last = link(before_last);
            set_link(before_last, NIL);
            set_link(last, first);
            first = last;
        }
    }
    Some(sort_list(first, link, set_link, stream_of))
}

/// [`flush_outline`] with the switch when the first kernel's stream occurs more than once:
/// the reference's exchange partition over a buffer of the `n` kernels from `head`.
#[cold]
fn switch_partitioned(frame: &Frame, queue: &mut ReadyQueue<'_>, head: u32, n: usize) {
    let mut items = CallBuf::empty();
    let mut next = head;
    let collected = items.fill(
        frame.exec().allocator(),
        n,
        core::iter::from_fn(|| {
            let k = next;
            next = if k == NIL { NIL } else { frame.link(k) };
            (k != NIL).then_some(k)
        }),
    );
    if !collected {
        // No memory to order them: every outline kernel becomes its own task, in list order
        // (still correct, only the order differs from the reference).
        let mut k = head;
        while k != NIL {
            let after = frame.link(k);
            frame.set_link(k, NIL);
            enqueue_stream(frame, queue.stream_of(k), k);
            k = after;
        }
        return;
    }
    let items = items.as_mut_slice();
    let s = queue.stream_of(items[0]);
    let stream_of = |k: u32| queue.stream_of(k);
    let (mut i, mut j) = (0, items.len());
    loop {
        while i < j && stream_of(items[i]) != s {
            i += 1;
        }
        if i == j {
            break;
        }
        j -= 1;
        while j > i && stream_of(items[j]) == s {
            j -= 1;
        }
        if i == j {
            break;
        }
        items.swap(i, j);
        i += 1;
    }
    queue.stream = s;
    for &k in &items[i..] {
        frame.set_link(k, queue.inline);
        queue.inline = k;
    }
    // The rest, relinked in buffer order, goes to the queue by stream.
    let mut rest = NIL;
    for &k in items[..i].iter().rev() {
        frame.set_link(k, rest);
        rest = k;
    }
    let sorted =
        sort_list(rest, |k| frame.link(k), |k, next| frame.set_link(k, next), |k| queue.stream_of(k));
    enqueue_streams(frame, queue, sorted);
}

/// Sort the list starting at `head` (linked through `link`/`set_link`) by `key`, stably,
/// and return its new head: a natural merge sort with no buffer and a few hundred bytes of
/// code (`sort_unstable` costs kilobytes of flash). Each pass cuts the list into ascending
/// runs and merges them in pairs, so a sorted list, as the outline list of independent
/// streams usually is (the compiler numbers streams from the end of a block, and a value's
/// users are readied last first), takes one pass.
fn sort_list(
    mut head: u32,
    link: impl Fn(u32) -> u32 + Copy,
    set_link: impl Fn(u32, u32) + Copy,
    key: impl Fn(u32) -> u32 + Copy,
) -> u32 {
    loop {
        let (mut out, mut tail, mut merged) = (NIL, NIL, 0);
        let mut k = head;
        while k != NIL {
            let (a, after_a) = take_run(k, link, set_link, key);
            if k == head && after_a == NIL {
                return a; // one run: sorted already
            }
            let (b, after_b) =
                if after_a == NIL { (NIL, NIL) } else { take_run(after_a, link, set_link, key) };
            // Merge, taking from `a` on ties (stability), onto the output.
            let (mut a, mut b) = (a, b);
            while a != NIL || b != NIL {
                let take_a = b == NIL || (a != NIL && key(a) <= key(b));
                let m = if take_a { a } else { b };
                if take_a {
                    a = link(a);
                } else {
                    b = link(b);
                }
                if tail == NIL {
                    out = m;
                } else {
                    set_link(tail, m);
                }
                tail = m;
            }
            merged += 1;
            k = after_b;
        }
        if tail != NIL {
            set_link(tail, NIL);
        }
        head = out;
        if merged <= 1 {
            return head;
        }
    }
}

/// Detach the run at the front of the list at `k` (its longest ascending prefix); returns
/// the run, ending in `NIL`, and what follows it.
fn take_run(
    k: u32,
    link: impl Fn(u32) -> u32,
    set_link: impl Fn(u32, u32),
    key: impl Fn(u32) -> u32,
) -> (u32, u32) {
    let (mut end, mut next) = (k, link(k));
    while next != NIL && key(next) >= key(end) {
        end = next;
        next = link(next);
    }
    set_link(end, NIL);
    (k, next)
}

/// Hand the stream-sorted list at `head` to the work queue: one task per stream, in list
/// order, each running its kernels last-first (its ready list is built by pushing). Up to
/// [`MAX_BATCH`] tasks share one block ([`Batch`]); without memory for it each gets its own.
fn enqueue_streams(frame: &Frame, queue: &ReadyQueue<'_>, head: u32) {
    // Tasks not yet given a place in a batch.
    let mut tasks = 0;
    let mut k = head;
    let mut prev = None;
    while k != NIL {
        let s = queue.stream_of(k);
        tasks += usize::from(prev != Some(s));
        prev = Some(s);
        k = frame.link(k);
    }
    let work_queue = frame.exec().host().work_queue();
    let mut batch = None;
    let mut k = head;
    while k != NIL {
        let s = queue.stream_of(k);
        let mut ready = NIL;
        while k != NIL && queue.stream_of(k) == s {
            let after = frame.link(k);
            frame.set_link(k, ready);
            ready = k;
            k = after;
        }
        if batch.is_none() && tasks > 1 {
            let len = tasks.min(MAX_BATCH);
            batch = Batch::new(frame, len);
            tasks -= len;
        }
        match &mut batch {
            Some(b) => {
                b.push(s, ready);
                if b.is_full()
                    && let Some(full) = batch.take()
                {
                    full.enqueue(work_queue);
                }
            }
            None => enqueue_stream(frame, s, ready),
        }
    }
}

/// Stream tasks per shared block: small enough that the block stays a small allocation
/// (under 1 KiB, where glibc's malloc serves from its bins without consolidating).
const MAX_BATCH: usize = 16;

/// The body of a stream task: process the ready list `inline` (kernels of `stream`).
pub(super) fn run_stream(frame: &Frame, stream: u32, inline: u32) {
    let Some(f) = Body::of(frame) else { return };
    let mut q = ReadyQueue::of(frame, &f, stream, inline);
    process(frame, &f, &mut q);
}

/// Enqueue a task that processes the ready list `inline` (kernels of `stream`).
fn enqueue_stream(frame: &Frame, stream: u32, inline: u32) {
    let task_frame = frame.retain();
    let task = move || run_stream(&task_frame, stream, inline);
    if let Err(oom) = frame.exec().host().enqueue_work(task) {
        (oom.into_inner())(); // no memory for a task: run it here after all
    }
}

/// Store `v` in register `r`, which has `users` kernel uses (holding one reference per use
/// from now on).
#[inline]
fn store(frame: &Frame, users: u32, v: RcAsyncValue, r: u32) {
    let reg = frame.reg(r);
    let current = reg.load(Ordering::Acquire);
    if current.addr() & PLACEHOLDER != 0 {
        return forward_placeholder(reg, current, users, v);
    }
    if users == 0 {
        return;
    }
    v.add_refs(users - 1);
    reg.store(v.into_raw().as_ptr(), Ordering::Release);
}

/// [`store`] into a function result's register, which holds the result's placeholder
/// (`current`): forward the placeholder to `v`, then drop the reference that stood for the
/// `tfrt.return` use. Kernel users receive the placeholder.
#[inline(never)]
fn forward_placeholder(reg: &AtomicPtr<AsyncValue>, current: *mut AsyncValue, users: u32, v: RcAsyncValue) {
    let p = current.map_addr(|a| a & !PLACEHOLDER);
    let Some(p) = core::ptr::NonNull::new(p) else { return };
    // SAFETY: the register owns `users + 1` references to the placeholder.
    let hold = unsafe { RcAsyncValue::from_raw(p) };
    IndirectAsyncValue::from_rc_unchecked(hold).forward_to(v);
    reg.store(if users == 0 { core::ptr::null_mut() } else { p.as_ptr() }, Ordering::Release);
}

/// Make `v`, the value of register `r` (whose record is `rec`), visible to its users. The
/// common case, an available value, is short; waiting is out of line.
fn publish(
    frame: &Frame,
    f: &Body<'_>,
    v: RcAsyncValue,
    r: u32,
    rec: &RegisterRecord,
    queue: &mut ReadyQueue<'_>,
) {
    let users = frame.program().file.pool_words(rec.users, rec.num_users as usize).unwrap_or(&[]);
    if v.is_available() || users.is_empty() {
        store(frame, rec.num_users, v, r);
        // Consumers in descending textual order (BEF stores them ascending).
        for &k in users.iter().rev() {
            notify(frame, k, queue);
        }
        return;
    }
    publish_unavailable(frame, f, v, r, rec, users, queue)
}

/// [`publish`] of a value that is not available yet: non-strict users start now, a waiter
/// readies the strict ones when it completes.
#[inline(never)]
fn publish_unavailable(
    frame: &Frame,
    f: &Body<'_>,
    v: RcAsyncValue,
    r: u32,
    rec: &RegisterRecord,
    users: &[u32],
    queue: &mut ReadyQueue<'_>,
) {
    let n = users.len() as u32;
    let kernels = f.kernels;
    let program = frame.program();
    let non_strict = |k: u32| program.entry(kernels[k as usize].code).is_non_strict();
    // Unavailable with users: non-strict users may start now; strict ones wait.
    let any_non_strict = users.iter().any(|k| non_strict(*k));
    let v = if any_non_strict {
        store(frame, n, v.clone(), r);
        for &k in users.iter().rev().filter(|k| non_strict(**k)) {
            notify(frame, k, queue);
        }
        // The strict users wait for what they will take from the register: `v`, or the
        // placeholder of a function result forwarded to it, which becomes available only
        // after `v` does (its forwarding waiter on `v` may run after ours).
        stored_value(frame, r, v)
    } else {
        v
    };
    // The continuation takes our reference (no count traffic); `handle` pushes its node,
    // which keeps the value alive until it runs (`push_waiter` touches nothing after).
    let handle = v.borrowed();
    let waiting = Continuation {
        frame: frame.retain(),
        value: v,
        r,
        stream: queue.stream,
        users: rec.users,
        num_users: rec.num_users,
        all_strict: !any_non_strict,
    };
    let alloc = frame.exec().allocator();
    match callback::new_data_node(alloc, callback::KIND_CLOSURE, waiting, run_continuation) {
        Ok(node) => handle.push_waiter(node),
        Err(oom) => {
            // No memory to wait: the users see an out-of-memory error instead.
            drop(oom);
            if !any_non_strict {
                store(frame, n, failure(frame.exec(), Failure::NoMemoryToWait), r);
            }
            for &k in users.iter().rev().filter(|k| !non_strict(**k)) {
                notify(frame, k, queue);
            }
        }
    }
}

/// The value register `r` holds after [`store`] of `v`: `v` itself, or the function
/// result's placeholder that forwards to it.
fn stored_value(frame: &Frame, r: u32, v: RcAsyncValue) -> RcAsyncValue {
    let p = frame.reg(r).load(Ordering::Acquire);
    let Some(p) = NonNull::new(p.map_addr(|a| a & !PLACEHOLDER)) else { return v };
    // SAFETY: the register holds a reference for each remaining use, and the caller's
    // strict users have not run yet; the handle is not dropped, its clone is one more.
    let held = ManuallyDrop::new(unsafe { RcAsyncValue::from_raw(p) });
    if held.ptr_eq(&v) { v } else { RcAsyncValue::clone(&held) }
}

/// What a kernel waiting on an unavailable value needs when it becomes available: a waiter
/// node on the value (no closure), so that it can be re-queued as a task without allocating.
struct Continuation {
    frame: Frame,
    value: RcAsyncValue,
    r: u32,
    stream: u32,
    /// The register's users list (its record's: with `all_strict`, a continuation that
    /// readies no kernel needs nothing else of the function).
    users: u32,
    num_users: u32,
    /// Every user is strict: the value is stored and all of them count down now (with a
    /// non-strict user, it was stored when published and only the strict ones wait).
    all_strict: bool,
}

/// `invoke` of a [`Continuation`] node: store the value and run the strict users inline,
/// or, with [`MAX_STACK_DEPTH`] waiters already nested, hand this very node to the work
/// queue as a task (it runs this function again on a fresh stack). Needs no memory, so even
/// an exhausted allocator cannot make a long waiter chain nest.
unsafe fn run_continuation(node: NonNull<CallbackHeader>, run: bool) {
    if !run {
        // SAFETY: `invoke`'s contract: a `Continuation` node we own.
        drop(unsafe { callback::take_data::<Continuation>(node) });
        return;
    }
    let (level, depth) = Level::enter(Nesting::Waiters);
    if depth >= MAX_STACK_DEPTH {
        drop(level);
        // SAFETY: we own the node; its data stays in place for the task.
        let host = unsafe { (*callback::data_ptr::<Continuation>(node)).frame.exec().host() };
        // SAFETY: the node is detached from the value's waiter list and owned by us; a task
        // node has the same layout and runs `invoke(node, true)`, this function.
        host.work_queue().add_task(unsafe { Task::from_node(node) });
        return;
    }
    // SAFETY: `invoke`'s contract: a `Continuation` node we own; freed here.
    let c = unsafe { callback::take_data::<Continuation>(node) };
    on_available_now(c);
    drop(level);
}

/// The value `c` waited for is available: store it (unless stored already for non-strict
/// users) and count its strict users down. Only when that readies a kernel does the ready
/// queue get set up and run, so a value that is one of many a kernel waits for, as in a
/// fan-in, costs no more than the count-down (nor decodes the function, when every user is
/// strict).
fn on_available_now(c: Continuation) {
    let frame = &c.frame;
    // The function's tables, needed up front only to pick out the strict users.
    let mut body = None;
    if c.all_strict {
        store(frame, c.num_users, c.value, c.r);
    } else {
        let Some(f) = Body::of(frame) else { return };
        body = Some(f);
    }
    let program = frame.program();
    let users = program.file.pool_words(c.users, c.num_users as usize).unwrap_or(&[]);
    // Set up when the first user becomes ready.
    let mut queue = None;
    for &k in users.iter().rev() {
        if let Some(f) = &body
            && program.entry(f.kernels[k as usize].code).is_non_strict()
        {
            continue;
        }
        if !count_down(frame, k) {
            continue;
        }
        if queue.is_none() {
            if body.is_none() {
                body = Body::of(frame);
            }
            // (`Body::of` succeeded for this function when the value was published, and
            // the program does not change, so this returns only on a broken invariant.)
            let Some(f) = &body else { return };
            queue = Some(ReadyQueue::of(frame, f, c.stream, NIL));
        }
        if let Some(q) = &mut queue {
            q.push_ready(frame, k);
        }
    }
    if let (Some(f), Some(mut q)) = (&body, queue) {
        process(frame, f, &mut q);
    }
}

#[inline(always)] // the ready loop's body: one copy, in `process`
fn run_kernel(frame: &Frame, f: &Body<'_>, k: u32, queue: &mut ReadyQueue<'_>) {
    let program = frame.program();
    let kr = &f.kernels[k as usize];
    // A kernel the load planned to run on register words (docs/execution.md, "Scalar
    // registers") never takes the generic path: its operands hold words, not values.
    #[cfg(feature = "scalar-registers")]
    if let Some(&mode) = f.modes.get(k as usize)
        && mode & super::scalar::SCALAR != 0
    {
        return super::scalar::run(frame, f, kr, mode, queue);
    }
    let arg_regs = program.file.kernel_args(kr);
    let n_res = kr.num_results() as usize;
    let exec = frame.exec();
    // Operands and result slots: plain arrays on the stack for a narrow kernel (the common
    // case: no buffer bookkeeping), one allocator block for a wide one. Every slot is
    // emptied by the publication below, so neither array needs drop glue.
    let mut args_inline = [const { MaybeUninit::<RcAsyncValue>::uninit() }; INLINE];
    // (All slots start empty: a few vector stores, where emptying only `n_res` of them
    // costs a call to `memset`.)
    let slots_inline = ManuallyDrop::new([const { Cell::new(None::<RcAsyncValue>) }; INLINE]);
    let mut wide = None;
    let (args_base, slots_base) = if arg_regs.len() <= INLINE && n_res <= INLINE {
        (args_inline.as_mut_ptr().cast::<RcAsyncValue>(), slots_inline.as_ptr())
    } else {
        let Some(block) = WideArrays::new(exec.allocator(), arg_regs.len(), n_res) else {
            return no_memory_for_call(frame, f, kr, arg_regs, queue);
        };
        let bases = (block.args(), block.slots());
        wide = Some(block);
        bases
    };
    let entry = program.entry(kr.code);
    let strict = !entry.is_non_strict();
    let mut err = exec.request().cancel_value();
    let mut n = 0;
    for &a in arg_regs {
        if let Some(v) = frame.take(a) {
            if strict && v.is_error() {
                err = Some(v.clone());
            }
            // SAFETY: `n < arg_regs.len()`, the capacity of the array at `args_base`.
            unsafe { args_base.add(n).write(v) };
            n += 1;
        }
    }
    // SAFETY: the first `n` operands were written above and are read out exactly once below
    // (a panicking kernel leaks them, which is safe); `n_res` slots are initialised (`None`).
    let (taken, slots) = unsafe {
        (core::slice::from_raw_parts(args_base, n), core::slice::from_raw_parts(slots_base, n_res))
    };
    if err.is_none() && n == arg_regs.len() && kr.num_attrs() == 0 {
        // The common case, inline: every operand is there, no error, no attributes.
        let regions = if kr.num_regions() == 0 { &[][..] } else { program.file.kernel_regions(kr) };
        call_entry(program, exec, kr, entry, taken, &[], regions, slots, queue);
    } else {
        call_kernel(frame, kr, entry, taken, arg_regs.len(), slots, err, queue);
    }
    // 4. Operands die, in order, before results are published. The block of one whose last
    // reference dies here is kept for the next kernel's result (docs/execution.md, "Result
    // blocks").
    for i in 0..n {
        // SAFETY: initialised above, read once; `taken` is not used again.
        if let Ok(block) = unsafe { args_base.add(i).read() }.into_spare() {
            queue.spare.set(Some(block));
        }
    }
    // 5. Results in order.
    for (i, c) in slots.iter().enumerate() {
        publish_result(frame, f, kr, i, c.take(), queue);
    }
    drop(wide); // its elements were all moved out above
}

/// No memory for a wide kernel's arrays: its operand references are dropped and every
/// result is an out-of-memory error.
#[cold]
#[inline(never)]
fn no_memory_for_call(
    frame: &Frame,
    f: &Body<'_>,
    kr: &KernelRecord,
    arg_regs: &[u32],
    queue: &mut ReadyQueue<'_>,
) {
    for &a in arg_regs {
        drop(frame.take(a));
    }
    let e = failure(frame.exec(), Failure::NoMemoryForCall(frame.program().file.kernel_name(kr.code)));
    for i in 0..kr.num_results() as usize {
        publish_result(frame, f, kr, i, Some(e.clone()), queue);
    }
}

/// Steps 1-3 of running kernel `kr` (docs/execution.md) on its operands `args` (`want` of
/// them were expected): cancellation or the last error operand `err` fills every result
/// slot; otherwise the kernel runs. A non-strict kernel (`tfrt.call`) receives error
/// operands like any other value: the callee's own kernels skip on them, as TFRT's
/// non-strict function execution does.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn call_kernel(
    frame: &Frame,
    kr: &KernelRecord,
    entry: &KernelEntry,
    args: &[RcAsyncValue],
    want: usize,
    slots: &[Cell<Option<RcAsyncValue>>],
    err: Option<RcAsyncValue>,
    queue: &ReadyQueue<'_>,
) {
    let program = frame.program();
    let file = &program.file;
    let exec = frame.exec();
    let mut attr_buf = CallBuf::empty();
    let (attr_idx, _) = file.kernel_attrs(kr);
    if let Some(e) = err {
        for s in slots {
            s.set(Some(e.clone()));
        }
    } else if args.len() != want {
        fill_error(exec, slots, Failure::OperandsUndefined(file.kernel_name(kr.code)));
    } else if let Some(attrs) = attrs_of(&mut attr_buf, exec.allocator(), file, attr_idx) {
        call_entry(program, exec, kr, entry, args, attrs, file.kernel_regions(kr), slots, queue);
    } else {
        fill_error(exec, slots, Failure::NoMemoryForAttributes(file.kernel_name(kr.code)));
    }
}

/// Call `entry`, the implementation of kernel `kr`, on its operands, attributes, regions and
/// result slots.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn call_entry(
    program: &Program<'_>,
    exec: &ExecutionContext<'_>,
    kr: &KernelRecord,
    entry: &KernelEntry,
    args: &[RcAsyncValue],
    attrs: &[AttrRef<'_>],
    regions: &[u32],
    slots: &[Cell<Option<RcAsyncValue>>],
    queue: &ReadyQueue<'_>,
) {
    let kf = KernelFrame::for_program(
        exec,
        args,
        attrs,
        slots,
        regions,
        program,
        &queue.spare,
        kr.location,
        entry.proved,
    );
    (entry.func())(&kf);
}

/// The kernel's attributes as a slice: empty without touching a buffer when there are none.
fn attrs_of<'b, 'a: 'b>(
    buf: &'b mut CallBuf<AttrRef<'a>>,
    alloc: crate::allocator::Allocator,
    file: &crate::bef::BefFile<'a>,
    idx: &[u32],
) -> Option<&'b [AttrRef<'a>]> {
    if idx.is_empty() {
        return Some(&[]);
    }
    buf.fill(alloc, idx.len(), idx.iter().filter_map(|a| file.attr_ref(*a))).then(|| buf.as_slice())
}

/// Publish result `i` of kernel `kr` (a missing result becomes an error value).
pub(super) fn publish_result(
    frame: &Frame,
    f: &Body<'_>,
    kr: &KernelRecord,
    i: usize,
    v: Option<RcAsyncValue>,
    queue: &mut ReadyQueue<'_>,
) {
    let r = kr.first_result + i as u32;
    let v = match v {
        Some(v) => v,
        None => failure(frame.exec(), Failure::NoResultSet),
    };
    let rec = &f.regs[r as usize];
    if rec.num_uses == 0 {
        drop(v);
    } else {
        publish(frame, f, v, r, rec, queue);
    }
}

impl Invoke for Program<'_> {
    fn invoke(
        &self,
        _: InvokeToken,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) {
        // SAFETY: the token proves the call comes through a KernelFrame of a run (directly
        // or through its `Detached` handle), whose starter keeps the program and contexts
        // alive until all work of the run ends (the contract of `raw`); the callee's work is
        // part of that run.
        unsafe { self.execute_with(exec, function, args, results, false) }
    }

    fn invoke_async(
        &self,
        _: InvokeToken,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) {
        // SAFETY: as for `invoke`.
        unsafe { self.execute_with(exec, function, args, results, true) }
    }

    fn attribute(&self, index: u32) -> Option<AttrRef<'_>> {
        self.file.attr_ref(index)
    }

    // (These two read the record: a `Function` view would copy the whole file view.)
    fn num_results(&self, function: u32) -> Option<usize> {
        self.file.function_record(function).map(|r| r.num_results as usize)
    }

    fn result_type(&self, function: u32, i: usize) -> Option<&str> {
        let r = self.file.function_record(function)?;
        self.file.result_types_of(r).get(i).map(|t| self.file.type_name(*t))
    }

    fn location(&self, index: u32) -> Option<LocRef<'_>> {
        self.file.loc_ref(index)
    }

    fn static_bytes(&self) -> Option<&'static [u8]> {
        self.static_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::{NIL, order_outline, sort_list};
    use core::cell::Cell;

    type List = heapless::Vec<u32, 40>;

    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// The list `0 -> 1 -> ... -> n-1` in a link array.
    fn chain(n: usize) -> [Cell<u32>; 40] {
        core::array::from_fn(|i| Cell::new(if i + 1 < n { i as u32 + 1 } else { NIL }))
    }

    /// The kernels of the list at `head`, in order.
    fn walk(links: &[Cell<u32>], mut k: u32) -> List {
        let mut out = List::new();
        while k != NIL {
            out.push(k).unwrap();
            k = links[k as usize].get();
        }
        out
    }

    /// The reference's flush over an array: exchange partition (with `switch`), then the
    /// rest sorted by (stream, position). Returns the rest's order.
    fn reference(streams: &[u32], switch: bool) -> List {
        let mut items: List = (0..streams.len() as u32).collect();
        let mut rest = items.len();
        if switch {
            let s = streams[0];
            let (mut i, mut j) = (0, items.len());
            loop {
                while i < j && streams[items[i] as usize] != s {
                    i += 1;
                }
                if i == j {
                    break;
                }
                j -= 1;
                while j > i && streams[items[j] as usize] == s {
                    j -= 1;
                }
                if i == j {
                    break;
                }
                items.swap(i, j);
                i += 1;
            }
            rest = i;
        }
        let mut keys: heapless::Vec<(u32, usize), 40> =
            items[..rest].iter().enumerate().map(|(pos, &k)| (streams[k as usize], pos)).collect();
        keys.sort_unstable();
        keys.iter().map(|&(_, pos)| items[pos]).collect()
    }

    #[test]
    fn outline_order_matches_the_reference_partition_and_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut checked = 0;
        for round in 0..4000 {
            let n = 1 + (xorshift(&mut seed) % 12) as usize;
            let kinds = 1 + (xorshift(&mut seed) % 6) as u32;
            let streams: List = (0..n).map(|_| (xorshift(&mut seed) % u64::from(kinds)) as u32).collect();
            let switch = round % 2 == 0;
            let links = chain(n);
            let ls = (|k: u32| links[k as usize].get(), |k: u32, v| links[k as usize].set(v));
            let Some(k) = order_outline(0, n, switch, ls, |k| streams[k as usize]) else {
                assert!(switch && streams[1..].contains(&streams[0]));
                continue;
            };
            assert_eq!(walk(&links, k), reference(&streams, switch), "streams {streams:?}, switch {switch}");
            checked += 1;
        }
        assert!(checked > 2500, "{checked}");
    }

    #[test]
    fn sort_list_is_a_stable_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for (n, shape) in (0..40usize).flat_map(|n| (0..4).map(move |shape| (n, shape))) {
            // Random keys, then runs that go up, down, and down with ties.
            let keys: List = (0..n)
                .map(|i| {
                    let noise = (xorshift(&mut seed) % 8) as u32;
                    match shape {
                        0 => noise,
                        1 => (i as u32 % 9) * 3 + noise % 2,
                        2 => 200 - i as u32 * 2 - noise % 2,
                        _ => 100 - (i as u32 / 3) % 7,
                    }
                })
                .collect();
            let links = chain(n);
            let head = if n == 0 { NIL } else { 0 };
            let sorted = sort_list(
                head,
                |k| links[k as usize].get(),
                |k, v| links[k as usize].set(v),
                |k| keys[k as usize],
            );
            let mut want: List = (0..n as u32).collect();
            want.sort_by_key(|k| keys[*k as usize]); // stable
            assert_eq!(walk(&links, sorted), want, "keys {keys:?}");
        }
    }
}
