//! int8 fully connected layer with per-channel weights: TFLite's
//! `reference_integer_ops::FullyConnectedPerChannel`.

use crate::arch::{InnerLoops, OutputStage, loops};
use crate::error::{DspError, product};
use crate::filled::Filled;
use crate::quant::{ActivationRange, PerChannel, PerChannelParams, ScaleGroup, Sizes, check_per_channel};

/// Shape and quantization of a fully connected layer. Input is `[batches, input_depth]`,
/// filter `[output_depth, input_depth]` (symmetric int8, zero point 0), output
/// `[batches, output_depth]`.
#[derive(Debug, Clone, Copy)]
pub struct FullyConnectedParams {
    /// Rows of input (and output).
    pub batches: usize,
    /// Values per input row (the accumulation depth).
    pub input_depth: usize,
    /// Values per output row (output channels).
    pub output_depth: usize,
    /// Zero point of the input tensor.
    pub input_zero_point: i32,
    /// Zero point of the output tensor.
    pub output_zero_point: i32,
    /// Fused activation clamp.
    pub activation: ActivationRange,
}

impl PerChannelParams for FullyConnectedParams {
    fn output_stage(&self) -> (i32, i32, ActivationRange) {
        (self.input_zero_point, self.output_zero_point, self.activation)
    }

    fn sizes(&self) -> Result<Sizes, DspError> {
        Ok(Sizes {
            input: product(&[self.batches, self.input_depth]),
            filter: product(&[self.output_depth, self.input_depth]),
            output: product(&[self.batches, self.output_depth]),
            channels: self.output_depth,
        })
    }
}

/// The kernel over inner loops `K`.
pub(crate) fn run<K: InnerLoops>(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) -> Result<(), DspError> {
    check_per_channel(p, input, filter, bias, &quant, output)?;
    if p.input_depth == 0 || p.output_depth == 0 {
        // Bias only (or nothing at all).
        for out_row in output.chunks_exact_mut(p.output_depth.max(1)) {
            for (c, out) in out_row.iter_mut().enumerate() {
                let acc = bias.map_or(0, |b| b[c]);
                *out = K::requantize(
                    acc,
                    quant.multiplier[c],
                    quant.shift[c],
                    p.output_zero_point,
                    p.activation,
                );
            }
        }
        return Ok(());
    }
    if K::BLOCKED {
        blocked::<K>(p, input, filter, bias, quant, output);
        return Ok(());
    }
    if K::DSP_LOOPS {
        word_rows::<K>(p, input, filter, bias, quant, output);
        return Ok(());
    }
    let input_offset = -p.input_zero_point;
    let bias = |c: usize| bias.map_or(0, |b| b[c]);
    let out = |acc: i32, c: usize| {
        K::requantize(acc, quant.multiplier[c], quant.shift[c], p.output_zero_point, p.activation)
    };
    let depth = p.input_depth;
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(p.output_depth)) {
        // Two output channels at a time, then the odd one.
        let (pairs, last) = out_row.as_chunks_mut::<2>();
        for (k, pair) in pairs.iter_mut().enumerate() {
            let c = 2 * k;
            let filters = [&filter[c * depth..][..depth], &filter[(c + 1) * depth..][..depth]];
            let acc = K::dot2(in_row, filters, input_offset, [bias(c), bias(c + 1)]);
            *pair = [out(acc[0], c), out(acc[1], c + 1)];
        }
        if let [last] = last {
            let c = p.output_depth - 1;
            *last = out(K::dot(in_row, &filter[c * depth..][..depth], input_offset, bias(c)), c);
        }
    }
    Ok(())
}

