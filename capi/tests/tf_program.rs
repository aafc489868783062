//! `tf.*` kernels inside programs: a kernel written against the C API (here in Rust, through
//! the exported functions, as a plugin would call them) runs as `tf.<Op>` in an MLIR program,
//! created at load and deleted with the program; what does not fit is a load error or a
//! runtime error naming the kernel's location.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use hostrt_c::tf::kernels::construction::TF_OpKernelConstruction_GetAttrFloat;
use hostrt_c::tf::kernels::context::*;
use hostrt_c::tf::kernels::*;
use hostrt_c::tf::ops::*;
use hostrt_c::tf::std_ops::register_standard_ops;
use hostrt_c::tf::tf_program::TfProgram;
use hostrt_c::tf::tf_status::*;
use hostrt_c::tf::tf_tensor::*;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::driver::{DriverOptions, run_functions};
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_core::{ConcurrentWorkQueue, Diagnostic, HostContext, KernelRegistry, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, leaked_arena};

static CREATED: AtomicUsize = AtomicUsize::new(0);
static DELETED: AtomicUsize = AtomicUsize::new(0);

/// State: the slope for negative inputs (a leaky ReLU when attr `alpha` is given).
unsafe extern "C-unwind" fn relu_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let mut alpha = 0.0f32;
    let status = TF_NewStatus();
    // SAFETY: a live construction context and status.
    unsafe {
        TF_OpKernelConstruction_GetAttrFloat(ctx, c"alpha".as_ptr(), &mut alpha, status);
        TF_DeleteStatus(status);
    }
    CREATED.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(alpha)).cast()
}

unsafe extern "C-unwind" fn relu_compute(kernel: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: the state create made; a live context; tensors freed once.
    unsafe {
        let alpha = *kernel.cast::<f32>();
        let status = TF_NewStatus();
        let mut x = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut x, status);
        let dims: Vec<i64> = (0..TF_NumDims(x)).map(|d| TF_Dim(x, d)).collect();
        let out = TF_AllocateOutput(
            ctx,
            0,
            TF_TensorType(x),
            dims.as_ptr(),
            dims.len() as i32,
            TF_TensorByteSize(x),
            status,
        );
        if TF_GetCode(status) == TF_OK {
            let n = TF_TensorElementCount(x) as usize;
            let (src, dst) = (TF_TensorData(x).cast::<f32>(), TF_TensorData(out).cast::<f32>());
            for i in 0..n {
                let v = *src.add(i);
                *dst.add(i) = if v < 0.0 { alpha * v + 0.0 } else { v };
            }
            if alpha > 10.0 {
                TF_SetStatus(status, TF_INVALID_ARGUMENT, c"alpha is too large".as_ptr());
            }
        }
        TF_OpKernelContext_Failure(ctx, status);
        TF_DeleteTensor(out);
        TF_DeleteTensor(x);
        TF_DeleteStatus(status);
    }
}

unsafe extern "C-unwind" fn relu_delete(kernel: *mut c_void) {
    // SAFETY: the Box create made, freed once.
    drop(unsafe { Box::from_raw(kernel.cast::<f32>()) });
    DELETED.fetch_add(1, Ordering::SeqCst);
}

/// Registers the standard ops, a "LeakyRelu"-ish use of Relu's kernel, once.
fn setup() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        register_standard_ops();
        // SAFETY: a fresh builder consumed by registration; C literals.
        unsafe {
            let b = TF_NewKernelBuilder(
                c"Relu".as_ptr(),
                c"CPU".as_ptr(),
                Some(relu_create),
                Some(relu_compute),
                Some(relu_delete),
            );
            let s = TF_NewStatus();
            TF_KernelBuilder_TypeConstraint(b, c"T".as_ptr(), hostrt_c::tf::tf_datatype::TF_FLOAT, s);
            TF_RegisterKernelBuilder(c"ReluOp".as_ptr(), b, s);
            assert_eq!(TF_GetCode(s), TF_OK);
            // An op of the test's own, with a float attr and a default.
            let op = TF_NewOpDefinitionBuilder(c"LeakyReluTest".as_ptr());
            TF_OpDefinitionBuilderAddAttr(op, c"T: {float}".as_ptr());
            TF_OpDefinitionBuilderAddAttr(op, c"alpha: float = 0.2".as_ptr());
            TF_OpDefinitionBuilderAddInput(op, c"features: T".as_ptr());
            TF_OpDefinitionBuilderAddOutput(op, c"activations: T".as_ptr());
            TF_RegisterOpDefinition(op, s);
            assert_eq!(TF_GetCode(s), TF_OK);
            let b = TF_NewKernelBuilder(
                c"LeakyReluTest".as_ptr(),
                c"CPU".as_ptr(),
                Some(relu_create),
                Some(relu_compute),
                Some(relu_delete),
            );
            TF_RegisterKernelBuilder(c"LeakyReluTestOp".as_ptr(), b, s);
            assert_eq!(TF_GetCode(s), TF_OK);
            // An op whose shape function wants rank-2 inputs.
            let op = TF_NewOpDefinitionBuilder(c"RankTwoTest".as_ptr());
            TF_OpDefinitionBuilderAddAttr(op, c"T: {float}".as_ptr());
            TF_OpDefinitionBuilderAddAttr(op, c"alpha: float = 0.0".as_ptr());
            TF_OpDefinitionBuilderAddInput(op, c"features: T".as_ptr());
            TF_OpDefinitionBuilderAddOutput(op, c"activations: T".as_ptr());
            TF_OpDefinitionBuilderSetShapeInferenceFunction(op, Some(rank_two));
            TF_RegisterOpDefinition(op, s);
            let b = TF_NewKernelBuilder(
                c"RankTwoTest".as_ptr(),
                c"CPU".as_ptr(),
                Some(relu_create),
                Some(relu_compute),
                Some(relu_delete),
            );
            TF_RegisterKernelBuilder(c"RankTwoTestOp".as_ptr(), b, s);
            assert_eq!(TF_GetCode(s), TF_OK);
            TF_DeleteStatus(s);
        }
    });
}

