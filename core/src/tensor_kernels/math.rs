//! The model kernels of TFRT's MNIST tests (`tfrt_test.*`, for `f32`, `i32` and `i64`):
//! matmul, relu, add, equal, argmax, reduce_mean, broadcast, slice, cast. Elementwise
//! kernels check shapes first and write nothing on a mismatch; an output may be the same
//! tensor as an input (computed in place).

use super::{new_tensor, same_data, tensor_error};
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel;
use crate::kernel::{Argument, KernelEntry, Value};
use crate::tensor::gemm;
use crate::tensor::{DType, DenseHostTensor, FixedRankShape, Plain, TensorShape};

/// Arithmetic of the MNIST kernel families (integers wrap, as TFRT's do).
pub(crate) trait Num: Plain + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `self / n`, `None` for an integer division by zero.
    fn div_count(self, n: usize) -> Option<Self>;
    fn is_nan(self) -> bool {
        false
    }
    /// `C := alpha·A·B + beta·C` for row-major `A` [m, k], `B` [k, n], `C` [m, n].
    #[allow(clippy::too_many_arguments)]
    fn gemm(m: usize, k: usize, n: usize, alpha: Self, a: &[Self], b: &[Self], beta: Self, c: &mut [Self]) {
        gemm::reference(m, k, n, alpha, a, b, beta, c, Self::ZERO, Self::add, Self::mul)
    }
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div_count(self, n: usize) -> Option<Self> {
                let n = <$t>::try_from(n).ok().filter(|n| *n != 0)?;
                Some(self.wrapping_div(n))
            }
        }
    )*};
}
int_num!(i32, i64);

impl Num for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn div_count(self, n: usize) -> Option<Self> {
        Some(self / n as f32)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn gemm(m: usize, k: usize, n: usize, alpha: f32, a: &[f32], b: &[f32], beta: f32, c: &mut [f32]) {
        gemm::sgemm(m, k, n, alpha, a, b, beta, c)
    }
}

fn mismatch2(a: &TensorShape, b: &TensorShape) -> Diagnostic {
    crate::diag_fmt!(Internal, "tensor shape mismatch: {} vs. {}", a, b)
}

/// The E check of two tensors (input, output).
fn same_shape(a: &DenseHostTensor, b: &DenseHostTensor) -> Result<(), Diagnostic> {
    if a.shape() != b.shape() {
        return Err(mismatch2(a.shape(), b.shape()));
    }
    Ok(())
}

/// The E check of three tensors.
fn same_shape3(a: &DenseHostTensor, b: &DenseHostTensor, c: &DenseHostTensor) -> Result<(), Diagnostic> {
    if a.shape() != b.shape() || b.shape() != c.shape() {
        return Err(crate::diag_fmt!(
            Internal,
            "tensor shape mismatch: {} vs. {} vs. {}",
            a.shape(),
            b.shape(),
            c.shape()
        ));
    }
    Ok(())
}

/// `out[k] := f(a[k], out[k])` (`a` and `out` distinct).
fn map<T: Plain, U: Plain>(
    a: &DenseHostTensor,
    out: &DenseHostTensor,
    f: impl Fn(T, U) -> U,
) -> Result<(), Diagnostic> {
    let a = a.read::<T>().map_err(tensor_error)?;
    let mut o = out.write::<U>().map_err(tensor_error)?;
    for (x, y) in a.iter().zip(o.iter_mut()) {
        *y = f(*x, *y);
    }
    Ok(())
}

/// `out[k] := f(out[k])`.
fn map_self<T: Plain>(out: &DenseHostTensor, f: impl Fn(T) -> T) -> Result<(), Diagnostic> {
    for y in out.write::<T>().map_err(tensor_error)?.iter_mut() {
        *y = f(*y);
    }
    Ok(())
}

/// `out[k] := f(a[k], b[k])` (`out` may be `a` or `b`: computed in place).
fn zip<T: Num>(
    a: &DenseHostTensor,
    b: &DenseHostTensor,
    out: &DenseHostTensor,
    f: impl Fn(T, T) -> T,
) -> Result<(), Diagnostic> {
    match (same_data(a, out), same_data(b, out)) {
        (true, true) => map_self::<T>(out, |y| f(y, y)),
        (true, false) => map::<T, T>(b, out, |y, x| f(x, y)),
        (false, true) => map::<T, T>(a, out, f),
        (false, false) => {
            let (x, y) = (a.read::<T>().map_err(tensor_error)?, b.read::<T>().map_err(tensor_error)?);
            let mut o = out.write::<T>().map_err(tensor_error)?;
            for ((o, x), y) in o.iter_mut().zip(x.iter()).zip(y.iter()) {
                *o = f(*x, *y);
            }
            Ok(())
        }
    }
}

fn relu_of<T: Num>(x: T) -> T {
    if x < T::ZERO { T::ZERO } else { x }
}

