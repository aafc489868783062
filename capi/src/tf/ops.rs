//! `ops.h`: op registration through `TF_OpDefinitionBuilder`, the process-wide op registry,
//! and shape inference (`TF_ShapeInferenceContext`, shape and dimension handles).
//!
//! A builder records its first spec error and reports it from `TF_RegisterOpDefinition`,
//! as TensorFlow's `OpDefBuilder` does; a rejected or duplicate op leaves the registry as
//! it was.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};
use std::sync::RwLock;

use crate::ffi::{guard, text};
use crate::tf::op_def::{self, AttrKind, AttrValue, OpDef, ShapeValue};
use crate::tf::tf_datatype::TF_DataType;
use crate::tf::tf_status::{
    TF_ALREADY_EXISTS, TF_Code, TF_INTERNAL, TF_INVALID_ARGUMENT, TF_NOT_FOUND, TF_OK, TF_OUT_OF_RANGE,
    TF_Status, report,
};

/// A shape function as C sees it.
pub type ShapeFn = unsafe extern "C-unwind" fn(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status);

/// A registered op: its definition and shape function.
#[derive(Clone, Debug)]
pub struct RegisteredOp {
    /// The definition, checked.
    pub def: OpDef,
    /// The shape function, if any.
    pub shape_fn: Option<ShapeFn>,
}

static REGISTRY: RwLock<BTreeMap<String, RegisteredOp>> = RwLock::new(BTreeMap::new());

/// The op registered as `name`, if any.
pub fn lookup(name: &str) -> Option<RegisteredOp> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
}

/// Registers a checked op; `TF_ALREADY_EXISTS` if the name is taken.
pub fn register(mut def: OpDef, shape_fn: Option<ShapeFn>) -> Result<(), (TF_Code, String)> {
    op_def::check_op(&mut def).map_err(|e| (TF_INVALID_ARGUMENT, e.0))?;
    let mut ops = REGISTRY.write().unwrap_or_else(|e| e.into_inner());
    if ops.contains_key(&def.name) {
        return Err((TF_ALREADY_EXISTS, format!("op '{}' is already registered", def.name)));
    }
    ops.insert(def.name.clone(), RegisteredOp { def, shape_fn });
    Ok(())
}

// ---- TF_OpDefinitionBuilder ----

/// An op being defined (opaque to C).
#[derive(Debug)]
pub struct TF_OpDefinitionBuilder {
    def: OpDef,
    shape_fn: Option<ShapeFn>,
    /// The first spec error, reported at registration.
    error: Option<String>,
}

impl TF_OpDefinitionBuilder {
    fn note<T>(&mut self, r: Result<T, op_def::SpecError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.error.get_or_insert(format!("op '{}': {e}", self.def.name));
                None
            }
        }
    }
}

