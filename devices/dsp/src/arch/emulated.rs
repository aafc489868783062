//! Software versions of the Armv7E-M DSP instructions the `dsp` kernels use, with the exact
//! ARM semantics (results modulo 2^32; the Q flag, which nothing reads, is not modelled).
//! The host runs the packed algorithm on these, so it can be tested bit for bit.

/// Bottom halfword as a signed value.
#[inline(always)]
fn lo(x: u32) -> i32 {
    i32::from(x as u16 as i16)
}

/// Top halfword as a signed value.
#[inline(always)]
fn hi(x: u32) -> i32 {
    i32::from((x >> 16) as u16 as i16)
}

/// Two 16-bit values packed into one word.
#[inline(always)]
fn pack(low: i32, high: i32) -> u32 {
    u32::from(low as u16) | (u32::from(high as u16) << 16)
}

/// `SXTB16 Rd, Rm`: sign-extend bytes 0 and 2 of `x` into the two halfwords.
#[inline(always)]
pub fn sxtb16(x: u32) -> u32 {
    pack(i32::from(x as u8 as i8), i32::from((x >> 16) as u8 as i8))
}

/// `SXTB16 Rd, Rm, ROR #8`: sign-extend bytes 1 and 3 of `x` into the two halfwords.
#[inline(always)]
pub fn sxtb16_ror8(x: u32) -> u32 {
    sxtb16(x.rotate_right(8))
}

/// `SXTAB16 Rd, Rn, Rm`: bytes 0 and 2 of `x`, sign-extended, added to the halfwords of `a`
/// (each halfword modulo 2^16).
#[inline(always)]
pub fn sxtab16(a: u32, x: u32) -> u32 {
    let e = sxtb16(x);
    pack(lo(a) + lo(e), hi(a) + hi(e))
}

/// `SXTAB16 Rd, Rn, Rm, ROR #8`: as [`sxtab16`] with bytes 1 and 3.
#[inline(always)]
pub fn sxtab16_ror8(a: u32, x: u32) -> u32 {
    sxtab16(a, x.rotate_right(8))
}

/// `SMLAD Rd, Rn, Rm, Ra`: `acc + x.lo * y.lo + x.hi * y.hi`, modulo 2^32.
#[inline(always)]
pub fn smlad(x: u32, y: u32, acc: i32) -> i32 {
    // Each product fits in i32 except (-2^15)^2 = 2^30, which fits too; only the sums wrap.
    acc.wrapping_add(lo(x) * lo(y)).wrapping_add(hi(x) * hi(y))
}

/// `SMLABB Rd, Rn, Rm, Ra`: `acc + x.lo * y.lo`, modulo 2^32.
#[inline(always)]
pub fn smlabb(x: u32, y: u32, acc: i32) -> i32 {
    acc.wrapping_add(lo(x) * lo(y))
}

/// `SMLATT Rd, Rn, Rm, Ra`: `acc + x.hi * y.hi`, modulo 2^32.
#[inline(always)]
pub fn smlatt(x: u32, y: u32, acc: i32) -> i32 {
    acc.wrapping_add(hi(x) * hi(y))
}

/// `SSAT Rd, #BITS, Rm`: `x` saturated to the signed `BITS`-bit range (`1 <= BITS <= 32`).
#[inline(always)]
pub fn ssat<const BITS: u32>(x: i32) -> i32 {
    const { assert!(BITS >= 1 && BITS <= 32) };
    let max = ((1i64 << (BITS - 1)) - 1) as i32;
    let min = (-(1i64 << (BITS - 1))) as i32;
    x.clamp(min, max)
}

/// The one-rounding output stage of [`ChannelScale`](crate::quant::ChannelScale):
/// `(2^32 * (high + (acc < 0 ? -1 : 0)) + (acc's sign bit | 2^30) + acc * m) >> (32 + down)`,
/// as [`super::asm::one_rounding`] computes it (five instructions there).
#[inline(always)]
pub fn one_rounding(acc: i32, m: i32, high: i32, down: u32) -> i32 {
    let low = (acc as u32 & 0x8000_0000) | 0x4000_0000;
    let high = high.wrapping_add(acc >> 31);
    let nudge = (i64::from(high) << 32) | i64::from(low);
    let p = nudge.wrapping_add(i64::from(acc) * i64::from(m));
    ((p >> 32) as i32).wrapping_shr(down)
}

/// Four int32 saturated to int8 and clamped to `[min, max]` (each bound as four equal int8
/// bytes of a word), as [`super::asm::clamp4`] computes it with `SSAT`, `SSUB8` and `SEL`.
#[inline(always)]
pub fn clamp4(v: [i32; 4], [min, max]: [u32; 2]) -> [i8; 4] {
    let (lo, hi) = (i32::from(min as u8 as i8), i32::from(max as u8 as i8));
    v.map(|x| ssat::<8>(x).max(lo).min(hi) as i8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        assert_eq!(sxtb16(0x1280_34FF), 0xFF80_FFFF);
        assert_eq!(sxtb16_ror8(0x8012_FF34), 0xFF80_FFFF);
        assert_eq!(sxtab16(0x0001_0001, 0x00FF_00FF), 0x0000_0000);
        assert_eq!(sxtab16(0x7FFF_0000, 0x0001_0080), 0x8000_FF80); // halfwords wrap
        assert_eq!(sxtab16_ror8(0x0002_0003, 0x0500_0700), 0x0007_000A);
        assert_eq!(smlad(0x0002_0003, 0x0004_0005, 1), 1 + 15 + 8);
        assert_eq!(smlad(0x8000_8000, 0x8000_8000, 0), i32::MIN); // 2^31 wraps
        assert_eq!(smlad(0xFFFF_0001, 0x0001_FFFF, 10), 10 - 1 - 1);
        assert_eq!(smlabb(0x0002_0003, 0x0004_0005, 1), 16);
        assert_eq!(smlatt(0x0002_0003, 0x0004_0005, 1), 9);
        assert_eq!(smlabb(0, 0, i32::MAX), i32::MAX);
        assert_eq!(ssat::<8>(200), 127);
        assert_eq!(ssat::<8>(-200), -128);
        assert_eq!(ssat::<8>(-5), -5);
        assert_eq!(ssat::<1>(5), 0);
        assert_eq!(ssat::<32>(i32::MIN), i32::MIN);
    }
}
