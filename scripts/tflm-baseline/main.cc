// TFLM baseline image for QEMU mps2-an386 (Cortex-M4F): runs one int8 model (linked in from
// the source gen_model.py writes) and prints, over semihosting, the instructions of one
// Invoke(), whether the output equals the expected bytes, arena_used_bytes(), and the
// instructions of each operator. Instructions are counted as hostrt's images count them
// (targets/mps2-an386/instructions.rs): SysTick on the core clock with reload 0xFFFFFF,
// wraps counted in its interrupt, calibrated on a subs/bne loop of 2,000,000 instructions,
// instructions = ticks * 2,000,000 / ticks_per_2m. Under `qemu-system-arm -icount shift=0`
// one tick is 40 instructions (the resolution of one measurement).
#include <cstdint>
#include <cstring>
#include <new>

#include "model_glue.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_profiler_interface.h"
#include "tensorflow/lite/schema/schema_generated.h"
#ifndef TF_LITE_STRIP_ERROR_STRINGS
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
#endif

namespace {

constexpr size_t kArenaSize = 256 * 1024;
alignas(16) uint8_t g_arena[kArenaSize];

// --- Semihosting --------------------------------------------------------------------------
int Semihost(int op, const void* arg) {
  register int r0 asm("r0") = op;
  register const void* r1 asm("r1") = arg;
  asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

// One output line, built in a buffer and written with SYS_WRITE0.
class Line {
 public:
  Line& operator<<(const char* s) {
    while (*s != '\0' && len_ < sizeof(buf_) - 2) buf_[len_++] = *s++;
    return *this;
  }
  Line& operator<<(uint64_t v) {
    char digits[21];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0 && len_ < sizeof(buf_) - 2) buf_[len_++] = digits[--n];
    return *this;
  }
  Line& operator<<(int v) {
    if (v < 0) {
      *this << "-";
      return *this << static_cast<uint64_t>(-static_cast<int64_t>(v));
    }
    return *this << static_cast<uint64_t>(v);
  }
  Line& operator<<(unsigned v) { return *this << static_cast<uint64_t>(v); }
  Line& operator<<(unsigned long v) { return *this << static_cast<uint64_t>(v); }
  ~Line() {
    buf_[len_++] = '\n';
    buf_[len_] = '\0';
    Semihost(0x04, buf_);  // SYS_WRITE0
  }

 private:
  char buf_[160];
  size_t len_ = 0;
};

[[noreturn]] void Exit(bool ok) {
  // SYS_EXIT: ADP_Stopped_ApplicationExit ends QEMU with status 0, any other reason with 1.
  Semihost(0x18, reinterpret_cast<const void*>(ok ? 0x20026 : 0x20024));
  for (;;) {
  }
}

#ifndef TF_LITE_STRIP_ERROR_STRINGS
void DebugLogToSemihosting(const char* s) { Semihost(0x04, s); }
#endif

// --- Instruction counting (as targets/mps2-an386/instructions.rs) ---------------------------
volatile uint32_t* const kSystCsr = reinterpret_cast<volatile uint32_t*>(0xE000E010);
volatile uint32_t* const kSystRvr = reinterpret_cast<volatile uint32_t*>(0xE000E014);
volatile uint32_t* const kSystCvr = reinterpret_cast<volatile uint32_t*>(0xE000E018);
constexpr uint32_t kReload = 0x00FFFFFF;
volatile uint32_t g_wraps = 0;

// SysTick ticks since StartTicks (the 24-bit counter plus the counted wraps).
uint64_t Ticks() {
  for (;;) {
    uint32_t before = g_wraps;
    uint32_t current = *kSystCvr;
    if (g_wraps == before) {
      return static_cast<uint64_t>(before) * (kReload + 1) + (kReload - current);
    }
  }
}

void StartTicks() {
  *kSystRvr = kReload;
  *kSystCvr = 0;
  *kSystCsr = 0x7;  // CLKSOURCE = core clock, TICKINT, ENABLE
  // The cleared counter reads 0 until its first tick loads the reload value.
  while (*kSystCvr == 0) {
  }
}

uint64_t g_ticks_per_2m = 1;

void Calibrate() {
  uint64_t start = Ticks();
  uint32_t n = 1000000;
  asm volatile(
      "2:\n\t"
      "subs %0, %0, #1\n\t"
      "bne 2b"
      : "+r"(n)
      :
      : "cc");
  uint64_t ticks = Ticks() - start;
  g_ticks_per_2m = ticks == 0 ? 1 : ticks;
}

uint64_t ToInstructions(uint64_t ticks) { return ticks * 2000000 / g_ticks_per_2m; }

// --- Per-operator profiler -----------------------------------------------------------------
class TickProfiler : public tflite::MicroProfilerInterface {
 public:
  static constexpr uint32_t kMaxEvents = 128;
  uint32_t BeginEvent(const char* tag) override {
    if (count_ >= kMaxEvents) return kMaxEvents;
    uint32_t h = count_++;
    tags_[h] = tag;
    end_[h] = 0;
    start_[h] = Ticks();
    return h;
  }
  void EndEvent(uint32_t handle) override {
    uint64_t now = Ticks();
    if (handle < kMaxEvents) end_[handle] = now;
  }
  void Reset() { count_ = 0; }
  uint32_t count() const { return count_; }
  const char* tag(uint32_t i) const { return tags_[i]; }
  uint64_t ticks(uint32_t i) const { return end_[i] - start_[i]; }

