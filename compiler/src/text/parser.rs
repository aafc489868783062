//! Recursive-descent parser: MLIR `tfrt`-dialect text to [`Module`] (generic and custom op
//! forms, regions, attributes, types, locations and location aliases).
//!
//! The token stream is produced up front; nesting (regions, arrays, dictionaries, locations)
//! is bounded by [`MAX_NESTING`] so hostile input cannot overflow the stack.

mod attr;
mod custom;
mod dense;
mod loc;
mod ops;

use std::collections::HashMap;

use super::lexer::{TokKind, Token, tokenize};
use crate::CompileError;
use crate::ast::{Func, Loc, Module, Op, ValueRef};

/// Deepest nesting of regions, attributes and locations accepted.
pub const MAX_NESTING: u32 = 128;

pub(super) type PResult<T> = Result<T, CompileError>;

/// Parses a whole file. See [`crate::text::parse`].
pub(crate) fn parse_module(file: &str, src: &str) -> PResult<Module> {
    let toks = tokenize(src);
    let eof = toks.last().cloned().unwrap_or(Token { kind: TokKind::Eof, start: 0, end: 0, line: 1, col: 1 });
    let mut p = Parser {
        file,
        src,
        toks,
        eof,
        pos: 0,
        depth: 0,
        aliases: HashMap::new(),
        alias_cache: HashMap::new(),
        resolving: Vec::new(),
    };
    p.collect_aliases()?;
    p.module()
}

pub(super) struct Parser<'a> {
    file: &'a str,
    src: &'a str,
    toks: Vec<Token>,
    /// Returned when peeking past the end.
    eof: Token,
    pos: usize,
    depth: u32,
    /// Location alias name (with `#`) to the token index of its `loc`.
    aliases: HashMap<String, usize>,
    alias_cache: HashMap<String, loc::Parsed>,
    /// Aliases being resolved (to report cycles).
    resolving: Vec<String>,
}

/// A fresh op with no operands, results, attributes or regions.
pub(super) fn new_op(name: &str, loc: Loc) -> Op {
    Op {
        name: name.to_string(),
        results: Vec::new(),
        operands: Vec::new(),
        operand_types: Vec::new(),
        result_types: Vec::new(),
        attrs: Vec::new(),
        regions: Vec::new(),
        loc,
    }
}

/// The block-argument name a custom form gives the region argument bound to operand `v`:
/// its name, plus `#N` for a pack element (uses `%x#N` inside the region then refer to it).
pub(super) fn arg_name(v: &ValueRef) -> String {
    match v.index {
        Some(i) => format!("{}#{}", v.name, i),
        None => v.name.clone(),
    }
}

/// Short description of a token for "found ..." in messages.
fn describe(tok: &Token, src: &str) -> String {
    match &tok.kind {
        TokKind::Eof => "end of file".to_string(),
        _ => {
            let text: String = tok.text(src).chars().take(40).collect();
            format!("'{text}'")
        }
    }
}

