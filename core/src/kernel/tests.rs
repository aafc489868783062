extern crate std;

use core::cell::Cell;
use std::string::ToString;
use std::vec::Vec;

use super::*;
use crate::async_value::{AsyncValueRef, RcAsyncValue};
use crate::chain::Chain;
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::host_context::ExecutionContext;
use crate::testing::TestHost;

// The seed's examples, written as plain functions.
fn tfrt_add_i32(a: Argument<i32>, b: Argument<i32>) -> i32 {
    *a + *b
}

fn tfrt_add_i32_async(a: Argument<i32>, b: Argument<i32>, out: Output<i32>, ctx: &ExecutionContext) {
    let Some(result) = out.allocate() else { return };
    let (x, y) = (*a, *b);
    if let Err(e) = ctx.host().enqueue_work(move || result.emplace(x + y)) {
        // No memory for the task: compute inline instead.
        (e.into_inner())();
    }
}

fn tfrt_add_i32_sync_async(
    a: Argument<i32>,
    b: Argument<i32>,
    sync_result: Output<i32>,
    async_result: Output<i32>,
    ctx: &ExecutionContext,
) {
    sync_result.emplace(*a + *b);
    let Some(result) = async_result.allocate() else { return };
    let (x, y) = (*a, *b);
    let _ = ctx.host().enqueue_work(move || result.emplace(x + y));
}

fn print_i32(x: Argument<i32>, chain: Argument<Chain>, out: Output<Chain>) {
    let _ = *x;
    out.set(chain.value().clone());
}

/// Run `k` on a frame over `args`/`attrs` with `n` result slots; return the results.
fn call(
    exec: &ExecutionContext<'_>,
    k: KernelFn,
    args: &[RcAsyncValue],
    attrs: &[AttrRef<'_>],
    n: usize,
) -> Vec<Option<RcAsyncValue>> {
    let slots: Vec<Cell<Option<RcAsyncValue>>> = (0..n).map(|_| Cell::new(None)).collect();
    let frame = KernelFrame::new(exec, args, attrs, &slots).with_location(LocRef {
        file: "test.mlir",
        line: 4,
        column: 7,
    });
    k(&frame);
    slots.into_iter().map(Cell::into_inner).collect()
}

fn ints(exec: &ExecutionContext<'_>, xs: &[i32]) -> Vec<RcAsyncValue> {
    xs.iter().map(|x| exec.host().make_available(*x).unwrap().into_rc()).collect()
}

#[test]
fn sync_kernel_returns_value() {
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(tfrt_add_i32), &ints(exec, &[1, 2]), &[], 1);
        assert_eq!(r[0].as_ref().unwrap().get::<i32>(), Some(&3));
    });
}

#[test]
fn async_kernel_completes_on_the_work_queue() {
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(tfrt_add_i32_async), &ints(exec, &[40, 2]), &[], 1);
        let v = r[0].clone().unwrap();
        assert!(!v.is_available(), "async result is returned unavailable");
        exec.host().await_values(core::slice::from_ref(&v)).unwrap();
        assert_eq!(v.get::<i32>(), Some(&42));
    });
}

#[test]
fn partly_async_kernel() {
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(tfrt_add_i32_sync_async), &ints(exec, &[3, 4]), &[], 2);
        let (s, a) = (r[0].clone().unwrap(), r[1].clone().unwrap());
        assert_eq!(s.get::<i32>(), Some(&7));
        assert!(!a.is_available());
        exec.host().quiesce();
        assert_eq!(a.get::<i32>(), Some(&7));
    });
}

#[test]
fn argument_forwarded_as_result_shares_the_value() {
    let h = TestHost::new(8192);
    h.with(|exec| {
        let chain = exec.host().make_available(Chain).unwrap().into_rc();
        let args = [ints(exec, &[5]).remove(0), chain.clone()];
        let r = call(exec, crate::kernel!(print_i32), &args, &[], 1);
        assert!(r[0].as_ref().unwrap().ptr_eq(&chain));
    });
}

