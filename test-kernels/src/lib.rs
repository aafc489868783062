//! `hostrt-test-kernels`: TFRT's test kernels (`tfrt_test.*`, `tfrt_tutorial.*`, `vt.*`), the
//! kernels the conformance programs use besides the basic `tfrt.*` ones.
//!
//! Register them next to the basic kernels:
//!
//! ```
//! # use hostrt_core::KernelRegistry;
//! let mut registry: KernelRegistry<512> = KernelRegistry::new();
//! hostrt_core::basic_kernels::register_basic_kernels(&mut registry).unwrap();
//! hostrt_test_kernels::register_test_kernels(&mut registry).unwrap();
//! ```
//!
//! This crate is for test drivers (`hostrt run`, `hostrt check`); firmware never links it
//! (`hostrt-core` does not depend on it). It is `no_std` but needs `alloc` (strings, loop
//! state); the `std` feature (on by default) makes the sleeping kernels sleep, stamps log
//! lines with the time, and gives the benchmark kernel its clocks.
//!
//! # Work that outlives a kernel
//!
//! Several kernels enqueue tasks that print, report errors or start functions after the
//! kernel returned (`tfrt_test.do.async`, `tfrt_test.report_error_async`,
//! `tfrt_test.usleep`, the benchmark), and some payloads print when they are destroyed
//! (`vt.value`, `TestResource`). They keep the kernel's execution context for that, relying
//! on the contract of [`Program::execute`](hostrt_core::executor::Program::execute): the
//! context, its host and request, and the program stay alive until every piece of work of
//! the run has finished and the queue has quiesced. A caller that builds a
//! [`KernelFrame`](hostrt_core::KernelFrame) by hand must keep the same promise.
#![no_std]
#![warn(missing_docs)]
// `Diagnostic` is an inline, fixed-size value (see hostrt-core).
#![allow(clippy::result_large_err)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

mod asynchronous;
mod atomic;
mod benchmark;
mod blocking;
pub mod btf;
mod native;
mod simple;
mod sys;
#[cfg(test)]
mod testing;
mod tutorial;
mod vt;

use hostrt_core::kernel::{KernelRegistry, RegistryError};

pub use atomic::AtomicCounter;
pub use simple::TestResource;
pub use sys::{LogPrefix, Severity};
pub use tutorial::Coordinate;
pub use vt::VtValue;

/// The payload of `!tfrt.string` values.
pub type TfrtString = alloc::string::String;

/// Register every test kernel: `tfrt_test.*`, `tfrt_tutorial.*`, `vt.*`,
/// `btf.read_dense_tensor.*`, and the native functions (`native_add`, ...).
pub fn register_test_kernels<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    simple::register(r)?;
    asynchronous::register(r)?;
    atomic::register(r)?;
    blocking::register(r)?;
    btf::register(r)?;
    benchmark::register(r)?;
    vt::register(r)?;
    native::register(r)?;
    tutorial::register(r)
}
