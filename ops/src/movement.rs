//! Data movement: `nn.copy` (a strided copy between arena tensors) and `nn.fill`. The
//! importer lowers every operator that only moves elements (TRANSPOSE, SLICE,
//! STRIDED_SLICE, CONCATENATION, SPLIT, PACK, UNPACK, PAD) to these two, computing the
//! strides at import (docs/models.md); SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND, whose pixel
//! maps no strided copy holds, have their own kernels (`batch_space.rs`).
//!
//! - `nn.copy {dims, input, output, size}`: `dims` are 6 counts; `input` is
//!   `[byte offset, 6 element strides]` (strides may be negative: a reversed slice);
//!   `output` is `[byte offset, 6 element strides]` (non-negative); `size` is `[element
//!   bytes]`. For every index `i` of `dims`, the element at `output + Σ i·out_stride`
//!   becomes the one at `input + Σ i·in_stride`.
//! - `nn.fill {output, value}`: `output` is `[byte offset, elements]`; every element becomes
//!   `value`, a one-element dense attribute.

use hostrt_core::kernel::KernelFrame;

use crate::activation_arena::{split, with_arena};
use crate::attrs::{Attrs, invalid};

/// Axes of a strided copy or padding (leading ones of count 1 where a tensor has fewer).
pub(crate) const RANK: usize = 6;

/// The byte span `[start, end)` that `dims` with element `strides` of `size` bytes touch
/// from byte `offset`, or `None` when it overflows or starts before 0.
pub(crate) fn span(
    offset: i32,
    dims: &[usize; RANK],
    strides: &[i32],
    size: usize,
) -> Option<(usize, usize)> {
    let (mut lo, mut hi) = (0i64, 0i64);
    for (&d, &s) in dims.iter().zip(strides) {
        let reach = i64::try_from(d).ok()?.checked_sub(1)?.checked_mul(i64::from(s))?;
        if reach < 0 {
            lo = lo.checked_add(reach)?;
        } else {
            hi = hi.checked_add(reach)?;
        }
    }
    let size = i64::try_from(size).ok()?;
    let start = i64::from(offset).checked_add(lo.checked_mul(size)?)?;
    let end = i64::from(offset).checked_add(hi.checked_add(1)?.checked_mul(size)?)?;
    Some((usize::try_from(start).ok()?, usize::try_from(end).ok()?))
}

/// `nn.copy`.
pub(crate) fn copy(frame: &KernelFrame<'_>) {
    const K: &str = "nn.copy";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 4)?;
        let dims_attr = a.ints(0, "dims", Some(RANK))?;
        let input = a.ints(1, "input", Some(RANK + 1))?;
        let output = a.ints(2, "output", Some(RANK + 1))?;
        let size = a.element_size(3)?;
        let mut dims = [0usize; RANK];
        for (d, &v) in dims.iter_mut().zip(dims_attr) {
            *d = usize::try_from(v)
                .map_err(|_| invalid(K, format_args!("negative dim in {:?}", dims_attr)))?;
        }
        if dims.contains(&0) {
            return Ok(());
        }
        if output[1..].iter().any(|&s| s < 0) {
            return Err(invalid(K, format_args!("output strides must not be negative: {:?}", &output[1..])));
        }
        let bad =
            |what: &str| invalid(K, format_args!("{} strides overflow or reach before the arena", what));
        let (in_start, in_end) = span(input[0], &dims, &input[1..], size).ok_or_else(|| bad("input"))?;
        let (out_start, out_end) = span(output[0], &dims, &output[1..], size).ok_or_else(|| bad("output"))?;
        let (inputs, out) = split(K, arena, out_start, out_end - out_start)?;
        let src = inputs.bytes(in_start, in_end - in_start)?;
        let axes: [Axis; RANK] = core::array::from_fn(|k| Axis {
            count: dims[k],
            input: input[k + 1] as isize,
            output: output[k + 1] as isize,
        });
        // Element starts relative to the two spans (whole elements: a span starts a whole
        // number of strides before its offset).
        let whole = |at: i32, start: usize| (at as isize - start as isize) / size as isize;
        let (ib, ob) = (whole(input[0], in_start), whole(output[0], out_start));
        match size {
            1 => copy_as::<1>(src, out, axes, (ib, ob)),
            2 => copy_as::<2>(src, out, axes, (ib, ob)),
            4 => copy_as::<4>(src, out, axes, (ib, ob)),
            _ => copy_as::<8>(src, out, axes, (ib, ob)),
        }
        Ok(())
    })
}

