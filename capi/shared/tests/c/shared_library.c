/* A C program linked against libhostrt.so: it uses the C API directly, then loads a plugin
 * with dlopen (the plugin's undefined TF_* symbols resolve to the same library) and checks
 * that the plugin's registration reached the library's registry. Prints one line per check;
 * exits non-zero on the first that fails. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#define CHECK(cond, what)                  \
  do {                                     \
    if (!(cond)) {                         \
      printf("FAILED: %s\n", what);        \
      return 1;                            \
    }                                      \
    printf("ok: %s\n", what);              \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    printf("usage: %s PLUGIN.so OP\n", argv[0]);
    return 2;
  }
  TF_Status* status = TF_NewStatus();

  int64_t dims[2] = {2, 3};
  TF_Tensor* t = TF_AllocateTensor(TF_FLOAT, dims, 2, 6 * sizeof(float));
  CHECK(t != NULL && TF_TensorElementCount(t) == 6 && TF_Dim(t, 1) == 3, "a tensor from the library");
  ((float*)TF_TensorData(t))[5] = 1.5f;
  CHECK(((float*)TF_TensorData(t))[5] == 1.5f, "its data is writable");
  TF_DeleteTensor(t);

  void* plugin = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(plugin != NULL, "the plugin loads with its TF_* symbols resolved by libhostrt.so");
  void (*init)(void) = (void (*)(void))dlsym(plugin, "TF_InitKernel");
  CHECK(init != NULL, "the plugin has TF_InitKernel");
  init();

  /* The plugin defined OP: defining it again is refused by the same registry. */
  TF_OpDefinitionBuilder* again = TF_NewOpDefinitionBuilder(argv[2]);
  TF_OpDefinitionBuilderAddOutput(again, "y: float");
  TF_RegisterOpDefinition(again, status);
  CHECK(TF_GetCode(status) == TF_ALREADY_EXISTS, "the plugin's op is in the library's registry");
  printf("message: %s\n", TF_Message(status));

  TF_DeleteStatus(status);
  dlclose(plugin);
  return 0;
}
