//! The basic `tfrt.*` kernels (SPEC §3.1–§3.4): constants, arithmetic, comparisons, chains,
//! prints, calls and control flow. Registered explicitly with [`register_basic_kernels`].

mod control;
mod parallel;
mod scalar;

use crate::kernel::{KernelRegistry, RegistryError};

/// Register every basic kernel in `registry`.
pub fn register_basic_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    scalar::register_integer(registry)?;
    scalar::register_float(registry)?;
    scalar::register_print(registry)?;
    control::register(registry)?;
    parallel::register(registry)
}

/// Chains, integer and boolean constants, arithmetic and comparisons. Firmware registers
/// only the groups it uses: the linker then drops the rest (float formatting alone is
/// about 15 KB of flash).
pub fn register_integer_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    scalar::register_integer(registry)
}

/// `f32`/`f64` constants and arithmetic.
pub fn register_float_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    scalar::register_float(registry)
}

/// `tfrt.print.*` (through the host's output sink; pulls in number formatting).
pub fn register_print_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    scalar::register_print(registry)
}

/// `tfrt.call`, `tfrt.if`, `tfrt.cond`, `tfrt.case`, `tfrt.while`, `tfrt.once`,
/// `tfrt.repeat.i32`.
pub fn register_control_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    control::register(registry)
}

/// `tfrt.parallel_for.i32` and `tfrt.parallel_call.i32`: blocks of a range as work-queue
/// tasks.
pub fn register_parallel_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    parallel::register(registry)
}