/// One axis of a copy: its count and its element strides in the input and the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Axis {
    count: usize,
    input: isize,
    output: isize,
}

/// The axes of a copy in the order that loops over them fastest, outermost first, as
/// `(axes, how many)`: axes of one element dropped, the innermost one that is contiguous
/// in the output or the input (the longer), and neighbours that step as one axis merged.
/// Every element is copied once whatever the order, unless two output indices meet (an
/// output stride of 0): then the order is kept, so the last write wins as before.
fn loop_order(axes: [Axis; RANK]) -> ([Axis; RANK], usize) {
    let mut order = [Axis { count: 1, input: 0, output: 0 }; RANK];
    let mut n = 0;
    for a in axes.into_iter().filter(|a| a.count > 1) {
        order[n] = a;
        n += 1;
    }
    let meets = order[..n].iter().any(|a| a.output == 0);
    if !meets {
        // Contiguous output first, then input; the longer wins.
        let key = |a: &Axis| (a.output == 1 || a.input.abs() == 1, a.count, a.output == 1);
        if let Some(inner) = (0..n).max_by_key(|&k| key(&order[k])) {
            order[inner..n].rotate_left(1);
        }
    }
    let mut merged = 0usize;
    for k in 0..n {
        let a = order[k];
        match merged.checked_sub(1).map(|m| &mut order[m]) {
            // The previous axis steps exactly over this one's elements in both tensors.
            Some(p) if p.input == a.input * a.count as isize && p.output == a.output * a.count as isize => {
                *p = Axis { count: p.count * a.count, input: a.input, output: a.output };
            }
            _ => {
                order[merged] = a;
                merged += 1;
            }
        }
    }
    (order, merged)
}

/// The copy for elements of `N` bytes: `src` and `out` are the two spans, `ib` and `ob` the
/// element offsets of index 0 in them; every index stays in them (the spans bound it).
fn copy_as<const N: usize>(src: &[u8], out: &mut [u8], axes: [Axis; RANK], (ib, ob): (isize, isize)) {
    let (src, _) = src.as_chunks::<N>();
    let (out, _) = out.as_chunks_mut::<N>();
    let (order, n) = loop_order(axes);
    // The innermost axis, and every other as an odometer, outermost first.
    let inner = if n == 0 { Axis { count: 1, input: 0, output: 0 } } else { order[n - 1] };
    let mut outer = &order[..n.saturating_sub(1)];
    // Planes read along the innermost axis and interleaved by the next one out (an NCHW
    // image of up to four channels to NHWC): both axes at once, a pixel at a time. Or two
    // axes that a transpose swaps, one contiguous in the input and the other in the
    // output: in tiles.
    let plane = match outer.last() {
        Some(a) if inner.input == 1 && a.output == 1 && inner.output == a.count as isize && a.count <= 4 => {
            Plane::Interleave(*a)
        }
        Some(a) => match Transpose::of(*a, inner) {
            Some(t) => Plane::Transpose(t),
            None => Plane::None,
        },
        None => Plane::None,
    };
    if plane != Plane::None {
        outer = &outer[..outer.len() - 1];
    }
    let mut idx = [0usize; RANK];
    loop {
        let (mut i, mut o) = (ib, ob);
        for (a, &x) in outer.iter().zip(&idx) {
            i += x as isize * a.input;
            o += x as isize * a.output;
        }
        let (i, o) = (i as usize, o as usize);
        match plane {
            Plane::Interleave(a) => {
                let plane = |k: usize| &src[(i as isize + k as isize * a.input) as usize..][..inner.count];
                let out = &mut out[o..][..a.count * inner.count];
                match a.count {
                    2 => interleave::<N, 2>(core::array::from_fn(plane), out.as_chunks_mut().0),
                    3 => interleave::<N, 3>(core::array::from_fn(plane), out.as_chunks_mut().0),
                    4 => interleave::<N, 4>(core::array::from_fn(plane), out.as_chunks_mut().0),
                    _ => interleave::<N, 1>([plane(0)], out.as_chunks_mut().0),
                }
            }
            Plane::Transpose(t) => t.copy(src, out, (i, o)),
            Plane::None if inner.input == 1 && inner.output == 1 => {
                out[o..o + inner.count].copy_from_slice(&src[i..i + inner.count]);
            }
            Plane::None => {
                for j in 0..inner.count as isize {
                    out[(o as isize + j * inner.output) as usize] =
                        src[(i as isize + j * inner.input) as usize];
                }
            }
        }
        if !advance(&mut idx[..outer.len()], |k| outer[k].count) {
            return;
        }
    }
}

