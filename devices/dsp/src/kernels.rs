//! The `dsp.*` program kernels (feature `kernels`): the int8 layers of this crate on
//! `hostrt-core` tensors, so a quantized model runs as a BEF program.
//!
//! - `dsp.fully_connected.i8(%x, %w, %bias) {act_max, act_min, input_offset, multipliers,
//!   output_offset, shifts}`: `x` int8 `[batches, in]`, `w` int8 `[out, in]`, `bias` int32
//!   `[out]`; one multiplier and shift per output channel (TensorFlow Lite's
//!   `FullyConnectedPerChannel`; `input_offset` is minus the input zero point). Returns a
//!   new int8 `[batches, out]` tensor.
//! - `dsp.argmax.i8(%x)`: int8 `[rows, depth]` to int32 `[rows]`, the first maximum.
//!
//! Each table registers the same names over other inner loops: [`KERNELS`] the best for the
//! target, [`PORTABLE_KERNELS`] and [`DSP_KERNELS`] one implementation each (firmware that
//! compares them loads its program once per table). Bad shapes, dtypes or attributes are
//! `INVALID_ARGUMENT` errors naming the kernel; an exhausted arena is `RESOURCE_EXHAUSTED`.
//!
//! ```
//! use hostrt_core::KernelRegistry;
//! use hostrt_core::kernel::KernelLookup;
//!
//! let mut registry: KernelRegistry<8> = KernelRegistry::new();
//! registry.add_entries(hostrt_dsp::kernels::KERNELS)?;
//! assert!(registry.lookup("dsp.fully_connected.i8").is_some());
//! # Ok::<(), hostrt_core::kernel::RegistryError>(())
//! ```

// Kernels return hostrt-core's `Diagnostic` by value, as every kernel does.
#![allow(clippy::result_large_err)]

use hostrt_core::kernel::{Argument, ArrayAttribute, Attribute, KernelEntry, Value};
use hostrt_core::tensor::{DType, DenseHostTensor, TensorError, TensorMetadata, TensorShape};
use hostrt_core::{Diagnostic, ExecutionContext, diag_fmt, kernel};

use crate::arch::dsp::Dsp;
use crate::arch::portable::Portable;
use crate::arch::{Best, InnerLoops};
use crate::{ActivationRange, DspError, FullyConnectedParams, PerChannel};

type Tensor<'f> = Argument<'f, DenseHostTensor>;

fn dsp_error(kernel: &str, e: DspError) -> Diagnostic {
    diag_fmt!(InvalidArgument, "{}: {}", kernel, e)
}

fn tensor_error(kernel: &str, e: TensorError) -> Diagnostic {
    match e {
        TensorError::CannotAllocate => {
            diag_fmt!(ResourceExhausted, "{}: cannot allocate the result tensor", kernel)
        }
        other => diag_fmt!(InvalidArgument, "{}: {}", kernel, other),
    }
}

/// The dims of `t` if it has `dtype` and rank `N`, as `usize`.
fn dims<const N: usize>(
    kernel: &str,
    what: &str,
    t: &DenseHostTensor,
    dtype: DType,
) -> Result<[usize; N], Diagnostic> {
    let shape = t.shape();
    let wrong = || {
        diag_fmt!(
            InvalidArgument,
            "{}: {} must be a rank-{} {} tensor, got {} {}",
            kernel,
            what,
            N,
            dtype,
            t.dtype(),
            shape
        )
    };
    if t.dtype() != dtype || shape.rank() != N {
        return Err(wrong());
    }
    let mut out = [0usize; N];
    for (o, &d) in out.iter_mut().zip(shape.dims()) {
        *o = usize::try_from(d).map_err(|_| wrong())?;
    }
    Ok(out)
}

/// A new tensor of `dtype` and `dims` from the context's allocator.
fn new_tensor(
    kernel: &str,
    ctx: &ExecutionContext,
    dtype: DType,
    dims: &[usize],
) -> Result<DenseHostTensor, Diagnostic> {
    let mut d = [0i64; 2];
    for (o, &v) in d.iter_mut().zip(dims) {
        *o = i64::try_from(v).map_err(|_| dsp_error(kernel, DspError::Overflow))?;
    }
    let shape = TensorShape::new(&d[..dims.len()]).map_err(|_| dsp_error(kernel, DspError::Overflow))?;
    DenseHostTensor::new(ctx.allocator(), TensorMetadata { dtype, shape })
        .map_err(|e| tensor_error(kernel, e))
}

