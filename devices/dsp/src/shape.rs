//! Tensor shapes (NHWC, as TFLite) and the sliding-window geometry shared by convolutions and
//! pooling: filter, stride, dilation, explicit top/left padding and output size.

use crate::error::{DspError, product};

/// A 4-D activation shape in TFLite's NHWC order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nhwc {
    /// Batches.
    pub n: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
    /// Channels (depth).
    pub c: usize,
}

impl Nhwc {
    /// A shape from its four dimensions.
    pub const fn new(n: usize, h: usize, w: usize, c: usize) -> Nhwc {
        Nhwc { n, h, w, c }
    }

    /// Number of elements, or `Overflow`.
    pub fn elements(&self) -> Result<usize, DspError> {
        product(&[self.n, self.h, self.w, self.c])
    }
}

/// A height/width pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hw {
    /// Along the height.
    pub h: usize,
    /// Along the width.
    pub w: usize,
}

impl Hw {
    /// A pair from height and width.
    pub const fn new(h: usize, w: usize) -> Hw {
        Hw { h, w }
    }

    /// The same value along both axes.
    pub const fn square(v: usize) -> Hw {
        Hw { h: v, w: v }
    }
}

/// TFLite's padding modes, resolved to explicit values by [`Window::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Padding {
    /// Output size `ceil(input / stride)`; the padding is split, the odd pixel at the bottom/right.
    Same,
    /// No padding; only windows entirely inside the input.
    Valid,
}

/// Where a sliding window goes: output pixel `(y, x)` reads input rows
/// `y * stride.h - pad.h + k * dilation.h` for `k < filter.h` (and likewise columns); taps
/// outside the input are skipped, which is TFLite's padding with the zero point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Filter (or pooling window) size.
    pub filter: Hw,
    /// Step between output pixels, at least 1.
    pub stride: Hw,
    /// Step between filter taps, at least 1 (pooling requires 1).
    pub dilation: Hw,
    /// Padding before the first row (`h`) and column (`w`).
    pub pad: Hw,
    /// Output height and width.
    pub output: Hw,
}

impl Window {
    /// The window TFLite computes for `padding` (`ComputeOutSize` and `ComputePaddingHeightWidth`).
    pub fn new(
        input: Hw,
        filter: Hw,
        stride: Hw,
        dilation: Hw,
        padding: Padding,
    ) -> Result<Window, DspError> {
        let (out_h, pad_h) = axis(input.h, filter.h, stride.h, dilation.h, padding)?;
        let (out_w, pad_w) = axis(input.w, filter.w, stride.w, dilation.w, padding)?;
        let window =
            Window { filter, stride, dilation, pad: Hw::new(pad_h, pad_w), output: Hw::new(out_h, out_w) };
        window.check()?;
        Ok(window)
    }

    /// Whether each output pixel reads exactly its input pixel (1x1 filter, stride 1, no
    /// padding): a pointwise convolution, whose patches are the input's pixels.
    pub fn is_pointwise(&self) -> bool {
        self.filter == Hw::square(1) && self.stride == Hw::square(1) && self.pad == Hw::square(0)
    }

    /// Rows and columns of input the outputs read, padding included (from the padding's top
    /// left corner): the size of a padded copy of the input.
    pub fn padded_input(&self) -> Hw {
        let size = |out: usize, stride: usize, filter: usize, dilation: usize| {
            out.saturating_sub(1) * stride + filter.saturating_sub(1) * dilation + 1
        };
        Hw::new(
            size(self.output.h, self.stride.h, self.filter.h, self.dilation.h),
            size(self.output.w, self.stride.w, self.filter.w, self.dilation.w),
        )
    }

    /// Checks sizes are nonzero and every coordinate the kernels compute fits in `isize`.
    pub(crate) fn check(&self) -> Result<(), DspError> {
        let Window { filter, stride, dilation, pad, output } = *self;
        if filter.h == 0 || filter.w == 0 {
            return Err(DspError::Param("zero filter size"));
        }
        if stride.h == 0 || stride.w == 0 || dilation.h == 0 || dilation.w == 0 {
            return Err(DspError::Param("zero stride or dilation"));
        }
        let limit = isize::MAX as usize / 2;
        for (out, s, f, d, p) in [
            (output.h, stride.h, filter.h, dilation.h, pad.h),
            (output.w, stride.w, filter.w, dilation.w, pad.w),
        ] {
            let reach = out
                .saturating_sub(1)
                .checked_mul(s)
                .zip((f - 1).checked_mul(d))
                .and_then(|(a, b)| a.checked_add(b))
                .ok_or(DspError::Overflow)?;
            if reach > limit || p > limit {
                return Err(DspError::Overflow);
            }
        }
        Ok(())
    }
}

