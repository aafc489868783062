//! The system heap as a [`HostAllocator`], and a decorator that adds TFRT-style profile
//! counters and the leak report to any allocator.

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use hostrt_core::allocator::{AllocError, AllocStats, HostAllocator};

/// The system heap without counters (TFRT's `malloc` host allocator): no shared state, so
/// threads allocating at once do not contend.
#[derive(Debug, Default, Clone, Copy)]
pub struct MallocAllocator;

// SAFETY: forwards to the global allocator with the caller's layout; zero-size requests are
// refused.
unsafe impl HostAllocator for MallocAllocator {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() == 0 {
            return Err(AllocError::new(layout));
        }
        // SAFETY: non-zero size.
        NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or(AllocError::new(layout))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller passes a block from `allocate` with its layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

/// Counts the traffic of another allocator: current/max/total allocations, current/max
/// bytes and failures (TFRT's `profiled_allocator`, and with [`leak_report`](Self::leak_report)
/// its `leak_check_allocator`).
#[derive(Debug, Default)]
pub struct ProfiledAllocator<A> {
    inner: A,
    current: AtomicUsize,
    max: AtomicUsize,
    total: AtomicUsize,
    bytes: AtomicUsize,
    max_bytes: AtomicUsize,
    failed: AtomicUsize,
}

/// A snapshot of the counters, printed like TFRT's `HostAllocator profile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Live allocations.
    pub current: usize,
    /// Most live allocations at once.
    pub max: usize,
    /// Allocations made.
    pub total: usize,
    /// Live bytes.
    pub bytes: usize,
    /// Most live bytes at once.
    pub max_bytes: usize,
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "HostAllocator profile:")?;
        writeln!(f, "Current number of allocations = {}", self.current)?;
        writeln!(f, "Max number of allocations = {}", self.max)?;
        writeln!(f, "Total number of allocations = {}", self.total)?;
        writeln!(f, "Current number of bytes allocated = {}", self.bytes)?;
        write!(f, "Max number of bytes allocated = {}", self.max_bytes)
    }
}

/// The system heap with counters (what `hostrt run` uses by default).
pub type SystemAllocator = ProfiledAllocator<MallocAllocator>;

impl SystemAllocator {
    /// The system heap with zeroed counters.
    pub const fn new() -> Self {
        ProfiledAllocator::wrap(MallocAllocator)
    }
}

impl<A> ProfiledAllocator<A> {
    /// Count the traffic of `inner`, starting from zero.
    pub const fn wrap(inner: A) -> Self {
        ProfiledAllocator {
            inner,
            current: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_bytes: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        }
    }

    /// The counters now.
    pub fn profile(&self) -> Profile {
        Profile {
            current: self.current.load(Ordering::Relaxed),
            max: self.max.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            max_bytes: self.max_bytes.load(Ordering::Relaxed),
        }
    }

    /// TFRT's leak report, when anything is still allocated:
    /// the profile, then `Memory leak detected: N alive allocations, B alive bytes`.
    pub fn leak_report(&self) -> Option<String> {
        let p = self.profile();
        (p.bytes != 0 || p.current != 0).then(|| {
            format!("{p}\nMemory leak detected: {} alive allocations, {} alive bytes", p.current, p.bytes)
        })
    }
}

// SAFETY: forwards every request to `inner` unchanged; only counts.
unsafe impl<A: HostAllocator> HostAllocator for ProfiledAllocator<A> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let p = match self.inner.allocate(layout) {
            Ok(p) => p,
            Err(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                return Err(e);
            }
        };
        let n = self.current.fetch_add(1, Ordering::Relaxed) + 1;
        self.max.fetch_max(n, Ordering::Relaxed);
        self.total.fetch_add(1, Ordering::Relaxed);
        let b = self.bytes.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        self.max_bytes.fetch_max(b, Ordering::Relaxed);
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.current.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller passes a block from `allocate` (so from `inner`) with its layout.
        unsafe { self.inner.deallocate(ptr, layout) }
    }

    fn stats(&self) -> Option<AllocStats> {
        let p = self.profile();
        Some(AllocStats {
            in_use: p.bytes,
            peak: p.max_bytes,
            live_allocations: p.current,
            total_allocations: p.total,
            failed: self.failed.load(Ordering::Relaxed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_reports_leaks() {
        let a = SystemAllocator::new();
        let l = Layout::from_size_align(4, 4).unwrap();
        let p = a.allocate(l).unwrap();
        let q = a.allocate(l).unwrap();
        // SAFETY: from this allocator with `l`.
        unsafe { a.deallocate(q, l) };
        assert_eq!(a.profile(), Profile { current: 1, max: 2, total: 2, bytes: 4, max_bytes: 8 });
        let report = a.leak_report().unwrap();
        assert!(
            report.starts_with("HostAllocator profile:\nCurrent number of allocations = 1\n"),
            "{report}"
        );
        assert!(report.ends_with("Memory leak detected: 1 alive allocations, 4 alive bytes"), "{report}");
        // SAFETY: from this allocator with `l`.
        unsafe { a.deallocate(p, l) };
        assert_eq!(a.leak_report(), None);
        assert!(a.allocate(Layout::from_size_align(0, 1).unwrap()).is_err());
    }
}

#[cfg(test)]
mod decorator_tests {
    use super::*;

    #[test]
    fn decorates_any_allocator_and_counts_its_failures() {
        let a = ProfiledAllocator::wrap(MallocAllocator);
        assert!(
            a.allocate(Layout::from_size_align(0, 1).unwrap()).is_err(),
            "the inner refusal passes through"
        );
        assert_eq!(a.stats().unwrap().failed, 1);
        let l = Layout::from_size_align(16, 8).unwrap();
        let p = a.allocate(l).unwrap();
        assert_eq!(a.profile().bytes, 16);
        // SAFETY: from this allocator with `l`.
        unsafe { a.deallocate(p, l) };
        assert_eq!(a.leak_report(), None);
    }
}
