//! Short-lived arrays for a kernel call: on the stack up to [`INLINE`] elements, else one
//! allocator block (so wide kernels such as a 100-operand sum work without `alloc`).

use core::alloc::Layout;
use core::cell::Cell;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use crate::allocator::Allocator;
use crate::async_value::RcAsyncValue;

/// Elements kept on the stack.
pub(crate) const INLINE: usize = 8;

/// A fixed-length array built once from an iterator.
pub(crate) struct CallBuf<T> {
    inline: [MaybeUninit<T>; INLINE],
    heap: Option<(NonNull<T>, Layout, Allocator)>,
    len: usize,
}

impl<T> CallBuf<T> {
    /// An empty buffer. Fill it in place with [`fill`](Self::fill): building it full and
    /// returning it by value would copy the inline array on every kernel call.
    pub(crate) const fn empty() -> Self {
        CallBuf { inline: [const { MaybeUninit::uninit() }; INLINE], heap: None, len: 0 }
    }

    /// Collect up to `n` items (stopping early if the iterator does); `false` if `n > INLINE`
    /// and the allocator is exhausted. The items are taken either way (a failed fill drops
    /// them), so an iterator that takes references, as the executor's operand iterator
    /// does, always gives them back.
    pub(crate) fn fill(&mut self, alloc: Allocator, n: usize, items: impl Iterator<Item = T>) -> bool {
        debug_assert!(self.len == 0 && self.heap.is_none());
        let base: *mut T = if n <= INLINE {
            self.inline.as_mut_ptr().cast()
        } else {
            let block = Layout::array::<T>(n).ok().and_then(|l| Some((l, alloc.allocate(l).ok()?)));
            let Some((layout, p)) = block else {
                items.take(n).for_each(drop);
                return false;
            };
            let p = p.cast::<T>();
            self.heap = Some((p, layout, alloc));
            p.as_ptr()
        };
        for item in items.take(n) {
            // SAFETY: `len < n`, within the inline array or the block sized for `n`.
            unsafe { base.add(self.len).write(item) };
            self.len += 1;
        }
        true
    }

    fn base(&self) -> *const T {
        match &self.heap {
            Some((p, ..)) => p.as_ptr(),
            None => self.inline.as_ptr().cast(),
        }
    }

    /// As [`base`](Self::base), for writing: derived from `&mut self`, so that dropping or
    /// mutating elements through it is allowed (a pointer from `&self` only grants reads).
    fn base_mut(&mut self) -> *mut T {
        match &self.heap {
            Some((p, ..)) => p.as_ptr(),
            None => self.inline.as_mut_ptr().cast(),
        }
    }

    /// The elements.
    pub(crate) fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` elements were written in `new` and are dropped only in Drop.
        unsafe { core::slice::from_raw_parts(self.base(), self.len) }
    }

    /// The elements, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as for `as_slice`, and `&mut self` makes the access exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.base_mut(), self.len) }
    }
}

impl<T> Drop for CallBuf<T> {
    fn drop(&mut self) {
        let base = self.base_mut();
        for i in 0..self.len {
            // SAFETY: the first `len` elements are initialised and dropped once, in order.
            unsafe { base.add(i).drop_in_place() };
        }
        if let Some((p, layout, alloc)) = self.heap.take() {
            // SAFETY: allocated in `new` with this layout.
            unsafe { alloc.deallocate(p.cast(), layout) };
        }
    }
}

/// The operand and result arrays of a kernel too wide for the executor's stack arrays, in
/// one allocator block: `args` operand places (uninitialised), then `results` slots
/// (initialised empty). Frees the block when dropped; the caller moves every operand out
/// and empties every slot first.
pub(crate) struct WideArrays {
    block: NonNull<usize>,
    layout: Layout,
    alloc: Allocator,
    args: usize,
}

const _: () = {
    assert!(
        size_of::<RcAsyncValue>() == size_of::<usize>() && align_of::<RcAsyncValue>() <= align_of::<usize>()
    );
    assert!(size_of::<Cell<Option<RcAsyncValue>>>() == size_of::<usize>());
};

impl WideArrays {
    /// The arrays for `args` operands and `results` results; `None` without memory.
    pub(crate) fn new(alloc: Allocator, args: usize, results: usize) -> Option<WideArrays> {
        let layout = Layout::array::<usize>(args.checked_add(results)?).ok()?;
        let block = alloc.allocate(layout).ok()?.cast::<usize>();
        let arrays = WideArrays { block, layout, alloc, args };
        for i in 0..results {
            // SAFETY: slot `i` lies in the block, after the `args` operand places.
            unsafe { arrays.slots().cast_mut().add(i).write(Cell::new(None)) };
        }
        Some(arrays)
    }

    /// The first operand place.
    pub(crate) fn args(&self) -> *mut RcAsyncValue {
        self.block.as_ptr().cast()
    }

    /// The first result slot.
    pub(crate) fn slots(&self) -> *const Cell<Option<RcAsyncValue>> {
        // SAFETY: within the block of `args + results` words.
        unsafe { self.block.as_ptr().add(self.args).cast() }
    }
}

impl Drop for WideArrays {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; its elements are no longer used.
        unsafe { self.alloc.deallocate(self.block.cast(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::CallBuf;
    use crate::testing::TestArena;
    use core::cell::Cell;

    /// Counts its drops.
    struct Counted<'a>(&'a Cell<usize>);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn elements_are_mutated_drained_and_dropped_in_place() {
        let arena = TestArena::new(4096);
        let drops = Cell::new(0);
        for n in [3, super::INLINE + 5] {
            drops.set(0);
            let mut buf = CallBuf::empty();
            assert!(buf.fill(arena.alloc, n, (0..n).map(|_| Counted(&drops))));
            buf.as_mut_slice().swap(0, 1); // writes through the buffer (Miri checks the pointer)
            let mut one = CallBuf::empty();
            assert!(one.fill(arena.alloc, 1, core::iter::once(Counted(&drops))));
            drop(one);
            assert_eq!(drops.get(), 1);
            drop(buf); // the rest are dropped in place
            assert_eq!(drops.get(), 1 + n);
        }
    }
}