/// Steps `idx` to the next index over axes of `count(k)` values, the last fastest, as an
/// odometer: false once it has passed the last.
pub(crate) fn advance(idx: &mut [usize], count: impl Fn(usize) -> usize) -> bool {
    for k in (0..idx.len()).rev() {
        idx[k] += 1;
        if idx[k] < count(k) {
            return true;
        }
        idx[k] = 0;
    }
    false
}

/// How [`copy_as`] copies its two innermost axes at a time, if it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plane {
    /// Up to four planes interleaved, a pixel at a time ([`interleave`]).
    Interleave(Axis),
    /// Two axes a transpose swaps, in tiles ([`Transpose`]).
    Transpose(Transpose),
    /// The innermost axis alone.
    None,
}

/// Two axes of a copy that a transpose swaps: `rows`, contiguous in the output, and `cols`,
/// contiguous in the input. Element `(r, c)` of a plane at `(i, o)` is read from
/// `i + r·rows.input + c` and written to `o + c·cols.output + r`. Copied in tiles of
/// [`TILE`] by [`TILE`], each read as rows of the input and written as rows of the output;
/// along one axis, every element read or written one row apart took 1.4 ns per element (the
/// transformer's 64x128 keys transposed: 11.8 us).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Transpose {
    rows: Axis,
    cols: Axis,
}

/// Elements per side of a [`Transpose`] tile.
const TILE: usize = 8;

impl Transpose {
    /// The transpose of `outer` and `inner`, the two innermost axes of a copy, when one is
    /// contiguous in the input and the other in the output, both span a tile or more, and
    /// the output's rows do not overlap (each element written once, so the order of writes
    /// cannot matter).
    fn of(outer: Axis, inner: Axis) -> Option<Transpose> {
        let (rows, cols) = if inner.output == 1 && outer.input == 1 {
            (inner, outer)
        } else if inner.input == 1 && outer.output == 1 {
            (outer, inner)
        } else {
            return None;
        };
        let fits = rows.count >= TILE && cols.count >= TILE && rows.input > 0;
        (fits && cols.output >= rows.count as isize).then_some(Transpose { rows, cols })
    }

