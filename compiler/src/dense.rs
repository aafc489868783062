//! Dense elements attributes (`dense<...> : tensor<2x3xf32>`), shared by the parser, the
//! printer, the BEF writer and the decoder: their element types, tensor types and BEF
//! payloads (docs/bef.md, "Attributes"), and the rounding of decimal literals to the binary
//! float formats, the 16-bit ones (f16, bf16) included.

use std::cmp::Ordering;

use hostrt_core::bef::format::dense::{self as codes, MAX_RANK, TYPES};

use crate::ast::{DenseAttr, Type};

/// Most data bytes one dense attribute may hold (1 GiB): far more than a program embeds, and
/// small text such as `dense<0.0> : tensor<99999999999xf32>` cannot ask for unbounded memory.
pub(crate) const MAX_DATA_BYTES: usize = 1 << 30;

/// A binary floating-point format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FloatFormat {
    F16,
    BF16,
    F32,
    F64,
}

impl FloatFormat {
    /// The MLIR type name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FloatFormat::F16 => "f16",
            FloatFormat::BF16 => "bf16",
            FloatFormat::F32 => "f32",
            FloatFormat::F64 => "f64",
        }
    }

    /// `(stored mantissa bits, exponent bits)`.
    fn layout(self) -> (u32, u32) {
        match self {
            FloatFormat::F16 => (10, 5),
            FloatFormat::BF16 => (7, 8),
            FloatFormat::F32 => (23, 8),
            FloatFormat::F64 => (52, 11),
        }
    }

    /// Width in bits.
    pub(crate) fn bits(self) -> u32 {
        let (man, exp) = self.layout();
        1 + man + exp
    }

    /// Width in bytes.
    pub(crate) fn bytes(self) -> usize {
        self.bits() as usize / 8
    }
}

/// What an element of a dense attribute is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elem {
    /// `i1`: one byte, 0 or 1.
    Bool,
    /// `iN` (signless: any N-bit pattern) or `uiN`.
    Int {
        bytes: usize,
        unsigned: bool,
    },
    Float(FloatFormat),
    /// `complex<f32>` / `complex<f64>`: the real part, then the imaginary part.
    Complex(FloatFormat),
}

impl Elem {
    /// The element kind of a [`codes::TYPES`] code.
    pub(crate) fn of_code(code: u8) -> Option<Elem> {
        let name = TYPES.get(code as usize)?.1;
        Some(match name {
            "i1" => Elem::Bool,
            "f16" => Elem::Float(FloatFormat::F16),
            "bf16" => Elem::Float(FloatFormat::BF16),
            "f32" => Elem::Float(FloatFormat::F32),
            "f64" => Elem::Float(FloatFormat::F64),
            "complex<f32>" => Elem::Complex(FloatFormat::F32),
            "complex<f64>" => Elem::Complex(FloatFormat::F64),
            _ => Elem::Int { bytes: codes::size(code), unsigned: name.starts_with("ui") },
        })
    }

    /// Width in bytes.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Elem::Bool => 1,
            Elem::Int { bytes, .. } => bytes,
            Elem::Float(f) => f.bytes(),
            Elem::Complex(f) => 2 * f.bytes(),
        }
    }
}

/// A ranked, static tensor type with a dense element type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TensorType {
    /// [`codes::TYPES`] code of the element type.
    pub code: u8,
    pub elem: Elem,
    pub dims: Vec<i64>,
    /// Number of elements (the product of `dims`).
    pub elements: usize,
}

impl TensorType {
    /// The element type's MLIR name.
    pub(crate) fn elem_name(&self) -> &'static str {
        TYPES[self.code as usize].1
    }
}

/// The element types a dense attribute may have, for messages.
fn type_list() -> String {
    let names: Vec<&str> = TYPES.iter().map(|t| t.1).collect();
    let (last, rest) = names.split_last().unwrap_or((&"", &[]));
    format!("{} or {last}", rest.join(", "))
}

