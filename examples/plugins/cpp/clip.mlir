// The C++ plugin's op in a program: `hostrt check clip.mlir --plugin libclip.so` (or `hostrt run`).
// RUN: bef_executor %s.bef | FileCheck %s

// CHECK-LABEL: --- Running 'clip'
func.func @clip() {
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[[-1.0, 2.5], [7.0, 4.0]]> : tensor<2x2xf32>} : () -> !t.tensor
  // The defaults: ReLU6.
  %y = "tf.Clip"(%x) {T = f32} : (!t.tensor) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [2, 2], values = [0.000000e+00, 2.500000e+00, 6.000000e+00, 4.000000e+00]
  %ch1 = tfrt_dht.print_tensor %y, %ch
  %z = "tf.Clip"(%x, %ch1) {T = f32, hi = 3.0 : f32, lo = 1.0 : f32} : (!t.tensor, !tfrt.chain) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [2, 2], values = [1.000000e+00, 2.500000e+00, 3.000000e+00, 3.000000e+00]
  %ch2 = tfrt_dht.print_tensor %z, %ch1
  tfrt.return
}
