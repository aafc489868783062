//! Starting a call: the run half's `impl Program`. [`Program::call`] is the safe, blocking
//! way (it starts the function, waits for its results and for the work queue to go quiet,
//! and returns the results); `execute_with` is what it and `raw` start a call with (steps
//! 1-2 of docs/execution.md, then the run context's kick-off); calls from kernels come in
//! through [`Invoke`].

use core::cell::Cell;
use core::ops::Deref;

use super::context::{Body, Run};
use super::depth::{Level, Nesting};
use super::failure::{Failure, failure, fill_error};
use super::frame::{Frame, PLACEHOLDER};
use crate::async_value::{IndirectAsyncValue, RcAsyncValue};
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::executor::buf::CallBuf;
use crate::executor::load::Program;
use crate::host_context::{ExecutionContext, HostContext, RequestContext};
use crate::kernel::{AttrRef, Invoke, InvokeToken, LocRef};
use crate::sync::Ordering;
use crate::work_queue::AwaitError;

/// The results of a finished call, as many as the function returns, in order. Each is
/// available: a value, or an error value when that result failed.
///
/// Up to eight results live inline; more take one block from the host's allocator.
pub struct Results {
    /// The executor's result slots, kept as they are. Invariant: every slot holds a value,
    /// and none is written again.
    slots: CallBuf<Cell<Option<RcAsyncValue>>>,
}

impl core::fmt::Debug for Results {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter().map(|v| v.state())).finish()
    }
}

impl Deref for Results {
    type Target = [RcAsyncValue];
    fn deref(&self) -> &[RcAsyncValue] {
        let slots = self.slots.as_slice();
        // SAFETY: `Cell` and `RcAsyncValue` are `repr(transparent)`, so a slot has the layout
        // of an `Option` of a non-null pointer, whose `Some` is that pointer: a full slot is
        // an `RcAsyncValue`. Every slot is full and never written again (the invariant), so
        // the shared view cannot be invalidated while `self` is borrowed.
        unsafe { core::slice::from_raw_parts(slots.as_ptr().cast::<RcAsyncValue>(), slots.len()) }
    }
}

impl Results {
    /// Result `i` as a `T`. Fails with the result's own error when it is an error value,
    /// with `InvalidArgument` when it holds another type, with `OutOfRange` when there is
    /// no result `i`.
    pub fn get<T: Send + Sync + 'static>(&self, i: usize) -> Result<&T, Diagnostic> {
        // Static messages: firmware that reads results links no formatting for them.
        let Some(v) = (**self).get(i) else {
            return Err(Diagnostic::new(ErrorCode::OutOfRange, "no result with this index"));
        };
        if let Some(e) = v.get_error() {
            return Err(*e);
        }
        // (Built only on a mismatch: a `Diagnostic` is a few hundred bytes to fill.)
        v.get::<T>()
            .ok_or_else(|| Diagnostic::new(ErrorCode::InvalidArgument, "the result holds another type"))
    }
}

/// Why [`Program::call`] did not return results: a small `Copy` value, so firmware that only
/// counts failures links no formatting; `?` turns it into a [`Diagnostic`] where one is
/// wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallError {
    /// The program has no function of that name (`NOT_FOUND`).
    NotFound,
    /// The arguments are not as many as the function's parameters (`INVALID_ARGUMENT`).
    WrongArgumentCount,
    /// No memory to hold the results (`RESOURCE_EXHAUSTED`).
    OutOfMemory,
    /// The work queue reports that an argument or result can never become available
    /// (`UNAVAILABLE`).
    Deadlock(AwaitError),
}

impl CallError {
    /// The status code of this failure.
    pub fn code(self) -> ErrorCode {
        match self {
            CallError::NotFound => ErrorCode::NotFound,
            CallError::WrongArgumentCount => ErrorCode::InvalidArgument,
            CallError::OutOfMemory => ErrorCode::ResourceExhausted,
            CallError::Deadlock(_) => ErrorCode::Unavailable,
        }
    }
}

