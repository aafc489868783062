//! Dense elements attributes in MLIR's syntax: `dense<LITERAL> : tensor<...>`, where the
//! literal is one element (a splat, repeated to fill the shape), nested lists matching the
//! shape exactly, a hex blob of the raw little-endian bytes (`"0x0000803F"`), or nothing
//! (`dense<>`, for tensors without elements). Elements are numbers, `true` / `false` (and
//! 0 / 1) for `i1`, `(real, imaginary)` pairs for complex types; hexadecimal integers give
//! a float's bit pattern. The literal comes before its type, so it is read first, then
//! converted once the type is known; every element is checked against the element type.

use super::{PResult, Parser};
use crate::ast::{Attr, DenseAttr, Type};
use crate::dense::{self, DecimalError, Elem, FloatFormat, TensorType};
use crate::text::lexer::{TokKind, Token};

/// An element as written.
enum Item {
    /// `[-] INT | FLOAT`.
    Number(bool, Token),
    /// `true` / `false`.
    Bool(Token),
    /// `(real, imaginary)`.
    Complex { open: Token, re: (bool, Token), im: (bool, Token) },
}

impl Item {
    fn token(&self) -> &Token {
        match self {
            Item::Number(_, t) | Item::Bool(t) | Item::Complex { open: t, .. } => t,
        }
    }
}

/// The literal between `dense<` and `>`.
enum Literal {
    /// `dense<>`.
    Empty,
    /// `dense<"0x...">` (the string token and its text).
    Hex(Token, String),
    /// Elements in row-major order; `shape` is `None` for a single element (a splat).
    Elements { first: Token, items: Vec<Item>, shape: Option<Vec<usize>> },
}

/// `[2, 3]`.
fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// A part of a nested literal: `an element` or `a list of shape [2]`.
fn part_text(shape: &Option<Vec<usize>>) -> String {
    match shape {
        None => "an element".to_string(),
        Some(s) => format!("a list of shape {}", shape_text(s)),
    }
}

/// The value of one hex digit.
fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