/// Runs `f` on the builder behind `b` (nothing for NULL; a panic is recorded as an error).
///
/// # Safety
/// `b` is NULL or a live builder.
unsafe fn with_builder(b: *mut TF_OpDefinitionBuilder, f: impl FnOnce(&mut TF_OpDefinitionBuilder)) {
    // SAFETY: NULL or live, by the caller's contract.
    let Some(b) = (unsafe { b.as_mut() }) else { return };
    let name = b.def.name.clone();
    if guard(true, || {
        f(b);
        false
    }) {
        b.error.get_or_insert(format!("op '{name}': a builder call panicked"));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NewOpDefinitionBuilder(op_name: *const c_char) -> *mut TF_OpDefinitionBuilder {
    guard(std::ptr::null_mut(), || {
        // SAFETY: a C string or NULL, by the contract.
        let name = unsafe { text(op_name) };
        let error = name.is_none().then(|| "TF_NewOpDefinitionBuilder: NULL op name".to_owned());
        let def = OpDef { name: name.unwrap_or_default().into_owned(), ..OpDef::default() };
        Box::into_raw(Box::new(TF_OpDefinitionBuilder { def, shape_fn: None, error }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteOpDefinitionBuilder(builder: *mut TF_OpDefinitionBuilder) {
    if !builder.is_null() {
        // SAFETY: a builder from `TF_NewOpDefinitionBuilder` (a Box), freed once.
        guard((), || drop(unsafe { Box::from_raw(builder) }));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_RegisterOpDefinition(
    builder: *mut TF_OpDefinitionBuilder,
    status: *mut TF_Status,
) {
    if builder.is_null() {
        // SAFETY: NULL or a live status, by the contract.
        return unsafe { report(status, TF_INVALID_ARGUMENT, "TF_RegisterOpDefinition: NULL builder") };
    }
    // SAFETY: a builder from `TF_NewOpDefinitionBuilder`, consumed here, by the contract.
    let b = unsafe { Box::from_raw(builder) };
    let done =
        guard(Err((TF_INTERNAL, "TF_RegisterOpDefinition panicked".to_owned())), move || match b.error {
            Some(e) => Err((TF_INVALID_ARGUMENT, e)),
            None => register(b.def, b.shape_fn),
        });
    let (code, message) = done.err().unwrap_or((TF_OK, String::new()));
    crate::tf::plugins::registration_log::note(if code == TF_OK { Ok(()) } else { Err(&message) });
    // SAFETY: NULL or a live status, by the contract.
    unsafe { report(status, code, &message) }
}

/// Which list a spec goes to.
#[derive(Clone, Copy)]
enum Spec {
    Attr,
    Input,
    Output,
}

/// Parses `spec` and adds it to the builder's `kind` list, or notes the error.
///
/// # Safety
/// `builder` is NULL or live; `spec` is NULL or a C string.
unsafe fn add_spec(builder: *mut TF_OpDefinitionBuilder, spec: *const c_char, kind: Spec) {
    // SAFETY: a C string or NULL, by the caller's contract.
    let spec = unsafe { text(spec) };
    // SAFETY: NULL or a live builder, by the caller's contract.
    unsafe {
        with_builder(builder, |b| {
            let Some(spec) = spec else {
                b.error.get_or_insert(format!("op '{}': a NULL spec", b.def.name));
                return;
            };
            match kind {
                Spec::Attr => {
                    if let Some(a) = b.note(op_def::parse_attr(&spec)) {
                        b.def.attrs.push(a);
                    }
                }
                Spec::Input => {
                    if let Some(a) = b.note(op_def::parse_arg(&spec, "Input")) {
                        b.def.inputs.push(a);
                    }
                }
                Spec::Output => {
                    if let Some(a) = b.note(op_def::parse_arg(&spec, "Output")) {
                        b.def.outputs.push(a);
                    }
                }
            }
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderAddAttr(
    builder: *mut TF_OpDefinitionBuilder,
    attr_spec: *const c_char,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { add_spec(builder, attr_spec, Spec::Attr) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderAddInput(
    builder: *mut TF_OpDefinitionBuilder,
    input_spec: *const c_char,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { add_spec(builder, input_spec, Spec::Input) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderAddOutput(
    builder: *mut TF_OpDefinitionBuilder,
    output_spec: *const c_char,
) {
    // SAFETY: the caller's contract, passed on.
    unsafe { add_spec(builder, output_spec, Spec::Output) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderSetIsCommutative(
    builder: *mut TF_OpDefinitionBuilder,
    is_commutative: bool,
) {
    // SAFETY: NULL or a live builder, by the contract.
    unsafe { with_builder(builder, |b| b.def.is_commutative = is_commutative) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderSetIsAggregate(
    builder: *mut TF_OpDefinitionBuilder,
    is_aggregate: bool,
) {
    // SAFETY: NULL or a live builder, by the contract.
    unsafe { with_builder(builder, |b| b.def.is_aggregate = is_aggregate) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderSetIsStateful(
    builder: *mut TF_OpDefinitionBuilder,
    is_stateful: bool,
) {
    // SAFETY: NULL or a live builder, by the contract.
    unsafe { with_builder(builder, |b| b.def.is_stateful = is_stateful) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderSetAllowsUninitializedInput(
    builder: *mut TF_OpDefinitionBuilder,
    allows_uninitialized_input: bool,
) {
    // SAFETY: NULL or a live builder, by the contract.
    unsafe { with_builder(builder, |b| b.def.allows_uninitialized_input = allows_uninitialized_input) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderDeprecated(
    builder: *mut TF_OpDefinitionBuilder,
    version: c_int,
    explanation: *const c_char,
) {
    // SAFETY: a C string or NULL, by the contract.
    let explanation = unsafe { text(explanation) }.unwrap_or_default().into_owned();
    // SAFETY: NULL or a live builder, by the contract.
    unsafe {
        with_builder(builder, |b| b.def.deprecation = Some(op_def::Deprecation { version, explanation }))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpDefinitionBuilderSetShapeInferenceFunction(
    builder: *mut TF_OpDefinitionBuilder,
    shape_inference_func: Option<
        unsafe extern "C-unwind" fn(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status),
    >,
) {
    // SAFETY: NULL or a live builder, by the contract.
    unsafe { with_builder(builder, |b| b.shape_fn = shape_inference_func) }
}

// ---- shape inference ----

/// What a shape function sees and sets (opaque to C).
#[derive(Debug)]
pub struct TF_ShapeInferenceContext {
    op: String,
    inputs: Vec<ShapeValue>,
    attrs: Vec<(String, AttrValue)>,
    outputs: Vec<ShapeValue>,
}

impl TF_ShapeInferenceContext {
    /// Input `i`'s shape.
    pub fn input(&self, i: usize) -> Option<&ShapeValue> {
        self.inputs.get(i)
    }

    /// Attr `name` (the op's default when the program gave none).
    pub fn attr(&self, name: &str) -> Option<&AttrValue> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Sets output `i` (ignored past the last output).
    pub fn set_output(&mut self, i: usize, shape: ShapeValue) {
        if let Some(o) = self.outputs.get_mut(i) {
            *o = shape;
        }
    }

    /// The op's name.
    pub fn op(&self) -> &str {
        &self.op
    }
}

/// A shape (opaque to C): unknown rank, or dims with -1 unknown.
#[derive(Debug, Clone)]
pub struct TF_ShapeHandle(ShapeValue);

/// A dimension (opaque to C): its size, -1 unknown.
#[derive(Debug, Clone, Copy)]
pub struct TF_DimensionHandle(i64);

/// Output shapes of op `name` for these input shapes and attrs (the op's defaults filled
/// in): its shape function's answer, unknown shapes where it sets none or has none.
pub fn infer_shapes(
    name: &str,
    inputs: Vec<ShapeValue>,
    attrs: &[(String, AttrValue)],
    num_outputs: usize,
) -> Result<Vec<ShapeValue>, (TF_Code, String)> {
    let op = lookup(name).ok_or_else(|| (TF_NOT_FOUND, format!("no op named '{name}' is registered")))?;
    let mut all = attrs.to_vec();
    for a in &op.def.attrs {
        if let (None, Some(d)) = (all.iter().find(|(n, _)| *n == a.name), &a.default) {
            all.push((a.name.clone(), d.clone()));
        }
    }
    let mut ctx = TF_ShapeInferenceContext {
        op: name.to_owned(),
        inputs,
        attrs: all,
        outputs: vec![ShapeValue::Unknown; num_outputs],
    };
    if let Some(f) = op.shape_fn {
        let mut status = TF_Status::default();
        // SAFETY: a live context and status for the duration of the call, as the shape
        // function's contract says.
        let ran =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { f(&mut ctx, &mut status) }));
        if ran.is_err() {
            return Err((TF_INTERNAL, format!("shape function of '{name}': it panicked")));
        }
        if status.code() != TF_OK {
            return Err((status.code(), format!("shape function of '{name}': {}", status.message())));
        }
    }
    Ok(ctx.outputs)
}

/// The context behind `ctx`.
///
/// # Safety
/// `ctx` is NULL or a live context.
unsafe fn context<'a>(ctx: *mut TF_ShapeInferenceContext) -> Option<&'a mut TF_ShapeInferenceContext> {
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { ctx.as_mut() }
}

/// The shape behind a handle (NULL reads as unknown).
///
/// # Safety
/// `h` is NULL or a live handle.
unsafe fn shape<'a>(h: *const TF_ShapeHandle) -> &'a ShapeValue {
    static UNKNOWN: ShapeValue = ShapeValue::Unknown;
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { h.as_ref() }.map_or(&UNKNOWN, |h| &h.0)
}

/// Stores `value` in the handle `out` (if not NULL); reports `result`'s error otherwise.
///
/// # Safety
/// `out` and `status` are NULL or live.
unsafe fn answer(out: *mut TF_ShapeHandle, status: *mut TF_Status, result: Result<ShapeValue, String>) {
    match result {
        Ok(v) => {
            // SAFETY: NULL or live, by the caller's contract.
            if let Some(out) = unsafe { out.as_mut() } {
                out.0 = v;
            }
            // SAFETY: as above.
            unsafe { report(status, TF_OK, "") }
        }
        // SAFETY: as above.
        Err(e) => unsafe { report(status, TF_INVALID_ARGUMENT, &e) },
    }
}

fn rank_of(s: &ShapeValue) -> i64 {
    match s {
        ShapeValue::Unknown => -1,
        ShapeValue::Dims(d) => d.len() as i64,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextNumInputs(ctx: *mut TF_ShapeInferenceContext) -> i64 {
    // SAFETY: NULL or live, by the contract.
    unsafe { context(ctx) }.map_or(0, |c| c.inputs.len() as i64)
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_NewShapeHandle() -> *mut TF_ShapeHandle {
    Box::into_raw(Box::new(TF_ShapeHandle(ShapeValue::Unknown)))
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_NewDimensionHandle() -> *mut TF_DimensionHandle {
    Box::into_raw(Box::new(TF_DimensionHandle(-1)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteShapeHandle(handle: *mut TF_ShapeHandle) {
    if !handle.is_null() {
        // SAFETY: a handle from `TF_NewShapeHandle` or `..VectorFromSize` (a Box), freed once.
        drop(unsafe { Box::from_raw(handle) });
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteDimensionHandle(handle: *mut TF_DimensionHandle) {
    if !handle.is_null() {
        // SAFETY: a handle from `TF_NewDimensionHandle` (a Box), freed once.
        drop(unsafe { Box::from_raw(handle) });
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextGetInput(
    ctx: *mut TF_ShapeInferenceContext,
    i: c_int,
    handle: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    let found =
        unsafe { context(ctx) }.map(|c| (usize::try_from(i).ok().and_then(|i| c.inputs.get(i)).cloned(), c));
    match found {
        // SAFETY: NULL or live, by the contract.
        Some((Some(s), _)) => unsafe { answer(handle, status, Ok(s)) },
        // SAFETY: as above.
        Some((None, c)) => unsafe {
            report(
                status,
                TF_OUT_OF_RANGE,
                &format!("input {i} of op '{}', which has {} inputs", c.op, c.inputs.len()),
            )
        },
        // SAFETY: as above.
        None => unsafe { report(status, TF_INVALID_ARGUMENT, "NULL shape inference context") },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextSetOutput(
    ctx: *mut TF_ShapeInferenceContext,
    i: c_int,
    handle: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    let Some(c) = (unsafe { context(ctx) }) else {
        // SAFETY: as above.
        return unsafe { report(status, TF_INVALID_ARGUMENT, "NULL shape inference context") };
    };
    // SAFETY: NULL or live, by the contract.
    let value = unsafe { shape(handle) }.clone();
    let n = c.outputs.len();
    match usize::try_from(i).ok().and_then(|i| c.outputs.get_mut(i)) {
        Some(slot) => {
            *slot = value;
            // SAFETY: as above.
            unsafe { report(status, TF_OK, "") }
        }
        // SAFETY: as above.
        None => unsafe {
            report(status, TF_OUT_OF_RANGE, &format!("output {i} of op '{}', which has {n} outputs", c.op))
        },
    }
}

/// `C-unwind` (the same calling convention as C) so that Rust code can pass it as a shape
/// function, as TensorFlow's C code does; it never unwinds.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn TF_ShapeInferenceContextSetUnknownShape(
    ctx: *mut TF_ShapeInferenceContext,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    if let Some(c) = unsafe { context(ctx) } {
        c.outputs.iter_mut().for_each(|o| *o = ShapeValue::Unknown);
    }
    // SAFETY: as above.
    unsafe { report(status, TF_OK, "") }
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_ShapeInferenceContextVectorFromSize(
    _ctx: *mut TF_ShapeInferenceContext,
    size: usize,
) -> *mut TF_ShapeHandle {
    Box::into_raw(Box::new(TF_ShapeHandle(ShapeValue::Dims(vec![i64::try_from(size).unwrap_or(-1)]))))
}

#[unsafe(no_mangle)]
pub extern "C" fn TF_ShapeInferenceContextScalar(_ctx: *mut TF_ShapeInferenceContext) -> *mut TF_ShapeHandle {
    Box::into_raw(Box::new(TF_ShapeHandle(ShapeValue::Dims(Vec::new()))))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContext_GetAttrType(
    ctx: *mut TF_ShapeInferenceContext,
    attr_name: *const c_char,
    val: *mut TF_DataType,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live / a C string, by the contract.
    let (c, name) = (unsafe { context(ctx) }, unsafe { text(attr_name) }.unwrap_or_default());
    let found = c.as_ref().and_then(|c| c.attrs.iter().find(|(n, _)| *n == name)).map(|(_, v)| v.clone());
    let op = c.map_or(String::new(), |c| c.op.clone());
    let result = match found {
        Some(AttrValue::Type(t)) => Ok(t),
        Some(_) => Err((
            TF_INVALID_ARGUMENT,
            format!("attr '{name}' of op '{op}' is not a {}", AttrKind::Type.name()),
        )),
        None => Err((TF_NOT_FOUND, format!("op '{op}' has no attr named '{name}'"))),
    };
    match result {
        Ok(t) => {
            // SAFETY: NULL or a writable TF_DataType, by the contract.
            if let Some(v) = unsafe { val.as_mut() } {
                *v = t;
            }
            // SAFETY: NULL or live, by the contract.
            unsafe { report(status, TF_OK, "") }
        }
        // SAFETY: as above.
        Err((code, m)) => unsafe { report(status, code, &m) },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextRank(
    _ctx: *mut TF_ShapeInferenceContext,
    handle: *mut TF_ShapeHandle,
) -> i64 {
    // SAFETY: NULL or live, by the contract.
    rank_of(unsafe { shape(handle) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextRankKnown(
    _ctx: *mut TF_ShapeInferenceContext,
    handle: *mut TF_ShapeHandle,
) -> c_int {
    // SAFETY: NULL or live, by the contract.
    c_int::from(matches!(unsafe { shape(handle) }, ShapeValue::Dims(_)))
}

/// The `WithRank*` family: `ok(rank)` says whether a known rank passes; `expected` names the
/// requirement in the message; `unknown` is the answer for an unknown rank.
///
/// # Safety
/// The handles and status are NULL or live.
unsafe fn with_rank(
    handle: *mut TF_ShapeHandle,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
    ok: impl Fn(i64) -> bool,
    expected: String,
    unknown: ShapeValue,
) {
    // SAFETY: NULL or live, by the caller's contract.
    let s = unsafe { shape(handle) }.clone();
    let r = match &s {
        ShapeValue::Unknown => Ok(unknown),
        ShapeValue::Dims(d) if ok(d.len() as i64) => Ok(s),
        ShapeValue::Dims(d) => Err(format!("Shape must be {expected} but is rank {}", d.len())),
    };
    // SAFETY: as above.
    unsafe { answer(result, status, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextWithRank(
    _ctx: *mut TF_ShapeInferenceContext,
    handle: *mut TF_ShapeHandle,
    rank: i64,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    let unknown =
        ShapeValue::Dims(vec![-1; usize::try_from(rank).unwrap_or(0).min(hostrt_core::tensor::MAX_RANK)]);
    // SAFETY: NULL or live, by the contract.
    unsafe { with_rank(handle, result, status, |r| r == rank, format!("rank {rank}"), unknown) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextWithRankAtLeast(
    _ctx: *mut TF_ShapeInferenceContext,
    handle: *mut TF_ShapeHandle,
    rank: i64,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    unsafe {
        with_rank(handle, result, status, |r| r >= rank, format!("at least rank {rank}"), ShapeValue::Unknown)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextWithRankAtMost(
    _ctx: *mut TF_ShapeInferenceContext,
    handle: *mut TF_ShapeHandle,
    rank: i64,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    unsafe {
        with_rank(handle, result, status, |r| r <= rank, format!("at most rank {rank}"), ShapeValue::Unknown)
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextDim(
    _ctx: *mut TF_ShapeInferenceContext,
    shape_handle: *mut TF_ShapeHandle,
    i: i64,
    result: *mut TF_DimensionHandle,
) {
    // SAFETY: NULL or live, by the contract.
    let dim = match unsafe { shape(shape_handle) } {
        ShapeValue::Dims(d) => {
            let at = if i < 0 { i + d.len() as i64 } else { i };
            usize::try_from(at).ok().and_then(|at| d.get(at)).copied().unwrap_or(-1)
        }
        ShapeValue::Unknown => -1,
    };
    // SAFETY: NULL or live, by the contract.
    if let Some(r) = unsafe { result.as_mut() } {
        r.0 = dim;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextSubshape(
    _ctx: *mut TF_ShapeInferenceContext,
    shape_handle: *mut TF_ShapeHandle,
    start: i64,
    end: i64,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    let r = match unsafe { shape(shape_handle) } {
        ShapeValue::Unknown => Ok(ShapeValue::Unknown),
        ShapeValue::Dims(d) => {
            let rank = d.len() as i64;
            let norm = |x: i64| if x < 0 { x + rank } else { x.min(rank) };
            let (s, e) = (norm(start), norm(end));
            if s < 0 {
                Err(format!("Subshape start out of bounds: {start}, for shape with rank {rank}"))
            } else if e < 0 {
                Err(format!("Subshape end out of bounds: {end}, for shape with rank {rank}"))
            } else if s > e {
                Err(format!(
                    "Subshape must have computed start <= end, but is {s} and {e} (computed from start {start} and end {end} over shape with rank {rank})"
                ))
            } else {
                Ok(ShapeValue::Dims(d[s as usize..e as usize].to_vec()))
            }
        }
    };
    // SAFETY: NULL or live, by the contract.
    unsafe { answer(result, status, r) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ShapeInferenceContextConcatenateShapes(
    _ctx: *mut TF_ShapeInferenceContext,
    first: *mut TF_ShapeHandle,
    second: *mut TF_ShapeHandle,
    result: *mut TF_ShapeHandle,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live, by the contract.
    let r = match (unsafe { shape(first) }, unsafe { shape(second) }) {
        (ShapeValue::Dims(a), ShapeValue::Dims(b)) => ShapeValue::Dims(a.iter().chain(b).copied().collect()),
        _ => ShapeValue::Unknown,
    };
    // SAFETY: NULL or live, by the contract.
    unsafe { answer(result, status, Ok(r)) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DimensionHandleValueKnown(dim_handle: *mut TF_DimensionHandle) -> c_int {
    // SAFETY: NULL or live, by the contract.
    c_int::from(unsafe { dim_handle.as_ref() }.is_some_and(|d| d.0 >= 0))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DimensionHandleValue(dim_handle: *mut TF_DimensionHandle) -> i64 {
    // SAFETY: NULL or live, by the contract.
    unsafe { dim_handle.as_ref() }.map_or(-1, |d| d.0)
}

#[cfg(test)]
mod tests;
