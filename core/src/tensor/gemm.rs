//! Matrix multiplication behind the matmul and convolution kernels: `C := alpha·A·B +
//! beta·C` over row-major slices. `f32` uses the `gemm` crate's f32 kernel (`gemm-f32`)
//! where `std` is on (packed, cache-blocked, AVX2/FMA or NEON picked at run time, one
//! thread) and a portable blocked loop on bare metal; other types use the reference loop.

/// The reference loop for any element type (`i-k-j` order, so the inner loop runs along
/// rows of `B` and `C`). With `beta == zero`, `C` is not read. Integer callers get exact
/// wrapping results; floats round differently from [`sgemm`].
#[allow(clippy::too_many_arguments)]
pub fn reference<T: Copy + PartialEq>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: &[T],
    b: &[T],
    beta: T,
    c: &mut [T],
    zero: T,
    add: impl Fn(T, T) -> T,
    mul: impl Fn(T, T) -> T,
) {
    assert!(a.len() >= m * k && b.len() >= k * n && c.len() >= m * n, "gemm operands are too short");
    if n == 0 {
        return;
    }
    for (i, row) in c.chunks_exact_mut(n).take(m).enumerate() {
        for x in row.iter_mut() {
            *x = if beta == zero { zero } else { mul(beta, *x) };
        }
        for (p, brow) in b.chunks_exact(n).take(k).enumerate() {
            let s = mul(alpha, a[i * k + p]);
            for (x, y) in row.iter_mut().zip(brow) {
                *x = add(*x, mul(s, *y));
            }
        }
    }
}

/// `C := alpha·A·B + beta·C` in `f32`, `A` [m, k], `B` [k, n], `C` [m, n], all row-major and
/// at least that long (shorter slices panic: callers check shapes first).
#[allow(clippy::too_many_arguments)]
pub fn sgemm(m: usize, k: usize, n: usize, alpha: f32, a: &[f32], b: &[f32], beta: f32, c: &mut [f32]) {
    sgemm_lda(m, k, n, alpha, a, k, b, beta, c)
}

/// [`sgemm`] with `A`'s rows `lda` elements apart (`lda >= k`): row `i` of `A` is
/// `a[i·lda .. i·lda + k]`. Convolution uses it to read input pixels a stride apart in place.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_lda(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    b: &[f32],
    beta: f32,
    c: &mut [f32],
) {
    check(m, k, n, a, lda, b, c);
    #[cfg(feature = "std")]
    {
        // A small product in the portable loop: the `gemm` crate's dispatch and packing cost
        // some 300 ns a call, which a convolution of a few channels pays per output row and
        // tap (two 1x1 convolutions of 6x6x4: 3.7 -> 1.5 us).
        if m.saturating_mul(k).saturating_mul(n) <= SMALL_PRODUCT {
            return sgemm_portable(m, k, n, alpha, a, lda, b, beta, c);
        }
        let (ra, rn) = (lda as isize, n as isize);
        // `gemm` computes dst := g_alpha·dst + g_beta·lhs·rhs and reads dst only when told to.
        let read_c = beta != 0.0;
        // SAFETY: `check` proved that row i < m of A lies within `a` at i·lda..i·lda + k, and
        // that `b` and `c` hold k·n and m·n elements; the (column, row) strides (1, lda),
        // (1, n), (1, n) describe exactly those matrices; `c` is borrowed mutably, so it
        // overlaps neither input; with read_c false `c` is only written.
        unsafe {
            raw::row_major(
                m,
                k,
                n,
                c.as_mut_ptr(),
                read_c,
                (a.as_ptr(), ra, 1),
                (b.as_ptr(), rn, 1),
                beta,
                alpha,
            )
        };
    }
    #[cfg(not(feature = "std"))]
    sgemm_portable(m, k, n, alpha, a, lda, b, beta, c);
}

/// Multiply-adds up to which [`sgemm_lda`] runs the portable loop where `std` is on.
#[cfg(feature = "std")]
const SMALL_PRODUCT: usize = 4096;

