//! Printing of dense elements attributes: `dense<>` without elements, the single value when
//! every element is the same (a splat), nested lists up to [`MAX_LISTED`] elements, a hex
//! blob of the raw bytes beyond. Every form reads back to the same bytes: floats print in a
//! form that rounds back to the same bits, or (infinities, NaN) as their bit pattern.

use std::fmt::Write as _;

use hostrt_core::bef::format::dense as codes;

use super::attr::{float, normalize_exponent};
use crate::ast::DenseAttr;
use crate::dense::{Elem, FloatFormat, parse_decimal, tensor_type_name, to_f64};

/// Most elements printed as a list; larger attributes print as hex.
pub(super) const MAX_LISTED: usize = 16;

/// `dense<...> : tensor<...>`.
pub(super) fn dense(out: &mut String, d: &DenseAttr) {
    let elem = codes::code(&d.elem.0).and_then(Elem::of_code);
    let size = elem.map_or(0, Elem::bytes);
    let elements =
        d.dims.iter().try_fold(1usize, |n, d| usize::try_from(*d).ok().and_then(|d| n.checked_mul(d)));
    out.push_str("dense<");
    match elem {
        // Malformed (a hand-built AST): the bytes as they are, which the parser rejects.
        Some(_) if elements.and_then(|n| n.checked_mul(size)) != Some(d.data.len()) => hex(out, &d.data),
        None => hex(out, &d.data),
        Some(_) if d.data.is_empty() => {}
        Some(elem) => {
            let first = &d.data[..size];
            if d.data.chunks_exact(size).all(|c| c == first) {
                element(out, elem, first);
            } else if d.data.len() / size <= MAX_LISTED {
                list(out, elem, &d.dims, &mut d.data.chunks_exact(size));
            } else {
                hex(out, &d.data);
            }
        }
    }
    out.push_str("> : ");
    out.push_str(&tensor_type_name(&d.elem.0, &d.dims));
}

/// `"0x0000803F"`.
fn hex(out: &mut String, data: &[u8]) {
    out.push_str("\"0x");
    for b in data {
        let _ = write!(out, "{b:02X}");
    }
    out.push('"');
}

/// `[[1, 2], [3, 4]]` for dims `[2, 2]`.
fn list<'d>(out: &mut String, elem: Elem, dims: &[i64], elements: &mut impl Iterator<Item = &'d [u8]>) {
    let Some((n, inner)) = dims.split_first() else {
        if let Some(e) = elements.next() {
            element(out, elem, e);
        }
        return;
    };
    out.push('[');
    for i in 0..*n {
        if i > 0 {
            out.push_str(", ");
        }
        list(out, elem, inner, elements);
    }
    out.push(']');
}

/// One element from its little-endian bytes.
fn element(out: &mut String, elem: Elem, bytes: &[u8]) {
    let mut word = [0u8; 8];
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    let raw = u64::from_le_bytes(word);
    match elem {
        Elem::Bool => out.push_str(if raw != 0 { "true" } else { "false" }),
        Elem::Int { unsigned: true, .. } => {
            let _ = write!(out, "{raw}");
        }
        Elem::Int { bytes, .. } => {
            let shift = 64 - 8 * bytes as u32;
            let _ = write!(out, "{}", (raw << shift) as i64 >> shift);
        }
        Elem::Float(f) => out.push_str(&float_bits(raw, f)),
        Elem::Complex(f) => {
            let (re, im) = bytes.split_at(bytes.len() / 2);
            out.push('(');
            element(out, Elem::Float(f), re);
            out.push_str(", ");
            element(out, Elem::Float(f), im);
            out.push(')');
        }
    }
}

/// A float of format `f` given by its bits, as text that reads back to those bits.
fn float_bits(bits: u64, f: FloatFormat) -> String {
    match f {
        // Not through `f64`, which would quiet a signalling NaN.
        FloatFormat::F32 if !f32::from_bits(bits as u32).is_finite() => format!("0x{bits:08X}"),
        FloatFormat::F32 => float(f64::from(f32::from_bits(bits as u32)), "f32"),
        FloatFormat::F64 => float(f64::from_bits(bits), "f64"),
        FloatFormat::F16 | FloatFormat::BF16 => {
            let v = to_f64(bits, f);
            if !v.is_finite() {
                return format!("0x{bits:04X}");
            }
            let reads_back = |text: &str| {
                let (neg, magnitude) = text.strip_prefix('-').map_or((false, text), |m| (true, m));
                parse_decimal(magnitude, neg, f) == Ok(bits)
            };
            // Seven digits always suffice; the shortest form of the exact value is the fallback.
            let six = normalize_exponent(&format!("{:.6e}", v as f32));
            if reads_back(&six) { six } else { normalize_exponent(&format!("{v:e}")) }
        }
    }
}