 private:
  uint32_t count_ = 0;
  const char* tags_[kMaxEvents];
  uint64_t start_[kMaxEvents];
  uint64_t end_[kMaxEvents];
};

// Statics built in place, never destroyed (no atexit machinery in the image).
alignas(TickProfiler) uint8_t g_profiler_mem[sizeof(TickProfiler)];
TickProfiler* g_profiler = nullptr;
alignas(Resolver) uint8_t g_plain_mem[sizeof(Resolver)];
alignas(Resolver) uint8_t g_profiled_mem[sizeof(Resolver)];
alignas(tflite::MicroInterpreter) uint8_t g_interpreter_mem[sizeof(tflite::MicroInterpreter)];

bool Fail(const char* what) {
  Line() << "error: " << what;
  return false;
}

// Sets up an interpreter on `resolver`, checks the input and output tensors against the
// test data, and returns it (nullptr after printing what failed).
tflite::MicroInterpreter* Setup(const tflite::Model* model, const Resolver& resolver,
                                uint64_t* alloc_ticks) {
  auto* interpreter =
      new (g_interpreter_mem) tflite::MicroInterpreter(model, resolver, g_arena, kArenaSize);
  uint64_t t0 = Ticks();
  TfLiteStatus status = interpreter->AllocateTensors();
  uint64_t t1 = Ticks();
  if (alloc_ticks != nullptr) *alloc_ticks = t1 - t0;
  if (status != kTfLiteOk) return Fail("AllocateTensors failed"), nullptr;
  const ModelData& d = g_model_data;
  if (interpreter->inputs_size() != 1 || interpreter->outputs_size() != 1)
    return Fail("expected one input and one output"), nullptr;
  TfLiteTensor* input = interpreter->input(0);
  TfLiteTensor* output = interpreter->output(0);
  if (input->type != kTfLiteInt8 || input->bytes != d.input_len)
    return Fail("input tensor is not int8 of input.npy's size"), nullptr;
  if (output->type != kTfLiteInt8 || output->bytes != d.expected_len)
    return Fail("output tensor is not int8 of output.npy's size"), nullptr;
  return interpreter;
}

// Writes the test input (TFLM's planner may reuse the input buffer) and invokes.
bool Run(tflite::MicroInterpreter* interpreter, uint64_t* ticks) {
  memcpy(interpreter->input(0)->data.int8, g_model_data.input, g_model_data.input_len);
  uint64_t t0 = Ticks();
  TfLiteStatus status = interpreter->Invoke();
  uint64_t t1 = Ticks();
  if (ticks != nullptr) *ticks = t1 - t0;
  return status == kTfLiteOk || Fail("Invoke failed");
}

unsigned Mismatches(tflite::MicroInterpreter* interpreter) {
  const int8_t* out = interpreter->output(0)->data.int8;
  unsigned bad = 0;
  for (unsigned i = 0; i < g_model_data.expected_len; ++i) bad += out[i] != g_model_data.expected[i];
  return bad;
}

}  // namespace

InvokeFn g_orig_invoke[kMaxOps];
const char* g_op_names[kMaxOps];

TfLiteStatus ProfiledInvoke(int slot, TfLiteContext* context, TfLiteNode* node) {
  uint32_t h = g_profiler->BeginEvent(g_op_names[slot]);
  TfLiteStatus status = g_orig_invoke[slot](context, node);
  g_profiler->EndEvent(h);
  return status;
}

