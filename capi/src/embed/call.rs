//! Calling a program's functions: synchronously ([`hostrt_call`]) or on a thread of its own
//! with a completion callback ([`hostrt_call_async`], cancellable); results are read from a
//! `hostrt_results`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::thread::JoinHandle;

use hostrt_core::async_value::{AsyncValueRef, RcAsyncValue};
use hostrt_core::chain::Chain;
use hostrt_core::executor::Results;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{ExecutionContext, RequestContext};

use super::program::{
    HOSTRT_TYPE_BOOL, HOSTRT_TYPE_CHAIN, HOSTRT_TYPE_F32, HOSTRT_TYPE_F64, HOSTRT_TYPE_I32, HOSTRT_TYPE_I64,
    HOSTRT_TYPE_TENSOR, ProgramInner, hostrt_program, hostrt_type,
};
use super::raw::{self, Kind};
use super::status::{
    Error, HOSTRT_INVALID_ARGUMENT, HOSTRT_OUT_OF_RANGE, HOSTRT_RESOURCE_EXHAUSTED, HOSTRT_UNIMPLEMENTED,
    hostrt_code, hostrt_status, report,
};
use super::tensor::hostrt_tensor;
use crate::ffi::{guard, text};

/// An argument or result: `type_` says which field holds it (`i` for bool and integers,
/// `f` for floats, `tensor` for tensors; nothing for a chain).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct hostrt_value {
    /// The value's type.
    pub type_: hostrt_type,
    /// A bool (0/1), `i32` or `i64`.
    pub i: i64,
    /// An `f32` or `f64`.
    pub f: f64,
    /// A tensor. In arguments, borrowed for the call; in results, a new handle the caller
    /// destroys.
    pub tensor: *mut hostrt_tensor,
}

/// The results of a finished call (opaque).
pub struct hostrt_results {
    results: Results,
    /// The function that made them (its result types).
    function: u32,
    program: Arc<ProgramInner>,
}

// SAFETY: results are available values of Send + Sync payloads, read-only from here on.
unsafe impl Send for hostrt_results {}

/// Argument values: up to eight without a heap allocation (most calls), more in a `Vec`.
pub(crate) enum Values {
    Inline(heapless::Vec<RcAsyncValue, 8>),
    Heap(Vec<RcAsyncValue>),
}

impl Values {
    fn with_capacity(n: usize) -> Self {
        if n <= 8 { Values::Inline(heapless::Vec::new()) } else { Values::Heap(Vec::with_capacity(n)) }
    }

    fn push(&mut self, v: RcAsyncValue) {
        match self {
            // Never full: made with room for every argument.
            Values::Inline(a) => drop(a.push(v)),
            Values::Heap(a) => a.push(v),
        }
    }

    fn as_slice(&self) -> &[RcAsyncValue] {
        match self {
            Values::Inline(a) => a,
            Values::Heap(a) => a,
        }
    }
}

/// The values for `args`, checked against function `f`'s parameter types.
///
/// # Safety
/// `args` is NULL or `n` readable values; their tensor handles are checked by the table.
unsafe fn arguments(p: &ProgramInner, f: u32, args: *const hostrt_value, n: usize) -> Result<Values, Error> {
    let (types, _) = p.signature(f);
    let name = || p.name(f);
    if n != types.len() {
        let name = name();
        return Err(Error::invalid(format!("'{name}' takes {} arguments, got {n}", types.len())));
    }
    if n > 0 && args.is_null() {
        return Err(Error::invalid("NULL arguments"));
    }
    let alloc = p.host.allocator();
    let oom = |_| Error::new(HOSTRT_RESOURCE_EXHAUSTED, "no memory for an argument");
    let mut values = Values::with_capacity(n);
    for (i, want) in types.iter().enumerate() {
        // SAFETY: `n` values at `args`, by the contract.
        let a = unsafe { *args.add(i) };
        if a.type_ != *want {
            let name = name();
            return Err(Error::invalid(format!(
                "argument {i} of '{name}' has type {}, but the function takes {}",
                type_name(a.type_),
                type_name(*want)
            )));
        }
        let v = match a.type_ {
            HOSTRT_TYPE_BOOL => AsyncValueRef::available(alloc, a.i != 0).map_err(oom)?.into_rc(),
            HOSTRT_TYPE_I32 => {
                let v = i32::try_from(a.i)
                    .map_err(|_| Error::invalid(format!("argument {i}: {} is not an i32", a.i)))?;
                AsyncValueRef::available(alloc, v).map_err(oom)?.into_rc()
            }
            HOSTRT_TYPE_I64 => AsyncValueRef::available(alloc, a.i).map_err(oom)?.into_rc(),
            HOSTRT_TYPE_F32 => AsyncValueRef::available(alloc, a.f as f32).map_err(oom)?.into_rc(),
            HOSTRT_TYPE_F64 => AsyncValueRef::available(alloc, a.f).map_err(oom)?.into_rc(),
            HOSTRT_TYPE_CHAIN => AsyncValueRef::available(alloc, Chain).map_err(oom)?.into_rc(),
            HOSTRT_TYPE_TENSOR => {
                // SAFETY: checked by the table.
                let t = unsafe { raw::get(a.tensor, Kind::Tensor) }
                    .map_err(|m| Error::invalid(format!("argument {i}: {m}")))?;
                let shared: DenseHostTensor = t.tensor.clone();
                AsyncValueRef::available(alloc, shared).map_err(oom)?.into_rc()
            }
            other => {
                let name = name();
                return Err(Error::new(
                    HOSTRT_UNIMPLEMENTED,
                    format!("argument {i} of '{name}' has a type this API cannot pass ({other})"),
                ));
            }
        };
        values.push(v);
    }
    Ok(values)
}

