//! Argmax over the last axis of int8 data, for turning class scores into predictions.

use crate::error::{DspError, check_len};

/// For each of the `output.len()` rows of `depth` values in `input`, the index of its largest
/// value (the first one on ties, as TFLite's `ArgMax`).
pub fn argmax(input: &[i8], depth: usize, output: &mut [u32]) -> Result<(), DspError> {
    if depth == 0 || depth > u32::MAX as usize {
        return Err(DspError::Param("argmax depth not in 1..=u32::MAX"));
    }
    check_len("input", output.len().checked_mul(depth).ok_or(DspError::Overflow)?, input.len())?;
    for (row, out) in input.chunks_exact(depth).zip(output) {
        let mut best = 0;
        for (i, &x) in row.iter().enumerate() {
            if x > row[best] {
                best = i;
            }
        }
        *out = best as u32;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_maximum_per_row() {
        let mut out = [9u32; 3];
        argmax(&[1, 5, 5, -128, -128, -128, 0, -1, 127], 3, &mut out).unwrap();
        assert_eq!(out, [1, 0, 2]);
        assert!(argmax(&[1, 2], 3, &mut out[..1]).is_err());
        assert!(argmax(&[], 0, &mut []).is_err());
        assert!(argmax(&[], 1, &mut []).is_ok());
    }
}
