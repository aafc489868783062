// Programs for the executor's asynchronous entry (executor::raw) in
// compiler/tests/executor.rs: what they check (availability right after kick-off, arguments
// completed late) happens before the driver's await, so no CHECK line can see it.
// `test.async_copy` is a kernel of that test: its result is completed by a queued task.

// A non-strict call starts before its arguments are available.
func.func @first(%a: i32, %b: i32) -> i32 {
  tfrt.return %a : i32
}

func.func @non_strict() -> (i32, i32) {
  %x = tfrt.constant.i32 7
  %slow = "test.async_copy"(%x) : (i32) -> i32
  %r = tfrt.call @first(%x, %slow) : (i32, i32) -> i32
  tfrt.return %r, %slow : i32, i32
}

// 20000 iterations, each waiting on the previous iteration's unavailable result: when the
// argument arrives every waiter would nest inside the previous one without the depth guard.
func.func @waiter_chain(%x: i32) -> i32 {
  %n = tfrt.constant.i32 20000
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %one = tfrt.constant.i32 1
    %y = tfrt.add.i32 %x, %one
    tfrt.return %y : i32
  }
  tfrt.return %r : i32
}

// One register returned twice: one result placeholder shared by two result slots.
func.func @shared_results(%a: i32, %b: i32) -> (i32, i32, i32) {
  %s = tfrt.add.i32 %a, %b
  tfrt.return %s, %a, %s : i32, i32, i32
}

// Asynchronous values, a loop, a parallel loop and a branch, for the allocation-failure sweep.
func.func @mix() -> i32 {
  %n = tfrt.constant.i32 5
  %x = tfrt.constant.i32 1
  %r = tfrt.repeat.i32 %n, %x : i32 {
    %y = "test.async_copy"(%x) : (i32) -> i32
    %z = tfrt.add.i32 %x, %y
    tfrt.return %z : i32
  }
  %s = tfrt.constant.i32 0
  %e = tfrt.constant.i32 7
  %b = tfrt.constant.i32 2
  %done = tfrt.parallel_for.i32 %s to %e fixed %b {
    tfrt.return
  }
  %c = "tfrt.lessequal.i32"(%r, %e) : (i32, i32) -> i1
  %out = tfrt.if %c, %r : (i32) -> (i32) {
    tfrt.return %r : i32
  } else {
    %m = tfrt.add.i32 %r, %r
    tfrt.return %m : i32
  }
  tfrt.return %out : i32
}

// Independent asynchronous kernels, each in a stream of its own: one hand-over gives them
// to the queue as tasks that share one block (docs/execution.md, "Stream tasks").
func.func @fan() -> i32 {
  %x = tfrt.constant.i32 1
  %a = "test.async_copy"(%x) : (i32) -> i32
  %b = "test.async_copy"(%x) : (i32) -> i32
  %c = "test.async_copy"(%x) : (i32) -> i32
  %d = "test.async_copy"(%x) : (i32) -> i32
  %ab = tfrt.add.i32 %a, %b
  %cd = tfrt.add.i32 %c, %d
  %s = tfrt.add.i32 %ab, %cd
  tfrt.return %s : i32
}
