//! A hostrt plugin written in Rust against TensorFlow's C API alone: op `Affine`
//! (`y = a·x + b`, float attrs `a` and `b` with defaults) with a shape function, and its CPU
//! kernel. The `TF_*` functions are declared here, from `tensorflow/c/*.h`, and left
//! undefined: the process that loads the plugin (`hostrt run --plugin`) provides them.
//!
//! The functions hostrt calls back (shape function, create, compute, delete) are
//! `extern "C-unwind"`: the same calling convention as C's, but a panic in them reaches
//! hostrt, which reports it as an error of that kernel, instead of aborting the process.
//!
//! ```sh
//! cargo build --release --manifest-path examples/plugins/rust/Cargo.toml
//! hostrt run examples/plugins/rust/affine.mlir --plugin examples/plugins/rust/target/release/libaffine_plugin.so
//! ```

use std::ffi::{c_char, c_int, c_void};

/// The C API's opaque types.
#[repr(C)]
pub struct Opaque {
    _private: [u8; 0],
}

type Status = Opaque;
type Tensor = Opaque;
type Construction = Opaque;
type Context = Opaque;
type ShapeContext = Opaque;
type ShapeHandle = Opaque;
type OpBuilder = Opaque;
type KernelBuilder = Opaque;

const TF_OK: c_int = 0;
const TF_FLOAT: c_int = 1;
const TF_INVALID_ARGUMENT: c_int = 3;

unsafe extern "C" {
    fn TF_NewStatus() -> *mut Status;
    fn TF_DeleteStatus(s: *mut Status);
    fn TF_GetCode(s: *const Status) -> c_int;
    fn TF_SetStatus(s: *mut Status, code: c_int, msg: *const c_char);
    fn TF_NewOpDefinitionBuilder(name: *const c_char) -> *mut OpBuilder;
    fn TF_OpDefinitionBuilderAddAttr(b: *mut OpBuilder, spec: *const c_char);
    fn TF_OpDefinitionBuilderAddInput(b: *mut OpBuilder, spec: *const c_char);
    fn TF_OpDefinitionBuilderAddOutput(b: *mut OpBuilder, spec: *const c_char);
    fn TF_OpDefinitionBuilderSetShapeInferenceFunction(
        b: *mut OpBuilder,
        f: Option<unsafe extern "C-unwind" fn(*mut ShapeContext, *mut Status)>,
    );
    fn TF_RegisterOpDefinition(b: *mut OpBuilder, s: *mut Status);
    fn TF_NewShapeHandle() -> *mut ShapeHandle;
    fn TF_DeleteShapeHandle(h: *mut ShapeHandle);
    fn TF_ShapeInferenceContextGetInput(c: *mut ShapeContext, i: c_int, h: *mut ShapeHandle, s: *mut Status);
    fn TF_ShapeInferenceContextSetOutput(c: *mut ShapeContext, i: c_int, h: *mut ShapeHandle, s: *mut Status);
    fn TF_NewKernelBuilder(
        op: *const c_char,
        device: *const c_char,
        create: Option<unsafe extern "C-unwind" fn(*mut Construction) -> *mut c_void>,
        compute: Option<unsafe extern "C-unwind" fn(*mut c_void, *mut Context)>,
        delete: Option<unsafe extern "C-unwind" fn(*mut c_void)>,
    ) -> *mut KernelBuilder;
    fn TF_KernelBuilder_TypeConstraint(b: *mut KernelBuilder, attr: *const c_char, t: c_int, s: *mut Status);
    fn TF_RegisterKernelBuilder(name: *const c_char, b: *mut KernelBuilder, s: *mut Status);
    fn TF_OpKernelConstruction_GetAttrFloat(
        c: *mut Construction,
        name: *const c_char,
        v: *mut f32,
        s: *mut Status,
    );
    fn TF_OpKernelConstruction_Failure(c: *mut Construction, s: *mut Status);
    fn TF_OpKernelContext_Failure(c: *mut Context, s: *mut Status);
    fn TF_GetInput(c: *mut Context, i: c_int, t: *mut *mut Tensor, s: *mut Status);
    fn TF_AllocateOutput(
        c: *mut Context,
        i: c_int,
        dtype: c_int,
        dims: *const i64,
        num_dims: c_int,
        len: usize,
        s: *mut Status,
    ) -> *mut Tensor;
    fn TF_NumDims(t: *const Tensor) -> c_int;
    fn TF_Dim(t: *const Tensor, i: c_int) -> i64;
    fn TF_TensorElementCount(t: *const Tensor) -> i64;
    fn TF_TensorByteSize(t: *const Tensor) -> usize;
    fn TF_TensorData(t: *const Tensor) -> *mut c_void;
    fn TF_DeleteTensor(t: *mut Tensor);
}

