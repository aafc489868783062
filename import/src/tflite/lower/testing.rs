//! Test helpers of the lowering modules: the committed test models, a run of an imported
//! program on a model's golden input, and access to a program's kernels and attributes (to
//! check that kernels refuse edited attributes).

use std::sync::OnceLock;

use hostrt_compiler::ast::{Attr, Module, Op};
use hostrt_core::executor::Program;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, SystemAllocator};

use crate::npy;

/// The bytes of `tests/models/<file>`.
pub fn model(file: &str) -> Vec<u8> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/");
    std::fs::read(format!("{dir}{file}")).expect("model")
}

fn allocator() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    *A.get_or_init(|| Allocator::register(Box::leak(Box::new(SystemAllocator::new()))).expect("slot"))
}

/// Runs `@main` of `module` on model `name`'s golden input: its output bytes, or the error.
pub fn run(module: &Module, name: &str) -> Result<Vec<u8>, String> {
    let alloc = allocator();
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let bef =
        hostrt_compiler::bef::write_with(module, None, Default::default()).map_err(|e| e.to_string())?;
    let bytes = AlignedBytes::new(&bef);
    let program =
        Program::load(bytes.as_bytes(), crate::model::kernels(), &host).map_err(|e| e.to_string())?;
    let x = npy::read(&model(&format!("{name}.input.npy")))?;
    let arg = host.make_available(npy::to_tensor(alloc, &x)?).map_err(|e| e.to_string())?.into_rc();
    let results = program.call(&host, "main", &[arg]).map_err(|e| format!("{e:?}"))?;
    let out = results.get::<DenseHostTensor>(0).map_err(|e| e.to_string())?;
    Ok(npy::from_tensor(out)?.data)
}

/// The first kernel of `module` whose name starts with `prefix`.
pub fn kernel<'m>(module: &'m mut Module, prefix: &str) -> &'m mut Op {
    let ops = module.funcs.iter_mut().filter_map(|f| f.body.as_mut()).flat_map(|b| b.ops.iter_mut());
    ops.into_iter().find(|op| op.name.starts_with(prefix)).expect("the kernel")
}

/// Attribute `name` of `op`.
pub fn attr<'m>(op: &'m mut Op, name: &str) -> &'m mut Attr {
    &mut op.attrs.iter_mut().find(|a| a.name == name).expect("attribute").value
}

/// Element `i` of an integer array attribute.
pub fn int_at(a: &Attr, i: usize) -> i32 {
    match a {
        Attr::Array(v) => match v[i] {
            Attr::Int { value, .. } => value as i32,
            _ => panic!("not an int"),
        },
        _ => panic!("not an array"),
    }
}
