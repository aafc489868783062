//! The inner loops that differ between implementations. Kernels (`crate::conv`, ...) own the
//! shape checks and outer loops and are generic over [`InnerLoops`]; `portable` and `dsp` each
//! implement it and expose the kernels built on it.

use crate::quant::ActivationRange;

#[cfg(hostrt_arm_dsp)]
pub mod asm;
pub mod dsp;
pub mod emulated;
pub mod portable;

/// The hot loops of the int8 kernels. All arithmetic is modulo 2^32 (TFLite's int32
/// accumulation, with C++'s undefined overflow made wrapping), so any summation order gives
/// the same bits.
pub(crate) trait InnerLoops {
    /// `acc + Σ filter[i] * (input[i] + input_offset)`; the slices have equal lengths.
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32;

    /// [`InnerLoops::dot`] of one input with two filters of its length, so an
    /// implementation can unpack the input once for both (two output channels at a time).
    #[inline]
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2] {
        [
            Self::dot(input, filters[0], input_offset, acc[0]),
            Self::dot(input, filters[1], input_offset, acc[1]),
        ]
    }

    /// `acc[c] += filter[c] * (input[c] + input_offset)` for four channels (depthwise).
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]);

    /// TFLite's output stage: rescale, add the output offset, clamp to `act` (within int8).
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8;
}
