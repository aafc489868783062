//! hostrt-dsp on a Cortex-M4F: runs fully_connected, conv2d and depthwise_conv2d through both
//! `portable` and `dsp` (real SMLAD/SXTAB16/SSAT here) on fixed-seed random data and checks
//! they are bit-exact, checks the asm intrinsics against their software emulations, then
//! counts instructions per call of each (QEMU `-icount shift=0`, read through SysTick).
//! Prints `N passed, N failed` over semihosting; exit status 0 only if all passed.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use hostrt_dsp::{
    ActivationRange, ConvParams, DepthwiseParams, DspError, FullyConnectedParams, Hw, MulParams, Nhwc,
    Padding, PerChannel, Window, dsp, emulated, portable,
};
use instructions::Counter;
use panic_semihosting as _;

#[path = "../../../targets/mps2-an386/instructions.rs"]
mod instructions;

const MAX: usize = 4096;

/// Knuth's MMIX LCG with a fixed seed: the same data on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }
    /// All 32 bits (`next` gives 31).
    fn word(&mut self) -> u32 {
        (self.next() << 1) ^ self.next()
    }
    fn fill(&mut self, buf: &mut [i8]) {
        buf.iter_mut().for_each(|b| *b = self.next() as u8 as i8);
    }
    fn quant(&mut self, m: &mut [i32], s: &mut [i32], b: &mut [i32]) {
        for ((m, s), b) in m.iter_mut().zip(s.iter_mut()).zip(b.iter_mut()) {
            *m = (self.next() >> 1) as i32 | (1 << 30);
            *s = -((self.next() % 12) as i32) - 4;
            *b = (self.next() % 20_000) as i32 - 10_000;
        }
    }
    fn zp(&mut self) -> i32 {
        (self.next() % 256) as i32 - 128
    }
}

/// Scratch buffers for one kernel call, and the quantization arrays.
struct Buffers {
    input: [i8; MAX],
    filter: [i8; MAX],
    out_a: [i8; MAX],
    out_b: [i8; MAX],
    mult: [i32; 64],
    shift: [i32; 64],
    bias: [i32; 64],
}

/// One kernel invocation with its shapes.
enum Case {
    Fc(FullyConnectedParams),
    Conv(ConvParams),
    Depthwise(DepthwiseParams),
}

