//! Dynamic-range ("hybrid") FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D: float32 input
//! and output, int8 weights (a scale per output channel or one, zero points 0), float32
//! bias. They lower to the `nn.*.hybrid` kernels (hostrt-ops), which quantize the input
//! batch by batch into a step-local scratch buffer (`AttrSpec::Scratch`) as LiteRT's builtin
//! kernels do: fully connected layers as their `asymmetric_quantize_inputs` option says,
//! convolutions asymmetrically when their filter scales differ (conv.cc's
//! `EvalHybridPerChannel`) and symmetrically when they do not (`EvalHybrid`), depthwise
//! convolutions always asymmetrically (depthwise_conv.cc's `EvalHybridPerChannel`).

use hostrt_compiler::ast::Attr;
use hostrt_dsp::{Activation, Hw, Padding};

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, float_range, floats, ints};

fn quantize_attr(asymmetric: bool) -> AttrSpec {
    AttrSpec::Value(Attr::String(if asymmetric { "asymmetric" } else { "symmetric" }.into()))
}

impl Lowerer<'_, '_> {
    /// The scale of each of the `channels` output channels of int8 weights `f` (quantized
    /// along `axis`, or with one scale).
    fn weight_scales(&self, f: usize, channels: usize, axis: usize) -> Result<Vec<f32>, String> {
        let info = self.t(f);
        let q = info
            .quant
            .as_ref()
            .ok_or_else(|| format!("the int8 weights '{}' have no quantization", info.name))?;
        if q.zero_point.iter().any(|&z| z != 0) {
            return Err(format!("the weights '{}' must have zero points 0 (symmetric int8)", info.name));
        }
        match q.scale.len() {
            1 => Ok(vec![q.scale[0]; channels]),
            n if n == channels && q.axis == axis => Ok(q.scale.clone()),
            n => Err(format!(
                "the weights '{}' have {n} scales along axis {}, expected 1 or {channels} along {axis}",
                info.name, q.axis
            )),
        }
    }

    /// A hybrid FULLY_CONNECTED (`fully_connected` has read its options): each row of the
    /// input is quantized on its own.
    pub(super) fn hybrid_fully_connected(
        &mut self,
        op: &OpInfo<'_>,
        act: Activation,
        asymmetric: bool,
    ) -> Result<(), String> {
        let (x, f, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let bias = op.inputs.get(2).copied().flatten();
        self.expect(x, "input", ElemType::F32, None)?;
        self.expect(f, "weights", ElemType::I8, Some(2))?;
        self.expect(out, "output", ElemType::F32, None)?;
        let fs = self.t(f).shape.clone();
        let (units, depth) = (fs[0], fs[1]);
        let n = self.t(x).elements();
        if depth == 0 || !n.is_multiple_of(depth) {
            return Err(format!("input of {n} elements does not split into rows of {depth}"));
        }
        let batches = n / depth;
        if self.t(out).elements() != batches * units {
            return Err(format!("output {:?} is not {batches}x{units}", self.t(out).shape));
        }
        let scales = self.weight_scales(f, units, 0)?;
        let bias_attr = self.bias(bias, units, ElemType::F32)?;
        let filter = dense("i8", &fs, self.constant(f, "weights")?.to_vec());
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("bias", AttrSpec::Value(bias_attr)),
            ("filter", AttrSpec::Value(filter)),
            ("input", AttrSpec::Region { tensor: xr, dims: vec![batches, depth] }),
            ("output", AttrSpec::Region { tensor: out, dims: vec![batches, units] }),
            ("quantize", quantize_attr(asymmetric)),
            ("range", AttrSpec::Value(floats(&float_range(act)))),
            ("scales", AttrSpec::Value(floats(&scales))),
            ("scratch", AttrSpec::Scratch(depth)),
        ];
        self.push(op, "nn.fully_connected.hybrid", out, attrs);
        Ok(())
    }

    /// A hybrid CONV_2D or DEPTHWISE_CONV_2D (`conv` has read its options): each image of
    /// the batch is quantized on its own.
    pub(super) fn hybrid_conv(
        &mut self,
        op: &OpInfo<'_>,
        depthwise: bool,
        (pad, stride, dil, act): (Padding, Hw, Hw, Activation),
    ) -> Result<(), String> {
        let (x, f, out) = (self.input(op, 0)?, self.input(op, 1)?, self.output(op)?);
        let bias = op.inputs.get(2).copied().flatten();
        self.expect(x, "input", ElemType::F32, Some(4))?;
        self.expect(f, "filter", ElemType::I8, Some(4))?;
        self.expect(out, "output", ElemType::F32, Some(4))?;
        let [xs, fs, os] = self.conv_shapes((x, f, out), depthwise)?;
        let oc = os[3];
        if depthwise {
            // LiteRT's hybrid depthwise kernel takes the multiplier from the options.
            let m = Options::of(op, kind::DEPTHWISE_CONV_2D)?.i32(3, 0)?;
            if usize::try_from(m).ok() != Some(oc / xs[3]) {
                return Err(format!(
                    "depth multiplier {m} does not match {} input and {oc} output channels",
                    xs[3]
                ));
            }
        }
        let w = self.window(&xs, Hw::new(fs[1], fs[2]), stride, dil, pad, &os)?;
        let scales = self.weight_scales(f, oc, if depthwise { 3 } else { 0 })?;
        let asymmetric = depthwise || scales.iter().any(|&s| s != scales[0]);
        let window = ints(&[stride.h, stride.w, dil.h, dil.w, w.pad.h, w.pad.w].map(|v| v as i32));
        let kernel = format!("nn.{}.hybrid", if depthwise { "depthwise_conv_2d" } else { "conv_2d" });
        let bias_attr = self.bias(bias, oc, ElemType::F32)?;
        let filter = dense("i8", &fs, self.constant(f, "filter")?.to_vec());
        let scratch = xs[1] * xs[2] * xs[3];
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let attrs = vec![
            ("bias", AttrSpec::Value(bias_attr)),
            ("filter", AttrSpec::Value(filter)),
            ("input", AttrSpec::Region { tensor: xr, dims: xs }),
            ("output", AttrSpec::Region { tensor: out, dims: os }),
            ("quantize", quantize_attr(asymmetric)),
            ("range", AttrSpec::Value(floats(&float_range(act)))),
            ("scales", AttrSpec::Value(floats(&scales))),
            ("scratch", AttrSpec::Scratch(scratch)),
            ("window", AttrSpec::Value(window)),
        ];
        self.push(op, &kernel, out, attrs);
        Ok(())
    }
}
