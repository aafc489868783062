//! TensorFlow's `ops_test.cc` assertions, on hostrt's registry and shape handles.

use std::ffi::CStr;

use super::*;
use crate::tf::op_def::{ArgType, AttrValue};
use crate::tf::tf_datatype::{TF_FLOAT, TF_INT32, TF_UINT8, TF_UINT16, TF_UINT32};
use crate::tf::tf_status::{TF_DeleteStatus, TF_GetCode, TF_Message, TF_NewStatus, TF_SetStatus};

fn message(s: *const TF_Status) -> String {
    // SAFETY: a live status.
    unsafe { CStr::from_ptr(TF_Message(s)) }.to_string_lossy().into_owned()
}

fn dims(d: &[i64]) -> ShapeValue {
    ShapeValue::Dims(d.to_vec())
}

fn ctx(inputs: Vec<ShapeValue>) -> TF_ShapeInferenceContext {
    TF_ShapeInferenceContext {
        op: "dummy".into(),
        inputs,
        attrs: vec![("T".into(), AttrValue::Type(TF_INT32))],
        outputs: vec![],
    }
}

/// Registers `name` through the C builder, adding `f`'s specs.
fn register_with(name: &std::ffi::CStr, f: impl FnOnce(*mut TF_OpDefinitionBuilder)) -> (TF_Code, String) {
    // SAFETY: a fresh builder and status, consumed and freed here.
    unsafe {
        let b = TF_NewOpDefinitionBuilder(name.as_ptr());
        f(b);
        let status = TF_NewStatus();
        TF_RegisterOpDefinition(b, status);
        let out = (TF_GetCode(status), message(status));
        TF_DeleteStatus(status);
        out
    }
}

#[test]
fn basic_op_registration() {
    // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
    let r = register_with(c"SomeOp", |b| unsafe {
        TF_OpDefinitionBuilderAddAttr(b, c"attr1: string".as_ptr());
        TF_OpDefinitionBuilderAddInput(b, c"input1: uint8".as_ptr());
        TF_OpDefinitionBuilderAddInput(b, c"input2: uint16".as_ptr());
        TF_OpDefinitionBuilderAddOutput(b, c"output1: uint32".as_ptr());
    });
    assert_eq!(r, (TF_OK, String::new()));
    let op = lookup("SomeOp").unwrap().def;
    assert_eq!(op.inputs.len(), 2);
    assert_eq!((op.inputs[0].name.as_str(), &op.inputs[0].ty), ("input1", &ArgType::Fixed(TF_UINT8)));
    assert_eq!(op.inputs[1].ty, ArgType::Fixed(TF_UINT16));
    assert_eq!(op.outputs[0].ty, ArgType::Fixed(TF_UINT32));
    assert_eq!((op.attrs.len(), op.attrs[0].kind), (1, AttrKind::String));
    // A second registration of the name fails and keeps the first.
    let again =
        // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
        register_with(c"SomeOp", |b| unsafe { TF_OpDefinitionBuilderAddInput(b, c"x: float".as_ptr()) });
    assert_eq!(again, (TF_ALREADY_EXISTS, "op 'SomeOp' is already registered".to_owned()));
    assert_eq!(lookup("SomeOp").unwrap().def.inputs.len(), 2);
}

#[test]
fn attribute_accessors() {
    let deprecation = c"use something else instead";
    // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
    let r = register_with(c"AttributeAccessorsOp", |b| unsafe {
        TF_OpDefinitionBuilderAddAttr(b, c"foo1: int >= 2".as_ptr());
        TF_OpDefinitionBuilderAddAttr(b, c"foo2: string=\"my string\"".as_ptr());
        TF_OpDefinitionBuilderSetIsCommutative(b, true);
        TF_OpDefinitionBuilderSetIsAggregate(b, true);
        TF_OpDefinitionBuilderSetAllowsUninitializedInput(b, true);
        TF_OpDefinitionBuilderSetIsStateful(b, true);
        TF_OpDefinitionBuilderDeprecated(b, 4, deprecation.as_ptr());
    });
    assert_eq!(r.0, TF_OK, "{}", r.1);
    let op = lookup("AttributeAccessorsOp").unwrap().def;
    assert!(op.is_commutative && op.is_aggregate && op.allows_uninitialized_input && op.is_stateful);
    let d = op.deprecation.unwrap();
    assert_eq!((d.version, d.explanation.as_str()), (4, "use something else instead"));
    assert_eq!((op.attrs.len(), op.attrs[0].kind, op.attrs[0].minimum), (2, AttrKind::Int, Some(2)));
    assert_eq!(
        (op.attrs[1].kind, &op.attrs[1].default),
        (AttrKind::String, &Some(AttrValue::S("my string".into())))
    );
}

