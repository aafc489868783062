//! A fixed-size arena allocator over a borrowed static buffer (embedded-alloc's LLFF heap).

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::NonNull;

use portable_atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{AllocError, AllocStats, HostAllocator};

/// Smallest arena the heap accepts (room for one free-list node), counted from the buffer's
/// first [`ARENA_ALIGN`]-byte boundary: a buffer needs up to `ARENA_ALIGN - 1` bytes more.
pub const MIN_ARENA_BYTES: usize = 4 * core::mem::size_of::<usize>();

/// Where in its buffer an arena starts: at the first multiple of this, the largest alignment
/// hostrt asks for (a tensor buffer's, [`BUFFER_ALIGN`](crate::tensor::BUFFER_ALIGN)).
pub const ARENA_ALIGN: usize = 64;

/// The most bytes of a [`FixedArena`] a block of `layout` can take: its size as the
/// arena's first-fit heap rounds it (at least a free-list node of two words, a multiple of
/// a word), plus, when it asks for more than a word's alignment, the worst front padding
/// the heap leaves before it (a node, then up to the alignment less a word to the next
/// aligned address). Derived arena bounds add these up (docs/bef.md, "Arena sizes").
///
/// ```
/// use core::alloc::Layout;
/// use hostrt_core::allocator::arena_block_bytes;
///
/// let word = size_of::<usize>();
/// assert_eq!(arena_block_bytes(Layout::new::<u8>()), 2 * word);
/// assert_eq!(arena_block_bytes(Layout::from_size_align(64, 64).unwrap()), 64 + 2 * word + 64 - word);
/// ```
pub const fn arena_block_bytes(layout: Layout) -> usize {
    arena_block_bytes_on(layout, core::mem::size_of::<usize>())
}

/// [`arena_block_bytes`] on a machine whose pointers are `word` bytes, for a layout no
/// larger there: what a 64-bit host derives a 32-bit target's bound with (docs/bef.md,
/// "Arena sizes").
///
/// ```
/// use core::alloc::Layout;
/// use hostrt_core::allocator::arena_block_bytes_on;
///
/// assert_eq!(arena_block_bytes_on(Layout::new::<u8>(), 4), 8);
/// assert_eq!(arena_block_bytes_on(Layout::from_size_align(13, 4).unwrap(), 4), 16);
/// assert_eq!(arena_block_bytes_on(Layout::from_size_align(64, 64).unwrap(), 4), 64 + 8 + 60);
/// ```
pub const fn arena_block_bytes_on(layout: Layout, word: usize) -> usize {
    let node = 2 * word;
    let size = if layout.size() < node { node } else { layout.size() };
    let rounded = size.next_multiple_of(word);
    if layout.align() > word { rounded + node + layout.align() - word } else { rounded }
}

/// A heap over a caller-provided `&'static mut [u8]`, with in-use / peak / failure counters.
///
/// Create it empty in a `static` and [`init`](Self::init) it once at start-up; register it to
/// get the one-byte [`Allocator`](super::Allocator) handle runtime objects carry. Exhaustion
/// is an `Err`, never a panic.
///
/// ```
/// use hostrt_core::allocator::HostAllocator;
/// use hostrt_core::{Allocator, AsyncValueRef, FixedArena};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
///
/// let v = AsyncValueRef::available(alloc, 7u64).unwrap();
/// assert!(ARENA.stats().unwrap().in_use > 0);
/// drop(v);
/// assert_eq!(ARENA.stats().unwrap().in_use, 0);
/// assert!(AsyncValueRef::available(alloc, [0u8; 8192]).is_err(), "too big: an error, not a panic");
/// ```
pub struct FixedArena {
    heap: embedded_alloc::LlffHeap,
    initialized: AtomicBool,
    capacity: AtomicUsize,
    in_use: AtomicUsize,
    peak: AtomicUsize,
    live: AtomicUsize,
    total: AtomicUsize,
    failed: AtomicUsize,
}

/// Why [`FixedArena::init`] refused a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaInitError {
    /// `init` was already called.
    AlreadyInitialized,
    /// Less than [`MIN_ARENA_BYTES`] of the buffer lie after its first [`ARENA_ALIGN`]-byte
    /// boundary.
    TooSmall,
}

impl core::fmt::Debug for FixedArena {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FixedArena")
            .field("capacity", &self.capacity())
            .field("stats", &self.stats())
            .finish()
    }
}

impl Default for FixedArena {
    fn default() -> Self {
        Self::empty()
    }
}

impl FixedArena {
    /// An arena with no memory yet; every allocation fails until [`init`](Self::init).
    pub const fn empty() -> Self {
        FixedArena {
            heap: embedded_alloc::LlffHeap::empty(),
            initialized: AtomicBool::new(false),
            capacity: AtomicUsize::new(0),
            in_use: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            total: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
        }
    }

    /// Give the arena its memory. Only the first call succeeds. The arena starts at the
    /// buffer's first [`ARENA_ALIGN`]-byte boundary, so a program's blocks are laid out the same wherever
    /// the buffer is: the arena size recorded in a BEF file (docs/bef.md, "Arena sizes")
    /// holds for any buffer of at least that [`capacity`](Self::capacity).
    pub fn init(&self, buffer: &'static mut [u8]) -> Result<(), ArenaInitError> {
        let skip = (buffer.as_ptr() as usize).wrapping_neg() % ARENA_ALIGN;
        let Some(usable) = buffer.len().checked_sub(skip).filter(|n| *n >= MIN_ARENA_BYTES) else {
            return Err(ArenaInitError::TooSmall);
        };
        if self.initialized.swap(true, Ordering::AcqRel) {
            return Err(ArenaInitError::AlreadyInitialized);
        }
        // SAFETY: `buffer[skip..]` is valid, exclusively borrowed for 'static and at least
        // MIN_ARENA_BYTES long; the `initialized` flag guarantees the heap is initialized
        // exactly once.
        unsafe { self.heap.init(buffer.as_mut_ptr() as usize + skip, usable) };
        self.capacity.store(usable, Ordering::Release);
        Ok(())
    }

