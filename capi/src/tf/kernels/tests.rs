//! TensorFlow's `kernels_test.cc` assertions, with hostrt's kernel sites as the runner.

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::tf::kernels::construction::*;
use crate::tf::kernels::context::*;
use crate::tf::op_def::AttrValue as V;
use crate::tf::ops::{
    TF_NewOpDefinitionBuilder, TF_OpDefinitionBuilderAddAttr, TF_OpDefinitionBuilderAddInput,
    TF_OpDefinitionBuilderAddOutput, TF_RegisterOpDefinition,
};
use crate::tf::tf_datatype::*;
use crate::tf::tf_status::*;
use crate::tf::tf_tensor::{
    TF_AllocateTensor, TF_AllocatorAttributes, TF_DeleteTensor, TF_Dim, TF_NumDims, TF_TensorData,
    TF_TensorType,
};
use hostrt_core::HostAllocator;

/// Registers op `name` with these specs (C strings) through the builder.
fn op(name: &CStr, attrs: &[&CStr], inputs: &[&CStr], outputs: &[&CStr]) {
    // SAFETY: a fresh builder consumed by registration; C literals.
    unsafe {
        let b = TF_NewOpDefinitionBuilder(name.as_ptr());
        attrs.iter().for_each(|a| TF_OpDefinitionBuilderAddAttr(b, a.as_ptr()));
        inputs.iter().for_each(|a| TF_OpDefinitionBuilderAddInput(b, a.as_ptr()));
        outputs.iter().for_each(|a| TF_OpDefinitionBuilderAddOutput(b, a.as_ptr()));
        let mut s = TF_Status::default();
        TF_RegisterOpDefinition(b, &mut s);
        assert_eq!(s.code(), TF_OK, "{}", s.message());
    }
}

/// Registers a kernel; returns the registration status.
fn kernel(
    op: &CStr,
    device: &CStr,
    create: Option<CreateFn>,
    compute: ComputeFn,
    delete: Option<DeleteFn>,
    setup: impl FnOnce(*mut TF_KernelBuilder),
) -> (TF_Code, String) {
    // SAFETY: a fresh builder consumed by registration; C literals.
    unsafe {
        let b = TF_NewKernelBuilder(op.as_ptr(), device.as_ptr(), create, Some(compute), delete);
        setup(b);
        let mut s = TF_Status::default();
        TF_RegisterKernelBuilder(c"kernel".as_ptr(), b, &mut s);
        (s.code(), s.message().to_owned())
    }
}

fn f32_tensor(values: &[f32], dims: &[i64]) -> TF_Tensor {
    // SAFETY: dims and a buffer of the right size, written once.
    unsafe {
        let t = TF_AllocateTensor(TF_FLOAT, dims.as_ptr(), dims.len() as i32, values.len() * 4);
        std::ptr::copy_nonoverlapping(values.as_ptr(), TF_TensorData(t).cast::<f32>(), values.len());
        let out = (*t).clone();
        TF_DeleteTensor(t);
        out
    }
}

fn heap() -> Allocator {
    crate::tf::tf_tensor::heap().unwrap()
}

static CREATED: AtomicUsize = AtomicUsize::new(0);
static COMPUTED: AtomicUsize = AtomicUsize::new(0);
static DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C-unwind" fn my_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    // SAFETY: a live construction context during create.
    unsafe {
        let mut t = 0;
        let mut s = TF_Status::default();
        TF_OpKernelConstruction_GetAttrType(ctx, c"SomeDataTypeAttr".as_ptr(), &mut t, &mut s);
        assert_eq!((s.code(), t), (TF_OK, TF_FLOAT));
        let name = TF_OpKernelConstruction_GetName(ctx);
        assert_eq!(std::slice::from_raw_parts(name.data.cast::<u8>(), name.len), b"SomeNodeName");
    }
    CREATED.fetch_add(1, Ordering::SeqCst);
    Box::into_raw(Box::new(7u32)).cast()
}

