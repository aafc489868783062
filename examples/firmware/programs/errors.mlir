// A kernel error poisons only what depends on it; independent work still runs.
func.func @divide_by_zero() -> (i32, i32, i64) {
  %zero = tfrt.constant.i32 0
  %x = tfrt.constant.i32 42
  %q, %r = tfrt.div.i32 %x, %zero
  %poisoned = tfrt.add.i32 %q, %x
  %fine = tfrt.add.i32 %x, %x
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %poisoned, %ch
  %ch2 = tfrt.print.i32 %fine, %ch
  %y = tfrt.constant.i64 7
  %z = tfrt.add.i64 %y, %y
  tfrt.return %poisoned, %fine, %z : i32, i32, i64
}

func.func @error_through_call() -> i32 {
  %zero = tfrt.constant.i32 0
  %r = tfrt.call @quotient(%zero) : (i32) -> i32
  tfrt.return %r : i32
}

func.func @quotient(%d: i32) -> i32 {
  %x = tfrt.constant.i32 1
  %q, %rem = tfrt.div.i32 %x, %d
  tfrt.return %q : i32
}
