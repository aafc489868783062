//! BEF, the Binary Executable Format: the contract between compiler and runtime.
//!
//! [`BefFile::load`] verifies a file once, in place, over borrowed bytes (flash, mmap, a
//! `Vec`); afterwards the executor reads records without re-checking. The byte layout is in
//! [`format`] and `docs/bef.md`.

#[cfg(target_endian = "big")]
compile_error!("BEF records are read in place as little-endian; big-endian targets are not supported");

mod error;
pub mod format;
mod reader;
mod view;

pub use error::{BefError, BefErrorKind, DETAIL_CAPACITY};
pub use reader::BefFile;
pub use view::{ArenaNeed, BefAttr, BefLoc, Function};

/// Embed a BEF file in the binary at a 16-byte-aligned address (the reader needs 8; dense
/// attributes, a model's weights, start 16-aligned in the file and so in flash), as a
/// `&'static [u8]`: `include_bytes!` alone gives no alignment guarantee.
///
/// Firmware embeds the programs its build script compiled:
/// `let fib: &'static [u8] = hostrt_core::include_bef!(concat!(env!("OUT_DIR"), "/fib.bef"));`.
/// The path is resolved as `include_bytes!` resolves it (relative to the calling file).
///
/// ```
/// let bytes: &'static [u8] = hostrt_core::include_bef!(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"));
/// assert_eq!(bytes.as_ptr().addr() % 16, 0);
/// assert!(bytes.starts_with(b"[package]"));
/// ```
#[macro_export]
macro_rules! include_bef {
    ($path:expr) => {{
        #[repr(C, align(16))]
        struct Aligned<const N: usize>([u8; N]);
        static BEF: Aligned<{ include_bytes!($path).len() }> = Aligned(*include_bytes!($path));
        &BEF.0 as &'static [u8]
    }};
}

#[cfg(test)]
mod include_bef_tests {
    #[test]
    fn included_bytes_are_aligned_and_complete() {
        let bytes: &[u8] = crate::include_bef!("mod.rs");
        assert_eq!(bytes.as_ptr().addr() % 16, 0);
        assert_eq!(bytes, include_bytes!("mod.rs"));
    }
}
