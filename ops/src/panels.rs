//! float32 convolution filters laid out ahead of time for the x86-64 convolution tiles
//! (`float_x86`: the AVX-512 ones read a block at a time, the AVX2 ones 16 or 8 channels of
//! one, [`block_at`]). A filter `[rows, out]` (rows: kh × kw × in) becomes blocks of output
//! channels one after another, 32 wide while 32 remain, then 16, then 8 (the tiles' widths),
//! each block its rows in order. A tile then reads its block's weights front to back, as it
//! reads a panel the kernel would otherwise copy out of the filter on every call; the values
//! are the filter's, so the results are the same (docs/models.md, "Weights laid out ahead").
//! The importer lays them out with `ImportOptions::prepack`, for filters the kernel reads
//! through panels ([`packs`]).

/// Floats of a filter panel, 32 KiB: filters of more are read through panels.
pub const PANEL: usize = 8192;

/// The width of the block of output channels that starts with `left` channels to go: 32, 16
/// or 8 (channels come in whole eights).
pub fn block_width(left: usize) -> usize {
    match left {
        32.. => 32,
        16.. => 16,
        _ => 8,
    }
}

/// The block of [`pack`]'s layout of `co` channels that holds channel `c` (below `co`): its
/// first channel and its width.
///
/// ```
/// // 56 channels: blocks of 32, 16 and 8.
/// assert_eq!(hostrt_ops::panels::block_at(56, 20), (0, 32));
/// assert_eq!(hostrt_ops::panels::block_at(56, 40), (32, 16));
/// assert_eq!(hostrt_ops::panels::block_at(56, 48), (48, 8));
/// ```
pub fn block_at(co: usize, c: usize) -> (usize, usize) {
    let mut start = 0;
    loop {
        let width = block_width(co - start);
        if c < start + width || start + width >= co {
            return (start, width);
        }
        start += width;
    }
}

/// Whether a filter of `rows` rows of `co` output channels is laid out: whole eights of
/// channels, and more than a [`PANEL`] of floats.
pub fn packs(rows: usize, co: usize) -> bool {
    co > 0 && co.is_multiple_of(8) && rows.saturating_mul(co) > PANEL
}

/// `filter` (rows of `co` channels) laid out into `out`, of the same length; `false` (and
/// `out` untouched) when the lengths differ or `co` is not a whole number of eights.
///
/// ```
/// // Two rows of 40 channels: a block of 32, then one of 8.
/// let filter: Vec<f32> = (0..80).map(|v| v as f32).collect();
/// let mut out = vec![0.0; 80];
/// assert!(hostrt_ops::panels::pack(&filter, 40, &mut out));
/// assert_eq!(&out[..3], &[0.0, 1.0, 2.0]);
/// assert_eq!(out[32], 40.0); // the first block's second row
/// assert_eq!(&out[64..66], &[32.0, 33.0]); // the second block's first row
/// ```
pub fn pack(filter: &[f32], co: usize, out: &mut [f32]) -> bool {
    if co == 0 || !co.is_multiple_of(8) || filter.len() != out.len() || !filter.len().is_multiple_of(co) {
        return false;
    }
    let mut at = 0;
    let mut c0 = 0;
    while c0 < co {
        let width = block_width(co - c0);
        for row in filter.chunks_exact(co) {
            out[at..at + width].copy_from_slice(&row[c0..c0 + width]);
            at += width;
        }
        c0 += width;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_follow_the_tile_widths() {
        // 56 channels: 32, 16, 8; three rows.
        let filter: std::vec::Vec<f32> = (0..3 * 56).map(|v| v as f32).collect();
        let mut out = std::vec![0.0; filter.len()];
        assert!(pack(&filter, 56, &mut out));
        let mut at = 0;
        for (c0, width) in [(0, 32), (32, 16), (48, 8)] {
            for r in 0..3 {
                assert_eq!(&out[at..at + width], &filter[r * 56 + c0..r * 56 + c0 + width]);
                at += width;
            }
        }
        assert!(!pack(&filter, 12, &mut out), "12 channels");
        assert!(!pack(&filter[1..], 56, &mut out[1..]), "not whole rows");
        assert!(packs(257, 32) && !packs(256, 32) && !packs(1000, 12));
    }
}