unsafe extern "C-unwind" fn my_compute(kernel: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: the state create made, and a live context.
    unsafe {
        assert_eq!(*kernel.cast::<u32>(), 7);
        assert_eq!(TF_StepId(ctx), 43);
    }
    COMPUTED.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C-unwind" fn my_delete(kernel: *mut c_void) {
    // SAFETY: the Box create made, freed once.
    drop(unsafe { Box::from_raw(kernel.cast::<u32>()) });
    DELETED.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn a_kernel_is_created_once_computed_per_run_and_deleted_with_its_site() {
    op(c"FooOp", &[c"SomeDataTypeAttr: type"], &[c"input1: double", c"input2: uint8"], &[c"output1: uint8"]);
    assert_eq!(
        kernel(c"FooOp", c"FakeDeviceName1", Some(my_create), my_compute, Some(my_delete), |_| ()).0,
        TF_OK
    );
    assert_eq!(kernels_for("FooOp")[0].device, "FakeDeviceName1");
    let attrs = vec![("SomeDataTypeAttr".to_owned(), V::Type(TF_FLOAT))];
    let (c0, r0, d0) =
        (CREATED.load(Ordering::SeqCst), COMPUTED.load(Ordering::SeqCst), DELETED.load(Ordering::SeqCst));
    let site = KernelSite::new("FooOp", "SomeNodeName", None, attrs, None).unwrap();
    assert_eq!(CREATED.load(Ordering::SeqCst), c0 + 1);
    // SAFETY: dims for scalars.
    let (a, b) = unsafe {
        (
            TF_AllocateTensor(TF_DOUBLE, std::ptr::null(), 0, 8),
            TF_AllocateTensor(TF_UINT8, std::ptr::null(), 0, 1),
        )
    };
    // SAFETY: live tensors, cloned then freed.
    let inputs = unsafe { vec![(*a).clone(), (*b).clone()] };
    // SAFETY: freed once.
    unsafe { (TF_DeleteTensor(a), TF_DeleteTensor(b)) };
    for _ in 0..2 {
        let e = site.compute(inputs.clone(), heap(), 43).unwrap_err();
        assert_eq!(e, (TF_INTERNAL, "kernel 'SomeNodeName' for op 'FooOp': output 0 was not set".into()));
    }
    assert_eq!(COMPUTED.load(Ordering::SeqCst), r0 + 2);
    let e = site.compute(inputs[..1].to_vec(), heap(), 43).unwrap_err();
    assert_eq!(e.1, "op 'FooOp' takes 2 inputs, got 1");
    let e = site.compute(vec![inputs[1].clone(), inputs[0].clone()], heap(), 43).unwrap_err();
    assert_eq!(e.1, "input 0 of op 'FooOp' must be double, got uint8");
    assert_eq!(DELETED.load(Ordering::SeqCst), d0);
    drop(site);
    assert_eq!(DELETED.load(Ordering::SeqCst), d0 + 1);
    // The attr is required: it has no default and no input of type T to infer it from.
    let e = KernelSite::new("FooOp", "n", None, vec![], None).unwrap_err();
    assert_eq!(e.1, "op 'FooOp' needs attr 'SomeDataTypeAttr', which has no default");
}

/// A create function that checks one attr reader per op `TestKernelAttr*`.
unsafe extern "C-unwind" fn attr_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let mut s = TF_Status::default();
    let (mut list, mut total) = (0, 0);
    // SAFETY: a live construction context; buffers sized as the calls say.
    unsafe {
        TF_OpKernelConstruction_GetAttrSize(ctx, c"Attr".as_ptr(), &mut list, &mut total, &mut s);
        assert_eq!(s.code(), TF_OK, "{}", s.message());
        let name = TF_OpKernelConstruction_GetName(ctx);
        let name = std::str::from_utf8(std::slice::from_raw_parts(name.data.cast::<u8>(), name.len)).unwrap();
        match name {
            "String" => {
                assert_eq!((list, total), (-1, 5));
                let mut v = [0u8; 5];
                TF_OpKernelConstruction_GetAttrString(
                    ctx,
                    c"Attr".as_ptr(),
                    v.as_mut_ptr().cast(),
                    5,
                    &mut s,
                );
                assert_eq!(&v, b"bunny");
            }
            "StringList" => {
                assert_eq!((list, total), (3, 13));
                let (mut vals, mut lens, mut storage) = ([std::ptr::null_mut(); 3], [0usize; 3], [0u8; 13]);
                TF_OpKernelConstruction_GetAttrStringList(
                    ctx,
                    c"Attr".as_ptr(),
                    vals.as_mut_ptr(),
                    lens.as_mut_ptr(),
                    3,
                    storage.as_mut_ptr().cast(),
                    13,
                    &mut s,
                );
                assert_eq!(s.code(), TF_OK);
                let got: Vec<&[u8]> =
                    (0..3).map(|i| std::slice::from_raw_parts(vals[i].cast::<u8>(), lens[i])).collect();
                assert_eq!(got, [&b"bugs"[..], b"bunny", b"duck"]);
                TF_OpKernelConstruction_GetAttrStringList(
                    ctx,
                    c"Attr".as_ptr(),
                    vals.as_mut_ptr(),
                    lens.as_mut_ptr(),
                    3,
                    storage.as_mut_ptr().cast(),
                    12,
                    &mut s,
                );
                assert_eq!(s.code(), TF_INVALID_ARGUMENT, "storage one byte short");
                s.set(TF_OK, "");
            }
            "Int" => {
                assert_eq!((list, total), (-1, -1));
                let (mut v, mut v32) = (0i64, 0i32);
                TF_OpKernelConstruction_GetAttrInt64(ctx, c"Attr".as_ptr(), &mut v, &mut s);
                TF_OpKernelConstruction_GetAttrInt32(ctx, c"Attr".as_ptr(), &mut v32, &mut s);
                assert_eq!((v, v32), (1234, 1234));
                let mut f = 0.0f32;
                TF_OpKernelConstruction_GetAttrFloat(ctx, c"Attr".as_ptr(), &mut f, &mut s);
                assert_eq!(
                    (s.code(), s.message()),
                    (TF_INVALID_ARGUMENT, "Attr 'Attr' has value of type 'int' when 'float' expected")
                );
                s.set(TF_OK, "");
            }
            "IntList" => {
                assert_eq!((list, total), (4, -1));
                let mut v = [0i64; 4];
                TF_OpKernelConstruction_GetAttrInt64List(ctx, c"Attr".as_ptr(), v.as_mut_ptr(), 4, &mut s);
                assert_eq!(v, [1, 2, 3, 4]);
                let mut short = [0i32; 2];
                TF_OpKernelConstruction_GetAttrInt32List(
                    ctx,
                    c"Attr".as_ptr(),
                    short.as_mut_ptr(),
                    2,
                    &mut s,
                );
                assert_eq!(short, [1, 2], "at most max_vals");
            }
            "Float" => {
                let mut v = 0.0f32;
                TF_OpKernelConstruction_GetAttrFloat(ctx, c"Attr".as_ptr(), &mut v, &mut s);
                assert_eq!(v, 2.5);
            }
            "FloatList" => {
                let mut v = [0.0f32; 3];
                TF_OpKernelConstruction_GetAttrFloatList(ctx, c"Attr".as_ptr(), v.as_mut_ptr(), 3, &mut s);
                assert_eq!(v, [1.25, 2.5, 3.75]);
            }
            "Bool" => {
                let mut v = 0u8;
                TF_OpKernelConstruction_GetAttrBool(ctx, c"Attr".as_ptr(), &mut v, &mut s);
                assert_eq!(v, 1);
            }
            "BoolList" => {
                let mut v = [9u8; 4];
                TF_OpKernelConstruction_GetAttrBoolList(ctx, c"Attr".as_ptr(), v.as_mut_ptr(), 4, &mut s);
                assert_eq!(v, [1, 0, 1, 0]);
            }
            "Type" => {
                let mut v = 0;
                TF_OpKernelConstruction_GetAttrType(ctx, c"Attr".as_ptr(), &mut v, &mut s);
                assert_eq!(v, TF_FLOAT);
            }
            "TypeList" => {
                let mut v = [0; 2];
                TF_OpKernelConstruction_GetAttrTypeList(ctx, c"Attr".as_ptr(), v.as_mut_ptr(), 2, &mut s);
                assert_eq!(v, [TF_FLOAT, TF_INT32]);
            }
            "EmptyList" => assert_eq!((list, total), (0, -1)),
            "ShapeList" => assert_eq!((list, total), (2, 2), "an unknown rank counts 0"),
            "Tensor" => {
                assert_eq!((list, total), (-1, -1));
                let mut t = std::ptr::null_mut();
                TF_OpKernelConstruction_GetAttrTensor(ctx, c"Attr".as_ptr(), &mut t, &mut s);
                assert_eq!((TF_TensorType(t), TF_NumDims(t), TF_Dim(t, 0)), (TF_INT32, 1, 2));
                assert_eq!(std::slice::from_raw_parts(TF_TensorData(t).cast::<i32>(), 2), [7, 8]);
                TF_DeleteTensor(t);
                let mut v = std::ptr::null_mut();
                TF_OpKernelConstruction_GetAttrTensorList(ctx, c"Attr".as_ptr(), &mut v, 1, &mut s);
                assert_eq!(s.code(), TF_INVALID_ARGUMENT);
                TF_OpKernelConstruction_GetAttrTensor(ctx, c"Attr".as_ptr(), &mut t, &mut s);
                TF_DeleteTensor(t);
            }
            other => panic!("{other}"),
        }
        assert_eq!(s.code(), TF_OK, "{name}: {}", s.message());
        assert!(TF_OpKernelConstruction_HasAttr(ctx, c"Attr".as_ptr(), &mut s));
        assert!(!TF_OpKernelConstruction_HasAttr(ctx, c"Other".as_ptr(), &mut s));
        let mut t = 0;
        TF_OpKernelConstruction_GetAttrType(ctx, c"Other".as_ptr(), &mut t, &mut s);
        assert_eq!(
            (s.code(), s.message()),
            (
                TF_NOT_FOUND,
                format!("No attr named 'Other' in the node of op 'TestKernelAttr{name}'").as_str()
            )
        );
    }
    std::ptr::null_mut()
}

