//! The device's stream: kernels record into one open command buffer, which is submitted
//! when a kernel needs results on the host ([`Stream::flush`]) or when it is full. Device
//! values are therefore available as soon as their work is recorded (their buffers exist,
//! and the queue orders the work that writes them before the work that reads them), and
//! the host waits only where data comes back, as a GPU stream in TFRT does.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use crate::device::Device;
use crate::error::VkError;
use crate::work::{Pending, Recorder};

/// What the stream holds.
#[derive(Default)]
struct State {
    /// Work recorded and not yet submitted.
    open: Option<Recorder>,
    /// Submitted work not yet seen complete, oldest first.
    in_flight: VecDeque<Arc<Pending>>,
    /// Set when the device failed: every later use reports it.
    failed: Option<VkError>,
}

/// A device's stream of work (see the module docs).
pub struct Stream {
    device: Arc<Device>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("device", &self.device).finish()
    }
}

impl Stream {
    /// A stream on `device`.
    pub fn new(device: Arc<Device>) -> Stream {
        Stream { device, state: Mutex::new(State::default()) }
    }

    /// Its device.
    pub fn device(&self) -> &Arc<Device> {
        &self.device
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records work with `f` into the open command buffer (submitting it first when full).
    pub fn record<R>(&self, f: impl FnOnce(&mut Recorder) -> Result<R, VkError>) -> Result<R, VkError> {
        let mut s = self.state();
        if let Some(e) = &s.failed {
            return Err(e.clone());
        }
        if s.open.as_ref().is_some_and(Recorder::is_full) {
            Self::submit(&mut s)?;
        }
        let rec = match &mut s.open {
            Some(r) => r,
            None => s.open.insert(Recorder::new(&self.device)?),
        };
        f(rec)
    }

    /// Submits what is open; the returned work completes when everything recorded so far
    /// has (the queue runs submissions in order, each behind a full barrier).
    pub fn flush(&self) -> Result<Arc<Pending>, VkError> {
        let mut s = self.state();
        if let Some(e) = &s.failed {
            return Err(e.clone());
        }
        if s.open.is_some() {
            Self::submit(&mut s)?;
        }
        match s.in_flight.back() {
            Some(p) => Ok(p.clone()),
            None => Ok(Arc::new(Recorder::new(&self.device)?.submit()?)),
        }
    }

    /// Whether submitted work is still running on the device.
    pub fn busy(&self) -> bool {
        let mut s = self.state();
        Self::reap(&mut s);
        !s.in_flight.is_empty()
    }

    /// Marks the device failed with `e` (a wait reported it): later work is refused.
    pub fn fail(&self, e: &VkError) {
        self.state().failed.get_or_insert_with(|| e.clone());
    }

    fn submit(s: &mut State) -> Result<(), VkError> {
        let Some(rec) = s.open.take() else { return Ok(()) };
        Self::reap(s);
        match rec.submit() {
            Ok(p) => {
                s.in_flight.push_back(Arc::new(p));
                Ok(())
            }
            Err(e) => {
                s.failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Drops the completed work at the front (its objects and buffers are released).
    fn reap(s: &mut State) {
        while s.in_flight.front().is_some_and(|p| p.is_done()) {
            s.in_flight.pop_front();
        }
    }
}

/// The stream of the process's device ([`crate::shared`]), which `vk.*` kernels use.
pub fn shared_stream() -> Result<&'static Stream, VkError> {
    static STREAM: OnceLock<Result<Stream, VkError>> = OnceLock::new();
    STREAM.get_or_init(|| crate::device::shared().map(Stream::new)).as_ref().map_err(Clone::clone)
}
