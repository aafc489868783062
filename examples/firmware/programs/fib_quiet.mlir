// Recursive Fibonacci returning its results only (no printing), for the minimal image.
func.func @fib(%n: i32) -> i32 {
  %one = tfrt.constant.i32 1
  %small = "tfrt.lessequal.i32"(%n, %one) : (i32, i32) -> i1
  %r = tfrt.if %small, %n : (i32) -> (i32) {
    tfrt.return %n : i32
  } else {
    %m1 = tfrt.constant.i32 -1
    %a = tfrt.add.i32 %n, %m1
    %b = tfrt.add.i32 %a, %m1
    %fa = tfrt.call @fib(%a) : (i32) -> i32
    %fb = tfrt.call @fib(%b) : (i32) -> i32
    %s = tfrt.add.i32 %fa, %fb
    tfrt.return %s : i32
  }
  tfrt.return %r : i32
}

func.func @fib_driver() -> (i32, i32) {
  %five = tfrt.constant.i32 5
  %f5 = tfrt.call @fib(%five) : (i32) -> i32
  %twelve = tfrt.constant.i32 12
  %f12 = tfrt.call @fib(%twelve) : (i32) -> i32
  tfrt.return %f5, %f12 : i32, i32
}