/// Reads the type of a dense attribute: `tensor<2x3xf32>`, `tensor<i64>`, `tensor<0xf32>`,
/// `tensor<4xcomplex<f32>>`; errors say what is wrong with it.
pub(crate) fn parse_tensor_type(ty: &str) -> Result<TensorType, String> {
    let ranked = || format!("a dense attribute needs a ranked tensor type, found '{ty}'");
    let body = ty.strip_prefix("tensor<").and_then(|b| b.strip_suffix('>')).ok_or_else(ranked)?;
    let mut rest = body.trim();
    let mut dims = Vec::new();
    loop {
        match rest.bytes().next() {
            Some(b'0'..=b'9') => {}
            Some(b'?') => return Err(format!("dynamic dimension '?' in the dense attribute type '{ty}'")),
            Some(b'*') => return Err(ranked()),
            Some(b'-') => return Err(format!("negative dimension in the dense attribute type '{ty}'")),
            _ => break,
        }
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, after) = rest.split_at(digits);
        rest = after.strip_prefix('x').ok_or_else(|| format!("invalid tensor type '{ty}'"))?;
        if dims.len() == MAX_RANK {
            return Err(format!("the dense attribute type '{ty}' has more than {MAX_RANK} dimensions"));
        }
        let dim = number.parse::<i64>().map_err(|_| format!("dimension {number} too large in '{ty}'"))?;
        dims.push(dim);
    }
    let code = codes::code(rest).ok_or_else(|| {
        format!("unsupported element type '{rest}' for a dense attribute (expected {})", type_list())
    })?;
    let elem = Elem::of_code(code).ok_or_else(ranked)?;
    let too_large =
        || format!("the dense attribute type '{ty}' is too large (more than {MAX_DATA_BYTES} bytes)");
    let elements = dims
        .iter()
        .try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)))
        .filter(|n| n.checked_mul(elem.bytes()).is_some_and(|b| b <= MAX_DATA_BYTES))
        .ok_or_else(too_large)?;
    Ok(TensorType { code, elem, dims, elements })
}

/// `tensor<2x3xf32>` for element type `elem` and `dims`.
pub(crate) fn tensor_type_name(elem: &str, dims: &[i64]) -> String {
    let mut s = String::from("tensor<");
    for d in dims {
        s.push_str(&d.to_string());
        s.push('x');
    }
    s.push_str(elem);
    s.push('>');
    s
}

/// The element-type code and the BEF payload of `d` (`u64` rank, `i64` dims, the data), or
/// why `d` is not a valid dense attribute (the parser only makes valid ones).
pub(crate) fn encode(d: &DenseAttr) -> Result<(u8, Vec<u8>), String> {
    let code = codes::code(&d.elem.0)
        .ok_or_else(|| format!("unsupported dense attribute element type '{}'", d.elem.0))?;
    if d.dims.len() > MAX_RANK {
        return Err(format!("dense attribute of rank {} (at most {MAX_RANK})", d.dims.len()));
    }
    let elements =
        d.dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    let expected = elements.and_then(|n| n.checked_mul(codes::size(code)));
    if expected != Some(d.data.len()) || d.data.len() > MAX_DATA_BYTES {
        let ty = tensor_type_name(&d.elem.0, &d.dims);
        return Err(format!("dense attribute data of {} bytes does not match its type '{ty}'", d.data.len()));
    }
    if code == 0 && d.data.iter().any(|b| *b > 1) {
        return Err("dense attribute of type i1 with a byte other than 0 or 1".to_string());
    }
    let mut payload = Vec::with_capacity(8 * (d.dims.len() + 1) + d.data.len());
    payload.extend_from_slice(&(d.dims.len() as u64).to_le_bytes());
    for dim in &d.dims {
        payload.extend_from_slice(&dim.to_le_bytes());
    }
    payload.extend_from_slice(&d.data);
    Ok((code, payload))
}

