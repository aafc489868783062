//! Error descriptions carried by error async values and returned by fallible APIs.
//!
//! A [`Diagnostic`] is fixed-size (no heap): a code, a message truncated to
//! [`MESSAGE_CAPACITY`] bytes and an optional source location, so it can be built on a
//! microcontroller from `core::fmt` arguments.

use core::fmt::{self, Write};

/// Maximum bytes of a diagnostic message; longer messages are truncated at a char boundary.
pub const MESSAGE_CAPACITY: usize = 112;
/// Maximum bytes of a location's file name; longer names keep their tail.
pub const FILE_CAPACITY: usize = 48;

/// Error codes, the canonical set used by TFRT (and absl/gRPC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(missing_docs)]
pub enum ErrorCode {
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
}

impl ErrorCode {
    /// The upper-case name TFRT prints (`INTERNAL`, `CANCELLED`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ErrorCode::Cancelled => "CANCELLED",
            ErrorCode::Unknown => "UNKNOWN",
            ErrorCode::InvalidArgument => "INVALID_ARGUMENT",
            ErrorCode::DeadlineExceeded => "DEADLINE_EXCEEDED",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::AlreadyExists => "ALREADY_EXISTS",
            ErrorCode::PermissionDenied => "PERMISSION_DENIED",
            ErrorCode::ResourceExhausted => "RESOURCE_EXHAUSTED",
            ErrorCode::FailedPrecondition => "FAILED_PRECONDITION",
            ErrorCode::Aborted => "ABORTED",
            ErrorCode::OutOfRange => "OUT_OF_RANGE",
            ErrorCode::Unimplemented => "UNIMPLEMENTED",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::Unavailable => "UNAVAILABLE",
            ErrorCode::DataLoss => "DATA_LOSS",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A source position (`file:line:col`), as recorded per kernel in BEF.
#[derive(Clone, PartialEq, Eq)]
pub struct Location {
    file: heapless::String<FILE_CAPACITY>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Location {
    /// A location; a file name longer than [`FILE_CAPACITY`] keeps its last bytes.
    pub fn new(file: &str, line: u32, column: u32) -> Self {
        let mut start = file.len().saturating_sub(FILE_CAPACITY);
        while !file.is_char_boundary(start) {
            start += 1;
        }
        let mut name = heapless::String::new();
        // Cannot fail: the tail is at most FILE_CAPACITY bytes.
        let _ = name.push_str(&file[start..]);
        Location { file: name, line, column }
    }

    /// The file name (possibly shortened).
    pub fn file(&self) -> &str {
        &self.file
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An error: code, message and optional location. Fixed size, no heap.
#[derive(Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of failure.
    pub code: ErrorCode,
    message: heapless::String<MESSAGE_CAPACITY>,
    /// Where in the program the error arose, when known.
    pub location: Option<Location>,
}

impl Diagnostic {
    /// A diagnostic with a plain message (truncated to [`MESSAGE_CAPACITY`] bytes).
    pub fn new(code: ErrorCode, message: &str) -> Self {
        let mut d = Diagnostic { code, message: heapless::String::new(), location: None };
        let _ = TruncatingWriter(&mut d.message).write_str(message);
        d
    }

    /// A diagnostic whose message is formatted from `args` (truncated, never fails).
    pub fn fmt(code: ErrorCode, args: fmt::Arguments<'_>) -> Self {
        let mut d = Diagnostic { code, message: heapless::String::new(), location: None };
        let _ = TruncatingWriter(&mut d.message).write_fmt(args);
        d
    }

    /// An `INTERNAL` diagnostic, the code TFRT gives kernel-reported errors.
    pub fn internal(message: &str) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The `CANCELLED` diagnostic used for request cancellation.
    pub fn cancelled() -> Self {
        Self::new(ErrorCode::Cancelled, "Cancelled")
    }

    /// Attach a location.
    pub fn with_location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// The message text.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl fmt::Debug for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Builds a [`Diagnostic`] with a formatted message: `diag!(Internal, "bad {}", x)`.
#[macro_export]
macro_rules! diag {
    ($code:ident, $($arg:tt)*) => {
        $crate::diagnostic::Diagnostic::fmt($crate::diagnostic::ErrorCode::$code, format_args!($($arg)*))
    };
}

/// Writes into a fixed-capacity string, dropping what does not fit (at a char boundary).
struct TruncatingWriter<'a, const N: usize>(&'a mut heapless::String<N>);

impl<const N: usize> Write for TruncatingWriter<'_, N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.0.push(c).is_err() {
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_long_messages_at_char_boundary() {
        let long = "é".repeat(100);
        let d = Diagnostic::new(ErrorCode::Internal, &long);
        assert!(d.message().len() <= MESSAGE_CAPACITY);
        assert!(d.message().chars().all(|c| c == 'é'));
    }

    #[test]
    fn formats_with_location_and_code() {
        let d = diag!(InvalidArgument, "bad value {}", 7).with_location(Location::new("prog.mlir", 3, 9));
        extern crate std;
        assert_eq!(std::format!("{d}"), "prog.mlir:3:9: bad value 7 (INVALID_ARGUMENT)");
    }

    #[test]
    fn long_file_names_keep_their_tail() {
        let path = "a/".repeat(40) + "model.mlir";
        let loc = Location::new(&path, 1, 2);
        assert!(loc.file().ends_with("model.mlir"));
        assert!(loc.file().len() <= FILE_CAPACITY);
    }
}
