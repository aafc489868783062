//! `hostrt_program`: a loaded BEF program (from caller bytes, borrowed or copied, or a file
//! mapped read-only), its functions and their signatures.

use std::ffi::{CString, c_char, c_void};
use std::sync::{Arc, OnceLock};

use hostrt_core::KernelRegistry;
use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::tensor_kernels::register_tensor_kernels;
use hostrt_std::{AlignedBytes, MappedBef};

use super::host::{HostInner, hostrt_host};
use super::raw::{self, Kind};
use super::status::{
    Error, HOSTRT_DATA_LOSS, HOSTRT_NOT_FOUND, HOSTRT_OUT_OF_RANGE, hostrt_code, hostrt_status, report,
};
use crate::ffi::text;
use crate::tf::tf_program::{LoadError, TfProgram};

/// The type of a function's argument or result.
pub type hostrt_type = i32;
/// A type this API does not pass (calls with it are refused).
pub const HOSTRT_TYPE_OTHER: hostrt_type = 0;
/// `i1`, passed in `hostrt_value.i` (0 or 1).
pub const HOSTRT_TYPE_BOOL: hostrt_type = 1;
/// `i32`, in `hostrt_value.i`.
pub const HOSTRT_TYPE_I32: hostrt_type = 2;
/// `i64`, in `hostrt_value.i`.
pub const HOSTRT_TYPE_I64: hostrt_type = 3;
/// `f32`, in `hostrt_value.f`.
pub const HOSTRT_TYPE_F32: hostrt_type = 4;
/// `f64`, in `hostrt_value.f`.
pub const HOSTRT_TYPE_F64: hostrt_type = 5;
/// A dense host tensor (`!t.tensor`), in `hostrt_value.tensor`.
pub const HOSTRT_TYPE_TENSOR: hostrt_type = 6;
/// `!tfrt.chain`: carries no value.
pub const HOSTRT_TYPE_CHAIN: hostrt_type = 7;

/// How [`hostrt_program_load`] treats the caller's bytes.
pub type hostrt_load_mode = i32;
/// Copy the bytes: the caller may free them when the call returns.
pub const HOSTRT_LOAD_COPY: hostrt_load_mode = 0;
/// Use the bytes in place (8-byte aligned; unchanged and valid until the program is
/// destroyed): no copy, weights read where they are.
pub const HOSTRT_LOAD_BORROW: hostrt_load_mode = 1;

/// A loaded program (opaque).
pub struct hostrt_program {
    pub(crate) inner: Arc<ProgramInner>,
}

impl hostrt_program {
    /// Gives a loaded program out as a handle.
    pub(crate) fn publish(inner: ProgramInner) -> Result<*mut hostrt_program, Error> {
        raw::publish(Kind::Program, hostrt_program { inner: Arc::new(inner) })
    }
}

