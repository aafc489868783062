func.func @body(%start: i32, %end: i32, %c: !test.atomic.i32) -> !tfrt.chain {
  %d = "tfrt.minus.i32"(%end, %start) : (i32, i32) -> i32
  %ch = "tfrt_test.atomic.add.i32"(%c, %d) : (!test.atomic.i32, i32) -> !tfrt.chain
  tfrt.return %ch : !tfrt.chain
}
func.func @bad(%start: i32, %end: i32) -> i32 {
  tfrt.return %start : i32
}
func.func @for() -> i32 {
  %c = "tfrt_test.atomic.create.i32"() : () -> !test.atomic.i32
  %s = tfrt.constant.i32 3
  %e = tfrt.constant.i32 103
  %b = tfrt.constant.i32 7
  %done = tfrt.parallel_for.i32 %s to %e fixed %b, %c : !test.atomic.i32 {
    %d = "tfrt.minus.i32"(%e, %s) : (i32, i32) -> i32
    %ch = "tfrt_test.atomic.add.i32"(%c, %d) : (!test.atomic.i32, i32) -> !tfrt.chain
    tfrt.return %ch : !tfrt.chain
  }
  %v:2 = "tfrt_test.atomic.get.i32"(%c, %done) : (!test.atomic.i32, !tfrt.chain) -> (i32, !tfrt.chain)
  tfrt.return %v#0 : i32
}
func.func @call() -> i32 {
  %c = "tfrt_test.atomic.create.i32"() : () -> !test.atomic.i32
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 10
  %b = tfrt.constant.i32 3
  %done = tfrt.parallel_call.i32 %s to %e fixed %b @body(%c) : !test.atomic.i32
  %v:2 = "tfrt_test.atomic.get.i32"(%c, %done) : (!test.atomic.i32, !tfrt.chain) -> (i32, !tfrt.chain)
  tfrt.return %v#0 : i32
}
func.func @badbody() -> !tfrt.chain {
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 10
  %b = tfrt.constant.i32 3
  %done = tfrt.parallel_call.i32 %s to %e fixed %b @bad()
  tfrt.return %done : !tfrt.chain
}
func.func @empty() -> !tfrt.chain {
  %s = tfrt.constant.i32 5
  %b = tfrt.constant.i32 3
  %done = tfrt.parallel_for.i32 %s to %s fixed %b {
    tfrt.return
  }
  tfrt.return %done : !tfrt.chain
}
