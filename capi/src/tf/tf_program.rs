//! Programs that call C-API kernels: a registered kernel for op `Foo` is the hostrt kernel
//! `tf.Foo`, taking and returning `!t.tensor`, with TensorFlow attrs as MLIR attributes
//! (`T = f32`, strings, ints, floats, bools and their arrays) and an optional trailing
//! `!tfrt.chain` operand it waits for.
//!
//! [`TfProgram::load`] loads a program with `tf.*` names resolved (through [`TfKernels`])
//! and makes one [`KernelSite`] per `tf.*` kernel of the program, so `create` runs at load
//! and a kernel or attr that does not fit is a load error naming the kernel's location.
//! Dropping the `TfProgram` deletes the sites. At run time, the one `tf.*` kernel function
//! finds its site by the program and the kernel's source location.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, RwLock};

use hostrt_core::allocator::Allocator;
use hostrt_core::bef::{BefError, BefLoc};
use hostrt_core::chain::Chain;
use hostrt_core::diagnostic::{Diagnostic, ErrorCode, Location};
use hostrt_core::executor::Program;
use hostrt_core::kernel::{AttrKind, AttrRef, Invoke, KernelEntry, KernelFrame, KernelLookup, ScalarKind};
use hostrt_core::tensor::DenseHostTensor;

use crate::tf::kernels::KernelSite;
use crate::tf::op_def::{AttrValue, ShapeValue, TensorAttr};
use crate::tf::ops::lookup;
use crate::tf::tf_datatype::{self, TF_DataType};
use crate::tf::tf_status::TF_Code;
use crate::tf::tf_tensor::TF_Tensor;

/// A hostrt error for a C API code and message (`UNKNOWN` for `TF_OK` and for a number no
/// code has).
pub fn diagnostic(code: TF_Code, message: &str) -> Diagnostic {
    Diagnostic::new(ErrorCode::from_number(code).unwrap_or(ErrorCode::Unknown), message)
}

/// A kernel lookup that answers `tf.<Op>` for every registered op, and everything else from
/// `inner`.
#[derive(Clone, Copy)]
pub struct TfKernels<'r> {
    /// The program's other kernels.
    pub inner: &'r dyn KernelLookup,
}

impl std::fmt::Debug for TfKernels<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TfKernels")
    }
}

/// `name` with a `'static` lifetime, leaked once per distinct name (op names are few).
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.iter().find(|n| **n == name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.push(leaked);
    leaked
}

impl KernelLookup for TfKernels<'_> {
    fn lookup(&self, name: &str) -> Option<KernelEntry> {
        self.inner.lookup(name).or_else(|| {
            let op = name.strip_prefix("tf.")?;
            lookup(op)?;
            Some(KernelEntry::strict(intern(name), tf_kernel))
        })
    }
}

/// Where a kernel is: the address of its file name in the program's bytes (the same string
/// at load and at run time, so the key needs no copy), line, column.
type SiteKey = (usize, u32, u32);

/// The `tf.*` kernel sites of one program, by location.
type Sites = Arc<HashMap<SiteKey, KernelSite>>;

/// The sites of each loaded `TfProgram`, by the address of its `Program`.
static SITES: RwLock<Vec<(usize, Sites)>> = RwLock::new(Vec::new());

/// Why [`TfProgram::load`] failed.
#[derive(Debug)]
pub enum LoadError {
    /// The BEF file was refused (`Program::load`'s error).
    Bef(BefError),
    /// A `tf.*` kernel could not be made (its location is in the diagnostic).
    Kernel(Diagnostic),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Bef(e) => write!(f, "{e}"),
            LoadError::Kernel(d) => write!(f, "{d}"),
        }
    }
}

/// A program loaded with its `tf.*` kernels created. Dereferences to the [`Program`].
pub struct TfProgram<'a> {
    program: Box<Program<'a>>,
}

impl std::fmt::Debug for TfProgram<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TfProgram").field("program", &self.program).finish()
    }
}

impl<'a> Deref for TfProgram<'a> {
    type Target = Program<'a>;
    fn deref(&self) -> &Program<'a> {
        &self.program
    }
}

impl Drop for TfProgram<'_> {
    fn drop(&mut self) {
        let key = self.key();
        SITES.write().unwrap_or_else(|e| e.into_inner()).retain(|(k, _)| *k != key);
    }
}

