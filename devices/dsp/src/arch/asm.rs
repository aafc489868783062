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

/// `(2^32 * (high + (acc < 0 ? -1 : 0)) + (acc's sign bit | 2^30) + acc * m) >> (32 + down)`:
/// the one-rounding output stage of [`ChannelScale`](crate::quant::ChannelScale), where its
/// derivation is, for `down` in `1..=30`. In assembly, five instructions (`SMLAL` the one
/// multiply), which LLVM did not always find (it split the 64-bit product in two where it
/// reused `acc`'s sign).
#[inline(always)]
pub fn one_rounding(acc: i32, m: i32, high: i32, down: u32) -> i32 {
    let out: i32;
    // SAFETY: register arithmetic only; `ASR` by a register takes any count (a count of 32
    // or more gives the sign), so no value of `down` misbehaves.
    unsafe {
        asm!(
            "and {lo}, {acc}, #0x80000000",
            "orr {lo}, {lo}, #0x40000000",
            "add {hi}, {high}, {acc}, asr #31",
            "smlal {lo}, {hi}, {acc}, {m}",
            "asr {hi}, {hi}, {down}",
            acc = in(reg) acc, m = in(reg) m, high = in(reg) high, down = in(reg) down,
            lo = out(reg) _, hi = out(reg) out,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    out
}

/// Four int32 saturated to int8 and clamped to `[min, max]` (each bound as four equal int8
/// bytes of a word, [`ActivationRange::words`](crate::quant::ActivationRange::words)): in
/// assembly, `SSAT` each, the four packed into one word (`BFI`), then `SSUB8`/`SEL` as a
/// byte-wise maximum and minimum: 11 instructions where four separate clamps and the
/// packing took about 36.
#[inline(always)]
pub fn clamp4(v: [i32; 4], [min, max]: [u32; 2]) -> [i8; 4] {
    let word: u32;
    // SAFETY: register arithmetic only (it sets the GE flags, which nothing else reads).
    unsafe {
        asm!(
            "ssat {a}, #8, {a}",
            "ssat {b}, #8, {b}",
            "ssat {c}, #8, {c}",
            "ssat {d}, #8, {d}",
            "bfi {a}, {b}, #8, #8",
            "bfi {a}, {c}, #16, #8",
            "bfi {a}, {d}, #24, #8",
            "ssub8 {b}, {a}, {min}",
            "sel {a}, {a}, {min}",
            "ssub8 {b}, {a}, {max}",
            "sel {a}, {max}, {a}",
            a = inout(reg) v[0] => word, b = inout(reg) v[1] => _,
            c = inout(reg) v[2] => _, d = inout(reg) v[3] => _,
            min = in(reg) min, max = in(reg) max,
            options(pure, nomem, nostack),
        );
    }
    word.to_le_bytes().map(|b| b as i8)
}
