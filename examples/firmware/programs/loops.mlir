// Loop-carried values, floats and chains. The loop body's arguments are named after the
// loop's operands (%sum, %i, %g).
func.func @sum_to_100() -> (i32, f32, !tfrt.chain) {
  %n = tfrt.constant.i32 100
  %sum = tfrt.constant.i32 0
  %i = tfrt.constant.i32 0
  %g = tfrt.constant.f32 0.5
  %total, %count, %grown = tfrt.repeat.i32 %n, %sum, %i, %g : i32, i32, f32 {
    %one = tfrt.constant.i32 1
    %next = tfrt.add.i32 %i, %one
    %s2 = tfrt.add.i32 %sum, %next
    %g2 = tfrt.add.f32 %g, %g
    tfrt.return %s2, %next, %g2 : i32, i32, f32
  }
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %total, %ch
  %ch2 = tfrt.print.f32 %grown, %ch1
  %m = tfrt.merge.chains %ch1, %ch2 : !tfrt.chain, !tfrt.chain
  tfrt.return %total, %grown, %m : i32, f32, !tfrt.chain
}
