/* Op registration and shape inference (TensorFlow's tensorflow/c/ops.h).
 *
 * Specs follow TensorFlow's OpDefBuilder grammar:
 *   attrs    "<name>: <type>[ >= <min>][ = <default>]", <type> one of string, int, float,
 *            bool, type, shape, tensor, func, numbertype, realnumbertype, quantizedtype,
 *            "{float, int32}", "{'SAME', 'VALID'}", "list(<type>)";
 *   inputs / outputs  "<name>: <type-expr>" or "<name>: Ref(<type-expr>)", <type-expr> a
 *            dtype name, a type attr, "<N> * <type>" with N an int attr, or a list(type) attr.
 * A malformed spec is remembered and reported by TF_RegisterOpDefinition; an int attr that
 * sizes an input or output gets a minimum of 1 unless the spec gives one. Shape functions
 * run when hostrt loads a program whose input shapes are known. */
#ifndef TENSORFLOW_C_OPS_H_
#define TENSORFLOW_C_OPS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "tensorflow/c/c_api_macros.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct TF_DimensionHandle TF_DimensionHandle;
typedef struct TF_OpDefinitionBuilder TF_OpDefinitionBuilder;
typedef struct TF_ShapeHandle TF_ShapeHandle;
typedef struct TF_ShapeInferenceContext TF_ShapeInferenceContext;

/* A builder for op `op_name`; freed by TF_RegisterOpDefinition or
 * TF_DeleteOpDefinitionBuilder (exactly one of them). */
TF_CAPI_EXPORT extern TF_OpDefinitionBuilder* TF_NewOpDefinitionBuilder(const char* op_name);

/* Registers the op and frees the builder, whatever the outcome: TF_INVALID_ARGUMENT for a
 * bad spec or definition (naming it), TF_ALREADY_EXISTS for a name taken. */
TF_CAPI_EXPORT extern void TF_RegisterOpDefinition(TF_OpDefinitionBuilder* builder, TF_Status* status);

/* Frees a builder that is not registered. */
TF_CAPI_EXPORT extern void TF_DeleteOpDefinitionBuilder(TF_OpDefinitionBuilder* builder);

/* Adds an attr, an input, an output (grammar above). */
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderAddAttr(TF_OpDefinitionBuilder* builder, const char* attr_spec);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderAddInput(TF_OpDefinitionBuilder* builder, const char* input_spec);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderAddOutput(TF_OpDefinitionBuilder* builder, const char* output_spec);

/* Properties recorded with the definition. */
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderSetIsCommutative(TF_OpDefinitionBuilder* builder, bool is_commutative);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderSetIsAggregate(TF_OpDefinitionBuilder* builder, bool is_aggregate);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderSetIsStateful(TF_OpDefinitionBuilder* builder, bool is_stateful);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderSetAllowsUninitializedInput(TF_OpDefinitionBuilder* builder,
                                                                             bool allows_uninitialized_input);
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderDeprecated(TF_OpDefinitionBuilder* builder, int version,
                                                            const char* explanation);

/* The op's shape function: it reads input shapes and attrs from `ctx` and sets output
 * shapes; an error in `status` rejects the program being loaded. */
TF_CAPI_EXPORT extern void TF_OpDefinitionBuilderSetShapeInferenceFunction(
    TF_OpDefinitionBuilder* builder, void (*shape_inference_func)(TF_ShapeInferenceContext* ctx, TF_Status* status));

/* The number of inputs. */
TF_CAPI_EXPORT extern int64_t TF_ShapeInferenceContextNumInputs(TF_ShapeInferenceContext* ctx);

/* A new handle holding an unknown shape; free it with TF_DeleteShapeHandle. */
TF_CAPI_EXPORT extern TF_ShapeHandle* TF_NewShapeHandle(void);

/* Copies input `i`'s shape into `handle`; TF_OUT_OF_RANGE for a bad index. */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextGetInput(TF_ShapeInferenceContext* ctx, int i,
                                                            TF_ShapeHandle* handle, TF_Status* status);

