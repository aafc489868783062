//! The activation arena and the kernels that move tensors in and out of it.
//!
//! - `nn.arena {size}`: a new arena of `size` bytes from the context's allocator.
//! - `nn.input(%arena, %chain, %tensor) {dtype, shape, to}`: checks the tensor's dtype and shape,
//!   copies it to byte offset `to[0]`; returns a chain.
//! - `nn.output(%arena, %chain) {dtype, from, shape}`: a new tensor copied from offset `from[0]`.
//! - `nn.constant(%arena, %chain) {to, value}`: copies a dense attribute into the arena.

use hostrt_core::kernel::{KernelFrame, PrepareInput, Prepared};
use hostrt_core::tensor::{DType, DenseHostTensor, HostBuffer, TensorMetadata, TensorShape};
use hostrt_core::{Diagnostic, diag_fmt};

use crate::attrs::{Attrs, invalid};
use crate::prepared::{keep, record};

/// One model call's activations: a buffer the planned tensors live in at fixed offsets.
#[derive(Debug)]
pub struct Arena {
    buffer: HostBuffer,
}

/// Runs `body` over the arena (argument 0) with exclusive access, then forwards the chain
/// (argument 1) as result 0; an error from `body` is the kernel's error.
pub(crate) fn with_arena(frame: &KernelFrame<'_>, body: impl FnOnce(&mut [u8]) -> Result<(), Diagnostic>) {
    let Some(arena) = frame.arg(0).and_then(|v| v.get::<Arena>()) else {
        return frame.report_error(diag_fmt!(InvalidArgument, "argument 0 must be an nn.arena"));
    };
    let Some(chain) = frame.arg(1) else {
        return frame.report_error(diag_fmt!(InvalidArgument, "argument 1 must be a chain"));
    };
    let result = match arena.buffer.write() {
        Ok(mut bytes) => body(&mut bytes),
        Err(_) => Err(diag_fmt!(Internal, "the arena is in use by another kernel")),
    };
    match result {
        Ok(()) => frame.set_result(0, chain.clone()),
        Err(e) => frame.report_error(e),
    }
}

/// The arena split around one output region: inputs are read from the bytes before and
/// after it, so reading them and writing the output never alias.
pub(crate) struct Inputs<'b> {
    kernel: &'static str,
    before: &'b [u8],
    after: &'b [u8],
    out_end: usize,
}

impl<'b> Inputs<'b> {
    /// `len` bytes at `offset`, which must lie wholly before or after the output.
    pub fn bytes(&self, offset: usize, len: usize) -> Result<&'b [u8], Diagnostic> {
        let end = offset.checked_add(len).ok_or_else(|| self.outside(offset, len))?;
        if end <= self.before.len() {
            Ok(&self.before[offset..end])
        } else if offset >= self.out_end {
            self.after.get(offset - self.out_end..end - self.out_end).ok_or_else(|| self.outside(offset, len))
        } else {
            Err(invalid(self.kernel, format_args!("input [{}, +{}) overlaps the output", offset, len)))
        }
    }

    fn outside(&self, offset: usize, len: usize) -> Diagnostic {
        let size = self.out_end + self.after.len();
        invalid(
            self.kernel,
            format_args!("input [{}, +{}) is outside the arena of {} bytes", offset, len, size),
        )
    }

    /// `elements` int8 values at `offset`.
    pub fn i8s(&self, offset: usize, elements: usize) -> Result<&'b [i8], Diagnostic> {
        Ok(bytemuck::cast_slice(self.bytes(offset, elements)?))
    }

    /// `elements` f32 values at `offset` (4-byte aligned).
    pub fn f32s(&self, offset: usize, elements: usize) -> Result<&'b [f32], Diagnostic> {
        let len = elements.checked_mul(4).ok_or_else(|| self.outside(offset, usize::MAX))?;
        bytemuck::try_cast_slice(self.bytes(offset, len)?)
            .map_err(|_| invalid(self.kernel, format_args!("f32 input at {} is not 4-byte aligned", offset)))
    }
}

/// Splits `arena` into the output `[offset, offset + len)` and the rest.
pub(crate) fn split<'b>(
    kernel: &'static str,
    arena: &'b mut [u8],
    offset: usize,
    len: usize,
) -> Result<(Inputs<'b>, &'b mut [u8]), Diagnostic> {
    let size = arena.len();
    let end = offset.checked_add(len).filter(|&e| e <= size).ok_or_else(|| {
        invalid(kernel, format_args!("output [{}, +{}) is outside the arena of {} bytes", offset, len, size))
    })?;
    let (before, rest) = arena.split_at_mut(offset);
    let (out, after) = rest.split_at_mut(end - offset);
    Ok((Inputs { kernel, before, after, out_end: end }, out))
}

/// The output bytes as f32 values.
pub(crate) fn f32s_mut<'b>(kernel: &str, out: &'b mut [u8]) -> Result<&'b mut [f32], Diagnostic> {
    bytemuck::try_cast_slice_mut(out)
        .map_err(|_| invalid(kernel, format_args!("f32 output is not 4-byte aligned")))
}

