//! TFRT's bef_perf graphs (100 kernels each) and the test kernels they use, shared by the
//! executor benchmark and `examples/executor_profile.rs`.

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::kernel::{Argument, Output, RemainingArguments};
use hostrt_core::{ExecutionContext, KernelRegistry};

/// `tfrt_test.async_add.i32`: the sum, delivered by a work-queue task.
pub fn async_add(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(r) = out.allocate() else { return };
    let v = a.wrapping_add(*b);
    let _ = ctx.host().enqueue_work(move || r.emplace(v));
}

/// `tfrt_test.sum`: adds every argument.
pub fn sum(args: RemainingArguments) -> i32 {
    args.values().iter().map(|v| *v.get::<i32>().unwrap_or(&0)).sum()
}

/// The basic kernels and the two test kernels of the graphs.
pub fn registry() -> KernelRegistry<64> {
    let mut reg = KernelRegistry::new();
    register_basic_kernels(&mut reg).unwrap();
    // With their signatures, as `basic_kernels` registers its own (docs/execution.md,
    // "Types checked at load").
    reg.add_entries(&[
        hostrt_core::kernel_entry!("test.async_add.i32", async_add),
        hostrt_core::kernel_entry!("test.sum", sum),
    ])
    .unwrap();
    reg
}

/// The MLIR of graph `kind`: "serial" (a chain of 100 `tfrt.add.i32`), "parallel" (100
/// independent async adds) or "star" (100 async adds summed by one kernel).
pub fn program(kind: &str) -> String {
    let mut s =
        String::from("func.func @main() -> i32 {\n  %a = tfrt.constant.i32 1\n  %c0 = tfrt.constant.i32 0\n");
    match kind {
        "serial" => {
            for i in 0..100 {
                s += &format!("  %c{} = tfrt.add.i32 %c{i}, %a\n", i + 1);
            }
            s += "  tfrt.return %c100 : i32\n}\n";
        }
        "parallel" => {
            for i in 1..=100 {
                s += &format!("  %c{i} = \"test.async_add.i32\"(%a, %c0) : (i32, i32) -> i32\n");
            }
            s += "  tfrt.return %c100 : i32\n}\n";
        }
        _ => {
            let mut args = Vec::new();
            for i in 1..=100 {
                s += &format!("  %c{i} = \"test.async_add.i32\"(%a, %c0) : (i32, i32) -> i32\n");
                args.push(format!("%c{i}"));
            }
            let types = vec!["i32"; 100].join(", ");
            s += &format!(
                "  %s = \"test.sum\"({}) : ({types}) -> i32\n  tfrt.return %s : i32\n}}\n",
                args.join(", ")
            );
        }
    }
    s
}
