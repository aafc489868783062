//! Owned, aligned memory for programs and arenas on a host: [`AlignedBytes`] (a BEF file
//! read into a `Vec`) and [`leaked_arena`] (a [`FixedArena`] over heap memory, for tools and
//! tests that want the firmware's allocator on a host).

use hostrt_core::allocator::{ArenaInitError, RegisterError};
use hostrt_core::{Allocator, FixedArena};

/// BEF bytes copied into a 64-byte-aligned buffer, as the reader requires (8) and as
/// dense attributes need to be read with 16-byte loads, or with 64-byte ones on cache lines
/// where the file puts them so (a `Vec<u8>` gives no alignment guarantee).
///
/// ```
/// let bytes = hostrt_std::AlignedBytes::new(&[1, 2, 3]);
/// assert_eq!(bytes.as_bytes(), &[1, 2, 3]);
/// assert_eq!(bytes.as_bytes().as_ptr().addr() % 64, 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlignedBytes {
    blocks: Vec<Block>,
    len: usize,
}

/// Bytes per [`Block`], and their alignment.
const BLOCK: usize = 64;

/// 64 bytes at a 64-byte boundary (a cache line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
struct Block([u8; BLOCK]);

impl AlignedBytes {
    /// Copy `bytes` into an aligned buffer.
    pub fn new(bytes: &[u8]) -> Self {
        let mut blocks = vec![Block([0; BLOCK]); bytes.len().div_ceil(BLOCK)];
        for (b, chunk) in blocks.iter_mut().zip(bytes.chunks(BLOCK)) {
            b.0[..chunk.len()].copy_from_slice(chunk);
        }
        AlignedBytes { blocks, len: bytes.len() }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: `Block` is 64 bytes of `u8` with no padding (`repr(C)`, size = align = 64),
        // so the blocks are `64 * len` initialised bytes; the first `len` were copied in.
        let all = unsafe {
            std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), self.blocks.len() * BLOCK)
        };
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