/// The TensorFlow dtype of an MLIR element type name (`f32`, `i64`, `ui8`, `i1`, ...).
fn dtype_of_type_name(t: &str) -> Option<TF_DataType> {
    Some(match t {
        "f32" => tf_datatype::TF_FLOAT,
        "f64" => tf_datatype::TF_DOUBLE,
        "f16" => tf_datatype::TF_HALF,
        "bf16" => tf_datatype::TF_BFLOAT16,
        "i1" => tf_datatype::TF_BOOL,
        "i8" => tf_datatype::TF_INT8,
        "i16" => tf_datatype::TF_INT16,
        "i32" => tf_datatype::TF_INT32,
        "i64" => tf_datatype::TF_INT64,
        "ui8" => tf_datatype::TF_UINT8,
        "ui16" => tf_datatype::TF_UINT16,
        "ui32" => tf_datatype::TF_UINT32,
        "ui64" => tf_datatype::TF_UINT64,
        "complex<f32>" => tf_datatype::TF_COMPLEX64,
        "complex<f64>" => tf_datatype::TF_COMPLEX128,
        _ => return None,
    })
}

/// An MLIR attribute as a TensorFlow attr value; `type_name` resolves type indices.
fn attr_value(a: &AttrRef<'_>, file: &hostrt_core::bef::BefFile<'_>) -> Option<AttrValue> {
    Some(match a.kind() {
        AttrKind::Bool => AttrValue::B(a.get::<bool>()?),
        AttrKind::I8 => AttrValue::I(i64::from(a.get::<i8>()?)),
        AttrKind::I32 => AttrValue::I(i64::from(a.get::<i32>()?)),
        AttrKind::I64 => AttrValue::I(a.get::<i64>()?),
        AttrKind::F32 => AttrValue::F(a.get::<f32>()?),
        AttrKind::F64 => AttrValue::F(a.get::<f64>()? as f32),
        AttrKind::String => AttrValue::S(a.get_str()?.to_owned()),
        AttrKind::Type => {
            let index = u32::from_le_bytes(a.bytes().get(..4)?.try_into().ok()?);
            AttrValue::Type(dtype_of_type_name(file.type_name(index))?)
        }
        AttrKind::Dense(_) => AttrValue::Tensor(tensor_attr(a)?),
        // `[]` or an array of dense attributes: a list of tensors.
        AttrKind::Aggregate => AttrValue::List(
            a.children()
                .map(|c| file.attr_ref(c).as_ref().and_then(tensor_attr).map(AttrValue::Tensor))
                .collect::<Option<_>>()?,
        ),
        AttrKind::Array(kind) => AttrValue::List(match kind {
            ScalarKind::Bool => a.get_array::<bool>()?.iter().map(|b| AttrValue::B(*b)).collect(),
            ScalarKind::I8 => a.get_array::<i8>()?.iter().map(|i| AttrValue::I(i64::from(*i))).collect(),
            ScalarKind::I32 => a.get_array::<i32>()?.iter().map(|i| AttrValue::I(i64::from(*i))).collect(),
            ScalarKind::I64 => a.get_array::<i64>()?.iter().map(|i| AttrValue::I(*i)).collect(),
            ScalarKind::F32 => a.get_array::<f32>()?.iter().map(|f| AttrValue::F(*f)).collect(),
            ScalarKind::F64 => a.get_array::<f64>()?.iter().map(|f| AttrValue::F(*f as f32)).collect(),
        }),
        _ => return None,
    })
}

/// A dense attribute as a tensor attr: its elements copied once, at load, into a tensor of
/// the system heap that every `GetAttrTensor` shares.
fn tensor_attr(a: &AttrRef<'_>) -> Option<TensorAttr> {
    let d = a.get_dense()?;
    let meta = hostrt_core::tensor::TensorMetadata { dtype: d.dtype, shape: d.shape };
    let t = DenseHostTensor::new(crate::tf::tf_tensor::heap()?, meta).ok()?;
    t.write_bytes().ok()?.copy_from_slice(d.data);
    Some(TensorAttr(TF_Tensor::from_dense(t)))
}

