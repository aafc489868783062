// Errors and cancellation poison only what depends on them (docs/execution.md, "Errors and
// cancellation").
// RUN: bef_executor %s.bef 2>&1 | FileCheck %s --dump-input=fail
// RUN: bef_executor %s.bef --print_error_code | FileCheck %s --check-prefix=CODE

// CODE: 'poison' returned <<error: Divide by zero, code: INTERNAL>>,84,<<error: Divide by zero, code: INTERNAL>>
// CODE: 'cancel_after' returned 2,<<error: Cancelled, code: CANCELLED>>
// CODE: 'cancel_in_loop' returned <<error: Cancelled, code: CANCELLED>>

// A failing kernel poisons its users (the print of %bad is skipped) but not the rest; the
// runtime error names the kernel's location. The print of %good is in a stream of its own,
// a task that runs when the driver quiesces, after the results are printed.
// CHECK-LABEL: --- Running 'poison':
// CHECK-NEXT: 'poison' returned <<error: Divide by zero>>,84,<<error: Divide by zero>>
// CHECK-NEXT: int32 = 84
// CHECK-NOT: int32
func.func @poison() -> (i32, i32, i32) {
  %zero = tfrt.constant.i32 0
  %x = tfrt.constant.i32 42
  // expected-error @+1 {{runtime error: Divide by zero}}
  %q, %rem = tfrt.div.i32 %x, %zero
  %bad = tfrt.add.i32 %q, %x
  %good = tfrt.add.i32 %x, %x
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %bad, %ch
  %ch2 = tfrt.print.i32 %good, %ch
  tfrt.return %bad, %good, %rem : i32, i32, i32
}

// Kernels ordered after the cancellation (through its chain) are skipped; those that ran
// before keep their values.
// CHECK-LABEL: --- Running 'cancel_after':
// CHECK-NEXT: int32 = 2
// CHECK-NEXT: 'cancel_after' returned 2,<<error: Cancelled>>
func.func @cancel_after() -> (i32, i32) {
  %one = tfrt.constant.i32 1
  %before = tfrt.add.i32 %one, %one
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %before, %ch
  %z, %c = "tfrt_test.cancel"(%ch1) : (!tfrt.chain) -> (i32, !tfrt.chain)
  %after = "tfrt.add.i32"(%one, %one, %c) : (i32, i32, !tfrt.chain) -> i32
  tfrt.return %before, %after : i32, i32
}

// Cancelling inside the tenth iteration of a 1000-iteration loop stops the loop: its result
// is the cancellation error.
// CHECK-LABEL: --- Running 'cancel_in_loop':
// CHECK-NEXT: 'cancel_in_loop' returned <<error: Cancelled>>
func.func @cancel_in_loop() -> i32 {
  %n = tfrt.constant.i32 1000
  %x = tfrt.constant.i32 0
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    %ten = tfrt.constant.i32 10
    %stop = tfrt.equal.i32 %y, %ten
    %z = tfrt.if %stop, %y : (i32) -> (i32) {
      %ch = tfrt.new.chain
      %zero, %c = "tfrt_test.cancel"(%ch) : (!tfrt.chain) -> (i32, !tfrt.chain)
      tfrt.return %y : i32
    } else {
      tfrt.return %y : i32
    }
    tfrt.return %z : i32
  }
  tfrt.return %r : i32
}
