// A hostrt plugin in C++ through the header-only layer hostrt/tf_kernel.hpp: op Clip
// (y = min(max(x, lo), hi)) with float attrs and a shape function, and its kernel class.
// Build it with nothing to link:
//
//   c++ -std=c++17 -shared -fPIC -I capi/include examples/plugins/cpp/clip.cc -o libclip.so
//   hostrt run examples/plugins/cpp/clip.mlir --plugin ./libclip.so
#include <algorithm>

#include "hostrt/tf_kernel.hpp"

namespace {

class Clip : public hostrt::tf::OpKernel {
 public:
  explicit Clip(hostrt::tf::OpKernelConstruction& c) {
    c.GetAttr("lo", &lo_);
    c.GetAttr("hi", &hi_);
    if (lo_ > hi_) c.Fail(TF_INVALID_ARGUMENT, "Clip needs lo <= hi");
  }

  void Compute(hostrt::tf::OpKernelContext& c) override {
    hostrt::tf::Tensor x = c.input(0);
    if (!x.valid()) return;
    hostrt::tf::Tensor y = c.allocate_output(0, x.dims());
    if (!y.valid()) return;
    const float* in = x.data<float>();
    float* out = y.data<float>();
    for (int64_t i = 0; i < x.num_elements(); ++i) out[i] = std::min(std::max(in[i], lo_), hi_);
  }

 private:
  float lo_ = 0, hi_ = 0;
};

}  // namespace

extern "C" void TF_InitKernel() {
  hostrt::tf::OpBuilder("Clip")
      .Attr("T: {float}")
      .Attr("lo: float = 0.0")
      .Attr("hi: float = 6.0")
      .Input("x: T")
      .Output("y: T")
      .ShapeFn(&hostrt::tf::UnchangedShape)
      .Register();
  hostrt::tf::RegisterKernel<Clip>("Clip", "CPU", {{"T", TF_FLOAT}});
}
