//! Load + verify a generated BEF file with 100k kernels, against a plain `memchr` pass over
//! the same bytes (the cheapest thing a loader could do with them).
//!
//! `cargo bench -p hostrt-core --bench bef_load`

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hostrt_compiler::ast::{Attr, Func, Loc, Module, NamedAttr, Op, Region, ResultGroup, Type, ValueRef};
use hostrt_compiler::bef::write;
use hostrt_core::KernelRegistry;
use hostrt_core::kernel::KernelFrame;
use hostrt_std::AlignedBytes;

const KERNELS: usize = 100_000;

fn v(name: String) -> ValueRef {
    ValueRef { name, index: None, loc: Loc::Unknown }
}

/// `%v0 = constant 1; %vN = add %v(N-1), %v0` ... 100k kernels, each with a location.
fn program() -> Module {
    let i32t = Type("i32".into());
    let mut ops = Vec::with_capacity(KERNELS + 1);
    for k in 0..KERNELS {
        let (name, operands, attrs) = if k == 0 {
            (
                "tfrt.constant.i32",
                vec![],
                vec![NamedAttr { name: "value".into(), value: Attr::Int { value: 1, ty: i32t.clone() } }],
            )
        } else {
            ("tfrt.add.i32", vec![v(format!("v{}", k - 1)), v("v0".into())], vec![])
        };
        ops.push(Op {
            name: name.into(),
            results: vec![ResultGroup { name: format!("v{k}"), count: 1 }],
            operands,
            operand_types: vec![],
            result_types: vec![i32t.clone()],
            attrs,
            regions: vec![],
            loc: Loc::FileLineCol { file: "gen.mlir".into(), line: k as u32 + 2, col: 8 },
        });
    }
    ops.push(Op {
        name: "tfrt.return".into(),
        results: vec![],
        operands: vec![v(format!("v{}", KERNELS - 1))],
        operand_types: vec![],
        result_types: vec![],
        attrs: vec![],
        regions: vec![],
        loc: Loc::Unknown,
    });
    let body = Region { args: vec![], ops };
    let main = Func {
        name: "main".into(),
        args: vec![],
        results: vec![i32t],
        attrs: vec![],
        body: Some(body),
        loc: Loc::Unknown,
    };
    Module { attrs: vec![], funcs: vec![main] }
}

fn nop(_: &KernelFrame<'_>) {}

fn bench(c: &mut Criterion) {
    let bef = AlignedBytes::new(&write(&program(), None).expect("compiles"));
    let bytes = bef.as_bytes();
    let mut registry: KernelRegistry = KernelRegistry::new();
    registry.add_kernel("tfrt.constant.i32", nop).unwrap();
    registry.add_kernel("tfrt.add.i32", nop).unwrap();
    let (_, scratch) = hostrt_std::leaked_arena(1 << 20).unwrap();

    let mut g = c.benchmark_group(format!("load_100k_kernels ({} bytes)", bytes.len()));
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("baseline memchr pass (count zero bytes)", |b| {
        b.iter(|| black_box(memchr::memchr_iter(0, black_box(bytes)).count()))
    });
    g.bench_function("hostrt BefFile::load (verify + resolve kernels)", |b| {
        b.iter(|| {
            let f = hostrt_core::bef::BefFile::load(black_box(bytes), &registry, scratch).expect("valid");
            black_box(f.num_functions())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
