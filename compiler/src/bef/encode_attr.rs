//! Attribute encoding: each distinct attribute becomes one 8-aligned blob, children first.
//! The elements of a dense attribute of 16 bytes or more start 16-aligned in the section
//! (64-aligned when asked: [`Attrs::dense_align`]; unit attributes pad before it when
//! needed; docs/bef.md), so weights can be read in place with 16-byte (or 64-byte) loads.

use std::collections::HashMap;

use hostrt_core::bef::format::{AttrHeader, attr, scalar};

use super::tables::{Interner, Strings};
use crate::ast::{Attr, Type};

/// The ATTRIBUTES and ATTR_INDEX sections under construction.
#[derive(Debug, Default)]
pub struct Attrs {
    pub blobs: Vec<u8>,
    pub offsets: Vec<u32>,
    dedup: HashMap<Vec<u8>, u32>,
    /// Where dense elements of at least this many bytes start: a multiple of it within the
    /// section (a power of two from 16 to 64; others of 16 bytes or more start 16-aligned).
    pub dense_align: usize,
}

/// What encoding an attribute needs from the rest of the writer.
pub struct Ctx<'a> {
    pub types: &'a mut Interner<Type>,
    pub strings: &'a mut Strings,
    pub functions: &'a HashMap<String, u32>,
}

/// The scalar kind and byte width for an integer or float type name.
fn scalar_of(ty: &str) -> Option<u8> {
    Some(match ty {
        "i1" => scalar::BOOL,
        "i8" | "ui8" | "si8" => scalar::I8,
        "i32" | "ui32" | "si32" => scalar::I32,
        "i64" | "ui64" | "si64" | "index" => scalar::I64,
        "f32" => scalar::F32,
        "f64" => scalar::F64,
        _ => return None,
    })
}

fn int_bytes(kind: u8, ty: &str, v: i64) -> Result<Vec<u8>, String> {
    let unsigned = ty.starts_with("ui");
    let fits = match kind {
        scalar::BOOL => (0..=1).contains(&v),
        scalar::I8 => (if unsigned { 0..=255 } else { -128..=127 }).contains(&v),
        scalar::I32 => {
            if unsigned {
                (0..=i64::from(u32::MAX)).contains(&v)
            } else {
                (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&v)
            }
        }
        _ => true,
    };
    if !fits {
        return Err(format!("integer {v} does not fit type {ty}"));
    }
    Ok(match kind {
        scalar::BOOL | scalar::I8 => vec![v as u8],
        scalar::I32 => (v as u32).to_le_bytes().to_vec(),
        _ => v.to_le_bytes().to_vec(),
    })
}

/// Where dense elements start by default: 16-aligned within the ATTRIBUTES section.
pub const DENSE_ALIGN: usize = 16;

impl Attrs {
    /// No attributes yet; dense elements to start `dense_align`-aligned.
    pub fn with_dense_align(dense_align: usize) -> Attrs {
        Attrs { dense_align, ..Attrs::default() }
    }

    /// Add a blob (deduplicated); returns its index.
    fn blob(&mut self, header: AttrHeader, payload: &[u8]) -> u32 {
        self.blob_aligned(header, payload, None)
    }

    /// Where `len` bytes of dense elements start: a multiple of [`Attrs::dense_align`] when
    /// they are at least that many, else of [`DENSE_ALIGN`] when they are at least that many,
    /// else anywhere (8-aligned, as every blob's payload).
    fn dense_alignment(&self, len: usize) -> Option<usize> {
        [self.dense_align, DENSE_ALIGN].into_iter().find(|&a| a >= DENSE_ALIGN && len >= a)
    }

    /// [`blob`](Self::blob), placing payload byte `at` at a multiple of `align` (when given)
    /// by first adding unreferenced unit attributes where needed.
    fn blob_aligned(&mut self, header: AttrHeader, payload: &[u8], aligned: Option<(usize, usize)>) -> u32 {
        let mut key = Vec::with_capacity(8 + payload.len());
        key.extend_from_slice(&header.tag.to_le_bytes());
        key.extend_from_slice(&header.len.to_le_bytes());
        key.extend_from_slice(payload);
        if let Some(i) = self.dedup.get(&key) {
            return *i;
        }
        // Blobs start 8-aligned and a unit blob is 8 bytes: at most `align / 8 - 1` of them.
        while let Some((at, align)) = aligned
            && !(self.blobs.len() + 8 + at).is_multiple_of(align)
        {
            let unit = AttrHeader::new(attr::UNIT, 0, u16::MAX, 0);
            self.offsets.push(self.blobs.len() as u32);
            self.blobs.extend_from_slice(&unit.tag.to_le_bytes());
            self.blobs.extend_from_slice(&unit.len.to_le_bytes());
        }
        let i = self.offsets.len() as u32;
        self.offsets.push(self.blobs.len() as u32);
        self.blobs.extend_from_slice(&key);
        while !self.blobs.len().is_multiple_of(8) {
            self.blobs.push(0);
        }
        self.dedup.insert(key, i);
        i
    }

    fn type_index(ctx: &mut Ctx<'_>, ty: &Type) -> Result<u16, String> {
        u16::try_from(ctx.types.intern(ty))
            .ok()
            .filter(|t| *t != u16::MAX)
            .ok_or_else(|| "too many types".to_string())
    }

