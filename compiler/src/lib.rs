//! `hostrt-compiler`: MLIR `tfrt`-dialect text to BEF and back.
//!
//! - [`compile`]: text to BEF bytes in one call.
//! - [`text`]: lexer, parser (text → [`ast::Module`]) and printer (AST → text).
//! - [`bef`]: writer (AST → BEF bytes) and decoder (verified BEF → AST).

pub mod ast;
mod dense;
pub mod error;
mod tensor_ops;
pub mod text;

pub use error::CompileError;
pub mod bef;

/// Compiles the MLIR text `text` of the file `name` to BEF bytes laid out as `options` say:
/// [`text::parse`] then [`bef::write_with`], with the source attached so that every error,
/// the writer's type checks included, is located (`name:line:col: message`, then the line
/// and a caret under the column).
///
/// ```rust
/// use hostrt_compiler::bef::WriteOptions;
///
/// let program = "func.func @main() -> !tfrt.chain {
///   %c = tfrt.new.chain
///   tfrt.return %c : !tfrt.chain
/// }
/// ";
/// let bef = hostrt_compiler::compile("main.mlir", program, WriteOptions::default())?;
/// assert!(!bef.is_empty());
///
/// let wrong = program.replace("-> !tfrt.chain {", "-> i32 {");
/// let err = hostrt_compiler::compile("main.mlir", &wrong, WriteOptions::default()).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "main.mlir:3:3: type of return operand 0 ('!tfrt.chain') doesn't match function \
///      result type ('i32')\n  tfrt.return %c : !tfrt.chain\n  ^"
/// );
/// # Ok::<(), hostrt_compiler::CompileError>(())
/// ```
pub fn compile(name: &str, text: &str, options: bef::WriteOptions) -> Result<Vec<u8>, CompileError> {
    let module = text::parse(name, text)?;
    bef::write_with(&module, Some((name, text)), options)
}