/// Where a program's bytes live.
enum Bytes {
    Copied(#[allow(dead_code)] AlignedBytes),
    Borrowed,
    Mapped(#[allow(dead_code)] MappedBef),
}

/// A program and what it borrows. Fields drop in order: the program before its bytes, both
/// before the host whose allocator holds the program's tables.
pub(crate) struct ProgramInner {
    program: TfProgram<'static>,
    _bytes: Bytes,
    names: Vec<CString>,
    /// Argument and result types per function.
    signatures: Vec<(Vec<hostrt_type>, Vec<hostrt_type>)>,
    pub(crate) host: Arc<HostInner>,
}

/// Destroying a program gives back the frame block its host keeps for the next call, so an
/// app that destroyed every program sees its arena whole (docs/embedding.md).
impl Drop for ProgramInner {
    fn drop(&mut self) {
        self.host.context().trim();
    }
}

// SAFETY: the program is immutable after load and its run-time state lives in the host's
// thread-safe context and each call's request; `Bytes` is never touched after load.
unsafe impl Send for ProgramInner {}
// SAFETY: as above.
unsafe impl Sync for ProgramInner {}

impl ProgramInner {
    pub(crate) fn program(&self) -> &TfProgram<'static> {
        &self.program
    }

    /// The index of function `name`.
    pub(crate) fn function(&self, name: &str) -> Result<u32, Error> {
        self.program
            .function_index(name)
            .ok_or_else(|| Error::new(HOSTRT_NOT_FOUND, format!("the program has no function '{name}'")))
    }

    /// How many functions the program has.
    pub(crate) fn function_count(&self) -> usize {
        self.names.len()
    }

    /// The name of function `f` (empty for none).
    pub(crate) fn name(&self, f: u32) -> &str {
        self.names.get(f as usize).and_then(|n| n.to_str().ok()).unwrap_or("")
    }

    /// The argument and result types of function `f` (made once, at load).
    pub(crate) fn signature(&self, f: u32) -> (&[hostrt_type], &[hostrt_type]) {
        self.signatures.get(f as usize).map_or((&[], &[]), |(a, r)| (a.as_slice(), r.as_slice()))
    }
}

/// The API type of a BEF type name.
fn type_of(name: &str) -> hostrt_type {
    match name {
        "i1" => HOSTRT_TYPE_BOOL,
        "i32" => HOSTRT_TYPE_I32,
        "i64" => HOSTRT_TYPE_I64,
        "f32" => HOSTRT_TYPE_F32,
        "f64" => HOSTRT_TYPE_F64,
        "!t.tensor" | "!tfrt_tensor.tensor" => HOSTRT_TYPE_TENSOR,
        "!tfrt.chain" => HOSTRT_TYPE_CHAIN,
        _ => HOSTRT_TYPE_OTHER,
    }
}

/// The kernels every program can use: the basic, tensor and int8 `dsp.*` kernels, and `tf.*`
/// for every op registered through the C API (plugins).
fn kernels() -> &'static KernelRegistry<1024> {
    static KERNELS: OnceLock<KernelRegistry<1024>> = OnceLock::new();
    KERNELS.get_or_init(|| {
        let mut r = KernelRegistry::new();
        // Fixed tables well under the capacity: registration cannot fail.
        let _ = register_basic_kernels(&mut r)
            .and_then(|()| register_tensor_kernels(&mut r))
            .and_then(|()| r.add_entries(hostrt_dsp::kernels::KERNELS))
            .and_then(|()| r.add_entries(hostrt_ops::KERNELS));
        crate::tf::std_ops::register_standard_ops();
        r
    })
}

/// Loads a copy of `bytes` on `host`.
pub(crate) fn load_copy(host: Arc<HostInner>, bytes: &[u8]) -> Result<ProgramInner, Error> {
    let copy = AlignedBytes::new(bytes);
    let at: *const [u8] = copy.as_bytes();
    // SAFETY: the copy is kept with the program and never changed.
    unsafe { load(host, at, Bytes::Copied(copy)) }
}

/// Imports the TensorFlow Lite model `model` (docs/models.md) for this CPU and loads the
/// program it becomes; the model's bytes are read during the call only.
pub(crate) fn load_tflite(host: Arc<HostInner>, model: &[u8]) -> Result<ProgramInner, Error> {
    load_imported(host, hostrt_import::tflite_with(model, hostrt_import::ImportOptions::for_this_cpu()))
}

/// Loads an imported model's program on `host`, or says why the import failed.
fn load_imported(
    host: Arc<HostInner>,
    imported: Result<hostrt_import::Imported, hostrt_import::ImportError>,
) -> Result<ProgramInner, Error> {
    let failed = |e: hostrt_import::ImportError| Error::invalid(format!("cannot import the model: {e}"));
    let bef = imported.and_then(|i| i.to_bef()).map_err(failed)?;
    load_copy(host, &bef)
}

