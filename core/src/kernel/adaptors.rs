//! Typed kernel parameters: each pulls its piece of the frame (next argument, next
//! attribute, next result, ...) so a plain Rust function can be a kernel.

use core::cell::Cell;
use core::marker::PhantomData;
use core::ops::Deref;

use super::attribute::AttrScalar;
use super::frame::KernelFrame;
use super::returns::KernelReturn;
use super::signature::{Param, Signature, SignedParam, SignedReturn, TypeKey, TypedKernel, sealed};
use crate::async_value::{AsyncValueRef, IndirectAsyncValue, RcAsyncValue};
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;

/// Positions of the next argument, attribute and result to hand out.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    /// Next argument index.
    pub arg: usize,
    /// Next attribute index.
    pub attr: usize,
    /// Next result index.
    pub result: usize,
}

/// A kernel parameter type that can be fetched from a frame.
pub trait KernelParam {
    /// The parameter type with the frame's borrow lifetime.
    type Item<'f>;
    /// Fetch the parameter, advancing the cursor. On failure the parameter reports the
    /// kernel's error on the frame and returns `None`; the kernel body then does not run.
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<Self::Item<'f>>;
}

/// A function usable as a kernel (implemented for functions of up to 10 [`KernelParam`]s
/// returning a [`KernelReturn`]).
pub trait KernelImpl<Marker> {
    /// Fetch the parameters, call the function, emit its return value.
    fn call(&self, frame: &KernelFrame<'_>);
}

/// Call `f` as a kernel on `frame` (what [`kernel!`](crate::kernel!) expands to).
#[inline]
pub fn invoke<M, F: KernelImpl<M>>(f: &F, frame: &KernelFrame<'_>) {
    f.call(frame)
}

macro_rules! impl_kernel_impl {
    ($($p:ident),*) => {
        #[allow(non_snake_case, unused_mut, unused_variables, clippy::too_many_arguments)]
        impl<Func, Ret, $($p: KernelParam),*> KernelImpl<fn($($p,)*) -> Ret> for Func
        where
            Func: Fn($($p),*) -> Ret,
            Func: for<'f> Fn($($p::Item<'f>),*) -> Ret,
            Ret: KernelReturn,
        {
            #[inline]
            fn call(&self, frame: &KernelFrame<'_>) {
                // Calls through the higher-ranked `Fn` bound (the plain one only pins types).
                #[inline(always)]
                #[allow(clippy::too_many_arguments)]
                fn call_inner<Ret, $($p),*>(f: impl Fn($($p),*) -> Ret, $($p: $p),*) -> Ret {
                    f($($p),*)
                }
                let mut cursor = Cursor::default();
                $(
                    let Some($p) = $p::fetch(frame, &mut cursor) else { return };
                )*
                let ret = call_inner(self, $($p),*);
                ret.emit(frame, &mut cursor);
            }
        }

        // `TypedKernel` for the functions whose parameters and return type all describe
        // themselves. Bound on `Fn` (which only functions and closures implement), so the
        // `KernelImpl` that runs is the one above, fetching through those same parameters.
        impl<Func, Ret, $($p: SignedParam),*> sealed::Kernel<fn($($p,)*) -> Ret> for Func
        where
            Func: Fn($($p),*) -> Ret,
            Func: for<'f> Fn($($p::Item<'f>),*) -> Ret,
            Ret: SignedReturn,
        {
        }
        impl<Func, Ret, $($p: SignedParam),*> TypedKernel<fn($($p,)*) -> Ret> for Func
        where
            Func: Fn($($p),*) -> Ret,
            Func: for<'f> Fn($($p::Item<'f>),*) -> Ret,
            Ret: SignedReturn,
        {
            const SIGNATURE: Signature = Signature::new(&[$(<$p as SignedParam>::PARAM),*], Ret::RETURNS).fallible(Ret::FALLIBLE);
        }
    };
}

impl_kernel_impl!();
impl_kernel_impl!(P0);
impl_kernel_impl!(P0, P1);
impl_kernel_impl!(P0, P1, P2);
impl_kernel_impl!(P0, P1, P2, P3);
impl_kernel_impl!(P0, P1, P2, P3, P4);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6, P7);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6, P7, P8);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10);
impl_kernel_impl!(P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11);

/// The next argument, an available value holding a `T`. Dereferences to the `T`.
#[derive(Debug)]
pub struct Argument<'f, T> {
    value: &'f RcAsyncValue,
    data: &'f T,
}

