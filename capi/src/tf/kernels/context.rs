//! `TF_OpKernelContext`: what a kernel's compute function sees (inputs, output slots, the
//! allocator of the run) and the `kernels.h` calls on it. Misuse is a status: an index out
//! of range, an output of the wrong dtype or set twice, an allocation larger than the arena.

use std::ffi::{c_char, c_int, c_void};

use hostrt_core::allocator::Allocator;
use hostrt_core::tensor::{DenseHostTensor, TensorError};

use super::{KernelError, KernelSite};
use crate::ffi::{slice, text};
use crate::tf::c_api::{TF_Buffer, TF_StringView};
use crate::tf::op_def::dtype_name;
use crate::tf::tf_datatype::TF_DataType;
use crate::tf::tf_status::{
    TF_Code, TF_FAILED_PRECONDITION, TF_INTERNAL, TF_INVALID_ARGUMENT, TF_OK, TF_OUT_OF_RANGE,
    TF_RESOURCE_EXHAUSTED, TF_Status, TF_UNIMPLEMENTED, report,
};
use crate::tf::tf_tensor::{TF_AllocatorAttributes, TF_Tensor, metadata};

/// The stream type of `stream_executor.h` (opaque).
#[repr(C)]
#[derive(Debug)]
pub struct SP_Stream_st {
    _private: [u8; 0],
}

/// A device stream handle; hostrt's host kernels have none.
pub type SP_Stream = *mut SP_Stream_st;

/// `TF_InputRange`'s arguments and results (a plain C struct).
#[repr(C)]
#[derive(Debug)]
pub struct TF_InputRange_Args {
    /// `TF_InputRange_Args_STRUCT_SIZE`.
    pub struct_size: usize,
    /// Unused.
    pub r#priv: *mut c_void,
    /// First input of the arg (output).
    pub start: c_int,
    /// One past its last input (output).
    pub stop: c_int,
    /// The outcome (output).
    pub status: *mut TF_Status,
}

/// A kernel execution (opaque to C).
#[derive(Debug)]
pub struct TF_OpKernelContext {
    site: *const KernelSite,
    inputs: Vec<TF_Tensor>,
    outputs: Vec<Option<TF_Tensor>>,
    alloc: Allocator,
    step_id: i64,
    pub(crate) failure: Option<(TF_Code, String)>,
}

impl TF_OpKernelContext {
    pub(crate) fn new(site: &KernelSite, inputs: Vec<TF_Tensor>, alloc: Allocator, step_id: i64) -> Self {
        TF_OpKernelContext {
            site,
            outputs: vec![None; site.output_types.len()],
            inputs,
            alloc,
            step_id,
            failure: None,
        }
    }

    fn site(&self) -> &KernelSite {
        // SAFETY: the context lives only during `KernelSite::compute`, which borrows the site.
        unsafe { &*self.site }
    }

    /// The outputs, or the failure the kernel reported, or which output it did not set.
    pub(crate) fn finish(self) -> Result<Vec<TF_Tensor>, KernelError> {
        if let Some(f) = self.failure {
            return Err(f);
        }
        self.outputs
            .into_iter()
            .enumerate()
            .map(|(i, o)| o.ok_or((TF_INTERNAL, format!("output {i} was not set"))))
            .collect()
    }

    /// A new tensor from the run's allocator.
    fn allocate(
        &self,
        dtype: TF_DataType,
        dims: *const i64,
        num_dims: c_int,
    ) -> Result<TF_Tensor, KernelError> {
        // SAFETY: `num_dims` dims at `dims`, by the C caller's contract.
        let meta = unsafe { metadata(dtype, dims, num_dims) }.ok_or((
            TF_INVALID_ARGUMENT,
            format!("invalid dims or dtype {} for a tensor", dtype_name(dtype)),
        ))?;
        let shape = meta.shape.clone();
        match DenseHostTensor::new(self.alloc, meta) {
            Ok(t) => Ok(TF_Tensor::with_dtype(dtype, t)),
            Err(TensorError::CannotAllocate) => Err((
                TF_RESOURCE_EXHAUSTED,
                format!("OOM when allocating tensor with shape {shape} and type {}", dtype_name(dtype)),
            )),
            Err(e) => Err((TF_INVALID_ARGUMENT, e.to_string())),
        }
    }

