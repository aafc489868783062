//! Compile errors reported as `file:line:col: message` followed by the offending line.

use std::fmt;

/// An error located in a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: u32,
    /// 1-based column (0 when unknown).
    pub col: u32,
    pub message: String,
    /// The source line the error points into (empty when unknown).
    pub source_line: String,
}

impl CompileError {
    /// An error at `line:col` of `source` (the whole file text).
    pub fn at(file: &str, source: &str, line: u32, col: u32, message: impl Into<String>) -> Self {
        let source_line = source.lines().nth(line.saturating_sub(1) as usize).unwrap_or("").to_string();
        CompileError { file: file.to_string(), line, col, message: message.into(), source_line }
    }
}

impl fmt::Display for CompileError {
    /// `file:line:col: message`, then the line and a caret under the column.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}", self.file, self.line, self.col, self.message)?;
        if !self.source_line.is_empty() {
            write!(f, "\n{}\n{}^", self.source_line, " ".repeat(self.col.saturating_sub(1) as usize))?;
        }
        Ok(())
    }
}

impl std::error::Error for CompileError {}
