//! Error descriptions carried by error async values and returned by fallible APIs.
//!
//! A [`Diagnostic`] is fixed-size (no heap): a code, a message truncated to
//! [`MESSAGE_CAPACITY`] bytes and an optional source location, so it can be built on a
//! microcontroller from `core::fmt` arguments.

use core::fmt::{self, Write};

/// Maximum bytes of a diagnostic message; longer messages are truncated at a char boundary.
/// (TFRT's tensor messages with a file path or two shapes run past 150 bytes.)
pub const MESSAGE_CAPACITY: usize = 192;
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

/// Inline text of at most `N` bytes; longer input is truncated at a char boundary.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FixedStr<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

impl<const N: usize> FixedStr<N> {
    const CHECK: () = assert!(N <= 255, "FixedStr holds at most 255 bytes");

    /// The first bytes of `s` that fit (at a char boundary); `from_end` keeps the tail.
    pub const fn new(s: &str, from_end: bool) -> Self {
        let () = Self::CHECK;
        let b = s.as_bytes();
        let mut start = 0;
        let mut end = b.len();
        if b.len() > N {
            if from_end {
                start = b.len() - N;
                while start < b.len() && (b[start] & 0xC0) == 0x80 {
                    start += 1;
                }
            } else {
                end = N;
                while end > 0 && (b[end] & 0xC0) == 0x80 {
                    end -= 1;
                }
            }
        }
        let mut bytes = [0u8; N];
        let mut i = start;
        while i < end {
            bytes[i - start] = b[i];
            i += 1;
        }
        FixedStr { len: (end - start) as u8, bytes }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        // Only whole UTF-8 sequences are ever copied in (`new` and `write_str` cut at char
        // boundaries), so this cannot fail; fall back to "" rather than trusting it blindly.
        core::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }
}

impl<const N: usize> fmt::Debug for FixedStr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> Write for FixedStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut buf = [0u8; 4];
            let enc = c.encode_utf8(&mut buf).as_bytes();
            let at = self.len as usize;
            if at + enc.len() > N {
                return Err(fmt::Error);
            }
            self.bytes[at..at + enc.len()].copy_from_slice(enc);
            self.len += enc.len() as u8;
        }
        Ok(())
    }
}

/// A source position (`file:line:col`), as recorded per kernel in BEF.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Location {
    file: FixedStr<FILE_CAPACITY>,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl Location {
    /// A location; a file name longer than [`FILE_CAPACITY`] keeps its last bytes.
    pub const fn new(file: &str, line: u32, column: u32) -> Self {
        Location { file: FixedStr::new(file, true), line, column }
    }

    /// The file name (possibly shortened).
    pub fn file(&self) -> &str {
        self.file.as_str()
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file(), self.line, self.column)
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An error: code, message and optional location. Fixed size, no heap, so firmware can
/// build one from `core::fmt` arguments.
#[derive(Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// What kind of failure.
    pub code: ErrorCode,
    message: FixedStr<MESSAGE_CAPACITY>,
    /// Where in the program the error arose, when known.
    pub location: Option<Location>,
}

impl Diagnostic {
    /// A diagnostic with a plain message (truncated to [`MESSAGE_CAPACITY`] bytes).
    pub const fn new(code: ErrorCode, message: &str) -> Self {
        Diagnostic { code, message: FixedStr::new(message, false), location: None }
    }

    /// A diagnostic whose message is formatted from `args` (truncated, never fails).
    pub fn fmt(code: ErrorCode, args: fmt::Arguments<'_>) -> Self {
        let mut d = Diagnostic::new(code, "");
        let _ = d.message.write_fmt(args);
        d
    }

    /// An `INTERNAL` diagnostic, the code TFRT gives kernel-reported errors.
    pub const fn internal(message: &str) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// The `CANCELLED` diagnostic used for request cancellation.
    pub const fn cancelled() -> Self {
        Self::new(ErrorCode::Cancelled, "Cancelled")
    }

    /// Attach a location.
    pub fn with_location(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// The message text.
    pub fn message(&self) -> &str {
        self.message.as_str()
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        write!(f, "{} ({})", self.message(), self.code)
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
    fn const_construction_truncates_both_ways() {
        const D: Diagnostic = Diagnostic::new(ErrorCode::Cancelled, "Cancelled");
        assert_eq!(D.message(), "Cancelled");
        let s: FixedStr<4> = FixedStr::new("aéé", false);
        assert_eq!(s.as_str(), "aé");
        let s: FixedStr<4> = FixedStr::new("ééa", true);
        assert_eq!(s.as_str(), "éa");
    }

    #[test]
    fn long_file_names_keep_their_tail() {
        let path = "a/".repeat(40) + "model.mlir";
        let loc = Location::new(&path, 1, 2);
        assert!(loc.file().ends_with("model.mlir"));
        assert!(loc.file().len() <= FILE_CAPACITY);
    }
}
