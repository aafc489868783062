// A header-only C++ layer over TensorFlow's C API for ops and kernels (the seed's
// "ABI-stable C++ header-only API"): RAII statuses and tensors, an OpKernel base class, and
// registration helpers. It calls only the C functions of tensorflow/c/*.h, so a plugin built
// with it keeps the C API's ABI stability; nothing here is compiled into hostrt.
//
//   struct Scale : hostrt::tf::OpKernel {
//     explicit Scale(hostrt::tf::OpKernelConstruction& c) { c.GetAttr("factor", &factor); }
//     void Compute(hostrt::tf::OpKernelContext& c) override { ... }
//     float factor = 1;
//   };
//   extern "C" void TF_InitKernel() { hostrt::tf::RegisterKernel<Scale>("Scale", "CPU"); }
#ifndef HOSTRT_TF_KERNEL_HPP_
#define HOSTRT_TF_KERNEL_HPP_

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"

namespace hostrt {
namespace tf {

// An owned TF_Status.
class Status {
 public:
  Status() : s_(TF_NewStatus()) {}
  Status(TF_Code code, const std::string& message) : Status() { Set(code, message); }
  ~Status() { TF_DeleteStatus(s_); }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;

  bool ok() const { return TF_GetCode(s_) == TF_OK; }
  TF_Code code() const { return TF_GetCode(s_); }
  std::string message() const { return TF_Message(s_); }
  void Set(TF_Code code, const std::string& message) { TF_SetStatus(s_, code, message.c_str()); }
  TF_Status* get() const { return s_; }

 private:
  TF_Status* s_;
};

// An owned TF_Tensor handle (the data is shared with whoever else holds it).
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(TF_Tensor* t) : t_(t) {}
  ~Tensor() { TF_DeleteTensor(t_); }
  Tensor(Tensor&& o) noexcept : t_(std::exchange(o.t_, nullptr)) {}
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  bool valid() const { return t_ != nullptr; }
  TF_DataType dtype() const { return TF_TensorType(t_); }
  int rank() const { return TF_NumDims(t_); }
  int64_t dim(int i) const { return TF_Dim(t_, i); }
  std::vector<int64_t> dims() const {
    std::vector<int64_t> d;
    for (int i = 0; i < rank(); ++i) d.push_back(dim(i));
    return d;
  }
  int64_t num_elements() const { return TF_TensorElementCount(t_); }
  size_t byte_size() const { return TF_TensorByteSize(t_); }
  template <typename T>
  T* data() const {
    return static_cast<T*>(TF_TensorData(t_));
  }
  TF_Tensor* get() const { return t_; }

 private:
  TF_Tensor* t_ = nullptr;
};

// What a kernel's constructor sees.
class OpKernelConstruction {
 public:
  explicit OpKernelConstruction(TF_OpKernelConstruction* c) : c_(c) {}

  bool HasAttr(const char* name) const {
    Status s;
    return TF_OpKernelConstruction_HasAttr(c_, name, s.get());
  }
  bool GetAttr(const char* name, float* v) {
    return Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrFloat(c_, name, v, s); });
  }
  bool GetAttr(const char* name, int64_t* v) {
    return Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrInt64(c_, name, v, s); });
  }
  bool GetAttr(const char* name, int32_t* v) {
    return Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrInt32(c_, name, v, s); });
  }
  bool GetAttr(const char* name, bool* v) {
    TF_Bool b = 0;
    bool ok = Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrBool(c_, name, &b, s); });
    *v = b != 0;
    return ok;
  }
  bool GetAttr(const char* name, TF_DataType* v) {
    return Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrType(c_, name, v, s); });
  }
  bool GetAttr(const char* name, std::string* v) {
    int32_t list = 0, total = 0;
    if (!Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrSize(c_, name, &list, &total, s); })) {
      return false;
    }
    v->assign(total > 0 ? static_cast<size_t>(total) : 0, '\0');
    return Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrString(c_, name, &(*v)[0], v->size(), s); });
  }
  bool GetAttr(const char* name, std::vector<int64_t>* v) {
    int32_t list = 0, total = 0;
    if (!Check(name, [&](TF_Status* s) { TF_OpKernelConstruction_GetAttrSize(c_, name, &list, &total, s); })) {
      return false;
    }
    v->assign(list > 0 ? static_cast<size_t>(list) : 0, 0);
    return Check(name, [&](TF_Status* s) {
      TF_OpKernelConstruction_GetAttrInt64List(c_, name, v->data(), static_cast<int>(v->size()), s);
    });
  }
  // Marks construction failed: the program does not load.
  void Fail(TF_Code code, const std::string& message) {
    Status s(code, message);
    TF_OpKernelConstruction_Failure(c_, s.get());
    failed_ = true;
  }
  bool failed() const { return failed_; }

 private:
  template <typename F>
  bool Check(const char*, F f) {
    Status s;
    f(s.get());
    if (!s.ok()) {
      TF_OpKernelConstruction_Failure(c_, s.get());
      failed_ = true;
    }
    return s.ok();
  }
  TF_OpKernelConstruction* c_;
  bool failed_ = false;
};

// What a kernel's Compute sees.
class OpKernelContext {
 public:
  explicit OpKernelContext(TF_OpKernelContext* c) : c_(c) {}

