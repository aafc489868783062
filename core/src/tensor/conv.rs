//! 2-D convolution of NHWC images with HWIO filters (TensorFlow's layouts): the geometry
//! ([`Conv2dParams::new`], TFRT's padding rules and error texts) and the arithmetic, as
//! GEMMs over [`gemm::sgemm_lda`]. Two algorithms, chosen by `core/benches/conv.rs`
//! (docs/architecture.md, "Tensor kernels"):
//!
//! - **im2col** ([`conv2d_im2col`]): copy the receptive fields of a block of output pixels
//!   into a scratch matrix [pixels, KH·KW·C] and multiply it by the filter, which in HWIO
//!   order already is the [KH·KW·C, Cout] matrix. One large GEMM per block.
//! - **direct** ([`conv2d_direct`]): no scratch; per output row and filter tap one GEMM that
//!   reads the input pixels in place, a stride apart (`lda = stride·C`).
//!
//! A 1×1 filter with stride 1 is one GEMM over the whole input either way.

use core::fmt;

use super::gemm;

/// Why a convolution's shapes or attributes are rejected (TFRT's messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvError<'a> {
    /// Padding other than `same`, `valid` or `explicit` (any case).
    UnknownPadding(&'a str),
    /// `explicit` padding: these kernels carry no padding values.
    ExplicitPadding,
    /// The input's channels differ from the filter's depth.
    Channels {
        /// Input channels (dim 3 of the input).
        input: i64,
        /// Filter depth (dim 2 of the filter).
        depth: i64,
    },
    /// A stride below 1.
    Stride(i64),
    /// A filter larger than the input under `valid` padding.
    NegativeOutput {
        /// The output size it would have.
        output: i64,
        /// Input size along that dim.
        input: i64,
        /// Filter size along that dim.
        filter: i64,
        /// Stride along that dim.
        stride: i64,
    },
}

impl fmt::Display for ConvError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::UnknownPadding(p) => write!(f, "Unknown padding type {p}"),
            Self::ExplicitPadding => f.write_str("For explicit padding, padding values must be defined"),
            Self::Channels { input, depth } => {
                write!(f, "Dimensions does not match: input channels is {input} and kernel depth is {depth}")
            }
            Self::Stride(s) => write!(f, "Stride must be > 0, but got {s}"),
            Self::NegativeOutput { output, input, filter, stride } => write!(
                f,
                "Computed output size would be negative: {output} (input_size: {input}, filter_size: \
                 {filter}, stride: {stride}, dilation: 1)"
            ),
        }
    }
}

/// The geometry of one convolution: dims of input [N, H, W, C], filter [KH, KW, C, Cout]
/// and output [N, OH, OW, Cout], strides, dilations and the zero padding around the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2dParams {
    /// Input dims, NHWC.
    pub input: [i64; 4],
    /// Filter dims, HWIO.
    pub filter: [i64; 4],
    /// Output dims, NHWC.
    pub output: [i64; 4],
    /// Strides along height and width (≥ 1).
    pub strides: [i64; 2],
    /// Spacing of the filter taps along height and width (≥ 1): tap `k` reads input row
    /// `oy·stride + k·dilation − top`. [`Conv2dParams::new`] makes 1 (TFRT's kernels);
    /// TensorFlow Lite's dilated convolutions set more.
    pub dilations: [i64; 2],
    /// Zero rows/columns added at the top, bottom, left and right.
    pub padding: [i64; 4],
}

impl Conv2dParams {
    /// The geometry for `padding` (`"same"` or `"valid"`, any case) and `strides`, or why
    /// it has none. Dims are those of real tensors (non-negative).
    ///
    /// ```
    /// use hostrt_core::tensor::conv::Conv2dParams;
    /// let p = Conv2dParams::new([1, 28, 28, 1], [3, 3, 1, 32], "SAME", [2, 2]).unwrap();
    /// assert_eq!((p.output, p.padding), ([1, 14, 14, 32], [0, 1, 0, 1]));
    /// let e = Conv2dParams::new([1, 1, 1, 1], [4, 4, 1, 1], "valid", [1, 1]).unwrap_err();
    /// assert!(e.to_string().starts_with("Computed output size would be negative: -2"));
    /// ```
    pub fn new(
        input: [i64; 4],
        filter: [i64; 4],
        padding: &str,
        strides: [i64; 2],
    ) -> Result<Self, ConvError<'_>> {
        let same = if padding.eq_ignore_ascii_case("same") {
            true
        } else if padding.eq_ignore_ascii_case("valid") {
            false
        } else if padding.eq_ignore_ascii_case("explicit") {
            return Err(ConvError::ExplicitPadding);
        } else {
            return Err(ConvError::UnknownPadding(padding));
        };
        if input[3] != filter[2] {
            return Err(ConvError::Channels { input: input[3], depth: filter[2] });
        }
        let (oh, top, bottom) = windowed(input[1], filter[0], strides[0], same)?;
        let (ow, left, right) = windowed(input[2], filter[1], strides[1], same)?;
        Ok(Self {
            input,
            filter,
            output: [input[0], oh, ow, filter[3]],
            strides,
            dilations: [1, 1],
            padding: [top, bottom, left, right],
        })
    }

    /// Whether the convolution is a plain matrix product (1×1 filter, stride 1).
    pub fn is_pointwise(&self) -> bool {
        self.filter[0] == 1 && self.filter[1] == 1 && self.strides == [1, 1]
    }

    /// The scratch [`conv2d`] can use for im2col blocks of up to `max_pixels` output
    /// pixels, in `f32` elements (0 for a pointwise convolution, which needs none).
    pub fn scratch_len(&self, max_pixels: usize) -> usize {
        if self.is_pointwise() {
            return 0;
        }
        let pixels = self.output[0].saturating_mul(self.output[1]).saturating_mul(self.output[2]);
        let pixels = usize::try_from(pixels).unwrap_or(0).min(max_pixels);
        let row = self.filter[0].saturating_mul(self.filter[1]).saturating_mul(self.filter[2]);
        pixels.saturating_mul(usize::try_from(row).unwrap_or(0))
    }
}