    /// The plane at `(i, o)`: whole tiles, then the edges' elements one at a time.
    fn copy<const N: usize>(&self, src: &[[u8; N]], out: &mut [[u8; N]], (i, o): (usize, usize)) {
        let (ri, co) = (self.rows.input as usize, self.cols.output as usize);
        let (rows, cols) = (self.rows.count, self.cols.count);
        let (whole_r, whole_c) = (rows - rows % TILE, cols - cols % TILE);
        // Four-byte elements (the same bytes regrouped: no copy) in AVX2 tiles.
        #[cfg(target_arch = "x86_64")]
        if N == 4 {
            let (src4, out4) = (src.as_flattened().as_chunks().0, out.as_flattened_mut().as_chunks_mut().0);
            if x86::transpose_tiles(src4, out4, (i, o), (ri, co), (whole_r, whole_c)) {
                return self.edges(src, out, (i, o));
            }
        }
        crate::on_widest(
            #[inline(always)]
            || {
                for r0 in (0..whole_r).step_by(TILE) {
                    for c0 in (0..whole_c).step_by(TILE) {
                        let tile: [[[u8; N]; TILE]; TILE] = core::array::from_fn(|r| {
                            src[i + (r0 + r) * ri + c0..].first_chunk().copied().expect("within the span")
                        });
                        for c in 0..TILE {
                            let row: &mut [[u8; N]; TILE] =
                                out[o + (c0 + c) * co + r0..].first_chunk_mut().expect("within the span");
                            *row = core::array::from_fn(|r| tile[r][c]);
                        }
                    }
                }
            },
        );
        self.edges(src, out, (i, o));
    }

    /// The elements outside the whole tiles of the plane at `(i, o)`: the last rows of
    /// every column, then the last columns of the whole rows.
    fn edges<const N: usize>(&self, src: &[[u8; N]], out: &mut [[u8; N]], (i, o): (usize, usize)) {
        let (ri, co) = (self.rows.input as usize, self.cols.output as usize);
        let (rows, cols) = (self.rows.count, self.cols.count);
        let (whole_r, whole_c) = (rows - rows % TILE, cols - cols % TILE);
        for (r, c) in (whole_r..rows).flat_map(|r| (0..cols).map(move |c| (r, c))) {
            out[o + c * co + r] = src[i + r * ri + c];
        }
        for (r, c) in (0..whole_r).flat_map(|r| (whole_c..cols).map(move |c| (r, c))) {
            out[o + c * co + r] = src[i + r * ri + c];
        }
    }
}

/// The whole tiles of a [`Transpose`] of 4-byte elements on AVX: each tile eight 256-bit
/// loads, 24 shuffles and eight stores. The compiler's form of the tile loop moved each
/// element through the stack (the transformer's 64x128 keys: 8 us, against under 1 us for
/// everything around the copy).
#[cfg(target_arch = "x86_64")]
mod x86 {
    use core::arch::x86_64::*;

    use super::TILE;

    /// Tiles `(r0, c0)` for `r0 < whole_r`, `c0 < whole_c` (multiples of [`TILE`]) of the
    /// plane at `(i, o)`: element `(r, c)` from `src[i + r·ri + c]` to `out[o + c·co + r]`.
    /// False, with nothing written, where the CPU lacks AVX2.
    ///
    /// # Panics
    /// Where a tile reaches past `src` or `out` (the caller's spans hold every element).
    pub(super) fn transpose_tiles(
        src: &[[u8; 4]],
        out: &mut [[u8; 4]],
        (i, o): (usize, usize),
        (ri, co): (usize, usize),
        (whole_r, whole_c): (usize, usize),
    ) -> bool {
        if !hostrt_dsp::has_avx2() {
            return false;
        }
        if whole_r == 0 || whole_c == 0 {
            return true;
        }
        // The furthest element each side reads or writes, the last of the last tile.
        let src_end = (whole_r - 1).checked_mul(ri).and_then(|v| v.checked_add(i + whole_c));
        let out_end = (whole_c - 1).checked_mul(co).and_then(|v| v.checked_add(o + whole_r));
        assert!(src_end.is_some_and(|e| e <= src.len()) && out_end.is_some_and(|e| e <= out.len()));
        // SAFETY: the CPU has AVX2 (checked above); every tile's rows lie within `src` and
        // `out` (the assertion: strides and offsets grow toward the last tile's last row).
        unsafe {
            tiles(src.as_ptr().add(i).cast(), out.as_mut_ptr().add(o).cast(), (ri, co), (whole_r, whole_c))
        };
        true
    }

