//! The basic `tfrt.*` kernels (docs/execution.md): constants, arithmetic, comparisons, chains,
//! prints, calls and control flow.
//!
//! Register a whole group with the `register_*` functions, or only the kernels a program
//! uses with [`KernelRegistry::add_entries`] and the per-kernel constants of [`integer`],
//! [`float`], [`print`], [`control`] and [`parallel`] (each module's `ALL` is its group):
//! the linker then drops every kernel the firmware does not name.

/// One public `KernelEntry` constant per strict kernel, plus `ALL`, the group's table
/// (starting with the constants named in the optional leading `[...]`, defined by hand).
macro_rules! entries {
    (group $group:ident; $($name:ident = $op:literal => $kind:ident($func:expr $(, $arg:ident)?)),* $(,)?) => {
        $(
            #[doc = concat!("`", $op, "`")]
            pub const $name: $crate::kernel::KernelEntry = entries!(@$kind $op, $func $(, $arg)?);
        )*
        /// The kernels of this table.
        pub const $group: &[$crate::kernel::KernelEntry] = &[$($name),*];
    };
    ($([$($extra:ident),*])? $($name:ident = $op:literal => $kind:ident($func:expr $(, $arg:ident)?)),* $(,)?) => {
        $(
            #[doc = concat!("`", $op, "`")]
            pub const $name: $crate::kernel::KernelEntry = entries!(@$kind $op, $func $(, $arg)?);
        )*
        /// Every kernel of this group.
        pub const ALL: &[$crate::kernel::KernelEntry] = &[$($($extra,)*)? $($name),*];
    };
    // A typed kernel (a Rust function of kernel parameters), with its signature.
    (@typed $op:literal, $func:expr) => {
        $crate::kernel_entry!($op, $func)
    };
    // A typed kernel whose author checked that it allocates nothing but its results (what
    // derived arena bounds rely on: docs/bef.md, "Arena sizes").
    (@results_only $op:literal, $func:expr) => {
        $crate::kernel_entry!($op, $func).allocating_only_results()
    };
    // A scalar kernel (plain values in and out), with its signature and its form on
    // register words (docs/execution.md, "Scalar registers").
    // Plain values in and out reach no allocator, so scalar kernels allocate only their
    // results.
    (@scalar $op:literal, $func:expr) => {
        $crate::scalar_kernel_entry!($op, $func).allocating_only_results()
    };
    // A kernel written against the frame itself: no signature, its arguments are checked
    // per call.
    (@raw $op:literal, $func:expr) => {
        $crate::kernel::KernelEntry::strict($op, $func)
    };
    // A control kernel written against the frame, declaring how it calls the functions it
    // names (what derived arena bounds follow: docs/bef.md, "Arena sizes").
    (@calls $op:literal, $func:expr, $calls:ident) => {
        $crate::kernel::KernelEntry::strict($op, $func).calling($crate::kernel::Calls::$calls)
    };
}

pub mod control;
pub mod float;
pub mod integer;
pub mod parallel;
pub mod print;
#[cfg(feature = "defmt")]
pub mod print_defmt;

use crate::kernel::{KernelRegistry, RegistryError};

/// Register every basic kernel in `registry`.
pub fn register_basic_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    for group in [integer::ALL, float::ALL, print::ALL, control::ALL, parallel::ALL] {
        registry.add_entries(group)?;
    }
    Ok(())
}

/// Chains, integer and boolean constants, arithmetic and comparisons. Firmware registers
/// only the groups (or kernels) it uses: the linker then drops the rest (float formatting
/// alone is about 15 KB of flash).
pub fn register_integer_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(integer::ALL)
}

/// `f32`/`f64` constants and arithmetic.
pub fn register_float_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    registry.add_entries(float::ALL)
}

/// `tfrt.print.*` (through the host's output sink; pulls in number formatting).
pub fn register_print_kernels<const N: usize>(registry: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    registry.add_entries(print::ALL)
}

/// `tfrt.print.*` as defmt frames through the application's global logger (feature
/// `defmt`; instead of [`register_print_kernels`], not beside it: the names are the same).
#[cfg(feature = "defmt")]
pub fn register_defmt_print_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(print_defmt::ALL)
}

/// `tfrt.call`, `tfrt.if`, `tfrt.cond`, `tfrt.case`, `tfrt.while`, `tfrt.once`,
/// `tfrt.repeat.i32`.
pub fn register_control_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(control::ALL)
}

/// `tfrt.parallel_for.i32` and `tfrt.parallel_call.i32`: blocks of a range as work-queue
/// tasks.
pub fn register_parallel_kernels<const N: usize>(
    registry: &mut KernelRegistry<N>,
) -> Result<(), RegistryError> {
    registry.add_entries(parallel::ALL)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelLookup;

    #[test]
    fn groups_cover_every_basic_kernel_once_and_entries_register_alone() {
        let mut all: KernelRegistry<128> = KernelRegistry::new();
        register_basic_kernels(&mut all).unwrap();
        let groups = [integer::ALL, float::ALL, print::ALL, control::ALL, parallel::ALL];
        assert_eq!(all.len(), groups.iter().map(|g| g.len()).sum::<usize>(), "no name in two groups");
        assert!(all.lookup("tfrt.call").unwrap().is_non_strict());
        assert!(all.entries().iter().filter(|e| e.is_non_strict()).count() == 1, "only tfrt.call");

        let mut few: KernelRegistry<2> = KernelRegistry::new();
        few.add_entries(&[integer::ADD_I32, control::CALL]).unwrap();
        assert!(few.lookup("tfrt.add.i32").is_some() && few.lookup("tfrt.mul.i32").is_none());
        assert_eq!(few.add_entries(&[integer::MUL_I32]), Err(RegistryError::Full("tfrt.mul.i32")));
        let mut dup: KernelRegistry<4> = KernelRegistry::new();
        assert_eq!(
            dup.add_entries(&[integer::ADD_I32, integer::ADD_I32]),
            Err(RegistryError::Duplicate("tfrt.add.i32"))
        );
    }
}
