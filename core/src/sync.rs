//! Atomics used by the lock-free parts of the core.
//!
//! Normal builds use `portable-atomic` (so targets without compare-and-swap, like thumbv6m,
//! work through critical sections); `--cfg loom` swaps in loom's model-checked atomics.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering, fence};
