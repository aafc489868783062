//! SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND on their own (a dilated convolution's pair is
//! folded first, dilated.rs): `nn.space_to_batch_nd` and `nn.batch_to_space_nd`, int8 or
//! float32, 4-D NHWC with two block dims or 3-D `[batch, spatial, channels]` with one (run
//! as NHWC with `w = 1`, as TensorFlow Lite's reference kernels do). The block shape and
//! the paddings or crops are constant tensors; the output shape must be the one they give.
//! int8 data is moved without rescaling, so input and output must share their
//! quantization (TensorFlow Lite requires it), and padding is the zero point.

use super::super::model::OpInfo;
use super::super::ops::ElemType;
use super::{AttrSpec, Lowerer, dense, ints};

/// What differs between the two operators' checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    /// SPACE_TO_BATCH_ND: pixels padded, then blocks become batches.
    ToBatch,
    /// BATCH_TO_SPACE_ND: batches become blocks, then cropped.
    ToSpace,
}

/// A checked operator as the kernel takes it: the NHWC shapes of its input and output,
/// the block and the top/left padding or crop.
struct Plan {
    input: Vec<usize>,
    output: Vec<usize>,
    block: [i32; 2],
    offset: [i32; 2],
}

/// The 4-D NHWC form of a 3-D or 4-D shape.
fn nhwc(shape: &[usize]) -> Vec<usize> {
    match *shape {
        [n, h, c] => vec![n, h, 1, c],
        _ => shape.to_vec(),
    }
}

impl Lowerer<'_, '_> {
    pub(super) fn batch_space(&mut self, op: &OpInfo<'_>) -> Result<(), String> {
        let dir = if op.code == 38 { Direction::ToBatch } else { Direction::ToSpace };
        let (x, out) = (self.input(op, 0)?, self.output(op)?);
        self.same_kind(x, out)?;
        let elem = self.t(x).elem;
        if !matches!(elem, ElemType::F32 | ElemType::I8) {
            return Err(format!("{} data is not supported (float32 and int8 are)", elem.name()));
        }
        let what = if dir == Direction::ToBatch { "paddings" } else { "crops" };
        let block = self.int_constant(self.input(op, 1)?, "block shape")?;
        let edges = self.int_constant(self.input(op, 2)?, what)?;
        let p = self.batch_space_plan(dir, (x, out), &block, &edges, what)?;
        let size = elem.size();
        let loc = self.loc(op);
        let xr = self.read(x, &loc);
        let (input, output) = (
            AttrSpec::Region { tensor: xr, dims: p.input },
            AttrSpec::Region { tensor: out, dims: p.output },
        );
        let size_attr = AttrSpec::Value(ints(&[size as i32]));
        let attrs = match dir {
            Direction::ToBatch => {
                let value = match elem {
                    ElemType::I8 => vec![self.quant(out, "output")?.1 as i8 as u8],
                    _ => vec![0; size],
                };
                vec![
                    ("block", AttrSpec::Value(ints(&p.block))),
                    ("input", input),
                    ("output", output),
                    ("pad", AttrSpec::Value(ints(&p.offset))),
                    ("size", size_attr),
                    ("value", AttrSpec::Value(dense(elem.name(), &[1], value))),
                ]
            }
            Direction::ToSpace => vec![
                ("block", AttrSpec::Value(ints(&p.block))),
                ("crop", AttrSpec::Value(ints(&p.offset))),
                ("input", input),
                ("output", output),
                ("size", size_attr),
            ],
        };
        let kernel = if dir == Direction::ToBatch { "nn.space_to_batch_nd" } else { "nn.batch_to_space_nd" };
        self.push(op, kernel, out, attrs);
        Ok(())
    }