#[test]
fn a_bad_spec_fails_registration_with_its_text_and_registers_nothing() {
    // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
    let r = register_with(c"BadSpecOp", |b| unsafe {
        TF_OpDefinitionBuilderAddAttr(b, c"T: {float, int32}".as_ptr());
        TF_OpDefinitionBuilderAddInput(b, c"x: U".as_ptr());
        TF_OpDefinitionBuilderAddAttr(b, c"broken".as_ptr());
    });
    assert_eq!(r.0, TF_INVALID_ARGUMENT);
    assert!(r.1.contains("Attr(\"broken\")"), "the first bad spec is reported: {}", r.1);
    assert!(lookup("BadSpecOp").is_none());
    let r =
        // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
        register_with(c"UnresolvedOp", |b| unsafe { TF_OpDefinitionBuilderAddInput(b, c"x: U".as_ptr()) });
    assert_eq!(r, (TF_INVALID_ARGUMENT, "op 'UnresolvedOp': 'x': no attr or type named 'U'".to_owned()));
    // NULL arguments are errors, not crashes.
    // SAFETY: NULL is part of the misuse contract.
    unsafe {
        let status = TF_NewStatus();
        TF_RegisterOpDefinition(std::ptr::null_mut(), status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        TF_OpDefinitionBuilderAddAttr(std::ptr::null_mut(), c"x: int".as_ptr());
        let b = TF_NewOpDefinitionBuilder(c"NullSpecOp".as_ptr());
        TF_OpDefinitionBuilderAddInput(b, std::ptr::null());
        TF_RegisterOpDefinition(b, status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        TF_DeleteOpDefinitionBuilder(TF_NewOpDefinitionBuilder(c"Unregistered".as_ptr()));
        TF_DeleteStatus(status);
    }
}

unsafe extern "C-unwind" fn identity_shape_fn(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status) {
    // SAFETY: called by `infer_shapes` with a live context and status.
    unsafe {
        let handle = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, 0, handle, status);
        assert_eq!(TF_GetCode(status), TF_OK);
        TF_ShapeInferenceContextSetOutput(ctx, 0, handle, status);
        TF_DeleteShapeHandle(handle);
    }
}

unsafe extern "C-unwind" fn vectorize_shape_fn(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status) {
    // SAFETY: called by `infer_shapes` with a live context and status.
    unsafe {
        let handle = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, 0, handle, status);
        let rank = TF_ShapeInferenceContextRank(ctx, handle);
        let new_shape = TF_ShapeInferenceContextVectorFromSize(ctx, rank as usize);
        TF_ShapeInferenceContextSetOutput(ctx, 0, new_shape, status);
        TF_DeleteShapeHandle(handle);
        TF_DeleteShapeHandle(new_shape);
    }
}

unsafe extern "C-unwind" fn failing_shape_fn(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status) {
    // SAFETY: called by `infer_shapes` with a live context and status.
    unsafe {
        let handle = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, 0, handle, status);
        TF_ShapeInferenceContextWithRank(ctx, handle, 2, handle, status);
        TF_DeleteShapeHandle(handle);
    }
}

