//! Reading a kernel's attributes by position (BEF keeps them sorted by name) with every kind,
//! length and value checked, and the arena regions they describe.

use hostrt_core::kernel::{AttrRef, DenseAttr, KernelFrame};
use hostrt_core::tensor::DType;
use hostrt_core::{Diagnostic, diag_fmt};

/// An `INVALID_ARGUMENT` error naming the kernel.
pub(crate) fn invalid(kernel: &str, what: core::fmt::Arguments<'_>) -> Diagnostic {
    diag_fmt!(InvalidArgument, "{}: {}", kernel, what)
}

/// A kernel's attributes, `count` of them, in name order.
pub(crate) struct Attrs<'a> {
    pub kernel: &'static str,
    attrs: &'a [AttrRef<'a>],
}

impl<'a> Attrs<'a> {
    pub fn of(frame: &KernelFrame<'a>, kernel: &'static str, count: usize) -> Result<Self, Diagnostic> {
        let attrs = frame.attrs();
        if attrs.len() != count {
            return Err(invalid(kernel, format_args!("expects {} attributes, got {}", count, attrs.len())));
        }
        Ok(Attrs { kernel, attrs })
    }

    fn at(&self, i: usize) -> Result<&AttrRef<'a>, Diagnostic> {
        self.attrs.get(i).ok_or_else(|| invalid(self.kernel, format_args!("no attribute {}", i)))
    }

    /// Attribute `i` (named `name` in errors): an i32 array of exactly `len` values (any
    /// length when `len` is `None`).
    pub fn ints(&self, i: usize, name: &str, len: Option<usize>) -> Result<&'a [i32], Diagnostic> {
        let a = self.at(i)?;
        match a.get_array::<i32>() {
            Some(v) if len.is_none_or(|l| v.len() == l) => Ok(v),
            _ => Err(invalid(
                self.kernel,
                format_args!("'{}' must be an array of {} i32", name, len.unwrap_or(0)),
            )),
        }
    }

    /// Attribute `i`: an f32 array of exactly `len` values.
    pub fn floats(&self, i: usize, name: &str, len: usize) -> Result<&'a [f32], Diagnostic> {
        match self.at(i)?.get_array::<f32>() {
            Some(v) if v.len() == len => Ok(v),
            _ => Err(invalid(self.kernel, format_args!("'{}' must be an array of {} f32", name, len))),
        }
    }

    /// Attribute `i`: a scalar i64.
    pub fn int64(&self, i: usize, name: &str) -> Result<i64, Diagnostic> {
        self.at(i)?
            .get::<i64>()
            .ok_or_else(|| invalid(self.kernel, format_args!("'{}' must be an i64", name)))
    }

    /// Attribute `i`: a string.
    pub fn string(&self, i: usize, name: &str) -> Result<&'a str, Diagnostic> {
        self.at(i)?.get_str().ok_or_else(|| invalid(self.kernel, format_args!("'{}' must be a string", name)))
    }

    /// Attribute `i`: a dense tensor of `dtype` and rank `rank`, with its dims as `usize`.
    pub fn dense<const R: usize>(
        &self,
        i: usize,
        name: &str,
        dtype: DType,
    ) -> Result<(DenseAttr<'a>, [usize; R]), Diagnostic> {
        let wrong =
            || invalid(self.kernel, format_args!("'{}' must be a rank-{} {} dense tensor", name, R, dtype));
        let d = self.at(i)?.get_dense().ok_or_else(wrong)?;
        if d.dtype != dtype || d.shape.rank() != R {
            return Err(wrong());
        }
        let mut dims = [0usize; R];
        for (o, &v) in dims.iter_mut().zip(d.shape.dims()) {
            *o = usize::try_from(v).map_err(|_| wrong())?;
        }
        Ok((d, dims))
    }

    /// Attribute `i`: a region `[offset, d0, ..., d(R-1)]` of the arena.
    pub fn region<const R: usize>(&self, i: usize, name: &str) -> Result<Region<R>, Diagnostic> {
        let v = self.ints(i, name, Some(R + 1))?;
        let bad = || invalid(self.kernel, format_args!("'{}' has a negative offset or dimension", name));
        let offset = usize::try_from(v[0]).map_err(|_| bad())?;
        let mut dims = [0usize; R];
        for (o, &d) in dims.iter_mut().zip(&v[1..]) {
            *o = usize::try_from(d).map_err(|_| bad())?;
        }
        Ok(Region { offset, dims })
    }
}

/// Where a tensor lives in the arena: its byte offset and dims.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region<const R: usize> {
    pub offset: usize,
    pub dims: [usize; R],
}

impl<const R: usize> Region<R> {
    /// The element count, `None` on overflow.
    pub fn elements(&self) -> Option<usize> {
        self.dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
    }

    /// The byte range for elements of `size` bytes.
    pub fn bytes(&self, size: usize) -> Option<(usize, usize)> {
        let len = self.elements()?.checked_mul(size)?;
        Some((self.offset, len))
    }
}

/// `v` as `usize`, or an error naming `what`.
pub(crate) fn to_usize(kernel: &str, what: &str, v: i32) -> Result<usize, Diagnostic> {
    usize::try_from(v).map_err(|_| invalid(kernel, format_args!("{} must not be negative, got {}", what, v)))
}
