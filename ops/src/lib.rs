//! Model operator kernels (`nn.*`): the layers imported TensorFlow Lite models run, over one
//! activation arena planned at import time (docs/models.md).
//!
//! A model's function takes its arena once per call (`nn.arena`: kept by the host between
//! calls, allocated on the first), copies its inputs in
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
//! let mut registry: KernelRegistry<128> = KernelRegistry::new();
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
mod activation_arena;
mod attrs;
mod batch_space;
mod cast;
mod compare;
mod conv;
mod element;
mod elementwise;
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod float_x86;
mod fully_connected;
mod hybrid;
mod index;
mod integer;
mod lstm;
mod math;
mod matmul;
mod movement;
mod normalization;
mod pad;
pub mod panels;
mod pool;
mod prepared;
mod quantize;
mod reduce;
mod resize;
mod softmax;
mod transpose_conv;

pub use activation_arena::Arena;

/// The fewest multiply-adds a kernel hands one thread when it splits its output rows over
/// the host's threads (`work_queue::for_row_runs`): below this a helper costs more than it
/// saves.
const SPLIT_MACS: usize = 1 << 17;

/// What a kernel bound by reading (a depthwise tap, a fully connected weight: each value
/// read for one multiply-add) counts per multiply-add toward [`SPLIT_MACS`]: its time goes
/// to the reads, so fewer of them are worth a helper.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
const READ_BOUND_MACS: usize = 4;

/// Rows of `macs_per_row` multiply-adds each that make one run of a split.
fn split_rows_min(macs_per_row: usize) -> usize {
    SPLIT_MACS.div_ceil(macs_per_row.max(1))
}

/// Runs `body` compiled for AVX-512F or AVX2 with FMA where the CPU has them, else as
/// built: a loop of branch-free element operations in it then runs sixteen or eight lanes at
/// a time rather than SSE2's four, with the same operations in the same order (no contraction
/// into fused multiply-adds), so the same results. Mark the closure `#[inline(always)]`: a
/// large one left out of line is compiled for SSE2 alone (the float add's did).
#[inline(always)]
fn on_widest<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        /// `body` compiled for AVX-512F.
        #[target_feature(enable = "avx512f,avx2,fma")]
        fn avx512<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        /// `body` compiled for AVX2.
        #[target_feature(enable = "avx2,fma")]
        fn avx2<R>(body: impl FnOnce() -> R) -> R {
            body()
        }
        if hostrt_dsp::has_avx512f() {
            // SAFETY: the CPU has AVX-512F, AVX2 and FMA (checked just above).
            return unsafe { avx512(body) };
        }
        if hostrt_dsp::has_avx2_fma() {
            // SAFETY: the CPU has AVX2 and FMA (checked just above).
            return unsafe { avx2(body) };
        }
    }
    body()
}

/// `v` clamped to `[lo, hi]`, a range `float_range` checked, a NaN kept: `f32::clamp`
/// without its assertion, which compiled for AVX-512 stayed in the loop and kept it scalar.
#[inline(always)]
fn clamp_to(v: f32, (lo, hi): (f32, f32)) -> f32 {
    let v = if v < lo { lo } else { v };
    if v > hi { hi } else { v }
}

/// Elements per row of an element-wise split ([`for_element_runs`]), and the fewest rows per
/// run: runs of 16,384 elements or more. MobileNetV2 at 96x96 on two threads, profiled: its
/// 48x48x16 residual add 12.0 -> 6.1 us. Runs of 4,096 split the transformer's 64x128 adds
/// too, which then took twice as long as on one thread (a helper costs more than adding
/// 8,192 values).
const SPLIT_ELEMENTS: (usize, usize) = (1024, 16);

/// Calls `f(at, run)` over runs of `out` on the host's threads (`work_queue::for_row_runs`,
/// one run per thread), `at` the index of the run's first element: an element-wise op
/// whose elements each read the same index of their operands. Each thread then reads the part
/// of the operands that the threads of the layer before wrote, from its own cache.
fn for_element_runs(frame: &KernelFrame<'_>, out: &mut [f32], f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
    let host = frame.exec_ctx().host();
    let (row, min_rows) = SPLIT_ELEMENTS;
    let split = RowSplit { per_thread: 1, ..RowSplit::new(row, min_rows) };
    for_row_runs(host.work_queue(), host.allocator(), out, split, &|first, run| f(first * row, run));
}

use hostrt_core::kernel::{KernelEntry, KernelFrame};
use hostrt_core::work_queue::{RowSplit, for_row_runs};

