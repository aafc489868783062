//! Blocking-queue kernels: each enqueues one blocking task (queuing allowed)
//! that sleeps, then prints `Slept for <µs> microseconds`.

use hostrt_core::kernel::{Argument, Detached, KernelRegistry, Output, RegistryError};
use hostrt_core::{Chain, HostContext, kernel};

use crate::sys;

/// Printed when the queue refuses the blocking task. TFRT writes it to stderr; hostrt's
/// kernels only have the host's output sink.
const REFUSED: &str = "Failed to enqueue blocking work. Maximum number of pending blocking tasks reached.\n";

fn sleep_and_report(host: &HostContext<'_>, us: i32) {
    sys::sleep_us(u64::try_from(us).unwrap_or(0));
    host.print(format_args!("Slept for {us} microseconds\n"));
}

fn usleep(us: Argument<i32>, d: Detached) {
    let us = *us;
    if d.host().enqueue_blocking_work(move || sleep_and_report(d.host(), us), true).is_err() {
        d.host().print(format_args!("{REFUSED}"));
    }
}

/// Like `tfrt_test.usleep`; the result chain becomes available after the print.
fn blocking_usleep(us: Argument<i32>, done: Output<Chain>, d: Detached) {
    let Some(done) = done.allocate() else { return };
    let us = *us;
    let task = move || {
        sleep_and_report(d.host(), us);
        done.emplace(Chain);
    };
    if d.host().enqueue_blocking_work(task, true).is_err() {
        d.host().print(format_args!("{REFUSED}"));
    }
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_test.usleep", kernel!(usleep))?;
    r.add_kernel("tfrt_test.blocking.usleep", kernel!(blocking_usleep))
}

#[cfg(test)]
mod tests {
    use hostrt_core::kernel;

    use super::*;
    use crate::testing::with_host;

    #[test]
    fn one_blocking_task_each() {
        with_host(|env| {
            env.call(kernel!(usleep), &[env.value(10i32)], &[], 0);
            let r = env.results(kernel!(blocking_usleep), &[env.value(20i32)], &[], 1);
            assert_eq!(env.tasks(), (0, 2));
            assert!(!r[0].is_available());
            assert_eq!(env.take_output(), "", "nothing sleeps or prints inline");
            env.quiesce();
            assert_eq!(env.take_output(), "Slept for 10 microseconds\nSlept for 20 microseconds\n");
            assert!(r[0].get::<Chain>().is_some());
        });
    }
}