#[test]
fn attributes_are_read_in_place() {
    fn k(
        scale: Attribute<i32>,
        dims: ArrayAttribute<i64>,
        name: StringAttribute,
        flag: Attribute<bool>,
        x: Argument<f32>,
    ) -> (f32, i64, u64, bool) {
        (*x * scale.get() as f32, dims.iter().product(), name.len() as u64, *flag)
    }
    #[repr(align(8))]
    struct Aligned([u8; 24]);
    let scale = 3i32.to_le_bytes();
    let mut dims = Aligned([0; 24]);
    for (i, d) in [2i64, 3, 4].iter().enumerate() {
        dims.0[i * 8..i * 8 + 8].copy_from_slice(&d.to_le_bytes());
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let attrs = [
            AttrRef::scalar::<i32>(&scale).unwrap(),
            AttrRef::array::<i64>(&dims.0).unwrap(),
            AttrRef::string("conv"),
            AttrRef::scalar::<bool>(&[1]).unwrap(),
        ];
        let x = exec.host().make_available(1.5f32).unwrap().into_rc();
        let r = call(exec, crate::kernel!(k), &[x], &attrs, 4);
        assert_eq!(r[0].as_ref().unwrap().get::<f32>(), Some(&4.5));
        assert_eq!(r[1].as_ref().unwrap().get::<i64>(), Some(&24));
        assert_eq!(r[2].as_ref().unwrap().get::<u64>(), Some(&4));
        assert_eq!(r[3].as_ref().unwrap().get::<bool>(), Some(&true));
    });
}

#[test]
fn attribute_views_reject_bad_bytes() {
    assert!(AttrRef::scalar::<bool>(&[2]).is_none(), "bool must be 0 or 1");
    assert!(AttrRef::scalar::<i32>(&[0; 3]).is_none(), "short scalar");
    #[repr(align(8))]
    struct A([u8; 16]);
    let a = A([0; 16]);
    assert!(AttrRef::array::<i64>(&a.0[1..9]).is_none(), "misaligned array");
    assert!(AttrRef::array::<i32>(&a.0[..6]).is_none(), "partial element");
    let s = AttrRef::string("x");
    assert_eq!(s.get::<i32>(), None);
    assert_eq!(s.get_array::<i32>(), None);
}

#[test]
fn wrong_attribute_kind_is_a_kernel_error() {
    fn k(_: Attribute<i64>) -> i32 {
        unreachable!("body must not run")
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(k), &[], &[AttrRef::string("no")], 1);
        let e = *r[0].as_ref().unwrap().get_error().unwrap();
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert!(e.message().contains("attribute 0"), "{e}");
        assert_eq!(e.location.unwrap().to_string(), "test.mlir:4:7");
    });
}

#[test]
fn type_mismatch_and_missing_arguments_are_errors_not_panics() {
    fn k(_: Argument<i64>, _: Argument<i64>) -> i64 {
        unreachable!()
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(k), &ints(exec, &[1, 2]), &[], 1);
        let e = r[0].as_ref().unwrap().get_error().unwrap();
        assert!(e.message().contains("has type i32, expected i64"), "{e}");
        let r = call(exec, crate::kernel!(k), &[], &[], 1);
        assert!(r[0].as_ref().unwrap().get_error().unwrap().message().contains("expects argument 0"));
        // Too few result slots for the return value: reported, not a panic.
        let r = call(exec, crate::kernel!(tfrt_add_i32), &ints(exec, &[1, 2]), &[], 0);
        assert!(r.is_empty());
    });
}

#[test]
fn result_error_and_error_handler_poison_every_result() {
    fn fails(x: Argument<i32>) -> Result<(i32, i32), Diagnostic> {
        if *x < 0 { Err(Diagnostic::internal("negative")) } else { Ok((*x, *x)) }
    }
    fn handler(a: Output<i32>, b: Output<i32>, h: KernelErrorHandler) {
        let pending = a.allocate().unwrap();
        let _ = b;
        h.report_error(Diagnostic::internal("handled"));
        assert!(pending.is_error(), "results the kernel left unavailable are set too");
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(fails), &ints(exec, &[-1]), &[], 2);
        for v in &r {
            assert_eq!(v.as_ref().unwrap().get_error().unwrap().message(), "negative");
        }
        assert!(r[0].as_ref().unwrap().ptr_eq(r[1].as_ref().unwrap()), "one shared error value");
        let r = call(exec, crate::kernel!(fails), &ints(exec, &[2]), &[], 2);
        assert_eq!(r[1].as_ref().unwrap().get::<i32>(), Some(&2));
        let r = call(exec, crate::kernel!(handler), &[], &[], 2);
        assert!(r.iter().all(|v| v.as_ref().unwrap().get_error().unwrap().message() == "handled"));
    });
}

