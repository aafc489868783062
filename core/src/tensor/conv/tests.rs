extern crate std;
use std::vec;
use std::vec::Vec;

use super::*;

/// The definition, in f64: out[b, oy, ox, o] = Σ x[b, oy·sh + ky·dh − top, ox·sw + kx·dw −
/// left, i] · f[ky, kx, i, o] over the taps inside the input.
fn naive(p: &Conv2dParams, x: &[f32], f: &[f32]) -> Vec<f32> {
    let [_, h, w, c] = p.input;
    let [kh, kw, _, co] = p.filter;
    let [n, oh, ow, _] = p.output;
    let mut out = Vec::new();
    for b in 0..n {
        for oy in 0..oh {
            for ox in 0..ow {
                for o in 0..co {
                    let mut s = 0.0f64;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let (iy, ix) = (
                                oy * p.strides[0] + ky * p.dilations[0] - p.padding[0],
                                ox * p.strides[1] + kx * p.dilations[1] - p.padding[2],
                            );
                            if iy < 0 || iy >= h || ix < 0 || ix >= w {
                                continue;
                            }
                            for i in 0..c {
                                let xv = x[(((b * h + iy) * w + ix) * c + i) as usize];
                                let fv = f[(((ky * kw + kx) * c + i) * co + o) as usize];
                                s += f64::from(xv) * f64::from(fv);
                            }
                        }
                    }
                    out.push(s as f32);
                }
            }
        }
    }
    out
}

fn data(len: i64, seed: usize) -> Vec<f32> {
    (0..len as usize).map(|i| ((i * 7 + seed * 13) % 23) as f32 / 8.0 - 1.25).collect()
}

fn close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{what}: element {i}: {g} vs {w}");
    }
}