impl<'f, T> Argument<'f, T> {
    /// The underlying async value (to forward it as a result, or keep it alive).
    pub fn value(&self) -> &'f RcAsyncValue {
        self.value
    }
    /// The payload.
    pub fn get(&self) -> &'f T {
        self.data
    }
}

impl<T> Deref for Argument<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T: 'static> sealed::Param for Argument<'_, T> {}
impl<T: 'static> SignedParam for Argument<'_, T> {
    const PARAM: Param = Param::Arg(TypeKey::of::<T>());
}

impl<T: 'static> KernelParam for Argument<'_, T> {
    type Item<'f> = Argument<'f, T>;
    #[inline]
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<Argument<'f, T>> {
        let i = cursor.arg;
        cursor.arg += 1;
        // The type is checked now, unless the program's load proved it (docs/execution.md,
        // "Types checked at load").
        if let Some(value) = frame.args().get(i)
            && let Some(data) = value.get_proved::<T>(frame.args_proved())
        {
            return Some(Argument { value, data });
        }
        argument_error(frame, i, core::any::type_name::<T>());
        None
    }
}

/// Report why argument `i` could not be fetched as a `want` (one copy for every `T`, kept
/// out of the kernels' fast path).
#[cold]
#[inline(never)]
fn argument_error(frame: &KernelFrame<'_>, i: usize, want: &'static str) {
    let diag = match frame.args().get(i) {
        None => crate::diag!(InvalidArgument, "kernel expects argument {} but got {}", i, frame.args().len()),
        Some(value) => match value.get_error() {
            Some(e) => *e,
            None if !value.is_available() => crate::diag!(Internal, "argument {} is not available", i),
            None => {
                crate::diag!(
                    InvalidArgument,
                    "argument {} has type {}, expected {}",
                    i,
                    value.type_name(),
                    want
                )
            }
        },
    };
    frame.report_error(diag);
}

/// The arguments not taken by earlier parameters.
#[derive(Debug, Clone, Copy)]
pub struct RemainingArguments<'f> {
    values: &'f [RcAsyncValue],
}

impl<'f> RemainingArguments<'f> {
    /// The values.
    pub fn values(&self) -> &'f [RcAsyncValue] {
        self.values
    }
    /// How many.
    pub fn len(&self) -> usize {
        self.values.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
    /// Value `i`.
    pub fn get(&self, i: usize) -> Option<&'f RcAsyncValue> {
        self.values.get(i)
    }
}

impl sealed::Param for RemainingArguments<'_> {}
impl SignedParam for RemainingArguments<'_> {
    const PARAM: Param = Param::RestArgs;
}

impl KernelParam for RemainingArguments<'_> {
    type Item<'f> = RemainingArguments<'f>;
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<RemainingArguments<'f>> {
        let start = cursor.arg.min(frame.args().len());
        cursor.arg = frame.args().len();
        Some(RemainingArguments { values: &frame.args()[start..] })
    }
}

/// Report `diag` as the kernel's error and fail the fetch.
#[cold]
fn fail<T>(frame: &KernelFrame<'_>, diag: Diagnostic) -> Option<T> {
    frame.report_error(diag);
    None
}

fn next_attr<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<(usize, super::AttrRef<'f>)> {
    let i = cursor.attr;
    cursor.attr += 1;
    match frame.attrs().get(i) {
        Some(a) => Some((i, *a)),
        None => fail(
            frame,
            crate::diag!(InvalidArgument, "kernel expects attribute {} but got {}", i, frame.attrs().len()),
        ),
    }
}

/// The next attribute, a scalar constant. Dereferences to the value.
#[derive(Debug, Clone, Copy)]
pub struct Attribute<'f, T> {
    value: T,
    _frame: PhantomData<&'f ()>,
}

impl<T: Copy> Attribute<'_, T> {
    /// An attribute holding `value` (what the scalar path hands a kernel).
    pub(crate) fn of(value: T) -> Self {
        Attribute { value, _frame: PhantomData }
    }

    /// The value.
    pub fn get(&self) -> T {
        self.value
    }
}

impl<T> Deref for Attribute<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: AttrScalar> sealed::Param for Attribute<'_, T> {}
impl<T: AttrScalar> SignedParam for Attribute<'_, T> {
    const PARAM: Param = Param::Attribute(super::attribute::scalar_attr_kind(T::KIND));
}

impl<T: AttrScalar> KernelParam for Attribute<'_, T> {
    type Item<'f> = Attribute<'f, T>;
    #[inline]
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<Attribute<'f, T>> {
        let (i, a) = next_attr(frame, cursor)?;
        match a.get::<T>() {
            Some(value) => Some(Attribute { value, _frame: PhantomData }),
            None => fail(
                frame,
                crate::diag!(InvalidArgument, "attribute {} is {}, expected {}", i, a.kind(), T::KIND),
            ),
        }
    }
}