#[allow(clippy::too_many_arguments)]
fn matmul<T: Num>(
    alpha: Argument<T>,
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
    beta: Argument<T>,
    c: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    let dims = |t: &DenseHostTensor| FixedRankShape::<2>::of(t.shape()).map(|s| s.0);
    let (Some([m, k]), Some([k2, n]), Some([m2, n2])) = (dims(&a), dims(&b), dims(&c)) else {
        return Err(crate::diag_fmt!(
            Internal,
            "matmul needs rank-2 tensors, got {}, {} and {}",
            a.shape(),
            b.shape(),
            c.shape()
        ));
    };
    if k != k2 || m != m2 || n != n2 {
        return Err(crate::diag_fmt!(
            Internal,
            "matmul shapes do not agree: {} x {} into {}",
            a.shape(),
            b.shape(),
            c.shape()
        ));
    }
    let (x, y) = (a.read::<T>().map_err(tensor_error)?, b.read::<T>().map_err(tensor_error)?);
    let mut out = c.write::<T>().map_err(tensor_error)?;
    // Dims are non-negative and index real buffers, so they fit `usize`.
    T::gemm(m as usize, k as usize, n as usize, *alpha, &x, &y, *beta, &mut out);
    Ok(Chain)
}

fn relu<T: Num>(a: Argument<DenseHostTensor>, b: Argument<DenseHostTensor>) -> Result<Chain, Diagnostic> {
    same_shape(&a, &b)?;
    if same_data(&a, &b) {
        map_self::<T>(&b, relu_of)?;
    } else {
        map::<T, T>(&a, &b, |x, _| relu_of(x))?;
    }
    Ok(Chain)
}
fn relu_inplace<T: Num>(a: Argument<DenseHostTensor>) -> Result<Chain, Diagnostic> {
    map_self::<T>(&a, relu_of)?;
    Ok(Chain)
}
fn add<T: Num>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
    c: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    same_shape3(&a, &b, &c)?;
    zip::<T>(&a, &b, &c, T::add)?;
    Ok(Chain)
}
fn add_inplace<T: Num>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    same_shape(&a, &b)?;
    zip::<T>(&a, &b, &b, T::add)?;
    Ok(Chain)
}
fn equal_of<T: Num>(x: T, y: T) -> T {
    if x == y { T::ONE } else { T::ZERO }
}
fn equal<T: Num>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
    c: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    same_shape3(&a, &b, &c)?;
    zip::<T>(&a, &b, &c, equal_of)?;
    Ok(Chain)
}
fn equal_inplace<T: Num>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    same_shape(&a, &b)?;
    zip::<T>(&a, &b, &b, equal_of)?;
    Ok(Chain)
}
fn relu_grad_inplace<T: Num>(
    act: Argument<DenseHostTensor>,
    grad: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    same_shape(&act, &grad)?;
    zip::<T>(&act, &grad, &grad, |a, g| g.mul(if a > T::ZERO { T::ONE } else { T::ZERO }))?;
    Ok(Chain)
}
fn cast_i32_to_f32(a: Argument<DenseHostTensor>, b: Argument<DenseHostTensor>) -> Result<Chain, Diagnostic> {
    same_shape(&a, &b)?;
    map::<i32, f32>(&a, &b, |x, _| x as f32)?;
    Ok(Chain)
}

fn argmax<T: Num>(
    a: Argument<DenseHostTensor>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    let Some([m, n]) = FixedRankShape::<2>::of(a.shape()).map(|s| s.0) else {
        return Err(crate::diag_fmt!(Internal, "argmax needs a rank-2 tensor, got {}", a.shape()));
    };
    let out = new_tensor(ctx, DType::I32, &[m], "Cannot allocate result tensor.")?;
    {
        let x = a.read::<T>().map_err(tensor_error)?;
        let mut o = out.write::<i32>().map_err(tensor_error)?;
        let n = usize::try_from(n).unwrap_or(0);
        for (row, o) in x.chunks_exact(n.max(1)).zip(o.iter_mut()) {
            let mut best: Option<(usize, T)> = None;
            for (j, &v) in row.iter().enumerate().take(n) {
                if !v.is_nan() && best.is_none_or(|(_, b)| v > b) {
                    best = Some((j, v));
                }
            }
            *o = best.map_or(0, |(j, _)| j as i32);
        }
    }
    Ok(Value(out))
}

fn reduce_mean<T: Num>(
    a: Argument<DenseHostTensor>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    if a.shape().rank() != 1 {
        return Err(crate::diag_fmt!(Internal, "reduce_mean needs a rank-1 tensor, got {}", a.shape()));
    }
    let out = new_tensor(ctx, T::DTYPE, &[], "cannot allocate result tensor")?;
    let x = a.read::<T>().map_err(tensor_error)?;
    let sum = x.iter().fold(T::ZERO, |s, v| s.add(*v));
    let mean =
        sum.div_count(x.len()).ok_or_else(|| Diagnostic::internal("reduce_mean of an empty tensor"))?;
    out.write::<T>().map_err(tensor_error)?[0] = mean;
    drop(x);
    Ok(Value(out))
}

