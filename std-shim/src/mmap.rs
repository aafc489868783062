//! Files mapped into memory (memmap2): [`MappedFile`], the one place hostrt maps a file,
//! and on it zero-copy loading of BEF files with the reader's verification ([`MappedBef`]).

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use hostrt_core::Allocator;
use hostrt_core::bef::{BefError, BefFile};

/// A file mapped into memory: read-only, or private (copy-on-write: writable, and writes
/// never reach the file). The bytes are page-aligned.
///
/// Failure contract: mapping fails with the system's error. Reading a mapping faults if
/// another process truncates the file meanwhile, the known limit of reading files through
/// `mmap`; [`MappedBef`] checks the size before it trusts the bytes, and the BEF checksum
/// catches changed contents.
///
/// ```
/// let path = std::env::temp_dir().join(format!("hostrt-map-{}", std::process::id()));
/// std::fs::write(&path, b"abc")?;
/// let mut map = hostrt_std::MappedFile::private(&std::fs::File::open(&path)?)?;
/// map.bytes_mut().unwrap()[0] = b'x';
/// assert_eq!(map.bytes(), b"xbc");
/// assert_eq!(std::fs::read(&path)?, b"abc"); // the file is unchanged
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct MappedFile {
    map: Map,
}

enum Map {
    ReadOnly(memmap2::Mmap),
    Private(memmap2::MmapMut),
}

impl fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if matches!(self.map, Map::ReadOnly(_)) { "read-only" } else { "private" };
        f.debug_struct("MappedFile").field("kind", &kind).field("len", &self.bytes().len()).finish()
    }
}

impl MappedFile {
    /// `file` mapped read-only (it must not be empty: an empty mapping fails).
    pub fn read_only(file: &File) -> std::io::Result<MappedFile> {
        // SAFETY: a read-only mapping of this process's own; a file changed by another
        // process is this type's documented limit (see its failure contract).
        let map = unsafe { memmap2::Mmap::map(file) }?;
        Ok(MappedFile { map: Map::ReadOnly(map) })
    }

    /// `file` mapped privately, copy-on-write: the bytes may be written, and writes never
    /// reach the file. An empty file maps as no bytes.
    pub fn private(file: &File) -> std::io::Result<MappedFile> {
        let map = if file.metadata()?.len() == 0 {
            memmap2::MmapMut::map_anon(0)?
        } else {
            // SAFETY: a private copy-on-write mapping: our writes never reach the file; a
            // file changed by another process is this type's documented limit.
            unsafe { memmap2::MmapOptions::new().map_copy(file) }?
        };
        Ok(MappedFile { map: Map::Private(map) })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Map::ReadOnly(m) => m,
            Map::Private(m) => m,
        }
    }

    /// The mapped bytes to write, when the mapping is private (`None` when read-only).
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.map {
            Map::ReadOnly(_) => None,
            Map::Private(m) => Some(m),
        }
    }
}

/// A BEF file mapped read-only into memory. The bytes are page-aligned, so the reader can
/// view them in place.
pub struct MappedBef {
    map: MappedFile,
    path: PathBuf,
    file: File,
}

impl fmt::Debug for MappedBef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MappedBef").field("path", &self.path).field("len", &self.map.bytes().len()).finish()
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
        // Another process changing the file is detected by `check_unchanged` (size) and by
        // the BEF checksum (contents) before the bytes are trusted.
        let map = MappedFile::read_only(&file).map_err(|e| MapError::Io(path.clone(), e))?;
        if !(map.bytes().as_ptr() as usize).is_multiple_of(8) {
            return Err(MapError::Misaligned(path));
        }
        Ok(MappedBef { map, path, file })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        self.map.bytes()
    }

    /// Fail if the file's size differs from the mapping's.
    pub fn check_unchanged(&self) -> Result<(), MapError> {
        let now = self.file.metadata().map_err(|e| MapError::Io(self.path.clone(), e))?.len();
        let was = self.map.bytes().len() as u64;
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