impl Parser<'_> {
    /// `dense<LITERAL> : tensor<...>`, at the `dense` keyword.
    pub(super) fn dense_attr(&mut self) -> PResult<Attr> {
        let keyword = self.bump();
        self.expect_punct(b'<', "after 'dense'")?;
        let literal = self.dense_literal()?;
        self.expect_punct(b'>', "to close the dense literal")?;
        if !self.eat_punct(b':') {
            return Err(self.unexpected("':' and a tensor type after the dense literal"));
        }
        let ty_tok = self.tok().clone();
        let ty = self.parse_type()?;
        let t = dense::parse_tensor_type(&ty.0).map_err(|m| self.error_at(&ty_tok, m))?;
        let data = match literal {
            Literal::Empty if t.elements == 0 => Vec::new(),
            Literal::Empty => {
                let msg = format!("dense<> has no elements but its type '{}' has {}", ty.0, t.elements);
                return Err(self.error_at(&keyword, msg));
            }
            Literal::Hex(tok, text) => self.dense_hex(&tok, &text, &t, &ty)?,
            Literal::Elements { first, items, shape } => {
                if let Some(shape) = &shape
                    && !shape.iter().map(|d| *d as i64).eq(t.dims.iter().copied())
                {
                    let dims: Vec<usize> = t.dims.iter().map(|d| *d as usize).collect();
                    let msg = format!(
                        "the dense literal has shape {} but its type '{}' has shape {}",
                        shape_text(shape),
                        ty.0,
                        shape_text(&dims)
                    );
                    return Err(self.error_at(&first, msg));
                }
                let mut data = Vec::with_capacity(items.len() * t.elem.bytes());
                for item in &items {
                    self.dense_element(item, &t, &mut data)?;
                }
                if shape.is_none() {
                    // A splat: the one element, repeated.
                    data = data.repeat(t.elements);
                }
                data
            }
        };
        let elem = Type(t.elem_name().to_string());
        Ok(Attr::Dense(Box::new(DenseAttr { elem, dims: t.dims, data })))
    }

    /// The literal, up to (not including) the closing `>`.
    fn dense_literal(&mut self) -> PResult<Literal> {
        let first = self.tok().clone();
        match &first.kind {
            TokKind::Punct(b'>') => return Ok(Literal::Empty),
            TokKind::Str(s) => {
                let s = s.clone();
                self.bump();
                return Ok(Literal::Hex(first, s));
            }
            _ => {}
        }
        let mut items = Vec::new();
        let shape = self.dense_part(&mut items)?;
        Ok(Literal::Elements { first, items, shape })
    }

    /// One element (shape `None`) or a list of parts of one shape (its shape), appending the
    /// elements to `items`.
    fn dense_part(&mut self, items: &mut Vec<Item>) -> PResult<Option<Vec<usize>>> {
        if !self.at_punct(b'[') {
            items.push(self.dense_item()?);
            return Ok(None);
        }
        let open = self.bump();
        self.enter(&open)?;
        let mut inner: Option<Option<Vec<usize>>> = None;
        let mut len = 0usize;
        if !self.at_punct(b']') {
            loop {
                let at = self.tok().clone();
                let shape = self.dense_part(items)?;
                match &inner {
                    None => inner = Some(shape),
                    Some(first) if *first != shape => {
                        let msg = format!(
                            "inconsistent dense literal: {} after {}",
                            part_text(&shape),
                            part_text(first)
                        );
                        return Err(self.error_at(&at, msg));
                    }
                    Some(_) => {}
                }
                len += 1;
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b']', "to close the list")?;
        self.leave();
        let mut shape = vec![len];
        shape.extend(inner.flatten().unwrap_or_default());
        Ok(Some(shape))
    }

    /// A number, `true` / `false`, or `(real, imaginary)`.
    fn dense_item(&mut self) -> PResult<Item> {
        let tok = self.tok().clone();
        match tok.kind {
            TokKind::Ident if matches!(self.text(&tok), "true" | "false") => {
                self.bump();
                Ok(Item::Bool(tok))
            }
            TokKind::Punct(b'(') => {
                self.bump();
                let re = self.number_literal()?;
                self.expect_punct(b',', "between the real and imaginary parts")?;
                let im = self.number_literal()?;
                self.expect_punct(b')', "to close the complex value")?;
                Ok(Item::Complex { open: tok, re, im })
            }
            TokKind::Int | TokKind::Float | TokKind::Punct(b'-') => {
                let (neg, lit) = self.number_literal()?;
                Ok(Item::Number(neg, lit))
            }
            _ => Err(self.unexpected("a dense element: a number, 'true', 'false', '(' or '['")),
        }
    }

    /// Appends the bytes of `item` as an element of `t` to `out`.
    fn dense_element(&self, item: &Item, t: &TensorType, out: &mut Vec<u8>) -> PResult<()> {
        let name = t.elem_name();
        let invalid =
            |what: &str| self.error_at(item.token(), format!("{what} is not valid for type '{name}'"));
        match (t.elem, item) {
            (Elem::Complex(f), Item::Complex { re, im, .. }) => {
                for (neg, lit) in [re, im] {
                    let bits = self.float_bits(*neg, lit, f)?;
                    out.extend_from_slice(&bits.to_le_bytes()[..f.bytes()]);
                }
            }
            (Elem::Complex(_), _) => {
                let msg = format!("expected a complex value (real, imaginary) for type '{name}'");
                return Err(self.error_at(item.token(), msg));
            }
            (_, Item::Complex { .. }) => return Err(invalid("complex literal")),
            (Elem::Bool, Item::Bool(tok)) => out.push(u8::from(self.text(tok) == "true")),
            (_, Item::Bool(_)) => return Err(invalid("boolean literal")),
            (Elem::Float(f), Item::Number(neg, lit)) => {
                let bits = self.float_bits(*neg, lit, f)?;
                out.extend_from_slice(&bits.to_le_bytes()[..f.bytes()]);
            }
            (Elem::Bool | Elem::Int { .. }, Item::Number(neg, lit)) => {
                match self.number_attr(*neg, lit, Some(Type(name.to_string())))? {
                    Attr::Bool(b) => out.push(u8::from(b)),
                    Attr::Int { value, .. } => out.extend_from_slice(&value.to_le_bytes()[..t.elem.bytes()]),
                    _ => return Err(invalid("this literal")),
                }
            }
        }
        Ok(())
    }

    /// The bit pattern of a float literal of format `f`: a decimal (rounded to nearest, ties to
    /// even; an error if that overflows), or a hexadecimal integer giving the bits.
    fn float_bits(&self, neg: bool, lit: &Token, f: FloatFormat) -> PResult<u64> {
        let text = self.text(lit);
        let name = f.name();
        if let Some(hex) = text.strip_prefix("0x") {
            if neg {
                return Err(self.error_at(lit, "hexadecimal float literals cannot be negative"));
            }
            let hex = hex.trim_start_matches('0');
            return u64::from_str_radix(if hex.is_empty() { "0" } else { hex }, 16)
                .ok()
                .filter(|b| f.bits() == 64 || b >> f.bits() == 0)
                .ok_or_else(|| {
                    self.error_at(lit, format!("hexadecimal literal too wide for type '{name}'"))
                });
        }
        dense::parse_decimal(text, neg, f).map_err(|e| {
            let msg = match e {
                DecimalError::OutOfRange => format!("float literal out of range for type '{name}'"),
                DecimalError::Invalid => format!("invalid float literal '{text}'"),
            };
            self.error_at(lit, msg)
        })
    }

    /// The data of `dense<"0x...">`: every element's bytes, or one element's (a splat).
    fn dense_hex(&self, tok: &Token, text: &str, t: &TensorType, ty: &Type) -> PResult<Vec<u8>> {
        let err = |msg: String| self.error_at(tok, msg);
        let digits = text
            .strip_prefix("0x")
            .ok_or_else(|| err("hex data of a dense attribute must start with '0x'".to_string()))?;
        if !digits.len().is_multiple_of(2) {
            return Err(err("hex data of a dense attribute has an odd number of digits".to_string()));
        }
        if let Some(c) = digits.chars().find(|c| !c.is_ascii_hexdigit()) {
            return Err(err(format!(
                "invalid hex digit '{}' in the data of a dense attribute",
                c.escape_default()
            )));
        }
        let bytes: Vec<u8> = digits
            .as_bytes()
            .chunks_exact(2)
            .map(|p| hex_digit(p[0]).unwrap_or(0) << 4 | hex_digit(p[1]).unwrap_or(0))
            .collect();
        let size = t.elem.bytes();
        let total = t.elements * size;
        let data = if bytes.len() == total {
            bytes
        } else if bytes.len() == size {
            bytes.repeat(t.elements)
        } else {
            return Err(err(format!(
                "hex data of {} bytes does not match the dense attribute type '{}' ({total} bytes, or {size} \
                 for a splat)",
                bytes.len(),
                ty.0
            )));
        };
        if t.elem == Elem::Bool
            && let Some(b) = data.iter().find(|b| **b > 1)
        {
            return Err(err(format!(
                "hex data of an i1 dense attribute must hold bytes 0 or 1, found 0x{b:02X}"
            )));
        }
        Ok(data)
    }
}
