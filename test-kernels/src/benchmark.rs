//! `tfrt_test.benchmark`: runs its region serially, each run in its own task,
//! until `max_count` recorded runs or `duration_secs` of recorded wall time, then prints
//! eleven `BM:<name>:...` summary lines and makes its chain available.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::Cell;
use core::fmt::Write as _;

use hostrt_core::driver::write_c_exp;
use hostrt_core::kernel::{KernelFrame, KernelRegistry, RegistryError};
use hostrt_core::{AsyncValueRef, Chain, Diagnostic, ErrorCode, RcAsyncValue};

use crate::sys;
use hostrt_core::kernel::Detached;

/// Run statistics (TFRT's `BenchmarkStats`).
#[derive(Debug)]
struct Stats {
    name: String,
    num_warmup_runs: i64,
    max_count: i64,
    duration_ns: u64,
    count: i64,
    start_wall: u64,
    start_cpu: u64,
    wall: Vec<u64>,
    cpu: Vec<u64>,
    total_wall: u64,
    total_cpu: u64,
}

impl Stats {
    /// A fresh record: no runs yet, the budget given by the benchmark's attributes.
    fn new(name: &str, num_warmup_runs: i64, max_count: i64, duration_ns: u64) -> Self {
        Stats {
            name: String::from(name),
            num_warmup_runs,
            max_count,
            duration_ns,
            count: 0,
            start_wall: 0,
            start_cpu: 0,
            wall: Vec::new(),
            cpu: Vec::new(),
            total_wall: 0,
            total_cpu: 0,
        }
    }

    fn start_run(&mut self) {
        self.count += 1;
        self.start_cpu = sys::process_cpu_ns();
        self.start_wall = sys::monotonic_ns();
    }

    /// Record the run unless it was a warm-up run.
    fn stop_run(&mut self) {
        if self.count <= self.num_warmup_runs {
            return;
        }
        let wall = sys::monotonic_ns().saturating_sub(self.start_wall);
        let cpu = sys::process_cpu_ns().saturating_sub(self.start_cpu);
        self.wall.push(wall);
        self.cpu.push(cpu);
        self.total_wall += wall;
        self.total_cpu += cpu;
    }

    fn more_runs(&self) -> bool {
        self.count < self.max_count + self.num_warmup_runs && self.total_wall < self.duration_ns
    }

    /// The eleven summary lines.
    fn summary(&mut self) -> String {
        self.wall.sort_unstable();
        self.cpu.sort_unstable();
        // Indices `floor(n * p)` of the sorted lists (0 for an empty list).
        let at = |v: &[u64], p: f64| v.get((v.len() as f64 * p) as usize).copied().unwrap_or(0);
        let name = &self.name;
        let mut s = String::new();
        let _ = writeln!(s, "BM:{name}:Duration(ns): {}", self.total_wall);
        let _ = writeln!(s, "BM:{name}:Count: {}", self.wall.len());
        let _ = writeln!(s, "BM:{name}:Time Min(ns): {}", at(&self.wall, 0.0));
        let _ = writeln!(s, "BM:{name}:Time 50%(ns): {}", at(&self.wall, 0.5));
        let _ = writeln!(s, "BM:{name}:Time 95%(ns): {}", at(&self.wall, 0.95));
        let _ = writeln!(s, "BM:{name}:Time 99%(ns): {}", at(&self.wall, 0.99));
        let _ = writeln!(s, "BM:{name}:CPU Min(ns): {}", at(&self.cpu, 0.0));
        let _ = writeln!(s, "BM:{name}:CPU 50%(ns): {}", at(&self.cpu, 0.5));
        let _ = writeln!(s, "BM:{name}:CPU 95%(ns): {}", at(&self.cpu, 0.95));
        let _ = writeln!(s, "BM:{name}:CPU 99%(ns): {}", at(&self.cpu, 0.99));
        let utilization = if self.total_wall == 0 {
            f64::NAN
        } else {
            self.total_cpu as f64 * 100.0 / self.total_wall as f64
        };
        let _ = write!(s, "BM:{name}:CPU utilization(percent): ");
        let _ = write_c_exp(&mut s, utilization);
        s.push('\n');
        s
    }
}

/// Everything the serial runs share; moved from each run's task to its waiter and on.
struct Runner {
    stats: Stats,
    body: u32,
    args: Vec<RcAsyncValue>,
    ctx: Detached,
    done: AsyncValueRef<Chain>,
}

impl Runner {
    /// Start a run: take the start times, then run the body from a new task (so that
    /// synchronous bodies do not recurse through waiters).
    fn start_run(mut self: Box<Self>) {
        self.stats.start_run();
        let ctx = self.ctx;
        let task = move || self.run_body();
        if let Err(oom) = ctx.host().enqueue_work(task) {
            drop(oom);
            // The runner is gone with the task; its chain was dropped unavailable. Nothing
            // else can be done without memory.
        }
    }

