// What the generated model source (gen_model.py) and main.cc share.
#ifndef TFLM_BASELINE_MODEL_GLUE_H_
#define TFLM_BASELINE_MODEL_GLUE_H_

#include <cstdint>

#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"

// Operator types one model may register.
constexpr int kMaxOps = 16;
using Resolver = tflite::MicroMutableOpResolver<kMaxOps>;

struct ModelData {
  const char* name;
  const unsigned char* model;
  unsigned model_len;
  const int8_t* input;  // the test input (input.npy)
  unsigned input_len;
  const int8_t* expected;  // TFLM's output for it (output.npy)
  unsigned expected_len;
  // Registers the model's operators, each wrapped with Wrap<K> (a no-op unless profiled).
  void (*register_ops)(Resolver& resolver, bool profiled);
  int op_types;
};
extern const ModelData g_model_data;

// Per-operator counting. The release library (BUILD_TYPE=release) compiles out the
// interpreter's own MicroProfilerInterface calls (TF_LITE_STRIP_ERROR_STRINGS), so the
// profiled resolver's registrations call the profiler around each kernel's invoke instead:
// slot K keeps the kernel's invoke and name, ProfiledInvokeAt<K> calls it between a
// BeginEvent and an EndEvent (main.cc).
using InvokeFn = TfLiteStatus (*)(TfLiteContext*, TfLiteNode*);
extern InvokeFn g_orig_invoke[kMaxOps];
extern const char* g_op_names[kMaxOps];
TfLiteStatus ProfiledInvoke(int slot, TfLiteContext* context, TfLiteNode* node);

template <int K>
TfLiteStatus ProfiledInvokeAt(TfLiteContext* context, TfLiteNode* node) {
  return ProfiledInvoke(K, context, node);
}

template <int K>
TFLMRegistration Wrap(TFLMRegistration registration, const char* name, bool profiled) {
  static_assert(K < kMaxOps, "too many operator types");
  if (profiled) {
    g_orig_invoke[K] = registration.invoke;
    g_op_names[K] = name;
    registration.invoke = ProfiledInvokeAt<K>;
  }
  return registration;
}

#endif  // TFLM_BASELINE_MODEL_GLUE_H_
