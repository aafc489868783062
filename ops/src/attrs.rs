//! Reading a kernel's attributes by position (BEF keeps them sorted by name) with every kind,
//! length and value checked, and the arena regions they describe.

use hostrt_core::kernel::{AttrKind, AttrRef, KernelFrame};
use hostrt_core::tensor::DType;
use hostrt_core::{Diagnostic, diag_fmt};
use hostrt_dsp::{ActivationRange, DspError};

/// An `INVALID_ARGUMENT` error naming the kernel.
pub(crate) fn invalid(kernel: &str, what: core::fmt::Arguments<'_>) -> Diagnostic {
    diag_fmt!(InvalidArgument, "{}: {}", kernel, what)
}

/// A `hostrt-dsp` error as the kernel's `INVALID_ARGUMENT` error.
pub(crate) fn dsp_error(kernel: &str, e: DspError) -> Diagnostic {
    diag_fmt!(InvalidArgument, "{}: {}", kernel, e)
}

/// The largest stride, dilation, filter size or padding a `window` attribute may hold (keeps
/// every coordinate computation far from overflow).
const MAX_WINDOW: i32 = 1 << 16;

/// A kernel's attributes, `count` of them, in name order. On x86-64 the readers are inlined
/// into each kernel: every call decodes its attributes, and out of line each reader's result,
/// the size of a `Diagnostic` with its text, was copied on the way back (the fully connected
/// autoencoder runs 10% faster inlined). Microcontrollers keep them out of line, for flash.
pub(crate) struct Attrs<'a> {
    pub kernel: &'static str,
    attrs: &'a [AttrRef<'a>],
    /// Where the optional `packed` attribute of [`Attrs::with_packed`] sits, `usize::MAX`
    /// when absent: the positions from there on read one further. (x86-64 only: no other
    /// target reads it.)
    #[cfg(target_arch = "x86_64")]
    optional: usize,
}

impl<'a> Attrs<'a> {
    pub fn of(frame: &KernelFrame<'a>, kernel: &'static str, count: usize) -> Result<Self, Diagnostic> {
        Self::of_slice(frame.attrs(), kernel, count)
    }