#[test]
fn shape_functions_run_through_the_registry() {
    let with_fn = |name: &CStr, f: ShapeFn, outputs: usize| {
        // SAFETY: `b` is the live builder `register_with` passes; specs are C literals.
        let r = register_with(name, |b| unsafe {
            TF_OpDefinitionBuilderAddInput(b, c"input1: uint8".as_ptr());
            TF_OpDefinitionBuilderAddInput(b, c"input2: uint32".as_ptr());
            for o in [c"output1: uint8", c"output2: uint8"].iter().take(outputs) {
                TF_OpDefinitionBuilderAddOutput(b, o.as_ptr());
            }
            TF_OpDefinitionBuilderSetShapeInferenceFunction(b, Some(f));
        });
        assert_eq!(r.0, TF_OK, "{}", r.1);
    };
    with_fn(c"SomeTestOp", identity_shape_fn, 1);
    with_fn(c"UnknownShapeOp", TF_ShapeInferenceContextSetUnknownShape, 2);
    with_fn(c"VectorizeTestOp", vectorize_shape_fn, 1);
    with_fn(c"FailingShapeOp", failing_shape_fn, 1);
    /// A Rust plugin's shape function that panics (declared `extern "C-unwind"`).
    unsafe extern "C-unwind" fn panicking(_: *mut TF_ShapeInferenceContext, _: *mut TF_Status) {
        panic!("shape function panics");
    }
    with_fn(c"PanickingShapeOp", panicking, 1);
    assert_eq!(
        infer_shapes("PanickingShapeOp", vec![dims(&[1]), dims(&[1])], &[], 1),
        Err((TF_INTERNAL, "shape function of 'PanickingShapeOp': it panicked".to_owned()))
    );
    assert_eq!(infer_shapes("SomeTestOp", vec![dims(&[1, 2]), dims(&[5])], &[], 1), Ok(vec![dims(&[1, 2])]));
    assert_eq!(
        infer_shapes("UnknownShapeOp", vec![dims(&[1, 2]), dims(&[3, 4])], &[], 2),
        Ok(vec![ShapeValue::Unknown, ShapeValue::Unknown])
    );
    assert_eq!(
        infer_shapes("VectorizeTestOp", vec![dims(&[4, 5, 9]), dims(&[])], &[], 1),
        Ok(vec![dims(&[3])])
    );
    assert_eq!(
        infer_shapes("FailingShapeOp", vec![dims(&[4, 5, 9]), dims(&[])], &[], 1),
        Err((
            TF_INVALID_ARGUMENT,
            "shape function of 'FailingShapeOp': Shape must be rank 2 but is rank 3".to_owned()
        ))
    );
    assert_eq!(infer_shapes("NoSuchOp", vec![], &[], 0).unwrap_err().0, TF_NOT_FOUND);
}

#[test]
fn with_rank_checks_known_ranks_and_passes_unknown_ones() {
    let mut c = ctx(vec![dims(&[10, 20, 30]), ShapeValue::Unknown]);
    // SAFETY: a live context, handles and status, freed at the end.
    unsafe {
        let (in0, in1, s1, status) =
            (TF_NewShapeHandle(), TF_NewShapeHandle(), TF_NewShapeHandle(), TF_NewStatus());
        TF_ShapeInferenceContextGetInput(&mut c, 0, in0, status);
        TF_ShapeInferenceContextGetInput(&mut c, 1, in1, status);
        TF_ShapeInferenceContextWithRankAtMost(&mut c, in0, 3, s1, status);
        assert_eq!(((*s1).0.clone(), TF_GetCode(status)), (dims(&[10, 20, 30]), TF_OK));
        TF_ShapeInferenceContextWithRankAtLeast(&mut c, in0, 3, s1, status);
        assert_eq!(TF_GetCode(status), TF_OK);
        TF_ShapeInferenceContextWithRankAtLeast(&mut c, in0, 6, s1, status);
        assert_eq!(
            (TF_GetCode(status), message(status)),
            (TF_INVALID_ARGUMENT, "Shape must be at least rank 6 but is rank 3".into())
        );
        TF_SetStatus(status, TF_OK, c"".as_ptr());
        TF_ShapeInferenceContextWithRankAtMost(&mut c, in0, 1, s1, status);
        assert_eq!(message(status), "Shape must be at most rank 1 but is rank 3");
        TF_ShapeInferenceContextWithRank(&mut c, in0, 3, s1, status);
        assert_eq!(TF_GetCode(status), TF_OK);
        TF_ShapeInferenceContextWithRank(&mut c, in0, 4, s1, status);
        assert_eq!(message(status), "Shape must be rank 4 but is rank 3");
        // Unknown rank: AtMost/AtLeast succeed with an unknown shape; WithRank gives the rank.
        TF_ShapeInferenceContextWithRankAtMost(&mut c, in1, 1, s1, status);
        assert_eq!(((*s1).0.clone(), TF_GetCode(status)), (ShapeValue::Unknown, TF_OK));
        TF_ShapeInferenceContextWithRankAtLeast(&mut c, in1, 1, s1, status);
        assert_eq!(((*s1).0.clone(), TF_GetCode(status)), (ShapeValue::Unknown, TF_OK));
        TF_ShapeInferenceContextWithRank(&mut c, in1, 2, s1, status);
        assert_eq!((*s1).0, dims(&[-1, -1]));
        assert_eq!(
            (TF_ShapeInferenceContextRank(&mut c, in1), TF_ShapeInferenceContextRankKnown(&mut c, in1)),
            (-1, 0)
        );
        TF_ShapeInferenceContextGetInput(&mut c, 2, s1, status);
        assert_eq!(
            (TF_GetCode(status), message(status)),
            (TF_OUT_OF_RANGE, "input 2 of op 'dummy', which has 2 inputs".into())
        );
        for h in [in0, in1, s1] {
            TF_DeleteShapeHandle(h);
        }
        TF_DeleteStatus(status);
    }
}