/// The next attribute, an array of scalars viewed in place. Dereferences to `[T]`.
#[derive(Debug, Clone, Copy)]
pub struct ArrayAttribute<'f, T> {
    values: &'f [T],
}

impl<'f, T> ArrayAttribute<'f, T> {
    /// The elements.
    pub fn values(&self) -> &'f [T] {
        self.values
    }
}

impl<T> Deref for ArrayAttribute<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.values
    }
}

impl<T: AttrScalar> sealed::Param for ArrayAttribute<'_, T> {}
impl<T: AttrScalar> SignedParam for ArrayAttribute<'_, T> {
    const PARAM: Param = Param::Attribute(super::AttrKind::Array(T::KIND));
}

impl<T: AttrScalar> KernelParam for ArrayAttribute<'_, T> {
    type Item<'f> = ArrayAttribute<'f, T>;
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<ArrayAttribute<'f, T>> {
        let (i, a) = next_attr(frame, cursor)?;
        match a.get_array::<T>() {
            Some(values) => Some(ArrayAttribute { values }),
            None => fail(
                frame,
                crate::diag!(
                    InvalidArgument,
                    "attribute {} is {}, expected array of {}",
                    i,
                    a.kind(),
                    T::KIND
                ),
            ),
        }
    }
}

/// The next attribute, a string. Dereferences to `str`.
#[derive(Debug, Clone, Copy)]
pub struct StringAttribute<'f> {
    value: &'f str,
}

impl<'f> StringAttribute<'f> {
    /// The text.
    pub fn get(&self) -> &'f str {
        self.value
    }
}

impl Deref for StringAttribute<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.value
    }
}

impl sealed::Param for StringAttribute<'_> {}
impl SignedParam for StringAttribute<'_> {
    const PARAM: Param = Param::Attribute(super::AttrKind::String);
}

impl KernelParam for StringAttribute<'_> {
    type Item<'f> = StringAttribute<'f>;
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<StringAttribute<'f>> {
        let (i, a) = next_attr(frame, cursor)?;
        match a.get_str() {
            Some(value) => Some(StringAttribute { value }),
            None => fail(
                frame,
                crate::diag!(InvalidArgument, "attribute {} is {}, expected a string", i, a.kind()),
            ),
        }
    }
}

/// The next result slot, to be filled with a `T` (TFRT's `Result<T>`; renamed because
/// `Result` is Rust's error type).
pub struct Output<'f, T> {
    slot: &'f Cell<Option<RcAsyncValue>>,
    frame: &'f KernelFrame<'f>,
    _payload: PhantomData<T>,
}

impl<T> core::fmt::Debug for Output<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Output")
    }
}

impl<T: Send + Sync + 'static> Output<'_, T> {
    /// Set the result to a new available value.
    pub fn emplace(&self, value: T) {
        if let Some(v) = self.frame.new_available(value) {
            self.slot.set(Some(v))
        }
    }

    /// Set the result to an existing value (for example an argument, forwarded).
    pub fn set(&self, value: RcAsyncValue) {
        self.slot.set(Some(value))
    }

    /// Set the result to a new unavailable value and return a handle to complete it later
    /// (from a task, another thread, or a waiter). `None` when memory is exhausted (the
    /// kernel error has then been reported).
    pub fn allocate(&self) -> Option<AsyncValueRef<T>> {
        match AsyncValueRef::<T>::unconstructed(self.frame.exec_ctx().allocator()) {
            Ok(v) => {
                // SAFETY: just made: this thread holds the only reference.
                self.slot.set(Some(unsafe { v.clone_unshared() }));
                Some(v)
            }
            Err(e) => {
                self.frame.report_error(e.into());
                None
            }
        }
    }

    /// Set the result to an error value.
    pub fn set_error(&self, diag: Diagnostic) {
        let diag = self.frame.locate(diag);
        self.slot.set(Some(RcAsyncValue::error_or_oom(self.frame.exec_ctx().allocator(), diag)));
    }
}

/// The next result slot (a kernel error if the frame has too few).
fn result_slot<'f>(
    frame: &'f KernelFrame<'_>,
    cursor: &mut Cursor,
) -> Option<&'f Cell<Option<RcAsyncValue>>> {
    let i = cursor.result;
    cursor.result += 1;
    match frame.result_slots().get(i) {
        Some(slot) => Some(slot),
        None => fail(
            frame,
            crate::diag!(InvalidArgument, "kernel expects result {} but has {}", i, frame.num_results()),
        ),
    }
}

