//! Op and kernel registration through the C API with arbitrary specs: each input is lines
//! `a SPEC` (attr), `i SPEC` (input), `o SPEC` (output) for a fresh op. Never a panic; a
//! refused definition leaves the registry without the op; an accepted one runs its shape
//! inference, gets a kernel, and a kernel site is made and run on tensors of the op's input
//! types (or refused with an error, for attrs without defaults).
#![no_main]

use std::ffi::{CString, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use hostrt_c::tf::kernels::context::{TF_AllocateOutput, TF_ExpectedOutputDataType, TF_NumOutputs};
use hostrt_c::tf::kernels::{KernelSite, TF_NewKernelBuilder, TF_OpKernelContext, TF_RegisterKernelBuilder};
use hostrt_c::tf::op_def::ShapeValue;
use hostrt_c::tf::ops::*;
use hostrt_c::tf::tf_status::{TF_OK, TF_Status};
use hostrt_c::tf::tf_tensor::{TF_AllocateTensor, TF_DeleteTensor};
use libfuzzer_sys::fuzz_target;

static N: AtomicUsize = AtomicUsize::new(0);

/// Allocates every output as a [1] tensor of its expected type.
unsafe extern "C-unwind" fn fill_outputs(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context during compute.
    unsafe {
        for i in 0..TF_NumOutputs(ctx) {
            let mut s = TF_Status::default();
            let t =
                TF_AllocateOutput(ctx, i, TF_ExpectedOutputDataType(ctx, i), [1i64].as_ptr(), 1, 0, &mut s);
            TF_DeleteTensor(t);
        }
    }
}

fn c(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let name = format!("Fuzz{}", N.fetch_add(1, Ordering::Relaxed));
    let mut status = TF_Status::default();
    // SAFETY: a fresh builder consumed by registration; C strings that outlive the calls.
    unsafe {
        let b = TF_NewOpDefinitionBuilder(c(&name).as_ptr());
        for line in text.lines().take(24) {
            let Some(kind) = line.chars().next() else { continue };
            let spec = c(line[kind.len_utf8()..].trim_start());
            match kind {
                'a' => TF_OpDefinitionBuilderAddAttr(b, spec.as_ptr()),
                'i' => TF_OpDefinitionBuilderAddInput(b, spec.as_ptr()),
                'o' => TF_OpDefinitionBuilderAddOutput(b, spec.as_ptr()),
                _ => {}
            }
        }
        TF_OpDefinitionBuilderSetShapeInferenceFunction(b, Some(TF_ShapeInferenceContextSetUnknownShape));
        TF_RegisterOpDefinition(b, &mut status);
    }
    let Some(op) = lookup(&name) else {
        assert_ne!(status.code(), TF_OK, "an op that did not register reports why");
        return;
    };
    assert_eq!(status.code(), TF_OK);
    let _ = infer_shapes(&name, vec![ShapeValue::Unknown; op.def.inputs.len()], &[], op.def.outputs.len());
    // SAFETY: a fresh builder consumed by registration.
    unsafe {
        let k = TF_NewKernelBuilder(c(&name).as_ptr(), c"CPU".as_ptr(), None, Some(fill_outputs), None);
        TF_RegisterKernelBuilder(c"FuzzOp".as_ptr(), k, &mut status);
    }
    let Ok(site) = KernelSite::new(&name, "fuzz", None, vec![], None) else { return };
    let inputs: Vec<_> = site
        .input_types()
        .iter()
        .take(8)
        .filter_map(|t| {
            // SAFETY: a [1] tensor of each input type; the handle is freed after copying.
            unsafe {
                let h = TF_AllocateTensor(*t, [1i64].as_ptr(), 1, 16);
                let out = h.as_ref().cloned();
                TF_DeleteTensor(h);
                out
            }
        })
        .collect();
    // One arena for the whole run (allocator slots are few); every run gives back what it took.
    static ARENA: std::sync::OnceLock<hostrt_core::Allocator> = std::sync::OnceLock::new();
    let alloc = *ARENA.get_or_init(|| hostrt_std::leaked_arena(1 << 16).unwrap().1);
    let _ = site.compute(inputs, alloc, 0);
});
