//! `hostrt-compiler`: MLIR `tfrt`-dialect text to BEF and back.
//!
//! - [`text`]: lexer, parser (text → [`ast::Module`]) and printer (AST → text).
//! - [`bef`]: writer (AST → BEF bytes) and decoder (verified BEF → AST).

pub mod ast;
pub mod error;
pub mod text;

pub use error::CompileError;
pub mod bef;

/// Compile MLIR text to BEF: parse `text` (named `name` in error messages), then write BEF
/// with `options`, errors located as `name:line:col: message` plus the offending line.
///
/// ```
/// let text = "func.func @main() -> i32 {\n  %x = tfrt.constant.i32 42\n  tfrt.return %x : i32\n}\n";
/// let bef = hostrt_compiler::compile("main.mlir", text, Default::default()).unwrap();
/// assert!(bef.starts_with(b"HBEF"));
///
/// let err = hostrt_compiler::compile("bad.mlir", "func.func @f() {\n  tfrt.nope\n", Default::default());
/// assert!(err.unwrap_err().to_string().starts_with("bad.mlir:"));
/// ```
pub fn compile(name: &str, text: &str, options: bef::WriteOptions) -> Result<Vec<u8>, CompileError> {
    let module = text::parse(name, text)?;
    bef::write_with(&module, Some((name, text)), options)
}
