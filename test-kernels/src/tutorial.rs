//! The tutorial kernels: a user-defined payload type, `!my.coordinate`.

use hostrt_core::kernel::{Argument, KernelRegistry, RegistryError, Value};
use hostrt_core::{Chain, ExecutionContext, kernel};

/// The payload of `!my.coordinate` values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Coordinate {
    /// x.
    pub x: i32,
    /// y.
    pub y: i32,
}

fn create_coordinate(x: Argument<i32>, y: Argument<i32>) -> Value<Coordinate> {
    Value(Coordinate { x: *x, y: *y })
}

fn print_coordinate(c: Argument<Coordinate>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("({}, {})\n", c.x, c.y));
    Chain
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_tutorial.create_coordinate", kernel!(create_coordinate))?;
    r.add_kernel("tfrt_tutorial.print_coordinate", kernel!(print_coordinate))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_host;

    #[test]
    fn create_and_print() {
        with_host(|env| {
            let c = env.results(kernel!(create_coordinate), &[env.value(2i32), env.value(-4i32)], &[], 1);
            assert_eq!(c[0].get::<Coordinate>(), Some(&Coordinate { x: 2, y: -4 }));
            env.results(kernel!(print_coordinate), &[c[0].clone()], &[], 1);
            assert_eq!(env.take_output(), "(2, -4)\n");
        });
    }
}
