//! `tfrt_dht.*`: make, fill, set, compare and print dense host tensors and host buffers.
//! [`UNTYPED`] holds the dtype-independent kernels; each dtype family is its own table
//! ([`F32`], [`I32`], ...) so firmware registers only the dtypes it uses.

use super::dtype_family::{BHalf, Compare, FromAttr, Half, Scalar};
use super::{new_tensor, tensor_error};
use crate::async_value::RcAsyncValue;
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel;
use crate::kernel::{
    Argument, ArrayAttribute, Attribute, KernelEntry, KernelFn, KernelFrame, RemainingArguments, Value,
};
use crate::tensor::{DenseHostTensor, HostBuffer, TensorMetadata, TensorShape};

// ---- dtype families ----

fn create<T: Scalar>(
    shape: ArrayAttribute<i64>,
    ctx: &ExecutionContext,
) -> Result<Value<DenseHostTensor>, Diagnostic> {
    new_tensor(ctx, T::DTYPE, &shape, "Cannot allocate tensor").map(Value)
}

/// The tensor's bytes for writing, after checking it holds `T`.
fn check_dtype<T: Scalar>(t: &DenseHostTensor) -> Result<(), Diagnostic> {
    if t.dtype() != T::DTYPE {
        return Err(crate::diag_fmt!(Internal, "tensor of dtype {} used as {}", t.dtype(), T::DTYPE));
    }
    Ok(())
}

fn fill<T: FromAttr>(t: Argument<DenseHostTensor>, value: Attribute<T::Attr>) -> Result<Chain, Diagnostic> {
    check_dtype::<T>(&t)?;
    let v = T::from_attr(&[*value]);
    let mut bytes = t.write_bytes().map_err(tensor_error)?;
    for e in bytes.chunks_exact_mut(T::DTYPE.size()) {
        v.store(e);
    }
    Ok(Chain)
}

fn set_constant_values<T: FromAttr>(
    t: Argument<DenseHostTensor>,
    chain: Argument<Chain>,
    values: ArrayAttribute<T::Attr>,
) -> Result<RcAsyncValue, Diagnostic> {
    check_dtype::<T>(&t)?;
    let elements = t.shape().num_elements();
    if values.len() as i64 != elements.wrapping_mul(T::PER as i64) {
        return Err(if T::PER == 1 {
            crate::diag!(
                Internal,
                "Incorrect number of values for the tensor: {}, but expected {}",
                values.len(),
                elements
            )
        } else {
            crate::diag!(
                Internal,
                "Incorrect number of real and imaginary values for the complex tensor: {}, but expected {}",
                values.len(),
                elements.wrapping_mul(2)
            )
        });
    }
    let mut bytes = t.write_bytes().map_err(tensor_error)?;
    for (e, v) in bytes.chunks_exact_mut(T::DTYPE.size()).zip(values.chunks_exact(T::PER)) {
        T::from_attr(v).store(e);
    }
    Ok(chain.value().clone())
}

fn set_with_values<T: Scalar>(
    t: Argument<DenseHostTensor>,
    _chain: Argument<Chain>,
    values: RemainingArguments,
) -> Result<Chain, Diagnostic> {
    check_dtype::<T>(&t)?;
    let elements = t.shape().num_elements();
    if values.len() as i64 != elements {
        return Err(crate::diag!(
            Internal,
            "Incorrect number of values for the tensor: {}, but expected {}",
            values.len(),
            elements
        ));
    }
    let mut bytes = t.write_bytes().map_err(tensor_error)?;
    for (i, (e, v)) in bytes.chunks_exact_mut(T::DTYPE.size()).zip(values.values()).enumerate() {
        let v = v
            .get::<T>()
            .ok_or_else(|| crate::diag_fmt!(Internal, "value {} is not of dtype {}", i, T::DTYPE))?;
        v.store(e);
    }
    Ok(Chain)
}

fn make_tensor<T: Scalar>(
    buffer: Argument<HostBuffer>,
    shape: Argument<TensorShape>,
    chain: Argument<Chain>,
) -> Result<(Value<DenseHostTensor>, RcAsyncValue), Diagnostic> {
    let size = T::DTYPE.size();
    let metadata = TensorMetadata { dtype: T::DTYPE, shape: shape.clone() };
    match DenseHostTensor::from_buffer(metadata, buffer.clone()) {
        Ok(t) => Ok((Value(t), chain.value().clone())),
        Err(_) => Err(crate::diag_fmt!(
            Internal,
            "dht.make_tensor failed: buffer_size ({}) is not equal to the number of elements in shape ({}) times element size ({})",
            buffer.len(),
            *shape,
            size
        )),
    }
}