fn broadcast<T: Num, const R: usize>(
    a: Argument<DenseHostTensor>,
    shape: Argument<TensorShape>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    let Some([c]) = FixedRankShape::<1>::of(a.shape()).map(|s| s.0) else {
        return Err(crate::diag_fmt!(Internal, "broadcast needs a rank-1 input, got {}", a.shape()));
    };
    if shape.rank() != R || shape.dim(R - 1) != Some(c) {
        return Err(crate::diag_fmt!(
            Internal,
            "broadcast input tensor dimension and target shape mismatch: {} vs. {}",
            FixedRankShape([c]),
            *shape
        ));
    }
    let out = new_tensor(ctx, T::DTYPE, shape.dims(), "cannot allocate result tensor")?;
    {
        let x = a.read::<T>().map_err(tensor_error)?;
        let mut o = out.write::<T>().map_err(tensor_error)?;
        if !x.is_empty() {
            for row in o.chunks_exact_mut(x.len()) {
                row.copy_from_slice(&x);
            }
        }
    }
    Ok(Value(out))
}

fn slice_inplace<T: Num>(
    input: Argument<DenseHostTensor>,
    begin: Argument<DenseHostTensor>,
    _chain: Argument<Chain>,
    output: Argument<DenseHostTensor>,
) -> Result<Chain, Diagnostic> {
    let b = begin.read::<i64>().map_err(tensor_error)?;
    let &[b0, b1, b2] = &b[..] else {
        return Err(Diagnostic::internal("the size of 'begin_index' should match the input tensor rank"));
    };
    let (Some(inp), Some(out)) =
        (FixedRankShape::<3>::of(input.shape()), FixedRankShape::<3>::of(output.shape()))
    else {
        return Err(crate::diag_fmt!(
            Internal,
            "slice needs rank-3 tensors, got {} and {}",
            input.shape(),
            output.shape()
        ));
    };
    let fits = [b0, b1, b2]
        .iter()
        .zip(inp.0)
        .zip(out.0)
        .all(|((&b, i), o)| b >= 0 && b.checked_add(o).is_some_and(|e| e <= i));
    if !fits {
        return Err(crate::diag_fmt!(
            Internal,
            "slice of {} at [{}, {}, {}] does not fit the input {}",
            output.shape(),
            b0,
            b1,
            b2,
            input.shape()
        ));
    }
    if output.shape().checked_num_elements() == Some(0) {
        return Ok(Chain);
    }
    let [d0, d1, d2] = inp.0.map(|d| d as usize);
    let [o0, o1, o2] = out.0.map(|d| d as usize);
    let [b0, b1, b2] = [b0, b1, b2].map(|d| d as usize);
    let x = input.read::<T>().map_err(tensor_error)?;
    let mut o = output.write::<T>().map_err(tensor_error)?;
    for i in 0..o0 {
        for j in 0..o1 {
            let src = ((b0 + i) * d1 + b1 + j) * d2 + b2;
            let dst = (i * o1 + j) * o2;
            o[dst..dst + o2].copy_from_slice(&x[src..src + o2]);
        }
    }
    let _ = d0;
    Ok(Chain)
}

/// One numeric family's kernels.
macro_rules! family {
    ($(#[$doc:meta])* $name:ident = $sfx:literal, $t:ty) => {
        $(#[$doc])*
        pub const $name: &[KernelEntry] = &[
            KernelEntry::strict(concat!("tfrt_test.matmul.", $sfx, ".2"), kernel!(matmul::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.relu.", $sfx), kernel!(relu::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.relu_inplace.", $sfx), kernel!(relu_inplace::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.add.", $sfx), kernel!(add::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.add_inplace.", $sfx), kernel!(add_inplace::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.equal.", $sfx), kernel!(equal::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.equal_inplace.", $sfx), kernel!(equal_inplace::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.relu_grad_inplace.", $sfx), kernel!(relu_grad_inplace::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.argmax.", $sfx, ".2"), kernel!(argmax::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.reduce_mean.", $sfx, ".1"), kernel!(reduce_mean::<$t>)),
            KernelEntry::strict(concat!("tfrt_test.broadcast.", $sfx, ".2"), kernel!(broadcast::<$t, 2>)),
            KernelEntry::strict(concat!("tfrt_test.broadcast.", $sfx, ".3"), kernel!(broadcast::<$t, 3>)),
            KernelEntry::strict(concat!("tfrt_test.slice_inplace.", $sfx, ".3"), kernel!(slice_inplace::<$t>)),
        ];
    };
}
family!(/** The `f32` model kernels. */ F32 = "f32", f32);
family!(/** The `i32` model kernels. */ I32 = "i32", i32);
family!(/** The `i64` model kernels. */ I64 = "i64", i64);

/// `tfrt_test.cast.i32_to_f32`.
pub const CAST: &[KernelEntry] =
    &[KernelEntry::strict("tfrt_test.cast.i32_to_f32", kernel!(cast_i32_to_f32))];
