//! [`Recorder`]: an [`Observer`] of runs (docs/profiling.md) that keeps a profile per
//! kernel (calls, time, allocations) and, when asked, a trace of every kernel, call,
//! work-queue task and device submission in Chrome's trace event format, which `ui.perfetto.dev` and
//! `chrome://tracing` open.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use hostrt_core::observe::{CallSpan, KernelSpan, Observer};

/// One kernel of a loaded program, as profiled.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRow {
    /// Where the kernel came from: a model's layer (`op#3 CONV_2D:conv1/Relu`), a program's
    /// `file:line:column`, or the kernel's name when the program records no location.
    pub location: String,
    /// The kernel's name (`nn.conv_2d.f32`).
    pub kernel: String,
    /// Times it ran.
    pub calls: u64,
    /// Nanoseconds from its begin to its end, summed over its calls (kernels it ran inside
    /// itself, as `tfrt.call` does, included).
    pub total_ns: u64,
    /// `total_ns` without the time of the kernels it ran inside itself.
    pub self_ns: u64,
    /// Allocations made while it ran, less those of the kernels it ran inside itself,
    /// summed over its calls (on several threads, others' allocations meanwhile count too).
    pub allocations: u64,
    /// Bytes those allocations requested, when the allocator counts them.
    pub allocated_bytes: Option<u64>,
}

/// A whole profile: the rows, sorted by self time (most first), and the calls they ran in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProfileTable {
    /// One row per kernel.
    pub rows: Vec<ProfileRow>,
    /// Calls of a program's functions from outside it.
    pub calls: u64,
    /// Nanoseconds those calls took, summed.
    pub call_ns: u64,
    /// Most allocator bytes in use during one call, above what was in use when it began,
    /// sampled as each kernel ended; `None` when the allocator keeps no statistics. Meant for
    /// calls made one at a time: calls that overlap share one baseline.
    pub peak_per_call: Option<u64>,
}

/// The kind of a trace event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Begin,
    End,
    Counter,
    /// Device work handed over (an async span: `value` is its id).
    DeviceBegin,
    /// Device work known complete.
    DeviceEnd,
}

/// One trace event: `name` indexes the recorder's names.
#[derive(Clone, Copy, Debug)]
struct Event {
    phase: Phase,
    name: u32,
    thread: u32,
    ns: u64,
    /// A counter's value; a device span's id.
    value: u64,
}

#[derive(Default)]
struct State {
    rows: Vec<ProfileRow>,
    /// Row of each kernel seen, by [`KernelSpan::key`].
    index: HashMap<(usize, u32, u32), usize>,
    /// Trace names: each row's label, then call and task names.
    names: Vec<String>,
    /// Name index of each row.
    row_names: Vec<u32>,
    named: HashMap<String, u32>,
    threads: HashMap<u32, String>,
    events: Vec<Event>,
    calls: u64,
    call_ns: u64,
    /// Allocator bytes in use when the current call began (one call at a time).
    call_base: Option<u64>,
    /// The last device span's id.
    device_spans: u64,
    call_peak: u64,
    peak_per_call: Option<u64>,
}

/// Counts, times and optionally traces what runs on a host it observes. Install it with
/// `HostContext::with_observer` (kernels and calls) and
/// [`MultiThreadedWorkQueue::set_task_observer`](crate::MultiThreadedWorkQueue::set_task_observer)
/// (tasks); read it with [`table`](Self::table), [`write_profile`](Self::write_profile) and
/// [`write_trace`](Self::write_trace).
///
/// ```
/// # use hostrt_core::basic_kernels::integer;
/// # use hostrt_core::executor::Program;
/// # use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};
/// let text = r#"func.func @add() -> i32 {
///   %a = tfrt.constant.i32 1
///   %b = "tfrt.add.i32"(%a, %a) : (i32, i32) -> i32
///   tfrt.return %b : i32
/// }"#;
/// let bef = hostrt_compiler::compile("add.mlir", text, Default::default()).unwrap();
/// let bef = hostrt_std::AlignedBytes::new(&bef);
/// let registry = KernelRegistry::<2>::with_entries(&[integer::CONSTANT_I32, integer::ADD_I32]).unwrap();
/// let system: &'static hostrt_std::SystemAllocator = Box::leak(Box::new(hostrt_std::SystemAllocator::new()));
/// let alloc = Allocator::register(system).unwrap();
/// let queue = SingleThreadedWorkQueue::new();
///
/// let recorder = hostrt_std::Recorder::new(true);
/// let host = HostContext::new(alloc, &queue).with_observer(&recorder);
/// let program = Program::load(bef.as_bytes(), &registry, &host).unwrap();
/// program.call(&host, "add", &[]).unwrap();
///
/// let table = recorder.table();
/// assert_eq!(table.calls, 1);
/// assert!(table.rows.iter().any(|r| r.kernel == "tfrt.add.i32" && r.calls == 1));
/// let mut json = Vec::new();
/// recorder.write_trace(&mut json).unwrap();
/// assert!(json.starts_with(b"{\"traceEvents\":["));
/// ```
pub struct Recorder {
    /// Tells this recorder's open kernels on a thread from another's (a kernel that began
    /// under a recorder since dropped or stopped never ends under this one).
    id: u32,
    epoch: Instant,
    trace: bool,
    state: Mutex<State>,
}

