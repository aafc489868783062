// A native function declaration: this image is built without hostrt-core's `native`
// feature, so loading the program must fail with BefErrorKind::NativeNotBuilt.
func.func private @native_add(%a: i32, %b: i32) -> i32 attributes {tfrt.native}

func.func @main() -> i32 {
  %one = tfrt.constant.i32 1
  %two = tfrt.call @native_add(%one, %one) : (i32, i32) -> i32
  tfrt.return %two : i32
}
