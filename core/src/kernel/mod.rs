//! Kernels: the frame a kernel is called with, typed adaptors that turn plain Rust functions
//! into kernels (the seed's `TFRT_KERNEL`), and the registry that names them.
//!
//! A kernel is a `fn(&KernelFrame)`. Its arguments are available async values (kernels are
//! strict unless registered otherwise), its attributes are constants read in place from the
//! program, and it fills its result slots with values that may still be unavailable.

mod adaptors;
mod attribute;
mod detach;
mod frame;
mod prepared;
mod registry;
mod returns;
mod scalar;
mod signature;
mod table;

#[cfg(test)]
mod tests;

pub use adaptors::{
    Argument, ArrayAttribute, Attribute, Cursor, KernelErrorHandler, KernelImpl, KernelParam, Output,
    RemainingArguments, RemainingResults, StringAttribute, invoke,
};
pub(crate) use attribute::scalar_attr_kind;
pub use attribute::{AttrKind, AttrRef, AttrScalar, DenseAttr, ScalarKind};
pub use detach::Detached;
pub use frame::{Invoke, InvokeToken, KernelFrame, LocRef};
pub use prepared::{PrepareFn, PrepareInput, Prepared, Span};
pub use registry::{Calls, KernelEntry, KernelLookup, KernelRegistry, RegistryError};
pub use returns::{KernelReturn, Value};
pub use scalar::{ScalarFn, ScalarKernel, ScalarParam, ScalarValue, Slot, invoke_scalar, scalar_of};
pub(crate) use signature::sealed;
pub use signature::{Param, ReturnTypes, Signature, SignedParam, SignedReturn, TypeKey, TypedKernel};
pub use table::KernelTable;

/// A kernel: reads arguments and attributes from the frame and sets its results.
pub type KernelFn = fn(&KernelFrame<'_>);

/// Turn a Rust function whose parameters are kernel adaptors into a [`KernelFn`]:
/// `registry.add_kernel("tfrt.add.i32", kernel!(add_i32))`.
///
/// Parameters may be [`Argument`], [`Attribute`], [`ArrayAttribute`], [`StringAttribute`],
/// [`RemainingArguments`], [`Output`], [`RemainingResults`], [`KernelErrorHandler`],
/// [`Detached`] and `&ExecutionContext`; the return value is anything implementing
/// [`KernelReturn`] (`T`, tuples, `Result<T, Diagnostic>`, `AsyncValueRef<T>`).
///
/// ```
/// use hostrt_core::kernel::{Argument, KernelLookup};
/// use hostrt_core::{Diagnostic, KernelRegistry};
///
/// fn div_i32(a: Argument<i32>, b: Argument<i32>) -> Result<i32, Diagnostic> {
///     if *b == 0 {
///         return Err(Diagnostic::internal("Divide by zero"));
///     }
///     Ok(*a / *b)
/// }
///
/// let mut registry: KernelRegistry<4> = KernelRegistry::new();
/// registry.add_kernel("my.div.i32", hostrt_core::kernel!(div_i32)).unwrap();
/// assert!(registry.lookup("my.div.i32").is_some());
/// ```
#[macro_export]
macro_rules! kernel {
    ($f:expr) => {{
        fn __hostrt_kernel(frame: &$crate::kernel::KernelFrame<'_>) {
            $crate::kernel::invoke(&$f, frame)
        }
        __hostrt_kernel as $crate::kernel::KernelFn
    }};
}

/// The signature of a typed kernel function (its parameters' and return value's types).
pub const fn signature_of<M, F: TypedKernel<M>>(_: &F) -> &'static Signature {
    const { &F::SIGNATURE }
}