/// Output size and leading padding of one axis, as TFLite.
fn axis(
    input: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
    padding: Padding,
) -> Result<(usize, usize), DspError> {
    if stride == 0 || dilation == 0 || filter == 0 {
        return Err(DspError::Param("zero filter size, stride or dilation"));
    }
    let effective =
        (filter - 1).checked_mul(dilation).and_then(|e| e.checked_add(1)).ok_or(DspError::Overflow)?;
    let out = match padding {
        Padding::Same => input.div_ceil(stride),
        Padding::Valid => (input + stride).checked_sub(effective).map_or(0, |v| v / stride),
    };
    if out == 0 {
        return Err(DspError::Param("window larger than the input"));
    }
    let total = ((out - 1) * stride + effective).saturating_sub(input);
    Ok((out, total / 2))
}

/// The taps `k` in `[start, end)` of one axis whose input coordinate `origin + k * dilation`
/// lies in `0..size` (empty when `start >= end`).
#[inline]
pub(crate) fn tap_range(origin: isize, dilation: usize, filter: usize, size: usize) -> (usize, usize) {
    let d = dilation as isize;
    let start = if origin < 0 { ((-origin + d - 1) / d) as usize } else { 0 };
    let room = (size as isize).saturating_sub(origin);
    let end = if room > 0 { ((room + d - 1) / d) as usize } else { 0 };
    (start.min(filter), end.min(filter))
}

/// [`tap_range`] without its divisions where the dilation is 1 (the common case): for loops
/// that call it per output pixel. (The per-pixel convolution loop keeps [`tap_range`]: on
/// Cortex-M4 this one made it 1% slower, from register pressure, and depthwise 4% faster.)
#[inline]
pub(crate) fn tap_range_of(origin: isize, dilation: usize, filter: usize, size: usize) -> (usize, usize) {
    if dilation != 1 {
        return tap_range(origin, dilation, filter, size);
    }
    let start = (-origin).max(0) as usize;
    let end = (size as isize).saturating_sub(origin).max(0) as usize;
    (start.min(filter), end.min(filter))
}

/// First input coordinate of output position `out` (may be negative: padding).
#[inline]
pub(crate) fn origin(out: usize, stride: usize, pad: usize) -> isize {
    (out * stride) as isize - pad as isize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_and_valid_match_tflite() {
        // 5x5 input, 3x3 filter, stride 2: SAME gives 3x3 with padding 1; VALID 2x2, no padding.
        let same =
            Window::new(Hw::square(5), Hw::square(3), Hw::square(2), Hw::square(1), Padding::Same).unwrap();
        assert_eq!((same.output, same.pad), (Hw::square(3), Hw::square(1)));
        let valid =
            Window::new(Hw::square(5), Hw::square(3), Hw::square(2), Hw::square(1), Padding::Valid).unwrap();
        assert_eq!((valid.output, valid.pad), (Hw::square(2), Hw::square(0)));
        // Even total padding split with the odd pixel after: 4 wide, filter 4, stride 1 -> total 3, pad 1.
        let even =
            Window::new(Hw::new(1, 4), Hw::new(1, 4), Hw::square(1), Hw::square(1), Padding::Same).unwrap();
        assert_eq!((even.output.w, even.pad.w), (4, 1));
        // Dilation 2 makes a 3-tap filter span 5.
        let dil =
            Window::new(Hw::square(7), Hw::square(3), Hw::square(1), Hw::square(2), Padding::Valid).unwrap();
        assert_eq!(dil.output, Hw::square(3));
        assert!(
            Window::new(Hw::square(2), Hw::square(3), Hw::square(1), Hw::square(1), Padding::Valid).is_err()
        );
        assert!(
            Window::new(Hw::square(2), Hw::square(3), Hw::square(0), Hw::square(1), Padding::Same).is_err()
        );
    }

    #[test]
    fn tap_ranges() {
        assert_eq!(tap_range(-1, 1, 3, 5), (1, 3));
        assert_eq!(tap_range(3, 1, 3, 5), (0, 2));
        assert_eq!(tap_range(-3, 2, 3, 5), (2, 3));
        assert_eq!(tap_range(-10, 1, 3, 5), (3, 3));
        assert_eq!(tap_range(7, 1, 3, 5), (0, 0));
        assert_eq!(tap_range(0, 2, 3, 4), (0, 2));
        // tap_range_of (its own path for dilation 1) agrees.
        for origin in -6..8 {
            for (filter, size) in [(3, 5), (1, 1), (4, 2), (7, 3)] {
                for dilation in 1..3 {
                    let want = tap_range(origin, dilation, filter, size);
                    assert_eq!(tap_range_of(origin, dilation, filter, size), want);
                }
            }
        }
    }
}