extern "C" void SysTick_Handler() { g_wraps = g_wraps + 1; }

extern "C" void baseline_fault(const char* what) {
  Line() << "error: " << what;
  Exit(false);
}

int main() {
#ifndef TF_LITE_STRIP_ERROR_STRINGS
  RegisterDebugLogCallback(DebugLogToSemihosting);
#endif
  const ModelData& d = g_model_data;
  StartTicks();
  Calibrate();
  Line() << "model: " << d.name;
#ifdef CMSIS_NN
  Line() << "kernels: cmsis_nn";
#else
  Line() << "kernels: reference";
#endif
  Line() << "ticks_per_2m: " << g_ticks_per_2m;
  const tflite::Model* model = tflite::GetModel(d.model);
  if (model->version() != TFLITE_SCHEMA_VERSION) Exit(Fail("model schema version"));

  // Counted pass: kernels as registered, no profiler.
  auto* plain = new (g_plain_mem) Resolver();
  d.register_ops(*plain, false);
  uint64_t alloc_ticks = 0, first_ticks = 0, ticks = 0;
  tflite::MicroInterpreter* interpreter = Setup(model, *plain, &alloc_ticks);
  if (interpreter == nullptr || !Run(interpreter, &first_ticks) || !Run(interpreter, &ticks))
    Exit(false);
  unsigned bad = Mismatches(interpreter);
  // Once more, counting what hostrt's images count per inference (examples/firmware/src/
  // model.rs, infer()): writing the input, the call, comparing the output.
  uint64_t t0 = Ticks();
  memcpy(interpreter->input(0)->data.int8, d.input, d.input_len);
  TfLiteStatus status = interpreter->Invoke();
  unsigned bad_io = Mismatches(interpreter);
  uint64_t io_ticks = Ticks() - t0;
  if (status != kTfLiteOk) Exit(Fail("Invoke failed"));
  Line() << "allocate_tensors_instructions: " << ToInstructions(alloc_ticks);
  Line() << "first_invoke_instructions: " << ToInstructions(first_ticks);
  Line() << "instructions: " << ToInstructions(ticks);
  Line() << "instructions_with_io: " << ToInstructions(io_ticks);
  Line() << "arena_used_bytes: " << static_cast<uint64_t>(interpreter->arena_used_bytes());
  if (bad == 0) {
    Line() << "output: equal to output.npy (" << d.expected_len << " bytes)";
  } else {
    Line() << "output: DIFFERENT from output.npy (" << bad << " of " << d.expected_len << " bytes)";
  }
  if (bad_io != 0) Line() << "error: the output of the run counted with I/O differs";
  interpreter->~MicroInterpreter();

  // Profiled pass: a fresh interpreter in the same arena on the wrapped registrations.
  g_profiler = new (g_profiler_mem) TickProfiler();
  auto* profiled = new (g_profiled_mem) Resolver();
  d.register_ops(*profiled, true);
  interpreter = Setup(model, *profiled, nullptr);
  if (interpreter == nullptr || !Run(interpreter, nullptr)) Exit(false);
  g_profiler->Reset();
  uint64_t profiled_ticks = 0;
  if (!Run(interpreter, &profiled_ticks)) Exit(false);
  uint64_t sum = 0;
  for (uint32_t i = 0; i < g_profiler->count(); ++i) {
    uint64_t n = ToInstructions(g_profiler->ticks(i));
    sum += n;
    Line() << "op " << i << " " << g_profiler->tag(i) << " " << n;
  }
  Line() << "ops_sum: " << sum << " instructions in " << g_profiler->count()
         << " operators (profiled Invoke: " << ToInstructions(profiled_ticks) << ")";
  bool profiled_ok = Mismatches(interpreter) == 0;
  if (!profiled_ok) Line() << "error: the profiled run's output differs";
  Exit(bad == 0 && bad_io == 0 && profiled_ok);
}

// --- C++ runtime pieces the image does not otherwise have -----------------------------------
extern "C" {
void* __dso_handle = nullptr;
int __aeabi_atexit(void*, void (*)(void*), void*) { return 0; }
void __cxa_pure_virtual() { baseline_fault("pure virtual call"); }
void _init() {}
void _fini() {}
}
void operator delete(void*) noexcept {}
void operator delete(void*, size_t) noexcept {}