/// A shape function through the C API: the input must be rank 2; the output has its shape.
unsafe extern "C-unwind" fn rank_two(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status) {
    // SAFETY: a live context and status during the call.
    unsafe {
        let h = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, 0, h, status);
        TF_ShapeInferenceContextWithRank(ctx, h, 2, h, status);
        if TF_GetCode(status) == TF_OK {
            TF_ShapeInferenceContextSetOutput(ctx, 0, h, status);
        }
        TF_DeleteShapeHandle(h);
    }
}

/// Loads and runs every function of `text`: the output lines (prints and runtime errors), or
/// the load error.
fn run(text: &str) -> Result<Vec<String>, String> {
    setup();
    let bef = AlignedBytes::new(
        &hostrt_compiler::compile("tf.mlir", text, Default::default()).map_err(|e| e.to_string())?,
    );
    let (_arena, alloc) = leaked_arena(1 << 20).unwrap();
    let mut reg = KernelRegistry::<1024>::new();
    register_basic_kernels(&mut reg).unwrap();
    register_tensor_kernels(&mut reg).unwrap();
    let queue = SingleThreadedWorkQueue::new();
    let out = Mutex::new(String::new());
    let sink = |a: std::fmt::Arguments<'_>| out.lock().unwrap().push_str(&a.to_string());
    let diag = |d: &Diagnostic| out.lock().unwrap().push_str(&format!("error: {d}\n"));
    let host = HostContext::new(alloc, &queue).with_output(&sink).with_diagnostics(&diag);
    let program = TfProgram::load(bef.as_bytes(), &reg, alloc).map_err(|e| e.to_string())?;
    run_functions(&program, &host, &DriverOptions::default(), &mut |a| sink(a)).unwrap();
    queue.quiesce();
    drop(program);
    let text = out.into_inner().unwrap();
    Ok(text.lines().filter(|l| !l.starts_with("--- ")).map(str::to_owned).collect())
}

const RELU: &str = r#"func.func @main() {
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[[-1.0, 2.0, -4.0]]> : tensor<1x3xf32>} : () -> !t.tensor
  %y = "tf.Relu"(%x) {T = f32} : (!t.tensor) -> !t.tensor
  %ch1 = tfrt_dht.print_tensor %y, %ch
  %z = "tf.Relu"(%x, %ch1) {T = f32, alpha = 0.5 : f32} : (!t.tensor, !tfrt.chain) -> !t.tensor
  %ch2 = tfrt_dht.print_tensor %z, %ch1
  tfrt.return
}
"#;

#[test]
fn a_c_api_kernel_runs_inside_a_program() {
    let (c0, d0) = (CREATED.load(Ordering::SeqCst), DELETED.load(Ordering::SeqCst));
    let out = run(&RELU.replace(", alpha = 0.5 : f32", "")).unwrap();
    assert_eq!(
        out,
        [
            "DenseHostTensor dtype = f32, shape = [1, 3], values = [0.000000e+00, 2.000000e+00, 0.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [1, 3], values = [0.000000e+00, 2.000000e+00, 0.000000e+00]",
        ]
    );
    assert!(CREATED.load(Ordering::SeqCst) >= c0 + 2, "created at load, once per site");
    assert!(DELETED.load(Ordering::SeqCst) >= d0 + 2, "deleted with the program");
}