    /// Checks the shapes against the block and the paddings or crops (`[before, after]` per
    /// spatial dim) and gives them in the kernel's NHWC form.
    fn batch_space_plan(
        &self,
        dir: Direction,
        (x, out): (usize, usize),
        block: &[i64],
        edges: &[i64],
        what: &str,
    ) -> Result<Plan, String> {
        let (xs, os) = (self.t(x).shape.clone(), self.t(out).shape.clone());
        let spatial = xs.len().saturating_sub(2);
        if !matches!(xs.len(), 3 | 4) || os.len() != xs.len() {
            return Err(format!(
                "input {xs:?} and output {os:?} must both be 4-D NHWC or 3-D [batch, spatial, channels]"
            ));
        }
        if block.len() != spatial || edges.len() != 2 * spatial {
            return Err(format!(
                "block shape {block:?} and {what} {edges:?} do not match {spatial} spatial dims"
            ));
        }
        let limit = 1i64 << 16;
        if block.iter().any(|b| !(1..=limit).contains(b)) || edges.iter().any(|e| !(0..=limit).contains(e)) {
            return Err(format!(
                "block shape {block:?} must be in 1..=65536 and {what} {edges:?} in 0..=65536"
            ));
        }
        // Sizes on the space side and the batch side: the space side's rows, padded or
        // cropped, are the batch side's times the block.
        let (space, batched) = if dir == Direction::ToBatch { (&xs, &os) } else { (&os, &xs) };
        let mut want = vec![0i64; xs.len()];
        let blocks: i64 = block.iter().product();
        let dims = |s: &[usize]| s.iter().map(|&d| d as i64).collect::<Vec<i64>>();
        let (space, batched) = (dims(space), dims(batched));
        let mismatch = || {
            format!("output {os:?} is not what input {xs:?}, block shape {block:?} and {what} {edges:?} give")
        };
        match dir {
            Direction::ToBatch => {
                want[0] = space[0].checked_mul(blocks).ok_or_else(mismatch)?;
                for k in 0..spatial {
                    let padded = space[1 + k] + edges[2 * k] + edges[2 * k + 1];
                    if padded % block[k] != 0 {
                        return Err(format!(
                            "spatial dim {k} padded to {padded} is not a multiple of block {}",
                            block[k]
                        ));
                    }
                    want[1 + k] = padded / block[k];
                }
                want[spatial + 1] = space[spatial + 1];
                if want != batched {
                    return Err(mismatch());
                }
            }
            Direction::ToSpace => {
                if batched[0] % blocks != 0 {
                    return Err(format!("{} batches do not divide into blocks of {blocks}", batched[0]));
                }
                want[0] = batched[0] / blocks;
                for k in 0..spatial {
                    let full = batched[1 + k].checked_mul(block[k]).ok_or_else(mismatch)?;
                    want[1 + k] = full - edges[2 * k] - edges[2 * k + 1];
                }
                want[spatial + 1] = batched[spatial + 1];
                if want != space {
                    return Err(mismatch());
                }
            }
        }
        let pair = |v: [i64; 2]| v.map(|d| d as i32);
        let (block, offset) = if spatial == 2 {
            (pair([block[0], block[1]]), pair([edges[0], edges[2]]))
        } else {
            (pair([block[0], 1]), pair([edges[0], 0]))
        };
        Ok(Plan { input: nhwc(&xs), output: nhwc(&os), block, offset })
    }
}

#[cfg(test)]
mod tests {
    use hostrt_compiler::ast::Op;

    use super::super::super::model::{Graph, Quant};
    use super::super::super::ops::ElemType;
    use super::super::testing::{self, attr, int_at, kernel, run};
    use super::super::{dense, ints, lower};

    fn model(name: &str) -> Vec<u8> {
        testing::model(&format!("{name}.tflite"))
    }

    /// The kernels the import chose for operator `name` (empty if it has no step).
    fn kernels(name: &str, op: &str) -> String {
        let imported = crate::tflite(&model(name)).expect("imports");
        imported.report.ops.get(op).map(|(_, k)| k.clone()).unwrap_or_default()
    }

    #[test]
    fn dilated_convolutions_still_fold_and_other_pairs_run_on_their_own() {
        for name in ["conv_dilated_nobias_i8", "depthwise_dilated_f32"] {
            assert_eq!(kernels(name, "SPACE_TO_BATCH_ND"), "", "{name}");
            assert_eq!(kernels(name, "BATCH_TO_SPACE_ND"), "", "{name}");
        }
        for name in ["space_batch_2d_i8", "space_batch_1d_f32"] {
            assert_eq!(kernels(name, "SPACE_TO_BATCH_ND"), "nn.space_to_batch_nd", "{name}");
            assert_eq!(kernels(name, "BATCH_TO_SPACE_ND"), "nn.batch_to_space_nd", "{name}");
        }
    }