// Token access and error helpers.
impl Parser<'_> {
    pub(super) fn tok(&self) -> &Token {
        self.nth(0)
    }

    pub(super) fn nth(&self, n: usize) -> &Token {
        self.toks.get(self.pos.saturating_add(n)).unwrap_or(&self.eof)
    }

    /// Consumes the current token (never moves past end of file).
    pub(super) fn bump(&mut self) -> Token {
        let tok = self.tok().clone();
        if self.pos < self.toks.len().saturating_sub(1) {
            self.pos += 1;
        }
        tok
    }

    pub(super) fn text(&self, tok: &Token) -> &str {
        tok.text(self.src)
    }

    /// The text of a `%name` / `#name` / `^name` token without its sigil.
    pub(super) fn sigil_name(&self, tok: &Token) -> String {
        self.text(tok).get(1..).unwrap_or("").to_string()
    }

    pub(super) fn at_punct(&self, c: u8) -> bool {
        self.tok().kind == TokKind::Punct(c)
    }

    pub(super) fn eat_punct(&mut self, c: u8) -> bool {
        let at = self.at_punct(c);
        if at {
            self.bump();
        }
        at
    }

    pub(super) fn at_keyword(&self, kw: &str) -> bool {
        self.tok().kind == TokKind::Ident && self.text(self.tok()) == kw
    }

    pub(super) fn eat_keyword(&mut self, kw: &str) -> bool {
        let at = self.at_keyword(kw);
        if at {
            self.bump();
        }
        at
    }

    /// Requires punctuation `c`; `what` completes "expected 'c' ..." (e.g. "after operands").
    pub(super) fn expect_punct(&mut self, c: u8, what: &str) -> PResult<()> {
        if self.eat_punct(c) { Ok(()) } else { Err(self.unexpected(&format!("'{}' {what}", c as char))) }
    }

    pub(super) fn expect_keyword(&mut self, kw: &str, what: &str) -> PResult<()> {
        if self.eat_keyword(kw) { Ok(()) } else { Err(self.unexpected(&format!("'{kw}' {what}"))) }
    }

    pub(super) fn expect_arrow(&mut self, what: &str) -> PResult<()> {
        if self.tok().kind == TokKind::Arrow {
            self.bump();
            Ok(())
        } else {
            Err(self.unexpected(&format!("'->' {what}")))
        }
    }

    /// An error at `tok`.
    pub(super) fn error_at(&self, tok: &Token, msg: impl Into<String>) -> CompileError {
        CompileError::at(self.file, self.src, tok.line, tok.col, msg)
    }

    /// "expected X, found Y" at the current token, or the lexer's message if it is malformed.
    pub(super) fn unexpected(&self, expected: &str) -> CompileError {
        let tok = self.tok();
        match &tok.kind {
            TokKind::Error(msg) => self.error_at(tok, msg.clone()),
            _ => self.error_at(tok, format!("expected {expected}, found {}", describe(tok, self.src))),
        }
    }

    /// Enters one nesting level (region, array, dictionary, location) at `tok`.
    pub(super) fn enter(&mut self, tok: &Token) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error_at(tok, format!("nesting too deep (more than {MAX_NESTING} levels)")));
        }
        Ok(())
    }

    pub(super) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// The default location of something written at `tok`.
    pub(super) fn loc_of(&self, tok: &Token) -> Loc {
        Loc::FileLineCol { file: self.file.to_string(), line: tok.line, col: tok.col }
    }
}

// Module and functions.
impl Parser<'_> {
    fn module(&mut self) -> PResult<Module> {
        let mut module = Module::default();
        let mut explicit = false;
        loop {
            match self.tok().kind {
                TokKind::Eof => return Ok(module),
                TokKind::Hash => self.alias_definition()?,
                TokKind::Ident if self.at_keyword("module") => {
                    if explicit || !module.funcs.is_empty() {
                        return Err(self.error_at(self.tok(), "only one 'module' is supported per file"));
                    }
                    explicit = true;
                    self.explicit_module(&mut module)?;
                }
                TokKind::Ident if self.at_keyword("func.func") && !explicit => {
                    module.funcs.push(self.func()?)
                }
                _ => {
                    let what = if explicit {
                        "end of file or a location alias after the module"
                    } else {
                        "'func.func', 'module' or a location alias definition"
                    };
                    return Err(self.unexpected(what));
                }
            }
        }
    }

    /// `module [@name] [attributes {...}] { funcs } [loc(...)]`.
    fn explicit_module(&mut self, module: &mut Module) -> PResult<()> {
        self.bump();
        if matches!(self.tok().kind, TokKind::Symbol(_)) {
            self.bump();
        }
        if self.eat_keyword("attributes") {
            module.attrs = self.attr_dict()?;
        }
        let open = self.tok().clone();
        self.expect_punct(b'{', "to open the module body")?;
        loop {
            match self.tok().kind {
                TokKind::Punct(b'}') => break,
                TokKind::Hash => self.alias_definition()?,
                TokKind::Ident if self.at_keyword("func.func") => module.funcs.push(self.func()?),
                TokKind::Eof => return Err(self.unclosed("module", &open)),
                _ => return Err(self.unexpected("'func.func' or '}' in the module body")),
            }
        }
        self.bump();
        self.trailing_loc()?;
        Ok(())
    }

    /// `func.func [private] @name(%a: T, ...) [-> R] [attributes {...}] [{ body }] [loc(...)]`.
    fn func(&mut self) -> PResult<Func> {
        let kw = self.bump();
        let mut loc = self.loc_of(&kw);
        self.eat_keyword("private");
        let name = match &self.tok().kind {
            TokKind::Symbol(s) => s.clone(),
            _ => return Err(self.unexpected("function name (@name) after 'func.func'")),
        };
        self.bump();
        let args = self.typed_args("function arguments")?;
        let results = if self.tok().kind == TokKind::Arrow {
            self.bump();
            self.result_types()?
        } else {
            Vec::new()
        };
        let attrs = if self.eat_keyword("attributes") { self.attr_dict()? } else { Vec::new() };
        let body = if self.at_punct(b'{') { Some(self.region_body(args.clone())?) } else { None };
        if let Some(l) = self.trailing_loc()? {
            loc = l;
        }
        Ok(Func { name, args, results, attrs, body, loc })
    }
}
