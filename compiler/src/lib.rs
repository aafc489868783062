//! `hostrt-compiler`: MLIR `tfrt`-dialect text to BEF and back.
//!
//! - [`text`]: lexer, parser (text → [`ast::Module`]) and printer (AST → text).
//! - [`bef`]: writer (AST → BEF bytes) and decoder (verified BEF → AST).

pub mod ast;
pub mod error;
pub mod text;

pub use error::CompileError;
pub mod bef;