    /// # Safety
    /// The CPU has AVX2; `src + r·ri + c` for `r < whole_r`, `c < whole_c` is readable and
    /// `out + c·co + r` writable, for 4-byte elements.
    #[target_feature(enable = "avx2")]
    unsafe fn tiles(
        src: *const f32,
        out: *mut f32,
        (ri, co): (usize, usize),
        (whole_r, whole_c): (usize, usize),
    ) {
        for r0 in (0..whole_r).step_by(TILE) {
            for c0 in (0..whole_c).step_by(TILE) {
                // SAFETY: rows `r0..r0 + 8`, values `c0..c0 + 8`: readable (the contract);
                // `loadu` has no alignment requirement.
                let r: [__m256; TILE] =
                    core::array::from_fn(|k| unsafe { _mm256_loadu_ps(src.add((r0 + k) * ri + c0)) });
                let t: [__m256; TILE] = core::array::from_fn(|k| {
                    let (a, b) = (r[k / 2 * 2], r[k / 2 * 2 + 1]);
                    if k % 2 == 0 { _mm256_unpacklo_ps(a, b) } else { _mm256_unpackhi_ps(a, b) }
                });
                // u[4h + k]: elements k of each 128-bit half of rows 4h..4h + 4.
                let u: [__m256; TILE] = core::array::from_fn(|k| {
                    let (h, k) = (k / 4, k % 4);
                    let (a, b) = (t[4 * h + k / 2], t[4 * h + k / 2 + 2]);
                    if k % 2 == 0 { _mm256_shuffle_ps::<0x44>(a, b) } else { _mm256_shuffle_ps::<0xEE>(a, b) }
                });
                for k in 0..TILE {
                    let (a, b) = (u[k % 4], u[4 + k % 4]);
                    let v = if k < 4 {
                        _mm256_permute2f128_ps::<0x20>(a, b)
                    } else {
                        _mm256_permute2f128_ps::<0x31>(a, b)
                    };
                    // SAFETY: column `c0 + k`, rows `r0..r0 + 8`: writable (the contract).
                    unsafe { _mm256_storeu_ps(out.add((c0 + k) * co + r0), v) };
                }
            }
        }
    }
}

/// Element `j` of each of the `C` planes into pixel `j` of `out`, which has as many pixels
/// as the planes have elements. One element stored per step of the strided loop took 0.4 ns
/// an element; whole pixels at a time, the compiler's vector shuffles do it.
fn interleave<const N: usize, const C: usize>(planes: [&[[u8; N]]; C], out: &mut [[[u8; N]; C]]) {
    // Compiled for AVX-512, the compiler's shuffles make the pixels (on SSE2 alone it keeps
    // the element loop): MobileNetV2's 96x96 RGB input 12.8 -> 3.0 us.
    crate::on_widest(
        #[inline(always)]
        || interleave_on(planes, out),
    )
}

/// The loop of [`interleave`], inlined into the compiled form `on_widest` runs.
#[inline(always)]
fn interleave_on<const N: usize, const C: usize>(planes: [&[[u8; N]]; C], out: &mut [[[u8; N]; C]]) {
    let planes = planes.map(|p| &p[..out.len()]);
    for (j, px) in out.iter_mut().enumerate() {
        *px = core::array::from_fn(|k| planes[k][j]);
    }
}

