//! The `f32` kernels of TFRT's ResNet tests (`tfrt_test.max_pooling_2d.f32`, `flatten`,
//! `zero_padding`, `global_average_pooling`, `softmax_inplace`, ...). Shapes in their error
//! messages use the fixed-rank form (`[]` for an empty shape), as TFRT's do.

use super::{empty, rank, tensor_error};
use crate::async_value::RcAsyncValue;
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::kernel::{Argument, ArrayAttribute, StringAttribute};
use crate::tensor::{DenseHostTensor, FixedRankShape};

type Tensor<'f> = Argument<'f, DenseHostTensor>;

/// Dims as indices (shapes of real tensors are non-negative).
fn idx<const N: usize>(d: [i64; N]) -> [usize; N] {
    d.map(|x| usize::try_from(x).unwrap_or(0))
}

/// The (top, bottom, left, right) padding of `"valid"` or `"same"`.
fn pool_padding(
    padding: &str,
    h: i64,
    w: i64,
    pool: [u32; 2],
    stride: [u32; 2],
) -> Result<[i64; 4], Diagnostic> {
    match padding {
        "valid" => Ok([0; 4]),
        "same" => {
            let total = |size: i64, p: u32, s: u32| -> i64 {
                let (p, s) = (i64::from(p), i64::from(s).max(1));
                if size % s == 0 { p - s } else { p - size % s }
            };
            let (th, tw) = (total(h, pool[0], stride[0]) as f64, total(w, pool[1], stride[1]) as f64);
            Ok([(th / 2.0) as i64, (th / 2.0 + 0.5) as i64, (tw / 2.0) as i64, (tw / 2.0 + 0.5) as i64])
        }
        other => Err(crate::diag!(Internal, "MaxPool2D padding '{}' is not recognized", other)),
    }
}

fn max_pooling_2d(
    input: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
    padding: StringAttribute,
    pool_size: ArrayAttribute<i32>,
    strides: ArrayAttribute<i32>,
) -> Result<RcAsyncValue, Diagnostic> {
    let &[ph, pw] = &pool_size[..] else {
        return Err(Diagnostic::internal("MaxPool2D expects pool_size to have 2 elements"));
    };
    let &[sh, sw] = &strides[..] else {
        return Err(Diagnostic::internal("MaxPool2D expects strides to have 2 elements"));
    };
    let (pool, stride) = ([ph as u32, pw as u32], [sh as u32, sw as u32]);
    let [n, h, w, c] = rank::<4>(&input, "MaxPool2D")?;
    let out = rank::<4>(&output, "MaxPool2D")?;
    let [top, bottom, left, right] = pool_padding(&padding, h, w, pool, stride)?;
    if stride[0] == 0 || stride[1] == 0 {
        return Err(Diagnostic::internal("MaxPool2D strides must be positive"));
    }
    let expected = [
        n,
        (h + top + bottom - i64::from(pool[0])) / i64::from(stride[0]) + 1,
        (w + left + right - i64::from(pool[1])) / i64::from(stride[1]) + 1,
        c,
    ];
    if out != expected {
        return Err(crate::diag_fmt!(
            Internal,
            "MaxPool2D output shape {} does not match the expected output shape {}",
            FixedRankShape(out),
            FixedRankShape(expected)
        ));
    }
    if empty(&output) {
        return Ok(chain.value().clone());
    }
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    let (ph, pw, sh, sw) =
        (i64::from(pool[0]), i64::from(pool[1]), i64::from(stride[0]), i64::from(stride[1]));
    // The window's rows (or columns) that fall inside the input, for output row `k`.
    let inside = |k: usize, s: i64, before: i64, p: i64, size: i64| {
        let first = k as i64 * s - before;
        (first.max(0) as usize)..((first + p).min(size).max(0) as usize)
    };
    let [n, hu, wu, c] = idx([n, h, w, c]);
    let [_, oh, ow, _] = idx(out);
    for b in 0..n {
        for k in 0..oh {
            for l in 0..ow {
                for ch in 0..c {
                    let mut v = f32::MIN_POSITIVE;
                    for r in inside(k, sh, top, ph, h) {
                        for q in inside(l, sw, left, pw, w) {
                            let at = ((b * hu + r) * wu + q) * c + ch;
                            if v < x[at] {
                                v = x[at];
                            }
                        }
                    }
                    o[((b * oh + k) * ow + l) * c + ch] = v;
                }
            }
        }
    }
    Ok(chain.value().clone())
}

