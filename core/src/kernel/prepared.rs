//! Prepared state (docs/execution.md, "Prepared state"): what a kernel works out from one
//! use's attributes once, when its program loads, instead of on every call, as TensorFlow
//! Lite Micro's `Prepare` does. Plain bytes, so that reading them back can never be unsound:
//! a kernel keeps its own `#[repr(C)]` record in them, and parts of the program's bytes
//! (weights, tables) as [`Span`]s, which [`KernelFrame::span`](super::KernelFrame::span)
//! turns back into slices with a bounds check.

use super::attribute::AttrRef;

/// The bytes a kernel's [`PrepareFn`] wrote for one use of the kernel in a program.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
pub struct Prepared([u8; Prepared::SIZE]);

impl Prepared {
    /// The most bytes a kernel may keep per use.
    pub const SIZE: usize = 192;

    /// A block holding `bytes` (then zeros); `None` when they are longer than [`SIZE`](Self::SIZE).
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut block = [0u8; Self::SIZE];
        block.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(Prepared(block))
    }

    /// The block's bytes, aligned to 8.
    #[inline]
    pub fn bytes(&self) -> &[u8; Prepared::SIZE] {
        &self.0
    }
}

impl core::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("Prepared")
    }
}

/// A part of a program's bytes, as byte offset and length: what a prepared block keeps in
/// place of a slice, which would borrow the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Span {
    /// Byte offset from the start of the program's bytes.
    pub start: u32,
    /// Length in bytes.
    pub len: u32,
}

/// What a [`PrepareFn`] sees: one use's attributes and the bytes of its program.
#[derive(Clone, Copy, Debug)]
pub struct PrepareInput<'a> {
    attrs: &'a [AttrRef<'a>],
    bytes: &'a [u8],
}

impl<'a> PrepareInput<'a> {
    /// The input of a use whose attributes are `attrs`, all parts of `bytes`.
    pub fn new(attrs: &'a [AttrRef<'a>], bytes: &'a [u8]) -> Self {
        PrepareInput { attrs, bytes }
    }

    /// The use's attributes, as [`KernelFrame::attrs`](super::KernelFrame::attrs) gives them.
    pub fn attrs(&self) -> &'a [AttrRef<'a>] {
        self.attrs
    }

    /// Where `part` (attribute data of this use) lies in the program's bytes; `None` for
    /// bytes outside them.
    pub fn span_of(&self, part: &[u8]) -> Option<Span> {
        let start = part.as_ptr().addr().checked_sub(self.bytes.as_ptr().addr())?;
        let end = start.checked_add(part.len())?;
        if end > self.bytes.len() {
            return None;
        }
        Some(Span { start: u32::try_from(start).ok()?, len: u32::try_from(part.len()).ok()? })
    }
}

/// A kernel's prepare function: its state for one use, or `None` when it cannot prepare
/// that use (bad attributes among them). A use left unprepared runs as if the kernel had no
/// prepare function, reading its attributes on each call, which reports what is wrong
/// with them there, with the kernel's location.
pub type PrepareFn = fn(&PrepareInput<'_>) -> Option<Prepared>;

/// The bytes `span` names in `bytes`, if they lie inside.
#[cfg(any(feature = "prepared", test))]
#[inline]
pub(crate) fn resolve(bytes: &[u8], span: Span) -> Option<&[u8]> {
    let start = span.start as usize;
    bytes.get(start..start.checked_add(span.len as usize)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_names_the_same_bytes_back() {
        let bytes = [7u8, 8, 9, 10, 11];
        let input = PrepareInput::new(&[], &bytes);
        let span = input.span_of(&bytes[1..4]).unwrap();
        assert_eq!(span, Span { start: 1, len: 3 });
        assert_eq!(resolve(&bytes, span), Some(&bytes[1..4]));
        assert_eq!(resolve(&bytes, Span { start: 3, len: 3 }), None);
        assert_eq!(resolve(&bytes, Span { start: u32::MAX, len: u32::MAX }), None);
        let other = [1u8; 4];
        assert_eq!(input.span_of(&other), None);
    }

    #[test]
    fn a_block_keeps_at_most_its_size() {
        let p = Prepared::new(&[1, 2, 3]).unwrap();
        assert_eq!(&p.bytes()[..4], &[1, 2, 3, 0]);
        assert!(Prepared::new(&[0; Prepared::SIZE]).is_some());
        assert!(Prepared::new(&[0; Prepared::SIZE + 1]).is_none());
    }
}
