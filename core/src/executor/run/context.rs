//! The run context: one thread of control working through one call's ready kernels
//! (docs/execution.md). [`Run`] holds the call's frame, the function's tables and the ready
//! queue; the steps of the algorithm are its methods, one file per concern: processing
//! here, the outline list in `outline`, publication in `publish`, running a kernel in
//! `dispatch` and `scalar_dispatch`.

use core::cell::Cell;

use super::frame::Frame;
use crate::async_value::{RcAsyncValue, Spare};
use crate::bef::BefFile;
use crate::bef::format::{KernelRecord, RegisterRecord};
use crate::executor::Program;
use crate::executor::list_sort::NIL;

/// Ready kernels of one thread of control (docs/execution.md): those of the current
/// stream run inline (LIFO), the others (the outline list, in notification order) go to the
/// work queue. Both lists are threaded through the frame's link array: a kernel becomes
/// ready once per call, so it is on at most one list.
pub(super) struct ReadyQueue<'a> {
    /// Stream id of each kernel (empty: every kernel is in stream 0).
    streams: &'a [u32],
    pub(super) stream: u32,
    pub(super) inline: u32,
    pub(super) out_head: u32,
    pub(super) out_tail: u32,
    pub(super) out_len: usize,
    /// The block of the last operand whose last reference a kernel dropped, offered to the
    /// next kernel's result (docs/execution.md, "Result blocks"); freed with the queue.
    pub(super) spare: Cell<Option<Spare>>,
}

/// The tables of a function the executor reads per kernel, fetched once per call (each
/// `Function` accessor re-checks bounds and alignment). Small on purpose: a `Function`
/// carries a copy of the whole `BefFile`, and every nested call keeps its `Body` on the stack.
pub(super) struct Body<'a> {
    pub(super) regs: &'a [RegisterRecord],
    pub(super) kernels: &'a [KernelRecord],
    /// Each kernel's planned mode (docs/execution.md, "Scalar registers"); empty when every
    /// kernel runs the generic path.
    #[cfg(feature = "scalar-registers")]
    pub(super) modes: &'a [u8],
    /// Each kernel's prepared-state index into `blocks` (docs/execution.md, "Prepared
    /// state"); empty when no kernel has any.
    #[cfg(feature = "prepared")]
    prepared: (&'a [u32], &'a [crate::kernel::Prepared]),
    /// Stream of each kernel (empty: all in stream 0).
    streams: &'a [u32],
    pub(super) root_stream: u32,
}

