//! [`HostBuffer`]: a reference-counted, 64-byte-aligned byte buffer from a host allocator,
//! with slices that share it.
//!
//! Tensors are mutable shared objects (TFRT writes into an operand tensor in place, and
//! chains order writers and readers). Rust cannot let two threads touch the same bytes
//! unordered, so every access takes a borrow, as `RefCell` does but with one atomic word in
//! the buffer's block: any number of readers, or one writer. A program that reads and writes
//! a tensor without ordering them gets a [`BorrowError`] from the kernel that lost the race,
//! never a data race. The borrow covers the whole block, slices included.
//!
//! A buffer may also borrow bytes it does not own (an mmap'd file, a program's constant
//! data): [`HostBuffer::from_owner`] moves the owner into the buffer's header block and
//! drops it with the last handle. Such buffers are read-only.

use core::alloc::Layout;
use core::fmt;
use core::ptr::NonNull;

use crate::allocator::{AllocError, Allocator};
use crate::sync::{AtomicU32, Ordering, fence};

/// Alignment of every buffer's data (a cache line; enough for any SIMD width in use).
pub const BUFFER_ALIGN: usize = 64;

/// The block's first [`BUFFER_ALIGN`] bytes; then the data (owned buffers) or the owner of
/// the data (borrowed ones).
#[repr(C)]
struct Header {
    refs: AtomicU32,
    /// Bit 31: a writer holds the data; bits 0..31: readers.
    borrows: AtomicU32,
    alloc: Allocator,
    writable: bool,
    /// The whole buffer's bytes (after the header, or the owner's).
    data: NonNull<u8>,
    size: usize,
    /// The block as allocated, to give it back.
    block: Layout,
    /// Drops the owner of borrowed bytes in place (`None` for owned data).
    drop_owner: Option<unsafe fn(NonNull<Header>)>,
}

const WRITER: u32 = 1 << 31;

const _: () = assert!(core::mem::size_of::<Header>() <= BUFFER_ALIGN);

/// A counted handle to a window of a buffer block (the whole block, or a slice of it).
///
/// ```
/// use hostrt_core::tensor::HostBuffer;
/// use hostrt_core::{Allocator, FixedArena};
///
/// static ARENA: FixedArena = FixedArena::empty();
/// ARENA.init(hostrt_core::static_buffer!(4096).unwrap()).unwrap();
/// let alloc = Allocator::register(&ARENA).unwrap();
///
/// let buf = HostBuffer::allocate(alloc, 8).unwrap();
/// buf.write().unwrap().copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
/// let tail = buf.slice(4, 4).unwrap(); // shares the block, allocates nothing
/// assert_eq!(&*tail.read().unwrap(), &[5, 6, 7, 8]);
/// let reading = buf.read().unwrap();
/// assert!(tail.write().is_err(), "a writer waits for no one: it is refused");
/// drop(reading);
/// ```
pub struct HostBuffer {
    block: NonNull<Header>,
    offset: usize,
    len: usize,
}

// SAFETY: the block is shared through atomics (reference count, borrow word); its bytes are
// only reached through `read`/`write` guards that the borrow word makes exclusive for
// writers, so handles may move to and be shared by other threads.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

/// Why the bytes cannot be accessed now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BorrowError {
    /// Another access holds the buffer: a read while it is written, or a write while it is
    /// read or written. Programs order tensor writers and readers with chains; this is the
    /// error of one that does not.
    Busy,
    /// A write to bytes the buffer borrows read-only ([`HostBuffer::from_owner`]).
    ReadOnly,
}

impl fmt::Display for BorrowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BorrowError::Busy => "tensor buffer is accessed by an unordered reader and writer",
            BorrowError::ReadOnly => "tensor buffer is read-only (it borrows constant bytes)",
        })
    }
}

/// The header padded to [`BUFFER_ALIGN`], then `tail`: the block of an owned buffer (`tail`
/// = the data) or a borrowed one (`tail` = the owner), and the tail's offset.
fn block_layout(tail: Layout) -> Option<(Layout, usize)> {
    let head = Layout::from_size_align(BUFFER_ALIGN, BUFFER_ALIGN).ok()?;
    head.extend(tail).ok()
}

