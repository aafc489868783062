//! The system heap with a per-thread cache of small blocks: async values, waiter nodes and
//! tasks are allocated and freed once each per kernel or value, and a free list push or pop
//! costs a few instructions where glibc's `malloc` and `free` took 150-250 together per
//! block in the executor's profiles (callgrind).
//!
//! Blocks of at most [`SMALL`] bytes and alignment at most [`GRAIN`] are rounded up to a
//! multiple of [`GRAIN`] (and so [`GRAIN`]-aligned); other blocks of at most [`MAX_CACHED`]
//! bytes and alignment at most [`LINE`] (tensor buffers: a 64-byte header and 64-byte
//! aligned data, such as a small model's output each call) to a multiple of [`LINE`]. Each
//! is always taken from the heap with that rounded layout, so any freed block of a size
//! class serves any later request of the class. A thread keeps at most [`BUDGET`] bytes of freed blocks; the rest, and everything
//! at the thread's exit, go back to the heap. A block joins the cache of the thread that
//! frees it, whichever thread allocated it (all are blocks of the one global heap).
//!
//! Memory checkers see a cached block as live: an overflow into its rounding or a use
//! after free goes unnoticed. Check memory errors over [`MallocAllocator`](crate::MallocAllocator).

use std::alloc::Layout;
use std::cell::Cell;
use std::ptr::{self, NonNull};

use hostrt_core::allocator::{AllocError, HostAllocator};

/// Largest block size the cache keeps.
pub const MAX_CACHED: usize = 4096;
/// Largest block of the small classes.
pub const SMALL: usize = 256;
/// Size-class granularity and alignment of the small classes.
pub const GRAIN: usize = 16;
/// Size-class granularity and alignment of the other classes: the largest alignment served
/// from the cache.
pub const LINE: usize = 64;
/// Bytes of free blocks one thread keeps at most.
pub const BUDGET: usize = 64 * 1024;

const SMALL_CLASSES: usize = SMALL / GRAIN;
const CLASSES: usize = SMALL_CLASSES + MAX_CACHED / LINE;

/// A cached free block: its first word links to the next of its class.
struct FreeBlock {
    next: *mut FreeBlock,
}

/// One thread's free lists, one per size class.
struct ThreadCache {
    heads: [Cell<*mut FreeBlock>; CLASSES],
    bytes: Cell<usize>,
}

impl ThreadCache {
    const fn new() -> Self {
        ThreadCache { heads: [const { Cell::new(ptr::null_mut()) }; CLASSES], bytes: Cell::new(0) }
    }

    fn pop(&self, class: usize) -> Option<NonNull<u8>> {
        let head = NonNull::new(self.heads[class].get())?;
        // SAFETY: a listed block is a free heap block of the class (at least `GRAIN` bytes,
        // at least `GRAIN`-aligned) that only this list reaches; its first word is the link.
        let next = unsafe { (*head.as_ptr()).next };
        self.heads[class].set(next);
        self.bytes.set(self.bytes.get() - class_size(class));
        Some(head.cast())
    }

    /// Keep `block` (of `class`), unless the budget is spent: `false` then.
    fn push(&self, class: usize, block: NonNull<u8>) -> bool {
        let bytes = self.bytes.get() + class_size(class);
        if bytes > BUDGET {
            return false;
        }
        let block = block.cast::<FreeBlock>();
        // SAFETY: the caller gives up a heap block of the class (at least `GRAIN` bytes,
        // at least `GRAIN`-aligned); it is free, so its first word may hold the link.
        unsafe { block.as_ptr().write(FreeBlock { next: self.heads[class].get() }) };
        self.heads[class].set(block.as_ptr());
        self.bytes.set(bytes);
        true
    }
}

impl Drop for ThreadCache {
    fn drop(&mut self) {
        for class in 0..CLASSES {
            while let Some(block) = self.pop(class) {
                // SAFETY: a block of the class, allocated with the class's layout, freed once.
                unsafe { std::alloc::dealloc(block.as_ptr(), class_layout(class)) };
            }
        }
    }
}