/// Imports the ONNX model `model` (external data read from `dir`, symbolic dimensions other
/// than a leading batch refused) and loads the program it becomes on `host`.
pub(crate) fn load_onnx(
    host: Arc<HostInner>,
    model: &[u8],
    dir: Option<&std::path::Path>,
) -> Result<ProgramInner, Error> {
    let read = hostrt_import::onnx::model::ReadOptions { dir, ..Default::default() };
    load_imported(host, hostrt_import::onnx_with(model, &read, hostrt_import::ImportOptions::for_this_cpu()))
}

/// Loads the BEF file at `path` on `host`, mapped read-only.
pub(crate) fn load_mapped(host: Arc<HostInner>, path: &str) -> Result<ProgramInner, Error> {
    let mapped = MappedBef::open(path).map_err(|e| Error::new(HOSTRT_NOT_FOUND, e.to_string()))?;
    let at: *const [u8] = mapped.bytes();
    // SAFETY: the mapping is kept with the program; it is private and read-only.
    unsafe { load(host, at, Bytes::Mapped(mapped)) }
}

/// The names of the program's functions, in order (for the JNI binding).
#[cfg(any(target_os = "android", feature = "jni"))]
pub(crate) fn function_names(p: &ProgramInner) -> impl Iterator<Item = &str> {
    p.names.iter().map(|n| n.to_str().unwrap_or(""))
}

/// Loads `bytes` (which `keep` keeps alive) on `host`.
///
/// # Safety
/// `bytes` stays valid and unchanged for as long as the program lives (owned by `keep`, or
/// the caller's promise for borrowed bytes).
unsafe fn load(host: Arc<HostInner>, bytes: *const [u8], keep: Bytes) -> Result<ProgramInner, Error> {
    // SAFETY: by the caller's contract the bytes outlive the program, which is dropped
    // before `keep` (field order of `ProgramInner`).
    let bytes: &'static [u8] = unsafe { &*bytes };
    let program = TfProgram::load(bytes, kernels(), host.allocator()).map_err(|e| match e {
        LoadError::Bef(e) => Error::new(HOSTRT_DATA_LOSS, format!("cannot load the program: {e}")),
        LoadError::Kernel(d) => Error::from(&d),
    })?;
    let file = program.file();
    let functions: Vec<_> = (0..file.num_functions() as u32).map(|i| file.function(i)).collect();
    let names = functions
        .iter()
        .map(|f| CString::new(f.as_ref().map_or("", |f| f.name())).unwrap_or_default())
        .collect();
    let types = |ts: &[u32]| ts.iter().map(|t| type_of(file.type_name(*t))).collect();
    let signatures = functions
        .iter()
        .map(|f| {
            f.as_ref().map_or((Vec::new(), Vec::new()), |f| (types(f.arg_types()), types(f.result_types())))
        })
        .collect();
    Ok(ProgramInner { program, _bytes: keep, names, signatures, host })
}

/// Runs `load` under `status` and publishes the program it makes as a handle; NULL with the
/// reason in `status` when it fails.
///
/// # Safety
/// As for `report` (`status` NULL or a live status handle).
unsafe fn load_published(
    status: *mut hostrt_status,
    load: impl FnOnce() -> Result<ProgramInner, Error>,
) -> *mut hostrt_program {
    let mut out = std::ptr::null_mut();
    // SAFETY: the caller's contract, passed on.
    unsafe {
        report(status, || {
            out = hostrt_program::publish(load()?)?;
            Ok(())
        })
    };
    out
}

/// Loads a program from `len` bytes at `bytes` on `host`, copied or borrowed as `mode`
/// says; NULL with the reason in `status` (a corrupt file names where it is wrong; an
/// unknown kernel names itself and its location).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_load(
    host: *const hostrt_host,
    bytes: *const c_void,
    len: usize,
    mode: hostrt_load_mode,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `len` readable bytes at `bytes`, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            if bytes.is_null() {
                return Err(Error::invalid("NULL program bytes"));
            }
            let view = std::ptr::slice_from_raw_parts(bytes.cast::<u8>(), len);
            match mode {
                HOSTRT_LOAD_COPY => load_copy(host, &*view),
                HOSTRT_LOAD_BORROW => load(host, view, Bytes::Borrowed),
                other => Err(Error::invalid(format!("unknown load mode {other}"))),
            }
        })
    }
}