/// The kernel's state: its attrs.
struct Affine {
    a: f32,
    b: f32,
}

unsafe extern "C-unwind" fn affine_shape(ctx: *mut ShapeContext, status: *mut Status) {
    // SAFETY: a live context and status for the call, by the C API's contract.
    unsafe {
        let shape = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, 0, shape, status);
        if TF_GetCode(status) == TF_OK {
            TF_ShapeInferenceContextSetOutput(ctx, 0, shape, status);
        }
        TF_DeleteShapeHandle(shape);
    }
}

unsafe extern "C-unwind" fn affine_create(ctx: *mut Construction) -> *mut c_void {
    let mut k = Affine { a: 1.0, b: 0.0 };
    // SAFETY: a live construction context; the status is freed here.
    unsafe {
        let status = TF_NewStatus();
        TF_OpKernelConstruction_GetAttrFloat(ctx, c"a".as_ptr(), &mut k.a, status);
        if TF_GetCode(status) == TF_OK {
            TF_OpKernelConstruction_GetAttrFloat(ctx, c"b".as_ptr(), &mut k.b, status);
        }
        if TF_GetCode(status) == TF_OK && !(k.a.is_finite() && k.b.is_finite()) {
            TF_SetStatus(status, TF_INVALID_ARGUMENT, c"Affine needs finite a and b".as_ptr());
        }
        if TF_GetCode(status) != TF_OK {
            TF_OpKernelConstruction_Failure(ctx, status);
        }
        TF_DeleteStatus(status);
    }
    Box::into_raw(Box::new(k)).cast()
}

unsafe extern "C-unwind" fn affine_compute(kernel: *mut c_void, ctx: *mut Context) {
    // SAFETY: the state `affine_create` made, a live context; handles freed once.
    unsafe {
        let k = &*kernel.cast::<Affine>();
        let status = TF_NewStatus();
        let mut x = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut x, status);
        let mut y = std::ptr::null_mut();
        if TF_GetCode(status) == TF_OK {
            let dims: Vec<i64> = (0..TF_NumDims(x)).map(|d| TF_Dim(x, d)).collect();
            y = TF_AllocateOutput(
                ctx,
                0,
                TF_FLOAT,
                dims.as_ptr(),
                dims.len() as c_int,
                TF_TensorByteSize(x),
                status,
            );
        }
        if TF_GetCode(status) == TF_OK {
            let n = TF_TensorElementCount(x) as usize;
            let input = std::slice::from_raw_parts(TF_TensorData(x).cast::<f32>(), n);
            let output = std::slice::from_raw_parts_mut(TF_TensorData(y).cast::<f32>(), n);
            for (o, i) in output.iter_mut().zip(input) {
                *o = k.a * i + k.b;
            }
        } else {
            TF_OpKernelContext_Failure(ctx, status);
        }
        TF_DeleteTensor(y);
        TF_DeleteTensor(x);
        TF_DeleteStatus(status);
    }
}

unsafe extern "C-unwind" fn affine_delete(kernel: *mut c_void) {
    // SAFETY: the Box `affine_create` made, freed once.
    drop(unsafe { Box::from_raw(kernel.cast::<Affine>()) });
}

/// Registers op `Affine` and its kernel when the plugin is loaded.
#[unsafe(no_mangle)]
pub extern "C" fn TF_InitKernel() {
    // SAFETY: C API calls with C literals; the builders are consumed by registration.
    unsafe {
        let status = TF_NewStatus();
        let op = TF_NewOpDefinitionBuilder(c"Affine".as_ptr());
        TF_OpDefinitionBuilderAddAttr(op, c"T: {float}".as_ptr());
        TF_OpDefinitionBuilderAddAttr(op, c"a: float = 1.0".as_ptr());
        TF_OpDefinitionBuilderAddAttr(op, c"b: float = 0.0".as_ptr());
        TF_OpDefinitionBuilderAddInput(op, c"x: T".as_ptr());
        TF_OpDefinitionBuilderAddOutput(op, c"y: T".as_ptr());
        TF_OpDefinitionBuilderSetShapeInferenceFunction(op, Some(affine_shape));
        TF_RegisterOpDefinition(op, status);
        let kernel = TF_NewKernelBuilder(
            c"Affine".as_ptr(),
            c"CPU".as_ptr(),
            Some(affine_create),
            Some(affine_compute),
            Some(affine_delete),
        );
        TF_KernelBuilder_TypeConstraint(kernel, c"T".as_ptr(), TF_FLOAT, status);
        TF_RegisterKernelBuilder(c"AffineOp".as_ptr(), kernel, status);
        TF_DeleteStatus(status);
    }
}