impl<'a> TfProgram<'a> {
    /// Loads `bytes` with `kernels` plus every registered op as `tf.<Op>`, and creates the
    /// program's `tf.*` kernels. Errors name the kernel's location: an attr of a kind
    /// TensorFlow attrs cannot take, no kernel for the attrs, a failing `create`.
    pub fn load(
        bytes: &'a [u8],
        kernels: &dyn KernelLookup,
        alloc: impl Into<Allocator>,
    ) -> Result<Self, LoadError> {
        let program = Program::load(bytes, &TfKernels { inner: kernels }, alloc).map_err(LoadError::Bef)?;
        Self::create_sites(Box::new(program), kernels).map_err(LoadError::Kernel)
    }

    /// One kernel site per `tf.*` kernel of `program` (not those `kernels` itself has).
    fn create_sites(program: Box<Program<'a>>, kernels: &dyn KernelLookup) -> Result<Self, Diagnostic> {
        let file = program.file();
        let mut sites = HashMap::new();
        for fi in 0..file.num_functions() as u32 {
            let Some(f) = file.function(fi) else { continue };
            // The tf.* kernels of this function: (kernel index, site key).
            let mut tf_kernels = Vec::new();
            for (k, kr) in f.kernels().iter().enumerate() {
                let name = file.kernel_name(kr.code);
                let Some(op) = name.strip_prefix("tf.") else { continue };
                if kernels.lookup(name).is_some() {
                    continue;
                }
                let (file_name, line, col) = match file.loc(kr.location) {
                    BefLoc::FileLineCol { file, line, col } => (file, line, col),
                    _ => {
                        return Err(Diagnostic::new(
                            ErrorCode::InvalidArgument,
                            "a tf.* kernel needs a file:line:col location",
                        ));
                    }
                };
                let at = |mut d: Diagnostic| {
                    d.location = Some(Location::new(file_name, line, col));
                    d
                };
                let (idx, names) = file.kernel_attrs(kr);
                let mut attrs = Vec::new();
                let mut device = None;
                for (i, a) in idx.iter().enumerate() {
                    let attr_name = file.name_at(names[2 * i], names[2 * i + 1]);
                    let r = file.attr_ref(*a);
                    let value = r.as_ref().and_then(|r| attr_value(r, file));
                    match (attr_name, value) {
                        ("device", Some(AttrValue::S(d))) => device = Some(d),
                        (n, Some(v)) => attrs.push((n.to_owned(), v)),
                        (n, None) => {
                            return Err(at(hostrt_core::diag!(
                                InvalidArgument,
                                "attr '{}' of '{}' is of a kind TensorFlow attrs cannot hold",
                                n,
                                name
                            )));
                        }
                    }
                }
                let key = (file_name.as_ptr() as usize, line, col);
                if sites.contains_key(&key) {
                    return Err(at(Diagnostic::new(
                        ErrorCode::InvalidArgument,
                        "two tf.* kernels at one location",
                    )));
                }
                let node = format!("{op}@{file_name}:{line}:{col}");
                let site = KernelSite::new(op, &node, device.as_deref(), attrs, None)
                    .map_err(|(c, m)| at(diagnostic(c, &m)))?;
                tf_kernels.push((k, key, file_name));
                sites.insert(key, site);
            }
            infer_static_shapes(file, f.kernels(), &tf_kernels, &sites)?;
        }
        let tf = TfProgram { program };
        if !sites.is_empty() {
            SITES.write().unwrap_or_else(|e| e.into_inner()).push((tf.key(), Arc::new(sites)));
        }
        Ok(tf)
    }

    fn key(&self) -> usize {
        &*self.program as *const Program<'_> as *const () as usize
    }
}

