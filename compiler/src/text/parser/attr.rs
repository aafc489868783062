//! Types, attribute values and attribute dictionaries.

use super::{PResult, Parser};
use crate::ast::{Attr, NamedAttr, Type};
use crate::tensor_ops::canonical_type;
use crate::text::forms::is_float_type;
use crate::text::lexer::{TokKind, Token};

/// Builtin scalar type names besides `iN`, `siN`, `uiN`.
const BUILTIN_TYPES: &[&str] = &["f16", "bf16", "tf32", "f32", "f64", "f80", "f128", "index", "none"];

/// The width `N` of `prefix N` (e.g. `i32` with prefix `i`), if `s` has that shape.
fn width(s: &str, prefix: &str) -> Option<u32> {
    let digits = s.strip_prefix(prefix)?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether a bare identifier names a builtin type.
pub(crate) fn is_builtin_type(s: &str) -> bool {
    BUILTIN_TYPES.contains(&s)
        || width(s, "i").is_some()
        || width(s, "si").is_some()
        || width(s, "ui").is_some()
        || ["tensor<", "memref<", "vector<", "complex<", "tuple<"].iter().any(|p| s.starts_with(p))
}

/// How an integer type constrains literals.
enum IntKind {
    /// `iN`: any N-bit pattern, read as signed.
    Signless(u32),
    Signed(u32),
    Unsigned(u32),
}

fn int_kind(ty: &str) -> Option<IntKind> {
    if ty == "index" {
        return Some(IntKind::Signless(64));
    }
    if let Some(w) = width(ty, "ui") {
        return Some(IntKind::Unsigned(w));
    }
    if let Some(w) = width(ty, "si") {
        return Some(IntKind::Signed(w));
    }
    width(ty, "i").map(IntKind::Signless)
}

/// `-magnitude` or `magnitude` as an `i64` of type `ty`, or why it does not fit. Values of
/// signless types are stored sign-extended (`4294967295 : i32` is -1); `ui64` values above
/// `i64::MAX` are stored as their two's-complement bit pattern.
fn int_value(neg: bool, mag: u128, ty: &str) -> Result<i64, String> {
    let out_of_range = || format!("integer literal out of range for type '{ty}'");
    let kind = int_kind(ty).ok_or_else(|| format!("integer literal is not valid for type '{ty}'"))?;
    let (bits, signed_only, unsigned) = match kind {
        IntKind::Signless(w) => (w, false, false),
        IntKind::Signed(w) => (w, true, false),
        IntKind::Unsigned(w) => (w, false, true),
    };
    if bits == 0 {
        return Err(format!("integer type '{ty}' has no values"));
    }
    // Wider than 64 bits: the value must still fit an i64.
    let (bits, signed_only) = if bits > 64 { (64, true) } else { (bits, signed_only) };
    if neg {
        if (unsigned && mag != 0) || mag > 1u128 << (bits - 1) {
            return Err(out_of_range());
        }
        return i64::try_from(-(mag as i128)).map_err(|_| out_of_range());
    }
    let limit = if signed_only { 1u128 << (bits - 1) } else { 1u128 << bits };
    if mag >= limit {
        return Err(out_of_range());
    }
    if unsigned || bits == 64 {
        return Ok(mag as u64 as i64);
    }
    // Sign-extend the N-bit pattern.
    let shift = 64 - bits;
    Ok(((mag as u64) << shift) as i64 >> shift)
}

impl Parser<'_> {
    /// A type: builtin (`i32`, `f32`, `tensor<...>`) or dialect (`!tfrt.chain`), in its
    /// canonical spelling (`!t.tensor` is stored as `!tfrt_tensor.tensor`).
    pub(in crate::text) fn parse_type(&mut self) -> PResult<Type> {
        let tok = self.tok().clone();
        let text = self.text(&tok);
        let ok = match tok.kind {
            TokKind::Bang => true,
            TokKind::Ident => is_builtin_type(text),
            _ => false,
        };
        if !ok {
            return Err(self.unexpected("a type"));
        }
        let ty = Type(canonical_type(text).to_string());
        self.bump();
        Ok(ty)
    }

    /// One or more comma-separated types.
    pub(in crate::text) fn type_list(&mut self) -> PResult<Vec<Type>> {
        let mut types = vec![self.parse_type()?];
        while self.eat_punct(b',') {
            types.push(self.parse_type()?);
        }
        Ok(types)
    }

    /// `(T, ...)`, possibly empty.
    pub(in crate::text) fn paren_type_list(&mut self) -> PResult<Vec<Type>> {
        self.expect_punct(b'(', "to open a type list")?;
        if self.eat_punct(b')') {
            return Ok(Vec::new());
        }
        let types = self.type_list()?;
        self.expect_punct(b')', "after the type list")?;
        Ok(types)
    }

    /// Result types after `->`: one type or a parenthesised list (`()` for none).
    pub(in crate::text) fn result_types(&mut self) -> PResult<Vec<Type>> {
        if self.at_punct(b'(') { self.paren_type_list() } else { Ok(vec![self.parse_type()?]) }
    }

    /// `(T, ...) -> R`.
    pub(in crate::text) fn function_type(&mut self) -> PResult<(Vec<Type>, Vec<Type>)> {
        let inputs = self.paren_type_list()?;
        self.expect_arrow("in the function type")?;
        Ok((inputs, self.result_types()?))
    }

    /// `{name = value, unit_name, ...}`.
    pub(in crate::text) fn attr_dict(&mut self) -> PResult<Vec<NamedAttr>> {
        let open = self.tok().clone();
        self.expect_punct(b'{', "to open an attribute dictionary")?;
        self.enter(&open)?;
        let mut attrs = Vec::new();
        if !self.at_punct(b'}') {
            loop {
                let name = self.attr_name()?;
                let value = if self.eat_punct(b'=') { self.attr_value()? } else { Attr::Unit };
                attrs.push(NamedAttr { name, value });
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b'}', "to close the attribute dictionary")?;
        self.leave();
        Ok(attrs)
    }

    /// A dictionary key: a bare identifier or a string.
    fn attr_name(&mut self) -> PResult<String> {
        let name = match &self.tok().kind {
            TokKind::Ident => self.text(self.tok()).to_string(),
            TokKind::Str(s) => s.clone(),
            _ => return Err(self.unexpected("attribute name")),
        };
        self.bump();
        Ok(name)
    }

    /// An attribute value. Arrays and dictionaries recurse, so this dispatcher
    /// keeps its frame small and leaves scalars to [`Self::scalar_attr`].
    pub(in crate::text) fn attr_value(&mut self) -> PResult<Attr> {
        match self.tok().kind {
            TokKind::Punct(b'[') => Ok(Attr::Array(self.attr_array()?)),
            TokKind::Punct(b'{') => Ok(Attr::Dict(self.attr_dict()?)),
            _ => self.scalar_attr(),
        }
    }

    /// A non-nested attribute value.
    fn scalar_attr(&mut self) -> PResult<Attr> {
        let tok = self.tok().clone();
        match &tok.kind {
            TokKind::Ident if self.text(&tok) == "true" || self.text(&tok) == "false" => {
                self.bump();
                Ok(Attr::Bool(self.text(&tok) == "true"))
            }
            TokKind::Ident if self.text(&tok) == "unit" => {
                self.bump();
                Ok(Attr::Unit)
            }
            TokKind::Ident if self.text(&tok) == "dense" => self.dense_attr(),
            TokKind::Int | TokKind::Float | TokKind::Punct(b'-') => {
                let (neg, lit) = self.number_literal()?;
                let ty = if self.at_punct(b':') && self.nth_is_type(1) {
                    self.bump();
                    Some(self.parse_type()?)
                } else {
                    None
                };
                self.number_attr(neg, &lit, ty)
            }
            TokKind::Str(s) => {
                let s = s.clone();
                self.bump();
                Ok(Attr::String(s))
            }
            TokKind::Symbol(s) => {
                let s = s.clone();
                self.bump();
                Ok(Attr::Symbol(s))
            }
            TokKind::Bang => Ok(Attr::Type(self.parse_type()?)),
            TokKind::Ident if is_builtin_type(self.text(&tok)) => Ok(Attr::Type(self.parse_type()?)),
            _ => Err(self.unexpected("an attribute value")),
        }
    }

    /// `[a, b, ...]`.
    pub(in crate::text) fn attr_array(&mut self) -> PResult<Vec<Attr>> {
        let open = self.tok().clone();
        self.expect_punct(b'[', "to open an array")?;
        self.enter(&open)?;
        let mut items = Vec::new();
        if !self.at_punct(b']') {
            loop {
                items.push(self.attr_value()?);
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b']', "to close the array")?;
        self.leave();
        Ok(items)
    }

    fn nth_is_type(&self, n: usize) -> bool {
        let tok = self.nth(n);
        match tok.kind {
            TokKind::Bang => true,
            TokKind::Ident => is_builtin_type(self.text(tok)),
            _ => false,
        }
    }

    /// `[-] INT | FLOAT`: the sign and the literal token.
    pub(in crate::text) fn number_literal(&mut self) -> PResult<(bool, Token)> {
        let neg = self.eat_punct(b'-');
        let tok = self.tok().clone();
        if !matches!(tok.kind, TokKind::Int | TokKind::Float) {
            return Err(self.unexpected("a number"));
        }
        self.bump();
        Ok((neg, tok))
    }

    /// The attribute for a numeric literal of type `ty` (`i64` / `f64` when untyped).
    pub(in crate::text) fn number_attr(&self, neg: bool, lit: &Token, ty: Option<Type>) -> PResult<Attr> {
        let text = self.text(lit);
        let is_float = lit.kind == TokKind::Float;
        let ty = ty.unwrap_or_else(|| Type(if is_float { "f64" } else { "i64" }.to_string()));
        let err = |msg: String| self.error_at(lit, msg);
        if is_float_type(&ty.0) {
            let value = if is_float {
                parse_float(text, &ty.0).ok_or_else(|| err(format!("invalid float literal '{text}'")))?
            } else if let Some(hex) = text.strip_prefix("0x") {
                if neg {
                    return Err(err("hexadecimal float literals cannot be negative".to_string()));
                }
                float_from_bits(hex, &ty.0).map_err(err)?
            } else {
                parse_float(text, &ty.0).ok_or_else(|| err(format!("integer literal '{text}' too large")))?
            };
            return Ok(Attr::Float { value: if neg { -value } else { value }, ty });
        }
        if is_float {
            return Err(err(format!("floating point literal is not valid for type '{}'", ty.0)));
        }
        let mag = parse_int(text).ok_or_else(|| err(format!("integer literal '{text}' too large")))?;
        if ty.0 == "i1" {
            return match (neg, mag) {
                (false, 0) => Ok(Attr::Bool(false)),
                (false, 1) => Ok(Attr::Bool(true)),
                _ => Err(err("integer literal out of range for type 'i1' (expected 0 or 1)".to_string())),
            };
        }
        let value = int_value(neg, mag, &ty.0).map_err(err)?;
        Ok(Attr::Int { value, ty })
    }
}

/// A decimal or `0x` hexadecimal magnitude (at most 128 bits).
fn parse_int(text: &str) -> Option<u128> {
    match text.strip_prefix("0x") {
        Some(hex) => u128::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A decimal float, rounded to `f32` precision for `f32`.
fn parse_float(text: &str, ty: &str) -> Option<f64> {
    if ty == "f32" { text.parse::<f32>().ok().map(f64::from) } else { text.parse::<f64>().ok() }
}

/// A float given by its bit pattern (`0x3F800000 : f32`).
fn float_from_bits(hex: &str, ty: &str) -> Result<f64, String> {
    let too_wide = || format!("hexadecimal literal too wide for type '{ty}'");
    match ty {
        "f32" => u32::from_str_radix(hex, 16).map(|b| f64::from(f32::from_bits(b))).map_err(|_| too_wide()),
        "f64" => u64::from_str_radix(hex, 16).map(f64::from_bits).map_err(|_| too_wide()),
        _ => Err(format!("hexadecimal float literals are only supported for f32 and f64, not '{ty}'")),
    }
}