/// TFRT's windowed output size and (before, after) padding along one dim, dilation 1.
fn windowed(input: i64, filter: i64, stride: i64, same: bool) -> Result<(i64, i64, i64), ConvError<'static>> {
    if stride <= 0 {
        return Err(ConvError::Stride(stride));
    }
    // i128: dims and strides are any i64; the results are no larger than the operands.
    let (i, k, s) = (i128::from(input), i128::from(filter), i128::from(stride));
    let (out, before, after) = if same {
        let out = (i + s - 1) / s;
        let needed = ((out - 1) * s + k - i).max(0);
        (out, needed / 2, needed - needed / 2)
    } else {
        ((i - k + s) / s, 0, 0)
    };
    if out < 0 {
        return Err(ConvError::NegativeOutput { output: out as i64, input, filter, stride });
    }
    let clamp = |v: i128| i64::try_from(v).unwrap_or(i64::MAX);
    Ok((clamp(out), clamp(before), clamp(after)))
}

/// Dims as indices; every tensor passed to the arithmetic exists, so its dims fit.
fn idx<const N: usize>(d: [i64; N]) -> [usize; N] {
    d.map(|x| usize::try_from(x).unwrap_or(0))
}

/// The geometry as indices (every tensor passed to the arithmetic exists, so its dims fit).
struct Dims {
    h: usize,
    w: usize,
    c: usize,
    kh: usize,
    kw: usize,
    co: usize,
    n: usize,
    oh: usize,
    ow: usize,
    sh: usize,
    sw: usize,
    dh: usize,
    dw: usize,
    top: usize,
    left: usize,
}

/// The dims of `p`, or `None` when the input or filter holds no data (every sum is 0).
/// Panics unless the slices hold the tensors `p` describes (callers check shapes first).
fn operands(p: &Conv2dParams, x: &[f32], f: &[f32], out: &[f32]) -> Option<Dims> {
    let count = |d: [i64; 4]| idx(d).iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    let (xn, fn_, on) = (count(p.input), count(p.filter), count(p.output));
    assert!(
        xn.is_some_and(|n| x.len() >= n)
            && fn_.is_some_and(|n| f.len() >= n)
            && on.is_some_and(|n| out.len() >= n),
        "conv2d operands do not match their shapes"
    );
    if xn == Some(0) || fn_ == Some(0) {
        return None;
    }
    let ([_, h, w, c], [kh, kw, _, co], [n, oh, ow, _]) = (idx(p.input), idx(p.filter), idx(p.output));
    let ([sh, sw], [dh, dw], [top, _, left, _]) = (idx(p.strides), idx(p.dilations), idx(p.padding));
    Some(Dims { h, w, c, kh, kw, co, n, oh, ow, sh, sw, dh, dw, top, left })
}

/// Convolve with the faster algorithm for the geometry: im2col while `scratch` holds at
/// least one output pixel's receptive field and the taps are dense, direct otherwise. `epilogue` is called once
/// per finished block of whole output pixels (`Cout` values each), while it is in cache:
/// bias, batch norm and activations go there.
///
/// Panics if a slice is shorter than its tensor in `p`.
///
/// ```
/// use hostrt_core::tensor::conv::{Conv2dParams, conv2d};
/// // A 3×3 image, one 2×2 filter of ones, "valid": each output sums a 2×2 window.
/// let p = Conv2dParams::new([1, 3, 3, 1], [2, 2, 1, 1], "valid", [1, 1]).unwrap();
/// let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
/// let mut out = [0.0; 4];
/// let mut scratch = [0.0; 16];
/// conv2d(&p, &x, &[1.0; 4], &mut out, &mut scratch, &mut |_| {});
/// assert_eq!(out, [12.0, 16.0, 24.0, 28.0]);
/// ```
pub fn conv2d(
    p: &Conv2dParams,
    x: &[f32],
    f: &[f32],
    out: &mut [f32],
    scratch: &mut [f32],
    epilogue: &mut dyn FnMut(&mut [f32]),
) {
    let row = idx([p.filter[0].saturating_mul(p.filter[1]).saturating_mul(p.filter[2])])[0];
    if !p.is_pointwise() && (row == 0 || scratch.len() < row || p.dilations != [1, 1]) {
        conv2d_direct(p, x, f, out, epilogue)
    } else {
        conv2d_im2col(p, x, f, out, scratch, epilogue)
    }
}