/// The next [`Recorder::id`].
static NEXT_RECORDER: AtomicU32 = AtomicU32::new(1);

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("trace", &self.trace).finish_non_exhaustive()
    }
}

/// The next thread number for traces (1, 2, ... in the order threads first record).
static NEXT_THREAD: AtomicU32 = AtomicU32::new(1);

thread_local! {
    /// This thread's number in traces (0: not yet given one).
    static THREAD: Cell<u32> = const { Cell::new(0) };
    /// The kernels open on this thread, innermost last (for self times and allocations).
    static OPEN: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}

/// A kernel that began on this thread and has not ended.
struct Open {
    /// The recorder it began under ([`Recorder::id`]).
    owner: u32,
    /// Its row.
    row: usize,
    /// The allocator's counts of allocations and bytes when it began.
    allocations: u64,
    bytes: u64,
    /// Nanoseconds, allocations and bytes of the kernels it ran inside itself so far.
    inner: [u64; 3],
}

/// This thread's number in traces.
fn thread_number() -> u32 {
    THREAD.with(|t| {
        if t.get() == 0 {
            t.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

/// What a kernel's row is called: its location (a name location alone, a file location as
/// `file:line:column`), else its kernel name.
fn label(span: &KernelSpan<'_>) -> String {
    match span.location {
        Some(l) if l.line == 0 => l.file.to_string(),
        Some(l) => format!("{}:{}:{}", l.file, l.line, l.column),
        None => span.name.to_string(),
    }
}

/// Allocation counters now: (allocations, bytes requested, bytes in use).
fn counters(alloc: hostrt_core::Allocator) -> Option<(u64, Option<u64>, u64)> {
    alloc.stats().map(|s| (s.total_allocations as u64, s.allocated_bytes.map(|b| b as u64), s.in_use as u64))
}

/// Locks ignoring poisoning: a panic elsewhere must not stop the profile being read.
fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl State {
    /// The name index of `name`, added once.
    fn name(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.named.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.named.insert(name.to_string(), i);
        i
    }

    /// The row of `span`'s kernel, made on first sight.
    fn row(&mut self, span: &KernelSpan<'_>) -> usize {
        if let Some(&r) = self.index.get(&span.key) {
            return r;
        }
        let r = self.rows.len();
        let location = label(span);
        let name = self.name(&location);
        self.rows.push(ProfileRow {
            location,
            kernel: span.name.to_string(),
            calls: 0,
            total_ns: 0,
            self_ns: 0,
            allocations: 0,
            allocated_bytes: None,
        });
        self.row_names.push(name);
        self.index.insert(span.key, r);
        r
    }

    /// Note the thread's name the first time it records.
    fn thread(&mut self, thread: u32) {
        self.threads.entry(thread).or_insert_with(|| {
            std::thread::current().name().map_or_else(|| format!("thread {thread}"), str::to_string)
        });
    }
}

impl Recorder {
    /// A recorder that profiles, and also keeps trace events when `trace` is set (memory grows
    /// by 32 bytes per event: two per kernel run).
    pub fn new(trace: bool) -> Self {
        let id = NEXT_RECORDER.fetch_add(1, Ordering::Relaxed);
        Recorder { id, epoch: Instant::now(), trace, state: Mutex::new(State::default()) }
    }

    /// Nanoseconds since the recorder was made.
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// A begin or end event named `name` on this thread at `ns`, when tracing.
    fn span_event(&self, state: &mut State, phase: Phase, name: u32, ns: u64) {
        if self.trace {
            let thread = thread_number();
            state.thread(thread);
            state.events.push(Event { phase, name, thread, ns, value: 0 });
        }
    }

    /// Forgets everything recorded so far (the kernels' rows, the calls, the trace).
    pub fn clear(&self) {
        *lock(&self.state) = State::default();
    }

    /// The profile so far: rows by self time, most first.
    pub fn table(&self) -> ProfileTable {
        let s = lock(&self.state);
        let mut rows = s.rows.clone();
        rows.sort_by(|a, b| b.self_ns.cmp(&a.self_ns).then(a.location.cmp(&b.location)));
        ProfileTable { rows, calls: s.calls, call_ns: s.call_ns, peak_per_call: s.peak_per_call }
    }

    /// Writes the profile as a table (`csv`: comma-separated values with a header line).
    pub fn write_profile(&self, out: &mut dyn std::io::Write, csv: bool) -> std::io::Result<()> {
        let t = self.table();
        let text = if csv { t.csv() } else { t.text() };
        out.write_all(text.as_bytes())
    }

    /// Writes the trace (Chrome's trace event format, JSON object form): per thread its
    /// name, then every event in the order it happened on its thread, timestamps in
    /// microseconds from the recorder's start. Empty unless made with `trace`.
    pub fn write_trace(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let s = lock(&self.state);
        let mut json = String::from("{\"traceEvents\":[");
        let mut first = true;
        let mut sep = |json: &mut String| {
            if !std::mem::take(&mut first) {
                json.push(',');
            }
        };
        let mut threads: Vec<_> = s.threads.iter().collect();
        threads.sort();
        for (tid, name) in threads {
            sep(&mut json);
            let _ = write!(
                json,
                "{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
                quoted(name)
            );
        }
        for e in &s.events {
            sep(&mut json);
            let name = quoted(&s.names[e.name as usize]);
            let ts = format!("{}.{:03}", e.ns / 1000, e.ns % 1000);
            let _ = match e.phase {
                Phase::Begin | Phase::End => write!(
                    json,
                    "{{\"name\":{name},\"ph\":\"{}\",\"ts\":{ts},\"pid\":1,\"tid\":{}}}",
                    if e.phase == Phase::Begin { 'B' } else { 'E' },
                    e.thread
                ),
                Phase::Counter => write!(
                    json,
                    "{{\"name\":{name},\"ph\":\"C\",\"ts\":{ts},\"pid\":1,\"tid\":{},\"args\":{{\"bytes\":{}}}}}",
                    e.thread, e.value
                ),
                Phase::DeviceBegin | Phase::DeviceEnd => write!(
                    json,
                    "{{\"name\":{name},\"cat\":\"device\",\"ph\":\"{}\",\"id\":{},\"ts\":{ts},\"pid\":1,\"tid\":{}}}",
                    if e.phase == Phase::DeviceBegin { 'b' } else { 'e' },
                    e.value,
                    e.thread
                ),
            };
        }
        // Spans still open (a kernel running on another thread as the trace is written, or one
        // whose end came after a stop) end now, innermost first, so every begin has its end.
        let ns = self.now();
        let mut open: HashMap<u32, Vec<u32>> = HashMap::new();
        for e in &s.events {
            match e.phase {
                Phase::Begin => open.entry(e.thread).or_default().push(e.name),
                Phase::End => drop(open.entry(e.thread).or_default().pop()),
                Phase::Counter | Phase::DeviceBegin | Phase::DeviceEnd => {}
            }
        }
        let mut open: Vec<_> = open.into_iter().collect();
        open.sort_unstable();
        for (thread, names) in open {
            for &name in names.iter().rev() {
                sep(&mut json);
                let last = s.events.iter().rev().find(|e| e.thread == thread).map_or(ns, |e| e.ns.max(ns));
                let _ = write!(
                    json,
                    "{{\"name\":{},\"ph\":\"E\",\"ts\":{}.{:03},\"pid\":1,\"tid\":{thread}}}",
                    quoted(&s.names[name as usize]),
                    last / 1000,
                    last % 1000
                );
            }
        }
        json.push_str("],\"displayTimeUnit\":\"ns\"}\n");
        out.write_all(json.as_bytes())
    }
}

/// `s` as a JSON string.
fn quoted(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(q, "\\u{:04x}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Told of every task a [`MultiThreadedWorkQueue`](crate::MultiThreadedWorkQueue) runs, on
/// the thread that runs it
/// ([`set_task_observer`](crate::MultiThreadedWorkQueue::set_task_observer)); quick, and
/// never panicking, as an [`Observer`].
pub trait TaskObserver: Send + Sync {
    /// A task begins (`blocking`: one of the blocking pool's); the mark goes to
    /// [`task_end`](Self::task_end).
    fn task_begin(&self, blocking: bool) -> u64;
    /// That task returned.
    fn task_end(&self, blocking: bool, mark: u64);
}

impl TaskObserver for Recorder {
    fn task_begin(&self, blocking: bool) -> u64 {
        let ns = self.now();
        self.task_event(blocking, Phase::Begin, ns);
        ns
    }

    fn task_end(&self, blocking: bool, _mark: u64) {
        self.task_event(blocking, Phase::End, self.now());
    }
}

impl Recorder {
    /// A task span's begin or end on this thread at `ns`, when tracing.
    fn task_event(&self, blocking: bool, phase: Phase, ns: u64) {
        if self.trace {
            let mut s = lock(&self.state);
            let name = s.name(if blocking { "blocking task" } else { "task" });
            self.span_event(&mut s, phase, name, ns);
        }
    }
}

impl Observer for Recorder {
    fn kernel_begin(&self, kernel: &KernelSpan<'_>) -> u64 {
        let counted = counters(kernel.allocator);
        let (allocations, bytes) = counted.map_or((0, 0), |(a, b, _)| (a, b.unwrap_or(0)));
        let mut s = lock(&self.state);
        let row = s.row(kernel);
        let name = s.row_names[row];
        OPEN.with(|o| o.borrow_mut().push(Open { owner: self.id, row, allocations, bytes, inner: [0; 3] }));
        let ns = self.now();
        self.span_event(&mut s, Phase::Begin, name, ns);
        ns
    }

    fn kernel_end(&self, kernel: &KernelSpan<'_>, mark: u64) {
        let ns = self.now();
        let counted = counters(kernel.allocator);
        let total = [
            ns.saturating_sub(mark),
            counted.map_or(0, |(a, _, _)| a),
            counted.and_then(|(_, b, _)| b).unwrap_or(0),
        ];
        // This kernel's own share: its span less the kernels it ran inside itself, which
        // its parent, if any, counts as inner.
        let Some((row, own)) = OPEN.with(|o| {
            let mut o = o.borrow_mut();
            // Only an end of this recorder's own open kernel counts: one that began before
            // this recorder started (under another, since stopped) ends unrecorded.
            let open = o.pop_if(|open| open.owner == self.id)?;
            let all = [total[0], total[1].wrapping_sub(open.allocations), total[2].wrapping_sub(open.bytes)];
            if let Some(parent) = o.last_mut().filter(|p| p.owner == self.id) {
                for (p, a) in parent.inner.iter_mut().zip(all) {
                    *p = p.wrapping_add(a);
                }
            }
            let own = [0, 1, 2].map(|i| all[i].wrapping_sub(open.inner[i]));
            Some((open.row, [all[0].saturating_sub(open.inner[0]), own[1], own[2]]))
        }) else {
            return;
        };
        let mut s = lock(&self.state);
        // The row noted at the begin (a `clear` since then may have dropped it).
        let row = if row < s.rows.len() { row } else { s.row(kernel) };
        let name = s.row_names[row];
        let r = &mut s.rows[row];
        r.calls += 1;
        r.total_ns += total[0];
        r.self_ns += own[0];
        if counted.is_some() {
            r.allocations = r.allocations.wrapping_add(own[1]);
        }
        if counted.and_then(|(_, b, _)| b).is_some() {
            r.allocated_bytes = Some(r.allocated_bytes.unwrap_or(0).wrapping_add(own[2]));
        }
        if let (Some((_, _, in_use)), Some(base)) = (counted, s.call_base) {
            s.call_peak = s.call_peak.max(in_use.saturating_sub(base));
        }
        self.span_event(&mut s, Phase::End, name, ns);
        if let (true, Some((_, _, in_use))) = (self.trace, counted) {
            let name = s.name("allocator bytes in use");
            let thread = thread_number();
            s.events.push(Event { phase: Phase::Counter, name, thread, ns, value: in_use });
        }
    }

    fn call_begin(&self, call: &CallSpan<'_>) -> u64 {
        let mut s = lock(&self.state);
        s.call_base = counters(call.allocator).map(|(_, _, in_use)| in_use);
        s.call_peak = 0;
        let name = s.name(&format!("call @{}", call.name));
        let ns = self.now();
        self.span_event(&mut s, Phase::Begin, name, ns);
        ns
    }

    fn call_end(&self, call: &CallSpan<'_>, mark: u64) {
        let ns = self.now();
        let mut s = lock(&self.state);
        s.calls += 1;
        s.call_ns += ns.saturating_sub(mark);
        if s.call_base.take().is_some() {
            let peak = s.call_peak;
            s.peak_per_call = Some(s.peak_per_call.unwrap_or(0).max(peak));
        }
        let name = s.name(&format!("call @{}", call.name));
        self.span_event(&mut s, Phase::End, name, ns);
    }

    fn device_begin(&self, what: &str) -> u64 {
        let ns = self.now();
        let mut s = lock(&self.state);
        s.device_spans += 1;
        let id = s.device_spans;
        if self.trace {
            let (name, thread) = (s.name(what), thread_number());
            s.thread(thread);
            s.events.push(Event { phase: Phase::DeviceBegin, name, thread, ns, value: id });
        }
        id
    }

    fn device_end(&self, what: &str, mark: u64) {
        let ns = self.now();
        let mut s = lock(&self.state);
        // Only a span this recorder began (ids count from 1).
        if self.trace && (1..=s.device_spans).contains(&mark) {
            let (name, thread) = (s.name(what), thread_number());
            s.thread(thread);
            s.events.push(Event { phase: Phase::DeviceEnd, name, thread, ns, value: mark });
        }
    }
}

impl ProfileTable {
    /// Nanoseconds of every row's self time: the share column's whole.
    fn self_total(&self) -> u64 {
        self.rows.iter().map(|r| r.self_ns).sum::<u64>().max(1)
    }

    /// The table as text: one line per kernel, widest column first.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let per_call = |ns: u64| ns as f64 / self.calls.max(1) as f64 / 1e3;
        let _ = writeln!(
            out,
            "profile: {} call(s), {:.1} us per call; kernels by self time (inner kernels' time not counted twice)",
            self.calls,
            per_call(self.call_ns)
        );
        let width = self.rows.iter().map(|r| r.location.len()).max().unwrap_or(8).clamp(8, 60);
        let _ = writeln!(
            out,
            "{:<width$}  {:<28} {:>8} {:>11} {:>10} {:>7} {:>12} {:>12}",
            "location", "kernel", "calls", "self us", "mean us", "share", "allocs/call", "bytes/call"
        );
        let total = self.self_total();
        for r in &self.rows {
            let calls = r.calls.max(1);
            let bytes = r.allocated_bytes.map_or_else(|| "-".to_string(), |b| (b / calls).to_string());
            let _ = writeln!(
                out,
                "{:<width$}  {:<28} {:>8} {:>11.1} {:>10.3} {:>6.1}% {:>12.1} {:>12}",
                shorten(&r.location, width),
                shorten(&r.kernel, 28),
                r.calls,
                r.self_ns as f64 / 1e3,
                r.total_ns as f64 / calls as f64 / 1e3,
                100.0 * r.self_ns as f64 / total as f64,
                r.allocations as f64 / calls as f64,
                bytes
            );
        }
        if let Some(peak) = self.peak_per_call {
            let _ = writeln!(
                out,
                "allocator peak per call, above its start, sampled at kernel ends: {peak} bytes"
            );
        }
        out
    }

    /// The table as comma-separated values: `location,kernel,calls,total_ns,self_ns,
    /// mean_ns,share,allocations,allocated_bytes`, locations quoted.
    pub fn csv(&self) -> String {
        let mut out = String::from(
            "location,kernel,calls,total_ns,self_ns,mean_ns,share,allocations,allocated_bytes\n",
        );
        let total = self.self_total();
        for r in &self.rows {
            let _ = writeln!(
                out,
                "\"{}\",{},{},{},{},{},{:.6},{},{}",
                r.location.replace('"', "\"\""),
                r.kernel,
                r.calls,
                r.total_ns,
                r.self_ns,
                r.total_ns / r.calls.max(1),
                r.self_ns as f64 / total as f64,
                r.allocations,
                r.allocated_bytes.map_or_else(String::new, |b| b.to_string())
            );
        }
        out
    }
}

/// `s` cut to `width` characters, its start kept (a model layer's `op#N OPERATOR`).
fn shorten(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(width - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hostrt_core::basic_kernels::register_basic_kernels;
    use hostrt_core::executor::Program;
    use hostrt_core::{Allocator, HostContext, KernelRegistry, SingleThreadedWorkQueue};

    #[test]
    fn names_are_json_strings_and_cut_at_their_end() {
        assert_eq!(quoted("a\"b\\c\nd"), "\"a\\\"b\\\\c\\u000ad\"");
        assert_eq!(shorten("op#3 CONV_2D:conv", 8), "op#3 CO…");
        assert_eq!(shorten("short", 8), "short");
    }

    /// A `tfrt.call`'s own time and allocations leave out its callee's kernels, whose rows
    /// count them: self times add up to no more than the calls took.
    #[test]
    fn a_calls_self_time_leaves_out_its_callee() {
        let text = r#"
func.func @inner(%x: i32) -> i32 {
  %y = "tfrt.add.i32"(%x, %x) : (i32, i32) -> i32
  tfrt.return %y : i32
}
func.func @main() -> i32 {
  %a = tfrt.constant.i32 3
  %b = tfrt.call @inner(%a) : (i32) -> i32
  tfrt.return %b : i32
}"#;
        let bef = hostrt_compiler::compile("call.mlir", text, Default::default()).unwrap();
        let bef = crate::AlignedBytes::new(&bef);
        let system: &'static crate::SystemAllocator = Box::leak(Box::new(crate::SystemAllocator::new()));
        let alloc = Allocator::register(system).unwrap();
        let mut registry: Box<KernelRegistry<256>> = Box::default();
        register_basic_kernels(&mut registry).unwrap();
        let queue = SingleThreadedWorkQueue::new();
        let recorder = Recorder::new(true);
        let host = HostContext::new(alloc, &queue).with_observer(&recorder);
        let program = Program::load(bef.as_bytes(), &*registry, &host).unwrap();
        for _ in 0..3 {
            assert_eq!(program.call(&host, "main", &[]).unwrap().get::<i32>(0), Ok(&6));
        }
        let t = recorder.table();
        assert_eq!(t.calls, 3);
        let row = |kernel: &str| t.rows.iter().find(|r| r.kernel == kernel).unwrap().clone();
        let (call, add) = (row("tfrt.call"), row("tfrt.add.i32"));
        assert_eq!((call.calls, add.calls), (3, 3));
        assert!(call.location.starts_with("call.mlir:8:"), "{}", call.location);
        assert!(call.total_ns >= call.self_ns + add.total_ns, "{call:?} {add:?}");
        assert!(t.rows.iter().map(|r| r.self_ns).sum::<u64>() <= t.call_ns);
        // The call's own allocations (its frame) are counted, its callee's result is not.
        assert!(add.allocated_bytes.unwrap() > 0 && call.allocated_bytes.unwrap() > 0);
        let csv = t.csv();
        assert!(csv.lines().nth(1).unwrap().starts_with("\"call.mlir:"), "{csv}");
        recorder.clear();
        assert_eq!(recorder.table(), ProfileTable::default());
    }

    /// A span cut by a stop: a kernel that began under one recorder and ends under another
    /// is recorded by neither end, and a trace written while a span is open closes it.
    #[test]
    fn spans_cut_by_a_stop_stay_well_formed() {
        let system: &'static crate::SystemAllocator = Box::leak(Box::new(crate::SystemAllocator::new()));
        let allocator = Allocator::register(system).unwrap();
        let span = KernelSpan { key: (1, 0, 0), name: "k", location: None, allocator };
        let (first, second) = (Recorder::new(true), Recorder::new(true));
        let mark = first.kernel_begin(&span);
        second.kernel_end(&span, mark);
        assert!(second.table().rows.is_empty(), "another recorder's span");
        let mut json = Vec::new();
        first.write_trace(&mut json).unwrap();
        let json = String::from_utf8(json).unwrap();
        assert_eq!(json.matches("\"ph\":\"B\"").count(), 1, "{json}");
        assert_eq!(json.matches("\"ph\":\"E\"").count(), 1, "{json}");
        // The first recorder's own end still counts: its open kernel was kept.
        first.kernel_end(&span, mark);
        assert_eq!(first.table().rows[0].calls, 1);
    }
}
