//! Dilated convolutions as the converter writes them: SPACE_TO_BATCH_ND, a VALID stride-1
//! CONV_2D or DEPTHWISE_CONV_2D, BATCH_TO_SPACE_ND with the same block shape. The three are
//! one dilated convolution of the original input with explicit padding (the padded taps are
//! the input's zero point, which contributes nothing), so the importer lowers them as one
//! kernel: no batch-space copies, no padded tensor in the arena.

use std::collections::{HashMap, HashSet};

use hostrt_dsp::Hw;

use super::super::options::{Options, kind};
use super::Lowerer;

/// A convolution folded with the operators around it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Fold {
    /// The SPACE_TO_BATCH_ND input and the BATCH_TO_SPACE_ND output.
    pub input: usize,
    pub output: usize,
    pub dilation: Hw,
    /// Top and left padding of the dilated convolution.
    pub pad: (usize, usize),
}

impl Lowerer<'_, '_> {
    /// Finds the foldable triples among the `live` operators: the folds by convolution
    /// index, and the indices of the batch-space operators they replace.
    pub(super) fn dilated_folds(&self, live: &[bool]) -> (HashMap<usize, Fold>, HashSet<usize>) {
        let g = self.g;
        let mut uses = vec![0usize; g.tensors.len()];
        for op in g.ops.iter().filter(|op| live[op.index]) {
            for t in op.inputs.iter().flatten() {
                uses[*t] += 1;
            }
        }
        for &t in &g.outputs {
            uses[t] += 1;
        }
        let consumer =
            |t: usize| g.ops.iter().find(|op| live[op.index] && op.inputs.first() == Some(&Some(t)));
        let (mut folds, mut skipped) = (HashMap::new(), HashSet::new());
        for s2b in g.ops.iter().filter(|op| live[op.index] && op.code == 38) {
            let found = (|| {
                let (&[Some(x), Some(block), Some(pads)], &[t1]) = (&s2b.inputs[..], &s2b.outputs[..]) else {
                    return None;
                };
                let conv = consumer(t1).filter(|c| uses[t1] == 1 && matches!(c.code, 3 | 4))?;
                let t2 = *conv.outputs.first()?;
                let b2s = consumer(t2).filter(|b| uses[t2] == 1 && b.code == 37 && b.outputs.len() == 1)?;
                let (&[_, Some(block2), Some(crops)], out) = (&b2s.inputs[..], b2s.outputs[0]) else {
                    return None;
                };
                let depthwise = conv.code == 4;
                let o = Options::of(conv, if depthwise { kind::DEPTHWISE_CONV_2D } else { kind::CONV_2D })
                    .ok()?;
                let dil = if depthwise {
                    (o.i32(6, 1).ok()?, o.i32(5, 1).ok()?)
                } else {
                    (o.i32(5, 1).ok()?, o.i32(4, 1).ok()?)
                };
                // VALID, stride 1, no dilation of its own.
                if o.i8(0).ok()? != 1 || (o.i32(2, 0).ok()?, o.i32(1, 0).ok()?) != (1, 1) || dil != (1, 1) {
                    return None;
                }
                let block = self.int_constant(block, "block shape").ok()?;
                if block != self.int_constant(block2, "block shape").ok()? || block.len() != 2 {
                    return None;
                }
                let (p, c) =
                    (self.int_constant(pads, "paddings").ok()?, self.int_constant(crops, "crops").ok()?);
                let (xs, os) = (&self.t(x).shape, &self.t(out).shape);
                let f = &self.t(*conv.inputs.get(1)?.as_ref()?).shape;
                if p.len() != 4 || c.len() != 4 || xs.len() != 4 || os.len() != 4 || f.len() != 4 {
                    return None;
                }
                let same = |a: usize, b: usize| {
                    self.t(a).quant == self.t(b).quant && self.t(a).elem == self.t(b).elem
                };
                let weights_match = self.t(x).elem == self.t(*conv.inputs.get(1)?.as_ref()?).elem;
                if !same(x, t1) || !same(t2, out) || !weights_match {
                    return None;
                }
                // Per spatial axis: the dilated output size must be the cropped one.
                let mut pad = [0usize; 2];
                for k in 0..2 {
                    let (d, before, after) = (block[k], p[2 * k], p[2 * k + 1]);
                    let (cb, ca) = (c[2 * k], c[2 * k + 1]);
                    let taps = f[1 + k] as i64;
                    let full = xs[1 + k] as i64 + before + after - d * (taps - 1);
                    if d < 1 || before < cb || cb < 0 || ca < 0 || full - cb - ca != os[1 + k] as i64 {
                        return None;
                    }
                    pad[k] = usize::try_from(before - cb).ok()?;
                }
                let dilation = Hw::new(usize::try_from(block[0]).ok()?, usize::try_from(block[1]).ok()?);
                Some((conv.index, b2s.index, Fold { input: x, output: out, dilation, pad: (pad[0], pad[1]) }))
            })();
            if let Some((conv, b2s, fold)) = found {
                folds.insert(conv, fold);
                skipped.extend([s2b.index, b2s]);
            }
        }
        (folds, skipped)
    }
}