fn type_name(t: hostrt_type) -> &'static str {
    match t {
        HOSTRT_TYPE_BOOL => "i1",
        HOSTRT_TYPE_I32 => "i32",
        HOSTRT_TYPE_I64 => "i64",
        HOSTRT_TYPE_F32 => "f32",
        HOSTRT_TYPE_F64 => "f64",
        HOSTRT_TYPE_TENSOR => "tensor",
        HOSTRT_TYPE_CHAIN => "chain",
        _ => "another type",
    }
}

/// Runs function `f` of `p` with `args` within `request`: its results, or why it could not
/// run.
fn run_in(
    p: &ProgramInner,
    f: u32,
    args: &[RcAsyncValue],
    request: &RequestContext,
) -> Result<Results, Error> {
    let host = &p.host;
    let _serial = host.lock_calls();
    let exec = ExecutionContext::new(host.context(), request);
    p.program().call_index_in(&exec, f, args).map_err(|e| Error::from(&hostrt_core::Diagnostic::from(e)))
}

/// [`run_in`], its results kept with the program for reading through a handle.
fn run(
    p: &Arc<ProgramInner>,
    f: u32,
    args: &[RcAsyncValue],
    request: &RequestContext,
) -> Result<hostrt_results, Error> {
    Ok(hostrt_results { results: run_in(p, f, args, request)?, function: f, program: p.clone() })
}

/// Calls function `name` of `p` with the `n` values at `args` and waits for its results.
///
/// # Safety
/// `args` is NULL or `n` readable values; their tensor handles are checked by the table.
pub(crate) unsafe fn call(
    p: &Arc<ProgramInner>,
    name: &str,
    args: *const hostrt_value,
    n: usize,
) -> Result<hostrt_results, Error> {
    let f = p.function(name)?;
    // SAFETY: the caller's contract, passed on.
    let values = unsafe { arguments(p, f, args, n) }?;
    run(p, f, values.as_slice(), &RequestContext::new())
}

/// Calls function `name` of `program` with `nargs` arguments and waits for its results:
/// `*results` is a new handle (destroy it) when this returns `HOSTRT_OK`. A result that
/// failed is reported when it is read ([`hostrt_results_get`]); the call itself fails for
/// a bad handle, no such function, arguments of the wrong number or types, or no memory.
///
/// Thread-safety: calls may be made from several threads; on a single-threaded host they
/// run one at a time.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_call(
    program: *const hostrt_program,
    name: *const c_char,
    args: *const hostrt_value,
    nargs: usize,
    results: *mut *mut hostrt_results,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; `args` and `results` as the contract says.
    unsafe {
        report(status, || {
            let out = results.as_mut().ok_or_else(|| Error::invalid("NULL results output"))?;
            *out = std::ptr::null_mut();
            let p = super::program::shared(program)?;
            let name = text(name).ok_or_else(|| Error::invalid("NULL function name"))?;
            *out = raw::publish(Kind::Results, call(&p, &name, args, nargs)?)?;
            Ok(())
        })
    }
}

