//! TRANSPOSE_CONV (int8 with per-channel weights and int32 bias, float32): one
//! `nn.transpose_conv.*` step (hostrt-ops) with the parameters TensorFlow Lite Micro's
//! `TransposeConvPrepare` computes (tensorflow/lite/micro/kernels/transpose_conv.cc):
//! padding from `ComputePaddingHeightWidth` over the *output* size (the transposed
//! convention), per-channel multipliers of `input scale * filter scale[c] / output scale` in
//! double (`PopulateConvolutionQuantizationParams`, filter channels along dim 0) and the
//! fused activation's range. int8 sums go to an int32 scratch region of the output's size,
//! as TFLite Micro's scratch buffer.
//!
//! Inputs: 0 the output shape (an int32 constant, which must equal the output's shape),
//! 1 the filter `[out, kh, kw, in]`, 2 the input `[n, h, w, in]`, 3 the optional bias.

use hostrt_dsp::{Hw, Window};

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::super::options::{Options, kind};
use super::{AttrSpec, Lowerer, dense, explicit_pad, ext_dilation, fused, hw, ints, padding};

impl Lowerer<'_, '_> {
    pub(super) fn transpose_conv(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let o = Options::of(op, kind::TRANSPOSE_CONV)?;
        let pad = padding(o.i8(0)?)?;
        let stride = hw(o.i32(2, 0)?, o.i32(1, 0)?, "stride")?;
        let act = fused(o.i8(3)?)?;
        let (shape, f, x, out) =
            (self.input(op, 0)?, self.input(op, 1)?, self.input(op, 2)?, self.output(op)?);
        let bias = op.inputs.get(3).copied().flatten();
        let float = self.t(x).elem == ElemType::F32;
        let elem = if float { ElemType::F32 } else { ElemType::I8 };
        if float && self.t(f).elem == ElemType::I8 {
            return Err("dynamic-range (hybrid) TRANSPOSE_CONV is not supported".into());
        }
        self.expect(x, "input", elem, Some(4))?;
        self.expect(f, "filter", elem, Some(4))?;
        self.expect(out, "output", elem, Some(4))?;
        self.expect(shape, "output shape", ElemType::I32, Some(1))?;
        let (xs, fs, os) = (self.t(x).shape.clone(), self.t(f).shape.clone(), self.t(out).shape.clone());
        let stated: Vec<i64> = self
            .constant(shape, "output shape")?
            .chunks_exact(4)
            .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        if stated != os.iter().map(|&d| d as i64).collect::<Vec<_>>() {
            return Err(format!("the output shape {stated:?} is not the output's {os:?}"));
        }
        if xs[0] != os[0] || fs[3] != xs[3] || fs[0] != os[3] {
            return Err(format!("filter {fs:?} does not fit input {xs:?} and output {os:?}"));
        }
        // TFLite Micro pads as a convolution from the output to the input would
        // (`ComputePaddingHeightWidth` with the output's height and width); where that
        // window has no output, it leaves the padding 0. A translating importer may state
        // the top and left padding and a dilation instead.
        let dil = ext_dilation(&o)?;
        let pad = match explicit_pad(&o) {
            Some(p) => p,
            None => Window::new(Hw::new(os[1], os[2]), Hw::new(fs[1], fs[2]), stride, Hw::square(1), pad)
                .map_or(Hw::new(0, 0), |w| w.pad),
        };
        let window = ints(&[stride.h, stride.w, dil.h, dil.w, pad.h, pad.w].map(|v| v as i32));
        let bias_attr = self.bias(bias, os[3], elem)?;
        let filter = dense(elem.name(), &fs, self.constant(f, "filter")?.to_vec());
        // One int32 per output element (at most 2^31 elements: the model reader checks).
        let scratch = self.t(out).elements() * 4;
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let mut attrs = vec![
            ("bias", AttrSpec::Value(bias_attr)),
            ("filter", AttrSpec::Value(filter)),
            ("input", AttrSpec::Region { tensor: xr, dims: xs }),
        ];
        // Filter channels along dim 0 (`kTransposeConvQuantizedDimension`).
        attrs.extend(self.output_attrs((x, f, out), os, act, 0)?);
        if !float {
            // `scratch` sorts between `quant` and `shifts`.
            let at = attrs.iter().position(|(n, _)| *n == "shifts").unwrap_or(attrs.len());
            attrs.insert(at, ("scratch", AttrSpec::Scratch(scratch)));
        }
        attrs.push(("window", AttrSpec::Value(window)));
        self.push(op, &format!("nn.transpose_conv.{}", elem.name()), out, attrs);
        Ok(())
    }
}