/// `nn.fill`.
pub(crate) fn fill(frame: &KernelFrame<'_>) {
    const K: &str = "nn.fill";
    with_arena(frame, |arena| {
        let a = Attrs::of(frame, K, 2)?;
        let output = a.region::<1>(0, "output")?;
        let value = a.dense_bytes(1, "value")?;
        if value.is_empty() {
            return Err(invalid(K, format_args!("'value' must hold one element")));
        }
        let (_, out) = split(K, arena, output.offset, output.byte_len(value.len())?)?;
        for chunk in out.chunks_exact_mut(value.len()) {
            chunk.copy_from_slice(value);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_covers_negative_strides() {
        let dims = [1, 1, 1, 1, 2, 3];
        assert_eq!(span(100, &dims, &[0, 0, 0, 0, 3, 1], 4), Some((100, 124)));
        // A reversed row: starts at its last element.
        assert_eq!(span(108, &dims, &[0, 0, 0, 0, 3, -1], 4), Some((100, 124)));
        assert_eq!(span(0, &dims, &[0, 0, 0, 0, 3, -1], 4), None);
        assert_eq!(span(0, &[1, 1, 1, 1, 1, usize::MAX], &[0, 0, 0, 0, 0, i32::MAX], 8), None);
    }

    /// Two NCHW images of 2, 3 and 4 channels to NHWC in 4-byte elements: the planes
    /// interleaved a pixel at a time, where the element walk puts them.
    #[test]
    fn planes_interleave_as_the_walk() {
        for c in 2..=4usize {
            let (h, w) = (3usize, 7usize);
            let (dims, hw) = ([1, 1, 2, h, w, c], (h * w) as isize);
            let is = [0, 0, c as isize * hw, w as isize, 1, hw];
            let os = [0, 0, c as isize * hw, (w * c) as isize, c as isize, 1];
            let n = 2 * c * h * w;
            let src: std::vec::Vec<u8> = (0..n * 4).map(|i| (i * 7 % 251) as u8).collect();
            let axes: [Axis; RANK] =
                core::array::from_fn(|k| Axis { count: dims[k], input: is[k], output: os[k] });
            let mut got = std::vec![0u8; n * 4];
            copy_as::<4>(&src, &mut got, axes, (0, 0));
            let mut want = std::vec![0u8; n * 4];
            for (b, y, x, k) in (0..2).flat_map(|b| {
                (0..h).flat_map(move |y| (0..w).flat_map(move |x| (0..c).map(move |k| (b, y, x, k))))
            }) {
                let (i, o) = (((b * c + k) * h + y) * w + x, ((b * h + y) * w + x) * c + k);
                want[o * 4..][..4].copy_from_slice(&src[i * 4..][..4]);
            }
            assert_eq!(got, want, "{c} channels");
        }
    }

    /// The copy element by element in row-major order of `dims`, from input offset `ib`.
    fn walk<const N: usize>(
        src: &[u8],
        out: &mut [u8],
        (dims, is, os): ([usize; RANK], [isize; RANK], [isize; RANK]),
        ib: isize,
    ) {
        let mut idx = [0usize; RANK];
        'walk: loop {
            let at = |s: &[isize; RANK]| idx.iter().zip(s).map(|(&i, &s)| i as isize * s).sum::<isize>();
            let (i, o) = ((ib + at(&is)) as usize * N, at(&os) as usize * N);
            out[o..][..N].copy_from_slice(&src[i..][..N]);
            for k in (0..RANK).rev() {
                idx[k] += 1;
                if idx[k] < dims[k] {
                    continue 'walk;
                }
                idx[k] = 0;
            }
            break;
        }
    }

    /// Transposes in tiles put every element where the walk does: the last two axes
    /// swapped (whole tiles and edges, each element size), inside a batch, and a
    /// transpose of the outer axes of a copy whose rows stay whole.
    #[test]
    fn transposes_in_tiles_as_the_walk() {
        fn check<const N: usize>(dims: [usize; RANK], is: [isize; RANK], os: [isize; RANK]) {
            let n: usize = dims.iter().product();
            let src: std::vec::Vec<u8> = (0..n * N).map(|i| (i * 13 % 251) as u8).collect();
            let axes: [Axis; RANK] =
                core::array::from_fn(|k| Axis { count: dims[k], input: is[k], output: os[k] });
            let (mut got, mut want) = (std::vec![0u8; n * N], std::vec![0u8; n * N]);
            copy_as::<N>(&src, &mut got, axes, (0, 0));
            walk::<N>(&src, &mut want, (dims, is, os), 0);
            assert_eq!(got, want, "{dims:?} of {N} bytes");
        }
        for (r, c) in [(8, 8), (64, 128), (13, 21), (9, 8), (8, 17), (7, 40)] {
            let (ri, ci) = (r as isize, c as isize);
            // [r, c] to [c, r]: output index (c, r).
            let t = ([1, 1, 1, 1, c, r], [0, 0, 0, 0, 1, ci], [0, 0, 0, 0, ri, 1]);
            check::<1>(t.0, t.1, t.2);
            check::<2>(t.0, t.1, t.2);
            check::<4>(t.0, t.1, t.2);
            check::<8>(t.0, t.1, t.2);
            // Three of them in a batch.
            let n = ri * ci;
            check::<4>([1, 1, 1, 3, c, r], [0, 0, 0, n, 1, ci], [0, 0, 0, n, ri, 1]);
        }
        // [2, 9, 10, 3] to [10, 9, 2, 3] (rows of three kept whole, merged).
        check::<4>([1, 1, 10, 9, 2, 3], [0, 0, 3, 30, 270, 1], [0, 0, 54, 6, 3, 1]);
        let order = |dims: [usize; RANK], is: [isize; RANK], os: [isize; RANK]| {
            loop_order(core::array::from_fn(|k| Axis { count: dims[k], input: is[k], output: os[k] }))
        };
        // A 64x128 transpose goes by tiles; a copy whose output rows overlap does not.
        let (o, n) = order([1, 1, 1, 1, 128, 64], [0, 0, 0, 0, 1, 128], [0, 0, 0, 0, 64, 1]);
        assert!(Transpose::of(o[n - 2], o[n - 1]).is_some());
        let (o, n) = order([1, 1, 1, 1, 128, 64], [0, 0, 0, 0, 1, 128], [0, 0, 0, 0, 32, 1]);
        assert!(Transpose::of(o[n - 2], o[n - 1]).is_none());
    }

    /// Every element where the plain row-major walk puts it: a transpose, a reversed
    /// slice, a broadcast read, a copy whose output indices meet, and plain rows.
    #[test]
    fn loop_order_copies_as_the_row_major_walk() {
        /// Dims, input strides, output strides, and the input offset of index 0.
        type Case = ([usize; RANK], [isize; RANK], [isize; RANK], isize);
        let cases: [Case; 5] = [
            // NCHW [1, 3, 4, 5] to NHWC: output index (n, h, w, c).
            ([1, 1, 1, 4, 5, 3], [0, 0, 0, 5, 1, 20], [0, 0, 0, 15, 3, 1], 0),
            // A reversed row of 7 in 2 rows.
            ([1, 1, 1, 1, 2, 7], [0, 0, 0, 0, 7, -1], [0, 0, 0, 0, 7, 1], 6),
            // One row read three times.
            ([1, 1, 1, 1, 3, 6], [0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 6, 1], 0),
            // Output stride 0: the last of 4 rows wins.
            ([1, 1, 1, 1, 4, 5], [0, 0, 0, 0, 5, 1], [0, 0, 0, 0, 0, 1], 0),
            // Plain rows in a bigger tensor: merged where they touch.
            ([1, 1, 2, 3, 2, 4], [0, 0, 24, 8, 4, 1], [0, 0, 24, 8, 4, 1], 0),
        ];
        for (dims, is, os, ib) in cases {
            let src: [u8; 64] = core::array::from_fn(|i| i as u8);
            let (mut got, mut want) = ([0u8; 64], [0u8; 64]);
            let axes: [Axis; RANK] =
                core::array::from_fn(|k| Axis { count: dims[k], input: is[k], output: os[k] });
            copy_as::<1>(&src, &mut got, axes, (ib, 0));
            walk::<1>(&src, &mut want, (dims, is, os), ib);
            assert_eq!(got, want, "{dims:?}");
        }
        // The transpose loops over its longer contiguous axis innermost.
        let axes = [1, 1, 1, 4, 5, 3].map(|c| Axis { count: c, input: 0, output: 0 });
        let mut t = axes;
        (t[3].input, t[4].input, t[5].input) = (5, 1, 20);
        (t[3].output, t[4].output, t[5].output) = (15, 3, 1);
        let (order, n) = loop_order(t);
        assert_eq!((n, order[n - 1].count, order[n - 1].input), (3, 5, 1));
    }
}
