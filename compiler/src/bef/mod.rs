//! The binary side: AST → BEF ([`write`]) and verified BEF → AST ([`decode`]).

mod decode;
mod encode_attr;
mod streams;
mod tables;
mod write;

pub use decode::decode;
pub use write::{WriteOptions, write, write_with};

/// BEF bytes in an 8-byte-aligned buffer, as the reader requires.
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
        let all: &[u8] = bytemuck_u64(&self.words);
        &all[..self.len]
    }
}

fn bytemuck_u64(w: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding; the byte view covers exactly the words' memory.
    unsafe { std::slice::from_raw_parts(w.as_ptr().cast::<u8>(), std::mem::size_of_val(w)) }
}
