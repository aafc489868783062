//! The system heap as a [`HostAllocator`], and a decorator that adds TFRT-style profile
//! counters and the leak report to any allocator (the heap with a block cache is
//! `block_cache.rs`).

use std::alloc::Layout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use hostrt_core::allocator::{AllocError, AllocStats, HostAllocator};

use crate::CachedMallocAllocator;

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
    /// Deallocations made: the live count is `total - freed`, which saves a locked
    /// instruction per allocation over keeping the live count itself.
    freed: AtomicUsize,
    max: AtomicUsize,
    total: AtomicUsize,
    bytes: AtomicUsize,
    max_bytes: AtomicUsize,
    /// Bytes requested by every allocation made (what a profile reports per kernel).
    allocated: AtomicUsize,
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

/// The system heap with its per-thread block cache and counters (what `hostrt run` uses
/// by default).
pub type SystemAllocator = ProfiledAllocator<CachedMallocAllocator>;

impl SystemAllocator {
    /// The system heap with zeroed counters.
    pub const fn new() -> Self {
        ProfiledAllocator::wrap(CachedMallocAllocator)
    }
}

impl<A> ProfiledAllocator<A> {
    /// Count the traffic of `inner`, starting from zero.
    pub const fn wrap(inner: A) -> Self {
        ProfiledAllocator {
            inner,
            freed: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            max_bytes: AtomicUsize::new(0),
            allocated: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        }
    }

    /// The counters now.
    pub fn profile(&self) -> Profile {
        // Deallocations first: every one read had its allocation counted before it, so the
        // total read after cannot be smaller.
        let freed = self.freed.load(Ordering::Relaxed);
        let total = self.total.load(Ordering::Relaxed);
        Profile {
            current: total.saturating_sub(freed),
            max: self.max.load(Ordering::Relaxed),
            total,
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
        let t = self.total.fetch_add(1, Ordering::Relaxed) + 1;
        // Live allocations now (with other threads freeing at once, possibly a few more
        // than there are: the peak is exact on one thread, as TFRT's counters are).
        let n = t.saturating_sub(self.freed.load(Ordering::Relaxed));
        let b = self.bytes.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        self.allocated.fetch_add(layout.size(), Ordering::Relaxed);
        // The peaks change rarely: a plain load skips the read-modify-write (a locked
        // instruction on x86) in the steady state.
        if n > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(n, Ordering::Relaxed);
        }
        if b > self.max_bytes.load(Ordering::Relaxed) {
            self.max_bytes.fetch_max(b, Ordering::Relaxed);
        }
        Ok(p)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        self.freed.fetch_add(1, Ordering::Relaxed);
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
            allocated_bytes: Some(self.allocated.load(Ordering::Relaxed)),
            failed: self.failed.load(Ordering::Relaxed),
            capacity: self.inner.stats().map_or(0, |s| s.capacity),
        })
    }
}

/// What [`FixedSizeTestAllocator`] logs, in TFRT's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedSizeEvent {
    /// `Allocating <size> bytes. <remaining> remaining.` (info)
    Allocating { size: usize, remaining: usize },
    /// `Attempted to allocate <size> bytes. However current capacity is only <remaining>.`
    /// (error; the request fails)
    Refused { size: usize, remaining: usize },
    /// `Freeing <size> bytes. <remaining> available.` (info)
    Freeing { size: usize, remaining: usize },
}

impl FixedSizeEvent {
    /// Whether TFRT logs it as an error (else as info).
    pub fn is_error(&self) -> bool {
        matches!(self, FixedSizeEvent::Refused { .. })
    }
}

impl fmt::Display for FixedSizeEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FixedSizeEvent::Allocating { size, remaining } => {
                write!(f, "Allocating {size} bytes. {remaining} remaining.")
            }
            FixedSizeEvent::Refused { size, remaining } => {
                write!(f, "Attempted to allocate {size} bytes. However current capacity is only {remaining}.")
            }
            FixedSizeEvent::Freeing { size, remaining } => {
                write!(f, "Freeing {size} bytes. {remaining} available.")
            }
        }
    }
}

