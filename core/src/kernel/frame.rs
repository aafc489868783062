//! `KernelFrame`: a kernel's arguments, attributes, result slots and execution context.

use core::cell::Cell;
use core::fmt;

use super::attribute::AttrRef;
use super::prepared::{Prepared, Span};
use crate::async_value::{AsyncValueRef, RcAsyncValue, Spare};
use crate::diagnostic::{Diagnostic, Location};
use crate::host_context::ExecutionContext;

/// `KernelFrame::location_index` when the frame has none.
const NO_LOCATION: u32 = u32::MAX;

/// A borrowed source location of the kernel being run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocRef<'a> {
    /// File name.
    pub file: &'a str,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl LocRef<'_> {
    /// An owned copy for a diagnostic.
    pub fn to_location(&self) -> Location {
        Location::new(self.file, self.line, self.column)
    }
}

/// Everything one kernel invocation sees. Built by the executor (or a test), passed by shared
/// reference; result slots use interior mutability so several adaptors can fill them.
pub struct KernelFrame<'a> {
    args: &'a [RcAsyncValue],
    attrs: &'a [AttrRef<'a>],
    results: &'a [Cell<Option<RcAsyncValue>>],
    exec: &'a ExecutionContext<'a>,
    location: Option<LocRef<'a>>,
    /// The program's location index, resolved through `invoker` only when asked for
    /// (most kernels never report an error, so decoding it per call is wasted work).
    location_index: u32,
    regions: &'a [u32],
    invoker: Option<&'a dyn Invoke>,
    /// A block the executor recycled from an earlier kernel's operand, for this kernel's
    /// first result of the same type (`async_value::Spare`).
    spare: Option<&'a Cell<Option<Spare>>>,
    /// The program's load proved the argument types of this kernel's signature
    /// (docs/execution.md, "Types checked at load"); only the executor sets it.
    args_proved: bool,
    /// This use's prepared state and the program's bytes its spans point into
    /// (docs/execution.md, "Prepared state"); only the executor and tests set it.
    #[cfg(feature = "prepared")]
    prepared: Option<(&'a Prepared, &'a [u8])>,
}

/// Proof that a call of [`Invoke::invoke`] comes through the kernel API
/// ([`KernelFrame::invoke`], [`Detached::invoke`](super::Detached::invoke)), so the function
/// starts inside a run whose starter keeps the program and the context alive
/// (docs/execution.md, "Lifetime of a run"). Only `hostrt-core` makes one; an embedder runs
/// functions with `Program::call` instead.
#[derive(Clone, Copy, Debug)]
pub struct InvokeToken(());

/// Start `function` through `invoker` (with the asynchronous kick-off when `asynchronous`),
/// the one place the core makes an [`InvokeToken`]; `false` without an invoker. Callers are
/// the kernel-side entries, [`KernelFrame::invoke`] and `Detached::invoke`.
pub(crate) fn start(
    invoker: Option<&dyn Invoke>,
    exec: &ExecutionContext<'_>,
    function: u32,
    args: &[RcAsyncValue],
    results: &[Cell<Option<RcAsyncValue>>],
    asynchronous: bool,
) -> bool {
    let Some(invoker) = invoker else { return false };
    if asynchronous {
        invoker.invoke_async(InvokeToken(()), exec, function, args, results);
    } else {
        invoker.invoke(InvokeToken(()), exec, function, args, results);
    }
    true
}

/// Runs functions of the program a kernel belongs to: what control-flow kernels (`tfrt.call`,
/// `tfrt.if`, ...) use, through [`KernelFrame::invoke`], to start a callee or a region.
pub trait Invoke: Sync {
    /// Start `function` with `args`; its results (possibly still unavailable) are put into
    /// `results`. Errors (wrong arity, no such function, no memory) become error results.
    fn invoke(
        &self,
        token: InvokeToken,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    );

    /// Like [`invoke`](Self::invoke) with TFRT's asynchronous kick-off: the results are
    /// set now, the function's kernels start in a new work-queue task. The default starts
    /// it synchronously.
    fn invoke_async(
        &self,
        token: InvokeToken,
        exec: &ExecutionContext<'_>,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) {
        self.invoke(token, exec, function, args, results);
    }

    /// Attribute `index` of the program: how kernels read the children of nested
    /// (aggregate) attributes, which refer to them by index.
    fn attribute(&self, index: u32) -> Option<AttrRef<'_>>;

    /// Number of results `function` returns (`None`: no such function).
    fn num_results(&self, function: u32) -> Option<usize>;

    /// Type name of result `i` of `function` as written (`i32`, `!tfrt.chain`).
    fn result_type(&self, function: u32, i: usize) -> Option<&str>;

