//! This crate's side of prepared state (docs/execution.md, "Prepared state"): a kernel keeps
//! a `#[repr(C)]` record of what it decoded from a use's attributes, which hostrt-core holds
//! as bytes, with the weights and tables it reads as [`Part`]s of the program's bytes.

use bytemuck::{Pod, Zeroable};
use hostrt_core::Diagnostic;
use hostrt_core::kernel::{KernelFrame, PrepareInput, Prepared, Span};
use hostrt_dsp::PerChannel;

use crate::attrs::invalid;

/// A part of the program's bytes holding values of one type, as a record keeps it.
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct Part {
    start: u32,
    len: u32,
}

impl Part {
    /// Where `values` (attribute data of the use being prepared) lie; `None` outside the
    /// program, which leaves the use unprepared.
    pub fn of<T: Pod>(input: &PrepareInput<'_>, values: &[T]) -> Option<Part> {
        let Span { start, len } = input.span_of(bytemuck::cast_slice(values))?;
        Some(Part { start, len })
    }

    /// The values back, from the program bytes of `frame`'s prepared state.
    #[inline(always)]
    pub fn get<'a, T: Pod>(self, frame: &KernelFrame<'a>, kernel: &str) -> Result<&'a [T], Diagnostic> {
        let bytes = frame.span(Span { start: self.start, len: self.len });
        match bytes.and_then(|b| bytemuck::try_cast_slice(b).ok()) {
            Some(values) => Ok(values),
            None => Err(invalid(kernel, format_args!("prepared state names bytes outside the program"))),
        }
    }
}

/// `record` as a prepared block (`None` when it is larger than one, which leaves the use
/// unprepared).
pub(crate) fn keep<T: Pod>(record: &T) -> Option<Prepared> {
    Prepared::new(bytemuck::bytes_of(record))
}

/// The record of type `T` a kernel's prepare function kept in `p`.
#[inline(always)]
pub(crate) fn record<T: Pod>(p: &Prepared) -> Option<&T> {
    bytemuck::try_from_bytes(p.bytes().get(..size_of::<T>())?).ok()
}

/// `values` as a record's 32-bit words (`None`, leaving the use unprepared, for one above
/// `u32::MAX`).
pub(crate) fn words<const N: usize>(values: [usize; N]) -> Option<[u32; N]> {
    let mut out = [0u32; N];
    for (o, v) in out.iter_mut().zip(values) {
        *o = u32::try_from(v).ok()?;
    }
    Some(out)
}

/// A record's words back as sizes.
#[inline(always)]
pub(crate) fn sizes<const N: usize>(words: [u32; N]) -> [usize; N] {
    words.map(|v| v as usize)
}

/// The weights of an int8 layer with per-channel requantization (filter, bias, each
/// channel's multiplier and shift), as a record keeps them.
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
#[repr(C)]
pub(crate) struct Int8Weights {
    filter: Part,
    bias: Part,
    multipliers: Part,
    shifts: Part,
}

impl Int8Weights {
    /// Where the weights lie in the program being prepared.
    pub fn of(input: &PrepareInput<'_>, filter: &[i8], bias: &[i32], quant: &PerChannel<'_>) -> Option<Self> {
        Some(Int8Weights {
            filter: Part::of(input, filter)?,
            bias: Part::of(input, bias)?,
            multipliers: Part::of(input, quant.multiplier)?,
            shifts: Part::of(input, quant.shift)?,
        })
    }

    /// The filter, bias and requantization back.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    pub fn get<'a>(
        &self,
        frame: &KernelFrame<'a>,
        kernel: &str,
    ) -> Result<(&'a [i8], &'a [i32], PerChannel<'a>), Diagnostic> {
        let quant = PerChannel {
            multiplier: self.multipliers.get(frame, kernel)?,
            shift: self.shifts.get(frame, kernel)?,
        };
        Ok((self.filter.get(frame, kernel)?, self.bias.get(frame, kernel)?, quant))
    }
}
