//! Tracing an app's calls (`hostrt_trace_begin`, `hostrt_trace_end` in `host`,
//! docs/profiling.md): every host carries a [`TraceSwitch`] as the executor's observer and
//! its queue's task observer. Between begin and end it forwards to a `hostrt_std::Recorder`;
//! otherwise each kernel takes the executor's observed path to an atomic load (about 3 ns:
//! docs/embedding.md).

use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use hostrt_core::observe::{CallSpan, KernelSpan, Observer};
use hostrt_std::{Recorder, TaskObserver};

use super::status::{Error, HOSTRT_FAILED_PRECONDITION};

/// The mark of a span that began while no trace ran: its end is ignored.
const OFF: u64 = u64::MAX;
/// Bits of a recorder's mark kept in a switch's mark (nanoseconds: 78 hours of trace); the
/// bits above hold the trace's generation.
const MARK_BITS: u32 = 48;

/// A host's tracing: off, running (a recorder), or ended with its JSON not yet read.
#[derive(Default)]
pub(crate) struct TraceSwitch {
    on: AtomicBool,
    /// Counts traces begun: a span that began under one trace never ends under the next.
    generation: AtomicU16,
    running: RwLock<Option<(u16, Arc<Recorder>)>>,
    /// An ended trace's JSON, kept until a buffer large enough takes it.
    ended: Mutex<Option<Vec<u8>>>,
}

impl std::fmt::Debug for TraceSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceSwitch").field("on", &self.on.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl TraceSwitch {
    /// The running trace and its generation, if any.
    fn current(&self) -> Option<(u16, Arc<Recorder>)> {
        if !self.on.load(Ordering::Acquire) {
            return None;
        }
        self.running.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `mark` of the trace of generation `generation`.
    fn tagged(generation: u16, mark: u64) -> u64 {
        (u64::from(generation) << MARK_BITS) | (mark & ((1 << MARK_BITS) - 1))
    }

    /// The recorder and its own mark for an end of a span marked `mark`, when the span began
    /// under the trace still running.
    fn ending(&self, mark: u64) -> Option<(Arc<Recorder>, u64)> {
        if mark == OFF {
            return None;
        }
        let (generation, recorder) = self.current()?;
        (u64::from(generation) == mark >> MARK_BITS).then_some((recorder, mark & ((1 << MARK_BITS) - 1)))
    }

    /// Starts a trace; refused while one runs or an ended one waits to be read.
    pub(crate) fn begin(&self) -> Result<(), Error> {
        if self.ended.lock().unwrap_or_else(|e| e.into_inner()).is_some() {
            return Err(Error::new(
                HOSTRT_FAILED_PRECONDITION,
                "an ended trace has not been read yet: hostrt_trace_end with a large enough buffer first",
            ));
        }
        let mut running = self.running.write().unwrap_or_else(|e| e.into_inner());
        if running.is_some() {
            return Err(Error::new(HOSTRT_FAILED_PRECONDITION, "a trace is already running on this host"));
        }
        let generation = self.generation.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        *running = Some((generation, Arc::new(Recorder::new(true))));
        self.on.store(true, Ordering::Release);
        Ok(())
    }

    /// Stops the running trace, if any, keeping its JSON; then hands the JSON to `take` when
    /// it fits (`take` says whether it took it, else it stays for the next call).
    pub(crate) fn end(&self, take: impl FnOnce(&[u8]) -> Result<bool, Error>) -> Result<(), Error> {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, recorder)) = self.running.write().unwrap_or_else(|e| e.into_inner()).take() {
            self.on.store(false, Ordering::Release);
            let mut json = Vec::new();
            recorder
                .write_trace(&mut json)
                .map_err(|e| Error::new(HOSTRT_FAILED_PRECONDITION, e.to_string()))?;
            *ended = Some(json);
        }
        let json = ended
            .as_deref()
            .ok_or_else(|| Error::new(HOSTRT_FAILED_PRECONDITION, "no trace: hostrt_trace_begin first"))?;
        if take(json)? {
            *ended = None;
        }
        Ok(())
    }
}

impl Observer for TraceSwitch {
    fn kernel_begin(&self, kernel: &KernelSpan<'_>) -> u64 {
        self.current().map_or(OFF, |(g, r)| Self::tagged(g, r.kernel_begin(kernel)))
    }

    fn kernel_end(&self, kernel: &KernelSpan<'_>, mark: u64) {
        if let Some((r, mark)) = self.ending(mark) {
            r.kernel_end(kernel, mark);
        }
    }

    fn call_begin(&self, call: &CallSpan<'_>) -> u64 {
        self.current().map_or(OFF, |(g, r)| Self::tagged(g, r.call_begin(call)))
    }

    fn call_end(&self, call: &CallSpan<'_>, mark: u64) {
        if let Some((r, mark)) = self.ending(mark) {
            r.call_end(call, mark);
        }
    }

    fn device_begin(&self, what: &str) -> u64 {
        self.current().map_or(OFF, |(g, r)| Self::tagged(g, r.device_begin(what)))
    }

    fn device_end(&self, what: &str, mark: u64) {
        if let Some((r, mark)) = self.ending(mark) {
            r.device_end(what, mark);
        }
    }
}

impl TaskObserver for TraceSwitch {
    fn task_begin(&self, blocking: bool) -> u64 {
        self.current().map_or(OFF, |(g, r)| Self::tagged(g, r.task_begin(blocking)))
    }

    fn task_end(&self, blocking: bool, mark: u64) {
        if let Some((r, mark)) = self.ending(mark) {
            r.task_end(blocking, mark);
        }
    }
}