unsafe extern "C-unwind" fn no_compute(_: *mut c_void, _: *mut TF_OpKernelContext) {}

/// A 1-D int32 tensor attr holding `values`.
fn int_tensor(values: &[i32]) -> crate::tf::op_def::TensorAttr {
    let dims = [values.len() as i64];
    // SAFETY: one dim; the tensor is cloned, then freed once.
    unsafe {
        let t = TF_AllocateTensor(TF_INT32, dims.as_ptr(), 1, 4 * values.len());
        std::ptr::copy_nonoverlapping(values.as_ptr(), TF_TensorData(t).cast(), values.len());
        let attr = crate::tf::op_def::TensorAttr((*t).clone());
        TF_DeleteTensor(t);
        attr
    }
}

#[test]
fn attr_readers_follow_tensorflow_conventions() {
    let cases: Vec<(&str, &CStr, V)> = vec![
        ("String", c"Attr: string", V::S("bunny".into())),
        (
            "StringList",
            c"Attr: list(string)",
            V::List(vec![V::S("bugs".into()), V::S("bunny".into()), V::S("duck".into())]),
        ),
        ("Int", c"Attr: int", V::I(1234)),
        ("IntList", c"Attr: list(int)", V::List(vec![V::I(1), V::I(2), V::I(3), V::I(4)])),
        ("Float", c"Attr: float", V::F(2.5)),
        ("FloatList", c"Attr: list(float)", V::List(vec![V::F(1.25), V::F(2.5), V::F(3.75)])),
        ("Bool", c"Attr: bool", V::B(true)),
        ("BoolList", c"Attr: list(bool)", V::List(vec![V::B(true), V::B(false), V::B(true), V::B(false)])),
        ("Type", c"Attr: type", V::Type(TF_FLOAT)),
        ("TypeList", c"Attr: list(type)", V::List(vec![V::Type(TF_FLOAT), V::Type(TF_INT32)])),
        ("EmptyList", c"Attr: list(int) >= 0", V::List(vec![])),
        (
            "ShapeList",
            c"Attr: list(shape)",
            V::List(vec![
                V::Shape(crate::tf::op_def::ShapeValue::Dims(vec![2, -1])),
                V::Shape(crate::tf::op_def::ShapeValue::Unknown),
            ]),
        ),
        ("Tensor", c"Attr: tensor", V::Tensor(int_tensor(&[7, 8]))),
    ];
    for (name, spec, value) in cases {
        let op_name = std::ffi::CString::new(format!("TestKernelAttr{name}")).unwrap();
        op(&op_name, &[spec], &[], &[]);
        assert_eq!(kernel(&op_name, c"CPU", Some(attr_create), no_compute, None, |_| ()).0, TF_OK);
        KernelSite::new(op_name.to_str().unwrap(), name, None, vec![("Attr".into(), value)], None).unwrap();
    }
}