    /// Puts `t` in output `index` after checking the index, the dtype, and that the slot is
    /// free (or already holds these bytes).
    fn set_output(&mut self, index: c_int, t: TF_Tensor) -> Result<(), KernelError> {
        let n = self.outputs.len();
        let i = usize::try_from(index)
            .ok()
            .filter(|i| *i < n)
            .ok_or((TF_OUT_OF_RANGE, format!("output index {index} is out of range ({n} outputs)")))?;
        let want = self.site().output_types[i];
        if t.dtype() != want {
            return Err((
                TF_INVALID_ARGUMENT,
                format!("output {i} must be {}, got {}", dtype_name(want), dtype_name(t.dtype())),
            ));
        }
        if let Some(old) = &self.outputs[i] {
            let same = old.dense().buffer().shares_block_with(t.dense().buffer())
                && old.dense().buffer().addr() == t.dense().buffer().addr()
                && old.dense().shape() == t.dense().shape();
            if !same {
                return Err((TF_FAILED_PRECONDITION, format!("output {i} is already set")));
            }
        }
        self.outputs[i] = Some(t);
        Ok(())
    }
}

/// Runs `f` on the context behind `ctx` and reports to `status`; returns `f`'s value or
/// `default`.
///
/// # Safety
/// `ctx` and `status` are NULL or live.
unsafe fn with<R>(
    ctx: *mut TF_OpKernelContext,
    status: *mut TF_Status,
    default: R,
    f: impl FnOnce(&mut TF_OpKernelContext) -> Result<R, KernelError>,
) -> R {
    // SAFETY: NULL or live, by the caller's contract.
    let r = match unsafe { ctx.as_mut() } {
        Some(c) => {
            crate::ffi::guard(Err((TF_INTERNAL, "a kernel context call panicked".to_owned())), || f(c))
        }
        None => Err((TF_INVALID_ARGUMENT, "NULL kernel context".to_owned())),
    };
    let (code, m, v) = match r {
        Ok(v) => (TF_OK, String::new(), v),
        Err((code, m)) => (code, m, default),
    };
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { report(status, code, &m) };
    v
}

/// The device stream of the kernel's device: for a kernel registered on device type
/// `VULKAN`, a `hostrt_vk_stream*` (`hostrt/hostrt_vulkan.h`) in builds with the `vulkan`
/// feature; NULL with `TF_UNAVAILABLE` where no Vulkan device opens, and with
/// `TF_UNIMPLEMENTED` for kernels of other device types (hostrt runs them on the host).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetStream(ctx: *mut TF_OpKernelContext, status: *mut TF_Status) -> SP_Stream {
    // SAFETY: the caller's contract, passed on.
    unsafe { with(ctx, status, std::ptr::null_mut(), |c| device_stream(&c.site().kernel.device)) }
}

#[cfg(feature = "vulkan")]
fn device_stream(device: &str) -> Result<SP_Stream, KernelError> {
    super::device_stream::stream_for(device).map(|s| s.cast_mut().cast::<SP_Stream_st>())
}