fn data_layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size, 1).ok()
}

/// Drops the owner `O` stored in the block after the header.
///
/// # Safety
/// `header` is a block made by [`HostBuffer::from_owner::<O>`] whose owner is still alive
/// and is dropped no more than once.
unsafe fn drop_owner<O>(header: NonNull<Header>) {
    if let Some((_, offset)) = block_layout(Layout::new::<O>()) {
        // SAFETY: `from_owner` wrote an `O` at this offset of the block (same layout
        // computation); the caller promises it is alive and dropped once.
        unsafe { header.cast::<u8>().add(offset).cast::<O>().drop_in_place() };
    }
}

impl HostBuffer {
    /// A zeroed buffer of `size` bytes: one allocator block of 64 + `size` bytes, the data
    /// 64-byte aligned. Exhaustion (or a size no layout can hold) is an `Err`.
    pub fn allocate(alloc: Allocator, size: usize) -> Result<HostBuffer, AllocError> {
        // SAFETY: writes the `size` bytes at `data`, all of them.
        unsafe { HostBuffer::allocate_with(alloc, size, |data| data.write_bytes(0, size)) }
    }

    /// A buffer holding a copy of `bytes`: as [`HostBuffer::allocate`] then a copy, without
    /// zeroing the bytes first (an output tensor copied out of an arena, an input from flash).
    ///
    /// ```
    /// use hostrt_core::tensor::HostBuffer;
    /// use hostrt_core::{Allocator, FixedArena};
    ///
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    ///
    /// let b = HostBuffer::copy_of(alloc, &[1, 2, 3]).unwrap();
    /// assert_eq!(*b.read().unwrap(), [1, 2, 3]);
    /// ```
    pub fn copy_of(alloc: Allocator, bytes: &[u8]) -> Result<HostBuffer, AllocError> {
        // SAFETY: writes the `bytes.len()` bytes at `data`, all of them, from `bytes` (which
        // cannot overlap a fresh block).
        unsafe {
            HostBuffer::allocate_with(alloc, bytes.len(), |data| {
                core::ptr::copy_nonoverlapping(bytes.as_ptr(), data, bytes.len())
            })
        }
    }

    /// A buffer of `size` bytes whose data `init` writes.
    ///
    /// # Safety
    /// `init` must write all `size` bytes at the pointer it is given (valid for `size`
    /// writes), and nothing else.
    unsafe fn allocate_with(
        alloc: Allocator,
        size: usize,
        init: impl FnOnce(*mut u8),
    ) -> Result<HostBuffer, AllocError> {
        let too_big = || AllocError::new(Layout::new::<Header>());
        let (layout, offset) = data_layout(size).and_then(block_layout).ok_or_else(too_big)?;
        let block = alloc.allocate(layout)?.cast::<Header>();
        // SAFETY: a fresh block of `64 + size` bytes aligned to 64: the header fits in the
        // first 64 bytes (asserted above) and the data is the `size` bytes at `offset` (64),
        // which `init` writes whole (the caller's contract).
        unsafe {
            let data = block.cast::<u8>().add(offset);
            init(data.as_ptr());
            block.as_ptr().write(Header {
                refs: AtomicU32::new(1),
                borrows: AtomicU32::new(0),
                alloc,
                writable: true,
                data,
                size,
                block: layout,
                drop_owner: None,
            });
        }
        Ok(HostBuffer { block, offset: 0, len: size })
    }

