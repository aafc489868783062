//! Comparison, logic and selection with broadcasting, for any element type the importers
//! use: `nn.compare` (a `bool` per element), `nn.logical` (over `bool`s) and `nn.where`
//! (picks from two operands by a `bool` condition).
//!
//! Operands and output are 4-D regions `[offset, d0, d1, d2, d3]` or, for an operand, a
//! rank-4 dense constant read in place, broadcast as `nn.add.*`'s are. Attributes, in name
//! order:
//! - `nn.compare`: `dtype` (the operands' element type), `lhs`, `op` (`[0]` equal, `[1]`
//!   less, `[2]` less or equal, `[3]` greater, `[4]` greater or equal, `[5]` not equal),
//!   `output`, `rhs`. NaN compares false, except not-equal.
//! - `nn.logical`: `lhs`, `op` (`[0]` and, `[1]` or, `[2]` xor), `output`, `rhs`.
//! - `nn.where`: `cond` (`bool`), `dtype` (of `lhs`, `rhs` and the output), `lhs` (taken
//!   where the condition holds), `output`, `rhs`.

use hostrt_core::Diagnostic;
use hostrt_core::kernel::KernelFrame;
use hostrt_core::tensor::DType;

use crate::activation_arena::{Inputs, split, with_arena};
use crate::attrs::{Attrs, Region, invalid};
use crate::element::{dtype, load};
use crate::elementwise::{Operand, strides};

/// Calls `f(output index, operand indices)` for every element of `out`, row-major, with
/// each operand's index under broadcasting (`strides` from [`strides`]).
fn each<const N: usize>(out: &[usize; 4], strides: &[[usize; 4]; N], mut f: impl FnMut(usize, [usize; N])) {
    let mut k = 0;
    for a in 0..out[0] {
        for b in 0..out[1] {
            for c in 0..out[2] {
                for d in 0..out[3] {
                    let at = strides.map(|s| a * s[0] + b * s[1] + c * s[2] + d * s[3]);
                    f(k, at);
                    k += 1;
                }
            }
        }
    }
}

/// Operand `o`'s bytes (elements of `size` bytes) and its strides in `output`.
fn operand<'b>(
    a: &Attrs<'b>,
    inputs: &Inputs<'b>,
    o: &Operand<'b>,
    output: &Region<4>,
    size: usize,
) -> Result<(&'b [u8], [usize; 4]), Diagnostic> {
    let s = strides(a.kernel, o, output)?;
    let len = o
        .dims
        .iter()
        .try_fold(size, |p, &d| p.checked_mul(d))
        .ok_or_else(|| invalid(a.kernel, format_args!("size overflows")))?;
    let bytes = o.bytes(inputs, len)?;
    if bytes.len() != len {
        return Err(invalid(a.kernel, format_args!("a constant operand does not hold {:?}", o.dims)));
    }
    Ok((bytes, s))
}

/// The op code at attribute `i`, below `count`.
fn op(a: &Attrs<'_>, i: usize, count: i32) -> Result<i32, Diagnostic> {
    match a.ints(i, "op", Some(1))?[0] {
        c if (0..count).contains(&c) => Ok(c),
        c => Err(invalid(a.kernel, format_args!("op {} is not below {}", c, count))),
    }
}

/// `nn.compare`.
pub(crate) fn compare(frame: &KernelFrame<'_>) {
    const K: &str = "nn.compare";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let d = dtype(&a, 0, "dtype")?;
        let code = op(&a, 2, 6)?;
        let output = a.region::<4>(3, "output")?;
        let (lhs, rhs) = (Operand::read(&a, 1, "lhs", d)?, Operand::read(&a, 4, "rhs", d)?);
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(1)?)?;
        let (x, xs) = operand(&a, &inputs, &lhs, &output, d.size())?;
        let (y, ys) = operand(&a, &inputs, &rhs, &output, d.size())?;
        each(&output.dims, &[xs, ys], |o, [l, r]| {
            let (p, q) = (load(d, x, l), load(d, y, r));
            out[o] = u8::from(match code {
                0 => p == q,
                1 => p < q,
                2 => p <= q,
                3 => p > q,
                4 => p >= q,
                _ => p != q,
            });
        });
        Ok(())
    })
}

/// `nn.logical`.
pub(crate) fn logical(frame: &KernelFrame<'_>) {
    const K: &str = "nn.logical";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let code = op(&a, 1, 3)?;
        let output = a.region::<4>(2, "output")?;
        let (lhs, rhs) =
            (Operand::read(&a, 0, "lhs", DType::Bool)?, Operand::read(&a, 3, "rhs", DType::Bool)?);
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(1)?)?;
        let (x, xs) = operand(&a, &inputs, &lhs, &output, 1)?;
        let (y, ys) = operand(&a, &inputs, &rhs, &output, 1)?;
        each(&output.dims, &[xs, ys], |o, [l, r]| {
            let (p, q) = (x[l] != 0, y[r] != 0);
            out[o] = u8::from(match code {
                0 => p && q,
                1 => p || q,
                _ => p != q,
            });
        });
        Ok(())
    })
}

/// `nn.where`.
pub(crate) fn select(frame: &KernelFrame<'_>) {
    const K: &str = "nn.where";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 5)?;
        let d = dtype(&a, 1, "dtype")?;
        let output = a.region::<4>(3, "output")?;
        let cond = Operand::read(&a, 0, "cond", DType::Bool)?;
        let (lhs, rhs) = (Operand::read(&a, 2, "lhs", d)?, Operand::read(&a, 4, "rhs", d)?);
        let size = d.size();
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(size)?)?;
        let (c, cs) = operand(&a, &inputs, &cond, &output, 1)?;
        let (x, xs) = operand(&a, &inputs, &lhs, &output, size)?;
        let (y, ys) = operand(&a, &inputs, &rhs, &output, size)?;
        each(&output.dims, &[cs, xs, ys], |o, [k, l, r]| {
            let (from, at) = if c[k] != 0 { (x, l) } else { (y, r) };
            out[o * size..o * size + size].copy_from_slice(&from[at * size..at * size + size]);
        });
        Ok(())
    })
}