/// The output bytes as int8 values.
pub(crate) fn i8s_mut(out: &mut [u8]) -> &mut [i8] {
    bytemuck::cast_slice_mut(out)
}

fn dtype_attr(a: &Attrs<'_>, i: usize) -> Result<DType, Diagnostic> {
    let name = a.string(i, "dtype")?;
    DType::from_kernel_suffix(name).ok_or_else(|| invalid(a.kernel, format_args!("unknown dtype '{}'", name)))
}

fn shape_attr(a: &Attrs<'_>, i: usize) -> Result<TensorShape, Diagnostic> {
    let dims = a.ints(i, "shape", None)?;
    let mut d = [0i64; 8];
    if dims.len() > d.len() || dims.iter().any(|&v| v < 0) {
        return Err(invalid(a.kernel, format_args!("'shape' must have at most 8 non-negative dims")));
    }
    for (o, &v) in d.iter_mut().zip(dims) {
        *o = i64::from(v);
    }
    TensorShape::new(&d[..dims.len()])
        .map_err(|_| invalid(a.kernel, format_args!("'shape' has too many dims")))
}

fn offset_attr(a: &Attrs<'_>, i: usize, name: &str) -> Result<usize, Diagnostic> {
    let v = a.ints(i, name, Some(1))?[0];
    usize::try_from(v)
        .map_err(|_| invalid(a.kernel, format_args!("{} must not be negative, got {}", name, v)))
}

const ARENA: &str = "nn.arena";

/// `nn.arena`'s `size`, checked.
fn arena_size(a: &Attrs<'_>) -> Result<usize, Diagnostic> {
    let size = a.int64(0, "size")?;
    usize::try_from(size).map_err(|_| invalid(ARENA, format_args!("size {} is negative", size)))
}

/// `nn.arena`'s prepare function: its size decoded once, at load.
pub(crate) fn prepare_arena(input: &PrepareInput<'_>) -> Option<Prepared> {
    let size = arena_size(&Attrs::of_slice(input.attrs(), ARENA, 1).ok()?).ok()?;
    keep(&[u64::try_from(size).ok()?])
}

/// `nn.arena {size : i64}`: with the `kept-arena` feature (on by default), the host's kept
/// buffer of that size when the last call has finished with it (`HostContext::take_buffer`),
/// else a new zeroed one, which the host then keeps for the next call; without it, a new
/// zeroed one per call. The layers write every byte they read (the plan's
/// rule, docs/models.md), so what an earlier call left in it is never read. Debug builds
/// fill a reused arena with 0xA5 first, so that a test relying on zeros fails.
pub(crate) fn arena(frame: &KernelFrame<'_>) {
    const K: &str = ARENA;
    let size = match frame.prepared().and_then(record::<[u64; 1]>) {
        Some(&[size]) => {
            usize::try_from(size).map_err(|_| invalid(K, format_args!("size {} is too large", size)))
        }
        None => Attrs::of(frame, K, 1).and_then(|a| arena_size(&a)),
    };
    let made = size.and_then(|size| {
        let allocate = || {
            HostBuffer::allocate(frame.exec_ctx().allocator(), size).map_err(|_| {
                diag_fmt!(ResourceExhausted, "{}: cannot allocate the activation arena of {} bytes", K, size)
            })
        };
        #[cfg(feature = "kept-arena")]
        {
            let host = frame.exec_ctx().host();
            let buffer = match host.take_buffer(size) {
                Some(kept) => {
                    #[cfg(debug_assertions)]
                    if let Ok(mut bytes) = kept.write() {
                        bytes.fill(0xA5);
                    }
                    kept
                }
                None => allocate()?,
            };
            host.keep_buffer(buffer.clone());
            Ok(buffer)
        }
        #[cfg(not(feature = "kept-arena"))]
        allocate()
    });
    match made {
        Ok(buffer) => frame.emplace_result(0, Arena { buffer }),
        Err(e) => frame.report_error(e),
    }
}

/// The tensor `nn.input` takes or `nn.output` makes, and where it lies in the arena.
struct Port {
    meta: TensorMetadata,
    /// Byte offset in the arena (`to` or `from`).
    at: usize,
}

/// The dtypes a [`PortRecord`] keeps, by index (a tensor of another goes unprepared).
const DTYPES: [DType; 12] = [
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F32,
    DType::F64,
    DType::Bool,
    DType::F16,
];

/// [`Port`] as prepared state keeps it (docs/execution.md, "Prepared state").
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct PortRecord {
    /// Index into [`DTYPES`].
    dtype: u32,
    rank: u32,
    dims: [u32; 8],
    at: u32,
}

/// `nn.input`'s attributes are `dtype, shape, to`, `nn.output`'s `dtype, from, shape`.
fn decode_port(a: &Attrs<'_>, output: bool) -> Result<Port, Diagnostic> {
    let (shape, at) = if output { (2, 1) } else { (1, 2) };
    let (dtype, shape) = (dtype_attr(a, 0)?, shape_attr(a, shape)?);
    let at = offset_attr(a, at, if output { "from" } else { "to" })?;
    Ok(Port { meta: TensorMetadata { dtype, shape }, at })
}