type Kernel<P> = fn(&P, &[i8], &[i8], Option<&[i32]>, PerChannel<'_>, &mut [i8]) -> Result<(), DspError>;

impl Case {
    /// Lengths of input, filter and output, and the number of output channels.
    fn sizes(&self) -> (usize, usize, usize, usize) {
        match self {
            Case::Fc(p) => (
                p.batches * p.input_depth,
                p.output_depth * p.input_depth,
                p.batches * p.output_depth,
                p.output_depth,
            ),
            Case::Conv(p) => {
                let f = p.window.filter;
                let o = p.output_shape();
                (
                    p.input.n * p.input.h * p.input.w * p.input.c,
                    p.output_channels * f.h * f.w * p.input.c,
                    o.n * o.h * o.w * o.c,
                    p.output_channels,
                )
            }
            Case::Depthwise(p) => {
                let f = p.window.filter;
                let o = p.output_shape();
                (p.input.n * p.input.h * p.input.w * p.input.c, f.h * f.w * o.c, o.n * o.h * o.w * o.c, o.c)
            }
        }
    }

    /// Runs the case with `portable` into `out_a`, or with `dsp` into `out_b`.
    fn run(&self, b: &mut Buffers, use_dsp: bool) -> Result<(), DspError> {
        let (i, f, o, c) = self.sizes();
        let q = PerChannel { multiplier: &b.mult[..c], shift: &b.shift[..c] };
        let out = if use_dsp { &mut b.out_b[..o] } else { &mut b.out_a[..o] };
        let (input, filter, bias) = (&b.input[..i], &b.filter[..f], Some(&b.bias[..c]));
        match self {
            Case::Fc(p) => {
                let k: Kernel<_> = if use_dsp { dsp::fully_connected } else { portable::fully_connected };
                k(p, input, filter, bias, q, out)
            }
            Case::Conv(p) => {
                let k: Kernel<_> = if use_dsp { dsp::conv2d } else { portable::conv2d };
                k(p, input, filter, bias, q, out)
            }
            Case::Depthwise(p) => {
                let k: Kernel<_> = if use_dsp { dsp::depthwise_conv2d } else { portable::depthwise_conv2d };
                k(p, input, filter, bias, q, out)
            }
        }
    }
}

fn fc(batches: usize, input_depth: usize, output_depth: usize, rng: &mut Lcg) -> Case {
    fc_in(batches, input_depth, output_depth, ActivationRange::INT8, rng)
}

fn fc_in(
    batches: usize,
    input_depth: usize,
    output_depth: usize,
    act: ActivationRange,
    rng: &mut Lcg,
) -> Case {
    Case::Fc(FullyConnectedParams {
        batches,
        input_depth,
        output_depth,
        input_zero_point: rng.zp(),
        output_zero_point: rng.zp(),
        activation: act,
    })
}

fn window(h: usize, w: usize, f: usize, stride: usize, dilation: usize, padding: Padding) -> Window {
    match Window::new(Hw::new(h, w), Hw::square(f), Hw::square(stride), Hw::square(dilation), padding) {
        Ok(w) => w,
        Err(_) => panic!("bad window"),
    }
}

fn conv(input: Nhwc, oc: usize, win: Window, rng: &mut Lcg) -> Case {
    Case::Conv(ConvParams {
        input,
        output_channels: oc,
        window: win,
        input_zero_point: rng.zp(),
        output_zero_point: rng.zp(),
        activation: ActivationRange::INT8,
    })
}

fn depthwise(input: Nhwc, dm: usize, win: Window, rng: &mut Lcg) -> Case {
    Case::Depthwise(DepthwiseParams {
        input,
        depth_multiplier: dm,
        window: win,
        input_zero_point: rng.zp(),
        output_zero_point: rng.zp(),
        activation: ActivationRange::new(-100, 120).unwrap_or(ActivationRange::INT8),
    })
}

/// Bit-exactness of one case on fresh random data, its scales drawn as `scales` says: 0, all
/// of the one-rounding form; 1, every third channel's shift in -1..=2 (the other form); 2,
/// every channel the same (a per-tensor scale).
fn check(case: &Case, b: &mut Buffers, rng: &mut Lcg, scales: u32) -> bool {
    let (i, f, o, c) = case.sizes();
    if i > MAX || f > MAX || o > MAX || c > 64 {
        return false;
    }
    rng.fill(&mut b.input[..i]);
    rng.fill(&mut b.filter[..f]);
    rng.quant(&mut b.mult[..c], &mut b.shift[..c], &mut b.bias[..c]);
    for k in 0..c {
        match scales {
            1 if k % 3 == 0 => b.shift[k] = (rng.next() % 4) as i32 - 1,
            2 => (b.mult[k], b.shift[k]) = (b.mult[0], b.shift[0]),
            _ => {}
        }
    }
    let ok_a = case.run(b, false).is_ok();
    let ok_b = case.run(b, true).is_ok();
    ok_a && ok_b && b.out_a[..o] == b.out_b[..o]
}

/// The asm intrinsics against the emulated ones on random words.
fn intrinsics_match(rng: &mut Lcg) -> bool {
    use hostrt_dsp::dsp::intrinsics as hw;
    (0..5000).all(|_| {
        let (x, y, a) = (rng.word(), rng.word(), rng.word() as i32);
        hw::smlad(x, y, a) == emulated::smlad(x, y, a)
            && hw::smlabb(x, y, a) == emulated::smlabb(x, y, a)
            && hw::smlatt(x, y, a) == emulated::smlatt(x, y, a)
            && hw::sxtb16(x) == emulated::sxtb16(x)
            && hw::sxtb16_ror8(x) == emulated::sxtb16_ror8(x)
            && hw::sxtab16(y, x) == emulated::sxtab16(y, x)
            && hw::sxtab16_ror8(y, x) == emulated::sxtab16_ror8(y, x)
            && hw::ssat::<8>(a >> (x % 31)) == emulated::ssat::<8>(a >> (x % 31))
    }) && (0..5000).all(|_| {
        // The output stage's instruction sequences: one rounding (a multiplier of 2^30 or
        // more, a shift of 1..=30 after it), and the four-lane clamp.
        let (acc, m, down) =
            (rng.word() as i32 >> (rng.next() % 24), (rng.next() | 1 << 30) as i32, 1 + rng.next() % 30);
        let v = [0, 1, 2, 3].map(|_| rng.word() as i32 >> (20 + rng.next() % 12));
        let (lo, hi) = ((rng.next() % 256) as u8 as i8, (rng.next() % 256) as u8 as i8);
        let bound = |b: i8| u32::from(b as u8) * 0x0101_0101;
        let act = [bound(lo.min(hi)), bound(lo.max(hi))];
        hw::one_rounding(acc, m, 1 << (down - 1), down)
            == emulated::one_rounding(acc, m, 1 << (down - 1), down)
            && hw::clamp4(v, act) == emulated::clamp4(v, act)
    })
}

/// `hostrt_dsp::mul` (four values per word here) against its scalar output stage, on random
/// values, offsets, scales (both output-stage forms) and clamps.
fn mul_matches(rng: &mut Lcg, b: &mut Buffers) -> bool {
    (0..200).all(|_| {
        let n = 1 + (rng.next() % 64) as usize;
        rng.fill(&mut b.input[..n]);
        rng.fill(&mut b.filter[..n]);
        let lo = -((rng.next() % 129) as i32);
        let p = MulParams {
            input_offset: [128 - (rng.next() % 256) as i32, 128 - (rng.next() % 256) as i32],
            output_multiplier: (rng.next() | 1 << 30) as i32,
            output_shift: (rng.next() % 24) as i32 - 20,
            output_offset: rng.zp(),
            activation: ActivationRange::new(lo, 127 + lo / 2).unwrap_or(ActivationRange::INT8),
        };
        let ok = hostrt_dsp::mul(&p, &b.input[..n], &b.filter[..n], &mut b.out_a[..n]).is_ok();
        let (x, y) = (&b.input[..n], &b.filter[..n]);
        ok && b.out_a[..n].iter().zip(x.iter().zip(y)).all(|(&o, (&x, &y))| o == p.output(x, y))
    })
}

/// Instructions per call of `case` on `dsp` or `portable`, averaged over `reps` calls.
fn per_call(case: &Case, b: &mut Buffers, use_dsp: bool, reps: u32, counter: Counter) -> u64 {
    counter.instructions(reps, || {
        let _ = case.run(b, use_dsp);
    })
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else { exit(false) };
    instructions::start(peripherals.SYST);

    let mut rng = Lcg(0x5EED_D5B0_0000_0001);
    let mut b = Buffers {
        input: [0; MAX],
        filter: [0; MAX],
        out_a: [0; MAX],
        out_b: [0; MAX],
        mult: [0; 64],
        shift: [0; 64],
        bias: [0; 64],
    };
    let (mut passed, mut failed) = (0u32, 0u32);
    let mut report = |name: &str, ok: bool| {
        if ok {
            passed += 1;
        } else {
            failed += 1;
        }
        hprintln!("test {} ... {}", name, if ok { "ok" } else { "FAILED" });
    };
    report("intrinsics_asm_eq_emulated", intrinsics_match(&mut rng));
    hprintln!("dsp path uses DSP instructions: {}", hostrt_dsp::USES_DSP_INSTRUCTIONS);
    report("uses_dsp_instructions", hostrt_dsp::USES_DSP_INSTRUCTIONS);

    let narrow = ActivationRange::new(-40, 50).unwrap_or(ActivationRange::INT8);
    let cases: [(&str, Case); 14] = [
        ("fc_1x64_10", fc(1, 64, 10, &mut rng)),
        // Odd and even counts of four-value blocks, a narrow clamp on both sides.
        ("fc_1x36_8_narrow", fc_in(1, 36, 8, narrow, &mut rng)),
        ("fc_1x40_12_narrow", fc_in(1, 40, 12, narrow, &mut rng)),
        // Past the 640 values the word loop widens: per channel.
        ("fc_1x643_5", fc(1, 643, 5, &mut rng)),
        ("fc_2x37_7", fc(2, 37, 7, &mut rng)),
        ("fc_1x255_3", fc(1, 255, 3, &mut rng)),
        ("conv_8x8x3_8_same", conv(Nhwc::new(1, 8, 8, 3), 8, window(8, 8, 3, 1, 1, Padding::Same), &mut rng)),
        (
            "conv_7x7x5_4_valid_s2",
            conv(Nhwc::new(1, 7, 7, 5), 4, window(7, 7, 3, 2, 1, Padding::Valid), &mut rng),
        ),
        (
            "conv_9x9x4_3_same_d2",
            conv(Nhwc::new(1, 9, 9, 4), 3, window(9, 9, 3, 1, 2, Padding::Same), &mut rng),
        ),
        // Pointwise: two pixels per pass (an odd last one), then four-channel groups and a
        // rest of channels alone.
        (
            "conv_5x5x24_12_1x1",
            conv(Nhwc::new(1, 5, 5, 24), 12, window(5, 5, 1, 1, 1, Padding::Valid), &mut rng),
        ),
        (
            "conv_3x4x16_6_1x1",
            conv(Nhwc::new(1, 3, 4, 16), 6, window(3, 4, 1, 1, 1, Padding::Valid), &mut rng),
        ),
        (
            "dw_8x8x16_same",
            depthwise(Nhwc::new(1, 8, 8, 16), 1, window(8, 8, 3, 1, 1, Padding::Same), &mut rng),
        ),
        (
            "dw_7x7x5_valid",
            depthwise(Nhwc::new(1, 7, 7, 5), 1, window(7, 7, 3, 1, 1, Padding::Valid), &mut rng),
        ),
        (
            "dw_5x5x3_m2_same_s2",
            depthwise(Nhwc::new(1, 5, 5, 3), 2, window(5, 5, 3, 2, 1, Padding::Same), &mut rng),
        ),
    ];
    report("mul_words_eq_scalar", mul_matches(&mut rng, &mut b));
    for (name, case) in &cases {
        let ok = (0..3).all(|scales| check(case, &mut b, &mut rng, scales));
        report(name, ok);
    }

    let calibration = instructions::calibrate();
    hprintln!("SysTick ticks per 2,000,000 instructions: {}", calibration.ticks_per_2m);
    let bench: [(&str, Case, u32); 3] = [
        ("fully_connected 1x128->32", fc(1, 128, 32, &mut rng), 20),
        (
            "conv2d 16x16x8->16 3x3 same",
            conv(Nhwc::new(1, 16, 16, 8), 16, window(16, 16, 3, 1, 1, Padding::Same), &mut rng),
            1,
        ),
        (
            "depthwise 16x16x16 3x3 same",
            depthwise(Nhwc::new(1, 16, 16, 16), 1, window(16, 16, 3, 1, 1, Padding::Same), &mut rng),
            2,
        ),
    ];
    for (name, case, reps) in &bench {
        let ok = check(case, &mut b, &mut rng, 0);
        report(name, ok);
        if !ok {
            continue;
        }
        let p = per_call(case, &mut b, false, *reps, calibration);
        let d = per_call(case, &mut b, true, *reps, calibration);
        hprintln!(
            "bench {}: portable {} instr/call, dsp {} instr/call, dsp/portable {}.{:03}",
            name,
            p,
            d,
            d / p.max(1),
            (d * 1000 / p.max(1)) % 1000
        );
    }
    hprintln!("{} passed, {} failed", passed, failed);
    exit(failed == 0)
}

/// Report the outcome to QEMU (semihosting exit status).
fn exit(success: bool) -> ! {
    debug::exit(if success { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    loop {
        cortex_m::asm::wfi();
    }
}
