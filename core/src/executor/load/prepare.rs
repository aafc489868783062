//! Prepared state (docs/execution.md): each use of a kernel that has a prepare function gets
//! the block that function makes from the use's attributes, once, at load; the run half
//! (`run::dispatch`) then calls the kernel with it and no attributes.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::allocator::Allocator;
use crate::bef::BefFile;
use crate::executor::buf::CallBuf;
use crate::kernel::{AttrRef, KernelEntry, PrepareInput, Prepared};

/// `Table::index` of a kernel record without prepared state.
const NONE: u32 = u32::MAX;

/// The prepared state of a program's kernels: per kernel record (indexed like the file's
/// records) the index of its block, and the blocks, in allocator memory.
pub(crate) struct Table {
    index: NonNull<u32>,
    records: usize,
    blocks: NonNull<Prepared>,
    /// Blocks allocated (at least 1), and blocks written: the first `written`.
    capacity: usize,
    written: usize,
    alloc: Allocator,
}

/// Prepare every use of a kernel with a prepare function in `file`. `None` when no kernel
/// has one, none prepared, or there is no memory for the table: those uses then read their
/// attributes on each call, which is always correct.
pub(crate) fn prepare(file: &BefFile<'_>, entries: &[KernelEntry], alloc: Allocator) -> Option<Table> {
    let prepare_of = |code: u32| entries.get(code as usize).and_then(KernelEntry::prepare);
    if !entries.iter().any(|e| e.prepare().is_some()) {
        return None;
    }
    let records = file.kernels.len();
    let count = file.kernels.iter().filter(|kr| prepare_of(kr.code).is_some()).count();
    let (records, capacity) = (records.max(1), count.max(1));
    let index_layout = Layout::array::<u32>(records).ok()?;
    let index = alloc.allocate(index_layout).ok()?.cast::<u32>();
    let Some(blocks) = Layout::array::<Prepared>(capacity).ok().and_then(|l| alloc.allocate(l).ok()) else {
        // SAFETY: allocated just above with this layout.
        unsafe { alloc.deallocate(index.cast(), index_layout) };
        return None;
    };
    // SAFETY: a fresh array of `records` entries; every one is rewritten below if the file
    // has kernels (`records` is 1 for a file without any).
    unsafe { index.as_ptr().write(NONE) };
    let mut table = Table { index, records, blocks: blocks.cast(), capacity, written: 0, alloc };
    for (k, kr) in file.kernels.iter().enumerate() {
        let block = prepare_of(kr.code).and_then(|prepare| {
            let (idx, _) = file.kernel_attrs(kr);
            let mut attrs = CallBuf::<AttrRef<'_>>::empty();
            // An attribute that does not decode leaves the use unprepared: its call reports it.
            let whole = attrs.fill(alloc, idx.len(), idx.iter().filter_map(|a| file.attr_ref(*a)))
                && attrs.as_slice().len() == idx.len();
            whole.then(|| prepare(&PrepareInput::new(attrs.as_slice(), file.bytes)))?
        });
        let at = match block {
            Some(b) if table.written < capacity => {
                // SAFETY: `written < capacity`, within the block array allocated for it.
                unsafe { table.blocks.as_ptr().add(table.written).write(b) };
                table.written += 1;
                (table.written - 1) as u32
            }
            _ => NONE,
        };
        // SAFETY: `k < records`, within the fresh index array.
        unsafe { table.index.as_ptr().add(k).write(at) };
    }
    (table.written > 0).then_some(table)
}

impl Table {
    /// The index entries of the `n` kernel records from `first` (empty when out of range).
    pub(crate) fn of(&self, first: usize, n: usize) -> &[u32] {
        // SAFETY: `records` initialised entries, written only before the program is shared.
        let all = unsafe { core::slice::from_raw_parts(self.index.as_ptr(), self.records) };
        all.get(first..first.saturating_add(n)).unwrap_or(&[])
    }

    /// The blocks.
    pub(crate) fn blocks(&self) -> &[Prepared] {
        // SAFETY: the first `written` blocks were written in `prepare`, before the program
        // was shared, and never change.
        unsafe { core::slice::from_raw_parts(self.blocks.as_ptr(), self.written) }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        let (Ok(index), Ok(blocks)) =
            (Layout::array::<u32>(self.records), Layout::array::<Prepared>(self.capacity))
        else {
            return;
        };
        // SAFETY: both allocated in `prepare` with these layouts.
        unsafe {
            self.alloc.deallocate(self.index.cast(), index);
            self.alloc.deallocate(self.blocks.cast(), blocks);
        }
    }
}