#[test]
fn kernels_are_selected_by_type_constraint_device_priority_and_label() {
    op(c"SelectOp", &[c"T: type"], &[c"x: T"], &[c"y: T"]);
    let with_type = |t: TF_DataType| {
        move |b: *mut TF_KernelBuilder| {
            let mut s = TF_Status::default();
            // SAFETY: the live builder `kernel` passes.
            unsafe { TF_KernelBuilder_TypeConstraint(b, c"T".as_ptr(), t, &mut s) };
            assert_eq!(s.code(), TF_OK);
        }
    };
    assert_eq!(kernel(c"SelectOp", c"CPU", None, no_compute, None, with_type(TF_FLOAT)).0, TF_OK);
    assert_eq!(kernel(c"SelectOp", c"CPU", None, no_compute, None, with_type(TF_FLOAT)).0, TF_ALREADY_EXISTS);
    assert_eq!(kernel(c"SelectOp", c"MY_DEVICE", None, no_compute, None, with_type(TF_INT32)).0, TF_OK);
    // SAFETY: the live builder `kernel` passes; a C literal.
    let labelled = |b: *mut TF_KernelBuilder| unsafe {
        TF_KernelBuilder_Label(b, c"fast".as_ptr());
        TF_KernelBuilder_Priority(b, 5);
        TF_KernelBuilder_HostMemory(b, c"x".as_ptr());
    };
    assert_eq!(kernel(c"SelectOp", c"CPU", None, no_compute, None, labelled).0, TF_OK);
    let t = |dt| vec![("T".to_owned(), V::Type(dt))];
    assert_eq!(select("SelectOp", None, &t(TF_FLOAT)).unwrap().device, "CPU");
    assert_eq!(
        select("SelectOp", None, &t(TF_INT32)).unwrap().device,
        "MY_DEVICE",
        "a plugin device kernel runs on the host"
    );
    assert_eq!(select("SelectOp", Some("CPU"), &t(TF_INT32)).unwrap_err().0, TF_NOT_FOUND);
    let mut l = t(TF_DOUBLE);
    l.push(("_kernel".into(), V::S("fast".into())));
    let k = select("SelectOp", None, &l).unwrap();
    assert_eq!((k.label.as_str(), k.priority, k.host_memory.clone()), ("fast", 5, vec!["x".to_owned()]));
    let e = select("SelectOp", None, &t(TF_DOUBLE)).unwrap_err();
    assert_eq!(e, (TF_NOT_FOUND, "no kernel registered for op 'SelectOp' with {T=double}".into()));
    // The type attr is inferred from the input.
    let site = KernelSite::new("SelectOp", "s", None, vec![], Some(&[TF_INT32])).unwrap();
    assert_eq!((site.kernel().device.as_str(), site.output_types()), ("MY_DEVICE", &[TF_INT32][..]));
    // Builders made with NULLs, and the proto form, fail cleanly.
    // SAFETY: NULL arguments are part of the misuse contract.
    unsafe {
        let mut s = TF_Status::default();
        let b = TF_NewKernelBuilder(c"SelectOp".as_ptr(), c"CPU".as_ptr(), None, None, None);
        TF_RegisterKernelBuilder(c"k".as_ptr(), b, &mut s);
        assert_eq!(
            (s.code(), s.message()),
            (TF_INVALID_ARGUMENT, "TF_NewKernelBuilder: NULL compute function")
        );
        TF_DeleteKernelBuilder(b);
        let b = TF_NewKernelBuilder(c"SelectOp".as_ptr(), c"CPU".as_ptr(), None, Some(no_compute), None);
        TF_RegisterKernelBuilderWithKernelDef(c"proto".as_ptr(), c"k".as_ptr(), b, &mut s);
        assert_eq!(s.code(), TF_UNIMPLEMENTED);
        TF_DeleteKernelBuilder(b);
        TF_DeleteKernelBuilder(TF_NewKernelBuilder(
            c"SelectOp".as_ptr(),
            c"CPU".as_ptr(),
            None,
            Some(no_compute),
            None,
        ));
    }
}

