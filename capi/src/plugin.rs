//! Loading plugins: shared objects built against `include/` that leave the `TF_*` symbols
//! undefined (as TensorFlow plugins do against `libtensorflow_framework`), resolved against
//! the process, which must export them ([`EXPORTS`]; the `hostrt` executable links with
//! `-rdynamic` for this). [`load_plugin`] opens one with `libloading`, calls its
//! `TF_InitKernel` and the seed's `InitPlugin` (whichever it defines), and reports every
//! registration that failed meanwhile. What registered stays registered; the library stays
//! loaded for the life of the process, since its kernels may run at any time.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One exported function: its C name and address.
#[derive(Debug)]
pub struct Export(pub &'static str, pub *const ());

// SAFETY: the addresses are of functions, which are immutable and callable from any thread.
unsafe impl Sync for Export {}

/// Every function the headers declare. Referencing this table (as the `hostrt` executable
/// does) keeps them all linked, so that plugins loaded later find them.
pub static EXPORTS: &[Export] = &[
    Export("TF_DataTypeSize", crate::datatype::TF_DataTypeSize as *const ()),
    Export("TF_NewStatus", crate::status::TF_NewStatus as *const ()),
    Export("TF_DeleteStatus", crate::status::TF_DeleteStatus as *const ()),
    Export("TF_SetStatus", crate::status::TF_SetStatus as *const ()),
    Export("TF_SetPayload", crate::status::TF_SetPayload as *const ()),
    Export("TF_SetStatusFromIOError", crate::status::TF_SetStatusFromIOError as *const ()),
    Export("TF_GetCode", crate::status::TF_GetCode as *const ()),
    Export("TF_Message", crate::status::TF_Message as *const ()),
    Export("TF_NewTensor", crate::tensor::TF_NewTensor as *const ()),
    Export("TF_AllocateTensor", crate::tensor::TF_AllocateTensor as *const ()),
    Export("TF_TensorMaybeMove", crate::tensor::TF_TensorMaybeMove as *const ()),
    Export("TF_DeleteTensor", crate::tensor::TF_DeleteTensor as *const ()),
    Export("TF_TensorType", crate::tensor::TF_TensorType as *const ()),
    Export("TF_SetShape", crate::tensor::TF_SetShape as *const ()),
    Export("TF_TensorDefaultAlignment", crate::tensor::TF_TensorDefaultAlignment as *const ()),
    Export("TF_NumDims", crate::tensor::TF_NumDims as *const ()),
    Export("TF_Dim", crate::tensor::TF_Dim as *const ()),
    Export("TF_TensorByteSize", crate::tensor::TF_TensorByteSize as *const ()),
    Export("TF_TensorData", crate::tensor::TF_TensorData as *const ()),
    Export("TF_TensorElementCount", crate::tensor::TF_TensorElementCount as *const ()),
    Export("TF_TensorBitcastFrom", crate::tensor::TF_TensorBitcastFrom as *const ()),
    Export("TF_TensorIsAligned", crate::tensor::TF_TensorIsAligned as *const ()),
    Export("TF_NewBufferFromString", crate::c_api::TF_NewBufferFromString as *const ()),
    Export("TF_NewBuffer", crate::c_api::TF_NewBuffer as *const ()),
    Export("TF_DeleteBuffer", crate::c_api::TF_DeleteBuffer as *const ()),
    Export("TF_GetBuffer", crate::c_api::TF_GetBuffer as *const ()),
    Export("TF_NewOpDefinitionBuilder", crate::ops::TF_NewOpDefinitionBuilder as *const ()),
    Export("TF_RegisterOpDefinition", crate::ops::TF_RegisterOpDefinition as *const ()),
    Export("TF_DeleteOpDefinitionBuilder", crate::ops::TF_DeleteOpDefinitionBuilder as *const ()),
    Export("TF_OpDefinitionBuilderAddAttr", crate::ops::TF_OpDefinitionBuilderAddAttr as *const ()),
    Export("TF_OpDefinitionBuilderAddInput", crate::ops::TF_OpDefinitionBuilderAddInput as *const ()),
    Export("TF_OpDefinitionBuilderAddOutput", crate::ops::TF_OpDefinitionBuilderAddOutput as *const ()),
    Export(
        "TF_OpDefinitionBuilderSetIsCommutative",
        crate::ops::TF_OpDefinitionBuilderSetIsCommutative as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetIsAggregate",
        crate::ops::TF_OpDefinitionBuilderSetIsAggregate as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetIsStateful",
        crate::ops::TF_OpDefinitionBuilderSetIsStateful as *const (),
    ),
    Export(
        "TF_OpDefinitionBuilderSetAllowsUninitializedInput",
        crate::ops::TF_OpDefinitionBuilderSetAllowsUninitializedInput as *const (),
    ),
    Export("TF_OpDefinitionBuilderDeprecated", crate::ops::TF_OpDefinitionBuilderDeprecated as *const ()),
    Export(
        "TF_OpDefinitionBuilderSetShapeInferenceFunction",
        crate::ops::TF_OpDefinitionBuilderSetShapeInferenceFunction as *const (),
    ),
    Export("TF_ShapeInferenceContextNumInputs", crate::ops::TF_ShapeInferenceContextNumInputs as *const ()),
    Export("TF_NewShapeHandle", crate::ops::TF_NewShapeHandle as *const ()),
    Export("TF_ShapeInferenceContextGetInput", crate::ops::TF_ShapeInferenceContextGetInput as *const ()),
    Export("TF_ShapeInferenceContextSetOutput", crate::ops::TF_ShapeInferenceContextSetOutput as *const ()),
    Export(
        "TF_ShapeInferenceContextVectorFromSize",
        crate::ops::TF_ShapeInferenceContextVectorFromSize as *const (),
    ),
    Export("TF_ShapeInferenceContextScalar", crate::ops::TF_ShapeInferenceContextScalar as *const ()),
    Export("TF_NewDimensionHandle", crate::ops::TF_NewDimensionHandle as *const ()),
    Export(
        "TF_ShapeInferenceContext_GetAttrType",
        crate::ops::TF_ShapeInferenceContext_GetAttrType as *const (),
    ),
    Export("TF_ShapeInferenceContextRank", crate::ops::TF_ShapeInferenceContextRank as *const ()),
    Export("TF_ShapeInferenceContextRankKnown", crate::ops::TF_ShapeInferenceContextRankKnown as *const ()),
    Export("TF_ShapeInferenceContextWithRank", crate::ops::TF_ShapeInferenceContextWithRank as *const ()),
    Export(
        "TF_ShapeInferenceContextWithRankAtLeast",
        crate::ops::TF_ShapeInferenceContextWithRankAtLeast as *const (),
    ),
    Export(
        "TF_ShapeInferenceContextWithRankAtMost",
        crate::ops::TF_ShapeInferenceContextWithRankAtMost as *const (),
    ),
    Export("TF_ShapeInferenceContextDim", crate::ops::TF_ShapeInferenceContextDim as *const ()),
    Export("TF_ShapeInferenceContextSubshape", crate::ops::TF_ShapeInferenceContextSubshape as *const ()),
    Export(
        "TF_ShapeInferenceContextSetUnknownShape",
        crate::ops::TF_ShapeInferenceContextSetUnknownShape as *const (),
    ),
    Export("TF_DimensionHandleValueKnown", crate::ops::TF_DimensionHandleValueKnown as *const ()),
    Export("TF_DimensionHandleValue", crate::ops::TF_DimensionHandleValue as *const ()),
    Export(
        "TF_ShapeInferenceContextConcatenateShapes",
        crate::ops::TF_ShapeInferenceContextConcatenateShapes as *const (),
    ),
    Export("TF_DeleteShapeHandle", crate::ops::TF_DeleteShapeHandle as *const ()),
    Export("TF_DeleteDimensionHandle", crate::ops::TF_DeleteDimensionHandle as *const ()),
    Export("TF_NewKernelBuilder", crate::kernels::TF_NewKernelBuilder as *const ()),
    Export("TF_KernelBuilder_TypeConstraint", crate::kernels::TF_KernelBuilder_TypeConstraint as *const ()),
    Export("TF_KernelBuilder_HostMemory", crate::kernels::TF_KernelBuilder_HostMemory as *const ()),
    Export("TF_KernelBuilder_Priority", crate::kernels::TF_KernelBuilder_Priority as *const ()),
    Export("TF_KernelBuilder_Label", crate::kernels::TF_KernelBuilder_Label as *const ()),
    Export("TF_RegisterKernelBuilder", crate::kernels::TF_RegisterKernelBuilder as *const ()),
    Export(
        "TF_RegisterKernelBuilderWithKernelDef",
        crate::kernels::TF_RegisterKernelBuilderWithKernelDef as *const (),
    ),
    Export("TF_DeleteKernelBuilder", crate::kernels::TF_DeleteKernelBuilder as *const ()),
    Export("TF_GetStream", crate::kernels::context::TF_GetStream as *const ()),
    Export("TF_NumInputs", crate::kernels::context::TF_NumInputs as *const ()),
    Export("TF_NumOutputs", crate::kernels::context::TF_NumOutputs as *const ()),
    Export("TF_GetInput", crate::kernels::context::TF_GetInput as *const ()),
    Export("TF_InputRange", crate::kernels::context::TF_InputRange as *const ()),
    Export("TF_SetOutput", crate::kernels::context::TF_SetOutput as *const ()),
    Export(
        "TF_OpKernelConstruction_Failure",
        crate::kernels::construction::TF_OpKernelConstruction_Failure as *const (),
    ),
    Export("TF_OpKernelContext_Failure", crate::kernels::context::TF_OpKernelContext_Failure as *const ()),
    Export("TF_ExpectedOutputDataType", crate::kernels::context::TF_ExpectedOutputDataType as *const ()),
    Export("TF_StepId", crate::kernels::context::TF_StepId as *const ()),
    Export("TF_GetMutableOutput", crate::kernels::context::TF_GetMutableOutput as *const ()),
    Export(
        "TF_GetSerializedFunctionDefLibrary",
        crate::kernels::context::TF_GetSerializedFunctionDefLibrary as *const (),
    ),
    Export("TF_GetSerializedConfigProto", crate::kernels::context::TF_GetSerializedConfigProto as *const ()),
    Export("TF_IsHostMemoryInput", crate::kernels::context::TF_IsHostMemoryInput as *const ()),
    Export("TF_IsHostMemoryOutput", crate::kernels::context::TF_IsHostMemoryOutput as *const ()),
    Export("TF_GetFrameId", crate::kernels::context::TF_GetFrameId as *const ()),
    Export("TF_GetIterId", crate::kernels::context::TF_GetIterId as *const ()),
    Export("TF_GetGraphDefVersion", crate::kernels::context::TF_GetGraphDefVersion as *const ()),
    Export(
        "TF_GetResourceMgrDefaultContainerName",
        crate::kernels::context::TF_GetResourceMgrDefaultContainerName as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFunction",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrFunction as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetNodeDef",
        crate::kernels::construction::TF_OpKernelConstruction_GetNodeDef as *const (),
    ),
    Export("TF_GetOpKernelName", crate::kernels::context::TF_GetOpKernelName as *const ()),
    Export(
        "TF_GetOpKernelRequestedInput",
        crate::kernels::context::TF_GetOpKernelRequestedInput as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrSize",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrSize as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrType",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrType as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt32",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrInt32 as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt64",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrInt64 as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFloat",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrFloat as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrBool",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrBool as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrString",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrString as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTensor",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrTensor as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTypeList",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrTypeList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt32List",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrInt32List as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrInt64List",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrInt64List as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrFloatList",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrFloatList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrBoolList",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrBoolList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrStringList",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrStringList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetAttrTensorList",
        crate::kernels::construction::TF_OpKernelConstruction_GetAttrTensorList as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_HasAttr",
        crate::kernels::construction::TF_OpKernelConstruction_HasAttr as *const (),
    ),
    Export(
        "TF_OpKernelConstruction_GetName",
        crate::kernels::construction::TF_OpKernelConstruction_GetName as *const (),
    ),
    Export("TF_AllocateOutput", crate::kernels::context::TF_AllocateOutput as *const ()),
    Export(
        "TF_ForwardInputOrAllocateOutput",
        crate::kernels::context::TF_ForwardInputOrAllocateOutput as *const (),
    ),
    Export("TF_AllocateTemp", crate::kernels::context::TF_AllocateTemp as *const ()),
    Export("TF_ThreadPool_Schedule", crate::kernels::threads::TF_ThreadPool_Schedule as *const ()),
    Export(
        "TF_ThreadPool_ScheduleWithHint",
        crate::kernels::threads::TF_ThreadPool_ScheduleWithHint as *const (),
    ),
    Export("TF_ThreadPool_ParallelFor", crate::kernels::threads::TF_ThreadPool_ParallelFor as *const ()),
    Export(
        "TF_ThreadPool_ParallelForWithWorkerId",
        crate::kernels::threads::TF_ThreadPool_ParallelForWithWorkerId as *const (),
    ),
    Export(
        "TF_ThreadPool_ScheduleFuncWrap",
        crate::kernels::threads::TF_ThreadPool_ScheduleFuncWrap as *const (),
    ),
    Export(
        "TF_OpKernelContext_UpdateStatus",
        crate::kernels::threads::TF_OpKernelContext_UpdateStatus as *const (),
    ),
];

/// The registrations of the plugin a thread is loading: how many succeeded, which failed.
#[derive(Default)]
struct Registrations {
    succeeded: usize,
    failed: Vec<String>,
}

thread_local! {
    /// What the plugin this thread is loading registered, if it is loading one.
    static LOADING: RefCell<Option<Registrations>> = const { RefCell::new(None) };
}

/// Notes the outcome of an op or kernel registration for the plugin being loaded (none:
/// nothing to do).
pub(crate) fn note(result: Result<(), &str>) {
    LOADING.with(|l| {
        if let Some(r) = l.borrow_mut().as_mut() {
            match result {
                Ok(()) => r.succeeded += 1,
                Err(m) => r.failed.push(m.to_owned()),
            }
        }
    });
}

/// What a loaded plugin defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// Which entry points it has: `TF_InitKernel`, `InitPlugin`.
    pub entry_points: Vec<&'static str>,
}