    fn run_body(self: Box<Self>) {
        let slot = [Cell::new(None::<RcAsyncValue>)];
        self.ctx.invoke(self.body, &self.args, &slot);
        let result = match slot[0].take() {
            Some(r) => r,
            None => return self.fail(Diagnostic::internal("tfrt_test.benchmark: the body set no result")),
        };
        let keep = result.clone();
        let waiter = move || {
            drop(keep);
            self.finish_run();
        };
        if let Err(oom) = result.and_then(waiter) {
            // No memory to wait: give up with an error chain.
            let waiter = oom.into_inner();
            drop(waiter);
        }
    }

    fn finish_run(mut self: Box<Self>) {
        self.stats.stop_run();
        if self.stats.more_runs() {
            return self.start_run();
        }
        let summary = self.stats.summary();
        self.ctx.host().print(format_args!("{summary}"));
        self.done.emplace(Chain);
    }

    fn fail(self: Box<Self>, diag: Diagnostic) {
        self.ctx.report_error(diag, &[&*self.done]);
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        // A runner dropped before its summary (out of memory) leaves an error, not a hang.
        if !self.done.is_available() {
            self.done.set_error(Diagnostic::new(
                ErrorCode::ResourceExhausted,
                "tfrt_test.benchmark ran out of memory",
            ));
        }
    }
}

/// Attributes (sorted by name): `duration_secs`, `max_count`, `name`, `num_warmup_runs`;
/// operands: the body's arguments; one region, the body.
fn benchmark(frame: &KernelFrame<'_>) {
    let attrs = frame.attrs();
    let int = |i: usize| attrs.get(i).and_then(|a| a.get::<i32>());
    let (Some(duration_secs), Some(max_count), Some(name), Some(num_warmup_runs)) =
        (int(0), int(1), attrs.get(2).and_then(|a| a.get_str()), int(3))
    else {
        return frame.report_error(Diagnostic::new(
            ErrorCode::InvalidArgument,
            "tfrt_test.benchmark needs duration_secs, max_count, name and num_warmup_runs",
        ));
    };
    let ctx = Detached::of(frame);
    // The compiler checks that the body returns exactly one value; a body of another arity
    // yields error results from the executor.
    let (Some(&body), Some(_), 1) = (frame.regions().first(), frame.invoker(), frame.regions().len()) else {
        return frame.report_error(Diagnostic::internal(
            "Benchmark op requires the input function have exactly one return value",
        ));
    };
    let done = match AsyncValueRef::<Chain>::unconstructed(frame.exec_ctx().allocator()) {
        Ok(d) => d,
        Err(e) => return frame.report_error(e.into()),
    };
    frame.set_result(0, RcAsyncValue::clone(&done));
    let stats = Stats::new(
        name,
        i64::from(num_warmup_runs),
        i64::from(max_count),
        u64::try_from(duration_secs).unwrap_or(0).saturating_mul(1_000_000_000),
    );
    let runner = Runner { stats, body, args: frame.args().to_vec(), ctx, done };
    Box::new(runner).start_run();
}

pub(crate) fn register<const N: usize>(r: &mut KernelRegistry<N>) -> Result<(), RegistryError> {
    r.add_kernel("tfrt_test.benchmark", benchmark)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_and_percentiles() {
        let mut s = Stats {
            wall: alloc::vec![40, 10, 30, 20],
            cpu: alloc::vec![4, 1, 3, 2],
            total_wall: 100,
            total_cpu: 10,
            ..Stats::new("add.i32", 1, 4, u64::MAX)
        };
        let text = s.summary();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[0], "BM:add.i32:Duration(ns): 100");
        assert_eq!(lines[1], "BM:add.i32:Count: 4");
        assert_eq!(lines[2], "BM:add.i32:Time Min(ns): 10");
        assert_eq!(lines[3], "BM:add.i32:Time 50%(ns): 30");
        assert_eq!(lines[4], "BM:add.i32:Time 95%(ns): 40");
        assert_eq!(lines[6], "BM:add.i32:CPU Min(ns): 1");
        assert_eq!(lines[10], "BM:add.i32:CPU utilization(percent): 1.000000e+01");
    }

    #[test]
    fn run_budget() {
        let mut s = Stats::new("", 1, 2, u64::MAX);
        let mut runs = 0;
        loop {
            s.start_run();
            s.stop_run();
            runs += 1;
            if !s.more_runs() {
                break;
            }
        }
        assert_eq!(runs, 3, "one warm-up run and max_count recorded runs");
        assert_eq!(s.wall.len(), 2);
    }
}
