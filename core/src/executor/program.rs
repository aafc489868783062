//! `Program`: a loaded BEF file with its kernel names resolved to function pointers once.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::allocator::Allocator;
use crate::bef::{BefError, BefErrorKind, BefFile};
use crate::kernel::{KernelEntry, KernelLookup};

/// A verified BEF file plus a table (in allocator memory) mapping each kernel code to its
/// implementation. Dropping it frees the table.
pub struct Program<'a> {
    pub(crate) file: BefFile<'a>,
    table: NonNull<KernelEntry>,
    len: usize,
    alloc: Allocator,
}

// SAFETY: the table is written once in `load` and only read afterwards; `BefFile` borrows
// immutable bytes; `KernelEntry` holds a name and a function pointer.
unsafe impl Send for Program<'_> {}
// SAFETY: as above.
unsafe impl Sync for Program<'_> {}

impl core::fmt::Debug for Program<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Program")
            .field("functions", &self.file.num_functions())
            .field("kernels", &self.len)
            .finish()
    }
}

impl<'a> Program<'a> {
    /// Verify `bytes`, resolve every kernel name against `kernels`, and keep the resolved
    /// table in `alloc`. Fails with the reader's error (an unknown kernel names itself and
    /// its location) or when the table cannot be allocated.
    pub fn load(bytes: &'a [u8], kernels: &dyn KernelLookup, alloc: Allocator) -> Result<Self, BefError> {
        let file = BefFile::load(bytes, kernels, alloc)?;
        let len = file.num_kernel_names();
        let layout = Layout::array::<KernelEntry>(len.max(1))
            .map_err(|_| BefError::new(BefErrorKind::OutOfMemory, 0, "kernel table"))?;
        let table = alloc
            .allocate(layout)
            .map_err(|_| BefError::new(BefErrorKind::OutOfMemory, 0, "kernel table"))?
            .cast::<KernelEntry>();
        for code in 0..len {
            let entry = kernels.lookup(file.kernel_name(code as u32));
            // `load` checked every name against the same registry.
            let entry =
                entry.ok_or(BefError::new(BefErrorKind::UnknownKernel, 0, file.kernel_name(code as u32)));
            match entry {
                // SAFETY: `code < len`, within the fresh block.
                Ok(e) => unsafe { table.as_ptr().add(code).write(e) },
                Err(e) => {
                    // SAFETY: allocated above with this layout; no entry needs dropping.
                    unsafe { alloc.deallocate(table.cast(), layout) };
                    return Err(e);
                }
            }
        }
        Ok(Program { file, table, len, alloc })
    }

    /// The underlying file.
    pub fn file(&self) -> &BefFile<'a> {
        &self.file
    }

    /// Index of the named function.
    pub fn function_index(&self, name: &str) -> Option<u32> {
        self.file.function_by_name(name).map(|f| f.index())
    }

    /// The implementation of kernel `code` (verified in range at load).
    #[inline]
    pub(crate) fn entry(&self, code: u32) -> &KernelEntry {
        debug_assert!((code as usize) < self.len);
        // SAFETY: every code in the file was checked `< len` by `BefFile::load`; the table
        // holds `len` initialised entries.
        unsafe { &*self.table.as_ptr().add(code as usize) }
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::array::<KernelEntry>(self.len.max(1)) {
            // SAFETY: allocated in `load` with this (same) layout.
            unsafe { self.alloc.deallocate(self.table.cast(), layout) };
        }
    }
}
