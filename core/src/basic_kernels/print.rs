//! The print group: `tfrt.print.*` through the host's output sink (pulls in number
//! formatting, so firmware that does not print leaves it out). One `KernelEntry` constant per
//! kernel; `ALL` is the group.

use crate::chain::Chain;
use crate::host_context::ExecutionContext;
use crate::kernel::Argument;

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

entries! {
    PRINT_I1 = "tfrt.print.i1" => results_only(print_i1),
    PRINT_I32 = "tfrt.print.i32" => results_only(print_i32),
    PRINT_I64 = "tfrt.print.i64" => results_only(print_i64),
    PRINT_F32 = "tfrt.print.f32" => results_only(print_f32),
    PRINT_F64 = "tfrt.print.f64" => results_only(print_f64),
}