/// Calls function `function` (an index from [`hostrt_program_function_index`]) of
/// `program` and writes its `nresults` results into `results` (caller memory; a tensor
/// result is a new handle the caller destroys): the fast path for a function called often,
/// with no name lookup and no results handle.
///
/// All or nothing: when any result failed, this returns the first failure's error (with
/// the kernel's location) and no tensor handle is left behind; on any error `results` holds
/// nothing to destroy. Fails as [`hostrt_call`] does, and for a `nresults` other than the
/// function's result count or an index out of range.
///
/// Thread-safety: as [`hostrt_call`]; `program` is not destroyed while this runs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_call_into(
    program: *const hostrt_program,
    function: usize,
    args: *const hostrt_value,
    nargs: usize,
    results: *mut hostrt_value,
    nresults: usize,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; `args` and `results` as the contract says.
    unsafe {
        report(status, || {
            let p: &ProgramInner = &raw::get(program, Kind::Program).map_err(Error::invalid)?.inner;
            let f = u32::try_from(function).ok().filter(|&f| (f as usize) < p.function_count()).ok_or_else(
                || Error::new(HOSTRT_OUT_OF_RANGE, format!("function {function} of {}", p.function_count())),
            )?;
            let want = p.signature(f).1.len();
            if nresults != want {
                return Err(Error::invalid(format!(
                    "'{}' has {want} results, room was given for {nresults}",
                    p.name(f)
                )));
            }
            if want > 0 && results.is_null() {
                return Err(Error::invalid("NULL results output"));
            }
            let values = arguments(p, f, args, nargs)?;
            let out = run_in(p, f, values.as_slice(), &RequestContext::new())?;
            drop(values);
            for i in 0..want {
                match value_of(p, f, &out, i) {
                    // SAFETY: `nresults` writable values at `results`, by the contract.
                    Ok(v) => results.add(i).write(v),
                    Err(e) => {
                        for j in 0..i {
                            let t = (*results.add(j)).tensor;
                            if !t.is_null() {
                                super::tensor::hostrt_tensor_destroy(t, std::ptr::null_mut());
                            }
                        }
                        return Err(e);
                    }
                }
            }
            Ok(())
        })
    }
}

/// Called once when an asynchronous call ends, on the call's thread: `results` is a new
/// handle the callback owns (NULL when the call failed), `status` the call's status (valid
/// during the callback).
pub type hostrt_done_fn = Option<
    unsafe extern "C" fn(user: *mut c_void, results: *mut hostrt_results, status: *const hostrt_status),
>;

/// A running asynchronous call (opaque).
pub struct hostrt_async_call {
    request: Arc<RequestContext>,
    program: Arc<ProgramInner>,
    thread: Option<JoinHandle<()>>,
}

struct User(*mut c_void);
// SAFETY: the caller hands `user` to the call's thread (docs/embedding.md says so).
unsafe impl Send for User {}

/// Starts function `name` of `program` on a thread of its own and returns at once;
/// `done(user, results, status)` runs when it ends. Arguments are checked (and their tensors
/// shared) before this returns, so argument errors are reported here and `done` never runs.
/// `*call` is the handle to cancel or wait for it; destroy it (which waits) when done.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_call_async(
    program: *const hostrt_program,
    name: *const c_char,
    args: *const hostrt_value,
    nargs: usize,
    done: hostrt_done_fn,
    user: *mut c_void,
    call: *mut *mut hostrt_async_call,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; `args` and `call` as the contract says.
    unsafe {
        report(status, || {
            let out = call.as_mut().ok_or_else(|| Error::invalid("NULL call output"))?;
            *out = std::ptr::null_mut();
            let p = super::program::shared(program)?;
            let name = text(name).ok_or_else(|| Error::invalid("NULL function name"))?.into_owned();
            let f = p.function(&name)?;
            let values = Send_(arguments(&p, f, args, nargs)?);
            let request = Arc::new(RequestContext::new());
            let (req, prog, user) = (request.clone(), p.clone(), User(user));
            let thread = std::thread::Builder::new()
                .name("hostrt-call".into())
                .spawn(move || {
                    let (values, user) = (values, user);
                    let r = guard(
                        Err(Error::new(super::status::HOSTRT_INTERNAL, "a panic inside hostrt")),
                        || run(&prog, f, values.0.as_slice(), &req),
                    );
                    drop(values);
                    let status = super::status::hostrt_status_new();
                    let mut results = std::ptr::null_mut();
                    report(status, || {
                        results = raw::publish(Kind::Results, r?)?;
                        Ok(())
                    });
                    if let Some(done) = done {
                        done(user.0, results, status);
                    }
                    super::status::hostrt_status_destroy(status);
                })
                .map_err(|e| {
                    Error::new(HOSTRT_RESOURCE_EXHAUSTED, format!("cannot start the call's thread: {e}"))
                })?;
            *out = raw::publish(Kind::Call, hostrt_async_call { request, program: p, thread: Some(thread) })?;
            Ok(())
        })
    }
}

