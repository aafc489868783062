//! The textual form: the MLIR `tfrt` dialect as TFRT's test programs write it.
//!
//! [`parse`] turns text into an [`ast::Module`](crate::ast::Module), normalising every custom op
//! form (the table is `forms`) to a plain [`Op`](crate::ast::Op); [`print`] writes a module
//! back in `tfrt_opt` style, using the custom forms wherever they reproduce the op exactly.
//!
//! Conventions of the parsed AST:
//! - custom forms always fill `operand_types` (implied or listed) and `result_types`;
//! - a function body's `Region::args` equal the function's `args`;
//! - a custom form's region argument bound to a pack element `%x#N` is named `x#N`;
//! - `tfrt.if` without `else` gets an else region holding a bare `tfrt.return` located at
//!   the `tfrt.if`; `tfrt.while` without `parallel_iterations(N)` gets `parallel_iterations
//!   = 1 : i64`; benchmark attributes are stored as `name, duration_secs, max_count,
//!   num_warmup_runs`;
//! - integers of signless types are stored sign-extended (`4294967295 : i32` is -1), `ui64`
//!   values above `i64::MAX` as their bit pattern; `f32` floats are rounded to `f32`;
//! - dense attributes (`dense<...> : tensor<...>`) hold every element, whatever form the
//!   literal had (a splat, nested lists, a hex blob); `f16` / `bf16` decimals are rounded to
//!   nearest, ties to even, and a finite literal beyond a float type's range is an error;
//! - `func.func private` is not recorded (the printer writes `private` for declarations);
//! - types are stored canonically: `!t.tensor` (TFRT's older spelling) as `!tfrt_tensor.tensor`;
//! - columns count bytes, as MLIR's do.

mod forms;
mod lexer;
mod parser;
mod printer;

#[cfg(test)]
mod tests;

use crate::CompileError;
use crate::ast::Module;

pub use parser::MAX_NESTING;

/// Parses `source` (the text of `file_name`). Op locations default to
/// `file_name:line:col` of the op name token; errors carry the exact position.
pub fn parse(file_name: &str, source: &str) -> Result<Module, CompileError> {
    parser::parse_module(file_name, source)
}

/// Printer settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrintOptions {
    /// Append ` loc(...)` to every op and function so locations survive a round trip.
    pub locations: bool,
}

/// Prints `module` as MLIR text that [`parse`] reads back to the same module (up to value
/// names, and locations unless `options.locations`).
pub fn print(module: &Module, options: &PrintOptions) -> String {
    printer::print_module(module, options)
}
