//! The print group as defmt frames (feature `defmt`): `tfrt.print.*` under the same names as
//! [`print`](super::print), writing one frame per line through the application's defmt
//! global logger instead of the host's output sink. The format strings stay in the ELF, so
//! the image links no number formatting; a decoder on the host (`cargo xtask defmt`) prints
//! exactly what the `fmt` group prints: integers as Rust does, floats as C's `%f` (a float
//! parameter without a display hint), and `nan`'s sign, which is written here since the
//! frame's float text has none (docs/porting.md, "Output without core::fmt").

use crate::chain::Chain;
use crate::kernel::Argument;

fn print_i1(v: Argument<bool>, _: Argument<Chain>) -> Chain {
    defmt::println!("int1 = {=u8}\n", u8::from(*v));
    Chain
}
fn print_i32(v: Argument<i32>, _: Argument<Chain>) -> Chain {
    defmt::println!("int32 = {=i32}\n", *v);
    Chain
}
fn print_i64(v: Argument<i64>, _: Argument<Chain>) -> Chain {
    defmt::println!("int64 = {=i64}\n", *v);
    Chain
}
fn print_f32(v: Argument<f32>, _: Argument<Chain>) -> Chain {
    match (v.is_nan(), v.is_sign_negative()) {
        (true, false) => defmt::println!("f32 = nan\n"),
        (true, true) => defmt::println!("f32 = -nan\n"),
        _ => defmt::println!("f32 = {=f32}\n", *v),
    }
    Chain
}
fn print_f64(v: Argument<f64>, _: Argument<Chain>) -> Chain {
    match (v.is_nan(), v.is_sign_negative()) {
        (true, false) => defmt::println!("f64 = nan\n"),
        (true, true) => defmt::println!("f64 = -nan\n"),
        _ => defmt::println!("f64 = {=f64}\n", *v),
    }
    Chain
}

entries! {
    PRINT_I1 = "tfrt.print.i1" => results_only(print_i1),
    PRINT_I32 = "tfrt.print.i32" => results_only(print_i32),
    PRINT_I64 = "tfrt.print.i64" => results_only(print_i64),
    PRINT_F32 = "tfrt.print.f32" => results_only(print_f32),
    PRINT_F64 = "tfrt.print.f64" => results_only(print_f64),
}