fn flatten(input: Tensor, output: Tensor, chain: Argument<Chain>) -> Result<RcAsyncValue, Diagnostic> {
    let (i, o) = (input.shape(), output.shape());
    if i.num_elements() != o.num_elements() || i.dim(0) != o.dim(0) {
        return Err(crate::diag_fmt!(
            Internal,
            "Flatten output shape {} does not match the input shape {}",
            o,
            i
        ));
    }
    let x = input.read::<f32>().map_err(tensor_error)?;
    output.write::<f32>().map_err(tensor_error)?.copy_from_slice(&x);
    Ok(chain.value().clone())
}

fn zero_padding(
    input: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
    padding: ArrayAttribute<i32>,
) -> Result<RcAsyncValue, Diagnostic> {
    let &[p0, p1] = &padding[..] else {
        return Err(Diagnostic::internal("ZeroPadding expects padding of length 2"));
    };
    let (p0, p1) = (i64::from(p0 as u32), i64::from(p1 as u32));
    let [n, h, w, c] = rank::<4>(&input, "ZeroPadding")?;
    let out = rank::<4>(&output, "ZeroPadding")?;
    let expected = [n, h + 2 * p0, w + 2 * p1, c];
    if out != expected {
        return Err(crate::diag_fmt!(
            Internal,
            "ZeroPadding output shape {} does not match the expected output shape {}",
            FixedRankShape(out),
            FixedRankShape(expected)
        ));
    }
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    o.fill(0.0);
    if x.is_empty() {
        return Ok(chain.value().clone());
    }
    let [n, h, w, c] = idx([n, h, w, c]);
    let [_, oh, ow, _] = idx(out);
    let (p0, p1) = (p0 as usize, p1 as usize);
    for b in 0..n {
        for r in 0..h {
            let src = (b * h + r) * w * c;
            let dst = ((b * oh + r + p0) * ow + p1) * c;
            o[dst..dst + w * c].copy_from_slice(&x[src..src + w * c]);
        }
    }
    Ok(chain.value().clone())
}

fn global_average_pooling(
    input: Tensor,
    output: Tensor,
    _chain: Argument<Chain>,
) -> Result<Chain, Diagnostic> {
    let r = input.shape().rank();
    if r != 4 {
        return Err(crate::diag!(Internal, "Unsupported reduction ranks: input_rank={} reduction_rank=2", r));
    }
    let [n, h, w, c] = idx(rank::<4>(&input, "GlobalAveragePooling")?);
    if output.shape().checked_num_elements() != Some(n * c) {
        return Err(crate::diag_fmt!(
            Internal,
            "GlobalAveragePooling output shape {} does not hold [{}, {}]",
            output.shape(),
            n,
            c
        ));
    }
    if empty(&input) || empty(&output) {
        return Ok(Chain);
    }
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    for b in 0..n {
        for ch in 0..c {
            let mut s = 0.0f32;
            for p in 0..h * w {
                s += x[(b * h * w + p) * c + ch];
            }
            o[b * c + ch] = s / (h * w) as f32;
        }
    }
    Ok(Chain)
}

fn softmax_inplace(a: Tensor, chain: Argument<Chain>) -> Result<RcAsyncValue, Diagnostic> {
    let mut x = a.write::<f32>().map_err(tensor_error)?;
    let mut s = 0.0f32;
    for v in x.iter_mut() {
        *v = libm::expf(*v);
        s += *v;
    }
    for v in x.iter_mut() {
        *v /= s;
    }
    Ok(chain.value().clone())
}

fn unary_check(a: &DenseHostTensor, b: &DenseHostTensor) -> Result<(), Diagnostic> {
    if a.shape() != b.shape() {
        return Err(crate::diag_fmt!(Internal, "tensor shape mismatch: {} vs. {}", a.shape(), b.shape()));
    }
    Ok(())
}

fn gradient_descent(gradient: Tensor, lr: Tensor, output: Tensor) -> Result<Chain, Diagnostic> {
    let rate = {
        let lr = lr.read::<f32>().map_err(tensor_error)?;
        let &[rate] = &lr[..] else {
            return Err(Diagnostic::internal("GradientDescent lr should have only one element"));
        };
        rate
    };
    unary_check(&gradient, &output)?;
    let g = gradient.read::<f32>().map_err(tensor_error)?;
    for (o, g) in output.write::<f32>().map_err(tensor_error)?.iter_mut().zip(g.iter()) {
        *o -= g * rate;
    }
    Ok(Chain)
}

