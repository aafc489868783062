//! The device-interrupt part of a Cortex-M vector table, sized to the board: what a device
//! crate (PAC) provides to cortex-m-rt's `device` feature, for images that use none. Every
//! entry is cortex-m-rt's `DefaultHandler`. The count is `HOSTRT_BOARD_IRQS` from
//! targets/<board>/cargo.toml, which every Cortex-M board sets (unset, it is the
//! architecture's 240, what cortex-m-rt links without the `device` feature). Included with
//! `#[path]` by each firmware binary; the build script provides the empty `device.x` the
//! feature includes.

/// The board's device interrupt count.
const IRQS: usize = match option_env!("HOSTRT_BOARD_IRQS") {
    Some(n) => parse(n),
    None => 240,
};

/// A decimal count at compile time (a bad value fails the build).
const fn parse(s: &str) -> usize {
    let b = s.as_bytes();
    assert!(!b.is_empty(), "HOSTRT_BOARD_IRQS is empty");
    let mut n = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "HOSTRT_BOARD_IRQS is not a decimal number");
        n = n * 10 + (b[i] - b'0') as usize;
        i += 1;
    }
    assert!(n <= 240, "ARMv7-M has at most 240 device interrupts");
    n
}

unsafe extern "C" {
    /// cortex-m-rt's handler for interrupts nobody claimed (an endless loop by default).
    fn DefaultHandler();
}

/// The vector table's device part (cortex-m-rt places `.vector_table.interrupts` after the
/// exceptions).
#[unsafe(link_section = ".vector_table.interrupts")]
#[unsafe(no_mangle)]
static __INTERRUPTS: [unsafe extern "C" fn(); IRQS] = [DefaultHandler; IRQS];