#[test]
fn attrs_the_op_does_not_define_are_load_errors_with_the_location() {
    let e = run(RELU).unwrap_err();
    assert!(e.contains("op 'Relu' has no attr 'alpha'") && e.contains("tf.mlir:6:8"), "{e}");
    let plain = RELU.replace(", alpha = 0.5 : f32", "");
    let e = run(&plain.replacen("{T = f32}", "{T = i32}", 1)).unwrap_err();
    assert!(
        e.contains("no kernel registered for op 'Relu' with {T=int32}") && e.contains("tf.mlir:4:8"),
        "{e}"
    );
    let e = run(&plain.replacen("{T = f32}", "{}", 1)).unwrap_err();
    assert!(e.contains("op 'Relu' needs attr 'T', which has no default"), "{e}");
    let e = run(&plain.replacen("{T = f32}", "{T = f32, _kernel = [1 : i32, 2 : i32]}", 1)).unwrap_err();
    assert!(e.contains("attr '_kernel' (the kernel label) of op 'Relu' must be a string"), "{e}");
    let e = run(&plain.replacen("{T = f32}", "{T = f32, device = \"GPU\"}", 1)).unwrap_err();
    assert!(e.contains("on device 'GPU'"), "{e}");
}

#[test]
fn attrs_with_defaults_and_failing_computes() {
    let leaky =
        RELU.replace("tf.Relu", "tf.LeakyReluTest").replace("{T = f32}", "{T = f32, alpha = 0.25 : f32}");
    let leaky = leaky.replace(", alpha = 0.5 : f32", "");
    // Line 4 gives alpha; line 6 takes the op's default (0.2).
    assert_eq!(
        run(&leaky).unwrap(),
        [
            "DenseHostTensor dtype = f32, shape = [1, 3], values = [-2.500000e-01, 2.000000e+00, -1.000000e+00]",
            "DenseHostTensor dtype = f32, shape = [1, 3], values = [-2.000000e-01, 2.000000e+00, -8.000000e-01]",
        ]
    );
    // A failing compute is a runtime error at the kernel's location; the rest of the
    // program runs on (the print that needs the failed result does not print).
    let out = run(&leaky.replacen("alpha = 0.25 : f32", "alpha = 11.0 : f32", 1)).unwrap();
    assert!(
        out.iter().any(|l| l.starts_with("error: tf.mlir:4:8: kernel 'LeakyReluTest@tf.mlir:4:8' for op 'LeakyReluTest': alpha is too large")),
        "{out:?}"
    );
}

#[test]
fn shape_functions_run_at_load_on_the_shapes_known_there() {
    let ok = RELU.replace("tf.Relu", "tf.RankTwoTest").replace(", alpha = 0.5 : f32", "");
    assert_eq!(run(&ok).unwrap().len(), 2, "[1, 3] is rank 2, and so is the first site's output");
    let bad = ok
        .replace("dense<[[-1.0, 2.0, -4.0]]> : tensor<1x3xf32>", "dense<[-1.0, 2.0, -4.0]> : tensor<3xf32>");
    let e = run(&bad).unwrap_err();
    assert!(
        e.contains("shape function of 'RankTwoTest': Shape must be rank 2 but is rank 1")
            && e.contains("tf.mlir:4:8"),
        "{e}"
    );
}

/// State of `AddTensorAttrTest`: its `value` attr, and how many tensors `more` held.
struct AddState {
    value: *mut TF_Tensor,
    more: usize,
}

/// Reads the tensor attr `value` (and the list `more`) once, at create.
unsafe extern "C-unwind" fn add_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    use hostrt_c::tf::kernels::construction::*;
    // SAFETY: a live construction context; every tensor handed out is kept or freed once.
    unsafe {
        let s = TF_NewStatus();
        let mut value = std::ptr::null_mut();
        TF_OpKernelConstruction_GetAttrTensor(ctx, c"value".as_ptr(), &mut value, s);
        let (mut list_size, mut total) = (0, 0);
        TF_OpKernelConstruction_GetAttrSize(ctx, c"more".as_ptr(), &mut list_size, &mut total, s);
        assert_eq!((TF_GetCode(s), total), (TF_OK, -1), "a list of tensors has no total size");
        let mut more = vec![std::ptr::null_mut(); list_size as usize];
        TF_OpKernelConstruction_GetAttrTensorList(ctx, c"more".as_ptr(), more.as_mut_ptr(), list_size, s);
        assert_eq!(TF_GetCode(s), TF_OK);
        // A tensor attr read as something else is a type error, as in TensorFlow.
        let mut f = 0.0f32;
        TF_OpKernelConstruction_GetAttrFloat(ctx, c"value".as_ptr(), &mut f, s);
        assert_eq!(TF_GetCode(s), TF_INVALID_ARGUMENT);
        assert!(std::ffi::CStr::from_ptr(TF_Message(s)).to_str().unwrap().contains("'tensor'"));
        for t in &more {
            assert_eq!(TF_TensorType(*t), hostrt_c::tf::tf_datatype::TF_INT32);
            TF_DeleteTensor(*t);
        }
        TF_DeleteStatus(s);
        Box::into_raw(Box::new(AddState { value, more: more.len() })).cast()
    }
}