thread_local! {
    static CACHE: ThreadCache = const { ThreadCache::new() };
}

/// The size and alignment of `class`'s blocks.
const fn class_shape(class: usize) -> (usize, usize) {
    if class < SMALL_CLASSES {
        ((class + 1) * GRAIN, GRAIN)
    } else {
        ((class - SMALL_CLASSES + 1) * LINE, LINE)
    }
}

const fn class_size(class: usize) -> usize {
    class_shape(class).0
}

fn class_layout(class: usize) -> Layout {
    let (size, align) = class_shape(class);
    // SAFETY: a non-zero multiple of `align`, a power of two, far below `isize::MAX`.
    unsafe { Layout::from_size_align_unchecked(size, align) }
}

/// The size class of `layout`, when the cache serves it.
#[inline]
fn class_of(layout: Layout) -> Option<usize> {
    let (size, align) = (layout.size(), layout.align());
    if size == 0 || size > MAX_CACHED || align > LINE {
        None
    } else if size <= SMALL && align <= GRAIN {
        Some((size - 1) / GRAIN)
    } else {
        Some(SMALL_CLASSES + (size - 1) / LINE)
    }
}

/// The system heap (the global allocator) with a per-thread cache of small blocks; see the
/// module's documentation. Zero-size requests are refused, as [`MallocAllocator`] does.
///
/// ```
/// use std::alloc::Layout;
/// use hostrt_core::allocator::HostAllocator;
/// use hostrt_std::CachedMallocAllocator;
///
/// let heap = CachedMallocAllocator;
/// let layout = Layout::new::<[u64; 4]>();
/// let a = heap.allocate(layout).unwrap();
/// // SAFETY: `a` came from `heap` with `layout` and is freed once.
/// unsafe { heap.deallocate(a, layout) };
/// // The next block of the same size class is the one just freed.
/// let b = heap.allocate(layout).unwrap();
/// assert_eq!(a, b);
/// // SAFETY: as above.
/// unsafe { heap.deallocate(b, layout) };
/// ```
///
/// [`MallocAllocator`]: crate::MallocAllocator
#[derive(Debug, Default, Clone, Copy)]
pub struct CachedMallocAllocator;