/// Runs the shape functions of a function's `tf.*` kernels whose input shapes are known at
/// load (from `dense` constants and from earlier `tf.*` kernels' inferred outputs; other
/// values have unknown shapes, which shape functions accept), in dependency order. A shape
/// function that rejects its inputs is a load error at the kernel's location.
fn infer_static_shapes(
    file: &hostrt_core::bef::BefFile<'_>,
    kernels: &[hostrt_core::bef::format::KernelRecord],
    tf_kernels: &[(usize, SiteKey, &str)],
    sites: &HashMap<SiteKey, KernelSite>,
) -> Result<(), Diagnostic> {
    let results =
        |kr: &hostrt_core::bef::format::KernelRecord| kr.first_result..kr.first_result + kr.num_results();
    let mut known: HashMap<u32, ShapeValue> = HashMap::new();
    for kr in kernels.iter().filter(|kr| file.kernel_name(kr.code) == "tfrt_dht.const_dense_tensor") {
        let dense =
            file.kernel_attrs(kr).0.first().and_then(|a| file.attr_ref(*a)).and_then(|a| a.get_dense());
        if let Some(d) = dense {
            known.insert(kr.first_result, ShapeValue::Dims(d.shape.dims().to_vec()));
        }
    }
    // The result registers of tf.* kernels not inferred yet.
    let mut pending: Vec<&(usize, SiteKey, &str)> = tf_kernels.iter().collect();
    let waits_on = |regs: &[u32], pending: &[&(usize, SiteKey, &str)]| {
        pending.iter().any(|(k, _, _)| regs.iter().any(|r| results(&kernels[*k]).contains(r)))
    };
    while !pending.is_empty() {
        let before = pending.len();
        let mut i = 0;
        while i < pending.len() {
            let (k, key, file_name) = pending[i];
            let site = &sites[key];
            let args = file.kernel_args(&kernels[*k]);
            let args = &args[..site.input_types().len().min(args.len())];
            let others: Vec<&(usize, SiteKey, &str)> =
                pending.iter().copied().filter(|p| p.0 != *k).collect();
            if waits_on(args, &others) {
                i += 1;
                continue;
            }
            let inputs = args.iter().map(|r| known.get(r).cloned().unwrap_or(ShapeValue::Unknown)).collect();
            let op = &site.kernel().op;
            let outputs = crate::tf::ops::infer_shapes(op, inputs, site.attrs(), site.output_types().len())
                .map_err(|(c, m)| {
                let mut d = diagnostic(c, &m);
                d.location = Some(Location::new(file_name, key.1, key.2));
                d
            })?;
            for (r, shape) in results(&kernels[*k]).zip(outputs) {
                known.insert(r, shape);
            }
            pending.remove(i);
        }
        if pending.len() == before {
            break; // a cycle cannot happen in SSA; stop rather than loop.
        }
    }
    Ok(())
}

/// The site of the kernel `frame` runs.
fn site_of(frame: &KernelFrame<'_>) -> Result<(Sites, SiteKey), Diagnostic> {
    let program = frame.invoker().map(|i| i as *const dyn Invoke as *const () as usize);
    let loc = frame.location();
    let table = program.and_then(|p| {
        SITES.read().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == p).map(|(_, t)| t.clone())
    });
    match (table, loc) {
        (Some(t), Some(l)) => Ok((t, (l.file.as_ptr() as usize, l.line, l.column))),
        _ => Err(Diagnostic::new(
            ErrorCode::FailedPrecondition,
            "a tf.* kernel ran in a program not loaded with hostrt_c::tf::tf_program::TfProgram::load",
        )),
    }
}

/// The one kernel function of every `tf.*` op.
fn tf_kernel(frame: &KernelFrame<'_>) {
    if let Err(d) = run_tf_kernel(frame) {
        frame.report_error(d);
    }
}

fn run_tf_kernel(frame: &KernelFrame<'_>) -> Result<(), Diagnostic> {
    let (table, key) = site_of(frame)?;
    let site = table
        .get(&key)
        .ok_or_else(|| Diagnostic::new(ErrorCode::Internal, "no kernel site at this location"))?;
    let mut args = frame.args();
    if args.last().is_some_and(|a| a.is_type::<Chain>()) {
        args = &args[..args.len() - 1];
    }
    let expected = site.input_types();
    let mut inputs = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let t = a
            .get::<DenseHostTensor>()
            .ok_or_else(|| hostrt_core::diag!(InvalidArgument, "operand {} is not a tensor", i))?;
        // A quantized input type is stored as its integer: keep the op's type.
        let dtype = match expected.get(i) {
            Some(&want) if tf_datatype::storage(want) == Some(t.dtype()) => want,
            _ => tf_datatype::of(t.dtype()),
        };
        inputs.push(TF_Tensor::with_dtype(dtype, t.clone()));
    }
    let outputs = site
        .compute_on(inputs, frame.exec_ctx().allocator(), 0, Some(frame.exec_ctx().host()))
        .map_err(|(c, m)| diagnostic(c, &m))?;
    if outputs.len() != frame.num_results() {
        return Err(hostrt_core::diag!(
            InvalidArgument,
            "the op has {} outputs but the program takes {}",
            outputs.len(),
            frame.num_results()
        ));
    }
    for (i, o) in outputs.into_iter().enumerate() {
        frame.emplace_result(i, o.dense().clone());
    }
    Ok(())
}