/* Sets output `i` to a copy of `handle`'s shape; TF_OUT_OF_RANGE for a bad index. */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextSetOutput(TF_ShapeInferenceContext* ctx, int i,
                                                             TF_ShapeHandle* handle, TF_Status* status);

/* New handles: the vector shape [size], and the scalar shape []. */
TF_CAPI_EXPORT extern TF_ShapeHandle* TF_ShapeInferenceContextVectorFromSize(TF_ShapeInferenceContext* ctx,
                                                                              size_t size);
TF_CAPI_EXPORT extern TF_ShapeHandle* TF_ShapeInferenceContextScalar(TF_ShapeInferenceContext* ctx);

/* A new handle holding an unknown dimension; free it with TF_DeleteDimensionHandle. */
TF_CAPI_EXPORT extern TF_DimensionHandle* TF_NewDimensionHandle(void);

/* The type attr `attr_name` (the op's default when the program gives none);
 * TF_NOT_FOUND without it, TF_INVALID_ARGUMENT when it is no type. */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContext_GetAttrType(TF_ShapeInferenceContext* ctx,
                                                                const char* attr_name, TF_DataType* val,
                                                                TF_Status* status);

/* The rank (-1 unknown), and whether it is known (1) or not (0). */
TF_CAPI_EXPORT extern int64_t TF_ShapeInferenceContextRank(TF_ShapeInferenceContext* ctx, TF_ShapeHandle* handle);
TF_CAPI_EXPORT extern int TF_ShapeInferenceContextRankKnown(TF_ShapeInferenceContext* ctx, TF_ShapeHandle* handle);

/* `handle`'s shape into `result` if its rank is `rank` (at least, at most) or unknown;
 * otherwise TF_INVALID_ARGUMENT ("Shape must be rank 2 but is rank 3"). */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextWithRank(TF_ShapeInferenceContext* ctx, TF_ShapeHandle* handle,
                                                            int64_t rank, TF_ShapeHandle* result, TF_Status* status);
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextWithRankAtLeast(TF_ShapeInferenceContext* ctx,
                                                                   TF_ShapeHandle* handle, int64_t rank,
                                                                   TF_ShapeHandle* result, TF_Status* status);
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextWithRankAtMost(TF_ShapeInferenceContext* ctx,
                                                                  TF_ShapeHandle* handle, int64_t rank,
                                                                  TF_ShapeHandle* result, TF_Status* status);

/* Dimension `i` (negative counts from the end; unknown when out of range or unknown). */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextDim(TF_ShapeInferenceContext* ctx, TF_ShapeHandle* shape_handle,
                                                       int64_t i, TF_DimensionHandle* result);

/* Dims [start, end) of the shape (negative counts from the end; past the rank clamps). */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextSubshape(TF_ShapeInferenceContext* ctx,
                                                            TF_ShapeHandle* shape_handle, int64_t start, int64_t end,
                                                            TF_ShapeHandle* result, TF_Status* status);

/* Sets every output to an unknown shape (usable as a shape function itself). */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextSetUnknownShape(TF_ShapeInferenceContext* ctx, TF_Status* status);

/* Whether the dimension is known (1) or not (0), and its value (-1 unknown). */
TF_CAPI_EXPORT extern int TF_DimensionHandleValueKnown(TF_DimensionHandle* dim_handle);
TF_CAPI_EXPORT extern int64_t TF_DimensionHandleValue(TF_DimensionHandle* dim_handle);

/* `first`'s dims followed by `second`'s (unknown if either is). */
TF_CAPI_EXPORT extern void TF_ShapeInferenceContextConcatenateShapes(TF_ShapeInferenceContext* ctx,
                                                                     TF_ShapeHandle* first, TF_ShapeHandle* second,
                                                                     TF_ShapeHandle* result, TF_Status* status);

/* Free handles (NULL is ignored). */
TF_CAPI_EXPORT extern void TF_DeleteShapeHandle(TF_ShapeHandle* handle);
TF_CAPI_EXPORT extern void TF_DeleteDimensionHandle(TF_DimensionHandle* handle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TENSORFLOW_C_OPS_H_ */