/// TFRT's `test_fixed_size_1k` allocator: a byte budget over another allocator. Requests of
/// at most [`SMALL`](Self::SMALL) bytes pass through unaccounted; larger ones count against
/// the capacity and are logged, and fail once it would be exceeded.
pub struct FixedSizeTestAllocator<A> {
    inner: A,
    capacity: usize,
    current: AtomicUsize,
    log: Box<dyn Fn(FixedSizeEvent) + Send + Sync>,
}

impl<A> fmt::Debug for FixedSizeTestAllocator<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedSizeTestAllocator")
            .field("capacity", &self.capacity)
            .field("current", &self.current.load(Ordering::Relaxed))
            .finish()
    }
}

impl<A> FixedSizeTestAllocator<A> {
    /// Requests up to this many bytes are not accounted.
    pub const SMALL: usize = 32;

    /// A budget of `capacity` bytes over `inner`, reporting each accounted event to `log`.
    pub fn new(inner: A, capacity: usize, log: impl Fn(FixedSizeEvent) + Send + Sync + 'static) -> Self {
        FixedSizeTestAllocator { inner, capacity, current: AtomicUsize::new(0), log: Box::new(log) }
    }

    /// The inner allocator.
    pub fn inner(&self) -> &A {
        &self.inner
    }
}

// SAFETY: forwards granted requests to `inner` unchanged; refusals allocate nothing.
unsafe impl<A: HostAllocator> HostAllocator for FixedSizeTestAllocator<A> {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let size = layout.size();
        if size <= Self::SMALL {
            return self.inner.allocate(layout);
        }
        let claimed = self.current.fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
            c.checked_add(size).filter(|n| *n <= self.capacity)
        });
        match claimed {
            Err(c) => {
                (self.log)(FixedSizeEvent::Refused { size, remaining: self.capacity - c });
                Err(AllocError::new(layout))
            }
            Ok(c) => match self.inner.allocate(layout) {
                Ok(p) => {
                    (self.log)(FixedSizeEvent::Allocating { size, remaining: self.capacity - c - size });
                    Ok(p)
                }
                Err(e) => {
                    self.current.fetch_sub(size, Ordering::AcqRel);
                    Err(e)
                }
            },
        }
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let size = layout.size();
        if size > Self::SMALL {
            let now = self.current.fetch_sub(size, Ordering::AcqRel) - size;
            (self.log)(FixedSizeEvent::Freeing { size, remaining: self.capacity - now });
        }
        // SAFETY: the caller passes a block from `allocate` (so from `inner`) with its layout.
        unsafe { self.inner.deallocate(ptr, layout) }
    }

    fn stats(&self) -> Option<AllocStats> {
        self.inner.stats()
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

#[cfg(test)]
mod fixed_size_tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[test]
    fn budget_logs_and_refuses_like_tfrt() {
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let a = FixedSizeTestAllocator::new(SystemAllocator::new(), 1024, move |e| {
            seen.lock().unwrap().push(e.to_string())
        });
        let small = Layout::from_size_align(32, 8).unwrap();
        let big = Layout::from_size_align(600, 8).unwrap();
        let s = a.allocate(small).unwrap();
        let p = a.allocate(big).unwrap();
        assert!(a.allocate(big).is_err(), "600 + 600 > 1024");
        // SAFETY: from this allocator with these layouts.
        unsafe {
            a.deallocate(p, big);
            a.deallocate(s, small);
        }
        assert_eq!(
            *events.lock().unwrap(),
            [
                "Allocating 600 bytes. 424 remaining.",
                "Attempted to allocate 600 bytes. However current capacity is only 424.",
                "Freeing 600 bytes. 1024 available.",
            ]
        );
        assert!(FixedSizeEvent::Refused { size: 1, remaining: 0 }.is_error());
        assert_eq!(a.inner().leak_report(), None, "every block went back to the inner allocator");
    }
}
