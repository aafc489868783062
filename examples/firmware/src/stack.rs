//! The stack's high-water mark: memory below the stack pointer painted with a pattern at
//! start-up, and found again after the work, down to the deepest word overwritten. Shared
//! by the images that report it.

/// Bytes below the stack pointer at start-up filled with [`PAINT`], to find how deep the
/// stack got (its high-water mark) after the programs ran.
const PAINTED: usize = 64 * 1024;
const PAINT: u32 = 0x5AFE_57AC;

unsafe extern "C" {
    /// The top of the stack (cortex-m-rt's link.x).
    static _stack_start: u32;
    /// The end of the static data, where the stack may grow down to (link.x).
    static __sheap: u32;
}

/// Paint up to [`PAINTED`] bytes below the current stack pointer (less a margin for this
/// call), never below the static data; returns the lowest painted address.
pub fn paint() -> usize {
    let sp = cortex_m::register::msp::read() as usize;
    let floor = (&raw const __sheap) as usize;
    let (bottom, top) = ((sp.saturating_sub(PAINTED).max(floor) + 3) & !3, (sp - 256) & !3);
    for p in (bottom..top).step_by(4) {
        // SAFETY: the words lie below the live stack (256 bytes of margin under this frame)
        // and above all static data (`__sheap`); nothing else uses that memory before the
        // stack grows into it.
        unsafe { (p as *mut u32).write_volatile(PAINT) };
    }
    bottom
}

/// Stack bytes used since start-up: from the top of the stack down to the deepest word no
/// longer holding [`PAINT`].
pub fn used(bottom: usize) -> usize {
    let mut p = bottom;
    // SAFETY: reads the painted words (plain RAM between the static data and the current
    // frame).
    while unsafe { (p as *const u32).read_volatile() } == PAINT {
        p += 4;
    }
    (&raw const _stack_start) as usize - p
}