/// `C := A·B` in `f32`, `A` [m, k] and `B` [k, n] at any element strides `(row, column)` (a
/// transposed or broadcast operand is a matter of strides), `C` [m, n] row-major. Panics when
/// a stride reaches past its slice or `C` is too short (callers check shapes first).
#[allow(clippy::too_many_arguments)]
pub fn sgemm_strided(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    (a_rs, a_cs): (usize, usize),
    b: &[f32],
    (b_rs, b_cs): (usize, usize),
    c: &mut [f32],
) {
    let reach = |rows: usize, cols: usize, rs: usize, cs: usize| {
        if rows == 0 || cols == 0 {
            return Some(0);
        }
        (rows - 1).checked_mul(rs)?.checked_add((cols - 1).checked_mul(cs)?)?.checked_add(1)
    };
    let fits = |r: Option<usize>, len: usize| r.is_some_and(|r| r <= len);
    assert!(
        fits(reach(m, k, a_rs, a_cs), a.len())
            && fits(reach(k, n, b_rs, b_cs), b.len())
            && m.checked_mul(n).is_some_and(|mn| mn <= c.len()),
        "gemm operands are too short"
    );
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    #[cfg(feature = "std")]
    {
        let s = |v: usize| v as isize;
        // SAFETY: the assertion above proved that every element (i·a_rs + p·a_cs) of A for
        // i < m, p < k lies in `a`, every (p·b_rs + j·b_cs) of B in `b`, and that `c` holds
        // m·n elements at (column, row) strides (1, n); `c` is borrowed mutably, so it
        // overlaps neither input, and with read_dst false it is only written.
        unsafe {
            raw::row_major(
                m,
                k,
                n,
                c.as_mut_ptr(),
                false,
                (a.as_ptr(), s(a_rs), s(a_cs)),
                (b.as_ptr(), s(b_rs), s(b_cs)),
                0.0,
                1.0,
            )
        };
    }
    #[cfg(not(feature = "std"))]
    for (i, row) in c.chunks_exact_mut(n).take(m).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = (0..k).fold(0.0, |acc, p| acc + a[i * a_rs + p * a_cs] * b[p * b_rs + j * b_cs]);
        }
    }
}

/// Operand lengths (and `lda >= k`) for a product of these dims; panics otherwise.
fn check(m: usize, k: usize, n: usize, a: &[f32], lda: usize, b: &[f32], c: &[f32]) {
    let a_len = if m == 0 { 0 } else { (m - 1) * lda + k };
    assert!(
        lda >= k && a.len() >= a_len && b.len() >= k * n && c.len() >= m * n,
        "gemm operands are too short"
    );
}

/// The portable kernel [`sgemm_lda`] uses without `std`: four rows of `C` at a time, so each
/// row of `B` loaded serves four rows (the compiler vectorises the inner loop along `n`).
/// Public so hosts can test and measure what firmware runs.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_portable(
    m: usize,
    k: usize,
    n: usize,
    alpha: f32,
    a: &[f32],
    lda: usize,
    b: &[f32],
    beta: f32,
    c: &mut [f32],
) {
    check(m, k, n, a, lda, b, c);
    if n == 0 {
        return;
    }
    let mut rows = c[..m * n].chunks_exact_mut(4 * n);
    let mut i = 0;
    for block in rows.by_ref() {
        let (r0, rest) = block.split_at_mut(n);
        let (r1, rest) = rest.split_at_mut(n);
        let (r2, r3) = rest.split_at_mut(n);
        for r in [&mut *r0, &mut *r1, &mut *r2, &mut *r3] {
            scale(r, beta);
        }
        for (p, brow) in b.chunks_exact(n).take(k).enumerate() {
            let s = [0, 1, 2, 3].map(|d| alpha * a[(i + d) * lda + p]);
            for j in 0..n {
                let y = brow[j];
                r0[j] += s[0] * y;
                r1[j] += s[1] * y;
                r2[j] += s[2] * y;
                r3[j] += s[3] * y;
            }
        }
        i += 4;
    }
    for row in rows.into_remainder().chunks_exact_mut(n) {
        scale(row, beta);
        for (p, brow) in b.chunks_exact(n).take(k).enumerate() {
            let s = alpha * a[i * lda + p];
            for (x, y) in row.iter_mut().zip(brow) {
                *x += s * y;
            }
        }
        i += 1;
    }
}

