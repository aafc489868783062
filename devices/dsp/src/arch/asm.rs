//! The DSP instructions themselves, for Arm targets with the DSP extension
//! (`cfg(hostrt_arm_dsp)`, set by build.rs). Same signatures and results as
//! [`super::emulated`].

use core::arch::asm;

/// `SXTB16 Rd, Rm`: sign-extend bytes 0 and 2 of `x` into the two halfwords.
#[inline(always)]
pub fn sxtb16(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only instruction of the DSP extension, which cfg(hostrt_arm_dsp)
    // guarantees; it reads no memory and changes no flags.
    unsafe {
        asm!("sxtb16 {r}, {x}", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTB16 Rd, Rm, ROR #8`: sign-extend bytes 1 and 3 of `x` into the two halfwords.
#[inline(always)]
pub fn sxtb16_ror8(x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory, no flags.
    unsafe {
        asm!("sxtb16 {r}, {x}, ror #8", r = lateout(reg) r, x = in(reg) x, options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 Rd, Rn, Rm`: bytes 0 and 2 of `x`, sign-extended, added to the halfwords of `a`.
#[inline(always)]
pub fn sxtab16(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory, no flags.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SXTAB16 Rd, Rn, Rm, ROR #8`: as [`sxtab16`] with bytes 1 and 3.
#[inline(always)]
pub fn sxtab16_ror8(a: u32, x: u32) -> u32 {
    let r: u32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory, no flags.
    unsafe {
        asm!("sxtab16 {r}, {a}, {x}, ror #8", r = lateout(reg) r, a = in(reg) a, x = in(reg) x,
             options(pure, nomem, nostack, preserves_flags))
    };
    r
}

/// `SMLAD Rd, Rn, Rm, Ra`: `acc + x.lo * y.lo + x.hi * y.hi`, modulo 2^32.
#[inline(always)]
pub fn smlad(x: u32, y: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory. It may
    // set the sticky Q flag, so flags are not declared preserved.
    unsafe {
        asm!("smlad {r}, {x}, {y}, {a}", r = lateout(reg) r, x = in(reg) x, y = in(reg) y, a = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLABB Rd, Rn, Rm, Ra`: `acc + x.lo * y.lo`, modulo 2^32.
#[inline(always)]
pub fn smlabb(x: u32, y: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory; may set Q.
    unsafe {
        asm!("smlabb {r}, {x}, {y}, {a}", r = lateout(reg) r, x = in(reg) x, y = in(reg) y, a = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SMLATT Rd, Rn, Rm, Ra`: `acc + x.hi * y.hi`, modulo 2^32.
#[inline(always)]
pub fn smlatt(x: u32, y: u32, acc: i32) -> i32 {
    let r: i32;
    // SAFETY: register-only DSP instruction (present: cfg(hostrt_arm_dsp)); no memory; may set Q.
    unsafe {
        asm!("smlatt {r}, {x}, {y}, {a}", r = lateout(reg) r, x = in(reg) x, y = in(reg) y, a = in(reg) acc,
             options(pure, nomem, nostack))
    };
    r
}

/// `SSAT Rd, #BITS, Rm`: `x` saturated to the signed `BITS`-bit range (`1 <= BITS <= 32`).
#[inline(always)]
pub fn ssat<const BITS: u32>(x: i32) -> i32 {
    const { assert!(BITS >= 1 && BITS <= 32) };
    let r: i32;
    // SAFETY: register-only instruction (Armv7-M and up); BITS is checked to be a valid
    // immediate at compile time; no memory; may set Q.
    unsafe {
        asm!("ssat {r}, #{b}, {x}", r = lateout(reg) r, x = in(reg) x, b = const BITS, options(pure, nomem, nostack))
    };
    r
}
