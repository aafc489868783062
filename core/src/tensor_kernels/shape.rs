//! `ts.*`: build, compare, print and convert tensor shapes. One `KernelEntry` constant per
//! kernel; `ALL` is the group.

use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::host_context::ExecutionContext;
use crate::kernel::{Argument, ArrayAttribute, Value};
use crate::tensor::{FixedRankShape, PartialTensorShape, TensorShape};

fn rank_error(e: crate::tensor::RankTooLarge) -> Diagnostic {
    crate::diag_fmt!(Internal, "{}", e)
}

fn build_shape(value: ArrayAttribute<i64>) -> Result<Value<TensorShape>, Diagnostic> {
    TensorShape::new(&value).map(Value).map_err(rank_error)
}
fn print_shape(shape: Argument<TensorShape>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("shape = {}\n", *shape));
    Chain
}
fn equal_shape(a: Argument<TensorShape>, b: Argument<TensorShape>) -> bool {
    *a == *b
}
fn get_num_elements(shape: Argument<TensorShape>) -> i64 {
    shape.num_elements()
}
fn get_dimension(shape: Argument<TensorShape>, i: Argument<i32>) -> Result<i64, Diagnostic> {
    usize::try_from(*i).ok().and_then(|i| shape.dim(i)).ok_or_else(|| {
        crate::diag_fmt!(Internal, "dimension index {} is out of range for shape {}", *i, *shape)
    })
}
fn as_fixed_rank_shape<const N: usize>(
    shape: Argument<TensorShape>,
) -> Result<Value<FixedRankShape<N>>, Diagnostic> {
    FixedRankShape::of(&shape)
        .map(Value)
        .ok_or_else(|| crate::diag_fmt!(Internal, "shape {} does not have rank {}", *shape, N))
}
fn print_fixed_rank_shape<const N: usize>(
    shape: Argument<FixedRankShape<N>>,
    ctx: &ExecutionContext,
) -> Chain {
    ctx.host().print(format_args!("fixed_rank_shape = {}\n", *shape));
    Chain
}
fn build_partial_shape(value: ArrayAttribute<i64>) -> Result<Value<PartialTensorShape>, Diagnostic> {
    PartialTensorShape::new(&value).map(Value).map_err(rank_error)
}
fn build_unranked_partial_shape() -> Value<PartialTensorShape> {
    Value(PartialTensorShape::unranked())
}
fn print_partial_shape(shape: Argument<PartialTensorShape>, ctx: &ExecutionContext) -> Chain {
    ctx.host().print(format_args!("partial_tensor_shape = {}\n", *shape));
    Chain
}
fn to_shape(shape: Argument<PartialTensorShape>) -> Result<Value<TensorShape>, Diagnostic> {
    shape.to_shape().map(Value).map_err(|e| crate::diag_fmt!(Internal, "{}", e))
}
fn to_partial_shape(shape: Argument<TensorShape>) -> Value<PartialTensorShape> {
    Value(PartialTensorShape::from(&*shape))
}

entries! {
    BUILD_SHAPE = "ts.build_shape" => typed(build_shape),
    PRINT_SHAPE = "ts.print_shape" => typed(print_shape),
    EQUAL_SHAPE = "ts.equal_shape" => typed(equal_shape),
    GET_NUM_ELEMENTS = "ts.get_num_elements" => typed(get_num_elements),
    GET_DIMENSION = "ts.get_dimension" => typed(get_dimension),
    AS_FIXED_RANK_SHAPE_1 = "ts.as_fixed_rank_shape.1" => typed(as_fixed_rank_shape::<1>),
    AS_FIXED_RANK_SHAPE_2 = "ts.as_fixed_rank_shape.2" => typed(as_fixed_rank_shape::<2>),
    AS_FIXED_RANK_SHAPE_3 = "ts.as_fixed_rank_shape.3" => typed(as_fixed_rank_shape::<3>),
    PRINT_FIXED_RANK_SHAPE_1 = "ts.print_fixed_rank_shape.1" => typed(print_fixed_rank_shape::<1>),
    PRINT_FIXED_RANK_SHAPE_2 = "ts.print_fixed_rank_shape.2" => typed(print_fixed_rank_shape::<2>),
    PRINT_FIXED_RANK_SHAPE_3 = "ts.print_fixed_rank_shape.3" => typed(print_fixed_rank_shape::<3>),
    BUILD_PARTIAL_SHAPE = "ts.build_partial_shape" => typed(build_partial_shape),
    BUILD_UNRANKED_PARTIAL_SHAPE = "ts.build_unranked_partial_shape" => typed(build_unranked_partial_shape),
    PRINT_PARTIAL_SHAPE = "ts.print_partial_shape" => typed(print_partial_shape),
    TO_SHAPE = "ts.to_shape" => typed(to_shape),
    TO_PARTIAL_SHAPE = "ts.to_partial_shape" => typed(to_partial_shape),
}