/// Runs `compute` as the only kernel of a fresh op `name` with one float output and the
/// given float inputs; returns the outputs or the error.
fn run_op(
    name: &str,
    inputs: &[&CStr],
    compute: ComputeFn,
    given: Vec<TF_Tensor>,
    alloc: Allocator,
) -> Result<Vec<TF_Tensor>, KernelError> {
    let cname = std::ffi::CString::new(name).unwrap();
    op(&cname, &[], inputs, &[c"output1: float"]);
    assert_eq!(kernel(&cname, c"CPU", None, compute, None, |_| ()).0, TF_OK);
    KernelSite::new(name, name, None, vec![], None).unwrap().compute(given, alloc, 0)
}

fn floats(t: &TF_Tensor) -> Vec<f32> {
    t.dense().read::<f32>().unwrap().to_vec()
}

unsafe extern "C-unwind" fn allocate_2x3(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context; the output holds 6 floats.
    unsafe {
        let mut s = TF_Status::default();
        let dims = [2i64, 3];
        let out = TF_AllocateOutput(ctx, 0, TF_FLOAT, dims.as_ptr(), 2, 24, &mut s);
        assert_eq!(s.code(), TF_OK);
        assert_eq!(
            (TF_TensorType(out), TF_NumDims(out), TF_Dim(out, 0), TF_Dim(out, 1)),
            (TF_FLOAT, 2, 2, 3)
        );
        std::ptr::copy_nonoverlapping(
            [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0].as_ptr(),
            TF_TensorData(out).cast(),
            6,
        );
        TF_DeleteTensor(out);
        let stream = TF_GetStream(ctx, &mut s);
        assert!(stream.is_null() && s.code() == TF_UNIMPLEMENTED);
        // Misuse: another output index, another dtype, a second different output.
        TF_AllocateOutput(ctx, 1, TF_FLOAT, dims.as_ptr(), 2, 24, &mut s);
        assert_eq!((s.code(), s.message()), (TF_OUT_OF_RANGE, "output index 1 is out of range (1 outputs)"));
        let other = TF_AllocateTemp(ctx, TF_INT32, dims.as_ptr(), 2, std::ptr::null_mut(), &mut s);
        TF_SetOutput(ctx, 0, other, &mut s);
        assert_eq!((s.code(), s.message()), (TF_INVALID_ARGUMENT, "output 0 must be float, got int32"));
        TF_DeleteTensor(other);
        let again = TF_AllocateTemp(ctx, TF_FLOAT, dims.as_ptr(), 2, std::ptr::null_mut(), &mut s);
        TF_SetOutput(ctx, 0, again, &mut s);
        assert_eq!((s.code(), s.message()), (TF_FAILED_PRECONDITION, "output 0 is already set"));
        TF_DeleteTensor(again);
        let mut t = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut t, &mut s);
        assert_eq!(s.code(), TF_OUT_OF_RANGE);
        assert_eq!(
            (TF_NumInputs(ctx), TF_NumOutputs(ctx), TF_ExpectedOutputDataType(ctx, 0)),
            (0, 1, TF_FLOAT)
        );
    }
}

unsafe extern "C-unwind" fn allocate_empty_and_temp(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context.
    unsafe {
        let mut s = TF_Status::default();
        let attrs =
            TF_AllocatorAttributes { struct_size: std::mem::size_of::<TF_AllocatorAttributes>(), on_host: 1 };
        let t = TF_AllocateTemp(ctx, TF_FLOAT, [0i64].as_ptr(), 1, &attrs as *const _ as *mut _, &mut s);
        assert_eq!((s.code(), TF_Dim(t, 0)), (TF_OK, 0));
        TF_SetOutput(ctx, 0, t, &mut s);
        assert_eq!(s.code(), TF_OK);
        TF_SetOutput(ctx, 0, t, &mut s);
        assert_eq!(s.code(), TF_OK, "setting the same tensor again is no conflict");
        TF_DeleteTensor(t);
    }
}

