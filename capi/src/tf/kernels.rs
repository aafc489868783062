//! `kernels.h`: kernels written against TensorFlow's C API. A `TF_KernelBuilder` names an
//! op, a device type and the plugin's create / compute / delete functions; registration
//! puts it in a process-wide kernel registry. A [`KernelSite`] is one use of an op in a
//! program: it selects a kernel (op, device, type constraints, label, priority, as
//! TensorFlow does), checks and completes the attrs, calls `create` once, `compute` per
//! execution, and `delete` when dropped.
//!
//! The construction-time calls (`TF_OpKernelConstruction_*`) are in [`construction`], the
//! execution-time calls (`TF_GetInput`, `TF_AllocateOutput`, ...) in [`context`].

pub mod construction;
pub mod context;
#[cfg(feature = "vulkan")]
pub mod device_stream;
pub mod threads;

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, RwLock};

use hostrt_core::allocator::Allocator;
use hostrt_core::tensor::DenseHostTensor;

pub use construction::TF_OpKernelConstruction;
pub use context::TF_OpKernelContext;

use crate::tf::tf_datatype::TF_DataType;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::ffi::{guard, text};
use crate::tf::op_def::{self, ArgType, AttrValue, OpDef};
use crate::tf::ops::lookup;
use crate::tf::tf_status::{
    TF_ALREADY_EXISTS, TF_Code, TF_INTERNAL, TF_INVALID_ARGUMENT, TF_NOT_FOUND, TF_OK, TF_Status,
    TF_UNIMPLEMENTED, report,
};
use crate::tf::tf_tensor::TF_Tensor;

// The plugin's functions are called through the `C-unwind` ABI (the same calling
// convention as C's): a panic of a Rust plugin that declares them `extern "C-unwind"`
// reaches hostrt, which turns it into an error (docs/capi.md).

/// `create_func`: makes the kernel's state from its construction context.
pub type CreateFn = unsafe extern "C-unwind" fn(ctx: *mut TF_OpKernelConstruction) -> *mut c_void;
/// `compute_func`: runs the kernel.
pub type ComputeFn = unsafe extern "C-unwind" fn(kernel: *mut c_void, ctx: *mut TF_OpKernelContext);
/// `delete_func`: frees the state.
pub type DeleteFn = unsafe extern "C-unwind" fn(kernel: *mut c_void);

/// A registered kernel.
#[derive(Debug, Clone)]
pub struct RegisteredKernel {
    /// The name it was registered under.
    pub name: String,
    /// The op it implements.
    pub op: String,
    /// The device type (`CPU`, or a plugin's device type: hostrt runs it on the host).
    pub device: String,
    /// `create_func`, if any.
    pub create: Option<CreateFn>,
    /// `compute_func`.
    pub compute: ComputeFn,
    /// `delete_func`, if any.
    pub delete: Option<DeleteFn>,
    /// `TypeConstraint`s: each attr must hold that type.
    pub constraints: Vec<(String, TF_DataType)>,
    /// `HostMemory` args (every hostrt tensor is in host memory).
    pub host_memory: Vec<String>,
    /// `Priority`: the higher wins among matching kernels.
    pub priority: i32,
    /// `Label`: chosen only by a program that asks for it (attr `_kernel`).
    pub label: String,
}

static KERNELS: RwLock<Vec<Arc<RegisteredKernel>>> = RwLock::new(Vec::new());

/// Every kernel registered for `op`.
pub fn kernels_for(op: &str) -> Vec<Arc<RegisteredKernel>> {
    KERNELS.read().unwrap_or_else(|e| e.into_inner()).iter().filter(|k| k.op == op).cloned().collect()
}

/// A kernel being built (opaque to C). Registration copies it into the registry and keeps
/// the allocation, marked registered, so that a later `TF_DeleteKernelBuilder` on it (which
/// TensorFlow's own tests do) is harmless.
#[derive(Debug)]
pub struct TF_KernelBuilder {
    kernel: Option<RegisteredKernel>,
    error: Option<String>,
    registered: bool,
}