    /// A read-only buffer over `owner`'s bytes, without copying them: `owner` (an mmap, a
    /// `&'static [u8]` of constants, an `Arc` of a file's bytes) moves into the buffer's
    /// header block (one allocator block of 64 bytes + the owner's size) and is dropped when
    /// the last handle goes. Exhaustion is an `Err` (and `owner` is dropped).
    ///
    /// ```
    /// use hostrt_core::tensor::{BorrowError, HostBuffer};
    /// use hostrt_core::{Allocator, FixedArena};
    ///
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    ///
    /// static WEIGHTS: [u8; 4] = [1, 2, 3, 4];
    /// let buf = HostBuffer::from_owner(alloc, &WEIGHTS[..]).unwrap();
    /// assert_eq!(buf.read().unwrap().as_ptr(), WEIGHTS.as_ptr(), "not copied");
    /// assert_eq!(buf.write().unwrap_err(), BorrowError::ReadOnly);
    /// ```
    pub fn from_owner<O>(alloc: Allocator, owner: O) -> Result<HostBuffer, AllocError>
    where
        O: AsRef<[u8]> + Send + Sync + 'static,
    {
        Self::adopt(alloc, owner, false, |o: &mut O| {
            let bytes = (*o).as_ref();
            (NonNull::new(bytes.as_ptr().cast_mut()), bytes.len())
        })
    }

    /// Like [`from_owner`](Self::from_owner), but writable through the owner's `AsMut` (a
    /// private copy-on-write mapping of a file, say): writes change the owner's bytes.
    pub fn from_owner_mut<O>(alloc: Allocator, owner: O) -> Result<HostBuffer, AllocError>
    where
        O: AsMut<[u8]> + Send + Sync + 'static,
    {
        Self::adopt(alloc, owner, true, |o: &mut O| {
            let bytes = o.as_mut();
            (NonNull::new(bytes.as_mut_ptr()), bytes.len())
        })
    }

    /// Move `owner` into a new header block and borrow its bytes (`data` finds them).
    fn adopt<O: Send + Sync + 'static>(
        alloc: Allocator,
        owner: O,
        writable: bool,
        data: impl FnOnce(&mut O) -> (Option<NonNull<u8>>, usize),
    ) -> Result<HostBuffer, AllocError> {
        let too_big = || AllocError::new(Layout::new::<Header>());
        let (layout, offset) = block_layout(Layout::new::<O>()).ok_or_else(too_big)?;
        let block = alloc.allocate(layout)?.cast::<Header>();
        // SAFETY: a fresh block laid out as the header (first 64 bytes) and an `O` at
        // `offset`; the owner is written once, then its bytes are borrowed in place: they
        // stay put while the owner is not moved, and it is not moved until `drop_owner`
        // drops it with the last handle. Writes go through the pointer `AsMut` gave, and
        // only when `writable`.
        unsafe {
            let slot = block.cast::<u8>().add(offset).cast::<O>();
            slot.as_ptr().write(owner);
            let (ptr, size) = data(&mut *slot.as_ptr());
            block.as_ptr().write(Header {
                refs: AtomicU32::new(1),
                borrows: AtomicU32::new(0),
                alloc,
                writable,
                data: ptr.unwrap_or(NonNull::dangling()),
                size,
                block: layout,
                drop_owner: Some(drop_owner::<O>),
            });
        }
        Ok(HostBuffer { block, offset: 0, len: 0 }.whole())
    }

    fn whole(mut self) -> HostBuffer {
        self.len = self.header().size;
        self
    }

    fn header(&self) -> &Header {
        // SAFETY: the block lives while a counted handle exists.
        unsafe { self.block.as_ref() }
    }

    /// Whether this is the only handle on the buffer (no clone or slice shares its block), so
    /// its owner may reuse the bytes: TensorFlow's "forward an input" rule.
    pub fn is_unique(&self) -> bool {
        self.header().refs.load(Ordering::Acquire) == 1
    }

    #[cfg(feature = "kept-buffer")]
    /// Gives up this handle for a host's kept slot: the block of a whole writable buffer,
    /// its count unchanged; `None`, the handle dropped, for a window or a read-only buffer.
    pub(crate) fn into_kept(self) -> Option<NonNull<()>> {
        let header = self.header();
        if self.offset != 0 || self.len != header.size || !header.writable {
            return None;
        }
        let block = self.block.cast();
        core::mem::forget(self);
        Some(block)
    }

    #[cfg(feature = "kept-buffer")]
    /// The handle [`into_kept`](Self::into_kept) gave up.
    ///
    /// # Safety
    /// `kept` came from `into_kept`, and is turned back into a handle once.
    pub(crate) unsafe fn from_kept(kept: NonNull<()>) -> HostBuffer {
        HostBuffer { block: kept.cast(), offset: 0, len: 0 }.whole()
    }

    /// Bytes in this window.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Address of the window's first byte (for printing and alignment checks only).
    pub fn addr(&self) -> usize {
        self.data().as_ptr().addr()
    }

    fn data(&self) -> NonNull<u8> {
        // SAFETY: `offset <= size`, so this stays within (or one past) the block's data.
        unsafe { self.header().data.add(self.offset) }
    }

    /// The window `[offset, offset + len)` of this one, sharing the block (no allocation);
    /// `None` when it does not fit.
    pub fn slice(&self, offset: usize, len: usize) -> Option<HostBuffer> {
        let end = offset.checked_add(len)?;
        if end > self.len {
            return None;
        }
        self.header().refs.fetch_add(1, Ordering::Relaxed);
        Some(HostBuffer { block: self.block, offset: self.offset + offset, len })
    }

    /// Read the bytes; fails while a writer holds the block.
    pub fn read(&self) -> Result<ReadGuard<'_>, BorrowError> {
        let borrows = &self.header().borrows;
        let mut current = borrows.load(Ordering::Relaxed);
        loop {
            if current & WRITER != 0 || current == WRITER - 1 {
                return Err(BorrowError::Busy);
            }
            match borrows.compare_exchange_weak(current, current + 1, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return Ok(ReadGuard { buffer: self }),
                Err(now) => current = now,
            }
        }
    }

    /// Write the bytes; fails while anyone else reads or writes the block.
    pub fn write(&self) -> Result<WriteGuard<'_>, BorrowError> {
        if !self.header().writable {
            return Err(BorrowError::ReadOnly);
        }
        self.header()
            .borrows
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| WriteGuard { buffer: self })
            .map_err(|_| BorrowError::Busy)
    }

    /// Whether [`write`](Self::write) can ever succeed (false for borrowed bytes).
    pub fn is_writable(&self) -> bool {
        self.header().writable
    }

    /// Whether `other` is a window of the same block.
    pub fn shares_block_with(&self, other: &HostBuffer) -> bool {
        self.block == other.block
    }
}