    /// Encode a scalar's kind, type and bytes, if `a` is a scalar.
    fn scalar(ctx: &mut Ctx<'_>, a: &Attr) -> Result<Option<(u8, u16, Vec<u8>)>, String> {
        Ok(Some(match a {
            Attr::Bool(b) => (scalar::BOOL, u16::MAX, vec![u8::from(*b)]),
            Attr::Int { value, ty } => {
                let k = scalar_of(&ty.0).filter(|k| *k != scalar::F32 && *k != scalar::F64);
                let k = k.ok_or_else(|| format!("unsupported integer attribute type {}", ty.0))?;
                (k, Self::type_index(ctx, ty)?, int_bytes(k, &ty.0, *value)?)
            }
            Attr::Float { value, ty } => match ty.0.as_str() {
                "f32" => (scalar::F32, Self::type_index(ctx, ty)?, (*value as f32).to_le_bytes().to_vec()),
                "f64" => (scalar::F64, Self::type_index(ctx, ty)?, value.to_le_bytes().to_vec()),
                other => return Err(format!("unsupported float attribute type {other}")),
            },
            _ => return Ok(None),
        }))
    }

    /// Encode `a`, returning its attribute index.
    pub fn encode(&mut self, ctx: &mut Ctx<'_>, a: &Attr) -> Result<u32, String> {
        if let Some((k, ty, bytes)) = Self::scalar(ctx, a)? {
            return Ok(self.blob(AttrHeader::new(attr::SCALAR, k, ty, bytes.len() as u32), &bytes));
        }
        match a {
            Attr::String(s) => {
                Ok(self.blob(AttrHeader::new(attr::STRING, 0, u16::MAX, s.len() as u32), s.as_bytes()))
            }
            Attr::Unit => Ok(self.blob(AttrHeader::new(attr::UNIT, 0, u16::MAX, 0), &[])),
            Attr::Symbol(name) => {
                let f = ctx
                    .functions
                    .get(name)
                    .ok_or_else(|| format!("'@{name}' does not reference a valid function"))?;
                Ok(self.blob(AttrHeader::new(attr::FUNCTION, 0, u16::MAX, 4), &f.to_le_bytes()))
            }
            Attr::Type(t) => {
                let i = ctx.types.intern(t);
                Ok(self.blob(AttrHeader::new(attr::TYPE, 0, u16::MAX, 4), &i.to_le_bytes()))
            }
            Attr::Array(items) if !items.is_empty() && items.iter().all(|i| matches!(i, Attr::Symbol(_))) => {
                let mut payload = Vec::with_capacity(items.len() * 4);
                for it in items {
                    let Attr::Symbol(name) = it else { continue };
                    let f = ctx
                        .functions
                        .get(name)
                        .ok_or_else(|| format!("'@{name}' does not reference a valid function"))?;
                    payload.extend_from_slice(&f.to_le_bytes());
                }
                Ok(self.blob(
                    AttrHeader::new(attr::FUNCTION, attr::FUNCTION_ARRAY, u16::MAX, payload.len() as u32),
                    &payload,
                ))
            }
            Attr::Array(items) => {
                // Homogeneous typed scalars become a flat array read in place.
                let scalars = items.iter().map(|it| Self::scalar(ctx, it)).collect::<Result<Vec<_>, _>>()?;
                let scalars: Option<Vec<_>> = scalars.into_iter().collect();
                if let Some(sc) = scalars.filter(|sc| !sc.is_empty())
                    && sc.iter().all(|(k, t, _)| (*k, *t) == (sc[0].0, sc[0].1))
                {
                    let bytes: Vec<u8> = sc.iter().flat_map(|(_, _, b)| b.iter().copied()).collect();
                    let h = AttrHeader::new(attr::ARRAY, sc[0].0, sc[0].1, bytes.len() as u32);
                    return Ok(self.blob(h, &bytes));
                }
                let mut payload = Vec::with_capacity(items.len() * 4);
                for it in items {
                    payload.extend_from_slice(&self.encode(ctx, it)?.to_le_bytes());
                }
                Ok(self.blob(AttrHeader::new(attr::AGGREGATE, 0, u16::MAX, payload.len() as u32), &payload))
            }
            Attr::Dict(entries) => {
                let mut sorted: Vec<_> = entries.iter().collect();
                sorted.sort_by(|a, b| a.name.cmp(&b.name));
                let mut payload = Vec::with_capacity(entries.len() * 12);
                for e in sorted {
                    let (off, len) = ctx.strings.add(&e.name);
                    let v = self.encode(ctx, &e.value)?;
                    for w in [off, len, v] {
                        payload.extend_from_slice(&w.to_le_bytes());
                    }
                }
                Ok(self.blob(AttrHeader::new(attr::DICT, 0, u16::MAX, payload.len() as u32), &payload))
            }
            Attr::Dense(d) => {
                // The element type and dims are in the payload, so no type index is needed.
                let (code, payload) = crate::dense::encode(d)?;
                // The elements follow the rank and the dims (8 bytes each).
                let data = 8 * (1 + d.dims.len());
                let aligned = self.dense_alignment(payload.len() - data).map(|align| (data, align));
                let header = AttrHeader::new(attr::DENSE, code, u16::MAX, payload.len() as u32);
                Ok(self.blob_aligned(header, &payload, aligned))
            }
            Attr::Bool(_) | Attr::Int { .. } | Attr::Float { .. } => {
                Err("internal: scalar not encoded".to_string())
            }
        }
    }
}
