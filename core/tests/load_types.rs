//! Types checked at load (docs/execution.md): which kernels the load proves from the
//! registered signatures, the load error for an argument of a known wrong type, and that
//! kernels whose argument types are unknown at load still check them per call.

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::bef::BefErrorKind;
use hostrt_core::executor::Program;
use hostrt_core::kernel::{Argument, KernelEntry, Output};
use hostrt_core::{
    AsyncValueRef, Diagnostic, ExecutionContext, HostContext, KernelRegistry, SingleThreadedWorkQueue,
};
use hostrt_std::AlignedBytes;

use hostrt_testing::scratch as alloc;

/// Typed, with an untyped result: `Output::set` may set any value.
fn copy_out(x: Argument<i32>, out: Output<i32>) {
    out.emplace(*x);
}

/// Typed, with an untyped result: a typed reference may stand for an indirect value.
#[allow(clippy::result_large_err)] // a kernel's error, by value as kernels return it
fn copy_async(x: Argument<i32>, ctx: &ExecutionContext) -> Result<AsyncValueRef<i32>, Diagnostic> {
    AsyncValueRef::available(ctx.allocator(), *x).map_err(Into::into)
}

const COPY_OUT: KernelEntry = hostrt_core::kernel_entry!("test.copy_out", copy_out);

fn registry() -> KernelRegistry<256> {
    let mut r = KernelRegistry::new();
    register_basic_kernels(&mut r).unwrap();
    r.add_entries(&[COPY_OUT]).unwrap();
    r.add_kernel("test.copy_async", hostrt_core::kernel!(copy_async)).unwrap();
    // The same function without a signature.
    r.add_kernel("test.copy_out.unsigned", hostrt_core::kernel!(copy_out)).unwrap();
    r
}

fn bef(text: &str) -> AlignedBytes {
    AlignedBytes::new(
        &hostrt_compiler::compile("t.mlir", text, Default::default()).unwrap_or_else(|e| panic!("{e}")),
    )
}

/// Whether the load proved every use of each kernel of `names`.
fn proved(text: &str, names: &[&str]) -> Vec<bool> {
    let bef = bef(text);
    let reg = registry();
    let program = Program::load(bef.as_bytes(), &reg, alloc()).unwrap_or_else(|e| panic!("{e}"));
    names.iter().map(|n| program.types_proved(n)).collect()
}

#[test]
fn chains_of_typed_kernels_are_proved() {
    let text = r#"
        func.func @main() -> i32 {
          %a = tfrt.constant.i32 1
          %b = tfrt.add.i32 %a, %a
          %c = tfrt.mul.i32 %b, %a
          %d = "test.copy_out"(%c) : (i32) -> i32
          tfrt.return %d : i32
        }"#;
    let names = ["tfrt.constant.i32", "tfrt.add.i32", "tfrt.mul.i32", "test.copy_out", "tfrt.minus.i32"];
    assert_eq!(proved(text, &names), [true, true, true, true, false]);
}

#[test]
fn arguments_of_unknown_type_are_not_proved() {
    // One kernel per case: a function's argument, a result set through `Output`, a result
    // of an async value return, a result of a kernel registered without its signature. One
    // unproved use is enough: the kernel is then checked per call everywhere.
    let text = r#"
        func.func @f(%x: i32) -> i32 {
          %a = tfrt.constant.i32 1
          %b = tfrt.add.i32 %a, %a
          %b2 = tfrt.add.i32 %x, %a
          %c = "test.copy_out"(%a) : (i32) -> i32
          %d = tfrt.mul.i32 %c, %a
          %e = "test.copy_async"(%a) : (i32) -> i32
          %g = "tfrt.minus.i32"(%e, %a) : (i32, i32) -> i32
          %h = "test.copy_out.unsigned"(%a) : (i32) -> i32
          %i = "tfrt.equal.i32"(%h, %a) : (i32, i32) -> i1
          %j = "tfrt.lessequal.i32"(%a, %a) : (i32, i32) -> i1
          tfrt.return %d : i32
        }"#;
    let names = [
        "tfrt.add.i32",
        "tfrt.mul.i32",
        "tfrt.minus.i32",
        "tfrt.equal.i32",
        "tfrt.lessequal.i32",
        "test.copy_out",
        "test.copy_async",
        "test.copy_out.unsigned",
    ];
    assert_eq!(proved(text, &names), [false, false, false, false, true, true, false, false]);
}