impl Clone for HostBuffer {
    fn clone(&self) -> Self {
        self.header().refs.fetch_add(1, Ordering::Relaxed);
        HostBuffer { block: self.block, offset: self.offset, len: self.len }
    }
}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        if self.header().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        let (layout, alloc, drop) = (self.header().block, self.header().alloc, self.header().drop_owner);
        // SAFETY: the last handle: nobody else reaches the block. Its owner (if any) is alive
        // and dropped here once; the block was allocated with `layout` from `alloc`.
        unsafe {
            if let Some(drop) = drop {
                drop(self.block);
            }
            alloc.deallocate(self.block.cast(), layout);
        }
    }
}

impl fmt::Debug for HostBuffer {
    /// TFRT's form: `HostBuffer<pointer=0x..., size=n>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HostBuffer<pointer={:#x}, size={}>", self.addr(), self.len)
    }
}

/// Shared access to a buffer's bytes (see [`HostBuffer::read`]).
pub struct ReadGuard<'b> {
    buffer: &'b HostBuffer,
}

impl core::ops::Deref for ReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the borrow word holds a reader, so no writer exists until this guard is
        // dropped; the window lies within the block's initialised data.
        unsafe { core::slice::from_raw_parts(self.buffer.data().as_ptr(), self.buffer.len) }
    }
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        self.buffer.header().borrows.fetch_sub(1, Ordering::Release);
    }
}

/// Exclusive access to a buffer's bytes (see [`HostBuffer::write`]).
pub struct WriteGuard<'b> {
    buffer: &'b HostBuffer,
}

impl core::ops::Deref for WriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the borrow word holds this writer alone; the window is initialised data.
        unsafe { core::slice::from_raw_parts(self.buffer.data().as_ptr(), self.buffer.len) }
    }
}

impl core::ops::DerefMut for WriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as for `deref`, and this guard is the only access to the whole block.
        unsafe { core::slice::from_raw_parts_mut(self.buffer.data().as_ptr(), self.buffer.len) }
    }
}