#[test]
fn concatenate_vector_dims_subshape_scalar_and_attrs() {
    let mut c = ctx(vec![dims(&[1, 2]), dims(&[3, 4]), dims(&[10, 20, 30, 40, 50])]);
    // SAFETY: a live context, handles and status, freed at the end.
    unsafe {
        let status = TF_NewStatus();
        assert_eq!(TF_ShapeInferenceContextNumInputs(&mut c), 3);
        let (a, b, result) = (TF_NewShapeHandle(), TF_NewShapeHandle(), TF_NewShapeHandle());
        TF_ShapeInferenceContextGetInput(&mut c, 0, a, status);
        TF_ShapeInferenceContextGetInput(&mut c, 1, b, status);
        TF_ShapeInferenceContextConcatenateShapes(&mut c, a, b, result, status);
        assert_eq!(((*result).0.clone(), TF_GetCode(status)), (dims(&[1, 2, 3, 4]), TF_OK));

        let v = TF_ShapeInferenceContextVectorFromSize(&mut c, 43);
        assert_eq!(
            (TF_ShapeInferenceContextRankKnown(&mut c, v), TF_ShapeInferenceContextRank(&mut c, v)),
            (1, 1)
        );
        let d = TF_NewDimensionHandle();
        assert_eq!((TF_DimensionHandleValueKnown(d), TF_DimensionHandleValue(d)), (0, -1));
        TF_ShapeInferenceContextDim(&mut c, v, 0, d);
        assert_eq!((TF_DimensionHandleValueKnown(d), TF_DimensionHandleValue(d)), (1, 43));
        TF_ShapeInferenceContextDim(&mut c, result, -1, d);
        assert_eq!(TF_DimensionHandleValue(d), 4, "negative indices count from the end");

        TF_ShapeInferenceContextGetInput(&mut c, 2, a, status);
        TF_ShapeInferenceContextSubshape(&mut c, a, 1, -1, a, status);
        assert_eq!(((*a).0.clone(), TF_GetCode(status)), (dims(&[20, 30, 40]), TF_OK));
        TF_ShapeInferenceContextSubshape(&mut c, a, 2, 1, b, status);
        assert_eq!(TF_GetCode(status), TF_INVALID_ARGUMENT);
        TF_ShapeInferenceContextSubshape(&mut c, a, -7, 1, b, status);
        assert_eq!(message(status), "Subshape start out of bounds: -7, for shape with rank 3");

        let scalar = TF_ShapeInferenceContextScalar(&mut c);
        assert_eq!((*scalar).0, dims(&[]));

        let mut t = 0;
        TF_ShapeInferenceContext_GetAttrType(&mut c, c"T".as_ptr(), &mut t, status);
        assert_eq!((t, TF_GetCode(status)), (TF_INT32, TF_OK));
        TF_ShapeInferenceContext_GetAttrType(&mut c, c"U".as_ptr(), &mut t, status);
        assert_eq!(
            (TF_GetCode(status), message(status)),
            (TF_NOT_FOUND, "op 'dummy' has no attr named 'U'".into())
        );
        assert_ne!(t, TF_FLOAT);

        for h in [a, b, result, v, scalar] {
            TF_DeleteShapeHandle(h);
        }
        TF_DeleteDimensionHandle(d);
        TF_DeleteStatus(status);
    }
}
