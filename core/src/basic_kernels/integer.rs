//! The integer group: chains, integer and boolean constants, arithmetic and comparisons, and
//! `tfrt.alias.value`. One `KernelEntry` constant per kernel; `ALL` is the group.

use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
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
fn add_i32(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}
fn add_i64(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}
fn mul_i32(a: i32, b: i32) -> i32 {
    a.wrapping_mul(b)
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
fn equal_i32(a: i32, b: i32) -> bool {
    a == b
}
fn lessequal_i32(a: i32, b: i32) -> bool {
    a <= b
}
fn minus_i32(a: i32, b: i32) -> i32 {
    a.wrapping_sub(b)
}
fn minus_i64(a: i64, b: i64) -> i64 {
    a.wrapping_sub(b)
}
fn mul_i64(a: i64, b: i64) -> i64 {
    a.wrapping_mul(b)
}
fn equal_i64(a: i64, b: i64) -> bool {
    a == b
}
fn lessequal_i64(a: i64, b: i64) -> bool {
    a <= b
}
fn and_i1(a: bool, b: bool) -> bool {
    a && b
}
/// `tfrt.alias.value %chain, %v`: the result is `%v` itself (the same value object).
fn alias_value(frame: &KernelFrame<'_>) {
    match frame.arg(1) {
        Some(v) => frame.set_result(0, v.clone()),
        None => frame.report_error(Diagnostic::internal("tfrt.alias.value needs a chain and a value")),
    }
}

entries! {
    NEW_CHAIN = "tfrt.new.chain" => results_only(new_chain),
    MERGE_CHAINS = "tfrt.merge.chains" => results_only(merge_chains),
    CONSTANT_I1 = "tfrt.constant.i1" => scalar(constant_i1),
    CONSTANT_I32 = "tfrt.constant.i32" => scalar(constant_i32),
    CONSTANT_UI32 = "tfrt.constant.ui32" => scalar(constant_ui32),
    CONSTANT_I64 = "tfrt.constant.i64" => scalar(constant_i64),
    CONSTANT_UI64 = "tfrt.constant.ui64" => scalar(constant_ui64),
    ADD_I32 = "tfrt.add.i32" => scalar(add_i32),
    ADD_I64 = "tfrt.add.i64" => scalar(add_i64),
    MUL_I32 = "tfrt.mul.i32" => scalar(mul_i32),
    DIV_I32 = "tfrt.div.i32" => results_only(div_i32),
    DIV_I64 = "tfrt.div.i64" => results_only(div_i64),
    EQUAL_I32 = "tfrt.equal.i32" => scalar(equal_i32),
    LESSEQUAL_I32 = "tfrt.lessequal.i32" => scalar(lessequal_i32),
    MINUS_I32 = "tfrt.minus.i32" => scalar(minus_i32),
    MINUS_I64 = "tfrt.minus.i64" => scalar(minus_i64),
    MUL_I64 = "tfrt.mul.i64" => scalar(mul_i64),
    EQUAL_I64 = "tfrt.equal.i64" => scalar(equal_i64),
    LESSEQUAL_I64 = "tfrt.lessequal.i64" => scalar(lessequal_i64),
    AND_I1 = "tfrt.and.i1" => scalar(and_i1),
    ALIAS_VALUE = "tfrt.alias.value" => raw(alias_value),
}