/// Declares each kernel as a constant of [`entries`] (named after the kernel: `nn.conv_2d.i8` is
/// `CONV_2D_I8`) and lists them all in [`KERNELS`]. `/ prepare` after a kernel names its
/// prepare function, in the same module (docs/execution.md, "Prepared state").
macro_rules! kernels {
    ($($id:ident = $name:literal => $module:ident::$f:ident $(/ $prepare:ident)?,)*) => {
        /// Each `nn.*` kernel on its own, named after it without `nn.`, upper case, `.` as
        /// `_`: firmware registers only the kernels its model uses (a `KernelTable` of
        /// these; `hostrt_import::build::embed_tflite` writes the list), so the linker drops
        /// the rest.
        pub mod entries {
            use hostrt_core::kernel::KernelEntry;
            $(
                #[doc = concat!("`", $name, "`.")]
                pub const $id: KernelEntry =
                    KernelEntry::strict($name, crate::$module::$f)$(.with_prepare(crate::$module::$prepare))?;
            )*
        }

        /// Every `nn.*` kernel.
        pub const KERNELS: &[KernelEntry] = &[$(entries::$id),*];
    };
}

kernels! {
    ARENA = "nn.arena" => activation_arena::arena / prepare_arena,
    INPUT = "nn.input" => activation_arena::input / prepare_input,
    OUTPUT = "nn.output" => activation_arena::output / prepare_output,
    CONSTANT = "nn.constant" => activation_arena::constant,
    COPY = "nn.copy" => movement::copy,
    FILL = "nn.fill" => movement::fill,
    PAD_BORDER = "nn.pad_border" => pad::pad_border,
    SPACE_TO_BATCH_ND = "nn.space_to_batch_nd" => batch_space::space_to_batch_nd,
    BATCH_TO_SPACE_ND = "nn.batch_to_space_nd" => batch_space::batch_to_space_nd,
    CONV_2D_I8 = "nn.conv_2d.i8" => conv::conv_2d_i8 / prepare_conv_2d_i8,
    CONV_2D_F32 = "nn.conv_2d.f32" => conv::conv_2d_f32 / prepare_conv_2d_f32,
    DEPTHWISE_CONV_2D_I8 = "nn.depthwise_conv_2d.i8" => conv::depthwise_conv_2d_i8 / prepare_depthwise_conv_2d_i8,
    DEPTHWISE_CONV_2D_F32 = "nn.depthwise_conv_2d.f32" => conv::depthwise_conv_2d_f32 / prepare_depthwise_conv_2d_f32,
    TRANSPOSE_CONV_I8 = "nn.transpose_conv.i8" => transpose_conv::transpose_conv_i8,
    TRANSPOSE_CONV_F32 = "nn.transpose_conv.f32" => transpose_conv::transpose_conv_f32,
    FULLY_CONNECTED_I8 = "nn.fully_connected.i8" => fully_connected::fully_connected_i8 / prepare_i8,
    FULLY_CONNECTED_F32 = "nn.fully_connected.f32" => fully_connected::fully_connected_f32 / prepare_f32,
    FULLY_CONNECTED_HYBRID = "nn.fully_connected.hybrid" => hybrid::fully_connected_hybrid,
    CONV_2D_HYBRID = "nn.conv_2d.hybrid" => hybrid::conv_2d_hybrid,
    DEPTHWISE_CONV_2D_HYBRID = "nn.depthwise_conv_2d.hybrid" => hybrid::depthwise_conv_2d_hybrid,
    LSTM_I8 = "nn.lstm.i8" => lstm::lstm_i8,
    LSTM_F32 = "nn.lstm.f32" => lstm::lstm_f32,
    LSTM_FULL_I8 = "nn.lstm_full.i8" => lstm::lstm_full_i8,
    MAX_POOL_2D_I8 = "nn.max_pool_2d.i8" => pool::max_pool_2d_i8 / prepare_max_pool_2d_i8,
    MAX_POOL_2D_F32 = "nn.max_pool_2d.f32" => pool::max_pool_2d_f32,
    AVERAGE_POOL_2D_I8 = "nn.average_pool_2d.i8" => pool::average_pool_2d_i8 / prepare_average_pool_2d_i8,
    AVERAGE_POOL_2D_F32 = "nn.average_pool_2d.f32" => pool::average_pool_2d_f32,
    ADD_I8 = "nn.add.i8" => elementwise::add_i8,
    ADD_F32 = "nn.add.f32" => elementwise::add_f32,
    SUB_I8 = "nn.sub.i8" => elementwise::sub_i8,
    SUB_F32 = "nn.sub.f32" => elementwise::sub_f32,
    SQUARED_DIFFERENCE_I8 = "nn.squared_difference.i8" => elementwise::squared_difference_i8,
    SQUARED_DIFFERENCE_F32 = "nn.squared_difference.f32" => elementwise::squared_difference_f32,
    MAXIMUM_I8 = "nn.maximum.i8" => elementwise::maximum_i8,
    MAXIMUM_F32 = "nn.maximum.f32" => elementwise::maximum_f32,
    MINIMUM_I8 = "nn.minimum.i8" => elementwise::minimum_i8,
    MINIMUM_F32 = "nn.minimum.f32" => elementwise::minimum_f32,
    PRELU_I8 = "nn.prelu.i8" => elementwise::prelu_i8,
    PRELU_F32 = "nn.prelu.f32" => elementwise::prelu_f32,
    MUL_I8 = "nn.mul.i8" => elementwise::mul_i8,
    MUL_F32 = "nn.mul.f32" => elementwise::mul_f32,
    CLAMP_F32 = "nn.clamp.f32" => activation::clamp_f32,
    LEAKY_RELU_F32 = "nn.leaky_relu.f32" => activation::leaky_relu_f32,
    LOGISTIC_F32 = "nn.logistic.f32" => activation::logistic_f32,
    TANH_F32 = "nn.tanh.f32" => activation::tanh_f32,
    HARD_SWISH_F32 = "nn.hard_swish.f32" => activation::hard_swish_f32,
    LOOKUP_I8 = "nn.lookup.i8" => activation::lookup_i8,
    LOG_SOFTMAX_F32 = "nn.log_softmax.f32" => activation::log_softmax_f32,
    LOG_SOFTMAX_I8 = "nn.log_softmax.i8" => softmax::log_softmax_i8,
    SUM_I8 = "nn.sum.i8" => reduce::sum_i8,
    SUM_F32 = "nn.sum.f32" => reduce::sum_f32,
    BATCH_MATMUL_I8 = "nn.batch_matmul.i8" => matmul::batch_matmul_i8,
    BATCH_MATMUL_F32 = "nn.batch_matmul.f32" => matmul::batch_matmul_f32,
    RESIZE_NEAREST = "nn.resize_nearest" => resize::resize_nearest,
    RESIZE_BILINEAR_I8 = "nn.resize_bilinear.i8" => resize::resize_bilinear_i8,
    RESIZE_BILINEAR_F32 = "nn.resize_bilinear.f32" => resize::resize_bilinear_f32,
    RESIZE_SEPARABLE_F32 = "nn.resize_separable.f32" => resize::resize_separable_f32,
    SOFTMAX_I8 = "nn.softmax.i8" => softmax::softmax_i8 / prepare_softmax_i8,
    SOFTMAX_F32 = "nn.softmax.f32" => softmax::softmax_f32,
    QUANTIZE_F32_I8 = "nn.quantize.f32.i8" => quantize::quantize_f32_i8,
    REQUANTIZE_I8 = "nn.requantize.i8" => quantize::requantize_i8,
    DEQUANTIZE_I8_F32 = "nn.dequantize.i8.f32" => quantize::dequantize_i8_f32,
    DIV_F32 = "nn.div.f32" => elementwise::div_f32,
    POW_F32 = "nn.pow.f32" => elementwise::pow_f32,
    CAST = "nn.cast" => cast::cast,
    COMPARE = "nn.compare" => compare::compare,
    LOGICAL = "nn.logical" => compare::logical,
    WHERE = "nn.where" => compare::select,
    ARG_MAX = "nn.arg_max" => index::arg_max,
    GATHER = "nn.gather" => index::gather,
    LRN_F32 = "nn.lrn.f32" => normalization::lrn_f32,
    MATMUL_INTEGER = "nn.matmul_integer" => integer::matmul_integer,
    CONV_INTEGER = "nn.conv_integer" => integer::conv_integer,
    REDUCE_MAX_F32 = "nn.reduce_max.f32" => reduce::reduce_max_f32,
    REDUCE_MIN_F32 = "nn.reduce_min.f32" => reduce::reduce_min_f32,
    REDUCE_PROD_F32 = "nn.reduce_prod.f32" => reduce::reduce_prod_f32,
    LAYER_NORM_F32 = "nn.layer_norm.f32" => normalization::layer_norm_f32,
    INSTANCE_NORM_F32 = "nn.instance_norm.f32" => normalization::instance_norm_f32,
    EXP_F32 = "nn.exp.f32" => math::exp_f32,
    LOG_F32 = "nn.log.f32" => math::log_f32,
    SQRT_F32 = "nn.sqrt.f32" => math::sqrt_f32,
    RSQRT_F32 = "nn.rsqrt.f32" => math::rsqrt_f32,
    ABS_F32 = "nn.abs.f32" => math::abs_f32,
    NEG_F32 = "nn.neg.f32" => math::neg_f32,
    FLOOR_F32 = "nn.floor.f32" => math::floor_f32,
    CEIL_F32 = "nn.ceil.f32" => math::ceil_f32,
    ROUND_F32 = "nn.round.f32" => math::round_f32,
    SIGN_F32 = "nn.sign.f32" => math::sign_f32,
    RECIPROCAL_F32 = "nn.reciprocal.f32" => math::reciprocal_f32,
    SQUARE_F32 = "nn.square.f32" => math::square_f32,
    SIN_F32 = "nn.sin.f32" => math::sin_f32,
    COS_F32 = "nn.cos.f32" => math::cos_f32,
    ERF_F32 = "nn.erf.f32" => math::erf_f32,
    SOFTPLUS_F32 = "nn.softplus.f32" => math::softplus_f32,
    ELU_F32 = "nn.elu.f32" => math::elu_f32,
    SELU_F32 = "nn.selu.f32" => math::selu_f32,
    HARD_SIGMOID_F32 = "nn.hard_sigmoid.f32" => math::hard_sigmoid_f32,
    GELU_F32 = "nn.gelu.f32" => math::gelu_f32,
}