#[cfg(not(feature = "vulkan"))]
fn device_stream(device: &str) -> Result<SP_Stream, KernelError> {
    Err((
        TF_UNIMPLEMENTED,
        format!(
            "TF_GetStream: the kernel is registered for device '{device}'; this hostrt is built without device \
             streams (feature `vulkan`), so it runs every kernel on the host"
        ),
    ))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NumInputs(ctx: *mut TF_OpKernelContext) -> c_int {
    // SAFETY: NULL or live, by the contract.
    unsafe { ctx.as_ref() }.map_or(0, |c| c.inputs.len() as c_int)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_NumOutputs(ctx: *mut TF_OpKernelContext) -> c_int {
    // SAFETY: NULL or live, by the contract.
    unsafe { ctx.as_ref() }.map_or(0, |c| c.outputs.len() as c_int)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetInput(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    tensor: *mut *mut TF_Tensor,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on; `tensor` is NULL or writable.
    unsafe {
        with(ctx, status, (), |c| {
            let n = c.inputs.len();
            let t = usize::try_from(i)
                .ok()
                .and_then(|i| c.inputs.get(i))
                .ok_or((TF_OUT_OF_RANGE, format!("input index {i} is out of range ({n} inputs)")))?;
            if !tensor.is_null() {
                tensor.write(Box::into_raw(Box::new(t.clone())));
            }
            Ok(())
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_InputRange(
    ctx: *mut TF_OpKernelContext,
    name: *const c_char,
    args: *mut TF_InputRange_Args,
) {
    // SAFETY: NULL or live, by the contract.
    let Some(args) = (unsafe { args.as_mut() }) else { return };
    // SAFETY: a C string or NULL, by the contract.
    let name = unsafe { text(name) }.unwrap_or_default().into_owned();
    let mut range = (-1, -1);
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with(ctx, args.status, (), |c| {
            let (_, s, e) = c.site().input_ranges.iter().find(|(n, _, _)| *n == name).ok_or((
                TF_INVALID_ARGUMENT,
                format!("op '{}' has no input named '{name}'", c.site().kernel.op),
            ))?;
            range = (*s as c_int, *e as c_int);
            Ok(())
        })
    };
    (args.start, args.stop) = range;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_SetOutput(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    tensor: *const TF_Tensor,
    status: *mut TF_Status,
) {
    // SAFETY: the caller's contract, passed on; `tensor` is NULL or live.
    unsafe {
        with(ctx, status, (), |c| {
            let t = tensor.as_ref().ok_or((TF_INVALID_ARGUMENT, "TF_SetOutput: NULL tensor".to_owned()))?;
            c.set_output(i, t.clone())
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_OpKernelContext_Failure(ctx: *mut TF_OpKernelContext, status: *mut TF_Status) {
    // SAFETY: NULL or live, by the contract.
    if let (Some(c), Some(s)) = unsafe { (ctx.as_mut(), status.as_ref()) }
        && s.code() != TF_OK
    {
        c.failure.get_or_insert((s.code(), s.message().to_owned()));
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ExpectedOutputDataType(ctx: *mut TF_OpKernelContext, i: c_int) -> TF_DataType {
    // SAFETY: NULL or live, by the contract.
    let c = unsafe { ctx.as_ref() };
    c.and_then(|c| c.site().output_types.get(usize::try_from(i).ok()?).copied()).unwrap_or(0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_StepId(ctx: *mut TF_OpKernelContext) -> i64 {
    // SAFETY: NULL or live, by the contract.
    unsafe { ctx.as_ref() }.map_or(0, |c| c.step_id)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetOpKernelName(ctx: *mut TF_OpKernelContext) -> TF_StringView {
    // SAFETY: NULL or live, by the contract; the name lives with the site.
    match unsafe { ctx.as_ref() } {
        Some(c) => TF_StringView { data: c.site().name.as_ptr().cast(), len: c.site().name.len() },
        None => TF_StringView { data: c"".as_ptr(), len: 0 },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetOpKernelRequestedInput(
    ctx: *mut TF_OpKernelContext,
    index: usize,
) -> TF_StringView {
    // SAFETY: NULL or live, by the contract; the names live with the context.
    let name = unsafe { ctx.as_ref() }.and_then(|c| c.site().requested.get(index));
    match name {
        Some(n) => TF_StringView { data: n.as_ptr(), len: n.as_bytes().len() },
        None => TF_StringView { data: c"".as_ptr(), len: 0 },
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetMutableOutput(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    status: *mut TF_Status,
) -> *mut TF_Tensor {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with(ctx, status, std::ptr::null_mut(), |c| {
            let n = c.outputs.len();
            let slot = usize::try_from(i)
                .ok()
                .and_then(|i| c.outputs.get(i))
                .ok_or((TF_OUT_OF_RANGE, format!("output index {i} is out of range ({n} outputs)")))?;
            let t = slot.as_ref().ok_or((TF_FAILED_PRECONDITION, format!("output {i} is not set yet")))?;
            Ok(Box::into_raw(Box::new(t.clone())))
        })
    }
}

/// TF_UNIMPLEMENTED for the session protos hostrt does not have.
///
/// # Safety
/// `status` is NULL or live.
unsafe fn no_proto(status: *mut TF_Status, what: &str) {
    // SAFETY: by the caller's contract.
    unsafe { report(status, TF_UNIMPLEMENTED, &format!("hostrt runs no TensorFlow session: no {what}")) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetSerializedFunctionDefLibrary(
    ctx: *mut TF_OpKernelContext,
    serialized_function_def_library: *mut TF_Buffer,
    status: *mut TF_Status,
) {
    let _ = (ctx, serialized_function_def_library);
    // SAFETY: the caller's contract, passed on.
    unsafe { no_proto(status, "FunctionDefLibrary") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetSerializedConfigProto(
    ctx: *mut TF_OpKernelContext,
    serialized_config_proto: *mut TF_Buffer,
    status: *mut TF_Status,
) {
    let _ = (ctx, serialized_config_proto);
    // SAFETY: the caller's contract, passed on.
    unsafe { no_proto(status, "ConfigProto") }
}

/// Whether `i` indexes one of `n` inputs or outputs; TF_OUT_OF_RANGE otherwise.
///
/// # Safety
/// `ctx` and `status` are NULL or live.
unsafe fn host_memory(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    status: *mut TF_Status,
    count: fn(&TF_OpKernelContext) -> usize,
    what: &str,
) -> bool {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with(ctx, status, false, |c| {
            let n = count(c);
            usize::try_from(i)
                .ok()
                .filter(|i| *i < n)
                .map(|_| true)
                .ok_or((TF_OUT_OF_RANGE, format!("{what} index {i} is out of range ({n} {what}s)")))
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_IsHostMemoryInput(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    status: *mut TF_Status,
) -> bool {
    // SAFETY: the caller's contract, passed on.
    unsafe { host_memory(ctx, i, status, |c| c.inputs.len(), "input") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_IsHostMemoryOutput(
    ctx: *mut TF_OpKernelContext,
    i: c_int,
    status: *mut TF_Status,
) -> bool {
    // SAFETY: the caller's contract, passed on.
    unsafe { host_memory(ctx, i, status, |c| c.outputs.len(), "output") }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetFrameId(ctx: *mut TF_OpKernelContext) -> u64 {
    let _ = ctx;
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetIterId(ctx: *mut TF_OpKernelContext) -> i64 {
    let _ = ctx;
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetGraphDefVersion(ctx: *mut TF_OpKernelContext) -> c_int {
    let _ = ctx;
    0
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_GetResourceMgrDefaultContainerName(
    ctx: *mut TF_OpKernelContext,
) -> TF_StringView {
    let _ = ctx;
    TF_StringView { data: c"".as_ptr(), len: 0 }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_AllocateOutput(
    context: *mut TF_OpKernelContext,
    index: c_int,
    dtype: TF_DataType,
    dims: *const i64,
    num_dims: c_int,
    len: usize,
    status: *mut TF_Status,
) -> *mut TF_Tensor {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with(context, status, std::ptr::null_mut(), |c| {
            let t = c.allocate(dtype, dims, num_dims)?;
            if len != 0 && len < t.dense().buffer().len() {
                return Err((
                    TF_INVALID_ARGUMENT,
                    format!("len {len} is less than the {} bytes of the tensor", t.dense().buffer().len()),
                ));
            }
            c.set_output(index, t.clone())?;
            Ok(Box::into_raw(Box::new(t)))
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_ForwardInputOrAllocateOutput(
    context: *mut TF_OpKernelContext,
    candidate_input_indices: *const c_int,
    num_candidate_input_indices: c_int,
    output_index: c_int,
    output_dims: *const i64,
    output_num_dims: c_int,
    forwarded_input: *mut c_int,
    status: *mut TF_Status,
) -> *mut TF_Tensor {
    // SAFETY: the caller's contract, passed on: the candidates hold that many indices.
    unsafe {
        if !forwarded_input.is_null() {
            forwarded_input.write(-1);
        }
        with(context, status, std::ptr::null_mut(), |c| {
            let n = c.outputs.len();
            let o = usize::try_from(output_index).ok().filter(|o| *o < n).ok_or((
                TF_OUT_OF_RANGE,
                format!("output index {output_index} is out of range ({n} outputs)"),
            ))?;
            let want = c.site().output_types[o];
            let meta = metadata(want, output_dims, output_num_dims)
                .ok_or((TF_INVALID_ARGUMENT, "invalid output dims".to_owned()))?;
            let candidates = slice(candidate_input_indices, i64::from(num_candidate_input_indices))
                .ok_or((TF_INVALID_ARGUMENT, "NULL candidate indices".to_owned()))?;
            for &i in candidates {
                let Some(input) = usize::try_from(i).ok().and_then(|i| c.inputs.get(i)) else { continue };
                let fits = input.dtype() == want
                    && input.dense().buffer().is_unique()
                    && input.dense().buffer().is_writable()
                    && Some(input.dense().buffer().len()) == meta.data_size();
                if fits {
                    let t = DenseHostTensor::from_buffer(meta.clone(), input.dense().buffer().clone())
                        .map_err(|e| (TF_INTERNAL, e.to_string()))?;
                    let t = TF_Tensor::with_dtype(want, t);
                    c.set_output(output_index, t.clone())?;
                    if !forwarded_input.is_null() {
                        forwarded_input.write(i);
                    }
                    return Ok(Box::into_raw(Box::new(t)));
                }
            }
            let t = c.allocate(want, output_dims, output_num_dims)?;
            c.set_output(output_index, t.clone())?;
            Ok(Box::into_raw(Box::new(t)))
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn TF_AllocateTemp(
    context: *mut TF_OpKernelContext,
    dtype: TF_DataType,
    dims: *const i64,
    num_dims: c_int,
    alloc_attrs: *mut TF_AllocatorAttributes,
    status: *mut TF_Status,
) -> *mut TF_Tensor {
    let _ = alloc_attrs;
    // SAFETY: the caller's contract, passed on.
    unsafe {
        with(context, status, std::ptr::null_mut(), |c| {
            c.allocate(dtype, dims, num_dims).map(|t| Box::into_raw(Box::new(t)))
        })
    }
}
