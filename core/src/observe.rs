//! Observing runs: the executor tells an [`Observer`] that the host installs
//! ([`HostContext::with_observer`](crate::HostContext::with_observer)) each kernel it runs
//! and each call it starts, so a profiler or a tracer sees what a program does
//! (docs/profiling.md). hostrt-std's `Recorder` builds profiles and Perfetto traces on it;
//! firmware can count cycles per kernel with it.
//!
//! Behind the `profile` feature (on with `std`): without it the hook is not compiled, and
//! an image built without it is byte for byte what it was. With it and no observer
//! installed, each kernel costs three dependent loads and an untaken branch.

use crate::allocator::Allocator;

/// Receives the executor's events. Called on the thread that runs the kernel or the call,
/// possibly several at once (hence `Sync`), in the ready loop itself: an observer must be
/// quick and must not panic.
pub trait Observer: Sync {
    /// Kernel `kernel` is about to run on this thread. The returned mark (a timestamp, a
    /// cycle count) is handed back to [`kernel_end`](Self::kernel_end).
    fn kernel_begin(&self, kernel: &KernelSpan<'_>) -> u64;

    /// `kernel` returned, its operands dropped and its results published (a kernel that
    /// completes its results later, on another thread, has returned all the same).
    fn kernel_end(&self, kernel: &KernelSpan<'_>, mark: u64);

    /// A call of a program's function from outside the program (`Program::call` and its
    /// forms) starts; the returned mark is handed back to [`call_end`](Self::call_end). By
    /// default nothing is recorded.
    fn call_begin(&self, call: &CallSpan<'_>) -> u64 {
        let _ = call;
        0
    }

    /// That call's results are available and its work queue quiet.
    fn call_end(&self, call: &CallSpan<'_>, mark: u64) {
        let _ = (call, mark);
    }

    /// Work for a device (`what`: the device and the work, `vulkan: submission`) was handed
    /// to it on this thread; the returned mark is handed back to
    /// [`device_end`](Self::device_end), possibly on another thread, when the work is known
    /// complete. Device spans may overlap each other and the host's kernels. By default
    /// nothing is recorded.
    fn device_begin(&self, what: &str) -> u64 {
        let _ = what;
        0
    }

    /// That device work is known complete (its fence waited for), or failed.
    fn device_end(&self, what: &str, mark: u64) {
        let _ = (what, mark);
    }
}

/// Which kernel of which loaded program runs, and where it came from. Plain data the
/// executor fills in (this module sits below the executor: core/README.md).
#[derive(Clone, Copy, Debug)]
pub struct KernelSpan<'a> {
    /// What identifies this kernel while its program is loaded: the program's address, the
    /// function's index and the kernel's index in it (aggregate by this, not by name).
    pub key: (usize, u32, u32),
    /// The kernel's name (`nn.conv_2d.f32`).
    pub name: &'a str,
    /// The kernel's source location, when the program records one.
    pub location: Option<SpanLocation<'a>>,
    /// The allocator the run's objects come from (for its `stats`).
    pub allocator: Allocator,
}

/// A kernel's source location: a model's layer (`op#3 CONV_2D:conv1/Relu`, a name
/// location: `line` and `column` 0) or `file:line:column`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanLocation<'a> {
    /// The file name, or the location's name.
    pub file: &'a str,
    /// 1-based line; 0 for a name location.
    pub line: u32,
    /// 1-based column; 0 for a name location.
    pub column: u32,
}

/// A call of a program's function from outside the program.
#[derive(Clone, Copy, Debug)]
pub struct CallSpan<'a> {
    /// The function's name.
    pub name: &'a str,
    /// The allocator the call's objects come from.
    pub allocator: Allocator,
}
