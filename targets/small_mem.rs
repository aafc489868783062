//! Flash-lean memory routines for images that favour size over copy speed: `memcpy`,
//! `memmove`, `memset` and their ARM EABI entry points in about 150 bytes, where the
//! Rust compiler-builtins' speed-tuned ones (weak symbols, which these replace) take about
//! 1 KB on Cortex-M. They copy a word at a time when both pointers are word-aligned and a
//! byte at a time otherwise. Included with `#[path]` by the images that want them
//! (examples/firmware's minimal image); docs/porting.md, item 8.
//!
//! Stores are volatile so the optimiser cannot turn these loops back into calls to the
//! routines themselves. The tests below run on the host (xtask includes this file), where
//! the routines keep their Rust names rather than replacing the C library's.

use core::ptr::{read, write_volatile};

/// Copy `n` bytes upwards (safe for overlap when `dest` is below `src`).
///
/// # Safety
/// `src` readable and `dest` writable for `n` bytes.
unsafe fn forward(dest: *mut u8, src: *const u8, n: usize) {
    let mut i = 0;
    if (dest as usize | src as usize) & 3 == 0 {
        while i + 4 <= n {
            // SAFETY: both word-aligned, `i + 4 <= n` within the caller's ranges.
            unsafe { write_volatile(dest.add(i).cast::<u32>(), read(src.add(i).cast::<u32>())) };
            i += 4;
        }
    }
    while i < n {
        // SAFETY: `i < n`, within the caller's ranges.
        unsafe { write_volatile(dest.add(i), read(src.add(i))) };
        i += 1;
    }
}

/// # Safety
/// The C contract: `src` readable and `dest` writable for `n` bytes, not overlapping.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn memcpy(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded from the C contract.
    unsafe { forward(dest, src, n) };
    dest
}

/// Copy `n` bytes between possibly overlapping ranges.
///
/// # Safety
/// `src` readable and `dest` writable for `n` bytes.
unsafe fn overlapping(dest: *mut u8, src: *const u8, n: usize) {
    if (dest as usize) <= (src as usize) || (dest as usize) >= (src as usize).wrapping_add(n) {
        // SAFETY: forwarded; copying upwards never reads a byte it already overwrote here.
        unsafe { forward(dest, src, n) };
    } else {
        let mut i = n;
        while i > 0 {
            i -= 1;
            // SAFETY: `i < n`, within the caller's ranges; downwards for this overlap.
            unsafe { write_volatile(dest.add(i), read(src.add(i))) };
        }
    }
}

/// Set `n` bytes to `c`.
///
/// # Safety
/// `dest` writable for `n` bytes.
unsafe fn fill(dest: *mut u8, c: u8, n: usize) {
    for i in 0..n {
        // SAFETY: `i < n`, within the caller's range.
        unsafe { write_volatile(dest.add(i), c) };
    }
}

/// # Safety
/// The C contract: `src` readable and `dest` writable for `n` bytes; they may overlap.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn memmove(dest: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: forwarded from the C contract.
    unsafe { overlapping(dest, src, n) };
    dest
}

/// # Safety
/// The C contract: `dest` writable for `n` bytes.
#[cfg_attr(not(test), unsafe(no_mangle))]
pub unsafe extern "C" fn memset(dest: *mut u8, c: i32, n: usize) -> *mut u8 {
    // SAFETY: forwarded from the C contract.
    unsafe { fill(dest, c as u8, n) };
    dest
}

