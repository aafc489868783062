//! Weights laid out ahead of time for the x86-64 AVX-512 VNNI loops, as XNNPACK lays out its
//! weights when a model loads: an importer calls [`pack_conv`] and [`pack_fully_connected`]
//! once and stores the result beside the filter, and the kernels' `*_prepacked` forms read
//! it instead of laying the filter out on every call. Portable code (an importer on any CPU
//! can write it); x86-64 CPUs with AVX-512 VNNI read it, those with AVX2 alone read a fully
//! connected layer's (`arch::avx2_fc`), and others read the filter as usual, with the same
//! results (and `hostrt-ops` refuses it elsewhere). For CPUs with AVX2 alone, an importer
//! also lays out the filters of the convolutions their blocked loop takes as int16 pairs
//! ([`pack_conv_pairs`]; no bias folded there).
//!
//! The input offset is folded into the bias here: `VPDPBUSD` multiplies inputs made unsigned
//! (`x + 128`), and `Σ (x + offset)·w = Σ (x + 128)·w + (offset − 128)·Σ w`, so each channel's
//! bias becomes `bias + (offset − 128)·Σ w` (modulo 2^32, as every path sums).

use crate::conv::ConvParams;
use crate::error::{DspError, check_len};
use crate::fully_connected::FullyConnectedParams;
use crate::quant::{PerChannelParams, check_zero_point};

/// Output channels per block of the layout (one 512-bit vector of int32 sums).
pub const BLOCK: usize = 16;
/// Bytes per row of a block: four int8 of each of its channels, or its sixteen int32 biases.
pub const ROW: usize = 4 * BLOCK;
/// Bytes of the stack buffer the VNNI convolution stages its patches in.
pub(crate) const PATCH_BYTES: usize = 32 * 1024;
/// Bytes of the stack buffer the VNNI convolution lays a run of channels out in, when the
/// weights were not laid out ahead of time.
pub(crate) const FILTER_BYTES: usize = 128 * 1024;
/// Most filter taps of the path reading taps in place from a padded image.
pub(crate) const MAX_TAPS: usize = 64;
/// Output pixels per tile of the VNNI convolution (its patch blocks are whole tiles).
pub(crate) const TILE: usize = 8;

/// How the VNNI convolution (and fully connected) loops read a layer's filter, decided by the
/// layer's shape alone (so an importer and the kernel agree; [`ConvLayout::of`],
/// [`ConvLayout::of_fully_connected`]): per block of [`BLOCK`] output channels, a row of biases,
/// then `quads` rows of four filter values per channel, in the order [`Reads`] says the
/// patch values are read. Values past the channels, a filter row or the patch are zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvLayout {
    pub(crate) reads: Reads,
    pub(crate) quads: usize,
    pub(crate) blocks: usize,
}

/// Where the VNNI convolution reads each output pixel's patch values, four at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reads {
    /// Gathered per pixel (`[fh, fw, c]` order): quad `q` holds values `4q..4q + 4`.
    Gathered,
    /// In place from a padded copy of the image whose pixels hold `icq` quads (channels
    /// padded to a multiple of four): quad `q` holds channels `4 (q % icq)..` of tap
    /// `q / icq`.
    Taps { icq: usize },
    /// In place from a padded copy of the image of `c` values per pixel (one or two), each
    /// filter row's `fw * c` values read as `per_row` quads straight along the row: quad `q`
    /// holds values `4 (q % per_row)..` of filter row `q / per_row` (the row's last quad runs
    /// up to three values past it, times zero).
    Rows { per_row: usize },
}

impl Reads {
    /// Bytes per pixel of the padded image.
    pub(crate) fn pixel_bytes(&self, c: usize) -> usize {
        match *self {
            Reads::Taps { icq } => 4 * icq,
            _ => c,
        }
    }

    /// Bytes per row of the padded image, `wp` pixels wide: the last quad of a filter row may
    /// read three bytes past the row's pixels.
    pub(crate) fn row_bytes(&self, c: usize, wp: usize) -> Option<usize> {
        let slack = if matches!(self, Reads::Rows { .. }) { 3 } else { 0 };
        wp.checked_mul(self.pixel_bytes(c))?.checked_add(slack)
    }
}

