module attributes {tfrt.cost_threshold = 1 : i64} {
func.func @ex() {
  %u  = "vt.constant"() { value = 7 : i32 } : () -> !vt.value
  %ch = tfrt.new.chain
  %p  = "vt.constant"() { value = 3 : i32 } : () -> !vt.value
  "vt.print"(%p, %ch) : (!vt.value, !tfrt.chain) -> !tfrt.chain
  "vt.constant"() { value = 9 : i32 } : () -> !vt.value
  tfrt.return
}
}
