// The Rust plugin's op in a program: `hostrt check affine.mlir --plugin libaffine_plugin.so` (or `hostrt run`).
// RUN: bef_executor %s.bef | FileCheck %s

// CHECK-LABEL: --- Running 'affine'
func.func @affine() {
  %ch = tfrt.new.chain
  %x = "tfrt_dht.const_dense_tensor"() {value = dense<[1.0, -2.0, 0.5]> : tensor<3xf32>} : () -> !t.tensor
  // The defaults (a = 1, b = 0): the identity.
  %y = "tf.Affine"(%x) {T = f32} : (!t.tensor) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [3], values = [1.000000e+00, -2.000000e+00, 5.000000e-01]
  %ch1 = tfrt_dht.print_tensor %y, %ch
  %z = "tf.Affine"(%x, %ch1) {T = f32, a = 2.0 : f32, b = 1.0 : f32} : (!t.tensor, !tfrt.chain) -> !t.tensor
  // CHECK: DenseHostTensor dtype = f32, shape = [3], values = [3.000000e+00, -3.000000e+00, 2.000000e+00]
  %ch2 = tfrt_dht.print_tensor %z, %ch1
  tfrt.return
}
