// The C plugin's op in a program: `hostrt check scale_by.mlir --plugin libscale_by.so` (or `hostrt run`).
// RUN: bef_executor %s.bef | FileCheck %s

// CHECK-LABEL: --- Running 'scale'
func.func @scale() {
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[[1.0, -2.0], [3.0, 0.5]]> : tensor<2x2xf32>} : () -> !t.tensor
  // The default factor, 2.
  %y = "tf.ScaleBy"(%x) {T = f32} : (!t.tensor) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [2, 2], values = [2.000000e+00, -4.000000e+00, 6.000000e+00, 1.000000e+00]
  %ch1 = tfrt_dht.print_tensor %y, %ch
  %z = "tf.ScaleBy"(%y, %ch1) {T = f32, factor = -0.5 : f32} : (!t.tensor, !tfrt.chain) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [2, 2], values = [-1.000000e+00, 2.000000e+00, -3.000000e+00, -5.000000e-01]
  %ch2 = tfrt_dht.print_tensor %z, %ch1
  tfrt.return
}