fn prepare_port(input: &PrepareInput<'_>, kernel: &'static str, output: bool) -> Option<Prepared> {
    let port = decode_port(&Attrs::of_slice(input.attrs(), kernel, 3).ok()?, output).ok()?;
    let dims = port.meta.shape.dims();
    let mut record = PortRecord {
        dtype: DTYPES.iter().position(|&d| d == port.meta.dtype)? as u32,
        rank: dims.len() as u32,
        dims: [0; 8],
        at: u32::try_from(port.at).ok()?,
    };
    for (o, &d) in record.dims.get_mut(..dims.len())?.iter_mut().zip(dims) {
        *o = u32::try_from(d).ok()?;
    }
    keep(&record)
}

/// `nn.input`'s prepare function: its tensor's type and place decoded once, at load.
pub(crate) fn prepare_input(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_port(input, "nn.input", false)
}

/// `nn.output`'s prepare function.
pub(crate) fn prepare_output(input: &PrepareInput<'_>) -> Option<Prepared> {
    prepare_port(input, "nn.output", true)
}

/// The port of `nn.input` (`output` false) or `nn.output`: from its prepared record when
/// the load made one.
fn port(frame: &KernelFrame<'_>, kernel: &'static str, output: bool) -> Result<Port, Diagnostic> {
    let Some(r) = frame.prepared().and_then(record::<PortRecord>) else {
        return decode_port(&Attrs::of(frame, kernel, 3)?, output);
    };
    let mut dims = [0i64; 8];
    let rank = (r.rank as usize).min(8);
    for (o, &d) in dims.iter_mut().zip(&r.dims[..rank]) {
        *o = i64::from(d);
    }
    let bad = || invalid(kernel, format_args!("bad prepared state"));
    let dtype = *DTYPES.get(r.dtype as usize).ok_or_else(bad)?;
    let shape = TensorShape::new(&dims[..rank]).map_err(|_| bad())?;
    Ok(Port { meta: TensorMetadata { dtype, shape }, at: r.at as usize })
}

/// `nn.input(%arena, %chain, %tensor) {dtype, shape, to}`.
pub(crate) fn input(frame: &KernelFrame<'_>) {
    const K: &str = "nn.input";
    with_arena(frame, |arena| {
        let Port { meta: TensorMetadata { dtype, shape }, at: to } = port(frame, K, false)?;
        let t = frame
            .arg(2)
            .and_then(|v| v.get::<DenseHostTensor>())
            .ok_or_else(|| invalid(K, format_args!("argument 2 must be a tensor")))?;
        if t.dtype() != dtype || t.shape() != &shape {
            return Err(diag_fmt!(
                InvalidArgument,
                "{}: the model takes a {} {} tensor here, got {} {}",
                K,
                dtype,
                shape,
                t.dtype(),
                t.shape()
            ));
        }
        let src = t.read_bytes().map_err(|e| invalid(K, format_args!("{}", e)))?;
        let (_, out) = split(K, arena, to, src.len())?;
        out.copy_from_slice(&src);
        Ok(())
    })
}

/// `nn.output(%arena, %chain) {dtype, from, shape}`.
pub(crate) fn output(frame: &KernelFrame<'_>) {
    const K: &str = "nn.output";
    let run = || -> Result<DenseHostTensor, Diagnostic> {
        let Port { meta, at: from } = port(frame, K, true)?;
        let arena = frame
            .arg(0)
            .and_then(|v| v.get::<Arena>())
            .ok_or_else(|| invalid(K, format_args!("argument 0 must be an nn.arena")))?;
        let len = meta.data_size().ok_or_else(|| invalid(K, format_args!("the shape is too large")))?;
        let bytes = arena.buffer.read().map_err(|_| diag_fmt!(Internal, "{}: the arena is in use", K))?;
        let src = from
            .checked_add(len)
            .and_then(|end| bytes.get(from..end))
            .ok_or_else(|| invalid(K, format_args!("[{}, +{}) is outside the arena", from, len)))?;
        DenseHostTensor::copy_of(frame.exec_ctx().allocator(), meta, src)
            .map_err(|_| diag_fmt!(ResourceExhausted, "{}: cannot allocate the output tensor", K))
    };
    match run() {
        Ok(t) => frame.emplace_result(0, t),
        Err(e) => frame.report_error(e),
    }
}

/// `nn.constant(%arena, %chain) {to, value}`: copies a dense attribute into the arena (an
/// operand of an element-wise op that the model holds as a constant).
pub(crate) fn constant(frame: &KernelFrame<'_>) {
    const K: &str = "nn.constant";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 2)?;
        let to = offset_attr(&a, 0, "to")?;
        let value = a.dense_bytes(1, "value")?;
        let (_, out) = split(K, arena, to, value.len())?;
        out.copy_from_slice(value);
        Ok(())
    })
}
