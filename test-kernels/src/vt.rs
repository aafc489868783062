//! Value-tracking kernels: `!vt.value` holds an i32 and prints its lifecycle,
//! so tests can see when the runtime creates, moves and destroys values.

use hostrt_core::kernel::{Argument, Attribute, KernelRegistry, Output, RegistryError};
use hostrt_core::{Chain, ExecutionContext, kernel};

use hostrt_core::kernel::Detached;

/// The payload of `!vt.value` values. Creating one prints `constructed vt.value(<v>)`;
/// storing it into a result prints `move constructed vt.value(<v>)` (TFRT moves the new
/// value into the async value); the stored value prints `destroyed vt.value(<v>)` when it
/// dies. The moved-from temporary prints nothing, as in TFRT.
pub struct VtValue {
    v: i32,
    host: Detached,
}

impl core::fmt::Debug for VtValue {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "vt.value({})", self.v)
    }
}

impl VtValue {
    fn new(v: i32, host: Detached) -> Self {
        host.host().print(format_args!("constructed vt.value({v})\n"));
        VtValue { v, host }
    }

    /// The tracked integer.
    pub fn get(&self) -> i32 {
        self.v
    }

    /// Store the value into `out`, printing the move TFRT's C++ makes there.
    fn store(self, out: &Output<VtValue>) {
        self.host.host().print(format_args!("move constructed vt.value({})\n", self.v));
        out.emplace(self);
    }
}

impl Drop for VtValue {
    fn drop(&mut self) {
        self.host.host().print(format_args!("destroyed vt.value({})\n", self.v));
    }
}

fn vt_constant(v: Attribute<i32>, out: Output<VtValue>, host: Detached) {
    VtValue::new(*v, host).store(&out);
}

fn vt_add(a: Argument<VtValue>, b: Argument<VtValue>, out: Output<VtValue>, host: Detached) {
    VtValue::new(a.v.wrapping_add(b.v), host).store(&out);
}

fn vt_print(v: Argument<VtValue>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("print vt_value({})\n", v.v));
    Chain
}

/// Both results are the operand object.
fn share_to_two(v: Argument<VtValue>, a: Output<VtValue>, b: Output<VtValue>) {
    a.set(v.value().clone());
    b.set(v.value().clone());
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("vt.constant", kernel!(vt_constant))?;
    r.add_kernel("vt.add", kernel!(vt_add))?;
    r.add_kernel("vt.print", kernel!(vt_print))?;
    r.add_kernel("tfrt_test.share_to_two", kernel!(share_to_two))
}

#[cfg(test)]
mod tests {
    use hostrt_core::kernel::AttrRef;

    use super::*;
    use crate::testing::with_host;

    #[test]
    fn lifecycle_lines_and_sharing() {
        with_host(|env| {
            let three = 3i32.to_le_bytes();
            let a = env.results(kernel!(vt_constant), &[], &[AttrRef::scalar::<i32>(&three).unwrap()], 1);
            let b = env.results(kernel!(vt_add), &[a[0].clone(), a[0].clone()], &[], 1);
            assert_eq!(b[0].get::<VtValue>().unwrap().get(), 6);
            let shared = env.results(kernel!(share_to_two), &[b[0].clone()], &[], 2);
            assert!(shared[0].ptr_eq(&b[0]) && shared[1].ptr_eq(&b[0]));
            env.results(kernel!(vt_print), &[b[0].clone()], &[], 1);
            drop((shared, b));
            assert_eq!(
                env.take_output(),
                "constructed vt.value(3)\nmove constructed vt.value(3)\n\
                 constructed vt.value(6)\nmove constructed vt.value(6)\n\
                 print vt_value(6)\ndestroyed vt.value(6)\n"
            );
            drop(a);
            assert_eq!(env.take_output(), "destroyed vt.value(3)\n");
        });
    }
}