// SAFETY: a small block comes from the global allocator with its class's layout, which
// every request of the class fits (size and alignment), and goes back to it with that same
// layout; a cached block is handed out to one caller at a time (it leaves the list first).
// Other requests go to the global allocator unchanged.
unsafe impl HostAllocator for CachedMallocAllocator {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let layout = match class_of(layout) {
            Some(class) => {
                // (The cache is gone while the thread exits: the heap serves it then.)
                if let Ok(Some(block)) = CACHE.try_with(|c| c.pop(class)) {
                    return Ok(block);
                }
                class_layout(class)
            }
            None if layout.size() == 0 => return Err(AllocError::new(layout)),
            None => layout,
        };
        // SAFETY: non-zero size.
        NonNull::new(unsafe { std::alloc::alloc(layout) }).ok_or(AllocError::new(layout))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        let layout = match class_of(layout) {
            Some(class) => {
                if CACHE.try_with(|c| c.push(class, ptr)) == Ok(true) {
                    return;
                }
                class_layout(class)
            }
            None => layout,
        };
        // SAFETY: the caller passes a block from `allocate` with the layout it asked for,
        // which `allocate` took from the heap as `layout` is now.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used() -> usize {
        CACHE.with(|c| c.bytes.get())
    }

    #[test]
    fn a_freed_block_serves_the_next_request_of_its_size_class() {
        let heap = CachedMallocAllocator;
        let small = Layout::from_size_align(20, 4).unwrap();
        let a = heap.allocate(small).unwrap();
        let before = used();
        // SAFETY: from `heap` with `small`, freed once.
        unsafe { heap.deallocate(a, small) };
        assert_eq!(used(), before + 32);
        // 17..=32 bytes share a class; alignment up to 16 is served from it.
        let b = heap.allocate(Layout::from_size_align(32, 16).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.as_ptr().addr() % GRAIN, 0);
        assert_eq!(used(), before);
        // SAFETY: `b` is a live block of 32 bytes.
        unsafe { b.as_ptr().write_bytes(0xab, 32) };
        // SAFETY: from `heap` with this layout, freed once.
        unsafe { heap.deallocate(b, Layout::from_size_align(32, 16).unwrap()) };
    }

    /// A tensor buffer's block (64-byte header, 64-byte aligned): the line classes, which
    /// a small block of another alignment shares by size.
    #[test]
    fn line_aligned_blocks_have_their_own_classes() {
        let heap = CachedMallocAllocator;
        let buffer = Layout::from_size_align(64 + 640, 64).unwrap();
        let a = heap.allocate(buffer).unwrap();
        assert_eq!(a.as_ptr().addr() % LINE, 0);
        let before = used();
        // SAFETY: from `heap` with `buffer`, freed once.
        unsafe { heap.deallocate(a, buffer) };
        assert_eq!(used(), before + 704);
        // 641..=704 bytes of any alignment up to 64, and small blocks aligned to 32.
        let b = heap.allocate(Layout::from_size_align(700, 8).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(used(), before);
        // SAFETY: from `heap` with this layout, freed once.
        unsafe { heap.deallocate(b, Layout::from_size_align(700, 8).unwrap()) };
        let c = heap.allocate(Layout::from_size_align(48, 32).unwrap()).unwrap();
        assert_eq!(c.as_ptr().addr() % LINE, 0);
        // SAFETY: from `heap` with this layout, freed once.
        unsafe { heap.deallocate(c, Layout::from_size_align(48, 32).unwrap()) };
        assert_eq!(used(), before + 704 + 64);
    }

    #[test]
    fn large_overaligned_and_empty_requests_bypass_the_cache() {
        let heap = CachedMallocAllocator;
        let before = used();
        for layout in
            [Layout::from_size_align(MAX_CACHED + 1, 8).unwrap(), Layout::from_size_align(64, 128).unwrap()]
        {
            let p = heap.allocate(layout).unwrap();
            assert_eq!(p.as_ptr().addr() % layout.align(), 0);
            // SAFETY: from `heap` with `layout`, freed once.
            unsafe { heap.deallocate(p, layout) };
            assert_eq!(used(), before);
        }
        assert!(heap.allocate(Layout::from_size_align(0, 1).unwrap()).is_err());
    }

    #[test]
    fn a_thread_keeps_at_most_its_budget() {
        let heap = CachedMallocAllocator;
        let layout = Layout::from_size_align(MAX_CACHED, 8).unwrap();
        let n = 2 * BUDGET / MAX_CACHED;
        let blocks: Vec<_> = (0..n).map(|_| heap.allocate(layout).unwrap()).collect();
        for b in blocks {
            // SAFETY: from `heap` with `layout`, freed once.
            unsafe { heap.deallocate(b, layout) };
        }
        assert!(used() <= BUDGET);
        assert!(used() > BUDGET - MAX_CACHED);
    }

    #[test]
    fn blocks_cross_threads_and_return_to_the_heap_at_thread_exit() {
        struct Blocks(Vec<NonNull<u8>>);
        // SAFETY: plain heap blocks, handed over whole to the other thread.
        unsafe impl Send for Blocks {}
        let heap = CachedMallocAllocator;
        let layout = Layout::new::<[u64; 6]>();
        let blocks = Blocks((0..64).map(|_| heap.allocate(layout).unwrap()).collect());
        std::thread::spawn(move || {
            let blocks = blocks;
            for p in blocks.0 {
                // SAFETY: allocated above with `layout`, freed once, here.
                unsafe { heap.deallocate(p, layout) };
            }
            assert_eq!(used(), 64 * 48);
            // The thread's exit frees them: Miri's leak check sees it (by hand:
            // `cargo +nightly miri test -p hostrt-std --lib -- block_cache`).
        })
        .join()
        .unwrap();
    }
}
