//! Model operator kernels (`nn.*`): the layers imported TensorFlow Lite models run, over one
//! activation arena planned at import time (docs/models.md).
//!
//! A model's function allocates the arena once (`nn.arena`), copies its inputs in
//! (`nn.input`), runs one kernel per layer in a chain, and copies its outputs out
//! (`nn.output`). Each layer kernel reads and writes the arena at the byte offsets its
//! attributes give; its weights are `dense` attributes read in place. int8 layers follow
//! TensorFlow Lite Micro's reference kernels bit for bit (the arithmetic is `hostrt-dsp`'s);
//! float32 layers follow TensorFlow Lite's reference kernels.
//!
//! Failure contract: every attribute, offset and shape is checked when the kernel runs; a
//! bad one is an `INVALID_ARGUMENT` error naming the kernel (and, through the kernel's
//! location, the model's layer), never a panic or an out-of-bounds access. The arena that
//! cannot be allocated is `RESOURCE_EXHAUSTED`.
//!
//! ```
//! use hostrt_core::KernelRegistry;
//! use hostrt_core::kernel::KernelLookup;
//!
//! let mut registry: KernelRegistry<64> = KernelRegistry::new();
//! registry.add_entries(hostrt_ops::KERNELS)?;
//! assert!(registry.lookup("nn.conv_2d.i8").is_some());
//! # Ok::<(), hostrt_core::kernel::RegistryError>(())
//! ```
#![no_std]
// Kernels build hostrt-core's `Diagnostic` by value, as every kernel does.
#![allow(clippy::result_large_err)]

#[cfg(test)]
extern crate std;

mod activation;
mod arena;
mod attrs;
mod conv;
mod elementwise;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod float_x86;
mod fully_connected;
mod hybrid;
mod lstm;
mod matmul;
mod movement;
mod pool;
mod quantize;
mod reduce;
mod resize;
mod softmax;
mod transpose_conv;

pub use arena::Arena;

use hostrt_core::kernel::KernelEntry;

/// Every `nn.*` kernel.
pub const KERNELS: &[KernelEntry] = &[
    KernelEntry::strict("nn.arena", arena::arena),
    KernelEntry::strict("nn.input", arena::input),
    KernelEntry::strict("nn.output", arena::output),
    KernelEntry::strict("nn.constant", arena::constant),
    KernelEntry::strict("nn.copy", movement::copy),
    KernelEntry::strict("nn.fill", movement::fill),
    KernelEntry::strict("nn.conv_2d.i8", conv::conv_2d_i8),
    KernelEntry::strict("nn.conv_2d.f32", conv::conv_2d_f32),
    KernelEntry::strict("nn.depthwise_conv_2d.i8", conv::depthwise_conv_2d_i8),
    KernelEntry::strict("nn.depthwise_conv_2d.f32", conv::depthwise_conv_2d_f32),
    KernelEntry::strict("nn.transpose_conv.i8", transpose_conv::transpose_conv_i8),
    KernelEntry::strict("nn.transpose_conv.f32", transpose_conv::transpose_conv_f32),
    KernelEntry::strict("nn.fully_connected.i8", fully_connected::fully_connected_i8),
    KernelEntry::strict("nn.fully_connected.f32", fully_connected::fully_connected_f32),
    KernelEntry::strict("nn.fully_connected.hybrid", hybrid::fully_connected_hybrid),
    KernelEntry::strict("nn.conv_2d.hybrid", hybrid::conv_2d_hybrid),
    KernelEntry::strict("nn.depthwise_conv_2d.hybrid", hybrid::depthwise_conv_2d_hybrid),
    KernelEntry::strict("nn.lstm.i8", lstm::lstm_i8),
    KernelEntry::strict("nn.lstm.f32", lstm::lstm_f32),
    KernelEntry::strict("nn.max_pool_2d.i8", pool::max_pool_2d_i8),
    KernelEntry::strict("nn.max_pool_2d.f32", pool::max_pool_2d_f32),
    KernelEntry::strict("nn.average_pool_2d.i8", pool::average_pool_2d_i8),
    KernelEntry::strict("nn.average_pool_2d.f32", pool::average_pool_2d_f32),
    KernelEntry::strict("nn.add.i8", elementwise::add_i8),
    KernelEntry::strict("nn.add.f32", elementwise::add_f32),
    KernelEntry::strict("nn.sub.i8", elementwise::sub_i8),
    KernelEntry::strict("nn.sub.f32", elementwise::sub_f32),
    KernelEntry::strict("nn.squared_difference.i8", elementwise::squared_difference_i8),
    KernelEntry::strict("nn.squared_difference.f32", elementwise::squared_difference_f32),
    KernelEntry::strict("nn.maximum.i8", elementwise::maximum_i8),
    KernelEntry::strict("nn.maximum.f32", elementwise::maximum_f32),
    KernelEntry::strict("nn.minimum.i8", elementwise::minimum_i8),
    KernelEntry::strict("nn.minimum.f32", elementwise::minimum_f32),
    KernelEntry::strict("nn.prelu.i8", elementwise::prelu_i8),
    KernelEntry::strict("nn.prelu.f32", elementwise::prelu_f32),
    KernelEntry::strict("nn.mul.i8", elementwise::mul_i8),
    KernelEntry::strict("nn.mul.f32", elementwise::mul_f32),
    KernelEntry::strict("nn.clamp.f32", activation::clamp_f32),
    KernelEntry::strict("nn.leaky_relu.f32", activation::leaky_relu_f32),
    KernelEntry::strict("nn.logistic.f32", activation::logistic_f32),
    KernelEntry::strict("nn.tanh.f32", activation::tanh_f32),
    KernelEntry::strict("nn.hard_swish.f32", activation::hard_swish_f32),
    KernelEntry::strict("nn.lookup.i8", activation::lookup_i8),
    KernelEntry::strict("nn.log_softmax.f32", activation::log_softmax_f32),
    KernelEntry::strict("nn.log_softmax.i8", softmax::log_softmax_i8),
    KernelEntry::strict("nn.sum.i8", reduce::sum_i8),
    KernelEntry::strict("nn.sum.f32", reduce::sum_f32),
    KernelEntry::strict("nn.batch_matmul.i8", matmul::batch_matmul_i8),
    KernelEntry::strict("nn.batch_matmul.f32", matmul::batch_matmul_f32),
    KernelEntry::strict("nn.resize_nearest", resize::resize_nearest),
    KernelEntry::strict("nn.resize_bilinear.i8", resize::resize_bilinear_i8),
    KernelEntry::strict("nn.resize_bilinear.f32", resize::resize_bilinear_f32),
    KernelEntry::strict("nn.softmax.i8", softmax::softmax_i8),
    KernelEntry::strict("nn.softmax.f32", softmax::softmax_f32),
    KernelEntry::strict("nn.quantize.f32.i8", quantize::quantize_f32_i8),
    KernelEntry::strict("nn.requantize.i8", quantize::requantize_i8),
    KernelEntry::strict("nn.dequantize.i8.f32", quantize::dequantize_i8_f32),
];