unsafe extern "C-unwind" fn forward_first(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context.
    unsafe {
        let mut s = TF_Status::default();
        let mut forwarded = 7;
        let out = TF_ForwardInputOrAllocateOutput(
            ctx,
            [0].as_ptr(),
            1,
            0,
            [2i64].as_ptr(),
            1,
            &mut forwarded,
            &mut s,
        );
        assert_eq!(s.code(), TF_OK);
        *TF_TensorData(out).cast::<f32>() += 100.0;
        TF_DeleteTensor(out);
        let range_status = TF_NewStatus();
        let mut args = TF_InputRange_Args {
            struct_size: 0,
            r#priv: std::ptr::null_mut(),
            start: 0,
            stop: 0,
            status: range_status,
        };
        TF_InputRange(ctx, c"input1".as_ptr(), &mut args);
        assert_eq!((args.start, args.stop, TF_GetCode(range_status)), (0, 1, TF_OK));
        TF_InputRange(ctx, c"nope".as_ptr(), &mut args);
        assert_eq!((args.start, TF_GetCode(range_status)), (-1, TF_INVALID_ARGUMENT));
        TF_DeleteStatus(range_status);
        let name = TF_GetOpKernelRequestedInput(ctx, 0);
        assert_eq!(std::slice::from_raw_parts(name.data.cast::<u8>(), name.len), b"input1");
        // Report which input was forwarded through the output's second element.
        let mut t = std::ptr::null_mut();
        TF_GetInput(ctx, 0, &mut t, &mut s);
        *TF_TensorData(t).cast::<f32>().add(1) = forwarded as f32;
        TF_DeleteTensor(t);
    }
}

unsafe extern "C-unwind" fn allocate_too_much(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    // SAFETY: a live context.
    unsafe {
        let mut s = TF_Status::default();
        let out = TF_AllocateOutput(ctx, 0, TF_FLOAT, [1i64 << 20].as_ptr(), 1, 0, &mut s);
        assert!(out.is_null());
        TF_OpKernelContext_Failure(ctx, &mut s);
    }
}

#[test]
fn outputs_temporaries_forwarding_and_misuse() {
    let out = run_op("AllocateOutputOp2x3", &[], allocate_2x3, vec![], heap()).unwrap();
    assert_eq!(
        (floats(&out[0]), out[0].dense().shape().dims()),
        (vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2i64, 3][..])
    );
    let out = run_op("AllocateTempOp0", &[], allocate_empty_and_temp, vec![], heap()).unwrap();
    assert_eq!(out[0].dense().shape().dims(), &[0]);

    // A uniquely held input is forwarded: the output is its buffer.
    let input = f32_tensor(&[1.0, 2.0], &[2]);
    let out = run_op("ForwardOp", &[c"input1: float"], forward_first, vec![input], heap()).unwrap();
    assert_eq!(floats(&out[0]), [101.0, 0.0], "forwarded: the input's buffer, forwarded_input 0");
    // A shared one is not: the output is new and the caller's tensor unchanged.
    let input = f32_tensor(&[1.0, 2.0], &[2]);
    let site = KernelSite::new("ForwardOp", "f", None, vec![], None).unwrap();
    let out = site.compute(vec![input.clone()], heap(), 0).unwrap();
    assert_eq!(
        (floats(&out[0])[0], floats(&input)),
        (100.0, vec![1.0, -1.0]),
        "allocated: forwarded_input -1"
    );

    // An allocation larger than the arena is an error result, and nothing leaks.
    let (arena, alloc) = hostrt_std::leaked_arena(64 * 1024).unwrap();
    let e = run_op("TooMuchOp", &[], allocate_too_much, vec![], alloc).unwrap_err();
    assert_eq!(e.0, TF_RESOURCE_EXHAUSTED);
    assert!(e.1.contains("OOM when allocating tensor with shape [1048576] and type float"), "{}", e.1);
    assert_eq!(arena.stats().unwrap().in_use, 0);
}

static FAILED_DELETED: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C-unwind" fn failed_delete(kernel: *mut c_void) {
    // SAFETY: the Box failing_create made, freed once.
    drop(unsafe { Box::from_raw(kernel.cast::<u32>()) });
    FAILED_DELETED.fetch_add(1, Ordering::SeqCst);
}

unsafe extern "C-unwind" fn failing_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let mut s = TF_Status::new(TF_INVALID_ARGUMENT, "bad attr");
    // SAFETY: a live construction context.
    unsafe { TF_OpKernelConstruction_Failure(ctx, &mut s) };
    Box::into_raw(Box::new(7u32)).cast()
}

#[test]
fn a_failing_create_is_an_error_and_its_state_is_deleted() {
    op(c"FailingCreateOp", &[], &[], &[c"y: float"]);
    assert_eq!(
        kernel(c"FailingCreateOp", c"CPU", Some(failing_create), my_compute, Some(failed_delete), |_| ()).0,
        TF_OK
    );
    let e = KernelSite::new("FailingCreateOp", "fc", None, vec![], None).unwrap_err();
    assert_eq!(e, (TF_INVALID_ARGUMENT, "creating kernel 'fc' for op 'FailingCreateOp': bad attr".into()));
    assert_eq!(FAILED_DELETED.load(Ordering::SeqCst), 1);
}

