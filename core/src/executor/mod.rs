//! The BEF executor: runs a function of a loaded program as a dataflow graph of kernels.
//!
//! [`Program::load`] verifies a BEF file and resolves kernel names once;
//! [`Program::execute`] starts a function. The algorithm follows SPEC §2.4 / TFRT's
//! BEFExecutor: a pseudo kernel starts zero-operand kernels and publishes the arguments;
//! kernels whose operands are all available run inline (LIFO); unavailable results are
//! waited on with `and_then`; errors and cancellation poison only downstream kernels;
//! function results are indirect values forwarded when produced. Frames come from the
//! host allocator and are freed when the call's last pending work ends.

mod buf;
mod driver;
mod frame;
mod native;
mod program;
mod run;

pub use driver::{DriverError, DriverOptions, for_each_function_in_order, write_c_exp, write_result};
pub use program::Program;
pub use run::MAX_STACK_DEPTH;
