//! The basic `tfrt.*` kernels (SPEC §3.1–§3.4): constants, arithmetic, comparisons, chains,
//! prints, calls and control flow. Registered explicitly with [`register_basic_kernels`].

mod control;
mod scalar;

use crate::kernel::{KernelRegistry, RegistryError};

/// Register every basic kernel in `registry`.
pub fn register_basic_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    scalar::register(registry)?;
    control::register(registry)
}