/// The output of a convolution with no input or filter data: zeros, then the epilogue.
fn zeros(p: &Conv2dParams, out: &mut [f32], epilogue: &mut dyn FnMut(&mut [f32])) {
    let [n, oh, ow, co] = idx(p.output);
    let out = &mut out[..n * oh * ow * co];
    out.fill(0.0);
    if !out.is_empty() {
        epilogue(out);
    }
}

/// im2col + GEMM in blocks of `scratch.len() / (KH·KW·C)` output pixels (a pointwise
/// convolution multiplies the input directly and ignores `scratch`).
///
/// Panics if a slice is shorter than its tensor, or, for a filter that is not pointwise,
/// `scratch` holds less than one pixel's receptive field or the dilations are not 1
/// ([`conv2d`] sends those to [`conv2d_direct`]).
pub fn conv2d_im2col(
    p: &Conv2dParams,
    x: &[f32],
    f: &[f32],
    out: &mut [f32],
    scratch: &mut [f32],
    epilogue: &mut dyn FnMut(&mut [f32]),
) {
    let Some(Dims { h, w, c, kh, kw, co, n, oh, ow, sh, sw, top, left, .. }) = operands(p, x, f, out) else {
        return zeros(p, out, epilogue);
    };
    let pixels = n * oh * ow;
    if p.is_pointwise() {
        let out = &mut out[..pixels * co];
        gemm::sgemm(pixels, c, co, 1.0, x, f, 0.0, out);
        return epilogue(out);
    }
    assert!(p.dilations == [1, 1], "conv2d_im2col takes dense filter taps");
    let k = kh * kw * c;
    let block = scratch.len() / k;
    assert!(block > 0, "conv2d scratch holds less than one receptive field");
    let mut q0 = 0;
    while q0 < pixels {
        let q1 = pixels.min(q0 + block);
        for (q, patch) in (q0..q1).zip(scratch.chunks_exact_mut(k)) {
            let (b, oy, ox) = (q / (oh * ow), q / ow % oh, q % ow);
            for (ky, taps) in patch.chunks_exact_mut(kw * c).enumerate() {
                // Input row and the filter columns that land inside it.
                let iy = (oy * sh + ky).wrapping_sub(top);
                let x0 = (ox * sw).wrapping_sub(left);
                let first = left.saturating_sub(ox * sw).min(kw);
                let end = (w + left).saturating_sub(ox * sw).min(kw).max(first);
                if iy >= h || first == end {
                    taps.fill(0.0);
                    continue;
                }
                taps[..first * c].fill(0.0);
                let src = ((b * h + iy) * w + x0.wrapping_add(first)) * c;
                taps[first * c..end * c].copy_from_slice(&x[src..src + (end - first) * c]);
                taps[end * c..].fill(0.0);
            }
        }
        let block_out = &mut out[q0 * co..q1 * co];
        gemm::sgemm(q1 - q0, k, co, 1.0, scratch, f, 0.0, block_out);
        epilogue(block_out);
        q0 = q1;
    }
}

/// Direct convolution: for each output row and filter tap, one GEMM of the input pixels
/// that tap reads (in place, `stride·C` apart) by the tap's [C, Cout] slice of the filter.
///
/// Panics if a slice is shorter than its tensor.
pub fn conv2d_direct(
    p: &Conv2dParams,
    x: &[f32],
    f: &[f32],
    out: &mut [f32],
    epilogue: &mut dyn FnMut(&mut [f32]),
) {
    let Some(Dims { h, w, c, kh, kw, co, n, oh, ow, sh, sw, dh, dw, top, left }) = operands(p, x, f, out)
    else {
        return zeros(p, out, epilogue);
    };
    for (r, orow) in out[..n * oh * ow * co].chunks_exact_mut(ow * co).enumerate() {
        let (b, oy) = (r / oh, r % oh);
        orow.fill(0.0);
        for ky in 0..kh {
            let iy = (oy * sh + ky * dh).wrapping_sub(top);
            if iy >= h {
                continue;
            }
            for kx in 0..kw {
                // Output columns whose input column ox·sw + kx·dw − left lies in [0, w).
                let lo = left.saturating_sub(kx * dw).div_ceil(sw);
                let hi = ow.min((w + left).saturating_sub(kx * dw).div_ceil(sw));
                if lo >= hi {
                    continue;
                }
                let ix = lo * sw + kx * dw - left;
                let a = &x[((b * h + iy) * w + ix) * c..];
                let tap = &f[(ky * kw + kx) * c * co..][..c * co];
                gemm::sgemm_lda(hi - lo, c, co, 1.0, a, sw * c, tap, 1.0, &mut orow[lo * co..hi * co]);
            }
        }
        epilogue(orow);
    }
}

#[cfg(test)]
mod tests;
