//! [`Filled`]: stack buffers written only as far as a call uses them.

use core::mem::MaybeUninit;

/// A buffer on the stack of which only the first `len` elements are written and read:
/// zeroing whole buffers on every call cost more than the work of small layers (a kernel's
/// buffers are sized for its largest case). On x86-64 its values start on a 64-byte boundary
/// (`repr(C)` keeps them first), so that the 512-bit loads of laid-out rows (each a multiple
/// of 64 bytes from the start) do not straddle cache lines: unaligned, they made int8
/// MobileNetV1 up to 7% slower, depending on where the stack lay.
#[cfg_attr(target_arch = "x86_64", repr(C, align(64)))]
pub(crate) struct Filled<T: Copy, const N: usize> {
    buf: [MaybeUninit<T>; N],
    len: usize,
}

impl<T: Copy, const N: usize> Filled<T, N> {
    /// Empty.
    pub(crate) fn new() -> Filled<T, N> {
        Filled { buf: [const { MaybeUninit::uninit() }; N], len: 0 }
    }

    /// Makes `values` the contents (panics if there are more than `N`).
    pub(crate) fn set(&mut self, values: impl IntoIterator<Item = T>) {
        let mut len = 0;
        for v in values {
            self.buf[len].write(v);
            len += 1;
        }
        self.len = len;
    }

    /// Makes `len` copies of `value` the contents (panics if `len` is over `N`), to be
    /// written in place.
    pub(crate) fn reset(&mut self, len: usize, value: T) -> &mut [T] {
        for v in &mut self.buf[..len] {
            v.write(value);
        }
        self.len = len;
        let written = &mut self.buf[..len];
        // SAFETY: the first `len` elements were written just above, and `MaybeUninit<T>` has
        // the size, alignment and layout of `T`.
        unsafe { &mut *(written as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// Makes the first `len` elements (panics if `len` is over `N`) the contents, as `write`
    /// leaves them: for buffers whose every element a call writes once anyway, which
    /// [`Filled::reset`] would write twice.
    ///
    /// # Safety
    /// `write` must initialize each of the `len` elements it is given.
    // (Only x86-64's depthwise loop stages its rows so.)
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) unsafe fn reset_with(
        &mut self,
        len: usize,
        write: impl FnOnce(&mut [MaybeUninit<T>]),
    ) -> &mut [T] {
        // Empty while `write` runs, so that a panic in it leaves nothing unwritten readable.
        self.len = 0;
        write(&mut self.buf[..len]);
        self.len = len;
        let written = &mut self.buf[..len];
        // SAFETY: the caller's `write` initialized the first `len` elements, and
        // `MaybeUninit<T>` has the size, alignment and layout of `T`.
        unsafe { &mut *(written as *mut [MaybeUninit<T>] as *mut [T]) }
    }

    /// The contents.
    pub(crate) fn get(&self) -> &[T] {
        let written = &self.buf[..self.len];
        // SAFETY: `set` or `reset` wrote the first `len` elements, and `MaybeUninit<T>` has
        // the size, alignment and layout of `T`.
        unsafe { &*(written as *const [MaybeUninit<T>] as *const [T]) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_written_last() {
        let mut f = Filled::<u16, 8>::new();
        assert!(f.get().is_empty());
        f.set([1, 2, 3]);
        assert_eq!(f.get(), [1, 2, 3]);
        f.reset(5, 7)[4] = 9;
        assert_eq!(f.get(), [7, 7, 7, 7, 9]);
    }

    #[test]
    fn holds_what_a_writer_wrote() {
        let mut f = Filled::<u16, 8>::new();
        f.set([1, 2]);
        // SAFETY: the writer initializes all three elements it is given.
        let got = unsafe {
            f.reset_with(3, |buf| buf.iter_mut().enumerate().for_each(|(i, v)| _ = v.write(i as u16)))
        };
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(f.get(), [0, 1, 2]);
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn starts_on_a_cache_line() {
        // Byte buffers too, beside others on the stack.
        let (a, b) = (Filled::<u8, 3>::new(), Filled::<i32, 5>::new());
        assert_eq!(a.get().as_ptr() as usize % 64, 0);
        assert_eq!(b.get().as_ptr() as usize % 64, 0);
    }

    #[test]
    #[should_panic]
    fn refuses_more_than_it_holds() {
        Filled::<u8, 2>::new().set([1, 2, 3]);
    }
}
