//! The `FixedArena` an imported program needs, recorded in its BEF (docs/models.md, "Planned
//! memory"): measured on this machine, and bounded for 32-bit targets from the same run.

use hostrt_compiler::bef::{ArenaRecord, with_arena_alt_records, with_arena_records};
use hostrt_core::tensor::{DType, DenseHostTensor, TensorMetadata, TensorShape};
use hostrt_core::{ConcurrentWorkQueue, HostContext, SingleThreadedWorkQueue};
use hostrt_std::{AlignedBytes, ArenaTrace};

use crate::{ImportError, Imported};

/// What a [`FixedArena`](hostrt_core::FixedArena) needs to load an imported program and
/// make one call of `@main`, from its first 64-byte boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaNeeds {
    /// Measured on this machine (its pointer size), on zero inputs: the input tensors, the
    /// load, the call and its outputs. The planned activation arena is the same for any
    /// inputs, and nothing else in the call depends on their values.
    pub here: usize,
    /// On a 64-bit machine, a bound for 32-bit targets (Cortex-M, RISC-V) derived from the
    /// same run: every block it allocates, with the worst padding a 32-bit arena gives it
    /// (`ArenaTrace::bound_on`). `None` on a 32-bit machine, where `here` is the figure.
    pub bound_32: Option<usize>,
}

impl ArenaNeeds {
    /// The figure for a target whose pointers are `pointer_bytes` bytes, when there is one.
    pub fn for_pointer_bytes(&self, pointer_bytes: usize) -> Option<usize> {
        match pointer_bytes {
            p if p == size_of::<usize>() => Some(self.here),
            4 => self.bound_32,
            _ => None,
        }
    }
}

impl Imported {
    /// The program as BEF ([`to_bef`](Self::to_bef)) with its arena recorded: ARENA holds
    /// the figure measured here, and on a 64-bit machine ARENA_ALT the 32-bit bound
    /// (docs/bef.md, "Arena sizes"). Fails as `to_bef` does, or when the program does not
    /// load or its call fails on the host.
    ///
    /// ```
    /// let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/models/");
    /// let imported = hostrt_import::tflite(&std::fs::read(format!("{dir}ds_cnn_i8.tflite"))?)?;
    /// let (bef, needs) = imported.to_bef_with_arena()?;
    /// assert!(needs.here > imported.report.arena_bytes);
    /// # let _ = bef;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_bef_with_arena(&self) -> Result<(Vec<u8>, ArenaNeeds), ImportError> {
        let bef = self.to_bef()?;
        let trace = self.trace_call(&bef)?;
        let here = trace.need().map_err(|e| ImportError::model(format!("measuring the arena: {e}")))?;
        let bound_32 = (size_of::<usize>() == 8).then(|| trace.bound_on(4));
        let record = |bytes, measured| [ArenaRecord { function: 0, bytes, measured }];
        let mut out = with_arena_records(&bef, &record(here, true), size_of::<usize>() as u8);
        if let Some(bound) = bound_32 {
            out = out.and_then(|bef| with_arena_alt_records(&bef, &record(bound, false), 4));
        }
        let out = out.map_err(|e| ImportError::model(format!("recording the arena: {e}")))?;
        Ok((out, ArenaNeeds { here, bound_32 }))
    }

    /// Load `bef` and call `@main` once on zero inputs of the model's types and shapes, all
    /// on a tracing allocator, as firmware does it on its arena.
    fn trace_call(&self, bef: &[u8]) -> Result<ArenaTrace, ImportError> {
        let bytes = AlignedBytes::new(bef);
        let fail = |what: &str, e: String| ImportError::model(format!("measuring the arena: {what}: {e}"));
        let (called, trace) = ArenaTrace::record(|alloc, _| {
            let queue = SingleThreadedWorkQueue::new();
            let host = HostContext::new(alloc, &queue);
            let program =
                hostrt_core::executor::Program::load(bytes.as_bytes(), crate::model::kernels(), &host)
                    .map_err(|e| fail("loading", e.to_string()))?;
            let mut args = Vec::new();
            for (dtype, shape) in &self.inputs {
                let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
                let meta = DType::from_kernel_suffix(dtype)
                    .zip(TensorShape::new(&dims).ok())
                    .map(|(dtype, shape)| TensorMetadata { dtype, shape })
                    .ok_or_else(|| fail("an input", format!("{dtype} {dims:?}")))?;
                let t = DenseHostTensor::new(host.allocator(), meta)
                    .map_err(|e| fail("an input", e.to_string()))?;
                args.push(host.make_available(t).map_err(|e| fail("an input", e.to_string()))?.into_rc());
            }
            let results = program.call(&host, "main", &args).map_err(|e| fail("@main", format!("{e:?}")));
            drop((results, args));
            queue.quiesce();
            Ok(())
        })
        .map_err(|e| fail("a tracing allocator", e))?;
        called.map(|()| trace)
    }
}
