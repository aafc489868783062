//! Locations `loc(...)` and location aliases `#name = loc(...)` (SPEC §4.7).
//!
//! Aliases may be defined after their uses, so a pre-pass records where each definition is;
//! a use parses the definition on demand (cached, with cycle detection).

use super::{PResult, Parser};
use crate::ast::Loc;
use crate::text::lexer::{TokKind, Token};

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
            Ok(Some(self.loc_expr()?))
        } else {
            Ok(None)
        }
    }

    /// `loc(inner)`.
    fn loc_expr(&mut self) -> PResult<Loc> {
        self.expect_keyword("loc", "to start a location")?;
        self.expect_punct(b'(', "after 'loc'")?;
        let loc = self.loc_body()?;
        self.expect_punct(b')', "to close the location")?;
        Ok(loc)
    }

    /// A location nested in another one (one nesting level deeper).
    fn loc_inner(&mut self) -> PResult<Loc> {
        let tok = self.tok().clone();
        self.enter(&tok)?;
        let loc = self.loc_body();
        self.leave();
        loc
    }

    /// A location without the `loc(...)` wrapper. The outermost one does not count as a
    /// nesting level, so printing locations never makes a program too deep to parse back.
    fn loc_body(&mut self) -> PResult<Loc> {
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
                Loc::Unknown
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

    /// `(callee at caller)` after `callsite`: the callee.
    fn callsite_loc(&mut self) -> PResult<Loc> {
        self.expect_punct(b'(', "after 'callsite'")?;
        let callee = self.loc_inner()?;
        self.expect_keyword("at", "in the call site location")?;
        self.loc_inner()?;
        self.expect_punct(b')', "to close the call site location")?;
        Ok(callee)
    }

    /// After a string: `:L:C` (file location), `(child)` or nothing (name location).
    fn string_loc(&mut self, s: String) -> PResult<Loc> {
        if self.eat_punct(b':') {
            let line = self.loc_number("a line number")?;
            self.expect_punct(b':', "after the line number")?;
            let col = self.loc_number("a column number")?;
            return Ok(Loc::FileLineCol { file: s, line, col });
        }
        if self.eat_punct(b'(') {
            self.loc_inner()?;
            self.expect_punct(b')', "to close the name location's child")?;
        }
        Ok(Loc::Name(s))
    }

    fn loc_number(&mut self, what: &str) -> PResult<u32> {
        let tok = self.tok().clone();
        if tok.kind != TokKind::Int {
            return Err(self.unexpected(what));
        }
        self.bump();
        self.text(&tok).parse().map_err(|_| self.error_at(&tok, format!("{what} is out of range")))
    }

    /// `fused[<metadata>][l1, ...]` after `fused`: the first file or name location.
    fn fused_loc(&mut self) -> PResult<Loc> {
        if self.eat_punct(b'<') {
            self.attr_value()?;
            self.expect_punct(b'>', "after the fused location metadata")?;
        }
        self.expect_punct(b'[', "after 'fused'")?;
        let mut first = Loc::Unknown;
        if !self.at_punct(b']') {
            loop {
                let loc = self.loc_inner()?;
                if first == Loc::Unknown {
                    first = loc;
                }
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b']', "to close the fused location")?;
        Ok(first)
    }

    /// The location an alias (`#name`, used at `tok`) stands for.
    fn resolve_alias(&mut self, name: &str, tok: &Token) -> PResult<Loc> {
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
