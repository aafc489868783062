// Calls, branches and recursion through the executor: tfrt.call, tfrt.if, tfrt.cond,
// tfrt.case, tfrt.once and casts.
// RUN: bef_executor %s.bef | FileCheck %s --dump-input=fail

// The firmware example's recursive Fibonacci.
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

// CHECK-LABEL: --- Running 'fib15':
// CHECK-NEXT: int32 = 610
// CHECK-NEXT: 'fib15' returned 610
func.func @fib15() -> i32 {
  %n = tfrt.constant.i32 15
  %f = tfrt.call @fib(%n) : (i32) -> i32
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %f, %ch
  tfrt.return %f : i32
}

// A small fib for the allocation-failure sweep (compiler/tests/executor.rs).
// CHECK-LABEL: --- Running 'fib6':
// CHECK-NEXT: 'fib6' returned 8
func.func @fib6() -> i32 {
  %n = tfrt.constant.i32 6
  %f = tfrt.call @fib(%n) : (i32) -> i32
  tfrt.return %f : i32
}

// 3000 nested tfrt.call + tfrt.if levels used to overflow an 8 MiB stack (a few KiB per
// level); past HostContext::max_call_depth calls start in tasks, and the chain of 6000
// result forwarders then resolves without recursion.
func.func @down(%n: i32) -> i32 {
  %zero = tfrt.constant.i32 0
  %done = "tfrt.lessequal.i32"(%n, %zero) : (i32, i32) -> i1
  %r = tfrt.if %done, %n : (i32) -> (i32) {
    tfrt.return %n : i32
  } else {
    %m1 = tfrt.constant.i32 -1
    %k = tfrt.add.i32 %n, %m1
    %x = tfrt.call @down(%k) : (i32) -> i32
    tfrt.return %x : i32
  }
  tfrt.return %r : i32
}

// CHECK-LABEL: --- Running 'deep':
// CHECK-NEXT: 'deep' returned 0
func.func @deep() -> i32 {
  %n = tfrt.constant.i32 3000
  %r = tfrt.call @down(%n) : (i32) -> i32
  tfrt.return %r : i32
}

func.func @one() -> i32 {
  %x = tfrt.constant.i32 1
  tfrt.return %x : i32
}

func.func @two() -> i32 {
  %x = tfrt.constant.i32 2
  tfrt.return %x : i32
}

// An out-of-range case index picks the last branch; f32 2.75 -> i64 2 -> f32 2.0.
// CHECK-LABEL: --- Running 'cond_case_casts':
// CHECK-NEXT: 'cond_case_casts' returned 2,1,2,2,2.000000e+00
func.func @cond_case_casts() -> (i32, i32, i32, i64, f32) {
  %t = tfrt.constant.i1 false
  %c = tfrt.cond %t @one @two () : () -> (i32)
  %i = tfrt.constant.i32 0
  %first = tfrt.case %i [@one, @two] () : () -> (i32)
  %big = tfrt.constant.i32 7
  %last = tfrt.case %big [@one, @two] () : () -> (i32)
  %f = tfrt.constant.f32 2.75
  %n = "tfrt.cast.f32_to_i64"(%f) : (f32) -> i64
  %m = "tfrt.cast.i64_to_f32"(%n) : (i64) -> f32
  tfrt.return %c, %first, %last, %n, %m : i32, i32, i32, i64, f32
}

func.func @hello(%x: i32, %ch: !tfrt.chain) -> i32 {
  %ch1 = tfrt.print.i32 %x, %ch
  tfrt.return %x : i32
}

// tfrt.once runs its function once per request: one print, and both calls return the
// first run's result (which one runs first is the scheduler's choice).
// CHECK-LABEL: --- Running 'once':
// CHECK-NEXT: int32 = [[FIRST:[12]]]
// CHECK-NEXT: 'once' returned [[FIRST]],[[FIRST]]
func.func @once() -> (i32, i32) {
  %ch = tfrt.new.chain
  %a = tfrt.constant.i32 1
  %b = tfrt.constant.i32 2
  %r1 = tfrt.once @hello(%a, %ch) : (i32, !tfrt.chain) -> (i32)
  %r2 = "tfrt.once"(%b, %ch) {function = @hello} : (i32, !tfrt.chain) -> i32
  tfrt.return %r1, %r2 : i32, i32
}