    /// Usable bytes of the buffer given to [`init`](Self::init) (from its first [`ARENA_ALIGN`]-byte
    /// boundary on).
    pub fn capacity(&self) -> usize {
        self.capacity.load(Ordering::Acquire)
    }

    /// Reset the peak to the current in-use figure (for measuring one phase).
    pub fn reset_peak(&self) {
        self.peak.store(self.in_use.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}

// SAFETY: LlffHeap returns blocks valid for the layout until deallocated; an uninitialized
// heap is never asked (allocation fails before reaching it).
unsafe impl HostAllocator for FixedArena {
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let ptr = if self.initialized.load(Ordering::Acquire) && layout.size() != 0 {
            // SAFETY: non-zero size; the heap was initialized.
            NonNull::new(unsafe { GlobalAlloc::alloc(&self.heap, layout) })
        } else {
            None
        };
        match ptr {
            Some(p) => {
                let now = self.in_use.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
                self.peak.fetch_max(now, Ordering::Relaxed);
                self.live.fetch_add(1, Ordering::Relaxed);
                self.total.fetch_add(1, Ordering::Relaxed);
                Ok(p)
            }
            None => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                Err(AllocError::new(layout))
            }
        }
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: caller guarantees `ptr` came from `allocate` with `layout`.
        unsafe { GlobalAlloc::dealloc(&self.heap, ptr.as_ptr(), layout) };
        self.in_use.fetch_sub(layout.size(), Ordering::Relaxed);
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    fn stats(&self) -> Option<AllocStats> {
        Some(AllocStats {
            in_use: self.in_use.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
            live_allocations: self.live.load(Ordering::Relaxed),
            total_allocations: self.total.load(Ordering::Relaxed),
            #[cfg(feature = "profile")]
            allocated_bytes: None,
            failed: self.failed.load(Ordering::Relaxed),
            capacity: self.capacity(),
        })
    }
}

/// A buffer of `$bytes` bytes in a static of its own, as `Option<&'static mut [u8]>` for
/// [`FixedArena::init`]: `Some` the first time the expansion runs, `None` ever after, so
/// the memory is never handed out twice. For firmware without a heap:
/// `let buffer = hostrt_core::static_buffer!(16 * 1024);`.
#[macro_export]
macro_rules! static_buffer {
    ($bytes:expr) => {{
        static TAKEN: $crate::__private::AtomicBool = $crate::__private::AtomicBool::new(false);
        static mut BUFFER: [::core::mem::MaybeUninit<u8>; $bytes] =
            [::core::mem::MaybeUninit::uninit(); $bytes];
        if TAKEN.swap(true, $crate::__private::Ordering::AcqRel) {
            None
        } else {
            // SAFETY: `TAKEN` lets exactly one caller through, so this is the only reference
            // to `BUFFER` ever made; `MaybeUninit<u8>` and `u8` have the same layout, and an
            // arena never reads bytes it has not written.
            Some(unsafe { &mut *((&raw mut BUFFER) as *mut [u8; $bytes]) } as &'static mut [u8])
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;
    extern crate std;
    use std::boxed::Box;
    use std::vec;

    fn arena(bytes: usize) -> &'static FixedArena {
        let a: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        a.init(vec![0u8; bytes].leak()).unwrap();
        a
    }

    #[test]
    fn allocates_tracks_and_frees() {
        let a = arena(1024);
        let l = Layout::from_size_align(64, 8).unwrap();
        let p = a.allocate(l).unwrap();
        assert_eq!(p.as_ptr() as usize % 8, 0);
        let s = a.stats().unwrap();
        assert_eq!((s.in_use, s.peak, s.live_allocations), (64, 64, 1));
        // SAFETY: `p` came from this arena with `l`.
        unsafe { a.deallocate(p, l) };
        let s = a.stats().unwrap();
        assert_eq!((s.in_use, s.peak, s.live_allocations, s.total_allocations), (0, 64, 0, 1));
    }

    #[test]
    fn exhaustion_is_an_error_and_counted() {
        let a = arena(256);
        let big = Layout::from_size_align(512, 8).unwrap();
        assert_eq!(a.allocate(big), Err(AllocError { size: 512, align: 8 }));
        assert_eq!(a.stats().unwrap().failed, 1);
    }

    #[test]
    fn uninitialized_and_double_init() {
        let a: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
        assert!(a.allocate(Layout::new::<u64>()).is_err());
        assert_eq!(a.init(vec![0u8; 4].leak()), Err(ArenaInitError::TooSmall));
        a.init(vec![0u8; 128].leak()).unwrap();
        assert_eq!(a.init(vec![0u8; 128].leak()), Err(ArenaInitError::AlreadyInitialized));
        assert!(a.allocate(Layout::from_size_align(0, 1).unwrap()).is_err());
    }
}

#[cfg(test)]
mod static_buffer_tests {
    #[test]
    fn a_static_buffer_is_handed_out_once() {
        let mut taken = 0;
        for _ in 0..3 {
            if let Some(b) = crate::static_buffer!(64) {
                assert_eq!(b.len(), 64);
                taken += 1;
            }
        }
        assert_eq!(taken, 1);
    }
}