/// `y = x + value` elementwise (`value` must have x's element count), plus `len(more)`.
unsafe extern "C-unwind" fn add_compute(kernel: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: the state create made; a live context; tensors freed once.
    unsafe {
        let state = &*kernel.cast::<AddState>();
        let s = TF_NewStatus();
        let mut x = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut x, s);
        let n = TF_TensorElementCount(x);
        if TF_TensorElementCount(state.value) != n {
            TF_SetStatus(s, TF_INVALID_ARGUMENT, c"value and x differ in size".as_ptr());
            TF_OpKernelContext_Failure(ctx, s);
        } else {
            let dims: Vec<i64> = (0..TF_NumDims(x)).map(|d| TF_Dim(x, d)).collect();
            let out = TF_AllocateOutput(
                ctx,
                0,
                hostrt_c::tf::tf_datatype::TF_FLOAT,
                dims.as_ptr(),
                dims.len() as i32,
                TF_TensorByteSize(x),
                s,
            );
            let (a, b, y) = (
                TF_TensorData(x).cast::<f32>(),
                TF_TensorData(state.value).cast::<f32>(),
                TF_TensorData(out).cast::<f32>(),
            );
            for i in 0..n as usize {
                *y.add(i) = *a.add(i) + *b.add(i) + state.more as f32;
            }
            TF_DeleteTensor(out);
        }
        TF_DeleteTensor(x);
        TF_DeleteStatus(s);
    }
}

unsafe extern "C-unwind" fn add_delete(kernel: *mut c_void) {
    // SAFETY: the Box create made, freed once, with the tensor it holds.
    unsafe {
        let state = Box::from_raw(kernel.cast::<AddState>());
        TF_DeleteTensor(state.value);
    }
}

#[test]
fn tensor_attrs_are_dense_attributes() {
    setup();
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: fresh builders consumed by registration; C literals.
    ONCE.call_once(|| unsafe {
        let s = TF_NewStatus();
        let op = TF_NewOpDefinitionBuilder(c"AddTensorAttrTest".as_ptr());
        TF_OpDefinitionBuilderAddAttr(op, c"value: tensor".as_ptr());
        TF_OpDefinitionBuilderAddAttr(op, c"more: list(tensor) = []".as_ptr());
        TF_OpDefinitionBuilderAddInput(op, c"x: float".as_ptr());
        TF_OpDefinitionBuilderAddOutput(op, c"y: float".as_ptr());
        TF_RegisterOpDefinition(op, s);
        assert_eq!(TF_GetCode(s), TF_OK);
        let b = TF_NewKernelBuilder(
            c"AddTensorAttrTest".as_ptr(),
            c"CPU".as_ptr(),
            Some(add_create),
            Some(add_compute),
            Some(add_delete),
        );
        TF_RegisterKernelBuilder(c"AddTensorAttrTestOp".as_ptr(), b, s);
        assert_eq!(TF_GetCode(s), TF_OK);
        TF_DeleteStatus(s);
    });
    let program = |attrs: &str| {
        format!(
            r#"func.func @main() {{
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {{value = dense<[1.0, 2.0]> : tensor<2xf32>}} : () -> !t.tensor
  %y = "tf.AddTensorAttrTest"(%x) {{{attrs}}} : (!t.tensor) -> !t.tensor
  %ch1 = tfrt_dht.print_tensor %y, %ch
  tfrt.return
}}
"#
        )
    };
    let out = run(&program("value = dense<[10.0, 20.0]> : tensor<2xf32>")).unwrap();
    assert_eq!(out, ["DenseHostTensor dtype = f32, shape = [2], values = [1.100000e+01, 2.200000e+01]"]);
    let two = "value = dense<5.0> : tensor<1x2xf32>, more = [dense<1> : tensor<i32>, dense<[1, 2]> : tensor<2xi32>]";
    let out = run(&program(two)).unwrap();
    assert_eq!(out, ["DenseHostTensor dtype = f32, shape = [2], values = [8.000000e+00, 9.000000e+00]"]);
    let e = run(&program("value = 1.0 : f32")).unwrap_err();
    assert!(e.contains("value") && e.contains("tf.mlir:4:8"), "{e}");
    let out = run(&program("value = dense<1.0> : tensor<3xf32>")).unwrap();
    assert!(out.iter().any(|l| l.contains("value and x differ in size")), "{out:?}");
}