/// A strict [`KernelEntry`] for a Rust function whose parameters are kernel adaptors, with
/// its signature: a program's uses of it are type-checked once, when the program loads, and
/// release builds then skip the per-call argument type checks (docs/execution.md, "Types
/// checked at load"). Usable in `const` tables.
///
/// ```
/// use hostrt_core::kernel::{Argument, KernelEntry, KernelLookup};
/// use hostrt_core::KernelRegistry;
///
/// fn add_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
///     a.wrapping_add(*b)
/// }
///
/// const ADD: KernelEntry = hostrt_core::kernel_entry!("my.add.i32", add_i32);
/// let registry = KernelRegistry::<4>::with_entries(&[ADD]).unwrap();
/// let entry = registry.lookup("my.add.i32").unwrap();
/// assert_eq!(entry.signature().unwrap().typed_args().count(), 2);
/// ```
///
/// Only functions whose parameters and return type are `hostrt-core`'s own adaptors
/// ([`SignedParam`], [`SignedReturn`]) have a signature; a parameter type of your own is
/// refused (register such a kernel with [`kernel!`](crate::kernel) instead):
///
/// ```compile_fail
/// use hostrt_core::kernel::{Cursor, KernelEntry, KernelFrame, KernelParam};
///
/// struct Mine;
/// impl KernelParam for Mine {
///     type Item<'f> = Mine;
///     fn fetch<'f>(_: &'f KernelFrame<'_>, _: &mut Cursor) -> Option<Mine> {
///         Some(Mine)
///     }
/// }
/// fn uses_mine(_: Mine) -> i32 {
///     1
/// }
/// const MINE: KernelEntry = hostrt_core::kernel_entry!("my.kernel", uses_mine);
/// ```
#[macro_export]
macro_rules! kernel_entry {
    ($name:expr, $f:expr) => {
        match ($name, $crate::kernel!($f), $crate::kernel::signature_of(&$f)) {
            // SAFETY: the function and the signature are made from the same `$f`.
            (name, func, signature) => unsafe { $crate::kernel::KernelEntry::typed(name, func, signature) },
        }
    };
}

/// A strict [`KernelEntry`] for a *scalar kernel*: a Rust function whose parameters are
/// word-sized values (`i32`, `f32`, `bool`, and on 64-bit targets `i64`, `u64`, `f64`) and
/// scalar [`Attribute`]s, returning one such value. It is a typed kernel like
/// [`kernel_entry!`](crate::kernel_entry) makes, and also carries a form the executor calls
/// on register words: where a program's load finds a value made and used only by scalar
/// kernels, that value stays in the frame's register, with no async value, no reference
/// count and no kernel frame (docs/execution.md, "Scalar registers"). Usable in `const`
/// tables.
///
/// ```
/// use hostrt_core::kernel::{KernelEntry, KernelLookup};
/// use hostrt_core::KernelRegistry;
///
/// fn add_i32(a: i32, b: i32) -> i32 {
///     a.wrapping_add(b)
/// }
///
/// const ADD: KernelEntry = hostrt_core::scalar_kernel_entry!("my.add.i32", add_i32);
/// let registry = KernelRegistry::<4>::with_entries(&[ADD]).unwrap();
/// assert!(registry.lookup("my.add.i32").is_some());
/// ```
///
/// A function that can fail, or returns anything but one scalar value, is refused (declare
/// it with [`kernel_entry!`](crate::kernel_entry)):
///
/// ```compile_fail
/// fn div(a: i32, b: i32) -> Result<i32, hostrt_core::Diagnostic> {
///     Ok(a / b)
/// }
/// const DIV: hostrt_core::kernel::KernelEntry = hostrt_core::scalar_kernel_entry!("my.div", div);
/// ```
#[macro_export]
macro_rules! scalar_kernel_entry {
    ($name:expr, $f:expr) => {{
        fn __hostrt_scalar(
            words: &[usize],
            attrs: &[$crate::kernel::AttrRef<'_>],
        ) -> ::core::option::Option<usize> {
            $crate::kernel::invoke_scalar(&$f, words, attrs)
        }
        const __HOSTRT_SCALAR: ::core::option::Option<$crate::kernel::ScalarFn> =
            $crate::kernel::scalar_of(&$f, __hostrt_scalar);
        // `&` of a constant is promoted to a `'static` reference: the entry stays small.
        let scalar = match &__HOSTRT_SCALAR {
            ::core::option::Option::Some(s) => ::core::option::Option::Some(s),
            ::core::option::Option::None => ::core::option::Option::None,
        };
        match ($name, $crate::kernel!($f), $crate::kernel::signature_of(&$f), scalar) {
            // SAFETY: the function, the signature and the scalar form are made from the same `$f`.
            (name, func, signature, scalar) => unsafe {
                $crate::kernel::KernelEntry::typed_scalar(name, func, signature, scalar)
            },
        }
    }};
}
