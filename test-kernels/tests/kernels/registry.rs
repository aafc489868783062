//! Registration: names, strictness, no clashes with the basic kernels.

use hostrt_core::KernelRegistry;
use hostrt_core::kernel::{KernelLookup, RegistryError};
use hostrt_test_kernels::register_test_kernels;

use crate::harness::registry;

#[test]
fn every_family_is_registered_once() {
    let mut r: KernelRegistry<256> = KernelRegistry::new();
    register_test_kernels(&mut r).unwrap();
    let names: Vec<&str> = r.entries().iter().map(|e| e.name).collect();
    for name in [
        "tfrt_test.do.async",
        "tfrt_test.print_hello",
        "tfrt_test.async_add.i32",
        "tfrt_test.atomic.get.i32",
        "tfrt_test.blocking.usleep",
        "tfrt_test.benchmark",
        "tfrt_test.share_to_two",
        "tfrt_tutorial.print_coordinate",
        "vt.constant",
        "btf.read_dense_tensor.f32.4",
        "btf.read_dense_tensor.ui8.0",
    ] {
        assert!(names.contains(&name), "{name} missing");
    }
    assert!(
        names
            .iter()
            .all(|n| ["tfrt_test.", "tfrt_tutorial.", "vt.", "native_"].iter().any(|p| n.starts_with(p))
                || n.starts_with("btf."))
    );
    assert!(r.entries().iter().all(|e| !e.is_non_strict()), "every test kernel is strict");
    assert!(matches!(register_test_kernels(&mut r), Err(RegistryError::Duplicate(_))));
    let mut small: KernelRegistry<4> = KernelRegistry::new();
    assert!(matches!(register_test_kernels(&mut small), Err(RegistryError::Full(_))));
}

#[test]
fn test_kernels_join_the_basic_ones() {
    let r = registry();
    assert!(r.lookup("tfrt.add.i32").is_some());
    assert!(r.lookup("tfrt_test.fail").is_some());
}
