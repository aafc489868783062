func.func @ex2() -> i32 {
  %ch = tfrt.new.chain
  %e  = "tfrt_test.fail"() : () -> i32
  %a  = "tfrt_test.async_constant.i32"() { value = 5 : i32 } : () -> i32
  tfrt.print.i32 %a, %ch
  %r  = tfrt.add.i32 %e, %a
  tfrt.return %r : i32
}