    /// Source location `index` of the program (a kernel's, as [`KernelFrame::location`]
    /// asks for it); `None` when unknown, and by default.
    fn location(&self, index: u32) -> Option<LocRef<'_>> {
        let _ = index;
        None
    }

    /// The program's bytes when they outlive every value of every run (see
    /// [`Program::load_static`](crate::executor::Program::load_static)); `None` by default.
    fn static_bytes(&self) -> Option<&'static [u8]> {
        None
    }
}

impl fmt::Debug for KernelFrame<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelFrame")
            .field("args", &self.args.len())
            .field("attrs", &self.attrs.len())
            .field("results", &self.results.len())
            .field("location", &self.location)
            .finish()
    }
}

impl<'a> KernelFrame<'a> {
    /// A frame over the given arguments, attributes and (initially empty) result slots.
    pub fn new(
        exec: &'a ExecutionContext<'a>,
        args: &'a [RcAsyncValue],
        attrs: &'a [AttrRef<'a>],
        results: &'a [Cell<Option<RcAsyncValue>>],
    ) -> Self {
        KernelFrame {
            args,
            attrs,
            results,
            exec,
            location: None,
            location_index: NO_LOCATION,
            regions: &[],
            invoker: None,
            spare: None,
            args_proved: false,
            #[cfg(feature = "prepared")]
            prepared: None,
        }
    }

    /// The frame the executor calls a kernel of a program with: every field at once (the
    /// builder methods would copy the frame once each, on the executor's hot path).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn for_program(
        exec: &'a ExecutionContext<'a>,
        args: &'a [RcAsyncValue],
        attrs: &'a [AttrRef<'a>],
        results: &'a [Cell<Option<RcAsyncValue>>],
        regions: &'a [u32],
        invoker: &'a dyn Invoke,
        spare: &'a Cell<Option<Spare>>,
        location_index: u32,
        args_proved: bool,
        prepared: Option<(&'a Prepared, &'a [u8])>,
    ) -> Self {
        #[cfg(not(feature = "prepared"))]
        let _ = prepared;
        KernelFrame {
            location_index,
            args_proved,
            #[cfg(feature = "prepared")]
            prepared,
            regions,
            invoker: Some(invoker),
            spare: Some(spare),
            ..KernelFrame::new(exec, args, attrs, results)
        }
    }

    /// Attach the kernel's regions (function indices) and the program that runs them.
    pub fn with_functions(mut self, regions: &'a [u32], invoker: &'a dyn Invoke) -> Self {
        self.regions = regions;
        self.invoker = Some(invoker);
        self
    }

    /// The kernel's regions, as function indices for [`invoker`](Self::invoker).
    pub fn regions(&self) -> &'a [u32] {
        self.regions
    }

    /// The program runner, for control-flow kernels.
    pub fn invoker(&self) -> Option<&'a dyn Invoke> {
        self.invoker
    }

    /// Start `function` of this kernel's program with `args`, its results put into `results`
    /// (see [`Invoke::invoke`]); `false` when the frame has no program to run it.
    #[inline]
    pub fn invoke(
        &self,
        function: u32,
        args: &[RcAsyncValue],
        results: &[Cell<Option<RcAsyncValue>>],
    ) -> bool {
        // A recycled block is not held across a nested call (recursion would keep one per
        // level alive).
        if let Some(spare) = self.spare {
            drop(spare.take());
        }
        start(self.invoker, self.exec, function, args, results, false)
    }

    /// `bytes` (part of one of this frame's attributes) as a `'static` slice, when the
    /// program's bytes live forever: a kernel may then keep them in a value (a tensor over a
    /// constant) instead of copying. `None` otherwise, or for bytes outside the program.
    pub fn static_attribute_bytes(&self, bytes: &[u8]) -> Option<&'static [u8]> {
        let all = self.invoker?.static_bytes()?;
        let start = bytes.as_ptr().addr().checked_sub(all.as_ptr().addr())?;
        all.get(start..start.checked_add(bytes.len())?)
    }

    /// Attach prepared state (`prepared`, over the program bytes `bytes`), as the executor
    /// does for a use the load prepared: for tests of a kernel's prepared path.
    #[cfg(feature = "prepared")]
    pub fn with_prepared(mut self, prepared: &'a Prepared, bytes: &'a [u8]) -> Self {
        self.prepared = Some((prepared, bytes));
        self
    }

    /// The state the kernel's [`PrepareFn`](super::PrepareFn) made for this use when the
    /// program loaded (docs/execution.md, "Prepared state"); `None` when it made none, or
    /// without the `prepared` feature. The executor passes no attributes with it.
    #[inline]
    pub fn prepared(&self) -> Option<&'a Prepared> {
        #[cfg(feature = "prepared")]
        return self.prepared.map(|(p, _)| p);
        #[cfg(not(feature = "prepared"))]
        None
    }

    /// The program bytes `span` names (a span the kernel's prepare function kept); `None`
    /// when the frame has no prepared state or the span lies outside the program.
    #[inline]
    pub fn span(&self, span: Span) -> Option<&'a [u8]> {
        #[cfg(feature = "prepared")]
        return super::prepared::resolve(self.prepared?.1, span);
        #[cfg(not(feature = "prepared"))]
        {
            let _ = span;
            None
        }
    }

    /// Attach the kernel's source location (used in the diagnostics it reports).
    pub fn with_location(mut self, location: LocRef<'a>) -> Self {
        self.location = Some(location);
        self
    }

    /// Whether the load proved the arguments' types ([`Argument`](super::Argument) then
    /// skips its type check in release builds).
    #[inline]
    pub(crate) fn args_proved(&self) -> bool {
        cfg!(feature = "proved-types") && self.args_proved
    }

    /// The arguments.
    #[inline]
    pub fn args(&self) -> &'a [RcAsyncValue] {
        self.args
    }

    /// Argument `i`.
    #[inline]
    pub fn arg(&self, i: usize) -> Option<&'a RcAsyncValue> {
        self.args.get(i)
    }

    /// The attributes.
    #[inline]
    pub fn attrs(&self) -> &'a [AttrRef<'a>] {
        self.attrs
    }

    /// Number of result slots.
    #[inline]
    pub fn num_results(&self) -> usize {
        self.results.len()
    }

    /// The result slots.
    #[inline]
    pub fn result_slots(&self) -> &'a [Cell<Option<RcAsyncValue>>] {
        self.results
    }

    /// The execution context.
    #[inline]
    pub fn exec_ctx(&self) -> &'a ExecutionContext<'a> {
        self.exec
    }

    /// The kernel's location, when known.
    pub fn location(&self) -> Option<LocRef<'a>> {
        if self.location.is_some() || self.location_index == NO_LOCATION {
            return self.location;
        }
        self.invoker?.location(self.location_index)
    }

    /// Set result `i` to `value` (replacing what was there). Out-of-range indices are
    /// reported as a kernel error.
    #[inline]
    pub fn set_result(&self, i: usize, value: RcAsyncValue) {
        match self.results.get(i) {
            Some(slot) => slot.set(Some(value)),
            None => self.no_result_slot(i),
        }
    }

    #[cold]
    #[inline(never)]
    fn no_result_slot(&self, i: usize) {
        self.report_error(crate::diag!(
            Internal,
            "kernel set result {} but has {} results",
            i,
            self.results.len()
        ))
    }

    /// A new available value holding `value`; on allocator exhaustion the kernel error has
    /// been reported and the answer is `None`.
    #[inline]
    pub fn new_available<T: Send + Sync + 'static>(&self, value: T) -> Option<RcAsyncValue> {
        if let Some(spare) = self.spare
            && let Some(block) = spare.take()
        {
            match block.fill(self.exec.allocator(), value) {
                Ok(v) => return Some(v),
                Err((block, value)) => {
                    spare.set(Some(block));
                    return self.allocate_available(value);
                }
            }
        }
        self.allocate_available(value)
    }

    /// [`new_available`](Self::new_available) in a fresh block (out of line: the recycled
    /// block is the executor's common case).
    #[inline(never)]
    fn allocate_available<T: Send + Sync + 'static>(&self, value: T) -> Option<RcAsyncValue> {
        match AsyncValueRef::available(self.exec.allocator(), value) {
            Ok(v) => Some(v.into_rc()),
            Err(e) => {
                self.report_error(e.into());
                None
            }
        }
    }

    /// Set result `i` to a new available value; allocator exhaustion becomes a kernel error.
    pub fn emplace_result<T: Send + Sync + 'static>(&self, i: usize, value: T) {
        if let Some(v) = self.new_available(value) {
            self.set_result(i, v)
        }
    }

    /// Attach this kernel's location to `diag` unless it has one.
    pub fn locate(&self, mut diag: Diagnostic) -> Diagnostic {
        if diag.location.is_none() {
            diag.location = self.location().map(|l| l.to_location());
        }
        diag
    }

    /// Report an error: it goes to the host's diagnostic sink, every empty result slot gets one
    /// shared error value, and results the
    /// kernel made but left unavailable are set to the error. If even the error value cannot
    /// be allocated, empty slots stay empty and the executor substitutes its own error.
    pub fn report_error(&self, diag: Diagnostic) {
        let diag = self.locate(diag);
        self.exec.host().emit_error(&diag);
        let mut shared: Option<RcAsyncValue> = None;
        for slot in self.results {
            match slot.take() {
                Some(v) => {
                    if !v.is_available() {
                        v.set_error(diag);
                    }
                    slot.set(Some(v));
                }
                None => {
                    if shared.is_none() {
                        shared = Some(RcAsyncValue::error_or_oom(self.exec.allocator(), diag));
                    }
                    slot.set(shared.clone());
                }
            }
        }
    }
}