/// The attribute a DENSE payload holds (`None` if it is malformed; `load` verifies it).
pub(crate) fn decode(code: u8, payload: &[u8]) -> Option<DenseAttr> {
    let name = TYPES.get(code as usize)?.1;
    let word = |i: usize| {
        let at = i.checked_mul(8)?;
        payload.get(at..at.checked_add(8)?).and_then(|w| w.try_into().ok()).map(i64::from_le_bytes)
    };
    let rank = usize::try_from(word(0)?).ok().filter(|r| *r <= MAX_RANK)?;
    let dims = (1..=rank).map(word).collect::<Option<Vec<i64>>>()?;
    let data = payload.get(8 * (rank + 1)..)?.to_vec();
    Some(DenseAttr { elem: Type(name.to_string()), dims, data })
}

/// 2^k as an `f64`, for `k` in the normal range.
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// The value of a float of format `f` given by its bit pattern (exact: every format here fits
/// in an `f64`).
pub(crate) fn to_f64(bits: u64, f: FloatFormat) -> f64 {
    let (man, exp) = f.layout();
    let emax = (1i32 << (exp - 1)) - 1;
    let negative = (bits >> (man + exp)) & 1 == 1;
    let e = ((bits >> man) & ((1 << exp) - 1)) as i32;
    let frac = bits & ((1 << man) - 1);
    let magnitude = if e == (1 << exp) - 1 {
        if frac == 0 { f64::INFINITY } else { f64::NAN }
    } else if e == 0 {
        frac as f64 * pow2(1 - emax - man as i32)
    } else {
        (frac | 1 << man) as f64 * pow2(e - emax - man as i32)
    };
    if negative { -magnitude } else { magnitude }
}

/// The finite `v` rounded to nearest, ties to even, in format `f`, as a bit pattern; `None`
/// if that overflows to infinity. Exactly at a tie (halfway between two values of `f`),
/// `exact` orders the true value against `v`: rounding a decimal through `f64` first could
/// otherwise make a tie out of a value just above or below one.
fn round_to(v: f64, f: FloatFormat, exact: impl FnOnce() -> Ordering) -> Option<u64> {
    let (man, exp) = f.layout();
    let sign = u64::from(v.is_sign_negative()) << (man + exp);
    let bits = v.abs().to_bits();
    // |v| = m * 2^e.
    let (m, e) = match (bits >> 52) as i32 {
        0 => (bits, -1074),
        be => (bits & ((1 << 52) - 1) | 1 << 52, be - 1075),
    };
    if m == 0 {
        return Some(sign);
    }
    let emax = (1i32 << (exp - 1)) - 1;
    let top = 63 - m.leading_zeros() as i32 + e;
    // The exponent of the result's last mantissa bit.
    let mut q = top.max(1 - emax) - man as i32;
    let shift = q - e;
    let mut mant = if shift <= 0 {
        m << -shift
    } else if shift > 60 {
        0 // below half the smallest subnormal (m < 2^53)
    } else {
        let (kept, rem, half) = (m >> shift, m & ((1 << shift) - 1), 1u64 << (shift - 1));
        let up = match rem.cmp(&half) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => match exact() {
                Ordering::Greater => true,
                Ordering::Less => false,
                Ordering::Equal => kept & 1 == 1,
            },
        };
        kept + u64::from(up)
    };
    if mant == 1 << (man + 1) {
        mant >>= 1;
        q += 1;
    }
    if mant >> man == 0 {
        return Some(sign | mant); // subnormal or zero
    }
    let biased = q + man as i32 + emax;
    if biased >= (1 << exp) - 1 {
        return None;
    }
    Some(sign | (biased as u64) << man | (mant & ((1 << man) - 1)))
}

/// Why a decimal literal has no value in a format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DecimalError {
    /// Not a decimal literal.
    Invalid,
    /// Finite, but beyond the format's largest value (it would round to infinity).
    OutOfRange,
}