#[test]
fn remaining_arguments_and_results() {
    fn sum_to_all(first: Argument<i32>, rest: RemainingArguments, out: RemainingResults) {
        let total: i32 = *first + rest.values().iter().map(|v| *v.get::<i32>().unwrap()).sum::<i32>();
        for i in 0..out.len() {
            out.emplace(i, total);
        }
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(sum_to_all), &ints(exec, &[1, 2, 3, 4]), &[], 3);
        assert!(r.iter().all(|v| v.as_ref().unwrap().get::<i32>() == Some(&10)));
    });
}

#[test]
fn returning_async_values_and_custom_payloads() {
    #[derive(Debug, PartialEq)]
    struct Tensor(Vec<f32>);
    fn make(ctx: &ExecutionContext) -> (AsyncValueRef<u8>, Value<Tensor>) {
        (ctx.host().make_available(9u8).unwrap(), Value(Tensor(std::vec![1.0, 2.0])))
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(make), &[], &[], 2);
        assert_eq!(r[0].as_ref().unwrap().get::<u8>(), Some(&9));
        assert_eq!(r[1].as_ref().unwrap().get::<Tensor>(), Some(&Tensor(std::vec![1.0, 2.0])));
    });
}

#[test]
fn exhausted_arena_gives_the_static_out_of_memory_result() {
    // Two allocations for the arguments, then nothing: neither the result nor an error value
    // fits, so the slot gets the static out-of-memory error (never left empty, which would
    // leave the kernel's users waiting) and nothing panics.
    let h = TestHost::with_arena(crate::testing::TestArena::failing_after(2));
    h.with(|exec| {
        let args = ints(exec, &[1, 2]);
        let oom = RcAsyncValue::out_of_memory();
        let r = call(exec, crate::kernel!(tfrt_add_i32), &args, &[], 1);
        assert!(r[0].as_ref().is_some_and(|v| v.ptr_eq(&oom)), "{:?}", r[0]);
        let r = call(exec, crate::kernel!(tfrt_add_i32_async), &args, &[], 1);
        assert!(r[0].as_ref().is_some_and(|v| v.ptr_eq(&oom)), "{:?}", r[0]);
    });
}

#[test]
fn registry_registers_resolves_and_refuses() {
    let mut reg: KernelRegistry<3> = KernelRegistry::new();
    reg.add_kernel("tfrt.add.i32", crate::kernel!(tfrt_add_i32)).unwrap();
    reg.add_non_strict_kernel("tfrt.call", crate::kernel!(tfrt_add_i32)).unwrap();
    assert_eq!(
        reg.add_kernel("tfrt.add.i32", crate::kernel!(tfrt_add_i32)),
        Err(RegistryError::Duplicate("tfrt.add.i32"))
    );
    reg.add_kernel("a.first", crate::kernel!(tfrt_add_i32)).unwrap();
    assert_eq!(reg.add_kernel("z.full", crate::kernel!(tfrt_add_i32)), Err(RegistryError::Full("z.full")));
    assert_eq!(reg.len(), 3);
    assert!(reg.lookup("tfrt.call").unwrap().is_non_strict());
    assert!(!reg.lookup("tfrt.add.i32").unwrap().is_non_strict());
    assert!(reg.lookup("tfrt.missing").is_none());
    let names: Vec<_> = reg.entries().iter().map(|e| e.name).collect();
    assert_eq!(names, ["a.first", "tfrt.add.i32", "tfrt.call"]);
    assert_eq!(RegistryError::Full("x").to_string(), "kernel registry is full (registering 'x')");
    // Any registration order leaves the entries sorted and every name found.
    let all = ["c", "a", "e", "b", "d", "f"];
    for rot in 0..all.len() {
        let mut reg: KernelRegistry<6> = KernelRegistry::new();
        for i in 0..all.len() {
            let name = all[(i * 5 + rot) % all.len()];
            reg.add_kernel(name, crate::kernel!(tfrt_add_i32)).unwrap();
        }
        let names: Vec<_> = reg.entries().iter().map(|e| e.name).collect();
        assert_eq!(names, ["a", "b", "c", "d", "e", "f"]);
        assert!(all.iter().all(|n| reg.lookup(n).is_some()));
    }
}