/// The DSP word loop (`K::DSP_LOOPS`), for checked arguments with nonzero depths. Each input
/// row of up to [`WORDS_DEPTH`] values is widened once into int16 pairs with the offset
/// added, then four filter rows go per pass of the assembly loop ([`loops::conv_row4`]: 47
/// instructions per 32 products, where `dot2` takes 18 per 8), and the four sums through the
/// output stage as one word ([`ScaleGroup::output_once`]: each channel's scale worked out as
/// it comes, as each is used once per row). Each group's filter rows, bias, scales and
/// outputs are walked in step, so nothing is indexed or bounds-checked per group. The last
/// `depth % 4` values and `output_depth % 4` channels, and every channel of a longer row,
/// take `K::dot`.
fn word_rows<K: InnerLoops>(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (depth, oc_n) = (p.input_depth, p.output_depth);
    let input_offset = -p.input_zero_point;
    let whole = depth / 4 * 4;
    // Rows longer than the buffer (rare on a microcontroller) take `K::dot` per channel.
    let one = whole <= WORDS_DEPTH;
    let mut words = Filled::<u32, { WORDS_DEPTH / 2 }>::new();
    let words = words.reset(if one { whole / 2 } else { 0 }, 0);
    let (zp, act4) = (p.output_zero_point, p.activation.words());
    let bias4 = bias.map(|b| b.as_chunks::<4>().0);
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(oc_n)) {
        let (outs, rest) = if one {
            loops::widen_words(&in_row[..whole], loops::offset_pair(input_offset), words);
            out_row.as_chunks_mut::<4>()
        } else {
            (&mut [][..], out_row)
        };
        let rows = filter.chunks_exact(4 * depth);
        let scales = quant.multiplier.as_chunks::<4>().0.iter().zip(quant.shift.as_chunks::<4>().0);
        let groups = outs.len();
        for (g, ((o, rows), scale)) in outs.iter_mut().zip(rows).zip(scales).enumerate() {
            let mut acc = loops::conv_row4(words, rows, depth, bias4.map_or([0; 4], |b| b[g]));
            if whole < depth {
                acc = loops::tail4::<K>(in_row, rows, (depth, whole), input_offset, acc);
            }
            *o = ScaleGroup::output_once(scale, acc, zp, act4);
        }
        for (k, o) in rest.iter_mut().enumerate() {
            let c = 4 * groups + k;
            let acc = K::dot(in_row, &filter[c * depth..][..depth], input_offset, bias.map_or(0, |b| b[c]));
            *o = K::requantize(acc, quant.multiplier[c], quant.shift[c], zp, p.activation);
        }
    }
}

/// Most input values per row the DSP word loop widens (on the stack, 1280 bytes); longer
/// rows take `K::dot` per channel.
const WORDS_DEPTH: usize = 640;

/// Output channels per run of the blocked loop.
const CHANNEL_RUN: usize = 64;