/// The decimal literal `text` (`1.5`, `2.`, `1.0e-3`, `65504`; no sign), negated if `neg`,
/// correctly rounded (to nearest, ties to even) to format `f`, as a bit pattern.
pub(crate) fn parse_decimal(text: &str, neg: bool, f: FloatFormat) -> Result<u64, DecimalError> {
    if !text.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        return Err(DecimalError::Invalid); // `inf`, `nan`, signs: not literals here
    }
    let (magnitude, width) = match f {
        // The standard library rounds decimals to f32 and f64 correctly.
        FloatFormat::F32 => {
            let v = text.parse::<f32>().map_err(|_| DecimalError::Invalid)?;
            (v.is_finite().then(|| u64::from(v.to_bits())), 32)
        }
        FloatFormat::F64 => {
            let v = text.parse::<f64>().map_err(|_| DecimalError::Invalid)?;
            (v.is_finite().then(|| v.to_bits()), 64)
        }
        FloatFormat::F16 | FloatFormat::BF16 => {
            let v = text.parse::<f64>().map_err(|_| DecimalError::Invalid)?;
            let bits = if v.is_finite() { round_to(v, f, || cmp_decimal(text, v)) } else { None };
            (bits, f.bits())
        }
    };
    let magnitude = magnitude.ok_or(DecimalError::OutOfRange)?;
    Ok(if neg { magnitude | 1 << (width - 1) } else { magnitude })
}

/// A non-negative number `0.d1 d2 ... dn × 10^point`, with neither leading nor trailing zero
/// digits (zero has no digits), so that comparing `(point, digits)` compares values.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    digits: Vec<u8>,
    point: i64,
}

impl Decimal {
    /// The integer of decimal `digits` (most significant first) times `10^exp10`.
    fn new(mut digits: Vec<u8>, mut exp10: i64) -> Decimal {
        let leading = digits.iter().take_while(|d| **d == 0).count();
        digits.drain(..leading);
        while digits.last() == Some(&0) {
            digits.pop();
            exp10 = exp10.saturating_add(1);
        }
        let point = exp10.saturating_add(digits.len() as i64);
        Decimal { digits, point }
    }

