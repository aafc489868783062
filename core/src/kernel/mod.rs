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
mod registry;
mod returns;
mod table;

#[cfg(test)]
mod tests;

pub use adaptors::{
    Argument, ArrayAttribute, Attribute, Cursor, KernelErrorHandler, KernelImpl, KernelParam, Output,
    RemainingArguments, RemainingResults, StringAttribute, invoke,
};
pub use attribute::{AttrKind, AttrRef, AttrScalar, DenseAttr, ScalarKind};
pub use detach::Detached;
pub use frame::{Invoke, InvokeToken, KernelFrame, LocRef};
pub use registry::{KernelEntry, KernelLookup, KernelRegistry, RegistryError};
pub use returns::{KernelReturn, Value};
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