/// Loads the plugin at `path` and runs its registration: `TF_InitKernel` and the seed's
/// `InitPlugin`, whichever it defines, or the static initializers that TensorFlow's own
/// kernel libraries register from (run when the library is opened). Errors: the library
/// cannot be opened; it has no entry point and registered nothing while opening; a
/// registration failed (each failure is listed; the registrations that succeeded stay).
///
/// Loading a library that was loaded before (the same file, by its canonical path) returns
/// what the first load found and registers nothing again.
pub fn load_plugin(path: &Path) -> Result<Loaded, String> {
    static LOADED: Mutex<Vec<(PathBuf, Loaded)>> = Mutex::new(Vec::new());
    // A bare file name is the file in the current folder, as a user means it (the dynamic
    // loader would search only the library path for it).
    let here;
    let path = if path.parent() == Some(Path::new("")) && path.is_file() {
        here = Path::new(".").join(path);
        &here
    } else {
        path
    };
    let canonical = std::fs::canonicalize(path).ok();
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, l)) = loaded.iter().find(|(p, _)| Some(p) == canonical.as_ref()) {
        return Ok(l.clone());
    }
    let result = load_once(path);
    if let (Ok(l), Some(p)) = (&result, canonical) {
        loaded.push((p, l.clone()));
    }
    result
}