  int num_inputs() const { return TF_NumInputs(c_); }
  int num_outputs() const { return TF_NumOutputs(c_); }
  // Input `i`, or an invalid tensor after Fail() when `i` is out of range.
  Tensor input(int i) {
    Status s;
    TF_Tensor* t = nullptr;
    TF_GetInput(c_, i, &t, s.get());
    if (!s.ok()) Fail(s);
    return Tensor(s.ok() ? t : nullptr);
  }
  // A new output `i` of the expected dtype; an invalid tensor after Fail() when the arena
  // is out of memory or `i` is out of range.
  Tensor allocate_output(int i, const std::vector<int64_t>& dims) {
    Status s;
    TF_DataType dtype = TF_ExpectedOutputDataType(c_, i);
    TF_Tensor* t = TF_AllocateOutput(c_, i, dtype, dims.data(), static_cast<int>(dims.size()), 0, s.get());
    if (!s.ok()) Fail(s);
    return Tensor(t);
  }
  void Fail(const Status& s) { TF_OpKernelContext_Failure(c_, s.get()); }
  void Fail(TF_Code code, const std::string& message) { Fail(Status(code, message)); }
  TF_OpKernelContext* get() const { return c_; }

 private:
  TF_OpKernelContext* c_;
};

// A kernel: constructed once per use of the op when the program loads, computed per run.
class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual void Compute(OpKernelContext& context) = 0;
};

namespace internal {
template <typename K>
void* Create(TF_OpKernelConstruction* c) {
  OpKernelConstruction construction(c);
  try {
    K* kernel = new K(construction);
    if (construction.failed()) {
      delete kernel;
      return nullptr;
    }
    return kernel;
  } catch (const std::exception& e) {
    construction.Fail(TF_INTERNAL, e.what());
  } catch (...) {
    construction.Fail(TF_INTERNAL, "the kernel's constructor threw");
  }
  return nullptr;
}

template <typename K>
void Compute(void* kernel, TF_OpKernelContext* c) {
  OpKernelContext context(c);
  if (kernel == nullptr) {
    context.Fail(TF_FAILED_PRECONDITION, "the kernel was not constructed");
    return;
  }
  try {
    static_cast<K*>(kernel)->Compute(context);
  } catch (const std::exception& e) {
    context.Fail(TF_INTERNAL, e.what());
  } catch (...) {
    context.Fail(TF_INTERNAL, "the kernel's Compute threw");
  }
}

template <typename K>
void Delete(void* kernel) {
  delete static_cast<K*>(kernel);
}
}  // namespace internal

// Registers kernel class K (constructible from OpKernelConstruction&) for `op` on
// `device`, with type constraints {attr, dtype}; returns the registration status.
template <typename K>
bool RegisterKernel(const char* op, const char* device,
                    std::initializer_list<std::pair<const char*, TF_DataType>> constraints = {},
                    std::string* error = nullptr) {
  TF_KernelBuilder* b = TF_NewKernelBuilder(op, device, &internal::Create<K>, &internal::Compute<K>,
                                            &internal::Delete<K>);
  Status s;
  for (const auto& c : constraints) {
    TF_KernelBuilder_TypeConstraint(b, c.first, c.second, s.get());
  }
  TF_RegisterKernelBuilder(op, b, s.get());
  if (!s.ok() && error != nullptr) *error = s.message();
  return s.ok();
}

// Defines an op: OpBuilder("Op").Input("x: T").Output("y: T").Attr("T: {float}").Register().
class OpBuilder {
 public:
  explicit OpBuilder(const char* name) : b_(TF_NewOpDefinitionBuilder(name)) {}
  ~OpBuilder() {
    if (b_ != nullptr) TF_DeleteOpDefinitionBuilder(b_);
  }
  OpBuilder(const OpBuilder&) = delete;
  OpBuilder& operator=(const OpBuilder&) = delete;
  OpBuilder& Input(const char* spec) {
    TF_OpDefinitionBuilderAddInput(b_, spec);
    return *this;
  }
  OpBuilder& Output(const char* spec) {
    TF_OpDefinitionBuilderAddOutput(b_, spec);
    return *this;
  }
  OpBuilder& Attr(const char* spec) {
    TF_OpDefinitionBuilderAddAttr(b_, spec);
    return *this;
  }
  OpBuilder& ShapeFn(void (*fn)(TF_ShapeInferenceContext*, TF_Status*)) {
    TF_OpDefinitionBuilderSetShapeInferenceFunction(b_, fn);
    return *this;
  }
  // Registers the op (the builder is spent either way).
  bool Register(std::string* error = nullptr) {
    Status s;
    TF_RegisterOpDefinition(std::exchange(b_, nullptr), s.get());
    if (!s.ok() && error != nullptr) *error = s.message();
    return s.ok();
  }

 private:
  TF_OpDefinitionBuilder* b_;
};

// A shape function: every output has input 0's shape.
inline void UnchangedShape(TF_ShapeInferenceContext* ctx, TF_Status* status) {
  TF_ShapeHandle* h = TF_NewShapeHandle();
  TF_ShapeInferenceContextGetInput(ctx, 0, h, status);
  if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, 0, h, status);
  TF_DeleteShapeHandle(h);
}

}  // namespace tf
}  // namespace hostrt

#endif  // HOSTRT_TF_KERNEL_HPP_
