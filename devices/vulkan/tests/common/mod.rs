//! Test fixtures: a host with the basic, tensor and `vk.*` kernels, programs compiled from
//! text, and the rule for machines without Vulkan (skip with a message, unless
//! `HOSTRT_REQUIRE_VULKAN=1`, which CI sets where lavapipe is installed).
#![allow(dead_code)]

use std::sync::OnceLock;

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::executor::{Program, Results};
use hostrt_core::kernel::KernelEntry;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{Allocator, HostContext, KernelRegistry, RcAsyncValue, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};
use hostrt_vulkan::kernels::register_vulkan_kernels;

/// Whether a Vulkan device is here; `false` prints why the test is skipped.
pub fn vulkan() -> bool {
    match hostrt_vulkan::shared() {
        Ok(d) => {
            eprintln!("vulkan device: {}", d.name());
            true
        }
        Err(e) if std::env::var("HOSTRT_REQUIRE_VULKAN").is_ok_and(|v| v == "1") => {
            panic!("HOSTRT_REQUIRE_VULKAN=1 but there is no Vulkan device: {e}")
        }
        Err(e) => {
            eprintln!("SKIP: {e} (install mesa-vulkan-drivers for lavapipe)");
            false
        }
    }
}

pub fn arena() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| leaked_arena(256 << 20).unwrap().1)
}

/// The kernels of the tests, with `extra` added.
pub fn registry(extra: &[KernelEntry]) -> KernelRegistry<1024> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    register_tensor_kernels(&mut r).unwrap();
    register_vulkan_kernels(&mut r).unwrap();
    r.add_entries(extra).unwrap();
    r
}

/// Compiles `text` and runs its function `name` with `args` on a single-threaded host.
pub fn run(text: &str, name: &str, args: &[RcAsyncValue], extra: &[KernelEntry]) -> Results {
    let bef = AlignedBytes::new(&hostrt_compiler::compile("vk.mlir", text, Default::default()).unwrap());
    let registry = registry(extra);
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(arena(), &queue);
    let program = Program::load(bef.as_bytes(), &registry, arena()).unwrap();
    program.call(&host, name, args).unwrap()
}

/// The digits program with `@classify_vk`: `@classify`'s weights, run with `vk.*` kernels.
pub fn digits_program() -> String {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/app-c/digits.mlir"))
            .unwrap();
    let consts: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("%w") || l.trim_start().starts_with("%b"))
        .collect();
    assert_eq!(consts.len(), 4, "w1, b1, w2, b2");
    let ty = |a: &str, b: &str| format!("({a}) -> {b}");
    let (t, v) = ("!tfrt_tensor.tensor", "!vk.tensor");
    let up = |name: &str| format!("  %d{name} = \"vk.to_device\"(%{name}) : {}\n", ty(t, v));
    let vv = ty(&format!("{v}, {v}"), v);
    let mut f = String::from(
        "func.func @classify_vk(%x: !tfrt_tensor.tensor) -> (!tfrt_tensor.tensor, !tfrt_tensor.tensor) {\n",
    );
    for c in &consts {
        f += c;
        f += "\n";
    }
    for n in ["x", "w1", "b1", "w2", "b2"] {
        f += &up(n);
    }
    f += &format!("  %h0 = \"vk.matmul.f32\"(%dx, %dw1) : {vv}\n");
    f += &format!("  %h1 = \"vk.bias_add.f32\"(%h0, %db1) : {vv}\n");
    f += &format!("  %h = \"vk.relu.f32\"(%h1) : {}\n", ty(v, v));
    f += &format!("  %l0 = \"vk.matmul.f32\"(%h, %dw2) : {vv}\n");
    f += &format!("  %l = \"vk.bias_add.f32\"(%l0, %db2) : {vv}\n");
    f += &format!("  %c = \"vk.argmax.f32\"(%l) : {}\n", ty(v, v));
    f += &format!("  %classes = \"vk.to_host\"(%c) : {}\n", ty(v, t));
    f += &format!("  %logits = \"vk.to_host\"(%l) : {}\n", ty(v, t));
    f += "  tfrt.return %classes, %logits : !tfrt_tensor.tensor, !tfrt_tensor.tensor\n}\n";
    format!("{text}\n{f}")
}

/// "vulkan (<device name>)", leaked once for benchmark labels.
pub fn device_label() -> &'static str {
    static L: OnceLock<String> = OnceLock::new();
    L.get_or_init(|| {
        format!("vulkan ({})", hostrt_vulkan::shared().map(|d| d.name().to_string()).unwrap_or_default())
    })
}
