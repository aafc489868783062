//! The one error type of every kernel: a bad size or parameter is reported, never a panic.

use core::fmt;

/// Why a kernel refused its arguments. Kernels check everything before touching a buffer, so
/// an error leaves the output untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DspError {
    /// A slice has the wrong length for the shape (`what` names the argument).
    Length {
        /// The argument: "input", "filter", "bias", "multiplier", "shift" or "output".
        what: &'static str,
        /// The length the shape asks for.
        expected: usize,
        /// The length given.
        actual: usize,
    },
    /// A parameter is out of its range (zero stride, activation range outside int8, shift
    /// outside [-31, 30], ...).
    Param(&'static str),
    /// The shape's element count or coordinates overflow `usize` / `isize`.
    Overflow,
    /// A pooling window lies entirely in the padding (TFLite's kernel fails there too).
    EmptyWindow,
}

impl fmt::Display for DspError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DspError::Length { what, expected, actual } => {
                write!(f, "{what}: expected {expected} elements, got {actual}")
            }
            DspError::Param(what) => write!(f, "invalid parameter: {what}"),
            DspError::Overflow => f.write_str("shape overflows the address space"),
            DspError::EmptyWindow => f.write_str("pooling window covers no input element"),
        }
    }
}

/// `Ok` if `actual == expected`, else the `Length` error for `what`.
pub(crate) fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<(), DspError> {
    if expected == actual { Ok(()) } else { Err(DspError::Length { what, expected, actual }) }
}

/// The product of `dims`, or `Overflow`.
pub(crate) fn product(dims: &[usize]) -> Result<usize, DspError> {
    dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).ok_or(DspError::Overflow)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_lengths_and_products() {
        assert_eq!(check_len("input", 3, 3), Ok(()));
        assert_eq!(check_len("input", 3, 2), Err(DspError::Length { what: "input", expected: 3, actual: 2 }));
        assert_eq!(product(&[2, 3, 4]), Ok(24));
        assert_eq!(product(&[usize::MAX, 2]), Err(DspError::Overflow));
    }
}