impl<T: Send + Sync + 'static> sealed::Param for Output<'_, T> {}
impl<T: Send + Sync + 'static> SignedParam for Output<'_, T> {
    const PARAM: Param = Param::Result;
}

impl<T: Send + Sync + 'static> KernelParam for Output<'_, T> {
    type Item<'f> = Output<'f, T>;
    // Not typed: `Output::set` takes any value.
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<Output<'f, T>> {
        let slot = result_slot(frame, cursor)?;
        // `KernelFrame` is covariant in its lifetime, so this only shortens it.
        let frame: &'f KernelFrame<'f> = frame;
        Some(Output { slot, frame, _payload: PhantomData })
    }
}

/// The result slots not taken by earlier parameters.
pub struct RemainingResults<'f> {
    slots: &'f [Cell<Option<RcAsyncValue>>],
    frame: &'f KernelFrame<'f>,
}

impl core::fmt::Debug for RemainingResults<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RemainingResults").field("len", &self.slots.len()).finish()
    }
}

impl RemainingResults<'_> {
    /// How many.
    pub fn len(&self) -> usize {
        self.slots.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
    /// Set result `i` to `value`.
    pub fn set(&self, i: usize, value: RcAsyncValue) {
        if let Some(s) = self.slots.get(i) {
            s.set(Some(value));
        }
    }
    /// Set result `i` to a new available value.
    pub fn emplace<T: Send + Sync + 'static>(&self, i: usize, value: T) {
        if let Some(v) = self.frame.new_available(value) {
            self.set(i, v)
        }
    }
    /// Set result `i` to a new indirect value and return it, to be forwarded later.
    pub fn allocate_indirect(&self, i: usize) -> Option<IndirectAsyncValue> {
        match IndirectAsyncValue::new(self.frame.exec_ctx().allocator()) {
            Ok(v) => {
                self.set(i, v.clone());
                Some(v)
            }
            Err(e) => {
                self.frame.report_error(e.into());
                None
            }
        }
    }
    /// Whether result `i` has been set.
    pub fn is_set(&self, i: usize) -> bool {
        self.slots.get(i).is_some_and(|s| {
            let v = s.take();
            let set = v.is_some();
            s.set(v);
            set
        })
    }
}

impl sealed::Param for RemainingResults<'_> {}
impl SignedParam for RemainingResults<'_> {
    const PARAM: Param = Param::RestResults;
}

impl KernelParam for RemainingResults<'_> {
    type Item<'f> = RemainingResults<'f>;
    fn fetch<'f>(frame: &'f KernelFrame<'_>, cursor: &mut Cursor) -> Option<RemainingResults<'f>> {
        let n = frame.num_results();
        let start = cursor.result.min(n);
        cursor.result = n;
        let frame: &'f KernelFrame<'f> = frame;
        Some(RemainingResults { slots: &frame.result_slots()[start..], frame })
    }
}

/// Reports a kernel error: unset results become error values (TFRT's `KernelErrorHandler`).
#[derive(Debug, Clone, Copy)]
pub struct KernelErrorHandler<'f> {
    frame: &'f KernelFrame<'f>,
}

impl KernelErrorHandler<'_> {
    /// Report `diag` (located at the kernel) on every unset or unavailable result.
    pub fn report_error(&self, diag: Diagnostic) {
        self.frame.report_error(diag)
    }
}

impl sealed::Param for KernelErrorHandler<'_> {}
impl SignedParam for KernelErrorHandler<'_> {
    const PARAM: Param = Param::ErrorHandler;
}

impl KernelParam for KernelErrorHandler<'_> {
    type Item<'f> = KernelErrorHandler<'f>;
    fn fetch<'f>(frame: &'f KernelFrame<'_>, _cursor: &mut Cursor) -> Option<KernelErrorHandler<'f>> {
        Some(KernelErrorHandler { frame })
    }
}

impl sealed::Param for &ExecutionContext<'_> {}
impl SignedParam for &ExecutionContext<'_> {
    const PARAM: Param = Param::Other;
}

impl KernelParam for &ExecutionContext<'_> {
    type Item<'f> = &'f ExecutionContext<'f>;
    #[inline]
    fn fetch<'f>(frame: &'f KernelFrame<'_>, _cursor: &mut Cursor) -> Option<&'f ExecutionContext<'f>> {
        Some(frame.exec_ctx())
    }
}
