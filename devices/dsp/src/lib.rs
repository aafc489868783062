//! int8 quantized kernels following TensorFlow Lite's int8 scheme, bit for bit: per-channel
//! fully connected, convolution and depthwise convolution, pooling, softmax and log softmax,
//! activation clamps and argmax, on caller-provided slices (no heap, no panics on bad sizes).
//!
//! The convolution-like kernels come in three implementations of their inner loops:
//! [`portable`] (plain int32 arithmetic, any target), [`dsp`] (the Armv7E-M DSP extension's
//! `SXTB16`/`SMLAD`/`SSAT`, as CMSIS-NN; emulated in software elsewhere so the host tests it)
//! and, on x86-64, `x86` (SSE2, the x86-64 baseline: `PMADDWD` on int16, with blocked outer
//! loops: convolution patches gathered four pixels at a time, filters laid out once per call,
//! depthwise input rows staged as int16, the output stage four channels at a time). All give
//! identical results; the functions at the crate root pick `dsp` where the target has the
//! extension, `x86` on x86-64 and `portable` otherwise.
//!
//! ```
//! use hostrt_dsp::{ActivationRange, FullyConnectedParams, PerChannel, fully_connected, quantize_multiplier};
//!
//! // One row of two int8 inputs into one output channel.
//! let params = FullyConnectedParams {
//!     batches: 1,
//!     input_depth: 2,
//!     output_depth: 1,
//!     input_zero_point: 0,
//!     output_zero_point: -1,
//!     activation: ActivationRange::INT8,
//! };
//! // input_scale * filter_scale / output_scale = 0.5
//! let (multiplier, shift) = quantize_multiplier(0.5);
//! let quant = PerChannel { multiplier: &[multiplier], shift: &[shift] };
//! let mut output = [0i8; 1];
//! fully_connected(&params, &[1, 2], &[3, 4], Some(&[2]), quant, &mut output)?;
//! // (1*3 + 2*4 + bias 2) * 0.5 = 6.5, rounded half up to 7, plus the zero point -1.
//! assert_eq!(output, [6]);
//! # Ok::<(), hostrt_dsp::DspError>(())
//! ```
#![no_std]

#[cfg(test)]
extern crate std;

mod activation;
mod add;
mod arch;
mod argmax;
mod conv;
mod depthwise;
mod error;
mod filled;
pub mod fixedpoint;
mod fully_connected;
#[cfg(feature = "kernels")]
pub mod kernels;
mod mul;
mod pool;
pub mod prepack;
mod quant;
mod shape;
mod softmax;
#[cfg(test)]
mod testutil;

pub use activation::{Activation, clamp, clamp_in_place};
pub use add::{AddParams, add, sub};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub use arch::avx2::{has_avx2, has_avx2_fma, has_avx512f, has_vnni};
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub use arch::{avx512, vnni, x86};
pub use arch::{dsp, emulated, portable};
pub use argmax::argmax;
pub use conv::ConvParams;
pub use depthwise::DepthwiseParams;
pub use error::DspError;
pub use fully_connected::FullyConnectedParams;
pub use mul::{MulParams, mul};
pub use pool::{PoolParams, avg_pool, max_pool};
pub use quant::{
    ActivationRange, PerChannel, multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_greater_than_one, quantize_multiplier, rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
};
pub use shape::{Hw, Nhwc, Padding, Window};
pub use softmax::{LogSoftmaxParams, SoftmaxParams, log_softmax, softmax};

/// Whether the crate-root kernels use the DSP extension's instructions on this target.
pub const USES_DSP_INSTRUCTIONS: bool = cfg!(hostrt_arm_dsp);

#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
arch::per_channel_kernels!(@one arch::Best,
    "Fully connected layer with per-channel weights (TFLite's `FullyConnectedPerChannel`), on the \
     best inner loops for the target. See [`FullyConnectedParams`] for the layouts.",
    fully_connected, FullyConnectedParams, fully_connected);
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
arch::per_channel_kernels!(@one arch::Best,
    "Depthwise convolution with per-channel weights (TFLite's `DepthwiseConvPerChannel`), on the \
     best inner loops for the target. See [`DepthwiseParams`] for the layouts.",
    depthwise_conv2d, DepthwiseParams, depthwise);
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
arch::per_channel_kernels!(@one arch::Best,
    "2-D convolution with per-channel weights (TFLite's `ConvPerChannel`), on the best inner loops \
     for the target. See [`ConvParams`] for the layouts.",
    conv2d, ConvParams, conv);

/// On x86-64, the depthwise convolution and fully connected layer pick their loops at run
/// time: AVX-512, AVX2 or SSE2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub use arch::avx512::{depthwise_conv2d, fully_connected, fully_connected_prepacked};
/// On x86-64, the convolution picks its inner loops at run time: AVX-512 VNNI or SSE2.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub use arch::vnni::{conv2d, conv2d_prepacked};

/// [`conv2d`] given the weights also laid out by [`prepack::pack_conv`] or
/// [`prepack::pack_conv_pairs`] (`packed`): only x86-64's loops read those layouts, so here
/// `packed` is not read (nor its
/// length checked: that would cost a microcontroller some 1.5 KB of flash for a layout it
/// never uses) and the filter is read as usual. The results are the same. (Inlined: as a
/// function of its own it changed how the kernel inlines into its caller, costing thumbv6m's
/// fully connected layers 19% more instructions.)
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub fn conv2d_prepacked(
    p: &ConvParams,
    input: &[i8],
    (filter, bias, packed): (&[i8], Option<&[i32]>, Option<prepack::ConvPacked<'_>>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    let _ = packed;
    conv2d(p, input, filter, bias, quant, output)
}

/// [`fully_connected`] given the filter and bias also laid out by
/// [`prepack::pack_fully_connected`] (`packed`): only x86-64's AVX-512 VNNI loop reads it,
/// so here it is not read (as [`conv2d_prepacked`]'s) and `filter` and `bias` are read as
/// usual. The results are the same. (Inlined, as [`conv2d_prepacked`].)
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
pub fn fully_connected_prepacked(
    p: &FullyConnectedParams,
    input: &[i8],
    (filter, bias, packed): (&[i8], Option<&[i32]>, Option<&[u8]>),
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    let _ = packed;
    fully_connected(p, input, filter, bias, quant, output)
}