/// Whether `a` and `b` have equal metadata and every element pair satisfies `pair`.
fn compare<T: Compare>(
    a: &DenseHostTensor,
    b: &DenseHostTensor,
    pair: impl Fn(T, T) -> bool,
) -> Result<bool, Diagnostic> {
    check_dtype::<T>(a)?;
    if a.metadata() != b.metadata() {
        return Ok(false);
    }
    let (x, y) = (a.read_bytes().map_err(tensor_error)?, b.read_bytes().map_err(tensor_error)?);
    let size = T::DTYPE.size();
    Ok(x.chunks_exact(size).zip(y.chunks_exact(size)).all(|(x, y)| pair(T::load(x), T::load(y))))
}

fn tensor_equal<T: Compare>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
    chain: Argument<Chain>,
) -> Result<(bool, RcAsyncValue), Diagnostic> {
    Ok((compare::<T>(&a, &b, T::equal)?, chain.value().clone()))
}

fn tensor_allclose<T: Compare, const ULP: u32>(
    a: Argument<DenseHostTensor>,
    b: Argument<DenseHostTensor>,
    chain: Argument<Chain>,
) -> Result<(bool, RcAsyncValue), Diagnostic> {
    Ok((compare::<T>(&a, &b, |x, y| x.close(y, ULP))?, chain.value().clone()))
}

/// `create_uninitialized_tensor.<sfx>.<0..=5>` entries for one kernel.
macro_rules! creates {
    ($sfx:literal, $create:expr) => {
        [
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".0"), $create),
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".1"), $create),
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".2"), $create),
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".3"), $create),
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".4"), $create),
            KernelEntry::strict(concat!("tfrt_dht.create_uninitialized_tensor.", $sfx, ".5"), $create),
        ]
    };
}

/// The comparison entries (`tensor_equal`, `tensor_allclose[.Nulp]`) of one family.
macro_rules! compares {
    ($sfx:literal, $t:ty) => {
        [
            KernelEntry::strict(concat!("tfrt_dht.tensor_equal.", $sfx), kernel!(tensor_equal::<$t>)),
            KernelEntry::strict(
                concat!("tfrt_dht.tensor_allclose.", $sfx),
                kernel!(tensor_allclose::<$t, 2>),
            ),
            KernelEntry::strict(
                concat!("tfrt_dht.tensor_allclose.3ulp.", $sfx),
                kernel!(tensor_allclose::<$t, 3>),
            ),
            KernelEntry::strict(
                concat!("tfrt_dht.tensor_allclose.1000ulp.", $sfx),
                kernel!(tensor_allclose::<$t, 1000>),
            ),
            KernelEntry::strict(
                concat!("tfrt_dht.tensor_allclose.2000ulp.", $sfx),
                kernel!(tensor_allclose::<$t, 2000>),
            ),
            KernelEntry::strict(
                concat!("tfrt_dht.tensor_allclose.100000ulp.", $sfx),
                kernel!(tensor_allclose::<$t, 100000>),
            ),
        ]
    };
}

/// Concatenate constant entry arrays into one array.
macro_rules! concat_entries {
    ($($part:expr),* $(,)?) => {{
        const PARTS: &[&[KernelEntry]] = &[$(&$part),*];
        const LEN: usize = {
            let mut n = 0;
            let mut i = 0;
            while i < PARTS.len() {
                n += PARTS[i].len();
                i += 1;
            }
            n
        };
        const ALL: [KernelEntry; LEN] = {
            let mut out = [PARTS[0][0]; LEN];
            let (mut i, mut k) = (0, 0);
            while i < PARTS.len() {
                let mut j = 0;
                while j < PARTS[i].len() {
                    out[k] = PARTS[i][j];
                    j += 1;
                    k += 1;
                }
                i += 1;
            }
            out
        };
        ALL
    }};
}