unsafe extern "C-unwind" fn panicking_create(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let mut s = TF_Status::default();
    let mut fail = 0u8;
    // SAFETY: a live construction context.
    unsafe { TF_OpKernelConstruction_GetAttrBool(ctx, c"fail_create".as_ptr(), &mut fail, &mut s) };
    assert!(fail == 0, "a Rust plugin's create panics");
    Box::into_raw(Box::new(0u8)).cast()
}

unsafe extern "C-unwind" fn panicking_compute(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    let mut s = TF_Status::default();
    let mut x = std::ptr::null_mut();
    // SAFETY: a live context; the input is freed before the panic.
    unsafe {
        TF_GetInput(ctx, 0, &mut x, &mut s);
        TF_DeleteTensor(x);
    }
    panic!("a Rust plugin's compute panics");
}

unsafe extern "C-unwind" fn byte_delete(kernel: *mut c_void) {
    // SAFETY: the Box create made, freed once.
    drop(unsafe { Box::from_raw(kernel.cast::<u8>()) });
    DELETED.fetch_add(1, Ordering::SeqCst);
}

/// A Rust plugin whose callbacks are `extern "C-unwind"` may panic: create and compute
/// panics are INTERNAL errors of that kernel site, nothing leaks, and the runtime goes on.
#[test]
fn panics_in_plugin_callbacks_are_errors() {
    op(c"PanicOp", &[c"fail_create: bool = false"], &[c"x: float"], &[c"y: float"]);
    let r = kernel(c"PanicOp", c"CPU", Some(panicking_create), panicking_compute, Some(byte_delete), |_| ());
    assert_eq!(r.0, TF_OK);
    let attrs = vec![("fail_create".to_owned(), V::B(true))];
    let e = KernelSite::new("PanicOp", "p", None, attrs, None).unwrap_err();
    assert_eq!(e, (TF_INTERNAL, "creating kernel 'p' for op 'PanicOp': it panicked".to_owned()));
    let site = KernelSite::new("PanicOp", "q", None, vec![], None).unwrap();
    let x = f32_tensor(&[1.0], &[1]);
    for _ in 0..2 {
        let e = site.compute(vec![x.clone()], heap(), 1).unwrap_err();
        assert_eq!(e, (TF_INTERNAL, "kernel 'q' for op 'PanicOp': it panicked".to_owned()));
    }
    assert!(x.dense().buffer().is_unique(), "the handle the kernel took was released");
    let d0 = DELETED.load(Ordering::SeqCst);
    drop(site);
    assert_eq!(DELETED.load(Ordering::SeqCst), d0 + 1, "the site's state is still deleted once");
}

/// The context functions of newer TensorFlow headers: mutable outputs, host memory, frames,
/// and the session protos hostrt does not have.
unsafe extern "C-unwind" fn introspect(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    let mut s = TF_Status::default();
    // SAFETY: a live context; handles freed once.
    unsafe {
        assert!(TF_GetMutableOutput(ctx, 0, &mut s).is_null());
        assert_eq!((s.code(), s.message()), (TF_FAILED_PRECONDITION, "output 0 is not set yet"));
        assert!(TF_GetMutableOutput(ctx, 1, &mut s).is_null());
        assert_eq!(s.code(), TF_OUT_OF_RANGE);
        let out = TF_AllocateOutput(ctx, 0, TF_FLOAT, [1i64].as_ptr(), 1, 4, &mut s);
        let again = TF_GetMutableOutput(ctx, 0, &mut s);
        assert_eq!(s.code(), TF_OK);
        assert_eq!(TF_TensorData(out), TF_TensorData(again), "the same buffer");
        TF_TensorData(again).cast::<f32>().write(7.0);
        TF_DeleteTensor(again);
        TF_DeleteTensor(out);
        assert!(TF_IsHostMemoryInput(ctx, 0, &mut s) && s.code() == TF_OK);
        assert!(TF_IsHostMemoryOutput(ctx, 0, &mut s) && s.code() == TF_OK);
        assert!(!TF_IsHostMemoryInput(ctx, 1, &mut s) && s.code() == TF_OUT_OF_RANGE);
        assert!(!TF_IsHostMemoryOutput(ctx, -1, &mut s) && s.code() == TF_OUT_OF_RANGE);
        assert_eq!((TF_GetFrameId(ctx), TF_GetIterId(ctx), TF_GetGraphDefVersion(ctx)), (0, 0, 0));
        assert_eq!(TF_GetResourceMgrDefaultContainerName(ctx).len, 0);
        let buffer = crate::tf::c_api::TF_NewBuffer();
        TF_GetSerializedConfigProto(ctx, buffer, &mut s);
        assert_eq!(s.code(), TF_UNIMPLEMENTED);
        TF_GetSerializedFunctionDefLibrary(ctx, buffer, &mut s);
        assert_eq!(s.code(), TF_UNIMPLEMENTED);
        crate::tf::c_api::TF_DeleteBuffer(buffer);
    }
}

