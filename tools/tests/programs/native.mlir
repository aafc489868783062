func.func private @native_add(%a: i32, %b: i32) -> i32 attributes {tfrt.native}
func.func private @native_async_add(%a: i32, %b: i32) -> i32 attributes {tfrt.native}
func.func private @native_error() -> i32 attributes {tfrt.native}
func.func private @native_sink(%a: i32) -> () attributes {tfrt.native}
func.func private @native_async_sink(%a: i32) -> !tfrt.chain attributes {tfrt.native}

func.func @sync() -> i32 {
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  %r = tfrt.call @native_add(%a, %b) : (i32, i32) -> i32
  tfrt.return %r : i32
}
func.func @pending() -> i32 {
  %a = tfrt.constant.i32 5
  %b = "tfrt_test.async_constant.i32"() { value = 6 : i32 } : () -> i32
  %r = tfrt.call @native_async_add(%a, %b) : (i32, i32) -> i32
  %s = tfrt.call @native_add(%r, %b) : (i32, i32) -> i32
  tfrt.call @native_sink(%s) : (i32) -> ()
  tfrt.return %s : i32
}
func.func @chain() -> !tfrt.chain {
  %a = tfrt.constant.i32 5
  %c = tfrt.call @native_async_sink(%a) : (i32) -> !tfrt.chain
  tfrt.return %c : !tfrt.chain
}