impl ConvLayout {
    /// The layout of `p`'s filter, or `None` where the VNNI loops do not take the layer (its
    /// patches or a block's rows do not fit their stack buffers).
    pub fn of(p: &ConvParams) -> Option<ConvLayout> {
        let (s, w) = (p.input, p.window);
        let taps = w.filter.h.checked_mul(w.filter.w)?;
        let per_filter = taps.checked_mul(s.c)?;
        let band_input = w.filter.h.checked_sub(1)?.checked_mul(w.dilation.h)?.checked_add(1)?;
        let wp = w.padded_input().w;
        // A padded image's rows for one output row fit the patch buffer.
        let fits_rows = |reads: Reads| {
            reads.row_bytes(s.c, wp).and_then(|b| b.checked_mul(band_input)).is_some_and(|b| b <= PATCH_BYTES)
        };
        let quads_of = |reads: Reads| match reads {
            Reads::Gathered => per_filter.div_ceil(4),
            Reads::Taps { icq } => taps * icq,
            Reads::Rows { per_row } => w.filter.h * per_row,
        };
        let filter_fits = |reads: Reads| ROW * (1 + quads_of(reads)) <= FILTER_BYTES;
        let in_place = if w.is_pointwise() || s.c == 0 || wp == 0 {
            None
        } else if s.c >= 3 {
            Some(Reads::Taps { icq: s.c.div_ceil(4) }).filter(|_| taps <= MAX_TAPS)
        } else {
            let per_row = w.filter.w.checked_mul(s.c)?.div_ceil(4);
            Some(Reads::Rows { per_row }).filter(|_| w.dilation.w == 1 && w.filter.h <= MAX_TAPS)
        };
        let reads = in_place.filter(|&r| fits_rows(r) && filter_fits(r)).unwrap_or(Reads::Gathered);
        let quads = quads_of(reads);
        let fits = quads > 0
            && quads <= PATCH_BYTES / (4 * TILE)
            && ROW * (1 + quads) <= FILTER_BYTES
            && p.output_channels > 0;
        fits.then_some(ConvLayout { reads, quads, blocks: p.output_channels.div_ceil(BLOCK) })
    }

    /// Bytes of the whole layer laid out.
    pub fn len(&self) -> usize {
        self.blocks * self.block_rows() * ROW
    }

    /// Whether the layout is empty (never: a layout has at least one block of one quad).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Blocks of [`BLOCK`] output channels (the last padded with zero channels).
    pub fn blocks(&self) -> usize {
        self.blocks
    }

    /// Rows per block: the biases, then the quads.
    pub fn block_rows(&self) -> usize {
        1 + self.quads
    }

    /// Where filter value `e` (0..4) of quad `q` comes from in a filter row (`[fh, fw, c]`),
    /// if anywhere.
    fn source(&self, c: usize, fw: usize, q: usize, e: usize) -> Option<usize> {
        let i = match self.reads {
            Reads::Gathered => 4 * q + e,
            Reads::Taps { icq } => {
                let (tap, ch) = (q / icq, 4 * (q % icq) + e);
                (ch < c).then_some(tap * c + ch)?
            }
            Reads::Rows { per_row } => {
                let (row, at) = (q / per_row, 4 * (q % per_row) + e);
                (at < fw * c).then_some(row * fw * c + at)?
            }
        };
        Some(i)
    }

    /// The layout of a fully connected layer's filter (`[out, in]`): one row of `in` values
    /// per channel, read in order (a pointwise convolution's gathered patch). `None` for an
    /// empty layer (no input or output channels), which the VNNI loop does not take.
    pub fn of_fully_connected(p: &FullyConnectedParams) -> Option<ConvLayout> {
        (p.input_depth > 0 && p.output_depth > 0).then(|| ConvLayout {
            reads: Reads::Gathered,
            quads: p.input_depth.div_ceil(4),
            blocks: p.output_depth.div_ceil(BLOCK),
        })
    }