/// Loads the BEF file at `path` on `host`, mapped read-only (no copy); NULL with the reason
/// in `status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_load_file(
    host: *const hostrt_host,
    path: *const c_char,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `path` NULL or a C string, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            let path = text(path).ok_or_else(|| Error::invalid("NULL path"))?;
            load_mapped(host, &path)
        })
    }
}

/// Imports the TensorFlow Lite model in the `len` bytes at `bytes` (docs/models.md) and
/// loads the program it becomes on `host`; NULL with the reason in `status` (a malformed
/// or unsupported model names the operator or tensor at fault). The model's bytes are only
/// read during the call; the program keeps its own copy of the weights. To read weights in
/// place instead, import ahead of time (`hostrt import`) and load the BEF borrowed or mapped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_from_tflite(
    host: *const hostrt_host,
    bytes: *const c_void,
    len: usize,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `len` readable bytes at `bytes`, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            if bytes.is_null() {
                return Err(Error::invalid("NULL model bytes"));
            }
            load_tflite(host, &*std::ptr::slice_from_raw_parts(bytes.cast::<u8>(), len))
        })
    }
}

/// Imports the TensorFlow Lite model file at `path`, mapped read-only while it is read, and
/// loads the program it becomes on `host`; NULL with the reason in `status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_from_tflite_file(
    host: *const hostrt_host,
    path: *const c_char,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `path` NULL or a C string, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            let path = text(path).ok_or_else(|| Error::invalid("NULL path"))?;
            let mapped = MappedBef::open(&*path).map_err(|e| Error::new(HOSTRT_NOT_FOUND, e.to_string()))?;
            load_tflite(host, mapped.bytes())
        })
    }
}

/// Imports the ONNX model in the `len` bytes at `bytes` (docs/onnx.md) and loads the
/// program it becomes on `host`; NULL with the reason in `status` (a malformed or
/// unsupported model names the node at fault). A model whose weights are in external files
/// needs [`hostrt_program_from_onnx_file`]; a symbolic input dimension other than a leading
/// batch (taken as 1) is refused. The bytes are only read during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_from_onnx(
    host: *const hostrt_host,
    bytes: *const c_void,
    len: usize,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `len` readable bytes at `bytes`, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            if bytes.is_null() {
                return Err(Error::invalid("NULL model bytes"));
            }
            load_onnx(host, &*std::ptr::slice_from_raw_parts(bytes.cast::<u8>(), len), None)
        })
    }
}

/// Imports the ONNX model file at `path` (external data read next to it), mapped read-only
/// while it is read, and loads the program it becomes on `host`; NULL with the reason in
/// `status`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_from_onnx_file(
    host: *const hostrt_host,
    path: *const c_char,
    status: *mut hostrt_status,
) -> *mut hostrt_program {
    // SAFETY: handles checked by the table; `path` NULL or a C string, by the contract.
    unsafe {
        load_published(status, || {
            let host = super::host::host(host)?;
            let path = text(path).ok_or_else(|| Error::invalid("NULL path"))?;
            let mapped = MappedBef::open(&*path).map_err(|e| Error::new(HOSTRT_NOT_FOUND, e.to_string()))?;
            load_onnx(host, mapped.bytes(), std::path::Path::new(&*path).parent())
        })
    }
}

/// Destroys a program handle. Results and calls made from it keep what they need; the
/// program's memory goes with the last of them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_destroy(
    program: *mut hostrt_program,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: checked by the table.
    unsafe { report(status, || raw::take(program, Kind::Program).map(drop).map_err(Error::invalid)) }
}

