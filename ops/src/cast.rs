//! `nn.cast`: converts every element of `input` from one element type to another.
//!
//! Attributes, in name order: `from` (the input's element type: `f32`, `i32`, `i64`, `i8`,
//! `ui8` or `bool`), `input` (`[offset, elements]`), `output` (`[offset, elements]`), `to`
//! (the output's). Floats become integers truncated toward zero and saturated (ONNX leaves
//! out-of-range casts undefined; this never wraps); anything becomes `bool` as `x != 0`.

use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};
use crate::element::{dtype, load, store};

/// `nn.cast`.
pub(crate) fn cast(frame: &KernelFrame<'_>) {
    const K: &str = "nn.cast";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let (from, to) = (dtype(&a, 0, "from")?, dtype(&a, 3, "to")?);
        let (input, output) = (a.region::<1>(1, "input")?, a.region::<1>(2, "output")?);
        if input.dims != output.dims {
            return Err(invalid(K, format_args!("input and output sizes differ")));
        }
        let (inputs, out) = split(K, arena, output.offset, output.byte_len(to.size())?)?;
        let x = inputs.bytes(input.offset, input.byte_len(from.size())?)?;
        for k in 0..input.dims[0] {
            store(to, out, k, load(from, x, k));
        }
        Ok(())
    })
}