fn scale(row: &mut [f32], beta: f32) {
    for x in row.iter_mut() {
        *x = if beta == 0.0 { 0.0 } else { beta * *x };
    }
}

/// The one unsafe call: `gemm-f32`'s kernel (the `gemm` crate's own f32 path, without the
/// dispatch over element types whose kernels every build would compile).
#[cfg(feature = "std")]
mod raw {
    /// `C := dst_scale·C + product_scale·A·B` for `C` [m, n] row-major at `c`, `A` [m, k] and
    /// `B` [k, n] given as (pointer, row stride, column stride); `C` is read only when
    /// `read_c`.
    ///
    /// # Safety
    /// Every element `i·a_rs + p·a_cs` (`i < m`, `p < k`) of `A`, every `p·b_rs + j·b_cs` of
    /// `B` (`j < n`) and `c[..m·n]` lie in live allocations; `C` overlaps neither input and
    /// nothing else accesses it during the call; strides are not negative.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn row_major(
        m: usize,
        k: usize,
        n: usize,
        c: *mut f32,
        read_c: bool,
        (a, a_rs, a_cs): (*const f32, isize, isize),
        (b, b_rs, b_cs): (*const f32, isize, isize),
        dst_scale: f32,
        product_scale: f32,
    ) {
        let kernel = gemm_f32::gemm::f32::get_gemm_fn();
        let none = gemm_common::Parallelism::None;
        let rn = n as isize;
        // The kernels want a column-oriented destination: where C's rows are longer than one
        // element, the call computes C^T = B^T·A^T (as the `gemm` crate's front end does).
        // Operands are (pointer, column stride, row stride) in the kernel's terms.
        let (rows, cols, dst_cs, dst_rs, lhs, rhs) = if n > 1 {
            (n, m, rn, 1, (b, b_rs, b_cs), (a, a_rs, a_cs))
        } else {
            (m, n, 1, rn, (a, a_cs, a_rs), (b, b_cs, b_rs))
        };
        // SAFETY: the caller's contract; both forms read A and B and write C at exactly the
        // elements it names.
        unsafe {
            kernel(
                rows,
                cols,
                k,
                c,
                dst_cs,
                dst_rs,
                read_c,
                lhs.0,
                lhs.1,
                lhs.2,
                rhs.0,
                rhs.1,
                rhs.2,
                dst_scale,
                product_scale,
                false,
                false,
                false,
                none,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use super::*;

    #[test]
    fn strided_operands_multiply_as_their_dense_forms() {
        // A [2, 3] stored transposed (column-major), B [3, 2] row-major with a gap column.
        let a_t = [1.0f32, 4.0, 2.0, 5.0, 3.0, 6.0];
        let b = [7.0f32, 8.0, 0.0, 9.0, 10.0, 0.0, 11.0, 12.0, 0.0];
        let mut c = [0.0f32; 4];
        sgemm_strided(2, 3, 2, &a_t, (1, 2), &b, (3, 1), &mut c);
        assert_eq!(c, [58.0, 64.0, 139.0, 154.0]);
        let mut empty = [5.0f32; 4];
        sgemm_strided(2, 0, 2, &[], (0, 0), &[], (0, 0), &mut empty);
        assert_eq!(empty, [0.0; 4]);
        // Both operands transposed, one output column and many (the kernel's two call forms).
        for (m, k, n) in [(7, 5, 1), (9, 7, 5)] {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0).collect();
            let want = naive(m, k, n, 1.0, &a, &b, 0.0, &vec![0.0; m * n]);
            let a_t: Vec<f32> = (0..m * k).map(|i| a[(i % m) * k + i / m]).collect();
            let b_t: Vec<f32> = (0..k * n).map(|i| b[(i % k) * n + i / k]).collect();
            let mut c = vec![f32::NAN; m * n];
            sgemm_strided(m, k, n, &a_t, (1, m), &b_t, (1, k), &mut c);
            for (g, w) in c.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{m}x{k}x{n}: {g} vs {w}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "gemm operands are too short")]
    fn a_stride_past_its_operand_panics() {
        let mut c = [0.0f32; 4];
        sgemm_strided(2, 3, 2, &[0.0; 5], (1, 2), &[0.0; 9], (3, 1), &mut c);
    }

    #[allow(clippy::too_many_arguments)]
    fn naive(
        m: usize,
        k: usize,
        n: usize,
        alpha: f32,
        a: &[f32],
        b: &[f32],
        beta: f32,
        c: &[f32],
    ) -> Vec<f32> {
        let mut out = Vec::new();
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k).map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j])).sum();
                out.push((f64::from(alpha) * s + f64::from(beta) * f64::from(c[i * n + j])) as f32);
            }
        }
        out
    }

    #[test]
    fn every_kernel_agrees_with_a_naive_product() {
        // Miri interprets every multiply: it skips the large shape.
        let shapes: &[(usize, usize, usize)] =
            &[(1, 1, 1), (5, 3, 7), (9, 17, 4), (0, 3, 2), (3, 0, 2), (13, 8, 1), (64, 65, 33), (200, 30, 1)];
        for &(m, k, n) in if cfg!(miri) { &shapes[..6] } else { shapes } {
            let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 11) as f32 - 5.0) / 4.0).collect();
            let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 13) as f32 - 6.0) / 8.0).collect();
            let c0: Vec<f32> = (0..m * n).map(|i| (i % 3) as f32).collect();
            for (alpha, beta) in [(1.0, 0.0), (0.5, 2.0)] {
                let want = naive(m, k, n, alpha, &a, &b, beta, &c0);
                let mut fast = c0.clone();
                sgemm(m, k, n, alpha, &a, &b, beta, &mut fast);
                let mut portable = c0.clone();
                sgemm_portable(m, k, n, alpha, &a, k, &b, beta, &mut portable);
                let mut reference_out = c0.clone();
                reference(m, k, n, alpha, &a, &b, beta, &mut reference_out, 0.0, |x, y| x + y, |x, y| x * y);
                for got in [&fast, &portable, &reference_out] {
                    for (g, w) in got.iter().zip(&want) {
                        assert!((g - w).abs() <= 1e-4 * (1.0 + w.abs()), "{m}x{k}x{n}: {g} vs {w}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_of_a_may_be_further_apart_than_k() {
        let (m, k, n, lda) = (5, 3, 4, 7);
        let wide: Vec<f32> = (0..(m - 1) * lda + k).map(|i| (i % 9) as f32 - 4.0).collect();
        let packed: Vec<f32> = (0..m).flat_map(|i| wide[i * lda..i * lda + k].to_vec()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.5).collect();
        let want = naive(m, k, n, 1.0, &packed, &b, 0.0, &[0.0; 20]);
        let (mut fast, mut portable) = ([1.0; 20], [1.0; 20]);
        sgemm_lda(m, k, n, 1.0, &wide, lda, &b, 0.0, &mut fast);
        sgemm_portable(m, k, n, 1.0, &wide, lda, &b, 0.0, &mut portable);
        assert_eq!((fast.to_vec(), portable.to_vec()), (want.clone(), want));
    }

    #[test]
    #[should_panic(expected = "gemm operands are too short")]
    fn a_shorter_than_its_rows_panics_before_reading() {
        sgemm_lda(2, 3, 1, 1.0, &[0.0; 5], 3, &[0.0; 3], 0.0, &mut [0.0; 2]);
    }

    #[test]
    fn integer_products_wrap_exactly() {
        let (a, b) = ([i32::MAX, 2], [2, 3]);
        let mut c = [7];
        reference(1, 2, 1, 1, &a, &b, 1, &mut c, 0, i32::wrapping_add, i32::wrapping_mul);
        assert_eq!(c[0], 7i32.wrapping_add(i32::MAX.wrapping_mul(2)).wrapping_add(6));
    }
}