#[test]
fn cancellation_is_visible_to_kernels() {
    fn k(ctx: &ExecutionContext) -> bool {
        ctx.request().is_cancelled()
    }
    let h = TestHost::new(8192);
    h.with(|exec| {
        let r = call(exec, crate::kernel!(k), &[], &[], 1);
        assert_eq!(r[0].as_ref().unwrap().get::<bool>(), Some(&false));
        assert!(exec.request().cancel(exec.allocator()).unwrap());
        assert!(!exec.request().cancel(exec.allocator()).unwrap(), "first cancellation wins");
        let c = exec.request().cancel_value().unwrap();
        assert_eq!(c.get_error().unwrap().code, ErrorCode::Cancelled);
        let r = call(exec, crate::kernel!(k), &[], &[], 1);
        assert_eq!(r[0].as_ref().unwrap().get::<bool>(), Some(&true));
        assert_eq!(exec.host().work_queue().name(), "s");
    });
}

#[test]
fn attribute_kinds_read_as_type_names_in_diagnostics() {
    use crate::kernel::attribute::{AttrKind, ScalarKind};
    let shown = |k: AttrKind| k.to_string();
    assert_eq!(shown(AttrKind::I32), "i32");
    assert_eq!(shown(AttrKind::Bool), "i1");
    assert_eq!(shown(AttrKind::Array(ScalarKind::F32)), "array of f32");
    assert_eq!(shown(AttrKind::Dict), "dictionary");
    assert_eq!(ScalarKind::I64.to_string(), "i64");
}

/// The `Detached` contract (kernel/detach.rs): work a kernel hands to the queue keeps using
/// the context after the kernel call and its frame are gone, and it is sound as long as the
/// starter quiesces before the context goes away. Run under Miri by CI, which checks that
/// every use through the handle stays within the borrowed objects' lives.
#[test]
fn detached_work_uses_the_context_after_the_kernel_returned() {
    fn later(frame: &KernelFrame<'_>) {
        let Ok(out) = frame.exec_ctx().host().make_unconstructed::<i32>() else { return };
        frame.set_result(0, out.clone().into_rc());
        let d = Detached::of(frame);
        let task = move || {
            // Runs from `quiesce`, long after `later` returned and its frame was dropped.
            let again = Detached::of(&KernelFrame::new(d.exec(), &[], &[], &[]));
            again.host().print(format_args!("late {}", d.location().map_or(0, |l| l.line)));
            out.emplace(if d.exec().request().is_cancelled() { -1 } else { 42 });
        };
        if let Err(oom) = frame.exec_ctx().host().enqueue_work(task) {
            (oom.into_inner())();
        }
    }
    let h = TestHost::new(8192);
    let printed = std::sync::Mutex::new(std::string::String::new());
    let sink = |a: core::fmt::Arguments<'_>| printed.lock().unwrap().push_str(&a.to_string());
    let host = crate::HostContext::new(h.arena.alloc, &h.queue).with_output(&sink);
    let request = crate::RequestContext::new();
    let exec = ExecutionContext::new(&host, &request);
    let r = call(&exec, later, &[], &[], 1);
    let v = r[0].clone().unwrap();
    assert!(!v.is_available(), "completed by the task, not by the kernel");
    host.await_values(core::slice::from_ref(&v)).unwrap();
    host.quiesce();
    assert_eq!(v.get::<i32>(), Some(&42));
    assert_eq!(*printed.lock().unwrap(), "late 4");
}