impl<'a> Body<'a> {
    /// Kernel `k`'s prepared state, if the load made any.
    #[inline(always)]
    pub(super) fn prepared(&self, k: u32) -> Option<&'a crate::kernel::Prepared> {
        #[cfg(feature = "prepared")]
        return self.prepared.1.get(*self.prepared.0.get(k as usize)? as usize);
        #[cfg(not(feature = "prepared"))]
        {
            let _ = k;
            None
        }
    }

    /// The body of the function a frame runs.
    pub(super) fn of(frame: &Frame) -> Option<Body<'_>> {
        Body::of_function(frame.program(), frame.function())
    }

    /// The body of function `index` of `file`, straight from its record (a `Function` would
    /// copy the whole `BefFile`, and tasks ask for it every time they start).
    #[inline(never)]
    pub(super) fn of_function(program: &'a Program<'_>, index: u32) -> Option<Body<'a>> {
        let file: &BefFile<'_> = &program.file;
        let rec = file.function_record(index)?;
        Some(Body {
            regs: file.registers_of(rec),
            kernels: file.kernels_of(rec),
            #[cfg(feature = "scalar-registers")]
            modes: program.modes_of(rec),
            #[cfg(feature = "prepared")]
            prepared: program.prepared_of(rec),
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
    pub(super) fn of(frame: &Frame, f: &Body<'a>, stream: u32, inline: u32) -> Self {
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
    pub(super) fn stream_of(&self, k: u32) -> u32 {
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

    /// One operand of kernel `k` of `frame`'s call arrived: count it down, and queue the
    /// kernel when that was its last.
    #[inline]
    pub(super) fn notify(&mut self, frame: &Frame, k: u32) {
        if frame.count_down(k) {
            self.push_ready(frame, k);
        }
    }

    /// Queue kernel `k`, just readied: on the inline list when it is on the current stream,
    /// else at the end of the outline list.
    #[inline]
    pub(super) fn push_ready(&mut self, frame: &Frame, k: u32) {
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

/// One thread of control of a call: the frame, the function's tables and the ready queue,
/// which every step of the algorithm reads and updates.
pub(super) struct Run<'r> {
    pub(super) frame: &'r Frame,
    pub(super) body: &'r Body<'r>,
    pub(super) queue: ReadyQueue<'r>,
}

impl<'r> Run<'r> {
    /// A run of `frame`'s call on `stream` (tables `body`), holding the ready list `inline`.
    #[inline]
    pub(super) fn new(frame: &'r Frame, body: &'r Body<'r>, stream: u32, inline: u32) -> Self {
        Run { frame, body, queue: ReadyQueue::of(frame, body, stream, inline) }
    }

    /// Steps 3-4 of a call (docs/execution.md): the pseudo kernel (zero-operand kernels in
    /// textual order, then the arguments), then processing of the ready queue.
    #[inline(never)] // keeps `execute_with`'s frame, which every nested call adds, small
    pub(super) fn kick_off(frame: &Frame, body: &Body<'_>, args: &[RcAsyncValue]) {
        let mut run = Run::new(frame, body, body.root_stream, NIL);
        for (k, kr) in body.kernels.iter().enumerate() {
            if kr.num_args() == 0 {
                run.notify(k as u32);
            }
        }
        let regs = body.regs;
        for (i, a) in args.iter().enumerate() {
            if regs[i].num_uses > 0 {
                run.publish(a.clone(), i as u32, &regs[i]);
            }
        }
        run.process();
    }

    /// The body of a stream task: process the ready list `inline` (kernels of `stream`).
    pub(super) fn run_stream(frame: &Frame, stream: u32, inline: u32) {
        let Some(body) = Body::of(frame) else { return };
        Run::new(frame, &body, stream, inline).process();
    }

    /// One operand of kernel `k` arrived: count it down, and queue it when that was its last.
    /// (Hot loops call `self.queue.notify` with the frame in a local: a callee that takes
    /// `&mut self` could change `self.frame`, so the compiler reloads it after each call.)
    #[inline]
    pub(super) fn notify(&mut self, k: u32) {
        self.queue.notify(self.frame, k);
    }

    /// Process the ready queue (docs/execution.md): run inline kernels LIFO; whenever the
    /// inline list runs dry, adopt the stream of the first outline kernel; after each step
    /// hand the outline to the queue.
    pub(super) fn process(&mut self) {
        let frame = self.frame;
        if self.queue.has_outline() {
            self.flush_outline(self.queue.inline == NIL);
        }
        while self.queue.inline != NIL {
            let k = self.queue.inline;
            self.queue.inline = frame.link(k);
            // (`hostrt_no_observer_hook` compiles the hook out of a `profile` build: the
            // baseline of scripts/bench_observer.sh.)
            #[cfg(all(feature = "profile", not(hostrt_no_observer_hook)))]
            if let Some(observer) = frame.exec().host().observer() {
                self.run_observed(k, observer);
            } else {
                self.run_kernel(k);
            }
            #[cfg(not(all(feature = "profile", not(hostrt_no_observer_hook))))]
            self.run_kernel(k);
            if self.queue.has_outline() {
                self.flush_outline(self.queue.inline == NIL);
            }
        }
    }

    /// [`run_kernel`](Self::run_kernel) between the observer's begin and end of kernel `k`
    /// (docs/profiling.md). Out of line: the unobserved loop stays as it was.
    #[cfg(all(feature = "profile", not(hostrt_no_observer_hook)))]
    #[inline(never)]
    fn run_observed(&mut self, k: u32, observer: &dyn crate::observe::Observer) {
        let (frame, body) = (self.frame, self.body);
        let program = frame.program();
        let kr = &body.kernels[k as usize];
        let span = crate::observe::KernelSpan {
            key: (program as *const Program<'_> as usize, frame.function(), k),
            name: program.file.kernel_name(kr.code),
            location: program.file.loc_ref(kr.location).map(|l| crate::observe::SpanLocation {
                file: l.file,
                line: l.line,
                column: l.column,
            }),
            allocator: frame.exec().allocator(),
        };
        let mark = observer.kernel_begin(&span);
        self.run_kernel(k);
        observer.kernel_end(&span, mark);
    }
}
