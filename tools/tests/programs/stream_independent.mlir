func.func @ex() {
  "vt.constant"() { value = 1 : i32 } : () -> !vt.value
  "vt.constant"() { value = 2 : i32 } : () -> !vt.value
  "vt.constant"() { value = 3 : i32 } : () -> !vt.value
  "vt.constant"() { value = 4 : i32 } : () -> !vt.value
  tfrt.return
}
