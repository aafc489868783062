//! Plain int32 inner loops, for every target: the reference the `dsp` path must match.

use super::InnerLoops;
use crate::quant::{ActivationRange, multiply_by_quantized_multiplier};

/// Marker for the portable inner loops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Portable;

impl InnerLoops for Portable {
    #[inline]
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32 {
        input
            .iter()
            .zip(filter)
            .fold(acc, |acc, (&x, &w)| acc.wrapping_add(i32::from(w) * (i32::from(x) + input_offset)))
    }

    #[inline]
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2] {
        // One load and offset of each input for both filters.
        input.iter().zip(filters[0]).zip(filters[1]).fold(acc, |[a, b], ((&x, &fa), &fb)| {
            let x = i32::from(x) + input_offset;
            [a.wrapping_add(i32::from(fa) * x), b.wrapping_add(i32::from(fb) * x)]
        })
    }

    #[inline]
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]) {
        for ((a, &x), &w) in acc.iter_mut().zip(input).zip(filter) {
            *a = a.wrapping_add(i32::from(w) * (i32::from(x) + input_offset));
        }
    }

    #[inline]
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8 {
        let v = multiply_by_quantized_multiplier(acc, multiplier, shift).wrapping_add(output_offset);
        // act lies within int8 (checked by every kernel), so the cast is exact.
        v.clamp(act.min, act.max) as i8
    }
}

super::per_channel_kernels!(
    Portable,
    "[`crate::fully_connected()`] with the portable inner loops.",
    "[`crate::conv2d()`] with the portable inner loops.",
    "[`crate::depthwise_conv2d()`] with the portable inner loops."
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_and_mac4_add_the_offset_to_the_input() {
        assert_eq!(Portable::dot(&[1, 2, 3], &[4, 5, 6], 10, 7), 7 + 4 * 11 + 5 * 12 + 6 * 13);
        let mut acc = [1, 2, 3, 4];
        Portable::mac4(&[-128, 127, 0, 1], &[127, -128, 2, -1], 128, &mut acc);
        assert_eq!(acc, [1, 2 - 128 * 255, 3 + 256, 4 - 129]);
        assert_eq!(Portable::requantize(1000, 1 << 30, 0, -10, ActivationRange::INT8), 127);
        assert_eq!(Portable::requantize(-50, 1 << 30, 0, 3, ActivationRange::new(0, 127).unwrap()), 0);
    }
}
