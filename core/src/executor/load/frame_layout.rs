//! The block a call of a function allocates for its executor frame, known at load from the
//! function's record: the run half allocates it, the arena bound counts it.

use core::alloc::Layout;

use crate::bef::format::frame_bytes;

/// The frame block of a function with `nreg` registers and `nk` kernels on this machine:
/// `bef::format::frame_bytes`, pointer-aligned (the frame header's alignment).
pub(crate) fn frame_layout(nreg: usize, nk: usize) -> Option<Layout> {
    Layout::from_size_align(frame_bytes(size_of::<usize>(), nreg, nk), align_of::<usize>()).ok()
}
