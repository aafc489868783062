// Loops: tfrt.repeat.i32, tfrt.while (inline and with parallel_iterations), and
// tfrt.parallel_for.i32 splitting its range into tasks; a kernel wider than the executor's
// inline buffers.
// RUN: bef_executor %s.bef | FileCheck %s --dump-input=fail

// CHECK-LABEL: --- Running 'repeat':
// CHECK-NEXT: 'repeat' returned 100
func.func @repeat() -> i32 {
  %n = tfrt.constant.i32 100
  %x = tfrt.constant.i32 0
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    tfrt.return %y : i32
  }
  tfrt.return %r : i32
}

// A tfrt.while body: counts %i up to 10, sums into %acc, prints each new %i.
func.func @step(%i: i32, %acc: i32) -> (i32, i32, i1) {
  %one = tfrt.constant.i32 1
  %next = tfrt.add.i32 %i, %one
  %sum = tfrt.add.i32 %acc, %next
  %ten = tfrt.constant.i32 9
  %more = "tfrt.lessequal.i32"(%next, %ten) : (i32, i32) -> i1
  %ch = tfrt.new.chain
  %ch1 = tfrt.print.i32 %next, %ch
  tfrt.return %next, %sum, %more : i32, i32, i1
}

// Ten bodies, in order.
// CHECK-LABEL: --- Running 'while1':
// CHECK-NEXT: int32 = 1
// CHECK-NEXT: int32 = 2
// CHECK-NEXT: int32 = 3
// CHECK-NEXT: int32 = 4
// CHECK-NEXT: int32 = 5
// CHECK-NEXT: int32 = 6
// CHECK-NEXT: int32 = 7
// CHECK-NEXT: int32 = 8
// CHECK-NEXT: int32 = 9
// CHECK-NEXT: int32 = 10
// CHECK-NEXT: 'while1' returned 10,55
func.func @while1() -> (i32, i32) {
  %go = tfrt.constant.i1 true
  %zero = tfrt.constant.i32 0
  %i, %acc = tfrt.while %go @step(%zero, %zero) parallel_iterations(1) : (i32, i32) -> (i32, i32)
  tfrt.return %i, %acc : i32, i32
}

// parallel_iterations(4): every body starts with the asynchronous kick-off and the loop
// continues in the condition's waiter; the output and results equal the inline loop's.
// CHECK-LABEL: --- Running 'while4':
// CHECK-NEXT: int32 = 1
// CHECK-NEXT: int32 = 2
// CHECK-NEXT: int32 = 3
// CHECK-NEXT: int32 = 4
// CHECK-NEXT: int32 = 5
// CHECK-NEXT: int32 = 6
// CHECK-NEXT: int32 = 7
// CHECK-NEXT: int32 = 8
// CHECK-NEXT: int32 = 9
// CHECK-NEXT: int32 = 10
// CHECK-NEXT: 'while4' returned 10,55
func.func @while4() -> (i32, i32) {
  %go = tfrt.constant.i1 true
  %zero = tfrt.constant.i32 0
  %i, %acc = tfrt.while %go @step(%zero, %zero) parallel_iterations(4) : (i32, i32) -> (i32, i32)
  tfrt.return %i, %acc : i32, i32
}

// [0, 10) in blocks of 3: block 0 runs inline, [2, 4) and [1, 2) become tasks, [2, 4) hands
// [3, 4) to another task: blocks run in the order 0, 2, 1, 3, each printing its bounds. The
// result waits for every body's chain.
// CHECK-LABEL: --- Running 'parallel_for':
// CHECK-NEXT: int32 = 0
// CHECK-NEXT: int32 = 3
// CHECK-NEXT: int32 = 6
// CHECK-NEXT: int32 = 9
// CHECK-NEXT: int32 = 3
// CHECK-NEXT: int32 = 6
// CHECK-NEXT: int32 = 9
// CHECK-NEXT: int32 = 10
// CHECK-NEXT: 'parallel_for' returned !tfrt.chain value
func.func @parallel_for() -> !tfrt.chain {
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 10
  %b = tfrt.constant.i32 3
  %done = tfrt.parallel_for.i32 %s to %e fixed %b {
    %ch = tfrt.new.chain
    %ch1 = tfrt.print.i32 %s, %ch
    %ch2 = tfrt.print.i32 %e, %ch1
    tfrt.return %ch2 : !tfrt.chain
  }
  tfrt.return %done : !tfrt.chain
}

// 20 operands: beyond the 8 the executor keeps on the stack, so its buffers come from the
// allocator.
// CHECK-LABEL: --- Running 'wide':
// CHECK-NEXT: 'wide' returned !tfrt.chain value
func.func @wide() -> !tfrt.chain {
  %v0 = tfrt.new.chain
  %v1 = tfrt.new.chain
  %v2 = tfrt.new.chain
  %v3 = tfrt.new.chain
  %v4 = tfrt.new.chain
  %v5 = tfrt.new.chain
  %v6 = tfrt.new.chain
  %v7 = tfrt.new.chain
  %v8 = tfrt.new.chain
  %v9 = tfrt.new.chain
  %v10 = tfrt.new.chain
  %v11 = tfrt.new.chain
  %v12 = tfrt.new.chain
  %v13 = tfrt.new.chain
  %v14 = tfrt.new.chain
  %v15 = tfrt.new.chain
  %v16 = tfrt.new.chain
  %v17 = tfrt.new.chain
  %v18 = tfrt.new.chain
  %v19 = tfrt.new.chain
  %m = tfrt.merge.chains %v0, %v1, %v2, %v3, %v4, %v5, %v6, %v7, %v8, %v9, %v10, %v11, %v12, %v13, %v14, %v15, %v16, %v17, %v18, %v19 : !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain
  tfrt.return %m : !tfrt.chain
}
