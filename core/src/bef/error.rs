//! Why a BEF file was rejected: a byte offset and a reason, or an unknown kernel with its
//! source location.

use core::fmt;

use crate::diagnostic::{DiagArg, Diagnostic, ErrorCode, FixedStr, Location, MessageText, display_diag_arg};

/// What is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BefErrorKind {
    /// Shorter than its header, or `file_size` differs from the buffer length.
    Truncated,
    /// The buffer is not 8-byte aligned in memory.
    Misaligned,
    /// Not a BEF file.
    BadMagic,
    /// The CRC-32 in the header does not match the contents (corrupted file).
    BadChecksum,
    /// A major version this reader does not understand.
    UnsupportedVersion,
    /// A section lies outside the file, is misaligned, is duplicated, or has a bad size.
    BadSection,
    /// A required section is absent.
    MissingSection,
    /// A string reference is out of range or not UTF-8.
    BadString,
    /// An index (type, kernel, function, register, location, attribute, pool) is out of range.
    BadIndex,
    /// An attribute blob is malformed.
    BadAttribute,
    /// A function record is inconsistent (signature, registers, kernels, results).
    BadFunction,
    /// A kernel record is inconsistent (arguments, results, users).
    BadKernel,
    /// A kernel name is not in the registry.
    UnknownKernel,
    /// A native function declaration names no registered function (docs/execution.md).
    UnknownNativeFunction,
    /// The file declares a native function, and this build has no native-function support
    /// (hostrt-core's `native` feature is off).
    NativeNotBuilt,
    /// The scratch memory verification needs could not be allocated.
    OutOfMemory,
    /// A kernel's argument holds a type its signature does not take (known at load from
    /// the registered signatures of both kernels; docs/execution.md, "Types checked at
    /// load").
    ArgumentType,
}

impl BefErrorKind {
    fn text(self) -> &'static str {
        match self {
            BefErrorKind::Truncated => "file truncated or size field wrong",
            BefErrorKind::Misaligned => "buffer is not 8-byte aligned",
            BefErrorKind::BadMagic => "not a BEF file (bad magic)",
            BefErrorKind::BadChecksum => "checksum mismatch (file corrupted)",
            BefErrorKind::UnsupportedVersion => "unsupported BEF major version",
            BefErrorKind::BadSection => "malformed section directory entry",
            BefErrorKind::MissingSection => "required section missing",
            BefErrorKind::BadString => "string out of range or not UTF-8",
            BefErrorKind::BadIndex => "index out of range",
            BefErrorKind::BadAttribute => "malformed attribute",
            BefErrorKind::BadFunction => "inconsistent function record",
            BefErrorKind::BadKernel => "inconsistent kernel record",
            BefErrorKind::UnknownKernel => "unknown kernel",
            BefErrorKind::UnknownNativeFunction => "unable to find native function in global registry",
            BefErrorKind::NativeNotBuilt => {
                "native functions are not built in (hostrt-core's `native` feature)"
            }
            BefErrorKind::OutOfMemory => "out of memory for verification scratch",
            BefErrorKind::ArgumentType => "kernel argument of the wrong type",
        }
    }
}

/// Bytes of [`BefError::detail`]: 64, or 0 without the `diagnostic-text` feature (an image
/// that reports errors as codes keeps neither the details nor the code that copies them).
pub const DETAIL_CAPACITY: usize = if cfg!(feature = "diagnostic-text") { 64 } else { 0 };

/// A load error. Never a panic: every malformed input maps to one of these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BefError {
    /// What is wrong.
    pub kind: BefErrorKind,
    /// Byte offset in the file where the problem was found.
    pub offset: usize,
    /// More detail (the unknown kernel's name, the failing field); empty without the
    /// `diagnostic-text` feature ([`DETAIL_CAPACITY`]).
    pub detail: FixedStr<DETAIL_CAPACITY>,
    /// Source location, for errors about a specific kernel.
    pub location: Option<Location>,
}

impl BefError {
    pub(crate) fn new(kind: BefErrorKind, offset: usize, detail: &str) -> Self {
        BefError { kind, offset, detail: FixedStr::new(detail, false), location: None }
    }
}

impl DiagArg for BefError {
    fn write_diag(&self, out: &mut MessageText) {
        let detail = self.detail.as_str();
        if matches!(self.kind, BefErrorKind::UnknownKernel | BefErrorKind::ArgumentType) {
            if let Some(loc) = &self.location {
                loc.write_diag(out);
                out.push_str(": ");
            }
            if self.kind == BefErrorKind::ArgumentType {
                return crate::write_diag!(out, "{} (BEF offset {})", detail, self.offset);
            }
            return crate::write_diag!(out, "unknown kernel '{}' (BEF offset {})", detail, self.offset);
        }
        crate::write_diag!(out, "invalid BEF at byte offset {}: {}", self.offset, self.kind.text());
        if !detail.is_empty() {
            crate::write_diag!(out, " ({})", detail);
        }
    }
}

impl fmt::Display for BefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display_diag_arg(self, f)
    }
}

impl From<BefError> for Diagnostic {
    fn from(e: BefError) -> Self {
        let mut d = Diagnostic::from_arg(ErrorCode::InvalidArgument, &e);
        if e.kind == BefErrorKind::UnknownKernel {
            d.code = ErrorCode::NotFound;
        }
        d.location = e.location;
        d
    }
}