impl Drop for WriteGuard<'_> {
    fn drop(&mut self) {
        self.buffer.header().borrows.store(0, Ordering::Release);
    }
}

impl fmt::Debug for ReadGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadGuard({:?})", self.buffer)
    }
}

impl fmt::Debug for WriteGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriteGuard({:?})", self.buffer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TestArena;

    #[test]
    fn buffers_are_aligned_zeroed_shared_and_returned() {
        let arena = TestArena::new(8192);
        {
            let b = HostBuffer::allocate(arena.alloc, 100).unwrap();
            assert_eq!(b.addr() % BUFFER_ALIGN, 0);
            assert!(b.read().unwrap().iter().all(|&x| x == 0));
            b.write().unwrap()[99] = 7;
            assert!(b.is_unique());
            let s = b.slice(96, 4).unwrap();
            assert!(s.shares_block_with(&b));
            assert!(!b.is_unique() && !s.is_unique());
            assert_eq!(&*s.read().unwrap(), &[0, 0, 0, 7]);
            assert!(b.slice(97, 4).is_none() && b.slice(usize::MAX, 2).is_none());
            drop(b);
            assert!(s.is_unique());
            assert_eq!(&*s.clone().read().unwrap(), &[0, 0, 0, 7], "the slice keeps the block");
            let empty = HostBuffer::allocate(arena.alloc, 0).unwrap();
            assert!(empty.is_empty() && empty.read().unwrap().is_empty());
        }
        assert_eq!(arena.in_use(), 0);
    }

    #[test]
    fn readers_share_and_writers_are_exclusive() {
        let arena = TestArena::new(4096);
        let b = HostBuffer::allocate(arena.alloc, 4).unwrap();
        let r1 = b.read().unwrap();
        let r2 = b.slice(0, 2).unwrap();
        let r2g = r2.read().unwrap();
        assert_eq!(b.write().unwrap_err(), BorrowError::Busy);
        drop((r1, r2g));
        let w = b.write().unwrap();
        assert_eq!(b.read().unwrap_err(), BorrowError::Busy);
        assert_eq!(r2.write().unwrap_err(), BorrowError::Busy, "slices share the block's borrow");
        drop(w);
        assert!(b.read().is_ok());
    }

    #[test]
    fn borrowed_bytes_are_read_in_place_read_only_and_their_owner_dropped_once() {
        use portable_atomic::AtomicUsize;
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        struct Owner(&'static [u8]);
        impl AsRef<[u8]> for Owner {
            fn as_ref(&self) -> &[u8] {
                self.0
            }
        }
        impl Drop for Owner {
            fn drop(&mut self) {
                DROPS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            }
        }
        static BYTES: [u8; 6] = [1, 2, 3, 4, 5, 6];
        let arena = TestArena::new(1024);
        {
            let b = HostBuffer::from_owner(arena.alloc, Owner(&BYTES)).unwrap();
            assert_eq!(b.len(), 6);
            assert_eq!(b.read().unwrap().as_ptr(), BYTES.as_ptr());
            assert!(!b.is_writable());
            let tail = b.slice(4, 2).unwrap();
            drop(b);
            assert_eq!(DROPS.load(core::sync::atomic::Ordering::Relaxed), 0, "the slice keeps it");
            assert_eq!(&*tail.read().unwrap(), &[5, 6]);
            assert_eq!(tail.write().unwrap_err(), BorrowError::ReadOnly);
        }
        assert_eq!(DROPS.load(core::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(arena.in_use(), 0);
        let tiny = TestArena::new(64);
        assert!(HostBuffer::from_owner(tiny.alloc, Owner(&BYTES)).is_err());
        assert_eq!(DROPS.load(core::sync::atomic::Ordering::Relaxed), 2, "dropped on exhaustion");
    }

    #[test]
    fn exhaustion_and_impossible_sizes_are_errors() {
        let arena = TestArena::new(1024);
        assert!(HostBuffer::allocate(arena.alloc, 4096).is_err());
        assert!(HostBuffer::allocate(arena.alloc, usize::MAX).is_err());
        assert_eq!(arena.in_use(), 0);
    }
}