/// Registered builders stay allocated for the process (see [`TF_KernelBuilder`]); this list
/// holds them, so they are kept on purpose rather than lost.
fn keep(builder: *mut TF_KernelBuilder) {
    static KEPT: Mutex<Vec<usize>> = Mutex::new(Vec::new());
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(builder as usize);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NewKernelBuilder(
    op_name: *const c_char,
    device_name: *const c_char,
    create_func: Option<unsafe extern "C-unwind" fn(ctx: *mut TF_OpKernelConstruction) -> *mut c_void>,
    compute_func: Option<unsafe extern "C-unwind" fn(kernel: *mut c_void, ctx: *mut TF_OpKernelContext)>,
    delete_func: Option<unsafe extern "C-unwind" fn(kernel: *mut c_void)>,
) -> *mut TF_KernelBuilder {
    guard(std::ptr::null_mut(), || {
        // SAFETY: C strings or NULL, by the contract.
        let (op, device) = unsafe { (text(op_name), text(device_name)) };
        let error = match (&op, &device, compute_func) {
            (None, _, _) => Some("TF_NewKernelBuilder: NULL op name".to_owned()),
            (_, None, _) => Some("TF_NewKernelBuilder: NULL device name".to_owned()),
            (_, _, None) => Some("TF_NewKernelBuilder: NULL compute function".to_owned()),
            _ => None,
        };
        let kernel = compute_func.map(|compute| RegisteredKernel {
            name: String::new(),
            op: op.unwrap_or_default().into_owned(),
            device: device.unwrap_or_default().into_owned(),
            create: create_func,
            compute,
            delete: delete_func,
            constraints: Vec::new(),
            host_memory: Vec::new(),
            priority: 0,
            label: String::new(),
        });
        Box::into_raw(Box::new(TF_KernelBuilder { kernel, error, registered: false }))
    })
}

/// The unregistered builder behind `b`, if any.
///
/// # Safety
/// `b` is NULL or a live builder.
unsafe fn builder<'a>(b: *mut TF_KernelBuilder) -> Option<&'a mut TF_KernelBuilder> {
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { b.as_mut() }.filter(|b| !b.registered)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_KernelBuilder_TypeConstraint(
    kernel_builder: *mut TF_KernelBuilder,
    attr_name: *const c_char,
    type_: TF_DataType,
    status: *mut TF_Status,
) {
    // SAFETY: NULL or live / a C string, by the contract.
    let (b, name) = unsafe { (builder(kernel_builder), text(attr_name)) };
    let r = match (b.and_then(|b| b.kernel.as_mut()), name) {
        (Some(k), Some(name))
            if crate::tf::tf_datatype::size(type_) > 0 || type_ == crate::tf::tf_datatype::TF_STRING =>
        {
            k.constraints.push((name.into_owned(), type_));
            Ok(())
        }
        (Some(_), Some(_)) => Err(format!("TF_KernelBuilder_TypeConstraint: {type_} is no TF_DataType")),
        _ => Err("TF_KernelBuilder_TypeConstraint: NULL builder or attr name".to_owned()),
    };
    let (code, m) = r.err().map_or((TF_OK, String::new()), |m| (TF_INVALID_ARGUMENT, m));
    // SAFETY: NULL or live, by the contract.
    unsafe { report(status, code, &m) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_KernelBuilder_HostMemory(
    kernel_builder: *mut TF_KernelBuilder,
    arg_name: *const c_char,
) {
    // SAFETY: NULL or live / a C string, by the contract.
    let found = unsafe { (builder(kernel_builder).and_then(|b| b.kernel.as_mut()), text(arg_name)) };
    if let (Some(k), Some(name)) = found {
        k.host_memory.push(name.into_owned());
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_KernelBuilder_Priority(
    kernel_builder: *mut TF_KernelBuilder,
    priority_number: i32,
) {
    // SAFETY: NULL or live, by the contract.
    if let Some(k) = unsafe { builder(kernel_builder) }.and_then(|b| b.kernel.as_mut()) {
        k.priority = priority_number;
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_KernelBuilder_Label(kernel_builder: *mut TF_KernelBuilder, label: *const c_char) {
    // SAFETY: NULL or live / a C string, by the contract.
    let found = unsafe { (builder(kernel_builder).and_then(|b| b.kernel.as_mut()), text(label)) };
    if let (Some(k), Some(label)) = found {
        k.label = label.into_owned();
    }
}

/// Adds a built kernel to the registry; `TF_ALREADY_EXISTS` for one with the same op,
/// device, constraints and label.
pub fn register_kernel(kernel: RegisteredKernel) -> Result<(), (TF_Code, String)> {
    let mut all = KERNELS.write().unwrap_or_else(|e| e.into_inner());
    let mut sorted = kernel.constraints.clone();
    sorted.sort();
    let same = |k: &RegisteredKernel| {
        let mut c = k.constraints.clone();
        c.sort();
        k.op == kernel.op && k.device == kernel.device && k.label == kernel.label && c == sorted
    };
    if all.iter().any(|k| same(k)) {
        return Err((
            TF_ALREADY_EXISTS,
            format!(
                "a kernel for op '{}' on device '{}' with the same constraints is already registered",
                kernel.op, kernel.device
            ),
        ));
    }
    all.push(Arc::new(kernel));
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_RegisterKernelBuilder(
    kernel_name: *const c_char,
    builder: *mut TF_KernelBuilder,
    status: *mut TF_Status,
) {
    let r = guard(Err((TF_INTERNAL, "TF_RegisterKernelBuilder panicked".to_owned())), || {
        // SAFETY: NULL or live, by the contract.
        let Some(b) = (unsafe { self::builder(builder) }) else {
            return Err((
                TF_INVALID_ARGUMENT,
                "TF_RegisterKernelBuilder: NULL or already registered builder".to_owned(),
            ));
        };
        b.registered = true;
        keep(builder);
        if let Some(e) = b.error.take() {
            return Err((TF_INVALID_ARGUMENT, e));
        }
        let mut kernel = b
            .kernel
            .take()
            .ok_or((TF_INVALID_ARGUMENT, "TF_RegisterKernelBuilder: empty builder".to_owned()))?;
        // SAFETY: a C string or NULL, by the contract.
        kernel.name = unsafe { text(kernel_name) }.unwrap_or_default().into_owned();
        register_kernel(kernel)
    });
    let (code, m) = r.err().unwrap_or((TF_OK, String::new()));
    crate::tf::plugins::registration_log::note(if code == TF_OK { Ok(()) } else { Err(&m) });
    // SAFETY: NULL or live, by the contract.
    unsafe { report(status, code, &m) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_RegisterKernelBuilderWithKernelDef(
    serialized_kernel_def: *const c_char,
    name: *const c_char,
    builder: *mut TF_KernelBuilder,
    status: *mut TF_Status,
) {
    if serialized_kernel_def.is_null() {
        // SAFETY: the caller's contract, passed on.
        return unsafe { TF_RegisterKernelBuilder(name, builder, status) };
    }
    // SAFETY: NULL or live, by the contract: consumed (marked registered) either way.
    if let Some(b) = unsafe { self::builder(builder) } {
        b.registered = true;
        b.kernel = None;
        keep(builder);
    }
    // SAFETY: NULL or live, by the contract.
    unsafe {
        report(
            status,
            TF_UNIMPLEMENTED,
            "TF_RegisterKernelBuilderWithKernelDef: serialized KernelDef protos are not supported by hostrt; pass NULL",
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_DeleteKernelBuilder(builder: *mut TF_KernelBuilder) {
    // SAFETY: NULL or live, by the contract. A registered builder stays allocated (see
    // `TF_KernelBuilder`), so deleting it is ignored.
    if let Some(b) = unsafe { builder.as_mut() }
        && !b.registered
    {
        // SAFETY: an unregistered builder from `TF_NewKernelBuilder` (a Box), freed once.
        drop(unsafe { Box::from_raw(builder) });
    }
}

// ---- kernel sites ----

/// Why a kernel site cannot be made or run: a code and a message.
pub type KernelError = (TF_Code, String);

/// The op's attrs completed: the given ones, type attrs inferred from input dtypes, then
/// defaults; each checked against the definition.
fn complete_attrs(
    op: &OpDef,
    mut attrs: Vec<(String, AttrValue)>,
    input_types: Option<&[TF_DataType]>,
) -> Result<Vec<(String, AttrValue)>, KernelError> {
    let bad = |m: String| (TF_INVALID_ARGUMENT, m);
    if let Some(types) = input_types {
        let mut at = 0;
        for arg in &op.inputs {
            let n = count(arg.number_attr.as_deref(), &attrs).unwrap_or(1);
            if let ArgType::Attr(t) = &arg.ty
                && !attrs.iter().any(|(a, _)| a == t)
                && let Some(dt) = types.get(at)
            {
                attrs.push((t.clone(), AttrValue::Type(*dt)));
            }
            at += n;
        }
    }
    for a in &op.attrs {
        if !attrs.iter().any(|(n, _)| *n == a.name) {
            match &a.default {
                Some(d) => attrs.push((a.name.clone(), d.clone())),
                None => {
                    return Err(bad(format!(
                        "op '{}' needs attr '{}', which has no default",
                        op.name, a.name
                    )));
                }
            }
        }
    }
    for (name, value) in &attrs {
        if name == "_kernel" && !matches!(value, AttrValue::S(_)) {
            return Err(bad(format!(
                "attr '_kernel' (the kernel label) of op '{}' must be a string",
                op.name
            )));
        }
        if name.starts_with('_') {
            continue;
        }
        let def = op
            .attrs
            .iter()
            .find(|a| a.name == *name)
            .ok_or_else(|| bad(format!("op '{}' has no attr '{name}'", op.name)))?;
        op_def::check_value(def, value).map_err(|e| bad(format!("op '{}': {e}", op.name)))?;
    }
    Ok(attrs)
}

/// The value of int attr `name`, if given.
fn count(name: Option<&str>, attrs: &[(String, AttrValue)]) -> Option<usize> {
    let name = name?;
    attrs
        .iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| if let AttrValue::I(i) = v { usize::try_from(*i).ok() } else { None })
}

/// Dtypes, one per tensor, and the (arg name, start, stop) ranges of the args.
type Expanded = (Vec<TF_DataType>, Vec<(String, usize, usize)>);

/// The dtypes of `args` expanded (N * T gives N tensors, a list(type) one per item), and
/// the (name, start, stop) range each arg covers.
fn expand(args: &[op_def::ArgDef], attrs: &[(String, AttrValue)]) -> Result<Expanded, KernelError> {
    let attr = |n: &str| attrs.iter().find(|(a, _)| a == n).map(|(_, v)| v);
    let (mut types, mut ranges) = (Vec::new(), Vec::new());
    for arg in args {
        let start = types.len();
        let one: Vec<TF_DataType> = match &arg.ty {
            ArgType::Fixed(t) => vec![*t],
            ArgType::Attr(t) => match attr(t) {
                Some(AttrValue::Type(dt)) => vec![*dt],
                _ => return Err((TF_INVALID_ARGUMENT, format!("type attr '{t}' is not set"))),
            },
            ArgType::List(t) => match attr(t) {
                Some(AttrValue::List(items)) => items
                    .iter()
                    .filter_map(|v| if let AttrValue::Type(dt) = v { Some(*dt) } else { None })
                    .collect(),
                _ => return Err((TF_INVALID_ARGUMENT, format!("type list attr '{t}' is not set"))),
            },
        };
        let n = match &arg.number_attr {
            Some(n) => count(Some(n), attrs)
                .ok_or_else(|| (TF_INVALID_ARGUMENT, format!("int attr '{n}' is not set")))?,
            None => 1,
        };
        for _ in 0..n {
            types.extend_from_slice(&one);
        }
        ranges.push((arg.name.clone(), start, types.len()));
    }
    Ok((types, ranges))
}

/// Picks the kernel for `op` with these attrs: device `device` if given (else `CPU` first,
/// then any other device type, which hostrt runs on the host), every type constraint met,
/// the label the program asks for (attr `_kernel`, "" by default), highest priority.
pub fn select(
    op: &str,
    device: Option<&str>,
    attrs: &[(String, AttrValue)],
) -> Result<Arc<RegisteredKernel>, KernelError> {
    let label = match attrs.iter().find(|(n, _)| n == "_kernel") {
        Some((_, AttrValue::S(s))) => s.as_str(),
        _ => "",
    };
    let fits = |k: &RegisteredKernel| {
        k.label == label
            && device.is_none_or(|d| k.device == d)
            && k.constraints
                .iter()
                .all(|(a, t)| attrs.iter().any(|(n, v)| n == a && *v == AttrValue::Type(*t)))
    };
    let mut found: Vec<Arc<RegisteredKernel>> = kernels_for(op).into_iter().filter(|k| fits(k)).collect();
    if found.is_empty() {
        let types: Vec<String> = attrs
            .iter()
            .filter_map(|(n, v)| {
                if let AttrValue::Type(t) = v {
                    Some(format!("{n}={}", op_def::dtype_name(*t)))
                } else {
                    None
                }
            })
            .collect();
        return Err((
            TF_NOT_FOUND,
            format!(
                "no kernel registered for op '{op}'{} with {{{}}}",
                device.map(|d| format!(" on device '{d}'")).unwrap_or_default(),
                types.join(", ")
            ),
        ));
    }
    // CPU kernels first, then by priority.
    found.sort_by_key(|k| (k.device != "CPU", -k.priority));
    let best = (found[0].device == "CPU", found[0].priority);
    if found.iter().skip(1).any(|k| (k.device == "CPU", k.priority) == best) {
        return Err((
            TF_INVALID_ARGUMENT,
            format!("several kernels for op '{op}' match equally; give them priorities or labels"),
        ));
    }
    Ok(found.swap_remove(0))
}

/// One use of an op: its kernel, attrs and state, made once and run many times.
#[derive(Debug)]
pub struct KernelSite {
    kernel: Arc<RegisteredKernel>,
    state: *mut c_void,
    name: String,
    attrs: Vec<(String, AttrValue)>,
    input_types: Vec<TF_DataType>,
    input_ranges: Vec<(String, usize, usize)>,
    output_types: Vec<TF_DataType>,
    /// Whether `state` is live (created and not yet handed to `delete`).
    live: bool,
    /// The name of each input (its arg, with `:k` for the k-th of a list), for
    /// `TF_GetOpKernelRequestedInput`.
    pub(crate) requested: Vec<std::ffi::CString>,
}

// SAFETY: the state belongs to this site; TensorFlow kernels must allow `compute` from any
// thread (an OpKernel is shared across steps), and `delete` runs once, on drop.
unsafe impl Send for KernelSite {}
// SAFETY: as above: concurrent `compute` calls on one kernel are TensorFlow's contract too.
unsafe impl Sync for KernelSite {}

impl KernelSite {
    /// Selects and creates the kernel for a use of `op` named `name`, with `attrs` (type
    /// attrs may be left for `input_types` to infer) on `device` (any, if `None`).
    pub fn new(
        op: &str,
        name: &str,
        device: Option<&str>,
        attrs: Vec<(String, AttrValue)>,
        input_types: Option<&[TF_DataType]>,
    ) -> Result<Self, KernelError> {
        let def = lookup(op).ok_or_else(|| (TF_NOT_FOUND, format!("no op named '{op}' is registered")))?.def;
        let attrs = complete_attrs(&def, attrs, input_types)?;
        let kernel = select(op, device, &attrs)?;
        let (input_types, input_ranges) = expand(&def.inputs, &attrs)?;
        let (output_types, _) = expand(&def.outputs, &attrs)?;
        let mut site = KernelSite {
            kernel,
            state: std::ptr::null_mut(),
            name: name.to_owned(),
            attrs,
            input_types,
            input_ranges,
            output_types,
            live: true,
            requested: Vec::new(),
        };
        site.requested = site
            .input_ranges
            .iter()
            .flat_map(|(n, s, e)| {
                (*s..*e).map(move |i| if e - s == 1 { n.clone() } else { format!("{n}:{}", i - s) })
            })
            .map(|n| std::ffi::CString::new(n).unwrap_or_default())
            .collect();
        if let Some(create) = site.kernel.create {
            let mut ctx = TF_OpKernelConstruction::new(&site.name, op, &site.attrs);
            // SAFETY: the plugin's create function with a construction context that lives
            // for the call, as kernels.h says.
            let created = catch_unwind(AssertUnwindSafe(|| unsafe { create(&mut ctx) }));
            let Ok(state) = created else {
                // Its state is unknown: delete is not called.
                site.live = false;
                return Err((
                    TF_INTERNAL,
                    format!("creating kernel '{}' for op '{op}': it panicked", site.name),
                ));
            };
            site.state = state;
            if let Some((code, m)) = ctx.failure() {
                // Dropping the site hands whatever create returned to delete.
                return Err((code, format!("creating kernel '{}' for op '{op}': {m}", site.name)));
            }
        }
        Ok(site)
    }

    /// The dtypes the op's inputs must have.
    pub fn input_types(&self) -> &[TF_DataType] {
        &self.input_types
    }

    /// The attrs, completed with defaults and inferred types.
    pub fn attrs(&self) -> &[(String, AttrValue)] {
        &self.attrs
    }

    /// The dtypes of the outputs.
    pub fn output_types(&self) -> &[TF_DataType] {
        &self.output_types
    }

    /// The kernel chosen.
    pub fn kernel(&self) -> &RegisteredKernel {
        &self.kernel
    }

    /// Runs the kernel on `inputs` (tensors whose buffer no one else holds may be forwarded
    /// to outputs), allocating outputs and temporaries from `alloc`, with no work queue (the
    /// thread-pool calls run inline).
    pub fn compute(
        &self,
        inputs: Vec<TF_Tensor>,
        alloc: Allocator,
        step_id: i64,
    ) -> Result<Vec<TF_Tensor>, KernelError> {
        self.compute_on(inputs, alloc, step_id, None)
    }

    /// [`compute`](Self::compute) with `host`'s work queue for the thread-pool calls.
    pub fn compute_on(
        &self,
        inputs: Vec<TF_Tensor>,
        alloc: Allocator,
        step_id: i64,
        host: Option<&hostrt_core::HostContext<'_>>,
    ) -> Result<Vec<TF_Tensor>, KernelError> {
        let op = &self.kernel.op;
        if inputs.len() != self.input_types.len() {
            return Err((
                TF_INVALID_ARGUMENT,
                format!("op '{op}' takes {} inputs, got {}", self.input_types.len(), inputs.len()),
            ));
        }
        for (i, (t, want)) in inputs.iter().zip(&self.input_types).enumerate() {
            if t.dtype() != *want {
                return Err((
                    TF_INVALID_ARGUMENT,
                    format!(
                        "input {i} of op '{op}' must be {}, got {}",
                        op_def::dtype_name(*want),
                        op_def::dtype_name(t.dtype())
                    ),
                ));
            }
        }
        let mut ctx = TF_OpKernelContext::new(self, inputs, alloc, step_id);
        let c: *mut TF_OpKernelContext = &mut ctx;
        let ran = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: the plugin's compute function with the state its create returned and a
            // context that lives for the call, as kernels.h says.
            threads::with_current(c, host, || unsafe { (self.kernel.compute)(self.state, c) })
        }));
        if ran.is_err() {
            return Err((TF_INTERNAL, format!("kernel '{}' for op '{op}': it panicked", self.name)));
        }
        ctx.finish().map_err(|(code, m)| (code, format!("kernel '{}' for op '{op}': {m}", self.name)))
    }
}

impl Drop for KernelSite {
    fn drop(&mut self) {
        if let (true, Some(delete)) = (std::mem::take(&mut self.live), self.kernel.delete) {
            // SAFETY: the state `create` returned (or NULL without one), handed back once. A
            // panic leaves the state to the plugin: nothing of hostrt's is left half done.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe { delete(self.state) }));
        }
    }
}

/// Inputs handed to a kernel as tensors, for callers that hold dense tensors.
pub fn tensors(inputs: Vec<DenseHostTensor>) -> Vec<TF_Tensor> {
    inputs.into_iter().map(TF_Tensor::from_dense).collect()
}

#[cfg(test)]
mod tests;