    /// Lays out output channels `c0..c0 + n` (`filter` and `bias` from channel `c0`) of a
    /// convolution into `out`, whole blocks: `ceil(n / 16)` of them.
    pub(crate) fn pack_run(
        &self,
        p: &ConvParams,
        filter: &[i8],
        bias: Option<&[i32]>,
        n: usize,
        out: &mut [[u8; ROW]],
    ) {
        let (c, fw) = (p.input.c, p.window.filter.w);
        let filter_row = Row { len: p.window.filter.h * fw * c, c, fw };
        self.pack_rows(filter_row, p.input_zero_point, (filter, bias, n), out);
    }

    /// [`ConvLayout::pack_run`] for filter rows of shape `row`: `n` rows of `filter` (and
    /// their `bias`) into `ceil(n / 16)` blocks of `out`.
    fn pack_rows(
        &self,
        row: Row,
        input_zero_point: i32,
        (filter, bias, n): (&[i8], Option<&[i32]>, usize),
        out: &mut [[u8; ROW]],
    ) {
        let rows = self.block_rows();
        for (k, block) in out.chunks_exact_mut(rows).take(n.div_ceil(BLOCK)).enumerate() {
            let (head, quads) = block.split_at_mut(1);
            for j in 0..BLOCK {
                let ch = k * BLOCK + j;
                let values = filter.get(ch * row.len..).filter(|_| ch < n).map(|f| &f[..row.len]);
                for (q, quad) in quads.iter_mut().enumerate() {
                    for e in 0..4 {
                        let at = self.source(row.c, row.fw, q, e).filter(|&i| i < row.len);
                        let v = values.zip(at).map_or(0, |(r, i)| r[i]);
                        quad[4 * j + e] = v as u8;
                    }
                }
                let folded =
                    values.map_or(0, |r| folded_bias(bias.map_or(0, |b| b[ch]), input_zero_point, r));
                head[0][4 * j..4 * j + 4].copy_from_slice(&folded.to_le_bytes());
            }
        }
    }
}

/// The shape of one output channel's filter values: `len` of them, `[fh, fw, c]`.
#[derive(Clone, Copy)]
struct Row {
    len: usize,
    c: usize,
    fw: usize,
}

/// Lays out a convolution's filter (`[out, fh, fw, in]`) and bias for the VNNI loops into
/// `out`, which must hold [`ConvLayout::len`] bytes; an error if the layer takes no layout
/// (`ConvLayout::of` is `None`) or a length is wrong.
///
/// ```
/// use hostrt_dsp::prepack::{ConvLayout, pack_conv};
/// use hostrt_dsp::{ActivationRange, ConvParams, Hw, Nhwc, Padding, Window};
///
/// let input = Nhwc::new(1, 4, 4, 8);
/// let window = Window::new(Hw::new(4, 4), Hw::square(1), Hw::square(1), Hw::square(1), Padding::Valid)?;
/// let p = ConvParams {
///     input,
///     output_channels: 2,
///     window,
///     input_zero_point: 0,
///     output_zero_point: 0,
///     activation: ActivationRange::INT8,
/// };
/// let layout = ConvLayout::of(&p).unwrap();
/// let mut packed = vec![0u8; layout.len()];
/// pack_conv(&p, &[1; 16], Some(&[5, 6]), &mut packed)?;
/// // Channel 0's bias, with the unsigned inputs' correction: 5 + (0 - 128) * 8.
/// assert_eq!(i32::from_le_bytes(packed[..4].try_into().unwrap()), 5 - 128 * 8);
/// # Ok::<(), hostrt_dsp::DspError>(())
/// ```
pub fn pack_conv(
    p: &ConvParams,
    filter: &[i8],
    bias: Option<&[i32]>,
    out: &mut [u8],
) -> Result<(), DspError> {
    check_weights(p, filter, bias)?;
    let layout = ConvLayout::of(p).ok_or(DspError::Param("the layer takes no VNNI layout"))?;
    check_len("packed", layout.len(), out.len())?;
    let (rows, _) = out.as_chunks_mut::<ROW>();
    layout.pack_run(p, filter, bias, p.output_channels, rows);
    Ok(())
}