    #[test]
    fn lowering_refuses_what_the_kernels_cannot_run() {
        let bytes = model("space_batch_2d_i8");
        let g = Graph::read(&bytes).expect("reads");
        let s2b = g.ops.iter().position(|op| op.code == 38).expect("SPACE_TO_BATCH_ND");
        let b2s = g.ops.iter().position(|op| op.code == 37).expect("BATCH_TO_SPACE_ND");
        type Mutation = (&'static str, &'static str, fn(&mut Graph<'_>, [usize; 2]));
        let mutations: &[Mutation] = &[
            ("SPACE_TO_BATCH_ND", "quantized differently", |g, [s2b, _]| {
                let out = g.ops[s2b].outputs[0];
                g.tensors[out].quant = Some(Quant { scale: vec![0.5], zero_point: vec![0], axis: 0 });
            }),
            ("SPACE_TO_BATCH_ND", "not a constant", |g, [s2b, _]| {
                let block = g.ops[s2b].inputs[1].expect("block");
                g.tensors[block].data = None;
            }),
            ("SPACE_TO_BATCH_ND", "must be in 1..=65536", |g, [s2b, _]| {
                let block = g.ops[s2b].inputs[1].expect("block");
                g.tensors[block].data = Some(&[0, 0, 0, 0, 3, 0, 0, 0]);
            }),
            ("SPACE_TO_BATCH_ND", "not a multiple of block 2", |g, [s2b, _]| {
                let x = g.ops[s2b].inputs[0].expect("input");
                g.tensors[x].shape = vec![1, 6, 4, 3];
            }),
            ("SPACE_TO_BATCH_ND", "is not what input", |g, [s2b, _]| {
                let out = g.ops[s2b].outputs[0];
                g.tensors[out].shape = vec![6, 4, 2, 4];
            }),
            ("SPACE_TO_BATCH_ND", "i32 data is not supported", |g, [s2b, _]| {
                let (x, out) = (g.ops[s2b].inputs[0].expect("input"), g.ops[s2b].outputs[0]);
                g.tensors[x].elem = ElemType::I32;
                g.tensors[out].elem = ElemType::I32;
            }),
            ("BATCH_TO_SPACE_ND", "do not divide into blocks of 8", |g, [_, b2s]| {
                let block = g.ops[b2s].inputs[1].expect("block");
                g.tensors[block].data = Some(&[4, 0, 0, 0, 2, 0, 0, 0]);
            }),
            ("BATCH_TO_SPACE_ND", "must both be 4-D", |g, [_, b2s]| {
                let out = g.ops[b2s].outputs[0];
                g.tensors[out].shape = vec![1, 9, 3, 4, 1];
            }),
            ("BATCH_TO_SPACE_ND", "do not match 2 spatial dims", |g, [_, b2s]| {
                let crops = g.ops[b2s].inputs[2].expect("crops");
                g.tensors[crops].data = Some(&[1, 0, 0, 0, 2, 0, 0, 0]);
            }),
        ];
        for (op, what, mutate) in mutations {
            let mut g = g.clone();
            mutate(&mut g, [s2b, b2s]);
            let e = lower(&g, Default::default()).expect_err(what).to_string();
            assert!(e.contains(op) && e.contains(what), "{what}: {e}");
        }
    }

    #[test]
    fn kernels_refuse_bad_attributes() {
        type Mutation = (&'static str, &'static str, fn(&mut Op));
        let mutations: &[Mutation] = &[
            ("nn.space_to_batch_nd", "one 4-byte element", |op| {
                *attr(op, "value") = dense("f32", &[2], vec![0; 8])
            }),
            ("nn.space_to_batch_nd", "do not fit blocks [2, 2]", |op| *attr(op, "block") = ints(&[2, 2])),
            ("nn.space_to_batch_nd", "offsets [-1, 0]", |op| *attr(op, "pad") = ints(&[-1, 0])),
            ("nn.space_to_batch_nd", "element size 3", |op| *attr(op, "size") = ints(&[3])),
            ("nn.space_to_batch_nd", "overlaps the output", |op| {
                let (at, dims) = (int_at(attr(op, "output"), 0), [1, 5, 4, 3]);
                *attr(op, "input") = ints(&[at, dims[0], dims[1], dims[2], dims[3]]);
            }),
            ("nn.space_to_batch_nd", "outside the arena", |op| {
                *attr(op, "output") = ints(&[1 << 20, 6, 4, 2, 3])
            }),
            ("nn.batch_to_space_nd", "do not fit blocks [3, 2] with offsets [4, 0]", |op| {
                *attr(op, "crop") = ints(&[4, 0])
            }),
            ("nn.batch_to_space_nd", "'crop' must be an array of 2", |op| *attr(op, "crop") = ints(&[1])),
        ];
        let imported = crate::tflite(&model("space_batch_2d_f32")).expect("imports");
        assert!(run(&imported.module, "space_batch_2d_f32").is_ok());
        for (name, what, mutate) in mutations {
            let mut module = imported.module.clone();
            mutate(kernel(&mut module, name));
            let e = run(&module, "space_batch_2d_f32").expect_err(what);
            assert!(e.contains(name) && e.contains(what), "{what}: {e}");
        }
    }
}