    /// The exact value of the finite, non-negative `v`.
    fn of_f64(v: f64) -> Decimal {
        let bits = v.to_bits() & !(1 << 63);
        let (mut m, mut e) = match (bits >> 52) as i32 {
            0 => (bits, -1074),
            be => (bits & ((1 << 52) - 1) | 1 << 52, be - 1075),
        };
        if m == 0 {
            return Decimal { digits: Vec::new(), point: 0 };
        }
        let tz = m.trailing_zeros();
        m >>= tz;
        e += tz as i32;
        // Little-endian decimal digits of m * 2^e (e >= 0) or m * 5^-e (then times 10^e).
        let mut digits: Vec<u8> = m.to_string().bytes().rev().map(|b| b - b'0').collect();
        let factor = if e >= 0 { 2 } else { 5 };
        for _ in 0..e.unsigned_abs() {
            let mut carry = 0;
            for d in digits.iter_mut() {
                let x = *d * factor + carry;
                *d = x % 10;
                carry = x / 10;
            }
            if carry > 0 {
                digits.push(carry);
            }
        }
        digits.reverse();
        Decimal::new(digits, i64::from(e.min(0)))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => self.point.cmp(&other.point).then_with(|| self.digits.cmp(&other.digits)),
        }
    }
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Compares the decimal literal `text` (digits, an optional fraction, an optional exponent;
/// no sign) with the finite, non-negative `v`, exactly.
fn cmp_decimal(text: &str, v: f64) -> Ordering {
    let (mantissa, exponent) = text.split_once(['e', 'E']).unwrap_or((text, "0"));
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let (negative, exp_digits) = match exponent.as_bytes().first() {
        Some(b'-') => (true, &exponent[1..]),
        Some(b'+') => (false, &exponent[1..]),
        _ => (false, exponent),
    };
    // Saturating: no tie is that far from 1 anyway.
    let exp10 = exp_digits
        .bytes()
        .filter(u8::is_ascii_digit)
        .fold(0i64, |n, d| (n * 10 + i64::from(d - b'0')).min(1 << 50));
    let exp10 = if negative { -exp10 } else { exp10 };
    let digits = int.bytes().chain(frac.bytes()).filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    Decimal::new(digits, exp10 - frac.len() as i64).cmp(&Decimal::of_f64(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn half(text: &str) -> Result<u64, DecimalError> {
        parse_decimal(text, false, FloatFormat::F16)
    }

    fn bf16(text: &str) -> Result<u64, DecimalError> {
        parse_decimal(text, false, FloatFormat::BF16)
    }

    #[test]
    fn every_16_bit_value_converts_back_to_itself() {
        for f in [FloatFormat::F16, FloatFormat::BF16] {
            for bits in 0..=u16::MAX {
                let v = to_f64(u64::from(bits), f);
                if v.is_finite() {
                    assert_eq!(round_to(v, f, || unreachable!()), Some(u64::from(bits)), "{f:?} {bits:#x}");
                    // What the printer writes (7 significant digits) reads back exactly.
                    let text = format!("{:.6e}", v.abs() as f32);
                    assert_eq!(parse_decimal(&text, v.is_sign_negative(), f), Ok(u64::from(bits)), "{text}");
                }
            }
        }
    }

    #[test]
    fn rounding_to_f32_matches_the_standard_library() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Values around f32's range, subnormals and ties included.
            let v = match i % 4 {
                0 => f64::from_bits(x),
                1 => f64::from_bits(x & !(0x3ff << 52) | (0x380 + (x >> 40) % 0x100) << 52),
                2 => f64::from_bits(x & 0x800f_ffff_f000_0000 | (0x360 + (x >> 40) % 0x30) << 52),
                // Exactly halfway between two f32 values.
                _ => f64::from_bits(x & 0x800f_ffff_e000_0000 | 0x1000_0000 | 0x3ff << 52),
            };
            if !v.is_finite() {
                continue;
            }
            let expected = v as f32;
            let got = round_to(v, FloatFormat::F32, || Ordering::Equal);
            if expected.is_finite() {
                assert_eq!(got, Some(u64::from(expected.to_bits())), "{v:e}");
            } else {
                assert_eq!(got, None, "{v:e}");
            }
        }
    }

    #[test]
    fn decimals_round_correctly_to_16_bits() {
        assert_eq!(half("1.0"), Ok(0x3c00));
        assert_eq!(half("0.333333333"), Ok(0x3555));
        assert_eq!(half("65504.0"), Ok(0x7bff));
        // Halfway between 65504 and 65536 (infinity): ties to even is infinity.
        assert_eq!(half("65519.99"), Ok(0x7bff));
        assert_eq!(half("65520.0"), Err(DecimalError::OutOfRange));
        assert_eq!(half("70000.0"), Err(DecimalError::OutOfRange));
        assert_eq!(half("1.0e-8"), Ok(0)); // below half the smallest subnormal 2^-24
        assert_eq!(half("5.96e-8"), Ok(1));
        assert_eq!(half("6.1e-5"), Ok(0x3ff)); // the largest subnormal
        assert_eq!(bf16("1.0e-8"), Ok(0x322c));
        assert_eq!(bf16("3.0e38"), Ok(0x7f62));
        assert_eq!(bf16("3.4e38"), Err(DecimalError::OutOfRange));
        assert_eq!(parse_decimal("2.0", true, FloatFormat::F16), Ok(0xc000));
        assert_eq!(parse_decimal("0.0", true, FloatFormat::BF16), Ok(0x8000));
        assert_eq!(parse_decimal("1.0e39", false, FloatFormat::F32), Err(DecimalError::OutOfRange));
        assert_eq!(parse_decimal("1.0e309", false, FloatFormat::F64), Err(DecimalError::OutOfRange));
        assert_eq!(parse_decimal("inf", false, FloatFormat::F64), Err(DecimalError::Invalid));
    }

    #[test]
    fn ties_are_decided_by_the_exact_decimal() {
        // 1 + 2^-11 is halfway between the f16 values 1 and 1 + 2^-10: ties to even (1). A
        // decimal a hair above or below it parses to the same f64, but rounds up or down.
        assert_eq!(half("1.00048828125"), Ok(0x3c00));
        let above = format!("1.00048828125{}1", "0".repeat(30));
        let below = format!("1.00048828124{}9", "9".repeat(30));
        assert_eq!(above.parse::<f64>(), Ok(1.00048828125));
        assert_eq!(below.parse::<f64>(), Ok(1.00048828125));
        assert_eq!(half(&above), Ok(0x3c01));
        assert_eq!(half(&below), Ok(0x3c00));
        // 1 + 3 * 2^-11 ties to even upwards; just below it goes down.
        assert_eq!(half("1.00146484375"), Ok(0x3c02));
        assert_eq!(half(&format!("1.00146484374{}e0", "9".repeat(30))), Ok(0x3c01));
        // The tie at the top: a hair below 65520 is the largest value, not infinity.
        assert_eq!(half(&format!("65519.{}", "9".repeat(40))), Ok(0x7bff));
        assert_eq!(half(&format!("65520.{}1", "0".repeat(40))), Err(DecimalError::OutOfRange));
        // Subnormal ties: 2^-25 (halfway between 0 and 2^-24) ties to 0.
        assert_eq!(half("2.98023223876953125e-8"), Ok(0));
        assert_eq!(half("2.98023223876953125000000000000000001e-8"), Ok(1));
        // bf16: 1 + 2^-8 ties to 1; with a tiny excess it goes up.
        assert_eq!(bf16("1.00390625"), Ok(0x3f80));
        assert_eq!(bf16(&format!("1.00390625{}1", "0".repeat(40))), Ok(0x3f81));
    }

    #[test]
    fn exact_decimals() {
        assert_eq!(cmp_decimal("0.1", 0.1), Ordering::Less); // 0.1 as f64 is a bit more
        assert_eq!(cmp_decimal("0.5", 0.5), Ordering::Equal);
        assert_eq!(cmp_decimal("5.0e-1", 0.5), Ordering::Equal);
        assert_eq!(cmp_decimal("00050.000e-2", 0.5), Ordering::Equal);
        assert_eq!(cmp_decimal("1024", 1024.0), Ordering::Equal);
        assert_eq!(cmp_decimal("1025", 1024.0), Ordering::Greater);
        assert_eq!(cmp_decimal("0.0", 0.0), Ordering::Equal);
        assert_eq!(cmp_decimal("1.0e-400", 0.0), Ordering::Greater);
        assert_eq!(cmp_decimal("4.9406564584124654e-324", f64::from_bits(1)), Ordering::Less);
        assert_eq!(cmp_decimal("1.0e99999999999999999999", f64::MAX), Ordering::Greater);
    }

    #[test]
    fn tensor_types() {
        let t = parse_tensor_type("tensor<2x3xf32>").expect("valid");
        assert_eq!((t.code, t.dims.as_slice(), t.elements, t.elem_name()), (11, &[2, 3][..], 6, "f32"));
        let t = parse_tensor_type("tensor<i64>").expect("valid");
        assert_eq!((t.dims.len(), t.elements), (0, 1));
        let t = parse_tensor_type("tensor<0x3xcomplex<f64>>").expect("valid");
        assert_eq!((t.elem, t.elements), (Elem::Complex(FloatFormat::F64), 0));
        assert_eq!(tensor_type_name("complex<f32>", &[4, 0]), "tensor<4x0xcomplex<f32>>");
        assert_eq!(tensor_type_name("i1", &[]), "tensor<i1>");
    }
}
