//! Zero-copy loading of BEF files through `mmap` (memmap2), with the reader's verification.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use hostrt_core::Allocator;
use hostrt_core::bef::{BefError, BefFile};

/// A BEF file mapped read-only into memory. The bytes are page-aligned, so the reader can
/// view them in place.
pub struct MappedBef {
    map: memmap2::Mmap,
    path: PathBuf,
    file: File,
}

impl fmt::Debug for MappedBef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedBef").field("path", &self.path).field("len", &self.map.len()).finish()
    }
}

/// Why a file could not be mapped or verified.
#[derive(Debug)]
pub enum MapError {
    /// Opening, reading metadata or mapping failed.
    Io(PathBuf, std::io::Error),
    /// The file is empty (nothing to map).
    Empty(PathBuf),
    /// The mapping is not 8-byte aligned (never with page-aligned mmap; kept for other
    /// sources of bytes).
    Misaligned(PathBuf),
    /// The file's size changed after it was mapped (another process truncated or appended):
    /// reading it further could fault.
    Changed(PathBuf, u64, u64),
    /// The bytes are not a valid BEF file.
    Invalid(PathBuf, Box<BefError>),
}

impl fmt::Display for MapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MapError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            MapError::Empty(p) => write!(f, "{}: empty file", p.display()),
            MapError::Misaligned(p) => write!(f, "{}: mapping is not 8-byte aligned", p.display()),
            MapError::Changed(p, was, now) => {
                write!(f, "{}: file changed size after it was mapped ({was} -> {now} bytes)", p.display())
            }
            MapError::Invalid(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for MapError {}

impl MappedBef {
    /// Map `path` read-only.
    pub fn open(path: impl AsRef<Path>) -> Result<MappedBef, MapError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| MapError::Io(path.clone(), e))?;
        let len = file.metadata().map_err(|e| MapError::Io(path.clone(), e))?.len();
        if len == 0 {
            return Err(MapError::Empty(path));
        }
        // SAFETY: the mapping is read-only and private to this process; another process
        // changing the file is detected by `check_unchanged` (size) and by the BEF checksum
        // (contents) before the bytes are trusted.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| MapError::Io(path.clone(), e))?;
        if !(map.as_ptr() as usize).is_multiple_of(8) {
            return Err(MapError::Misaligned(path));
        }
        Ok(MappedBef { map, path, file })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Fail if the file's size differs from the mapping's.
    pub fn check_unchanged(&self) -> Result<(), MapError> {
        let now = self.file.metadata().map_err(|e| MapError::Io(self.path.clone(), e))?.len();
        let was = self.map.len() as u64;
        if now != was {
            return Err(MapError::Changed(self.path.clone(), was, now));
        }
        Ok(())
    }

    /// Check the size, then verify the bytes in place (no copy). `scratch` lends the
    /// verifier its temporary memory.
    pub fn verify(&self, scratch: Allocator) -> Result<BefFile<'_>, MapError> {
        self.check_unchanged()?;
        BefFile::load_unresolved(self.bytes(), scratch)
            .map_err(|e| MapError::Invalid(self.path.clone(), Box::new(e)))
    }
}