    /// [`Attrs::of`] over the attributes themselves (a prepare function's, which has no frame).
    pub fn of_slice(
        attrs: &'a [AttrRef<'a>],
        kernel: &'static str,
        count: usize,
    ) -> Result<Self, Diagnostic> {
        if attrs.len() != count {
            return Err(invalid(kernel, format_args!("expects {} attributes, got {}", count, attrs.len())));
        }
        #[cfg(target_arch = "x86_64")]
        return Ok(Attrs { kernel, attrs, optional: usize::MAX });
        #[cfg(not(target_arch = "x86_64"))]
        Ok(Attrs { kernel, attrs })
    }

    /// Like [`Attrs::of`] for a kernel of `count` attributes that may carry weights laid out
    /// for x86-64's AVX-512 VNNI loops (`packed`, read by [`Attrs::packed`]) at position `at`
    /// in name order; the others are read at their positions without it.
    #[cfg(target_arch = "x86_64")]
    pub fn with_packed(
        frame: &KernelFrame<'a>,
        kernel: &'static str,
        count: usize,
        at: usize,
    ) -> Result<Self, Diagnostic> {
        Self::with_packed_slice(frame.attrs(), kernel, count, at)
    }

    /// [`Attrs::with_packed`] over the attributes themselves (a prepare function's).
    #[cfg(target_arch = "x86_64")]
    pub fn with_packed_slice(
        attrs: &'a [AttrRef<'a>],
        kernel: &'static str,
        count: usize,
        at: usize,
    ) -> Result<Self, Diagnostic> {
        if attrs.len() != count && attrs.len() != count + 1 {
            return Err(invalid(
                kernel,
                format_args!("expects {} or {} attributes, got {}", count, count + 1, attrs.len()),
            ));
        }
        Ok(Attrs { kernel, attrs, optional: if attrs.len() > count { at } else { usize::MAX } })
    }

    /// Other targets read no `packed` weights, and refuse a kernel that carries them (its
    /// program was imported for x86-64, `ImportOptions::prepack`): exactly [`Attrs::of`],
    /// which costs a microcontroller no flash.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn with_packed(
        frame: &KernelFrame<'a>,
        kernel: &'static str,
        count: usize,
        _: usize,
    ) -> Result<Self, Diagnostic> {
        Attrs::of(frame, kernel, count)
    }

    /// As [`Attrs::with_packed`], over the attributes themselves.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn with_packed_slice(
        attrs: &'a [AttrRef<'a>],
        kernel: &'static str,
        count: usize,
        _: usize,
    ) -> Result<Self, Diagnostic> {
        Attrs::of_slice(attrs, kernel, count)
    }

    #[cfg_attr(target_arch = "x86_64", inline(always))]
    fn at(&self, i: usize) -> Result<&AttrRef<'a>, Diagnostic> {
        #[cfg(target_arch = "x86_64")]
        let i = i + usize::from(i >= self.optional);
        self.attrs.get(i).ok_or_else(|| invalid(self.kernel, format_args!("no attribute {}", i)))
    }

    /// The weights laid out for x86-64's AVX-512 VNNI loops (`packed`, the optional attribute
    /// of [`Attrs::with_packed`]), if present, as the elements of a rank-`R` dense tensor of
    /// `dtype`.
    #[cfg(target_arch = "x86_64")]
    pub fn packed<T: bytemuck::Pod, const R: usize>(
        &self,
        dtype: DType,
    ) -> Result<Option<&'a [T]>, Diagnostic> {
        let at = self.optional;
        if at == usize::MAX {
            return Ok(None);
        }
        let whole = Attrs { kernel: self.kernel, attrs: self.attrs, optional: usize::MAX };
        whole.dense::<T, R>(at, "packed", dtype).map(|(v, _)| Some(v))
    }

    /// A convolution's `packed` weights, if present: [`pack_conv`]'s layout for the VNNI
    /// loops (a rank-3 i8 tensor) or [`pack_conv_pairs`]' for the AVX2 ones (rank-2 i16).
    ///
    /// [`pack_conv`]: hostrt_dsp::prepack::pack_conv
    /// [`pack_conv_pairs`]: hostrt_dsp::prepack::pack_conv_pairs
    #[cfg(target_arch = "x86_64")]
    pub fn packed_conv(&self) -> Result<Option<hostrt_dsp::prepack::ConvPacked<'a>>, Diagnostic> {
        use hostrt_dsp::prepack::ConvPacked;
        if self.optional == usize::MAX {
            return Ok(None);
        }
        // Told apart by type first: a failed read formats its error, on every call.
        match self.attrs.get(self.optional).map(AttrRef::kind) {
            Some(AttrKind::Dense(DType::I8)) => Ok(self.packed::<u8, 3>(DType::I8)?.map(ConvPacked::Vnni)),
            Some(AttrKind::Dense(DType::I16)) => {
                Ok(self.packed::<i16, 2>(DType::I16)?.map(ConvPacked::Pairs))
            }
            _ => Err(invalid(
                self.kernel,
                format_args!("'packed' must be a rank-3 i8 or rank-2 i16 dense tensor"),
            )),
        }
    }

    /// As on x86-64; here a kernel never has them ([`Attrs::with_packed`]).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn packed_conv(&self) -> Result<Option<hostrt_dsp::prepack::ConvPacked<'a>>, Diagnostic> {
        Ok(None)
    }

    /// As on x86-64; here a kernel never has them ([`Attrs::with_packed`]).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    pub fn packed<T: bytemuck::Pod, const R: usize>(&self, _: DType) -> Result<Option<&'a [T]>, Diagnostic> {
        Ok(None)
    }

    /// Attribute `i` (named `name` in errors): an i32 array of exactly `len` values (any
    /// length when `len` is `None`).
    #[cfg_attr(target_arch = "x86_64", inline(always))]
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

    /// Attribute `i`: a table of i32 values, as an array or a rank-1 dense tensor (importers
    /// write long tables so: docs/models.md).
    pub fn int_table(&self, i: usize, name: &str) -> Result<&'a [i32], Diagnostic> {
        match self.at(i)?.kind() {
            AttrKind::Dense(_) => self.dense::<i32, 1>(i, name, DType::I32).map(|(v, _)| v),
            _ => self.ints(i, name, None),
        }
    }

    /// Attribute `i`: a table of exactly `len` f32 values, as [`Attrs::int_table`].
    pub fn float_table(&self, i: usize, name: &str, len: usize) -> Result<&'a [f32], Diagnostic> {
        match self.at(i)?.kind() {
            AttrKind::Dense(_) => match self.dense::<f32, 1>(i, name, DType::F32)? {
                (v, _) if v.len() == len => Ok(v),
                _ => Err(invalid(self.kernel, format_args!("'{}' must hold {} f32", name, len))),
            },
            _ => self.floats(i, name, len),
        }
    }

    /// Attribute `i`: an f32 array of exactly `len` values.
    pub fn floats(&self, i: usize, name: &str, len: usize) -> Result<&'a [f32], Diagnostic> {
        match self.at(i)?.get_array::<f32>() {
            Some(v) if v.len() == len => Ok(v),
            _ => Err(invalid(self.kernel, format_args!("'{}' must be an array of {} f32", name, len))),
        }
    }

    /// Attribute `i`, `size`: the bytes of one element, 1, 2, 4 or 8.
    pub fn element_size(&self, i: usize) -> Result<usize, Diagnostic> {
        match self.ints(i, "size", Some(1))?[0] {
            s @ (1 | 2 | 4 | 8) => Ok(s as usize),
            s => Err(invalid(self.kernel, format_args!("element size {} is not 1, 2, 4 or 8", s))),
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

    /// Attribute `i`: the bytes of a dense tensor of any type and shape.
    pub fn dense_bytes(&self, i: usize, name: &str) -> Result<&'a [u8], Diagnostic> {
        let d = self.at(i)?.get_dense();
        d.map(|d| d.data)
            .ok_or_else(|| invalid(self.kernel, format_args!("'{}' must be a dense tensor", name)))
    }

    /// Whether attribute `i` is a dense tensor (of any type and shape), so that a kernel
    /// taking either a constant or an arena region can tell which without building an error.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn is_dense(&self, i: usize) -> Result<bool, Diagnostic> {
        Ok(matches!(self.at(i)?.kind(), AttrKind::Dense(_)))
    }

    /// Attribute `i`: a dense tensor of `dtype` and rank `R`, as its elements (type `T`,
    /// whose layout `dtype` is) and its dims.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn dense<T: bytemuck::Pod, const R: usize>(
        &self,
        i: usize,
        name: &str,
        dtype: DType,
    ) -> Result<(&'a [T], [usize; R]), Diagnostic> {
        let wrong =
            || invalid(self.kernel, format_args!("'{}' must be a rank-{} {} dense tensor", name, R, dtype));
        let mut dims = [0usize; R];
        let (found, data) = self.at(i)?.get_dense_into(&mut dims).ok_or_else(wrong)?;
        if found != dtype {
            return Err(wrong());
        }
        let data = bytemuck::try_cast_slice(data)
            .map_err(|_| invalid(self.kernel, format_args!("'{}' is not aligned for {}", name, dtype)))?;
        Ok((data, dims))
    }

    /// Attribute `i`: a region `[offset, d0, ..., d(R-1)]` of the arena.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn region<const R: usize>(&self, i: usize, name: &str) -> Result<Region<R>, Diagnostic> {
        let v = self.ints(i, name, Some(R + 1))?;
        let bad = || invalid(self.kernel, format_args!("'{}' has a negative offset or dimension", name));
        let offset = usize::try_from(v[0]).map_err(|_| bad())?;
        let mut dims = [0usize; R];
        for (o, &d) in dims.iter_mut().zip(&v[1..]) {
            *o = usize::try_from(d).map_err(|_| bad())?;
        }
        Ok(Region { kernel: self.kernel, offset, dims })
    }

    /// The `input` and `output` regions (attributes 0 and 1) of an element-by-element kernel,
    /// which must hold as many elements, and that count.
    pub fn same_size(&self) -> Result<(Region<1>, Region<1>, usize), Diagnostic> {
        let (input, output) = (self.region::<1>(0, "input")?, self.region::<1>(1, "output")?);
        if input.dims != output.dims {
            return Err(invalid(self.kernel, format_args!("input and output sizes differ")));
        }
        Ok((input, output, input.dims[0]))
    }

    /// Attribute `i`: a `window` of six values, the first four at least 1 (strides,
    /// dilations or filter sizes) and the last two at least 0 (padding), none above 2^16.
    pub fn window(&self, i: usize) -> Result<[usize; 6], Diagnostic> {
        let v = self.window_in_range(self.ints(i, "window", Some(6))?)?;
        // Non-negative (`window_in_range`).
        Ok([0, 1, 2, 3, 4, 5].map(|k| v[k] as usize))
    }

    /// Attribute `i`, a pooling `window`: `[filter h, filter w, stride h, stride w, pad top,
    /// pad left]`, then optionally the dilation `[h, w]` (ONNX's pooling has one; absent, 1).
    pub fn pool_window(&self, i: usize) -> Result<([usize; 6], [usize; 2]), Diagnostic> {
        let v = self.ints(i, "window", None)?;
        if v.len() != 6 && v.len() != 8 {
            return Err(invalid(
                self.kernel,
                format_args!("'window' must be an array of 6 or 8 i32, got {}", v.len()),
            ));
        }
        let v = self.window_in_range(v)?;
        // Non-negative (`window_in_range`).
        let at = |k: usize| v.get(k).map_or(1, |&x| x as usize);
        Ok(([0, 1, 2, 3, 4, 5].map(at), [at(6), at(7)]))
    }

    /// A `window`'s values checked: positions 4 and 5 (padding) at least 0, every other at
    /// least 1, none above 2^16.
    fn window_in_range<'v>(&self, v: &'v [i32]) -> Result<&'v [i32], Diagnostic> {
        let ok = |(k, &x): (usize, &i32)| (if k == 4 || k == 5 { 0 } else { 1 }..=MAX_WINDOW).contains(&x);
        if !v.iter().enumerate().all(ok) {
            return Err(invalid(self.kernel, format_args!("'window' values out of range: {:?}", v)));
        }
        Ok(v)
    }

    /// Attribute `i`: a float activation range `[min, max]`.
    pub fn float_range(&self, i: usize) -> Result<(f32, f32), Diagnostic> {
        let r = self.floats(i, "range", 2)?;
        if r[0].is_nan() || r[1].is_nan() || r[0] > r[1] {
            return Err(invalid(self.kernel, format_args!("'range' must be [min, max], got {:?}", r)));
        }
        Ok((r[0], r[1]))
    }

    /// An int8 activation range from two attribute values.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn int8_range(&self, min: i32, max: i32) -> Result<ActivationRange, Diagnostic> {
        ActivationRange::new(min, max).map_err(|e| dsp_error(self.kernel, e))
    }
}

/// Where a tensor lives in the arena: its byte offset and dims.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region<const R: usize> {
    kernel: &'static str,
    pub offset: usize,
    pub dims: [usize; R],
}

impl<const R: usize> Region<R> {
    /// The element count.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn elements(&self) -> Result<usize, Diagnostic> {
        self.dims
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| invalid(self.kernel, format_args!("size overflows")))
    }

    /// The size in bytes for elements of `size` bytes.
    #[cfg_attr(target_arch = "x86_64", inline(always))]
    pub fn byte_len(&self, size: usize) -> Result<usize, Diagnostic> {
        self.elements()?.checked_mul(size).ok_or_else(|| invalid(self.kernel, format_args!("size overflows")))
    }
}
