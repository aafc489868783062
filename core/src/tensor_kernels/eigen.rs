//! TFRT's convolution and batch-norm kernels for `f32` (`eigen.conv2d.f32`,
//! `eigen.conv2d.bias.f32`, `eigen.conv2d.batch_norm.f32`, `eigen.conv2d.batch_norm.relu.f32`,
//! `eigen.batch_norm.f32`), with TFRT's signatures, attributes and error texts. The
//! arithmetic is [`crate::tensor::conv`]; bias, batch norm and ReLU run as its epilogue,
//! on each block of output pixels while it is in cache.
//!
//! im2col (measured faster than direct convolution at every shape of `core/benches/conv.rs`)
//! takes its scratch from the context's allocator, [`BLOCK_PIXELS`] output pixels at a time,
//! or [`SMALL_BLOCK_PIXELS`] when the arena cannot spare that; without even those the kernel
//! convolves directly, with no scratch.

use super::{new_tensor, rank, tensor_error};
use crate::async_value::RcAsyncValue;
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel::{Argument, ArrayAttribute, Attribute, StringAttribute};
use crate::tensor::conv::{Conv2dParams, conv2d};
use crate::tensor::{DType, DenseHostTensor, Elements, TensorShape};

type Tensor<'f> = Argument<'f, DenseHostTensor>;

/// Output pixels per im2col block: the scratch is `BLOCK_PIXELS · KH·KW·C` floats
/// (1.1 MiB for a 3×3×64 filter). 512 measured as fast as whole-image scratch and up to
/// 1.2× faster than 128 (`core/benches/conv.rs`).
pub const BLOCK_PIXELS: usize = 512;

/// The im2col block tried when [`BLOCK_PIXELS`] does not fit the arena (microcontrollers).
pub const SMALL_BLOCK_PIXELS: usize = 16;

/// Checks the shapes of a convolution and runs it, calling `epilogue` on each finished
/// block of output pixels. `channels` checks the per-channel operands against Cout
/// before anything is written.
#[allow(clippy::too_many_arguments)]
fn run(
    input: &DenseHostTensor,
    filter: &DenseHostTensor,
    output: &DenseHostTensor,
    padding: &str,
    strides: &[i64],
    ctx: &ExecutionContext,
    channels: impl FnOnce(i64) -> Result<(), Diagnostic>,
    epilogue: &mut dyn FnMut(&mut [f32]),
) -> Result<(), Diagnostic> {
    let &[sh, sw] = strides else {
        return Err(crate::diag!(Internal, "Conv2D expects 2 strides, got {}", strides.len()));
    };
    let x_dims = rank::<4>(input, "Conv2D input")?;
    let f_dims = rank::<4>(filter, "Conv2D kernel")?;
    rank::<4>(output, "Conv2D output")?;
    let p = Conv2dParams::new(x_dims, f_dims, padding, [sh, sw])
        .map_err(|e| crate::diag_fmt!(Internal, "{}", e))?;
    if output.shape().dims() != p.output {
        let computed = TensorShape::new(&p.output).map_err(|e| crate::diag_fmt!(Internal, "{}", e))?;
        return Err(crate::diag_fmt!(
            Internal,
            "Tensor shapes do not match: output tensor shape is {} and computed output shape is {}",
            output.shape(),
            computed
        ));
    }
    channels(p.output[3])?;
    let scratch = [BLOCK_PIXELS, SMALL_BLOCK_PIXELS].iter().find_map(|&pixels| match p.scratch_len(pixels) {
        0 => None,
        len => new_tensor(ctx, DType::F32, &[len as i64], "").ok(),
    });
    let x = input.read::<f32>().map_err(tensor_error)?;
    let f = filter.read::<f32>().map_err(tensor_error)?;
    let mut out = output.write::<f32>().map_err(tensor_error)?;
    let mut scratch_data = match &scratch {
        Some(t) => Some(t.write::<f32>().map_err(tensor_error)?),
        None => None,
    };
    let scratch_slice: &mut [f32] = scratch_data.as_deref_mut().unwrap_or(&mut []);
    conv2d(&p, &x, &f, &mut out, scratch_slice, epilogue);
    Ok(())
}

/// A 1-D per-channel operand's elements, after checking it holds `channels` of them
/// (TFRT: `Dimensions does not match: <what> is N and output channels size is C`).
fn per_channel(t: &DenseHostTensor, what: &str, channels: i64) -> Result<(), Diagnostic> {
    let [len] = rank::<1>(t, "Conv2D")?;
    if len != channels {
        return Err(crate::diag!(
            Internal,
            "Dimensions does not match: {} is {} and output channels size is {}",
            what,
            len,
            channels
        ));
    }
    Ok(())
}

/// A rank-1 operand's elements for the epilogue; `None` for another rank (the shape check
/// in [`run`] rejects it before the epilogue could run).
fn vector(t: &DenseHostTensor) -> Result<Option<Elements<'_, f32>>, Diagnostic> {
    if rank::<1>(t, "Conv2D").is_err() {
        return Ok(None);
    }
    t.read::<f32>().map(Some).map_err(tensor_error)
}