impl crate::diagnostic::DiagArg for CallError {
    fn write_diag(&self, out: &mut crate::diagnostic::MessageText) {
        let text = match self {
            CallError::NotFound => "no function of that name",
            CallError::WrongArgumentCount => "wrong number of arguments for the function",
            CallError::OutOfMemory => "no memory for the results of a call",
            CallError::Deadlock(e) => return e.write_diag(out),
        };
        out.push_str(text);
    }
}

impl core::fmt::Display for CallError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        crate::diagnostic::display_diag_arg(self, f)
    }
}

impl From<CallError> for Diagnostic {
    #[cold]
    #[inline(never)]
    fn from(e: CallError) -> Self {
        Diagnostic::from_arg(e.code(), &e)
    }
}

/// How a started call ended: its results, and whether awaiting them failed.
pub(crate) struct Finished {
    pub(crate) results: Results,
    pub(crate) awaited: Result<(), AwaitError>,
}

impl Program<'_> {
    /// Run function `name` with `args` on `host` and return its results once they are all
    /// available and the host's work queue has quiesced. Each call is its own request
    /// (cancel through [`call_in`](Self::call_in)).
    ///
    /// Arguments that are still unavailable are awaited before the function starts. The
    /// call fails with a [`CallError`] when it cannot run to the end (no such function, a
    /// wrong argument count, no memory for the results, a deadlock reported by the queue);
    /// a result that fails is an error value inside `Ok` (see [`Results::get`]). Nothing
    /// panics.
    ///
    /// ```
    /// use hostrt_core::basic_kernels::integer;
    /// use hostrt_core::executor::Program;
    /// use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
    ///
    /// // A BEF file (here made by `hostrt compile`, from
    /// // `func.func @add() -> i32 { %a = tfrt.constant.i32 2  %b = tfrt.add.i32 %a, %a  tfrt.return %b : i32 }`).
    /// # let text = "func.func @add() -> i32 {\n %a = tfrt.constant.i32 2\n %b = tfrt.add.i32 %a, %a\n tfrt.return %b : i32\n}\n";
    /// # let bef = hostrt_compiler::compile("add.mlir", text, Default::default()).unwrap();
    /// # let bef = hostrt_std::AlignedBytes::new(&bef);
    /// # let bytes = bef.as_bytes();
    /// static ARENA: FixedArena = FixedArena::empty();
    /// static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
    /// ARENA.init(hostrt_core::static_buffer!(16 * 1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    ///
    /// let registry = KernelRegistry::<2>::with_entries(&[integer::CONSTANT_I32, integer::ADD_I32]).unwrap();
    /// let host = HostContext::new(alloc, &QUEUE);
    /// let program = Program::load(bytes, &registry, &host).unwrap();
    /// let results = program.call(&host, "add", &[]).unwrap();
    /// assert_eq!(results.get::<i32>(0), Ok(&4));
    /// ```
    pub fn call(
        &self,
        host: &HostContext<'_>,
        name: &str,
        args: &[RcAsyncValue],
    ) -> Result<Results, CallError> {
        let request = RequestContext::new();
        self.call_in(&ExecutionContext::new(host, &request), name, args)
    }

    /// [`call`](Self::call) within a given request, which can cancel it
    /// ([`RequestContext::cancel`]) from another thread or from a kernel.
    pub fn call_in(
        &self,
        exec: &ExecutionContext<'_>,
        name: &str,
        args: &[RcAsyncValue],
    ) -> Result<Results, CallError> {
        let f = self.function_index(name).ok_or(CallError::NotFound)?;
        self.call_index_in(exec, f, args)
    }

    /// [`call_in`](Self::call_in) for the function with index `function` (from
    /// [`function_index`](Self::function_index)), so a caller that calls one function
    /// often looks its name up once.
    pub fn call_index_in(
        &self,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
    ) -> Result<Results, CallError> {
        match self.call_and_wait(exec, function, args, &mut |_| {})? {
            Finished { results, awaited: Ok(()) } => Ok(results),
            Finished { awaited: Err(e), .. } => Err(CallError::Deadlock(e)),
        }
    }

    /// Start `function`, await its results, show them to `inspect`, quiesce. `Err` only
    /// when the call could not start; a failed await is reported beside the results (the
    /// test driver prints both, before the queue quiesces).
    pub(crate) fn call_and_wait(
        &self,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        inspect: &mut dyn FnMut(&Finished),
    ) -> Result<Finished, CallError> {
        let host = exec.host();
        let Some(rec) = self.file.function_record(function) else {
            return Err(CallError::NotFound);
        };
        if args.len() != rec.num_args as usize {
            return Err(CallError::WrongArgumentCount);
        }
        // The caller may not complete an argument after the call returned (its waiters would
        // outlive the contexts), so the call waits for them first.
        if args.iter().any(|a| !a.is_available()) {
            host.await_values(args).map_err(CallError::Deadlock)?;
        }
        let n = rec.num_results as usize;
        let mut slots = CallBuf::empty();
        if !slots.fill(host.allocator(), n, (0..n).map(|_| Cell::new(None::<RcAsyncValue>))) {
            return Err(CallError::OutOfMemory);
        }
        #[cfg(feature = "profile")]
        let observed = host.observer().map(|o| {
            let name = self.file.function(function).map_or("", |f| f.name());
            let span = crate::observe::CallSpan { name, allocator: host.allocator() };
            let mark = o.call_begin(&span);
            (o, span, mark)
        });
        // SAFETY: `self` and `exec` are borrowed for this whole function, and it returns only
        // after awaiting the results and quiescing the queue: the contract of `raw`.
        unsafe { self.execute_with(exec, function, args, slots.as_slice(), false) };
        let full = |slot: &Cell<Option<RcAsyncValue>>| {
            let v = slot.take();
            let full = v.is_some();
            slot.set(v);
            full
        };
        if !slots.as_slice().iter().all(full) {
            // The executor fills every slot (an exhausted arena gives the static
            // out-of-memory error value); should one stay empty, report that rather than
            // hand out a missing result.
            host.quiesce();
            #[cfg(feature = "profile")]
            call_ended(observed);
            return Err(CallError::OutOfMemory);
        }
        let results = Results { slots };
        let awaited = host.await_values(&results);
        let finished = Finished { results, awaited };
        inspect(&finished);
        host.quiesce();
        #[cfg(feature = "profile")]
        call_ended(observed);
        Ok(finished)
    }

    /// Start `function` (see [`raw::execute`](crate::executor::raw::execute)), optionally with TFRT's
    /// *asynchronous kick-off*: the frame and result placeholders are made now, the kernels
    /// start in a new work-queue task.
    ///
    /// # Safety
    /// The contract of [`raw`](crate::executor::raw).
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
        Run::kick_off(&frame, &body, args);
    }

    /// Steps 1-2 of a call (docs/execution.md): check the call, allocate the frame and set the result
    /// placeholders. `None` when the call is already complete (error results, or a native
    /// function ran). Not inlined: its temporaries (a `Function` copies the whole `BefFile`)
    /// would otherwise stay in `execute_with`'s frame, which every nested call adds.
    ///
    /// # Safety
    /// The contract of [`raw`](crate::executor::raw).
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

