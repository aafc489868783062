/* A hostrt plugin in C, written against TensorFlow's C API only: it defines op ScaleBy
 * (y = x * factor) with a shape function, and a CPU kernel for it that reads attr `factor`
 * once, when the program is loaded. Build it with nothing to link:
 *
 *   cc -shared -fPIC -I capi/include examples/plugins/c/scale_by.c -o libscale_by.so
 *   hostrt run examples/plugins/c/scale_by.mlir --plugin ./libscale_by.so
 */
#include <stdlib.h>

#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"

typedef struct ScaleBy {
  float factor;
} ScaleBy;

/* The output has the input's shape. */
static void scale_by_shape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeHandle* shape = TF_NewShapeHandle();
  TF_ShapeInferenceContextGetInput(ctx, 0, shape, status);
  if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 0, shape, status);
  TF_DeleteShapeHandle(shape);
}

static void* scale_by_create(TF_OpKernelConstruction* ctx) {
  ScaleBy* kernel = calloc(1, sizeof *kernel);
  TF_Status* status = TF_NewStatus();
  TF_OpKernelConstruction_GetAttrFloat(ctx, "factor", &kernel->factor, status);
  if (TF_GetCode(status) != TF_OK) TF_OpKernelConstruction_Failure(ctx, status);
  TF_DeleteStatus(status);
  return kernel;
}

static void scale_by_compute(void* k, TF_OpKernelContext* ctx) {
  const ScaleBy* kernel = k;
  TF_Status* status = TF_NewStatus();
  TF_Tensor* x = NULL;
  TF_Tensor* y = NULL;
  TF_GetInput(ctx, 0, &x, status);
  if (TF_GetCode(status) == TF_OK) {
    int64_t dims[16];
    int rank = TF_NumDims(x);
    for (int i = 0; i < rank && i < 16; i++) dims[i] = TF_Dim(x, i);
    y = TF_AllocateOutput(ctx, 0, TF_FLOAT, dims, rank, TF_TensorByteSize(x), status);
  }
  if (TF_GetCode(status) == TF_OK) {
    const float* in = TF_TensorData(x);
    float* out = TF_TensorData(y);
    for (int64_t i = 0; i < TF_TensorElementCount(x); i++) out[i] = in[i] * kernel->factor;
  } else {
    TF_OpKernelContext_Failure(ctx, status);
  }
  TF_DeleteTensor(y);
  TF_DeleteTensor(x);
  TF_DeleteStatus(status);
}

static void scale_by_delete(void* kernel) { free(kernel); }

void TF_InitKernel(void) {
  TF_Status* status = TF_NewStatus();
  TF_OpDefinitionBuilder* op = TF_NewOpDefinitionBuilder("ScaleBy");
  TF_OpDefinitionBuilderAddAttr(op, "T: {float}");
  TF_OpDefinitionBuilderAddAttr(op, "factor: float = 2.0");
  TF_OpDefinitionBuilderAddInput(op, "x: T");
  TF_OpDefinitionBuilderAddOutput(op, "y: T");
  TF_OpDefinitionBuilderSetShapeInferenceFunction(op, &scale_by_shape);
  TF_RegisterOpDefinition(op, status);

  TF_KernelBuilder* kernel =
      TF_NewKernelBuilder("ScaleBy", "CPU", &scale_by_create, &scale_by_compute, &scale_by_delete);
  TF_KernelBuilder_TypeConstraint(kernel, "T", TF_FLOAT, status);
  TF_RegisterKernelBuilder("ScaleByOp", kernel, status);
  TF_DeleteStatus(status);
}
