//! Owned, aligned memory for programs and arenas on a host: [`AlignedBytes`] (a BEF file
//! read into a `Vec`) and [`leaked_arena`] (a [`FixedArena`] over heap memory, for tools and
//! tests that want the firmware's allocator on a host).

use hostrt_core::allocator::{ArenaInitError, RegisterError};
use hostrt_core::{Allocator, FixedArena};

/// BEF bytes copied into an 8-byte-aligned buffer, as the reader requires (a `Vec<u8>`
/// gives no alignment guarantee).
///
/// ```
/// let bytes = hostrt_std::AlignedBytes::new(&[1, 2, 3]);
/// assert_eq!(bytes.as_bytes(), &[1, 2, 3]);
/// assert_eq!(bytes.as_bytes().as_ptr().addr() % 8, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    /// Copy `bytes` into an aligned buffer.
    pub fn new(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (w, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            *w = u64::from_ne_bytes(b);
        }
        AlignedBytes { words, len: bytes.len() }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `u64` has no padding and any byte pattern is a valid `u8`; the view covers
        // the words' own memory, of which the first `len` bytes were copied in.
        let all =
            unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.words.len() * 8) };
        &all[..self.len]
    }
}

/// A fresh [`FixedArena`] of `bytes` bytes over leaked heap memory, registered as an
/// [`Allocator`]. Both live for the rest of the process (the allocator table has a few
/// slots: call this once per test binary or tool run, not per request). Fails when `bytes`
/// is below the arena's minimum or the allocator table is full.
///
/// ```
/// use hostrt_core::allocator::HostAllocator;
///
/// let (arena, alloc) = hostrt_std::leaked_arena(64 * 1024).unwrap();
/// let v = hostrt_core::AsyncValueRef::available(alloc, 7i32).unwrap();
/// assert!(arena.stats().unwrap().in_use > 0);
/// drop(v);
/// assert_eq!(arena.stats().unwrap().in_use, 0);
/// ```
pub fn leaked_arena(bytes: usize) -> Result<(&'static FixedArena, Allocator), ArenaError> {
    let arena: &'static FixedArena = Box::leak(Box::new(FixedArena::empty()));
    arena.init(vec![0u8; bytes].leak()).map_err(ArenaError::Init)?;
    Ok((arena, Allocator::register(arena).map_err(ArenaError::Register)?))
}

/// Why [`leaked_arena`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaError {
    /// The arena refused the buffer (too small).
    Init(ArenaInitError),
    /// Every allocator slot is taken.
    Register(RegisterError),
}

impl std::fmt::Display for ArenaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArenaError::Init(e) => write!(f, "cannot initialise the arena: {e:?}"),
            ArenaError::Register(e) => write!(f, "cannot register the arena: {e:?}"),
        }
    }
}

impl std::error::Error for ArenaError {}