/// The blocked loop (`K::BLOCKED`), for checked arguments with nonzero depths: runs of
/// [`CHANNEL_RUN`] channels' sums ([`InnerLoops::dot_run`]) through the output stage at once.
fn blocked<K: InnerLoops>(
    p: &FullyConnectedParams,
    input: &[i8],
    filter: &[i8],
    bias: Option<&[i32]>,
    quant: PerChannel<'_>,
    output: &mut [i8],
) {
    let (depth, oc_n) = (p.input_depth, p.output_depth);
    let input_offset = -p.input_zero_point;
    let mut acc = [0i32; CHANNEL_RUN];
    let zeros = [0i32; CHANNEL_RUN];
    for (in_row, out_row) in input.chunks_exact(depth).zip(output.chunks_exact_mut(oc_n)) {
        for c0 in (0..oc_n).step_by(CHANNEL_RUN) {
            let n = (oc_n - c0).min(CHANNEL_RUN);
            let acc = &mut acc[..n];
            let run_bias = match bias {
                Some(b) => &b[c0..][..n],
                None => &zeros[..n],
            };
            // The filters from the run's first to the layer's last: a loop may read past the
            // run's rows (see `InnerLoops::dot_run`).
            K::dot_run(in_row, &filter[c0 * depth..], input_offset, run_bias, acc);
            let stage = OutputStage {
                multiplier: &quant.multiplier[c0..][..n],
                shift: &quant.shift[c0..][..n],
                offset: p.output_zero_point,
                act: p.activation,
            };
            K::requantize_rows(acc, &stage, &mut out_row[c0..], n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{dsp, portable};
    use crate::testutil::{Lcg, Operands, Quant, all_kernels, reference_fc};
    use proptest::prelude::*;
    use std::vec;

    fn params(batches: usize, input_depth: usize, output_depth: usize) -> FullyConnectedParams {
        FullyConnectedParams {
            batches,
            input_depth,
            output_depth,
            input_zero_point: 3,
            output_zero_point: -2,
            activation: ActivationRange::INT8,
        }
    }

    #[test]
    fn known_answer() {
        // One row [1, 2, 3] (zero point 3 -> offsets [-2, -1, 0]), two channels.
        let p = params(1, 3, 2);
        let filter = [1, 1, 1, 2, -1, 5];
        let q = Quant::uniform(0.5, 2);
        let mut out = [0i8; 2];
        portable::fully_connected(&p, &[1, 2, 3], &filter, Some(&[10, -10]), q.get(), &mut out).unwrap();
        // ch0: (-2 - 1 + 0 + 10) * 0.5 = 3.5 -> 4, -2 -> 2; ch1: (-4 + 1 + 0 - 10) * 0.5 = -6.5 -> -6 (half up), -2 -> -8.
        assert_eq!(out, [2, -8]);
    }

    #[test]
    fn bad_lengths_are_errors() {
        let p = params(2, 3, 4);
        let quant = Quant::uniform(0.5, 4);
        let q = quant.get();
        let (input, filter, mut out) = ([0i8; 6], [0i8; 12], [0i8; 8]);
        assert!(portable::fully_connected(&p, &input, &filter, None, q, &mut out).is_ok());
        assert!(matches!(
            portable::fully_connected(&p, &input[..5], &filter, None, q, &mut out),
            Err(DspError::Length { what: "input", .. })
        ));
        assert!(dsp::fully_connected(&p, &input, &filter[..11], None, q, &mut out).is_err());
        assert!(dsp::fully_connected(&p, &input, &filter, Some(&[0; 3]), q, &mut out).is_err());
        assert!(dsp::fully_connected(&p, &input, &filter, None, q, &mut out[..7]).is_err());
        let short = PerChannel { multiplier: &quant.multiplier[..3], shift: &quant.shift };
        assert!(dsp::fully_connected(&p, &input, &filter, None, short, &mut out).is_err());
        let huge = FullyConnectedParams { batches: usize::MAX, ..p };
        assert_eq!(dsp::fully_connected(&huge, &input, &filter, None, q, &mut out), Err(DspError::Overflow));
        let bad_zp = FullyConnectedParams { input_zero_point: 128, ..p };
        assert!(dsp::fully_connected(&bad_zp, &input, &filter, None, q, &mut out).is_err());
        let zero = FullyConnectedParams { input_depth: 0, ..p };
        assert!(portable::fully_connected(&zero, &[], &[], Some(&[1, 2, 3, 4]), q, &mut out).is_ok());
    }

    proptest! {
        #[test]
        fn dsp_and_portable_are_bit_exact(
            batches in 1usize..4,
            // Rows past 640 values take the DSP loop's per-channel path.
            input_depth in prop_oneof![4 => 1usize..70, 1 => 636usize..650],
            output_depth in prop_oneof![1usize..9, 60usize..140],
            izp in -128i32..=127, ozp in -128i32..=127, seed: u64, act_lo in -128i32..=0, with_bias: bool,
        ) {
            let ops = Operands::random(seed, batches * input_depth, output_depth * input_depth, output_depth, 50_000);
            let p = FullyConnectedParams {
                input_zero_point: izp, output_zero_point: ozp,
                activation: ActivationRange::new(act_lo, 127 + act_lo / 2).unwrap(),
                ..params(batches, input_depth, output_depth)
            };
            let mut kernels = all_kernels!(fully_connected, fully_connected);
            #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
            kernels.push(crate::arch::avx512::fully_connected);
            ops.assert_bit_exact(&p, with_bias, batches * output_depth, &kernels, reference_fc)?;
        }

        #[test]
        fn approximates_float(input_depth in 1usize..64, output_depth in 1usize..8, seed: u64) {
            let mut rng = Lcg(seed);
            let (in_scale, in_zp, out_scale, out_zp) = (0.05f64, -7i32, 0.2f64, 4i32);
            let input = rng.bytes(input_depth);
            let filter = rng.bytes(output_depth * input_depth);
            let w_scales = rng.scales(output_depth, 0.001, 0.004);
            let quant = Quant::from_scales(in_scale, &w_scales, out_scale);
            let p = FullyConnectedParams {
                input_zero_point: in_zp, output_zero_point: out_zp, activation: ActivationRange::INT8,
                ..params(1, input_depth, output_depth)
            };
            let mut out = vec![0i8; output_depth];
            crate::fully_connected(&p, &input, &filter, None, quant.get(), &mut out).unwrap();
            for c in 0..output_depth {
                let real: f64 = (0..input_depth)
                    .map(|d| in_scale * f64::from(i32::from(input[d]) - in_zp) * w_scales[c] * f64::from(filter[c * input_depth + d]))
                    .sum();
                let want = (real / out_scale + f64::from(out_zp)).round().clamp(-128.0, 127.0);
                prop_assert!((f64::from(out[c]) - want).abs() <= 1.0, "c={} got {} want {}", c, out[c], want);
            }
        }
    }
}