#[test]
fn newer_context_functions_answer_for_a_host_runtime() {
    let out =
        run_op("IntrospectOp", &[c"x: float"], introspect, vec![f32_tensor(&[1.0], &[1])], heap()).unwrap();
    assert_eq!(floats(&out[0]), [7.0]);
}

unsafe extern "C-unwind" fn no_function_attrs(ctx: *mut TF_OpKernelConstruction) -> *mut c_void {
    let mut s = TF_Status::default();
    // SAFETY: a live construction context.
    unsafe {
        assert!(TF_OpKernelConstruction_GetAttrFunction(ctx, c"f".as_ptr(), &mut s).is_null());
        assert_eq!(s.code(), TF_UNIMPLEMENTED);
        assert!(TF_OpKernelConstruction_GetNodeDef(ctx, &mut s).is_null());
        assert_eq!(s.code(), TF_UNIMPLEMENTED);
    }
    std::ptr::null_mut()
}

#[test]
fn function_attrs_and_node_defs_are_unimplemented() {
    op(c"NoProtoOp", &[], &[], &[]);
    assert_eq!(kernel(c"NoProtoOp", c"CPU", Some(no_function_attrs), no_compute, None, |_| ()).0, TF_OK);
    KernelSite::new("NoProtoOp", "n", None, vec![], None).unwrap();
}

/// A kernel registered for device `VULKAN`: makes a fence on the stream's device with its
/// own Vulkan calls, signals it through the stream's `submit`, waits for it. Outputs 1, or
/// -1 where there is no Vulkan device.
#[cfg(feature = "vulkan")]
unsafe extern "C-unwind" fn use_vulkan_stream(_: *mut c_void, ctx: *mut TF_OpKernelContext) {
    use super::device_stream::hostrt_vk_stream;
    use hostrt_vulkan::ash::{self, vk, vk::Handle};
    // SAFETY: a live context; the stream's handles are valid for the process (the header's
    // contract), and the fence is this kernel's, destroyed before it returns.
    unsafe {
        let mut s = TF_Status::default();
        let stream = TF_GetStream(ctx, &mut s).cast::<hostrt_vk_stream>().cast_const();
        let value = match stream.as_ref() {
            None => {
                assert_eq!(s.code(), TF_UNAVAILABLE, "{}", s.message());
                -1.0f32
            }
            Some(st) => {
                assert_eq!((s.code(), st.struct_size), (TF_OK, size_of::<hostrt_vk_stream>()));
                let gipa = std::mem::transmute::<
                    super::device_stream::GetInstanceProcAddr,
                    vk::PFN_vkGetInstanceProcAddr,
                >(st.get_instance_proc_addr);
                let entry = ash::StaticFn { get_instance_proc_addr: gipa };
                let instance = ash::Instance::load(&entry, vk::Instance::from_raw(st.instance as u64));
                let device = ash::Device::load(instance.fp_v1_0(), vk::Device::from_raw(st.device as u64));
                let fence = device.create_fence(&vk::FenceCreateInfo::default(), None).unwrap();
                assert_eq!((st.submit)(stream, 0, std::ptr::null(), fence.as_raw()), 0);
                device.wait_for_fences(&[fence], true, 10_000_000_000).unwrap();
                device.destroy_fence(fence, None);
                // Another stream pointer is refused (VK_ERROR_INITIALIZATION_FAILED).
                assert_eq!((st.submit)(std::ptr::null(), 0, std::ptr::null(), 0), -3);
                1.0
            }
        };
        let out = TF_AllocateOutput(ctx, 0, TF_FLOAT, std::ptr::null(), 0, 4, &mut s);
        assert_eq!(s.code(), TF_OK);
        TF_TensorData(out).cast::<f32>().write(value);
        TF_DeleteTensor(out);
    }
}

#[cfg(feature = "vulkan")]
#[test]
fn a_vulkan_kernel_gets_the_device_stream_and_submits_through_it() {
    op(c"VulkanStreamOp", &[], &[], &[c"output1: float"]);
    assert_eq!(kernel(c"VulkanStreamOp", c"VULKAN", None, use_vulkan_stream, None, |_| ()).0, TF_OK);
    let out = KernelSite::new("VulkanStreamOp", "v", None, vec![], None)
        .unwrap()
        .compute(vec![], heap(), 0)
        .unwrap();
    let required = std::env::var("HOSTRT_REQUIRE_VULKAN").is_ok_and(|v| v == "1");
    match floats(&out[0])[..] {
        [1.0] => {}
        [-1.0] if !required => eprintln!("SKIP: no Vulkan device (TF_GetStream gave UNAVAILABLE)"),
        ref other => panic!("{other:?} (HOSTRT_REQUIRE_VULKAN={required})"),
    }
}