#[test]
fn dense_attributes_are_validated_where_they_are_read() {
    use crate::tensor::DType;
    // rank 1, dim 2, then the data.
    let payload = |data: &[u8]| -> Vec<u8> {
        let mut p = Vec::from(1u64.to_le_bytes());
        p.extend(2u64.to_le_bytes());
        p.extend(data);
        p
    };
    let ok = payload(&[1, 0]);
    let dense = AttrRef::dense(DType::Bool, &ok).get_dense().expect("valid");
    assert_eq!((dense.dtype, dense.shape.dims(), dense.data), (DType::Bool, &[2i64][..], &[1u8, 0][..]));
    let not_bool = payload(&[1, 2]);
    assert!(AttrRef::dense(DType::Bool, &not_bool).get_dense().is_none(), "bool bytes are 0 or 1");
    assert!(AttrRef::dense(DType::I8, &not_bool).get_dense().is_some());
    assert!(AttrRef::dense(DType::I8, &payload(&[1])).get_dense().is_none(), "length");
    assert!(AttrRef::dense(DType::I8, &ok[..8]).get_dense().is_none(), "truncated dims");
    assert!(AttrRef::raw(AttrKind::Unit, &[]).unwrap().get_dense().is_none(), "not dense");
}

/// `get_dense_into` accepts exactly what `get_dense` accepts at the rank asked for.
#[test]
fn dense_of_a_known_rank_agrees_with_get_dense() {
    use crate::tensor::DType;
    let payload = |dims: &[i64], data_len: usize| -> Vec<u8> {
        let mut p = Vec::from((dims.len() as u64).to_le_bytes());
        dims.iter().for_each(|d| p.extend(d.to_le_bytes()));
        p.extend(core::iter::repeat_n(1u8, data_len));
        p
    };
    let cases: [(&[i64], usize); 9] = [
        (&[], 4),
        (&[3], 12),
        (&[2, 3], 24),
        (&[2, 3], 23),
        (&[2, -3], 0),
        (&[i64::MAX, 2], 0),
        (&[1 << 40, 1 << 40], 0),
        (&[0, 5], 0),
        (&[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 4),
    ];
    for (dims, len) in cases {
        let bytes = payload(dims, len);
        let attr = AttrRef::dense(DType::I32, &bytes);
        let want = attr.get_dense().map(|d| {
            let dims: Vec<usize> = d.shape.dims().iter().map(|&v| v as usize).collect();
            (dims, d.data)
        });
        for rank in 0..=3 {
            let mut got = vec![0usize; rank];
            let found = attr.get_dense_into(&mut got).map(|(dtype, data)| (dtype, got.clone(), data));
            let expected =
                want.clone().filter(|(d, _)| d.len() == rank).map(|(d, data)| (DType::I32, d, data));
            assert_eq!(found, expected, "dims {dims:?}, {len} bytes, rank {rank}");
        }
    }
    // Misaligned data, bools and a kind that is not dense.
    // The payload one byte past an 8-byte boundary (a `Vec<u8>`'s own alignment is 1, which
    // Miri takes literally), so its data, 16 bytes on, is not 4-aligned.
    let mut words = [0u64; 4];
    // SAFETY: the 32 bytes of `words`, which `store` borrows exclusively; any byte is a `u8`.
    let store = unsafe { core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), 32) };
    store[1..21].copy_from_slice(&payload(&[1], 4));
    let shifted = &store[..21];
    let misaligned = AttrRef::dense(DType::I32, &shifted[1..]);
    assert_eq!(misaligned.get_dense_into(&mut [0]), None);
    assert!(AttrRef::dense(DType::I8, &shifted[1..]).get_dense_into(&mut [0]).is_none(), "length");
    let mut bytes = payload(&[1], 1);
    bytes[16] = 2;
    assert_eq!(AttrRef::dense(DType::Bool, &bytes).get_dense_into(&mut [0]), None);
    assert!(AttrRef::dense(DType::I8, &bytes).get_dense_into(&mut [0]).is_some());
    assert_eq!(AttrRef::raw(AttrKind::Unit, &[]).unwrap().get_dense_into(&mut []), None);
}