/// A convolution's weights laid out ahead of time, for the loops of one x86-64 CPU family
/// (`conv2d_prepacked`); others read the filter as usual.
#[derive(Clone, Copy, Debug)]
pub enum ConvPacked<'a> {
    /// [`pack_conv`]'s layout (with the folded bias), for the AVX-512 VNNI loops.
    Vnni(&'a [u8]),
    /// [`pack_conv_pairs`]' layout, for the AVX2 loops without VNNI.
    Pairs(&'a [i16]),
}

/// The length, in int16 values, of [`pack_conv_pairs`]' layout of a convolution's filter, or
/// `None` where no loop reads one: only x86-64's AVX2 blocked loop does, for layers that take
/// neither its direct loop (full filters over rows staged once) nor its per-pixel one.
/// `None` also for parameters that do not check.
pub fn conv_pairs_len(p: &ConvParams) -> Option<usize> {
    let sizes = p.sizes().ok()?;
    (sizes.input.is_ok() && sizes.filter.is_ok() && sizes.output.is_ok()).then_some(())?;
    crate::conv::pairs_len(p)
}

/// Lays out a convolution's filter (`[out, kh, kw, in]`) for x86-64's AVX2 blocked loop
/// into `out`, which must hold [`conv_pairs_len`] values: per group of eight output
/// channels, per pair of values `k, k + 1` of a filter (each filter zero-padded to a multiple
/// of 8 values), the eight channels' two values side by side, as int16; channels past the
/// layer's are zero. The loop reads it in place of widening each run of filters per call.
/// Portable code (an importer on any CPU can write it); an error if the layer takes no such
/// layout or a length is wrong.
///
/// ```
/// use hostrt_dsp::prepack::{conv_pairs_len, pack_conv_pairs};
/// use hostrt_dsp::{ActivationRange, ConvParams, Hw, Nhwc, Window};
///
/// // A pointwise layer: 2 input channels, 3 output channels.
/// let window = Window {
///     filter: Hw::new(1, 1),
///     stride: Hw::new(1, 1),
///     dilation: Hw::new(1, 1),
///     pad: Hw::new(0, 0),
///     output: Hw::new(4, 4),
/// };
/// let p = ConvParams {
///     input: Nhwc::new(1, 4, 4, 2),
///     output_channels: 3,
///     window,
///     input_zero_point: 0,
///     output_zero_point: 0,
///     activation: ActivationRange::INT8,
/// };
/// let len = conv_pairs_len(&p).unwrap();
/// assert_eq!(len, 8 * 8); // eight channels (three, then zeros) of eight values
/// let mut pairs = vec![0i16; len];
/// pack_conv_pairs(&p, &[1, 2, 3, 4, 5, 6], &mut pairs)?;
/// // Values 0 and 1 of channel 0, of channel 1, of channel 2, then zeros.
/// assert_eq!(&pairs[..8], &[1, 2, 3, 4, 5, 6, 0, 0]);
/// # Ok::<(), hostrt_dsp::DspError>(())
/// ```
pub fn pack_conv_pairs(p: &ConvParams, filter: &[i8], out: &mut [i16]) -> Result<(), DspError> {
    check_weights(p, filter, None)?;
    let len = conv_pairs_len(p).ok_or(DspError::Param("the layer takes no laid-out filter pairs"))?;
    check_len("pairs", len, out.len())?;
    let w = p.window;
    let per_filter = w.filter.h * w.filter.w * p.input.c;
    let stride = len / p.output_channels.next_multiple_of(8);
    out.fill(0);
    if per_filter == 0 {
        return Ok(());
    }
    for (c, f) in filter.chunks_exact(per_filter).enumerate() {
        let group = &mut out[c / 8 * 8 * stride..][..8 * stride];
        for (k, &v) in f.iter().enumerate() {
            group[k / 2 * 16 + 2 * (c % 8) + k % 2] = i16::from(v);
        }
    }
    Ok(())
}

/// Lays out a fully connected layer's filter (`[out, in]`) and bias for the VNNI loop into
/// `out`, which must hold the [`ConvLayout::of_fully_connected`] layout's `len()` bytes; an
/// error if the layer is empty or a length is wrong.
///
/// ```
/// use hostrt_dsp::prepack::{ConvLayout, pack_fully_connected};
/// use hostrt_dsp::{ActivationRange, FullyConnectedParams};
///
/// let p = FullyConnectedParams {
///     batches: 1,
///     input_depth: 3,
///     output_depth: 2,
///     input_zero_point: 0,
///     output_zero_point: 0,
///     activation: ActivationRange::INT8,
/// };
/// let layout = ConvLayout::of_fully_connected(&p).unwrap();
/// let mut packed = vec![0u8; layout.len()];
/// pack_fully_connected(&p, &[1, 2, 3, 4, 5, 6], Some(&[7, 8]), &mut packed)?;
/// // Channel 1's bias, with the unsigned inputs' correction: 8 + (0 - 128) * 15.
/// assert_eq!(i32::from_le_bytes(packed[4..8].try_into().unwrap()), 8 - 128 * 15);
/// // Then channel 0's first quad, channel 1's, ... (padded with zeros).
/// assert_eq!(&packed[64..72], &[1, 2, 3, 0, 4, 5, 6, 0]);
/// # Ok::<(), hostrt_dsp::DspError>(())
/// ```
pub fn pack_fully_connected(
    p: &FullyConnectedParams,
    filter: &[i8],
    bias: Option<&[i32]>,
    out: &mut [u8],
) -> Result<(), DspError> {
    let channels = check_weights(p, filter, bias)?;
    let layout =
        ConvLayout::of_fully_connected(p).ok_or(DspError::Param("an empty layer takes no VNNI layout"))?;
    check_len("packed", layout.len(), out.len())?;
    let (rows, _) = out.as_chunks_mut::<ROW>();
    let row = Row { len: p.input_depth, c: p.input_depth, fw: 1 };
    layout.pack_rows(row, p.input_zero_point, (filter, bias, channels), rows);
    Ok(())
}

/// Checks what a layout is made from (the input zero point, the filter's and bias's
/// lengths); returns the output channels.
fn check_weights(p: &impl PerChannelParams, filter: &[i8], bias: Option<&[i32]>) -> Result<usize, DspError> {
    check_zero_point(p.output_stage().0)?;
    let sizes = p.sizes()?;
    check_len("filter", sizes.filter?, filter.len())?;
    if let Some(bias) = bias {
        check_len("bias", sizes.channels, bias.len())?;
    }
    Ok(sizes.channels)
}

/// A channel's bias with the unsigned inputs' correction: `bias + (offset − 128)·Σ row`,
/// modulo 2^32 (`offset` is minus the input zero point).
#[inline]
pub(crate) fn folded_bias(bias: i32, input_zero_point: i32, row: &[i8]) -> i32 {
    let sum = row.iter().map(|&v| i32::from(v)).sum::<i32>();
    bias.wrapping_add((-input_zero_point).wrapping_sub(128).wrapping_mul(sum))
}

/// `Ok` if `packed` has the length of `p`'s [`ConvLayout`] (and `p` has one).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn check_conv(p: &ConvParams, packed: &[u8]) -> Result<(), DspError> {
    let layout =
        ConvLayout::of(p).ok_or(DspError::Param("packed weights for a layer the VNNI loops do not take"))?;
    check_len("packed", layout.len(), packed.len())
}