/// Opens the library and runs its registration, once.
fn load_once(path: &Path) -> Result<Loaded, String> {
    let name = path.display();
    LOADING.with(|l| *l.borrow_mut() = Some(Registrations::default()));
    let done = || LOADING.with(|l| l.borrow_mut().take()).unwrap_or_default();
    // SAFETY: opening runs the library's initialisers; a plugin is trusted code the user
    // asked to load, as in TensorFlow.
    let lib = match unsafe { libloading::Library::new(path) } {
        Ok(lib) => lib,
        Err(e) => {
            done();
            return Err(format!("plugin {name}: cannot load: {e}"));
        }
    };
    let statically =
        LOADING.with(|l| l.borrow().as_ref().is_some_and(|r| r.succeeded > 0 || !r.failed.is_empty()));
    let mut entry_points = Vec::new();
    if statically {
        entry_points.push("static initializers");
    }
    let mut inits: Vec<(&str, unsafe extern "C-unwind" fn())> = Vec::new();
    for symbol in ["TF_InitKernel", "InitPlugin"] {
        // SAFETY: both entry points are `void f(void)` by the C API's contract.
        if let Ok(f) = unsafe { lib.get::<unsafe extern "C-unwind" fn()>(symbol.as_bytes()) } {
            entry_points.push(symbol);
            inits.push((symbol, *f));
        }
    }
    if entry_points.is_empty() {
        done();
        return Err(format!(
            "plugin {name}: not a plugin: it defines neither TF_InitKernel nor InitPlugin and registered nothing when loaded"
        ));
    }
    // The kernels' code must outlive every program: the library is never unloaded.
    std::mem::forget(lib);
    let mut panicked = Vec::new();
    for (symbol, init) in inits {
        // SAFETY: the plugin's registration function, called once, on this thread. What it
        // registered before a panic stays registered, complete.
        if std::panic::catch_unwind(|| unsafe { init() }).is_err() {
            panicked.push(format!("{symbol} panicked"));
        }
    }
    let mut failed = done().failed;
    failed.extend(panicked);
    if failed.is_empty() {
        Ok(Loaded { entry_points })
    } else {
        Err(format!("plugin {name}: {}", failed.join("; ")))
    }
}