#[allow(clippy::too_many_arguments)]
fn fully_connected<L: InnerLoops>(
    x: Tensor,
    w: Tensor,
    bias: Tensor,
    act_max: Attribute<i32>,
    act_min: Attribute<i32>,
    input_offset: Attribute<i32>,
    multipliers: ArrayAttribute<i32>,
    output_offset: Attribute<i32>,
    shifts: ArrayAttribute<i32>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    const K: &str = "dsp.fully_connected.i8";
    let [batches, input_depth] = dims::<2>(K, "the input", &x, DType::I8)?;
    let [output_depth, filter_depth] = dims::<2>(K, "the weights", &w, DType::I8)?;
    dims::<1>(K, "the bias", &bias, DType::I32)?;
    if filter_depth != input_depth {
        return Err(diag_fmt!(
            InvalidArgument,
            "{}: weights [{}, {}] do not take {} inputs",
            K,
            output_depth,
            filter_depth,
            input_depth
        ));
    }
    let activation = ActivationRange::new(act_min.get(), act_max.get()).map_err(|e| dsp_error(K, e))?;
    let input_zero_point =
        input_offset.get().checked_neg().ok_or_else(|| dsp_error(K, DspError::Param("input_offset")))?;
    let params = FullyConnectedParams {
        batches,
        input_depth,
        output_depth,
        input_zero_point,
        output_zero_point: output_offset.get(),
        activation,
    };
    let quant = PerChannel { multiplier: &multipliers, shift: &shifts };
    let out = new_tensor(K, ctx, DType::I8, &[batches, output_depth])?;
    {
        let xs = x.read::<i8>().map_err(|e| tensor_error(K, e))?;
        let ws = w.read::<i8>().map_err(|e| tensor_error(K, e))?;
        let bs = bias.read::<i32>().map_err(|e| tensor_error(K, e))?;
        let mut o = out.write::<i8>().map_err(|e| tensor_error(K, e))?;
        crate::fully_connected::run::<L>(&params, &xs, &ws, Some(&bs), quant, &mut o)
            .map_err(|e| dsp_error(K, e))?;
    }
    Ok(Value(out))
}

fn argmax(x: Tensor, ctx: &ExecutionContext) -> Result<Value<DenseHostTensor>, Diagnostic> {
    const K: &str = "dsp.argmax.i8";
    let [rows, depth] = dims::<2>(K, "the input", &x, DType::I8)?;
    if depth == 0 || i32::try_from(depth).is_err() {
        return Err(dsp_error(K, DspError::Param("argmax depth not in 1..=i32::MAX")));
    }
    let out = new_tensor(K, ctx, DType::I32, &[rows])?;
    {
        let xs = x.read::<i8>().map_err(|e| tensor_error(K, e))?;
        let mut o = out.write::<i32>().map_err(|e| tensor_error(K, e))?;
        for (row, o) in xs.chunks_exact(depth).zip(o.iter_mut()) {
            let mut index = [0u32];
            crate::argmax(row, depth, &mut index).map_err(|e| dsp_error(K, e))?;
            // In range: depth fits i32.
            *o = index[0] as i32;
        }
    }
    Ok(Value(out))
}

/// The `dsp.*` kernels on the best inner loops for the target (DSP instructions on
/// Armv7E-M, portable elsewhere).
pub const KERNELS: &[KernelEntry] = &[
    KernelEntry::strict("dsp.fully_connected.i8", kernel!(fully_connected::<Best>)),
    KernelEntry::strict("dsp.argmax.i8", kernel!(argmax)),
];

/// The `dsp.*` kernels on the portable inner loops (plain int32 arithmetic).
pub const PORTABLE_KERNELS: &[KernelEntry] = &[
    KernelEntry::strict("dsp.fully_connected.i8", kernel!(fully_connected::<Portable>)),
    KernelEntry::strict("dsp.argmax.i8", kernel!(argmax)),
];

/// The `dsp.*` kernels on the DSP-extension inner loops (real instructions on Armv7E-M,
/// their software emulation elsewhere).
pub const DSP_KERNELS: &[KernelEntry] = &[
    KernelEntry::strict("dsp.fully_connected.i8", kernel!(fully_connected::<Dsp>)),
    KernelEntry::strict("dsp.argmax.i8", kernel!(argmax)),
];
