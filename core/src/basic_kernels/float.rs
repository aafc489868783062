//! The float group: `f32`/`f64` constants, arithmetic and casts. One `KernelEntry` constant
//! per kernel; `ALL` is the group.

use crate::diagnostic::Diagnostic;
use crate::kernel::{Argument, Attribute};

fn constant_f32(v: Attribute<f32>) -> f32 {
    *v
}
fn constant_f64(v: Attribute<f64>) -> f64 {
    *v
}
fn add_f32(a: f32, b: f32) -> f32 {
    a + b
}
fn add_f64(a: f64, b: f64) -> f64 {
    a + b
}
fn multiply_f32(a: f32, b: f32) -> f32 {
    a * b
}
fn multiply_f64(a: f64, b: f64) -> f64 {
    a * b
}
fn minimum_f32(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}
fn minimum_f64(a: f64, b: f64) -> f64 {
    if b < a { b } else { a }
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
fn cast_i64_to_f32(a: i64) -> f32 {
    a as f32
}
fn cast_i64_to_f64(a: i64) -> f64 {
    a as f64
}
fn cast_f32_to_i64(a: f32) -> i64 {
    a as i64
}
fn cast_f64_to_i64(a: f64) -> i64 {
    a as i64
}

entries! {
    CONSTANT_F32 = "tfrt.constant.f32" => scalar(constant_f32),
    CONSTANT_F64 = "tfrt.constant.f64" => scalar(constant_f64),
    ADD_F32 = "tfrt.add.f32" => scalar(add_f32),
    ADD_F64 = "tfrt.add.f64" => scalar(add_f64),
    MULTIPLY_F32 = "tfrt.multiply.f32" => scalar(multiply_f32),
    MULTIPLY_F64 = "tfrt.multiply.f64" => scalar(multiply_f64),
    MINIMUM_F32 = "tfrt.minimum.f32" => scalar(minimum_f32),
    MINIMUM_F64 = "tfrt.minimum.f64" => scalar(minimum_f64),
    DIV_F32 = "tfrt.div.f32" => results_only(div_f32),
    DIV_F64 = "tfrt.div.f64" => results_only(div_f64),
    CAST_I64_TO_F32 = "tfrt.cast.i64_to_f32" => scalar(cast_i64_to_f32),
    CAST_I64_TO_F64 = "tfrt.cast.i64_to_f64" => scalar(cast_i64_to_f64),
    CAST_F32_TO_I64 = "tfrt.cast.f32_to_i64" => scalar(cast_f32_to_i64),
    CAST_F64_TO_I64 = "tfrt.cast.f64_to_i64" => scalar(cast_f64_to_i64),
}
