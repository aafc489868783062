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

#[cfg(test)]
mod tests;

pub use error::{BefError, BefErrorKind};
pub use reader::BefFile;
pub use view::{BefAttr, BefLoc, Function};