/// Tell the observer, if any, that the call it was told of has ended.
#[cfg(feature = "profile")]
fn call_ended(observed: Option<(&dyn crate::observe::Observer, crate::observe::CallSpan<'_>, u64)>) {
    if let Some((observer, span, mark)) = observed {
        observer.call_end(&span, mark);
    }
}

/// The asynchronous kick-off's second half: steps 3-4 in a new task, with the arguments
/// captured (more than [`ASYNC_ARGS`] start synchronously instead). Kept out of
/// `execute_with`, whose frame every nested call adds to the stack.
#[inline(never)]
fn kick_off_in_task(exec: &ExecutionContext<'_>, frame: Frame, body: &Body<'_>, args: &[RcAsyncValue]) {
    let Ok(held) = heapless::Vec::<RcAsyncValue, ASYNC_ARGS>::from_slice(args) else {
        return Run::kick_off(&frame, body, args); // too many arguments to carry: start it here
    };
    let task = move || {
        if let Some(f) = Body::of(&frame) {
            Run::kick_off(&frame, &f, &held);
        }
    };
    if let Err(oom) = exec.host().enqueue_work(task) {
        (oom.into_inner())(); // no memory for a task: start it here after all
    }
}

/// Arguments an asynchronous kick-off can carry into its task; a call with more starts
/// synchronously instead.
const ASYNC_ARGS: usize = 16;

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