/// The parts of a dtype family, named in [`family!`] after the type.
macro_rules! part {
    (make $sfx:literal, $t:ty) => {{
        const CREATE: KernelFn = kernel!(create::<$t>);
        concat_entries![
            creates!($sfx, CREATE),
            [KernelEntry::strict(concat!("tfrt_dht.make_tensor.", $sfx), kernel!(make_tensor::<$t>))],
        ]
    }};
    (set_values $sfx:literal, $t:ty) => {
        [KernelEntry::strict(
            concat!("tfrt_dht.set_tensor_with_constant_values.", $sfx),
            kernel!(set_constant_values::<$t>),
        )]
    };
    (fill $sfx:literal, $t:ty) => {
        [
            KernelEntry::strict(concat!("tfrt_dht.fill_tensor_with_constant.", $sfx), kernel!(fill::<$t>)),
            KernelEntry::strict(
                concat!("tfrt_dht.set_tensor_with_values.", $sfx),
                kernel!(set_with_values::<$t>),
            ),
        ]
    };
    (compare $sfx:literal, $t:ty) => {
        compares!($sfx, $t)
    };
}

/// A dtype family's table: `part`s of `make` (create and make_tensor), `set_values`
/// (from an attribute array), `fill` (fill and set from operands), `compare`.
macro_rules! family {
    ($(#[$doc:meta])* $name:ident = $sfx:literal, $t:ty: $($part:ident)+) => {
        $(#[$doc])*
        pub const $name: &[KernelEntry] = &concat_entries![$(part!($part $sfx, $t)),+];
    };
}

family!(/** `f32` tensors. */ F32 = "f32", f32: make set_values fill compare);
family!(/** `f64` tensors. */ F64 = "f64", f64: make set_values fill compare);
family!(/** `i8` tensors. */ I8 = "i8", i8: make set_values fill compare);
family!(/** `i32` tensors. */ I32 = "i32", i32: make set_values fill compare);
family!(/** `i64` tensors. */ I64 = "i64", i64: make set_values fill compare);
family!(/** `u8` tensors (kernel suffix `ui8`). */ UI8 = "ui8", u8: make set_values fill compare);
family!(/** `u32` tensors (kernel suffix `ui32`). */ UI32 = "ui32", u32: make set_values fill compare);
family!(/** `u64` tensors (kernel suffix `ui64`). */ UI64 = "ui64", u64: make set_values fill compare);
family!(/** `i1` tensors (kernel suffix `bool`). */ BOOL = "bool", bool: make set_values fill compare);
// Complex tensors have no `fill_tensor_with_constant` or `set_tensor_with_values` (hostrt
// has no complex attribute or value type yet); their values come as flat (real, imaginary)
// arrays. Half types are storage only: no attribute form for their values yet.
family!(/** `complex64` tensors. */ COMPLEX64 = "complex64", [f32; 2]: make set_values compare);
family!(/** `complex128` tensors. */ COMPLEX128 = "complex128", [f64; 2]: make set_values compare);
family!(/** `f16` tensors (storage only). */ F16 = "f16", Half: make);
family!(/** `bf16` tensors (storage only). */ BF16 = "bf16", BHalf: make);

// ---- dtype-independent kernels ----

fn print_tensor(t: Argument<DenseHostTensor>, ctx: &ExecutionContext) -> Result<Chain, Diagnostic> {
    drop(t.read_bytes().map_err(tensor_error)?);
    ctx.host().print(format_args!("{}\n", *t));
    Ok(Chain)
}
fn print_tensor_all(t: Argument<DenseHostTensor>, ctx: &ExecutionContext) -> Result<Chain, Diagnostic> {
    drop(t.read_bytes().map_err(tensor_error)?);
    ctx.host().print(format_args!("{}\n", t.display_all()));
    Ok(Chain)
}
fn print_tensor_shape(t: Argument<DenseHostTensor>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("{}\n", t.shape()));
    Chain
}
fn get_tensor_shape(t: Argument<DenseHostTensor>) -> Value<TensorShape> {
    Value(t.shape().clone())
}
fn no_op_ht(_: Argument<DenseHostTensor>) -> Chain {
    Chain
}
fn allocate_buffer(
    size: Argument<i64>,
    align: Argument<i64>,
    ctx: &ExecutionContext,
) -> Result<Value<HostBuffer>, Diagnostic> {
    let cannot = || Diagnostic::internal("Cannot allocate host buffer");
    let size = usize::try_from(*size).map_err(|_| cannot())?;
    let align = usize::try_from(*align).map_err(|_| cannot())?;
    if !align.is_power_of_two() || align > crate::tensor::BUFFER_ALIGN {
        return Err(crate::diag!(
            Internal,
            "Cannot allocate host buffer: alignment {} is not a power of two up to 64",
            align
        ));
    }
    HostBuffer::allocate(ctx.allocator(), size).map(Value).map_err(|_| cannot())
}
fn get_buffer(t: Argument<DenseHostTensor>, chain: Argument<Chain>) -> (Value<HostBuffer>, RcAsyncValue) {
    (Value(t.buffer().clone()), chain.value().clone())
}
fn get_buffer_slice(
    b: Argument<HostBuffer>,
    offset: Argument<i64>,
    size: Argument<i64>,
) -> Result<Value<HostBuffer>, Diagnostic> {
    usize::try_from(*offset)
        .ok()
        .zip(usize::try_from(*size).ok())
        .and_then(|(o, s)| b.slice(o, s))
        .map(Value)
        .ok_or_else(|| {
            crate::diag!(
                Internal,
                "buffer slice [{}, +{}) is outside a buffer of {} bytes",
                *offset,
                *size,
                b.len()
            )
        })
}
fn print_buffer(b: Argument<HostBuffer>, chain: Argument<Chain>, ctx: &ExecutionContext) -> RcAsyncValue {
    ctx.host().print(format_args!("{:?}\n", *b));
    chain.value().clone()
}

/// `tfrt_dht.const_dense_tensor {value = dense<...> : tensor<...>}`: the attribute as a
/// tensor. When the program's bytes live forever ([`Program::load_static`]) the tensor
/// borrows them (read-only, no arena memory for the data: weights stay in flash); otherwise
/// the data is copied into a new tensor. Either way, programs treat it as a constant.
///
/// [`Program::load_static`]: crate::executor::Program::load_static
fn const_dense_tensor(frame: &KernelFrame<'_>) {
    let Some(dense) = frame.attrs().first().and_then(|a| a.get_dense()) else {
        return frame.report_error(Diagnostic::internal(
            "tfrt_dht.const_dense_tensor needs a dense attribute 'value'",
        ));
    };
    let alloc = frame.exec_ctx().allocator();
    let metadata = TensorMetadata { dtype: dense.dtype, shape: dense.shape.clone() };
    let tensor = match frame.static_attribute_bytes(dense.data) {
        Some(bytes) => HostBuffer::from_owner(alloc, bytes)
            .map_err(|_| Diagnostic::internal("Cannot allocate tensor"))
            .and_then(|b| DenseHostTensor::from_buffer(metadata, b).map_err(tensor_error)),
        None => new_tensor(frame.exec_ctx(), dense.dtype, dense.shape.dims(), "Cannot allocate tensor")
            .and_then(|t| {
                t.write_bytes().map_err(tensor_error)?.copy_from_slice(dense.data);
                Ok(t)
            }),
    };
    match tensor {
        Ok(t) => frame.emplace_result(0, t),
        Err(e) => frame.report_error(e),
    }
}

entries! {
    group UNTYPED;
    CONST_DENSE_TENSOR = "tfrt_dht.const_dense_tensor" => raw(const_dense_tensor),
    PRINT_TENSOR = "tfrt_dht.print_tensor" => typed(print_tensor),
    PRINT_TENSOR_ALL = "hostrt.print_tensor_all" => typed(print_tensor_all),
    PRINT_TENSOR_SHAPE = "tfrt_dht.print_tensor_shape" => typed(print_tensor_shape),
    GET_TENSOR_SHAPE = "tfrt_dht.get_tensor_shape" => typed(get_tensor_shape),
    NO_OP_HT = "tfrt_dht.no_op_ht" => typed(no_op_ht),
    ALLOCATE_BUFFER = "tfrt_dht.allocate_buffer" => typed(allocate_buffer),
    GET_BUFFER = "tfrt_dht.get_buffer" => typed(get_buffer),
    GET_BUFFER_SLICE = "tfrt_dht.get_buffer_slice" => typed(get_buffer_slice),
    PRINT_BUFFER = "tfrt_dht.print_buffer" => typed(print_buffer),
}

/// Every table of this module.
pub const ALL_GROUPS: [&[KernelEntry]; 14] =
    [UNTYPED, F32, F64, I8, I32, I64, UI8, UI32, UI64, BOOL, COMPLEX64, COMPLEX128, F16, BF16];