/// ARM EABI entry points (the compiler calls these on Arm; `memclr` is `memset` to zero,
/// and `__aeabi_memset` takes the fill byte last). They call the private helpers: a call
/// to a function named `memset` or `memmove` is the compiler's to rewrite, even into a call
/// to the entry point making it.
#[cfg(any(target_arch = "arm", test))]
mod aeabi {
    /// Define each named entry point as a call to `helper` with the given arguments.
    macro_rules! entry_points {
        ([$($name:ident),*] $params:tt => $helper:ident $args:tt) => {$(
            /// # Safety
            /// The C contract of the routine this entry point stands for: the ranges its
            /// pointer arguments describe are valid for the access.
            #[cfg_attr(not(test), unsafe(no_mangle))]
            pub unsafe extern "C" fn $name $params {
                // SAFETY: the same contract as the helper's, forwarded.
                unsafe { super::$helper $args }
            }
        )*};
    }
    entry_points!([__aeabi_memcpy, __aeabi_memcpy4, __aeabi_memcpy8]
        (dest: *mut u8, src: *const u8, n: usize) => forward(dest, src, n));
    entry_points!([__aeabi_memmove, __aeabi_memmove4, __aeabi_memmove8]
        (dest: *mut u8, src: *const u8, n: usize) => overlapping(dest, src, n));
    entry_points!([__aeabi_memset, __aeabi_memset4, __aeabi_memset8]
        (dest: *mut u8, n: usize, c: i32) => fill(dest, c as u8, n));
    entry_points!([__aeabi_memclr, __aeabi_memclr4, __aeabi_memclr8]
        (dest: *mut u8, n: usize) => fill(dest, 0, n));
}

#[cfg(test)]
mod tests {
    /// Every length up to 40 at every alignment offset up to 4, against `copy_from_slice`.
    #[test]
    fn copies_match_for_every_alignment_and_length() {
        let src: Vec<u8> = (0..64u8).map(|b| b.wrapping_mul(37).wrapping_add(11)).collect();
        for (so, d_off, n) in (0..4).flat_map(|s| (0..4).flat_map(move |d| (0..=40).map(move |n| (s, d, n))))
        {
            let mut got = [0xAAu8; 64];
            let mut want = [0xAAu8; 64];
            // SAFETY: both ranges lie inside their arrays (offsets < 4, n <= 40).
            unsafe { super::memcpy(got.as_mut_ptr().add(d_off), src.as_ptr().add(so), n) };
            want[d_off..d_off + n].copy_from_slice(&src[so..so + n]);
            assert_eq!(got, want, "src offset {so}, dest offset {d_off}, {n} bytes");
        }
    }

    /// The EABI entry points' argument orders: `memset`'s fill byte last, `memclr` none.
    #[test]
    fn eabi_entry_points_take_their_own_argument_orders() {
        let mut got = [0u8; 12];
        // SAFETY: every range below lies inside the 12 bytes.
        unsafe {
            super::aeabi::__aeabi_memset4(got.as_mut_ptr(), 8, 0x5A);
            super::aeabi::__aeabi_memclr(got.as_mut_ptr().add(2), 3);
            super::aeabi::__aeabi_memcpy(got.as_mut_ptr().add(9), [7u8, 8, 9].as_ptr(), 3);
            super::aeabi::__aeabi_memmove(got.as_mut_ptr().add(1), got.as_ptr(), 4);
        }
        assert_eq!(got, [0x5A, 0x5A, 0x5A, 0, 0, 0x5A, 0x5A, 0x5A, 0, 7, 8, 9]);
    }

    /// Overlapping moves both ways, against `copy_within`.
    #[test]
    fn moves_handle_overlap_both_ways() {
        for (from, to, n) in [(0, 3, 20), (3, 0, 20), (4, 0, 24), (0, 4, 24), (5, 5, 9), (1, 2, 0)] {
            let mut got: Vec<u8> = (0..40).collect();
            let mut want = got.clone();
            // SAFETY: `from + n` and `to + n` are within the 40 bytes.
            unsafe { super::memmove(got.as_mut_ptr().add(to), got.as_ptr().add(from), n) };
            want.copy_within(from..from + n, to);
            assert_eq!(got, want, "{n} bytes from {from} to {to}");
        }
    }

    #[test]
    fn fills_exactly_the_range() {
        let mut got = [1u8; 16];
        // SAFETY: bytes 3..13 are inside the array.
        unsafe { super::memset(got.as_mut_ptr().add(3), 0x1_7F, 10) };
        let want: Vec<u8> = (0..16).map(|i| if (3..13).contains(&i) { 0x7F } else { 1 }).collect();
        assert_eq!(got.to_vec(), want, "the fill byte is the low byte of `c`");
    }
}
