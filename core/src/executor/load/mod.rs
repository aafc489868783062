//! The load half of the executor: a verified BEF file becomes a [`Program`], its kernel
//! names resolved once, the types of its kernels' uses checked, the kernels that can run on
//! register words planned, the kernels' per-use state prepared, and, on request, a bound on
//! the arena a call needs.
//!
//! | file | role |
//! |---|---|
//! | `typing` | types checked at load (docs/execution.md) |
//! | `scalar_plan` | which kernels run on register words (docs/execution.md, "Scalar registers") |
//! | `prepare` | each kernel use's prepared state (docs/execution.md, "Prepared state") |
//! | `frame_layout` | the frame block a call of a function allocates |
//! | `arena_bound` | a bound on the arena a call needs (docs/bef.md, "Arena sizes") |
//! | `program` | `Program`: the load half's `impl Program` |
//!
//! Nothing here depends on the run half.

#[cfg(feature = "proved-types")]
mod arena_bound;
mod frame_layout;
#[cfg(feature = "prepared")]
mod prepare;
mod program;
#[cfg(feature = "scalar-registers")]
mod scalar_plan;
#[cfg(feature = "proved-types")]
mod typing;

#[cfg(feature = "proved-types")]
pub use arena_bound::Unbounded;
pub(crate) use frame_layout::frame_layout;
pub use program::Program;
#[cfg(feature = "scalar-registers")]
pub(crate) use scalar_plan::{INLINE, MAX_PARAMS, SCALAR, WORD};
