//! Constants, arithmetic, comparisons, chains and prints.

use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel;
use crate::kernel::{Argument, Attribute, KernelRegistry, RegistryError, RemainingArguments};

fn new_chain() -> Chain {
    Chain
}

fn merge_chains(_: RemainingArguments) -> Chain {
    Chain
}

fn constant_i1(v: Attribute<bool>) -> bool {
    *v
}
fn constant_i32(v: Attribute<i32>) -> i32 {
    *v
}
fn constant_ui32(v: Attribute<i32>) -> u32 {
    *v as u32
}
fn constant_i64(v: Attribute<i64>) -> i64 {
    *v
}
fn constant_ui64(v: Attribute<i64>) -> u64 {
    *v as u64
}
fn constant_f32(v: Attribute<f32>) -> f32 {
    *v
}
fn constant_f64(v: Attribute<f64>) -> f64 {
    *v
}

fn add_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    a.wrapping_add(*b)
}
fn add_i64(a: Argument<i64>, b: Argument<i64>) -> i64 {
    a.wrapping_add(*b)
}
fn add_f32(a: Argument<f32>, b: Argument<f32>) -> f32 {
    *a + *b
}
fn add_f64(a: Argument<f64>, b: Argument<f64>) -> f64 {
    *a + *b
}
fn mul_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    a.wrapping_mul(*b)
}
fn div_i32(a: Argument<i32>, b: Argument<i32>) -> Result<(i32, i32), Diagnostic> {
    if *b == 0 {
        return Err(Diagnostic::internal("Divide by zero"));
    }
    Ok((a.wrapping_div(*b), a.wrapping_rem(*b)))
}
fn div_i64(a: Argument<i64>, b: Argument<i64>) -> Result<(i64, i64), Diagnostic> {
    if *b == 0 {
        return Err(Diagnostic::internal("Divide by zero"));
    }
    Ok((a.wrapping_div(*b), a.wrapping_rem(*b)))
}
fn equal_i32(a: Argument<i32>, b: Argument<i32>) -> bool {
    *a == *b
}
fn lessequal_i32(a: Argument<i32>, b: Argument<i32>) -> bool {
    *a <= *b
}

fn print_i1(v: Argument<bool>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("int1 = {}\n", u8::from(*v)));
    Chain
}
fn print_i32(v: Argument<i32>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("int32 = {}\n", *v));
    Chain
}
fn print_i64(v: Argument<i64>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("int64 = {}\n", *v));
    Chain
}
fn print_f32(v: Argument<f32>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("f32 = {:.6}\n", *v));
    Chain
}
fn print_f64(v: Argument<f64>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("f64 = {:.6}\n", *v));
    Chain
}

pub(super) fn register_integer<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt.new.chain", kernel!(new_chain))?;
    r.add_kernel("tfrt.merge.chains", kernel!(merge_chains))?;
    r.add_kernel("tfrt.constant.i1", kernel!(constant_i1))?;
    r.add_kernel("tfrt.constant.i32", kernel!(constant_i32))?;
    r.add_kernel("tfrt.constant.ui32", kernel!(constant_ui32))?;
    r.add_kernel("tfrt.constant.i64", kernel!(constant_i64))?;
    r.add_kernel("tfrt.constant.ui64", kernel!(constant_ui64))?;
    r.add_kernel("tfrt.add.i32", kernel!(add_i32))?;
    r.add_kernel("tfrt.add.i64", kernel!(add_i64))?;
    r.add_kernel("tfrt.mul.i32", kernel!(mul_i32))?;
    r.add_kernel("tfrt.div.i32", kernel!(div_i32))?;
    r.add_kernel("tfrt.div.i64", kernel!(div_i64))?;
    r.add_kernel("tfrt.equal.i32", kernel!(equal_i32))?;
    r.add_kernel("tfrt.lessequal.i32", kernel!(lessequal_i32))
}

pub(super) fn register_float<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt.constant.f32", kernel!(constant_f32))?;
    r.add_kernel("tfrt.constant.f64", kernel!(constant_f64))?;
    r.add_kernel("tfrt.add.f32", kernel!(add_f32))?;
    r.add_kernel("tfrt.add.f64", kernel!(add_f64))
}

pub(super) fn register_print<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt.print.i1", kernel!(print_i1))?;
    r.add_kernel("tfrt.print.i32", kernel!(print_i32))?;
    r.add_kernel("tfrt.print.i64", kernel!(print_i64))?;
    r.add_kernel("tfrt.print.f32", kernel!(print_f32))?;
    r.add_kernel("tfrt.print.f64", kernel!(print_f64))
}