fn conv2d_kernel(
    input: Tensor,
    filter: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
    padding: StringAttribute,
    strides: ArrayAttribute<i64>,
    ctx: &ExecutionContext,
) -> Result<RcAsyncValue, Diagnostic> {
    run(&input, &filter, &output, &padding, &strides, ctx, |_| Ok(()), &mut |_| {})?;
    Ok(chain.value().clone())
}

#[allow(clippy::too_many_arguments)]
fn conv2d_bias(
    input: Tensor,
    filter: Tensor,
    bias: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
    padding: StringAttribute,
    strides: ArrayAttribute<i64>,
    ctx: &ExecutionContext,
) -> Result<RcAsyncValue, Diagnostic> {
    let check = |c| per_channel(&bias, "bias shape", c);
    // Shapes first (nothing is read before they hold), then the bias for the epilogue.
    let b = vector(&bias)?;
    let b: &[f32] = b.as_deref().unwrap_or(&[]);
    run(&input, &filter, &output, &padding, &strides, ctx, check, &mut |block| {
        for px in block.chunks_exact_mut(b.len().max(1)) {
            for (v, b) in px.iter_mut().zip(b) {
                *v += b;
            }
        }
    })?;
    Ok(chain.value().clone())
}

/// The four batch-norm vectors, read.
struct Norm<'a> {
    scale: Elements<'a, f32>,
    offset: Elements<'a, f32>,
    mean: Elements<'a, f32>,
    var: Elements<'a, f32>,
    epsilon: f32,
}

impl Norm<'_> {
    /// TFRT's `(x − mean) / sqrt(var + ε) · scale + offset` on whole pixels, then `act`.
    fn apply(&self, block: &mut [f32], act: fn(f32) -> f32) {
        let c = self.scale.len();
        for px in block.chunks_exact_mut(c.max(1)) {
            for (k, v) in px.iter_mut().enumerate().take(c) {
                let x = (*v - self.mean[k]) / libm::sqrtf(self.var[k] + self.epsilon);
                *v = act(self.scale[k] * x + self.offset[k]);
            }
        }
    }
}

/// `eigen.conv2d.batch_norm.f32`, and with `RELU` `eigen.conv2d.batch_norm.relu.f32`.
#[allow(clippy::too_many_arguments)]
fn conv2d_batch_norm<const RELU: bool>(
    input: Tensor,
    filter: Tensor,
    scale: Tensor,
    offset: Tensor,
    mean: Tensor,
    var: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
    epsilon: Attribute<f32>,
    padding: StringAttribute,
    strides: ArrayAttribute<i64>,
    ctx: &ExecutionContext,
) -> Result<RcAsyncValue, Diagnostic> {
    let vectors = [
        (&scale, "scale shape"),
        (&offset, "offset shape"),
        (&mean, "estimated mean shape"),
        (&var, "estimated var shape"),
    ];
    let check = |c| vectors.iter().try_for_each(|(t, what)| per_channel(t, what, c));
    let norm = match (vector(&scale)?, vector(&offset)?, vector(&mean)?, vector(&var)?) {
        (Some(scale), Some(offset), Some(mean), Some(var)) => {
            Some(Norm { scale, offset, mean, var, epsilon: *epsilon })
        }
        _ => None,
    };
    let act: fn(f32) -> f32 = if RELU { |v| v.max(0.0) } else { |v| v };
    run(&input, &filter, &output, &padding, &strides, ctx, check, &mut |block| {
        if let Some(n) = &norm {
            n.apply(block, act)
        }
    })?;
    Ok(chain.value().clone())
}

/// `eigen.batch_norm.f32`: normalizes an NHWC tensor in place.
fn batch_norm(
    input: Tensor,
    scale: Tensor,
    offset: Tensor,
    mean: Tensor,
    var: Tensor,
    chain: Argument<Chain>,
    epsilon: Attribute<f32>,
) -> Result<RcAsyncValue, Diagnostic> {
    let [_, _, _, c] = rank::<4>(&input, "BatchNorm")?;
    if [&scale, &offset, &mean, &var]
        .iter()
        .any(|t| t.shape().checked_num_elements() != usize::try_from(c).ok())
    {
        return Err(crate::diag!(
            Internal,
            "BatchNorm parameter dimension does not match the input channel number {}",
            c
        ));
    }
    let norm = Norm {
        scale: scale.read::<f32>().map_err(tensor_error)?,
        offset: offset.read::<f32>().map_err(tensor_error)?,
        mean: mean.read::<f32>().map_err(tensor_error)?,
        var: var.read::<f32>().map_err(tensor_error)?,
        epsilon: *epsilon,
    };
    norm.apply(&mut input.write::<f32>().map_err(tensor_error)?, |v| v);
    Ok(chain.value().clone())
}

entries! {
    group F32;
    CONV2D = "eigen.conv2d.f32" => typed(conv2d_kernel),
    CONV2D_BIAS = "eigen.conv2d.bias.f32" => typed(conv2d_bias),
    CONV2D_BATCH_NORM = "eigen.conv2d.batch_norm.f32" => typed(conv2d_batch_norm::<false>),
    CONV2D_BATCH_NORM_RELU = "eigen.conv2d.batch_norm.relu.f32" => typed(conv2d_batch_norm::<true>),
    BATCH_NORM = "eigen.batch_norm.f32" => typed(batch_norm),
}
