//! Atomic counters: `!test.atomic.i32`, a shared mutable counter. The value
//! object is shared by every kernel that uses it, never copied.

use core::sync::atomic::{AtomicI32, Ordering};

use hostrt_core::kernel::{Argument, KernelRegistry, RegistryError, Value};
use hostrt_core::{Chain, kernel};

/// The payload of `!test.atomic.i32` values.
#[derive(Debug, Default)]
pub struct AtomicCounter(AtomicI32);

impl AtomicCounter {
    /// The current count.
    pub fn count(&self) -> i32 {
        self.0.load(Ordering::SeqCst)
    }
}

fn create() -> Value<AtomicCounter> {
    Value(AtomicCounter::default())
}

fn inc(c: Argument<AtomicCounter>) -> Chain {
    c.0.fetch_add(1, Ordering::SeqCst);
    Chain
}

fn add(c: Argument<AtomicCounter>, v: Argument<i32>) -> Chain {
    c.0.fetch_add(*v, Ordering::SeqCst);
    Chain
}

fn get(c: Argument<AtomicCounter>) -> (i32, Chain) {
    (c.count(), Chain)
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_test.atomic.create.i32", kernel!(create))?;
    r.add_kernel("tfrt_test.atomic.inc.i32", kernel!(inc))?;
    r.add_kernel("tfrt_test.atomic.add.i32", kernel!(add))?;
    r.add_kernel("tfrt_test.atomic.get.i32", kernel!(get))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::with_host;

    #[test]
    fn counters_are_one_shared_object() {
        with_host(|env| {
            let c = env.results(kernel!(create), &[], &[], 1).remove(0);
            env.results(kernel!(inc), core::slice::from_ref(&c), &[], 1);
            env.results(kernel!(add), &[c.clone(), env.value(41i32)], &[], 1);
            let r = env.results(kernel!(get), core::slice::from_ref(&c), &[], 2);
            assert_eq!(r[0].get::<i32>(), Some(&42));
            assert!(r[1].get::<Chain>().is_some());
            assert_eq!(c.get::<AtomicCounter>().unwrap().count(), 42);
        });
    }
}