/// The fully connected layer's [`ConvLayout`], if `packed` has its length (and `p` has one).
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
pub(crate) fn check_fully_connected(p: &FullyConnectedParams, packed: &[u8]) -> Result<ConvLayout, DspError> {
    let layout = ConvLayout::of_fully_connected(p)
        .ok_or(DspError::Param("packed weights for a layer the VNNI loops do not take"))?;
    check_len("packed", layout.len(), packed.len())?;
    Ok(layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::ActivationRange;
    use crate::shape::{Hw, Nhwc, Window};
    use std::vec;
    use std::vec::Vec;

    fn conv(input: Nhwc, oc: usize, filter: Hw, stride: usize, pad: usize, out: Hw) -> ConvParams {
        let window = Window {
            filter,
            stride: Hw::square(stride),
            dilation: Hw::square(1),
            pad: Hw::square(pad),
            output: out,
        };
        ConvParams {
            input,
            output_channels: oc,
            window,
            input_zero_point: 3,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        }
    }

    #[test]
    fn implicit_layout_pads_each_taps_channels_to_quads() {
        // RGB 3x3: each tap's three channels in a quad of its own.
        let p = conv(Nhwc::new(1, 8, 8, 3), 17, Hw::square(3), 2, 1, Hw::square(4));
        let layout = ConvLayout::of(&p).unwrap();
        assert_eq!((layout.reads, layout.quads, layout.blocks), (Reads::Taps { icq: 1 }, 9, 2));
        let filter: Vec<i8> = (0..17 * 27).map(|i| (i % 251) as i8).collect();
        let bias: Vec<i32> = (0..17).collect();
        let mut out = vec![0xAAu8; layout.len()];
        pack_conv(&p, &filter, Some(&bias), &mut out).unwrap();
        let rows = out.as_chunks::<ROW>().0;
        // Channel 1, tap 4, channel 2 of the input: quad 1 + 4, byte 4 * 1 + 2.
        assert_eq!(rows[1 + 4][4 + 2] as i8, filter[27 + 4 * 3 + 2]);
        // The padding byte of each quad is zero.
        assert!(rows[1..10].iter().all(|r| (0..16).all(|j| r[4 * j + 3] == 0)));
        // Channel 16 in block 1, channels past 17 all zero.
        assert_eq!(rows[10 + 1][0] as i8, filter[16 * 27]);
        assert!(rows[10..].iter().all(|r| r[4..].iter().all(|&b| b == 0)));
        // Folded bias: bias + (offset - 128) * sum, offset = -3.
        let sum: i32 = filter[27..54].iter().map(|&v| i32::from(v)).sum();
        assert_eq!(i32::from_le_bytes(rows[0][4..8].try_into().unwrap()), 1 + (-3 - 128) * sum);
    }

    #[test]
    fn gathered_layout_runs_over_the_whole_patch() {
        // Dilated along rows: patches gathered, nine values of one channel in three quads.
        let mut p = conv(Nhwc::new(1, 6, 6, 1), 2, Hw::square(3), 1, 0, Hw::square(4));
        p.window.dilation = Hw::new(1, 2);
        p.window.output = Hw::new(4, 2);
        let layout = ConvLayout::of(&p).unwrap();
        assert_eq!((layout.reads, layout.quads), (Reads::Gathered, 3));
        let filter: Vec<i8> = (1..=18).collect();
        let mut out = vec![0u8; layout.len()];
        pack_conv(&p, &filter, None, &mut out).unwrap();
        let rows = out.as_chunks::<ROW>().0;
        assert_eq!(&rows[1][..8], &[1, 2, 3, 4, 10, 11, 12, 13]);
        assert_eq!(&rows[3][..8], &[9, 0, 0, 0, 18, 0, 0, 0]);
    }

    #[test]
    fn row_layout_reads_each_filter_row_straight() {
        // One channel, 3x3: each filter row's three values in a quad of its own.
        let p = conv(Nhwc::new(1, 6, 6, 1), 2, Hw::square(3), 1, 0, Hw::square(4));
        let layout = ConvLayout::of(&p).unwrap();
        assert_eq!((layout.reads, layout.quads), (Reads::Rows { per_row: 1 }, 3));
        // Two channels, 5 wide: ten values of a row in three quads.
        let p2 = conv(Nhwc::new(1, 9, 9, 2), 1, Hw::square(5), 1, 2, Hw::square(9));
        assert_eq!(ConvLayout::of(&p2).unwrap().quads, 5 * 3);
        let filter: Vec<i8> = (1..=18).collect();
        let mut out = vec![0u8; layout.len()];
        pack_conv(&p, &filter, None, &mut out).unwrap();
        let rows = out.as_chunks::<ROW>().0;
        assert_eq!(&rows[1][..8], &[1, 2, 3, 0, 10, 11, 12, 0]);
        assert_eq!(&rows[3][..8], &[7, 8, 9, 0, 16, 17, 18, 0]);
    }

    #[test]
    fn pack_checks_lengths() {
        let p = conv(Nhwc::new(1, 4, 4, 4), 2, Hw::square(1), 1, 0, Hw::square(4));
        let mut out = vec![0u8; ConvLayout::of(&p).unwrap().len()];
        assert!(matches!(
            pack_conv(&p, &[0; 7], None, &mut out),
            Err(DspError::Length { what: "filter", .. })
        ));
        assert!(matches!(
            pack_conv(&p, &[0; 8], None, &mut out[1..]),
            Err(DspError::Length { what: "packed", .. })
        ));
        let fc = FullyConnectedParams {
            batches: 1,
            input_depth: 2,
            output_depth: 2,
            input_zero_point: -1,
            output_zero_point: 0,
            activation: ActivationRange::INT8,
        };
        let mut packed = [0u8; 2 * ROW];
        pack_fully_connected(&fc, &[1, 2, 3, 4], Some(&[10, 20]), &mut packed).unwrap();
        let bias = |j: usize| i32::from_le_bytes(packed[4 * j..4 * j + 4].try_into().unwrap());
        assert_eq!([bias(0), bias(1), bias(2)], [10 + (1 - 128) * 3, 20 + (1 - 128) * 7, 0]);
        assert_eq!(&packed[ROW..ROW + 12], &[1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0, 0]);
        assert!(matches!(
            pack_fully_connected(&fc, &[1, 2, 3, 4], None, &mut packed[1..]),
            Err(DspError::Length { what: "packed", .. })
        ));
        let empty = FullyConnectedParams { input_depth: 0, ..fc };
        assert!(matches!(pack_fully_connected(&empty, &[], None, &mut []), Err(DspError::Param(_))));
    }

    /// Layers with no pairs layout, or shapes that do not check, are `None` and an error,
    /// never a panic: sizes past `usize`, no input channels, no output channels, a 3x3 layer
    /// of the direct loop, a filter too long for the blocked loop's patches.
    #[test]
    fn filter_pairs_refuse_what_no_loop_takes() {
        let huge = conv(Nhwc::new(1, 4, 4, 8), 8, Hw::new(usize::MAX / 2, 3), 1, 0, Hw::new(1, 1));
        assert_eq!(conv_pairs_len(&huge), None);
        assert!(pack_conv_pairs(&huge, &[], &mut []).is_err());
        let empty = conv(Nhwc::new(1, 4, 4, 0), 8, Hw::new(1, 1), 1, 0, Hw::new(4, 4));
        let mut pairs = vec![0i16; conv_pairs_len(&empty).unwrap_or(0)];
        let _ = pack_conv_pairs(&empty, &[], &mut pairs);
        let no_outputs = conv(Nhwc::new(1, 4, 4, 8), 0, Hw::new(1, 1), 1, 0, Hw::new(4, 4));
        assert_eq!(conv_pairs_len(&no_outputs), None);
        let direct = conv(Nhwc::new(1, 8, 8, 4), 8, Hw::new(3, 3), 1, 1, Hw::new(8, 8));
        assert_eq!(conv_pairs_len(&direct), None);
        let long = conv(Nhwc::new(1, 1, 1, 4096), 8, Hw::new(1, 1), 1, 0, Hw::new(1, 1));
        assert_eq!(conv_pairs_len(&long), None);
        assert!(pack_conv_pairs(&long, &vec![0; 8 * 4096], &mut []).is_err());
    }
}