/// Argument values moved to the call's thread.
struct Send_(Values);
// SAFETY: the values are available and their payloads are Send + Sync (tensors, scalars).
unsafe impl Send for Send_ {}

/// Cancels the call: kernels that have not started are skipped and the results not yet
/// computed become `HOSTRT_CANCELLED` errors. Harmless after the call ended.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_async_call_cancel(
    call: *const hostrt_async_call,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table.
    unsafe {
        report(status, || {
            let c = raw::get(call, Kind::Call).map_err(Error::invalid)?;
            c.request
                .cancel(c.program.host.allocator())
                .map(drop)
                .map_err(|_| Error::new(HOSTRT_RESOURCE_EXHAUSTED, "no memory for the cancellation error"))
        })
    }
}

/// Waits for the call to end (its `done` has returned), then destroys the handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_async_call_destroy(
    call: *mut hostrt_async_call,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table.
    unsafe {
        report(status, || {
            let mut c = raw::take(call, Kind::Call).map_err(Error::invalid)?;
            if let Some(t) = c.thread.take() {
                let _ = t.join();
            }
            Ok(())
        })
    }
}

/// How many results (0 for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_results_count(results: *const hostrt_results) -> usize {
    // SAFETY: checked by the table.
    guard(0, || unsafe { raw::get(results, Kind::Results) }.map_or(0, |r| r.len()))
}

/// Reads result `index` into `*value`: its type and value, a new tensor handle for a tensor.
/// A result that failed returns its error (code, message and the failing kernel's
/// location in `status`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_results_get(
    results: *const hostrt_results,
    index: usize,
    value: *mut hostrt_value,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table; `value` NULL or writable, by the contract.
    unsafe {
        report(status, || {
            let r = raw::get(results, Kind::Results).map_err(Error::invalid)?;
            let out = value.as_mut().ok_or_else(|| Error::invalid("NULL value output"))?;
            *out = r.get(index)?;
            Ok(())
        })
    }
}

/// Result `index` of function `f` of `p` as a value (a new tensor handle for a tensor), or
/// its error.
fn value_of(p: &ProgramInner, f: u32, results: &Results, index: usize) -> Result<hostrt_value, Error> {
    let v = std::ops::Deref::deref(results)
        .get(index)
        .ok_or_else(|| Error::new(HOSTRT_OUT_OF_RANGE, format!("result {index} of {}", results.len())))?;
    if let Some(d) = v.get_error() {
        return Err(Error::from(d));
    }
    let t = p.signature(f).1.get(index).copied().unwrap_or(0);
    let mut o = hostrt_value { type_: t, i: 0, f: 0.0, tensor: std::ptr::null_mut() };
    let wrong =
        || Error::new(HOSTRT_INVALID_ARGUMENT, format!("result {index} does not hold its declared type"));
    match t {
        HOSTRT_TYPE_BOOL => o.i = i64::from(*v.get::<bool>().ok_or_else(wrong)?),
        HOSTRT_TYPE_I32 => o.i = i64::from(*v.get::<i32>().ok_or_else(wrong)?),
        HOSTRT_TYPE_I64 => o.i = *v.get::<i64>().ok_or_else(wrong)?,
        HOSTRT_TYPE_F32 => o.f = f64::from(*v.get::<f32>().ok_or_else(wrong)?),
        HOSTRT_TYPE_F64 => o.f = *v.get::<f64>().ok_or_else(wrong)?,
        HOSTRT_TYPE_CHAIN => {}
        HOSTRT_TYPE_TENSOR => {
            let tensor = v.get::<DenseHostTensor>().ok_or_else(wrong)?.clone();
            o.tensor = hostrt_tensor::publish(tensor, p.host.clone())?;
        }
        _ => {
            return Err(Error::new(
                HOSTRT_UNIMPLEMENTED,
                format!("result {index} has a type this API cannot pass"),
            ));
        }
    }
    Ok(o)
}

impl hostrt_results {
    /// Result `index` as a value (a new tensor handle for a tensor), or its error.
    pub(crate) fn get(&self, index: usize) -> Result<hostrt_value, Error> {
        value_of(&self.program, self.function, &self.results, index)
    }

    /// How many results.
    pub(crate) fn len(&self) -> usize {
        self.results.len()
    }
}

/// Destroys results (tensor handles read from them stay valid).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_results_destroy(
    results: *mut hostrt_results,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table.
    unsafe { report(status, || raw::take(results, Kind::Results).map(drop).map_err(Error::invalid)) }
}