/// The program behind a handle, shared.
///
/// # Safety
/// As for `raw::get`.
pub(crate) unsafe fn shared(p: *const hostrt_program) -> Result<Arc<ProgramInner>, Error> {
    // SAFETY: the caller's contract, passed on.
    unsafe { raw::get(p, Kind::Program) }.map(|p| p.inner.clone()).map_err(Error::invalid)
}

/// The name and the argument and result types of function `name` of `program`.
///
/// # Safety
/// As for `raw::get`; `name` is NULL or a C string.
unsafe fn signature(
    program: *const hostrt_program,
    name: *const c_char,
) -> Result<(String, Vec<hostrt_type>, Vec<hostrt_type>), Error> {
    // SAFETY: the caller's contract, passed on.
    let (p, name) =
        unsafe { (shared(program)?, text(name).ok_or_else(|| Error::invalid("NULL function name"))?) };
    let (args, results) = p.signature(p.function(&name)?);
    Ok((name.into_owned(), args.to_vec(), results.to_vec()))
}

/// Writes the index of function `name` to `*index`, for [`hostrt_call_into`](crate::embed::hostrt_call_into):
/// `HOSTRT_NOT_FOUND` when there is no such function. Indexes run from 0 to
/// [`hostrt_program_function_count`] - 1, in the order of [`hostrt_program_function_name`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_function_index(
    program: *const hostrt_program,
    name: *const c_char,
    index: *mut usize,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; `index` NULL or writable, by the contract.
    unsafe {
        report(status, || {
            let (p, name) =
                (shared(program)?, text(name).ok_or_else(|| Error::invalid("NULL function name"))?);
            *index.as_mut().ok_or_else(|| Error::invalid("NULL index output"))? = p.function(&name)? as usize;
            Ok(())
        })
    }
}

/// How many functions the program has (0 for a bad handle).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_function_count(program: *const hostrt_program) -> usize {
    // SAFETY: checked by the table.
    crate::ffi::guard(0, || unsafe { raw::get(program, Kind::Program) }.map_or(0, |p| p.inner.names.len()))
}

/// The name of function `index`, valid while the program lives; NULL for a bad handle or
/// index.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_function_name(
    program: *const hostrt_program,
    index: usize,
) -> *const c_char {
    crate::ffi::guard(std::ptr::null(), || {
        // SAFETY: checked by the table.
        let p = unsafe { raw::get(program, Kind::Program) };
        p.ok().and_then(|p| p.inner.names.get(index)).map_or(std::ptr::null(), |n| n.as_ptr())
    })
}

/// The signature of function `name`: how many arguments and results it has (outputs may be
/// NULL). `HOSTRT_NOT_FOUND` when there is no such function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_signature(
    program: *const hostrt_program,
    name: *const c_char,
    num_args: *mut usize,
    num_results: *mut usize,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; outputs NULL or writable, by the contract.
    unsafe {
        report(status, || {
            let (_, args, results) = signature(program, name)?;
            if let Some(n) = num_args.as_mut() {
                *n = args.len();
            }
            if let Some(n) = num_results.as_mut() {
                *n = results.len();
            }
            Ok(())
        })
    }
}

/// The type of argument (`is_result` false) or result `index` of function `name`, written
/// to `*type_`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hostrt_program_type(
    program: *const hostrt_program,
    name: *const c_char,
    is_result: bool,
    index: usize,
    type_: *mut hostrt_type,
    status: *mut hostrt_status,
) -> hostrt_code {
    // SAFETY: handles checked by the table; `type_` NULL or writable, by the contract.
    unsafe {
        report(status, || {
            let (name, args, results) = signature(program, name)?;
            let list = if is_result { results } else { args };
            let t = list.get(index).copied().ok_or_else(|| {
                Error::new(
                    HOSTRT_OUT_OF_RANGE,
                    format!(
                        "'{name}' has {} {}",
                        list.len(),
                        if is_result { "results" } else { "arguments" }
                    ),
                )
            })?;
            *type_.as_mut().ok_or_else(|| Error::invalid("NULL type output"))? = t;
            Ok(())
        })
    }
}
