//! [`Program`]: a TensorFlow Lite model imported and loaded in one step, for Rust apps on a
//! host (std). It owns the BEF it was imported to and resolves the `nn.*` and basic kernels
//! itself; `call` takes the model's inputs and returns its outputs.

use std::sync::OnceLock;

use hostrt_core::basic_kernels::register_basic_kernels;
use hostrt_core::tensor::DenseHostTensor;
use hostrt_core::{HostContext, KernelRegistry};
use hostrt_std::AlignedBytes;

use crate::{ImportError, Report};

/// The kernels an imported model uses: `hostrt-ops`' `nn.*` and the basic ones (chains).
pub(crate) fn kernels() -> &'static KernelRegistry<512> {
    static KERNELS: OnceLock<KernelRegistry<512>> = OnceLock::new();
    KERNELS.get_or_init(|| {
        let mut r = KernelRegistry::new();
        // Fixed tables well under the capacity: registration cannot fail.
        let _ = register_basic_kernels(&mut r).and_then(|()| r.add_entries(hostrt_ops::KERNELS));
        r
    })
}

/// An imported, loaded model.
///
/// Failure contract: [`from_tflite`](Self::from_tflite) and [`from_onnx`](Self::from_onnx)
/// fail with an [`ImportError`] for a malformed or unsupported model (naming the operator,
/// node or tensor) and when the program
/// cannot be loaded on the host; [`call`](Self::call) fails with the message of the first
/// failing kernel, located at the model's layer (`op#3 CONV_2D:...`), or of a wrong input.
///
/// ```
/// use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
/// use hostrt_import::npy;
///
/// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/");
/// let alloc = Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new())))
///     .map_err(|e| format!("{e:?}"))?;
/// let queue = SingleThreadedWorkQueue::new();
/// let host = HostContext::new(alloc, &queue);
/// let model = hostrt_import::Program::from_tflite(&std::fs::read(format!("{dir}fc_relu_i8.tflite"))?, &host)?;
/// let x = npy::read(&std::fs::read(format!("{dir}fc_relu_i8.input.npy"))?)?;
/// let outputs = model.call(&host, vec![npy::to_tensor(alloc, &x)?])?;
/// let golden = npy::read(&std::fs::read(format!("{dir}fc_relu_i8.output.npy"))?)?;
/// assert_eq!(npy::from_tensor(&outputs[0])?.data, golden.data);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Program {
    // Declared before the bytes it borrows, so it is dropped first.
    program: hostrt_core::executor::Program<'static>,
    _bef: AlignedBytes,
    /// What the import did: operators, weight bytes, planned arena.
    pub report: Report,
}

impl Program {
    /// Imports the TensorFlow Lite model `model` for this CPU
    /// ([`crate::ImportOptions::for_this_cpu`]) and loads it on `host`.
    pub fn from_tflite(model: &[u8], host: &HostContext<'_>) -> Result<Program, ImportError> {
        Program::load(crate::tflite_with(model, crate::ImportOptions::for_this_cpu())?, host)
    }

    /// Imports the ONNX model `model` (its bytes: a model with external data needs
    /// [`Program::from_onnx_file`]) for this CPU ([`crate::ImportOptions::for_this_cpu`]) and
    /// loads it on `host`. Symbolic input dimensions other than a leading batch dimension
    /// (taken as 1) need [`crate::onnx_with`]'s bindings.
    pub fn from_onnx(model: &[u8], host: &HostContext<'_>) -> Result<Program, ImportError> {
        let read = crate::onnx::model::ReadOptions::default();
        Program::load(crate::onnx_with(model, &read, crate::ImportOptions::for_this_cpu())?, host)
    }

    /// Imports the ONNX model file at `path` (external data read next to it), with symbolic
    /// dimensions bound by `dims`, for this CPU, and loads it on `host`.
    pub fn from_onnx_file(
        path: &std::path::Path,
        dims: &[(String, usize)],
        host: &HostContext<'_>,
    ) -> Result<Program, ImportError> {
        Program::load(crate::onnx_file(path, dims, crate::ImportOptions::for_this_cpu())?, host)
    }

    /// Loads an imported program on `host`.
    pub fn load(imported: crate::Imported, host: &HostContext<'_>) -> Result<Program, ImportError> {
        let bef = AlignedBytes::new(&imported.to_bef()?);
        // SAFETY: `AlignedBytes` keeps its bytes in a heap buffer that does not move when the
        // value moves and is never changed; it lives in the same `Program` as the loaded
        // program, which is declared (and so dropped) before it.
        let bytes: &'static [u8] = unsafe { &*(bef.as_bytes() as *const [u8]) };
        let program = hostrt_core::executor::Program::load(bytes, kernels(), host)
            .map_err(|e| ImportError::model(format!("loading the imported program: {e}")))?;
        Ok(Program { program, _bef: bef, report: imported.report })
    }

    /// Runs the model on `inputs` (in the model's input order, of its types and shapes) and
    /// returns its outputs.
    pub fn call(
        &self,
        host: &HostContext<'_>,
        inputs: Vec<DenseHostTensor>,
    ) -> Result<Vec<DenseHostTensor>, String> {
        let mut args = Vec::with_capacity(inputs.len());
        for t in inputs {
            args.push(host.make_available(t).map_err(|e| e.to_string())?.into_rc());
        }
        let results = self.program.call(host, "main", &args).map_err(|e| format!("{e:?}"))?;
        (0..results.len())
            .map(|i| results.get::<DenseHostTensor>(i).cloned().map_err(|e| e.to_string()))
            .collect()
    }
}
