//! Locations `loc(...)` and location aliases `#name = loc(...)`.
//!
//! Aliases may be defined after their uses, so a pre-pass records where each definition is;
//! a use parses the definition on demand (cached, with cycle detection).
//!
//! A location is parsed to a [`Parsed`] tree first, which keeps what the rule for fused
//! locations needs (which children are name locations, which are file locations), and then
//! reduced to the one [`Loc`] the AST keeps (see [`Parsed::loc`]).

use super::{PResult, Parser};
use crate::ast::{Attr, Loc};
use crate::text::lexer::{TokKind, Token};

/// A location as written, reduced to what the AST's [`Loc`] is made from.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Parsed {
    /// `"file":L:C`.
    File { file: String, line: u32, col: u32 },
    /// `"name"` or `"name"(child)` (the child is not kept).
    Name(String),
    /// `fused[<metadata>][...]` as MLIR builds it: nested fused locations with the same
    /// metadata flattened, unknown locations dropped; at least one child, or metadata.
    Fused { metadata: Option<Attr>, children: Vec<Parsed> },
    /// `unknown`, or `callsite(callee at caller)`, which stands for its callee's [`Loc`].
    Other(Loc),
}

impl Parsed {
    /// The location the AST keeps.
    ///
    /// A fused location is named by joining the names of its name locations, in order
    /// (`fused["foo", "bar"]` is `foobar`; file locations add nothing), as TFRT names a
    /// fused location in its BEF debug information; nested locations that are not direct
    /// children (inside a call site, say) do not count. It keeps the position of its first file location
    /// too, for errors: compile errors point at it, and since a BEF file keeps one
    /// `file:line:col` or one name per kernel (docs/bef.md, Locations), the BEF writer stores
    /// the position, which runtime errors then report. With only a name or only a position
    /// it is that [`Loc::Name`] or [`Loc::FileLineCol`]; with neither it is unknown.
    pub(super) fn loc(&self) -> Loc {
        match self {
            Parsed::File { file, line, col } => {
                Loc::FileLineCol { file: file.clone(), line: *line, col: *col }
            }
            Parsed::Name(name) => Loc::Name(name.clone()),
            Parsed::Other(loc) => loc.clone(),
            Parsed::Fused { children, .. } => {
                let names: Vec<&str> = children
                    .iter()
                    .filter_map(|c| match c {
                        Parsed::Name(n) => Some(n.as_str()),
                        _ => None,
                    })
                    .collect();
                let name = (!names.is_empty()).then(|| names.concat());
                let at = children.iter().find_map(|c| match c {
                    Parsed::File { file, line, col } => Some((file, *line, *col)),
                    _ => None,
                });
                match (name, at) {
                    (Some(name), Some((file, line, col))) => {
                        Loc::Fused { name, file: file.clone(), line, col }
                    }
                    (Some(name), None) => Loc::Name(name),
                    (None, Some((file, line, col))) => Loc::FileLineCol { file: file.clone(), line, col },
                    (None, None) => Loc::Unknown,
                }
            }
        }
    }

    /// `fused<metadata>[locations]` as MLIR's `FusedLoc::get` builds it: children that are
    /// fused locations with the same metadata are flattened, unknown and repeated ones
    /// dropped (the first of equal children stays, so `fused["a", "b", "a"]` is named
    /// `ab`); without metadata no children is unknown and one child is that child.
    fn fuse(metadata: Option<Attr>, locations: Vec<Parsed>) -> Parsed {
        fn add(children: &mut Vec<Parsed>, c: Parsed) {
            if c != Parsed::Other(Loc::Unknown) && !children.contains(&c) {
                children.push(c);
            }
        }
        let mut children = Vec::with_capacity(locations.len());
        for loc in locations {
            match loc {
                Parsed::Fused { metadata: m, children: inner } if m == metadata => {
                    for c in inner {
                        add(&mut children, c);
                    }
                }
                other => add(&mut children, other),
            }
        }
        if metadata.is_none() && children.len() <= 1 {
            return children.into_iter().next().unwrap_or(Parsed::Other(Loc::Unknown));
        }
        Parsed::Fused { metadata, children }
    }
}

