//! Error descriptions carried by error async values and returned by fallible APIs.
//!
//! A [`Diagnostic`] is fixed-size (no heap): a code, a message truncated to
//! [`MESSAGE_CAPACITY`] bytes and an optional source location, so it can be built on a
//! microcontroller. [`diag!`](crate::diag!) builds its message with hostrt's own few-hundred-byte
//! formatter (strings and integers into a `{}` template), so an image that never formats
//! anything else links no `core::fmt` (docs/porting.md); [`diag_fmt!`](crate::diag_fmt!)
//! takes `core::fmt` arguments for messages that show richer values (tensor shapes).

use core::fmt::{self, Write};

/// Maximum bytes of a diagnostic message; longer messages are truncated at a char boundary.
/// (TFRT's tensor messages with a file path or two shapes run past 150 bytes.) Without the
/// `diagnostic-text` feature, 0: messages are empty.
pub const MESSAGE_CAPACITY: usize = if cfg!(feature = "diagnostic-text") { 192 } else { 0 };
/// Maximum bytes of a location's file name; longer names keep their tail. Without the
/// `diagnostic-text` feature, 0: a location keeps its line and column only.
pub const FILE_CAPACITY: usize = if cfg!(feature = "diagnostic-text") { 48 } else { 0 };

/// Defines [`ErrorCode`] from the one table of error codes below: each code's variant, its
/// number and the name TFRT prints. The numbers are also TensorFlow's `TF_Code` and the
/// embedding API's `hostrt_code` (docs/capi.md, docs/embedding.md), which take them from here.
macro_rules! error_codes {
    ($($variant:ident = $number:literal $name:literal,)*) => {
        /// Error codes, the canonical set used by TFRT (and absl/gRPC).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        #[allow(missing_docs)]
        pub enum ErrorCode {
            $($variant = $number,)*
        }

        impl ErrorCode {
            /// The upper-case name TFRT prints (`INTERNAL`, `CANCELLED`, ...).
            pub const fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)*
                }
            }

            /// The code numbered `number` (TensorFlow's and gRPC's numbers); `None` for 0
            /// (success) and for numbers no code has.
            pub const fn from_number(number: i32) -> Option<ErrorCode> {
                match number {
                    $($number => Some(ErrorCode::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

error_codes! {
    Cancelled = 1 "CANCELLED",
    Unknown = 2 "UNKNOWN",
    InvalidArgument = 3 "INVALID_ARGUMENT",
    DeadlineExceeded = 4 "DEADLINE_EXCEEDED",
    NotFound = 5 "NOT_FOUND",
    AlreadyExists = 6 "ALREADY_EXISTS",
    PermissionDenied = 7 "PERMISSION_DENIED",
    ResourceExhausted = 8 "RESOURCE_EXHAUSTED",
    FailedPrecondition = 9 "FAILED_PRECONDITION",
    Aborted = 10 "ABORTED",
    OutOfRange = 11 "OUT_OF_RANGE",
    Unimplemented = 12 "UNIMPLEMENTED",
    Internal = 13 "INTERNAL",
    Unavailable = 14 "UNAVAILABLE",
    DataLoss = 15 "DATA_LOSS",
    Unauthenticated = 16 "UNAUTHENTICATED",
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
        // SAFETY: only whole UTF-8 sequences are ever copied in (`new` and `push_str` cut at
        // char boundaries of valid `str`s, `push_decimal` writes ASCII), and the fields are
        // private, so the first `len` bytes are always valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(&self.bytes[..self.len as usize]) }
    }

    /// Append as much of `s` as fits, cut at a char boundary; `false` if anything was cut.
    pub fn push_str(&mut self, s: &str) -> bool {
        let at = self.len as usize;
        let mut n = s.len().min(N - at);
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        self.bytes[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n as u8;
        n == s.len()
    }

    /// Bytes still free.
    fn room(&self) -> usize {
        N - self.len as usize
    }

    /// Append `v` in decimal, with a leading `-` when `negative`. Divides 16-bit limbs with
    /// 32-bit arithmetic: a 64-bit division would link the ~900-byte `__aeabi_uldivmod` into
    /// 32-bit firmware.
    fn push_decimal(&mut self, negative: bool, v: u64) {
        let mut limbs =
            [(v >> 48) as u32, (v >> 32) as u32 & 0xFFFF, (v >> 16) as u32 & 0xFFFF, v as u32 & 0xFFFF];
        let mut digits = [0u8; 21];
        let mut i = digits.len();
        loop {
            let (mut rem, mut rest) = (0u32, 0u32);
            for limb in &mut limbs {
                let cur = (rem << 16) | *limb;
                *limb = cur / 10;
                rem = cur % 10;
                rest |= *limb;
            }
            i -= 1;
            digits[i] = b'0' + rem as u8;
            if rest == 0 {
                break;
            }
        }
        if negative {
            i -= 1;
            digits[i] = b'-';
        }
        for &d in &digits[i..] {
            if self.len as usize == N {
                return;
            }
            self.bytes[self.len as usize] = d;
            self.len += 1;
        }
    }
}

impl<const N: usize> fmt::Debug for FixedStr<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> Write for FixedStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.push_str(s) { Ok(()) } else { Err(fmt::Error) }
    }
}

/// The text of a diagnostic message.
pub type MessageText = FixedStr<MESSAGE_CAPACITY>;

impl MessageText {
    /// Append `template` with each `{}` replaced by the next of `args` ([`diag!`]'s and
    /// [`write_diag!`]'s work). Once something is cut, nothing more is added, so the text
    /// stays a prefix of the whole.
    pub fn push_template(&mut self, template: &str, args: &[&dyn DiagArg]) {
        let (mut rest, mut args) = (template, args.iter());
        // `{` is ASCII, so every cut below is at a char boundary (checked, never a panic).
        while let Some(at) = rest.as_bytes().windows(2).position(|w| w == b"{}")
            && let Some((text, hole)) = rest.split_at_checked(at)
        {
            if !self.push_str(text) {
                return;
            }
            if let Some(a) = args.next() {
                a.write_diag(self);
                // A cut argument leaves less room than one character (4 bytes).
                if self.room() < 4 {
                    return;
                }
            }
            rest = hole.get(2..).unwrap_or("");
        }
        self.push_str(rest);
    }
}

/// A value that [`diag!`](crate::diag!) can show: strings, integers and hostrt's enums,
/// written by hostrt's own code rather than `core::fmt`.
pub trait DiagArg {
    /// Append the value's text to `out` (truncated when full).
    fn write_diag(&self, out: &mut MessageText);
}

impl DiagArg for str {
    fn write_diag(&self, out: &mut MessageText) {
        out.push_str(self);
    }
}

impl<T: DiagArg + ?Sized> DiagArg for &T {
    fn write_diag(&self, out: &mut MessageText) {
        (**self).write_diag(out)
    }
}

macro_rules! diag_arg_unsigned {
    ($($t:ty),*) => {$(
        impl DiagArg for $t {
            fn write_diag(&self, out: &mut MessageText) {
                out.push_decimal(false, *self as u64)
            }
        }
    )*};
}
macro_rules! diag_arg_signed {
    ($($t:ty),*) => {$(
        impl DiagArg for $t {
            fn write_diag(&self, out: &mut MessageText) {
                out.push_decimal(*self < 0, (*self as i64).unsigned_abs())
            }
        }
    )*};
}
diag_arg_unsigned!(u8, u16, u32, u64, usize);
diag_arg_signed!(i8, i16, i32, i64, isize);

impl DiagArg for ErrorCode {
    fn write_diag(&self, out: &mut MessageText) {
        out.push_str(self.name());
    }
}

/// `Display` through [`DiagArg`], for types whose text is written once, for both.
pub(crate) fn display_diag_arg(v: &dyn DiagArg, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut text = MessageText::new("", false);
    v.write_diag(&mut text);
    f.write_str(text.as_str())
}

/// Check a [`diag!`](crate::diag!) template at compile time: only `{}` placeholders, exactly
/// `args` of them.
#[doc(hidden)]
pub const fn check_template(template: &str, args: usize) {
    let b = template.as_bytes();
    let (mut i, mut holes) = (0, 0);
    while i < b.len() {
        if b[i] == b'{' {
            assert!(
                i + 1 < b.len() && b[i + 1] == b'}',
                "diag!: only `{{}}` placeholders (use diag_fmt! for named or formatted ones)"
            );
            holes += 1;
            i += 1;
        } else {
            assert!(b[i] != b'}', "diag!: unmatched `}}` in the template");
        }
        i += 1;
    }
    assert!(holes == args, "diag!: the template's `{{}}` count differs from the number of arguments");
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

    /// The file name (possibly shortened; empty without the `diagnostic-text` feature).
    pub fn file(&self) -> &str {
        self.file.as_str()
    }
}

/// `file:line:col`, or `line:col` without a file name (as without `diagnostic-text`).
impl DiagArg for Location {
    fn write_diag(&self, out: &mut MessageText) {
        if self.file().is_empty() {
            return crate::write_diag!(out, "{}:{}", self.line, self.column);
        }
        crate::write_diag!(out, "{}:{}:{}", self.file(), self.line, self.column);
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if cfg!(feature = "diagnostic-text") {
            return display_diag_arg(self, f); // `line:col` when there is no file name
        }
        // Without `diagnostic-text` the buffer `DiagArg` writes to holds nothing (a diagnostic
        // would show as ": CODE"), and no file name is kept: the numbers, directly.
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// `file:line:col` as a defmt frame's text (feature `defmt`).
#[cfg(feature = "defmt")]
impl defmt::Format for Location {
    fn format(&self, f: defmt::Formatter<'_>) {
        if self.file().is_empty() {
            return defmt::write!(f, "{=u32}:{=u32}", self.line, self.column);
        }
        defmt::write!(f, "{=str}:{=u32}:{=u32}", self.file(), self.line, self.column);
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An error: code, message and optional location. Fixed size, no heap, so firmware can
/// build one from `core::fmt` arguments.
#[derive(Clone, Copy, PartialEq, Eq)]
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
        #[cfg(feature = "diagnostic-text")]
        {
            let mut d = Diagnostic::new(code, "");
            let _ = d.message.write_fmt(args);
            d
        }
        #[cfg(not(feature = "diagnostic-text"))]
        {
            let _ = args;
            Diagnostic::new(code, "")
        }
    }

    /// A diagnostic whose message is `template` with each `{}` replaced by the next of
    /// `args` (what [`diag!`](crate::diag!) expands to; one copy for every call site).
    pub fn with_args(code: ErrorCode, template: &str, args: &[&dyn DiagArg]) -> Self {
        #[cfg(feature = "diagnostic-text")]
        {
            let mut d = Diagnostic::new(code, "");
            d.message.push_template(template, args);
            d
        }
        #[cfg(not(feature = "diagnostic-text"))]
        {
            let _ = (template, args);
            Diagnostic::new(code, "")
        }
    }

    /// A diagnostic whose message is the text of `arg` (an error type's own words).
    pub fn from_arg(code: ErrorCode, arg: &dyn DiagArg) -> Self {
        Self::with_args(code, "{}", &[arg])
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
        if self.message().is_empty() {
            // Without message text (feature `diagnostic-text` off), the code alone.
            return write!(f, "{}", self.code);
        }
        write!(f, "{} ({})", self.message(), self.code)
    }
}

/// What `Display` writes (`file:line:col: message (CODE)`), as defmt (feature `defmt`); no
/// newline, so a frame printing it as a line of hostrt's text adds its own `\n`.
#[cfg(feature = "defmt")]
impl defmt::Format for Diagnostic {
    fn format(&self, f: defmt::Formatter<'_>) {
        if let Some(loc) = &self.location {
            defmt::write!(f, "{}: ", loc);
        }
        if self.message().is_empty() {
            return defmt::write!(f, "{=str}", self.code.name());
        }
        defmt::write!(f, "{=str} ({=str})", self.message(), self.code.name());
    }
}

impl fmt::Debug for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Builds a [`Diagnostic`] from a `{}` template and [`DiagArg`] values (strings, integers),
/// without `core::fmt`; the template is checked at compile time.
///
/// ```
/// use hostrt_core::diag;
/// let d = diag!(InvalidArgument, "argument {} has type {}", 2, "f32");
/// assert_eq!(d.message(), "argument 2 has type f32");
/// ```
#[cfg(feature = "diagnostic-text")]
#[macro_export]
macro_rules! diag {
    ($code:ident, $template:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = $crate::diagnostic::check_template($template, <[&str]>::len(&[$(stringify!($arg)),*]));
        $crate::diagnostic::Diagnostic::with_args(
            $crate::diagnostic::ErrorCode::$code,
            $template,
            &[$(&$arg as &dyn $crate::diagnostic::DiagArg),*],
        )
    }};
}

/// [`diag!`] without the `diagnostic-text` feature: the template is still checked and the
/// arguments evaluated, but only the code is kept, so neither the template nor the
/// arguments' text code is linked.
#[cfg(not(feature = "diagnostic-text"))]
#[macro_export]
macro_rules! diag {
    ($code:ident, $template:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = $crate::diagnostic::check_template($template, <[&str]>::len(&[$(stringify!($arg)),*]));
        $(let _ = &$arg;)*
        $crate::diagnostic::Diagnostic::new($crate::diagnostic::ErrorCode::$code, "")
    }};
}

/// Appends a checked `{}` template filled with [`DiagArg`] values to a [`MessageText`]
/// (for `DiagArg` impls that write a sentence of their own).
#[macro_export]
macro_rules! write_diag {
    ($out:expr, $template:literal $(, $arg:expr)* $(,)?) => {{
        const _: () = $crate::diagnostic::check_template($template, <[&str]>::len(&[$(stringify!($arg)),*]));
        $out.push_template($template, &[$(&$arg as &dyn $crate::diagnostic::DiagArg),*])
    }};
}

/// Builds a [`Diagnostic`] with a `core::fmt` message, for values [`diag!`](crate::diag!)
/// cannot show: `diag_fmt!(Internal, "shape {shape} has rank {}", r)`.
#[macro_export]
macro_rules! diag_fmt {
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

    /// Every number from 1 to 16 is a code, and back; 0 (success) and the rest are none.
    #[test]
    fn codes_round_trip_through_their_numbers() {
        for n in -1..=17 {
            let code = ErrorCode::from_number(n);
            assert_eq!(code.map(|c| c as i32), (1..=16).contains(&n).then_some(n), "{n}");
        }
        assert_eq!(ErrorCode::from_number(13).map(ErrorCode::name), Some("INTERNAL"));
    }

    #[test]
    fn formats_with_location_and_code() {
        let d = diag!(InvalidArgument, "bad value {}", 7).with_location(Location::new("prog.mlir", 3, 9));
        extern crate std;
        assert_eq!(std::format!("{d}"), "prog.mlir:3:9: bad value 7 (INVALID_ARGUMENT)");
    }

    /// A location without a file name (every location without `diagnostic-text`) shows as
    /// `line:col`, in a diagnostic's text and in its `Display`.
    #[test]
    fn a_location_without_a_file_shows_line_and_column() {
        extern crate std;
        let loc = Location::new("", 3, 9);
        assert_eq!(std::format!("{loc}"), "3:9");
        let d = diag!(Internal, "at {}", loc).with_location(loc);
        assert_eq!(std::format!("{d}"), "3:9: at 3:9 (INTERNAL)");
    }

    #[test]
    fn diag_fills_its_template_without_core_fmt() {
        let d = diag!(Internal, "{} of {}: {}{}", -12i32, u64::MAX, "é", ErrorCode::Cancelled);
        assert_eq!(d.message(), "-12 of 18446744073709551615: éCANCELLED");
        assert_eq!(diag!(Internal, "none").message(), "none");
        assert_eq!(diag!(Internal, "{}", i64::MIN).message(), "-9223372036854775808");
        // Truncation cuts at a char boundary, for strings and digits alike.
        let long = "é".repeat(MESSAGE_CAPACITY);
        let d = diag!(Internal, "{}{}", long.as_str(), 7);
        assert!(d.message().chars().all(|c| c == 'é') && d.message().len() == MESSAGE_CAPACITY);
        // Nothing follows a cut: the message is always a prefix of the whole text.
        let pad = "a".repeat(MESSAGE_CAPACITY - 6);
        let d = diag!(Internal, "{}{}:{}", pad.as_str(), "éé€", 1);
        assert_eq!(d.message(), pad.clone() + "éé", "'€' did not fit, so neither does ':1'");
        let d = diag!(Internal, "{}{}{}", pad.as_str(), "abcd", 12345);
        assert!((pad.clone() + "abcd12345").starts_with(d.message()));
        let d = diag!(Internal, "{}€€ and more", pad.as_str());
        assert_eq!(d.message(), pad + "€€");
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
