//! UTF-8 checks for text read from BEF (names, string attributes). Hosted builds use core's
//! `from_utf8`, which is fast on long text; bare metal uses a compact loop instead of core's
//! (about 620 B of flash with its 256-byte width table), since BEF strings are short names.

/// `bytes` as text, if they are UTF-8.
#[inline]
pub(crate) fn to_str(bytes: &[u8]) -> Option<&str> {
    #[cfg(not(target_os = "none"))]
    return core::str::from_utf8(bytes).ok();
    #[cfg(target_os = "none")]
    // SAFETY: `is_utf8` accepts exactly what `from_utf8` does (tests below, exhaustively up to
    // three bytes and over every four-byte lead).
    return is_utf8(bytes).then(|| unsafe { core::str::from_utf8_unchecked(bytes) });
}

/// Whether `bytes` are UTF-8: shortest-form sequences of scalar values (no surrogates,
/// nothing above U+10FFFF).
#[cfg_attr(not(any(target_os = "none", test)), allow(dead_code))]
fn is_utf8(bytes: &[u8]) -> bool {
    let mut i = 0;
    while let Some(&lead) = bytes.get(i) {
        let (extra, min) = match lead {
            0x00..=0x7f => (0, 0),
            0xc2..=0xdf => (1, 0x80),
            0xe0..=0xef => (2, 0x800),
            0xf0..=0xf4 => (3, 0x1_0000),
            _ => return false,
        };
        // The lead's payload bits: 5, 4 or 3 of them.
        let mut c = u32::from(lead) & (0x7f >> extra);
        for k in 1..=extra {
            match bytes.get(i + k) {
                Some(&b) if b & 0xc0 == 0x80 => c = c << 6 | u32::from(b & 0x3f),
                _ => return false,
            }
        }
        if c < min || c > 0x10_ffff || (0xd800..=0xdfff).contains(&c) {
            return false;
        }
        i += 1 + extra;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::is_utf8;

    fn agrees(b: &[u8]) {
        assert_eq!(is_utf8(b), core::str::from_utf8(b).is_ok(), "{b:02x?}");
    }

    // Millions of cases: too slow under Miri (the core's unit tests run there), and the
    // function has no unsafe code of its own.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn agrees_with_core_on_every_sequence_up_to_three_bytes() {
        agrees(&[]);
        for a in 0..=255u8 {
            agrees(&[a]);
            for b in 0..=255u8 {
                agrees(&[a, b]);
                for c in 0..=255u8 {
                    agrees(&[a, b, c]);
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn agrees_with_core_on_four_byte_sequences() {
        // Every lead, with continuation bytes around the bounds that matter (overlong, above
        // U+10FFFF) and a few that are not continuations.
        let tails = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff];
        for a in 0..=255u8 {
            for b in tails {
                for c in tails {
                    for d in tails {
                        agrees(&[a, b, c, d]);
                        agrees(&[b'x', a, b, c, d]);
                    }
                }
            }
        }
    }
}