#[test]
fn results_of_calls_are_not_proved_and_returned_registers_are() {
    // `%b` is a result of `@main` and an operand: its users get the result's placeholder,
    // which forwards to the proved value. `@g`'s result comes through `tfrt.call`.
    let text = r#"
        func.func @g(%x: i32) -> i32 {
          tfrt.return %x : i32
        }
        func.func @main() -> (i32, i32, i32) {
          %a = tfrt.constant.i32 2
          %b = tfrt.add.i32 %a, %a
          %c = "tfrt.minus.i32"(%b, %a) : (i32, i32) -> i32
          %r = tfrt.call @g(%a) : (i32) -> i32
          %s = tfrt.mul.i32 %r, %a
          tfrt.return %b, %c, %s : i32, i32, i32
        }"#;
    assert_eq!(proved(text, &["tfrt.add.i32", "tfrt.minus.i32", "tfrt.mul.i32"]), [true, true, false]);
    let bef = bef(text);
    let reg = registry();
    let program = Program::load(bef.as_bytes(), &reg, alloc()).unwrap_or_else(|e| panic!("{e}"));
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc(), &queue);
    let results = program.call(&host, "main", &[]).unwrap();
    assert_eq!(
        (results.get::<i32>(0), results.get::<i32>(1), results.get::<i32>(2)),
        (Ok(&4), Ok(&2), Ok(&4))
    );
}

#[allow(clippy::result_large_err)] // kernels' errors, by value as kernels return them
fn fallible_then_more() -> (Result<i32, Diagnostic>, i32) {
    (Ok(1), 2)
}

#[allow(clippy::result_large_err)]
fn fallible_pair() -> Result<(i32, i64), Diagnostic> {
    Ok((1, 2))
}

#[test]
fn a_fallible_result_followed_by_another_has_no_signature() {
    // On an error the first element leaves the result cursor where it was, so the second
    // element's value would land in the first's slot: no result types can be promised.
    let entries = [
        hostrt_core::kernel_entry!("t.fallible_then_more", fallible_then_more),
        hostrt_core::kernel_entry!("t.fallible_pair", fallible_pair),
    ];
    assert!(entries[0].signature().is_none());
    let pair = entries[1].signature().unwrap();
    assert_eq!(pair.result_type(0), Some(hostrt_core::kernel::TypeKey::of::<i32>()));
    assert_eq!(pair.result_type(1), Some(hostrt_core::kernel::TypeKey::of::<i64>()));
}

#[test]
fn an_argument_of_a_known_wrong_type_fails_the_load() {
    // (The compiler checks the types of the operation's own form; the generic form states
    // them, and only the load knows what the kernel takes.)
    let text = "func.func @main() -> i32 {\n  %x = tfrt.constant.f32 1.0\n  %y = \"tfrt.add.i32\"(%x, %x) : (f32, f32) -> i32\n  tfrt.return %y : i32\n}\n";
    let bef = bef(text);
    let reg = registry();
    let alloc = alloc();
    let e = Program::load(bef.as_bytes(), &reg, alloc).unwrap_err();
    assert_eq!(e.kind, BefErrorKind::ArgumentType);
    let message = e.to_string();
    assert!(
        message.starts_with("t.mlir:3:8: tfrt.add.i32 argument 0 is f32, not i32 (BEF offset "),
        "{message}"
    );
}

#[test]
fn unproved_arguments_are_still_checked_per_call() {
    // `@f`'s argument has no type known at load; calling it with an f32 is the kernel's
    // error at run time, in release builds too.
    let text = r#"
        func.func @f(%x: i32) -> i32 {
          %y = tfrt.add.i32 %x, %x
          tfrt.return %y : i32
        }
        func.func @main() -> i32 {
          %x = tfrt.constant.f32 1.0
          %y = tfrt.call @f(%x) : (f32) -> i32
          tfrt.return %y : i32
        }"#;
    let bef = bef(text);
    let reg = registry();
    let alloc = alloc();
    let program = Program::load(bef.as_bytes(), &reg, alloc).unwrap_or_else(|e| panic!("{e}"));
    let queue = SingleThreadedWorkQueue::new();
    let errors = std::sync::Mutex::new(Vec::new());
    let sink = |d: &Diagnostic| errors.lock().unwrap().push(d.to_string());
    let host = HostContext::new(alloc, &queue).with_diagnostics(&sink);
    let results = program.call(&host, "main", &[]).unwrap();
    assert!(results.get::<i32>(0).is_err());
    let errors = errors.lock().unwrap();
    assert!(errors.iter().any(|e| e.contains("argument 0 has type f32, expected i32")), "{errors:?}");
}