fn subtract_inplace(input: Tensor, output: Tensor) -> Result<Chain, Diagnostic> {
    unary_check(&input, &output)?;
    let x = input.read::<f32>().map_err(tensor_error)?;
    for (o, x) in output.write::<f32>().map_err(tensor_error)?.iter_mut().zip(x.iter()) {
        *o -= x;
    }
    Ok(Chain)
}

fn tensor_transpose(
    input: Tensor,
    output: Tensor,
    chain: Argument<Chain>,
) -> Result<RcAsyncValue, Diagnostic> {
    let [d0, d1] = rank::<2>(&input, "TensorTranspose")?;
    let out = rank::<2>(&output, "TensorTranspose")?;
    if out != [d1, d0] {
        return Err(crate::diag_fmt!(
            Internal,
            "TensorTranspose output shape {} does not match the input shape {}",
            FixedRankShape(out),
            FixedRankShape([d0, d1])
        ));
    }
    if empty(&input) {
        return Ok(chain.value().clone());
    }
    let [d0, d1] = idx([d0, d1]);
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    for i in 0..d0 {
        for j in 0..d1 {
            o[j * d0 + i] = x[i * d1 + j];
        }
    }
    Ok(chain.value().clone())
}

fn mean_axis_zero(input: Tensor, output: Tensor, chain: Argument<Chain>) -> Result<RcAsyncValue, Diagnostic> {
    let [r, c] = rank::<2>(&input, "MeanAxisZero")?;
    let out = rank::<1>(&output, "MeanAxisZero")?;
    if out != [c] {
        return Err(crate::diag_fmt!(
            Internal,
            "MeanAxisZero output shape {} does not match the input shape {}",
            FixedRankShape(out),
            FixedRankShape([r, c])
        ));
    }
    let [r, c] = idx([r, c]);
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    for (i, o) in o.iter_mut().enumerate() {
        let s = (0..r).fold(0.0f32, |s, j| s + x[j * c + i]);
        *o = s / r as f32;
    }
    Ok(chain.value().clone())
}

fn broadcast_2d(input: Tensor, output: Tensor, chain: Argument<Chain>) -> Result<RcAsyncValue, Diagnostic> {
    let [n, c] = rank::<2>(&input, "Broadcast2D")?;
    let out = rank::<4>(&output, "Broadcast2D")?;
    let [n2, h, w, c2] = out;
    // TFRT reports only a mismatch of both dims; reading past the input (a larger output
    // dim) is an error here too.
    if (n != n2 && c != c2) || n2 > n || c2 > c {
        return Err(crate::diag_fmt!(
            Internal,
            "Broadcast2D output shape {} does not match the input shape {}",
            FixedRankShape(out),
            FixedRankShape([n, c])
        ));
    }
    if empty(&output) {
        return Ok(chain.value().clone());
    }
    let [c, n2, h, w, c2] = idx([c, n2, h, w, c2]);
    let x = input.read::<f32>().map_err(tensor_error)?;
    let mut o = output.write::<f32>().map_err(tensor_error)?;
    for i in 0..n2 {
        for p in 0..h * w {
            let dst = (i * h * w + p) * c2;
            o[dst..dst + c2].copy_from_slice(&x[i * c..i * c + c2]);
        }
    }
    Ok(chain.value().clone())
}

entries! {
    MAX_POOLING_2D = "tfrt_test.max_pooling_2d.f32" => typed(max_pooling_2d),
    FLATTEN = "tfrt_test.flatten.f32" => typed(flatten),
    ZERO_PADDING = "tfrt_test.zero_padding.f32" => typed(zero_padding),
    GLOBAL_AVERAGE_POOLING = "tfrt_test.global_average_pooling.f32" => typed(global_average_pooling),
    SOFTMAX_INPLACE = "tfrt_test.softmax_inplace.f32" => typed(softmax_inplace),
    GRADIENT_DESCENT = "tfrt_test.gradient_descent.f32" => typed(gradient_descent),
    SUBTRACT_INPLACE = "tfrt_test.subtract_inplace.f32" => typed(subtract_inplace),
    TENSOR_TRANSPOSE = "tfrt_test.tensor_transpose.f32" => typed(tensor_transpose),
    MEAN_AXIS_ZERO = "tfrt_test.mean_axis_zero.f32" => typed(mean_axis_zero),
    BROADCAST_2D = "tfrt_test.broadcast_2d.f32" => typed(broadcast_2d),
}
