func.func private @no_such_native(%a: i32) -> i32 attributes {tfrt.native}
func.func @f() -> i32 {
  %a = tfrt.constant.i32 5
  tfrt.return %a : i32
}