impl Parser<'_> {
    /// Records every `#name = loc` in the token stream; reports duplicate definitions.
    pub(super) fn collect_aliases(&mut self) -> PResult<()> {
        for i in 0..self.toks.len() {
            let (Some(hash), Some(eq), Some(kw)) =
                (self.toks.get(i), self.toks.get(i + 1), self.toks.get(i + 2))
            else {
                break;
            };
            if hash.kind != TokKind::Hash || eq.kind != TokKind::Punct(b'=') {
                continue;
            }
            if kw.kind != TokKind::Ident || kw.text(self.src) != "loc" {
                continue;
            }
            let name = hash.text(self.src).to_string();
            if self.aliases.insert(name.clone(), i + 2).is_some() {
                return Err(self.error_at(hash, format!("redefinition of location alias '{name}'")));
            }
        }
        Ok(())
    }

    /// A top-level `#name = loc(...)` (validated; its value was recorded by the pre-pass).
    pub(super) fn alias_definition(&mut self) -> PResult<()> {
        let hash = self.bump();
        self.expect_punct(b'=', "after the location alias name")?;
        if !self.at_keyword("loc") {
            return Err(self.unexpected("'loc(...)' (only location aliases are supported)"));
        }
        let name = self.text(&hash).to_string();
        self.resolve_alias(&name, &hash)?;
        self.loc_expr()?;
        Ok(())
    }

    /// An optional `loc(...)` after an op, function or argument.
    pub(super) fn trailing_loc(&mut self) -> PResult<Option<Loc>> {
        if self.at_keyword("loc") && self.nth(1).kind == TokKind::Punct(b'(') {
            Ok(Some(self.loc_expr()?.loc()))
        } else {
            Ok(None)
        }
    }

    /// `loc(inner)`.
    fn loc_expr(&mut self) -> PResult<Parsed> {
        self.expect_keyword("loc", "to start a location")?;
        self.expect_punct(b'(', "after 'loc'")?;
        let loc = self.loc_body()?;
        self.expect_punct(b')', "to close the location")?;
        Ok(loc)
    }

    /// A location nested in another one (one nesting level deeper).
    fn loc_inner(&mut self) -> PResult<Parsed> {
        let tok = self.tok().clone();
        self.enter(&tok)?;
        let loc = self.loc_body();
        self.leave();
        loc
    }

    /// A location without the `loc(...)` wrapper. The outermost one does not count as a
    /// nesting level, so printing locations never makes a program too deep to parse back.
    fn loc_body(&mut self) -> PResult<Parsed> {
        let tok = self.tok().clone();
        let loc = match &tok.kind {
            TokKind::Str(s) => {
                let s = s.clone();
                self.bump();
                self.string_loc(s)?
            }
            TokKind::Hash => {
                self.bump();
                let name = self.text(&tok).to_string();
                self.resolve_alias(&name, &tok)?
            }
            TokKind::Ident if self.at_keyword("unknown") => {
                self.bump();
                Parsed::Other(Loc::Unknown)
            }
            TokKind::Ident if self.at_keyword("fused") => {
                self.bump();
                self.fused_loc()?
            }
            TokKind::Ident if self.at_keyword("callsite") => {
                self.bump();
                self.callsite_loc()?
            }
            _ => return Err(self.unexpected("a location")),
        };
        Ok(loc)
    }

    /// `(callee at caller)` after `callsite`: the callee's location.
    fn callsite_loc(&mut self) -> PResult<Parsed> {
        self.expect_punct(b'(', "after 'callsite'")?;
        let callee = self.loc_inner()?;
        self.expect_keyword("at", "in the call site location")?;
        self.loc_inner()?;
        self.expect_punct(b')', "to close the call site location")?;
        Ok(Parsed::Other(callee.loc()))
    }

    /// After a string: `:L:C` (file location), `(child)` or nothing (name location).
    fn string_loc(&mut self, s: String) -> PResult<Parsed> {
        if self.eat_punct(b':') {
            let line = self.loc_number("a line number")?;
            self.expect_punct(b':', "after the line number")?;
            let col = self.loc_number("a column number")?;
            return Ok(Parsed::File { file: s, line, col });
        }
        if self.eat_punct(b'(') {
            self.loc_inner()?;
            self.expect_punct(b')', "to close the name location's child")?;
        }
        Ok(Parsed::Name(s))
    }

    fn loc_number(&mut self, what: &str) -> PResult<u32> {
        let tok = self.tok().clone();
        if tok.kind != TokKind::Int {
            return Err(self.unexpected(what));
        }
        self.bump();
        self.text(&tok).parse().map_err(|_| self.error_at(&tok, format!("{what} is out of range")))
    }

    /// `[<metadata>][l1, ...]` after `fused` (see [`Parsed::fuse`]).
    fn fused_loc(&mut self) -> PResult<Parsed> {
        let mut metadata = None;
        if self.eat_punct(b'<') {
            metadata = Some(self.attr_value()?);
            self.expect_punct(b'>', "after the fused location metadata")?;
        }
        self.expect_punct(b'[', "after 'fused'")?;
        let mut locations = Vec::new();
        if !self.at_punct(b']') {
            loop {
                locations.push(self.loc_inner()?);
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b']', "to close the fused location")?;
        Ok(Parsed::fuse(metadata, locations))
    }

    /// The location an alias (`#name`, used at `tok`) stands for.
    fn resolve_alias(&mut self, name: &str, tok: &Token) -> PResult<Parsed> {
        if let Some(loc) = self.alias_cache.get(name) {
            return Ok(loc.clone());
        }
        let Some(&def) = self.aliases.get(name) else {
            return Err(self.error_at(tok, format!("undefined location alias '{name}'")));
        };
        if self.resolving.iter().any(|n| n == name) {
            return Err(self.error_at(tok, format!("location alias '{name}' is defined in terms of itself")));
        }
        self.enter(tok)?;
        self.resolving.push(name.to_string());
        let saved = self.pos;
        self.pos = def;
        let loc = self.loc_expr();
        self.pos = saved;
        self.resolving.pop();
        self.leave();
        let loc = loc?;
        self.alias_cache.insert(name.to_string(), loc.clone());
        Ok(loc)
    }
}