/// Input dims, filter dims, padding, strides.
type Geometry = ([i64; 4], [i64; 4], &'static str, [i64; 2]);

#[test]
fn every_algorithm_agrees_with_the_definition() {
    let geometries: &[Geometry] = &[
        ([1, 5, 5, 1], [3, 3, 1, 2], "same", [1, 1]),
        ([2, 6, 7, 3], [3, 3, 3, 4], "same", [2, 2]),
        ([1, 7, 6, 2], [3, 2, 2, 3], "valid", [2, 1]),
        ([1, 9, 9, 2], [5, 5, 2, 1], "SAME", [3, 2]),
        ([2, 4, 4, 5], [1, 1, 5, 3], "same", [1, 1]),
        ([1, 5, 5, 2], [1, 1, 2, 2], "valid", [2, 2]),
        ([1, 2, 3, 1], [4, 4, 1, 1], "same", [1, 1]),
        ([1, 8, 8, 3], [7, 7, 3, 2], "Same", [2, 2]),
    ];
    // Miri interprets every multiply: three geometries (pointwise among them) keep it short.
    let geometries = if cfg!(miri) { &geometries[2..5] } else { geometries };
    for (g, &(input, filter, padding, strides)) in geometries.iter().enumerate() {
        let p = Conv2dParams::new(input, filter, padding, strides).unwrap();
        let x = data(input.iter().product(), g);
        let f = data(filter.iter().product(), g + 1);
        let want = naive(&p, &x, &f);
        let len = want.len();
        let row = (filter[0] * filter[1] * filter[2]) as usize;
        let mut direct = vec![7.0; len];
        conv2d_direct(&p, &x, &f, &mut direct, &mut |_| {});
        close(&direct, &want, &std::format!("direct {g}"));
        for pixels in if cfg!(miri) { &[3][..] } else { &[1, 3, usize::MAX][..] } {
            let pixels = *pixels;
            let mut scratch = vec![9.0; p.scratch_len(pixels).max(row)];
            let mut im2col = vec![7.0; len];
            conv2d_im2col(&p, &x, &f, &mut im2col, &mut scratch, &mut |_| {});
            close(&im2col, &want, &std::format!("im2col {g} in blocks of {pixels}"));
            let mut chosen = vec![7.0; len];
            conv2d(&p, &x, &f, &mut chosen, &mut scratch, &mut |_| {});
            close(&chosen, &want, &std::format!("conv2d {g}"));
        }
        // No scratch at all: conv2d goes direct.
        let mut chosen = vec![7.0; len];
        conv2d(&p, &x, &f, &mut chosen, &mut [], &mut |_| {});
        close(&chosen, &want, &std::format!("conv2d {g} without scratch"));
    }
}

#[test]
fn dilated_taps_agree_with_the_definition() {
    // 3×2 taps spread 2 rows and 3 columns apart, stride 1×2, padding 2 rows and 1 column.
    let p = Conv2dParams {
        input: [1, 9, 8, 2],
        filter: [3, 2, 2, 3],
        output: [1, 9, 4, 3],
        strides: [1, 2],
        dilations: [2, 3],
        padding: [2, 2, 1, 1],
    };
    let (x, f) = (data(9 * 8 * 2, 1), data(3 * 2 * 2 * 3, 2));
    let want = naive(&p, &x, &f);
    let mut direct = vec![7.0; want.len()];
    conv2d_direct(&p, &x, &f, &mut direct, &mut |_| {});
    close(&direct, &want, "direct");
    // The dispatcher takes the direct path for dilated taps even with scratch to spare.
    let mut any = vec![7.0; want.len()];
    conv2d(&p, &x, &f, &mut any, &mut [0.0; 1024], &mut |_| {});
    close(&any, &want, "conv2d");
}

#[test]
fn the_epilogue_sees_each_output_pixel_once_whole() {
    let p = Conv2dParams::new([2, 5, 4, 2], [3, 3, 2, 3], "same", [2, 1]).unwrap();
    let (x, f) = (data(80, 1), data(54, 2));
    let want: Vec<f32> = naive(&p, &x, &f).iter().map(|v| v + 100.0).collect();
    for &scratch_pixels in if cfg!(miri) { &[0, 4][..] } else { &[0, 1, 4, 1000][..] } {
        let mut scratch = vec![0.0; p.scratch_len(scratch_pixels)];
        let mut out = vec![0.0; want.len()];
        let mut seen = 0;
        conv2d(&p, &x, &f, &mut out, &mut scratch, &mut |block| {
            assert_eq!(block.len() % 3, 0, "blocks hold whole pixels");
            seen += block.len();
            block.iter_mut().for_each(|v| *v += 100.0);
        });
        assert_eq!(seen, want.len());
        close(&out, &want, "epilogue");
    }
}

#[test]
fn no_input_channels_give_zeros_through_the_epilogue() {
    let p = Conv2dParams::new([1, 2, 2, 0], [1, 2, 0, 3], "same", [1, 1]).unwrap();
    let mut out = [5.0; 12];
    conv2d(&p, &[], &[], &mut out, &mut [], &mut |b| b.iter_mut().for_each(|v| *v += 1.0));
    assert_eq!(out, [1.0; 12]);
}

#[test]
#[should_panic(expected = "conv2d operands do not match their shapes")]
fn short_operands_panic_before_reading() {
    let p = Conv2dParams::new([1, 3, 3, 1], [2, 2, 1, 1], "valid", [1, 1]).unwrap();
    conv2d_direct(&p, &[0.0; 8], &[0.0; 4], &mut [0.0; 4], &mut |_| {});
}

#[test]
fn geometry_follows_tensorflow() {
    // TensorFlow's SAME: out = ceil(in / s), the odd padding row goes after.
    let p = Conv2dParams::new([1, 7, 8, 1], [3, 5, 1, 1], "same", [2, 3]).unwrap();
    assert_eq!(p.output, [1, 4, 3, 1]);
    assert_eq!(p.padding, [1, 1, 1, 2]);
    let p = Conv2dParams::new([3, 7, 8, 2], [3, 4, 2, 5], "VALID", [2, 3]).unwrap();
    assert_eq!((p.output, p.padding), ([3, 3, 2, 5], [0; 4]));
    assert!(Conv2dParams::new([1, 1, 1, 1], [1, 1, 1, 1], "same", [1, 1]).unwrap().is_pointwise());
    assert!(!Conv2dParams::new([1, 2, 2, 1], [1, 1, 1, 1], "same", [2, 1]).unwrap().is_pointwise());
    // Extreme dims neither overflow nor panic.
    let p =
        Conv2dParams::new([0, i64::MAX, i64::MAX, 1], [i64::MAX, 1, 1, 1], "same", [i64::MAX, 1]).unwrap();
    assert_eq!(p.output[1], 1);
    assert_eq!(p.scratch_len(usize::MAX), 0);
}

#[test]
fn rejections_carry_tfrt_messages() {
    let msg = |input, filter, padding, strides| {
        std::string::ToString::to_string(&Conv2dParams::new(input, filter, padding, strides).unwrap_err())
    };
    assert_eq!(msg([1, 4, 4, 1], [3, 3, 1, 1], "full", [1, 1]), "Unknown padding type full");
    assert_eq!(
        msg([1, 4, 4, 1], [3, 3, 1, 1], "Explicit", [1, 1]),
        "For explicit padding, padding values must be defined"
    );
    assert_eq!(
        msg([1, 4, 4, 3], [3, 3, 2, 1], "same", [1, 1]),
        "Dimensions does not match: input channels is 3 and kernel depth is 2"
    );
    assert_eq!(msg([1, 4, 4, 1], [3, 3, 1, 1], "same", [1, 0]), "Stride must be > 0, but got 0");
    assert_eq!(msg([1, 4, 4, 1], [3, 3, 1, 1], "same", [-2, 1]), "Stride must be > 0, but got -2");
    assert_eq!(
        msg([1, 4, 4, 1], [7, 3, 1, 1], "valid", [1, 1]),
        "Computed output size would be negative: -2 (input_size: 4, filter_size: 7, stride: 1, dilation: 1)"
    );
}
