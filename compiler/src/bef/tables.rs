//! Interning tables for the writer: each value gets the index of its first insertion, so
//! output depends only on input order (deterministic).

use std::collections::HashMap;
use std::hash::Hash;

/// An insertion-ordered set of values with their indices.
#[derive(Debug)]
pub struct Interner<T> {
    pub items: Vec<T>,
    index: HashMap<T, u32>,
}

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner { items: Vec::new(), index: HashMap::new() }
    }
}

impl<T: Clone + Eq + Hash> Interner<T> {
    /// The index of `v`, inserting it if new.
    pub fn intern(&mut self, v: &T) -> u32 {
        if let Some(i) = self.index.get(v) {
            return *i;
        }
        let i = self.items.len() as u32;
        self.items.push(v.clone());
        self.index.insert(v.clone(), i);
        i
    }
}

/// The STRINGS section: deduplicated UTF-8 text.
#[derive(Debug, Default)]
pub struct Strings {
    pub bytes: Vec<u8>,
    index: HashMap<String, (u32, u32)>,
}

impl Strings {
    /// `(offset, len)` of `s`.
    pub fn add(&mut self, s: &str) -> (u32, u32) {
        if let Some(r) = self.index.get(s) {
            return *r;
        }
        let r = (self.bytes.len() as u32, s.len() as u32);
        self.bytes.extend_from_slice(s.as_bytes());
        self.index.insert(s.to_string(), r);
        r
    }
}
