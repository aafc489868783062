//! The inner loops that differ between implementations. Kernels (`crate::conv`, ...) own the
//! shape checks and outer loops and are generic over [`InnerLoops`]; `portable` and `dsp` each
//! implement it and expose the kernels built on it.

use crate::quant::ActivationRange;

/// The three per-channel kernels (`fully_connected`, `conv2d`, `depthwise_conv2d`) as public
/// functions on the inner loops `$loops`, with the given doc comments.
macro_rules! per_channel_kernels {
    ($loops:ty, $fc:literal, $conv:literal, $depthwise:literal) => {
        $crate::arch::per_channel_kernels!(@one $loops, $fc, fully_connected, FullyConnectedParams, fully_connected);
        $crate::arch::per_channel_kernels!(@one $loops, $conv, conv2d, ConvParams, conv);
        $crate::arch::per_channel_kernels!(@one $loops, $depthwise, depthwise_conv2d, DepthwiseParams, depthwise);
    };
    (@one $loops:ty, $doc:literal, $name:ident, $params:ident, $module:ident) => {
        #[doc = $doc]
        pub fn $name(
            params: &$crate::$params,
            input: &[i8],
            filter: &[i8],
            bias: Option<&[i32]>,
            quant: $crate::PerChannel<'_>,
            output: &mut [i8],
        ) -> Result<(), $crate::DspError> {
            $crate::$module::run::<$loops>(params, input, filter, bias, quant, output)
        }
    };
}
pub(crate) use per_channel_kernels;

#[cfg(hostrt_arm_dsp)]
pub mod asm;
pub mod dsp;
pub mod emulated;
pub mod portable;

/// The inner loops the crate-root kernels use: the DSP extension's where the target has it.
#[cfg(hostrt_arm_dsp)]
pub(crate) type Best = dsp::Dsp;
/// The inner loops the crate-root kernels use: the DSP extension's where the target has it.
#[cfg(not(hostrt_arm_dsp))]
pub(crate) type Best = portable::Portable;

/// The hot loops of the int8 kernels. All arithmetic is modulo 2^32 (TFLite's int32
/// accumulation, with C++'s undefined overflow made wrapping), so any summation order gives
/// the same bits.
pub(crate) trait InnerLoops {
    /// `acc + Σ filter[i] * (input[i] + input_offset)`; the slices have equal lengths.
    fn dot(input: &[i8], filter: &[i8], input_offset: i32, acc: i32) -> i32;

    /// [`InnerLoops::dot`] of one input with two filters of its length, unpacking the input
    /// once for both (two output channels at a time).
    fn dot2(input: &[i8], filters: [&[i8]; 2], input_offset: i32, acc: [i32; 2]) -> [i32; 2];

    /// `acc[c] += filter[c] * (input[c] + input_offset)` for four channels (depthwise).
    fn mac4(input: &[i8; 4], filter: &[i8; 4], input_offset: i32, acc: &mut [i32; 4]);

    /// TFLite's output stage: rescale, add the output offset, clamp to `act` (within int8).
    fn requantize(acc: i32, multiplier: i32, shift: i32, output_offset: i32, act: ActivationRange) -> i8;
}
