//! Constants, arithmetic, comparisons, chains and prints.

use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel;
use crate::kernel::{Argument, Attribute, KernelFrame, RemainingArguments};

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

fn minus_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    a.wrapping_sub(*b)
}
fn minus_i64(a: Argument<i64>, b: Argument<i64>) -> i64 {
    a.wrapping_sub(*b)
}
fn mul_i64(a: Argument<i64>, b: Argument<i64>) -> i64 {
    a.wrapping_mul(*b)
}
fn multiply_f32(a: Argument<f32>, b: Argument<f32>) -> f32 {
    *a * *b
}
fn multiply_f64(a: Argument<f64>, b: Argument<f64>) -> f64 {
    *a * *b
}
fn minimum_f32(a: Argument<f32>, b: Argument<f32>) -> f32 {
    if *b < *a { *b } else { *a }
}
fn minimum_f64(a: Argument<f64>, b: Argument<f64>) -> f64 {
    if *b < *a { *b } else { *a }
}
fn div_f32(a: Argument<f32>, b: Argument<f32>) -> Result<f32, Diagnostic> {
    if *b == 0.0 {
        return Err(Diagnostic::internal("Divide by zero"));
    }
    Ok(*a / *b)
}
fn div_f64(a: Argument<f64>, b: Argument<f64>) -> Result<f64, Diagnostic> {
    if *b == 0.0 {
        return Err(Diagnostic::internal("Divide by zero"));
    }
    Ok(*a / *b)
}
fn equal_i64(a: Argument<i64>, b: Argument<i64>) -> bool {
    *a == *b
}
fn lessequal_i64(a: Argument<i64>, b: Argument<i64>) -> bool {
    *a <= *b
}
fn and_i1(a: Argument<bool>, b: Argument<bool>) -> bool {
    *a && *b
}
fn cast_i64_to_f32(a: Argument<i64>) -> f32 {
    *a as f32
}
fn cast_i64_to_f64(a: Argument<i64>) -> f64 {
    *a as f64
}
fn cast_f32_to_i64(a: Argument<f32>) -> i64 {
    *a as i64
}
fn cast_f64_to_i64(a: Argument<f64>) -> i64 {
    *a as i64
}

/// `tfrt.alias.value %chain, %v`: the result is `%v` itself (the same value object).
fn alias_value(frame: &KernelFrame<'_>) {
    match frame.arg(1) {
        Some(v) => frame.set_result(0, v.clone()),
        None => frame.report_error(Diagnostic::internal("tfrt.alias.value needs a chain and a value")),
    }
}

/// C's `%f` (six decimals; `inf`, `-inf`, `nan`, `-nan` for special values).
fn write_c_f(ctx: &ExecutionContext, prefix: &str, x: f64) {
    if x.is_nan() {
        let sign = if x.is_sign_negative() { "-" } else { "" };
        ctx.host().print(format_args!("{prefix} = {sign}nan\n"));
    } else {
        ctx.host().print(format_args!("{prefix} = {x:.6}\n"));
    }
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
    write_c_f(ctx, "f32", f64::from(*v));
    Chain
}
fn print_f64(v: Argument<f64>, _: Argument<Chain>, ctx: &ExecutionContext) -> Chain {
    write_c_f(ctx, "f64", *v);
    Chain
}

/// `KernelEntry` constants of the integer group (chains, integer and boolean constants,
/// arithmetic and comparisons), for [`KernelRegistry::add_entries`](crate::kernel::KernelRegistry::add_entries).
pub mod integer {
    use super::*;
    entries! {
    NEW_CHAIN = "tfrt.new.chain" => kernel!(new_chain),
    MERGE_CHAINS = "tfrt.merge.chains" => kernel!(merge_chains),
    CONSTANT_I1 = "tfrt.constant.i1" => kernel!(constant_i1),
    CONSTANT_I32 = "tfrt.constant.i32" => kernel!(constant_i32),
    CONSTANT_UI32 = "tfrt.constant.ui32" => kernel!(constant_ui32),
    CONSTANT_I64 = "tfrt.constant.i64" => kernel!(constant_i64),
    CONSTANT_UI64 = "tfrt.constant.ui64" => kernel!(constant_ui64),
    ADD_I32 = "tfrt.add.i32" => kernel!(add_i32),
    ADD_I64 = "tfrt.add.i64" => kernel!(add_i64),
    MUL_I32 = "tfrt.mul.i32" => kernel!(mul_i32),
    DIV_I32 = "tfrt.div.i32" => kernel!(div_i32),
    DIV_I64 = "tfrt.div.i64" => kernel!(div_i64),
    EQUAL_I32 = "tfrt.equal.i32" => kernel!(equal_i32),
    LESSEQUAL_I32 = "tfrt.lessequal.i32" => kernel!(lessequal_i32),
    MINUS_I32 = "tfrt.minus.i32" => kernel!(minus_i32),
    MINUS_I64 = "tfrt.minus.i64" => kernel!(minus_i64),
    MUL_I64 = "tfrt.mul.i64" => kernel!(mul_i64),
    EQUAL_I64 = "tfrt.equal.i64" => kernel!(equal_i64),
    LESSEQUAL_I64 = "tfrt.lessequal.i64" => kernel!(lessequal_i64),
    AND_I1 = "tfrt.and.i1" => kernel!(and_i1),
    ALIAS_VALUE = "tfrt.alias.value" => alias_value,
    }
}

/// `KernelEntry` constants of the float group.
pub mod float {
    use super::*;
    entries! {
    CONSTANT_F32 = "tfrt.constant.f32" => kernel!(constant_f32),
    CONSTANT_F64 = "tfrt.constant.f64" => kernel!(constant_f64),
    ADD_F32 = "tfrt.add.f32" => kernel!(add_f32),
    ADD_F64 = "tfrt.add.f64" => kernel!(add_f64),
    MULTIPLY_F32 = "tfrt.multiply.f32" => kernel!(multiply_f32),
    MULTIPLY_F64 = "tfrt.multiply.f64" => kernel!(multiply_f64),
    MINIMUM_F32 = "tfrt.minimum.f32" => kernel!(minimum_f32),
    MINIMUM_F64 = "tfrt.minimum.f64" => kernel!(minimum_f64),
    DIV_F32 = "tfrt.div.f32" => kernel!(div_f32),
    DIV_F64 = "tfrt.div.f64" => kernel!(div_f64),
    CAST_I64_TO_F32 = "tfrt.cast.i64_to_f32" => kernel!(cast_i64_to_f32),
    CAST_I64_TO_F64 = "tfrt.cast.i64_to_f64" => kernel!(cast_i64_to_f64),
    CAST_F32_TO_I64 = "tfrt.cast.f32_to_i64" => kernel!(cast_f32_to_i64),
    CAST_F64_TO_I64 = "tfrt.cast.f64_to_i64" => kernel!(cast_f64_to_i64),
    }
}

/// `KernelEntry` constants of the print group.
pub mod print {
    use super::*;
    entries! {
    PRINT_I1 = "tfrt.print.i1" => kernel!(print_i1),
    PRINT_I32 = "tfrt.print.i32" => kernel!(print_i32),
    PRINT_I64 = "tfrt.print.i64" => kernel!(print_i64),
    PRINT_F32 = "tfrt.print.f32" => kernel!(print_f32),
    PRINT_F64 = "tfrt.print.f64" => kernel!(print_f64),
    }
}
