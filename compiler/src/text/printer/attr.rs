//! Printing of attribute values, numbers, strings, symbols and locations.

use std::fmt::Write as _;

use crate::ast::{Attr, Loc, NamedAttr};

/// Whether `s` can be written without quotes (`[A-Za-z_][A-Za-z0-9_$.]*`).
fn is_bare_ident(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.'))
}

/// `"text"` with `"`, `\`, newline, tab and other control characters escaped.
pub(super) fn string_lit(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii_control() => {
                let _ = write!(out, "\\{:02X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `@name`, or `@"name"` when it is not a bare identifier.
pub(super) fn symbol(s: &str) -> String {
    if is_bare_ident(s) { format!("@{s}") } else { format!("@{}", string_lit(s)) }
}

/// An integer as written for type `ty` (`ui64` values are stored as bit patterns).
pub(super) fn int(value: i64, ty: &str) -> String {
    if ty == "ui64" { (value as u64).to_string() } else { value.to_string() }
}

/// `1.000000e-01` style when that reads back as the same value of type `ty` (f32 precision for
/// `f32`), else the shortest round-tripping form, else (infinities, NaN) the bit pattern in hex.
pub(in crate::text) fn float(value: f64, ty: &str) -> String {
    let is_f32 = ty == "f32";
    let same = |text: &str| {
        if is_f32 {
            text.parse::<f32>().is_ok_and(|v| v.to_bits() == (value as f32).to_bits())
        } else {
            text.parse::<f64>().is_ok_and(|v| v.to_bits() == value.to_bits())
        }
    };
    if value.is_finite() {
        let six = normalize_exponent(&format!("{value:.6e}"));
        if same(&six) {
            return six;
        }
        let shortest = if is_f32 { format!("{:e}", value as f32) } else { format!("{value:e}") };
        return normalize_exponent(&shortest);
    }
    if is_f32 { format!("0x{:08X}", (value as f32).to_bits()) } else { format!("0x{:016X}", value.to_bits()) }
}

/// Rust's `1.5e-7` / `1e3` to MLIR's `1.5e-07` / `1.0e+03` (a `.` is required by the lexer).
pub(super) fn normalize_exponent(s: &str) -> String {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let dot = if mantissa.contains('.') { "" } else { ".0" };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{dot}e{sign}{:02}", exp.unsigned_abs())
}

/// An attribute value.
pub(super) fn attr(out: &mut String, a: &Attr) {
    match a {
        Attr::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Attr::Int { value, ty } => {
            let _ = write!(out, "{} : {}", int(*value, &ty.0), ty.0);
        }
        Attr::Float { value, ty } => {
            let _ = write!(out, "{} : {}", float(*value, &ty.0), ty.0);
        }
        Attr::String(s) => out.push_str(&string_lit(s)),
        Attr::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                attr(out, item);
            }
            out.push(']');
        }
        Attr::Symbol(s) => out.push_str(&symbol(s)),
        Attr::Dict(entries) => dict(out, entries),
        Attr::Type(t) => out.push_str(&t.0),
        Attr::Unit => out.push_str("unit"),
        Attr::Dense(d) => super::dense::dense(out, d),
    }
}

/// An attribute written in a custom form, as MLIR prints one there: like [`attr`], except
/// that array elements of the default types drop them (`[1, -1, 2.500000e+00]` for
/// `[1 : i64, -1 : i64, 2.5 : f64]`); the parser reads bare literals back with those types.
pub(super) fn custom_value(out: &mut String, a: &Attr) {
    let Attr::Array(items) = a else {
        return attr(out, a);
    };
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match item {
            Attr::Int { value, ty } if ty.0 == "i64" => out.push_str(&value.to_string()),
            // Infinities and NaN print as bit patterns, which read back as integers when bare.
            Attr::Float { value, ty } if ty.0 == "f64" && value.is_finite() => {
                out.push_str(&float(*value, "f64"))
            }
            _ => custom_value(out, item),
        }
    }
    out.push(']');
}

/// `{a = 1 : i64, flag}` sorted by name.
pub(super) fn dict(out: &mut String, attrs: &[NamedAttr]) {
    let mut sorted: Vec<&NamedAttr> = attrs.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    out.push('{');
    for (i, entry) in sorted.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if is_bare_ident(&entry.name) {
            out.push_str(&entry.name);
        } else {
            out.push_str(&string_lit(&entry.name));
        }
        if entry.value != Attr::Unit {
            out.push_str(" = ");
            attr(out, &entry.value);
        }
    }
    out.push('}');
}

/// `loc("file":L:C)`, `loc("name")`, `loc(fused["name", "file":L:C])` or `loc(unknown)`.
pub(super) fn loc(out: &mut String, loc: &Loc) {
    match loc {
        Loc::FileLineCol { file, line, col } => {
            let _ = write!(out, "loc({}:{line}:{col})", string_lit(file));
        }
        Loc::Name(name) => {
            let _ = write!(out, "loc({})", string_lit(name));
        }
        Loc::Fused { name, file, line, col } => {
            let _ = write!(out, "loc(fused[{}, {}:{line}:{col}])", string_lit(name), string_lit(file));
        }
        Loc::Unknown => out.push_str("loc(unknown)"),
    }
}
