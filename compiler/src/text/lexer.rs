//! Tokens of the MLIR text form. The lexer never fails: a malformed token becomes
//! an [`TokKind::Error`] token (followed by end of file) that the parser reports when it gets
//! there, so errors come out in source order with their exact position.

/// What a token is. Token text (for identifiers, numbers, `%names`, ...) is sliced from the
/// source with [`Token::text`]; strings and quoted symbols carry their unescaped value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TokKind {
    /// A bare identifier: `func.func`, `tfrt.add.i32`, `i32`, `loc`, `true`, `tensor<4xf32>`.
    Ident,
    /// `%name` or `%0` (text includes the `%`).
    Value,
    /// `@name` or `@"name"`, with the name resolved.
    Symbol(String),
    /// `#name` or `#0` (text includes the `#`): a location alias or a pack index.
    Hash,
    /// `^bb0` (text includes the `^`).
    Caret,
    /// `!dialect.type`, possibly with a `<...>` body (text includes the `!`).
    Bang,
    /// A decimal or `0x` hexadecimal integer literal (no sign).
    Int,
    /// A float literal `1.5`, `2.`, `1.0e-3` (no sign).
    Float,
    /// A string literal, escapes resolved.
    Str(String),
    /// `->`.
    Arrow,
    /// A one-character punctuation mark: `( ) { } [ ] < > , : = - + * ?`.
    Punct(u8),
    /// End of input.
    Eof,
    /// A malformed token, with the message to report.
    Error(String),
}

/// A token with its byte span and 1-based line and (byte) column.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: TokKind,
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
}

impl Token {
    /// The token's source text (empty if the span is somehow not a valid slice).
    pub fn text<'s>(&self, src: &'s str) -> &'s str {
        src.get(self.start..self.end).unwrap_or("")
    }
}

/// Builtin type constructors whose `<...>` body is part of the identifier token.
const SHAPED_TYPES: &[&str] = &["tensor", "memref", "vector", "complex", "tuple"];

/// Splits `src` into tokens, ending with [`TokKind::Eof`] (after an error token, if any).
pub(crate) fn tokenize(src: &str) -> Vec<Token> {
    let mut lexer = Lexer { src, bytes: src.as_bytes(), pos: 0, line: 1, line_start: 0 };
    let mut toks = Vec::new();
    loop {
        let tok = lexer.next_token();
        match tok.kind {
            TokKind::Eof => {
                toks.push(tok);
                return toks;
            }
            TokKind::Error(_) => {
                toks.push(tok);
                let (line, col) = (lexer.line, lexer.col_of(lexer.pos));
                toks.push(Token { kind: TokKind::Eof, start: src.len(), end: src.len(), line, col });
                return toks;
            }
            _ => toks.push(tok),
        }
    }
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.')
}

/// Characters of an SSA name / alias / block label suffix (`[A-Za-z0-9_$.-]`).
fn is_suffix_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'.' | b'-')
}

impl Lexer<'_> {
    fn peek(&self, n: usize) -> Option<u8> {
        self.bytes.get(self.pos.saturating_add(n)).copied()
    }

    /// Consumes one byte, keeping the line count.
    fn bump(&mut self) {
        if let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            if b == b'\n' {
                self.line = self.line.saturating_add(1);
                self.line_start = self.pos;
            }
        }
    }

    fn bump_while(&mut self, pred: impl Fn(u8) -> bool) {
        while self.peek(0).is_some_and(&pred) {
            self.bump();
        }
    }

    fn col_of(&self, pos: usize) -> u32 {
        u32::try_from(pos.saturating_sub(self.line_start) + 1).unwrap_or(u32::MAX)
    }

    fn make(&self, kind: TokKind, start: usize, line: u32, col: u32) -> Token {
        Token { kind, start, end: self.pos.max(start), line, col }
    }

    fn skip_trivia(&mut self) {
        loop {
            match self.peek(0) {
                Some(b' ' | b'\t' | b'\r' | b'\n') => self.bump(),
                Some(b'/') if self.peek(1) == Some(b'/') => self.bump_while(|b| b != b'\n'),
                _ => return,
            }
        }
    }

    fn next_token(&mut self) -> Token {
        self.skip_trivia();
        let (start, line, col) = (self.pos, self.line, self.col_of(self.pos));
        let Some(b) = self.peek(0) else {
            return self.make(TokKind::Eof, start, line, col);
        };
        let kind = match b {
            b'"' => match self.lex_string() {
                Ok(s) => TokKind::Str(s),
                Err(msg) => TokKind::Error(msg),
            },
            b'%' => self.lex_prefixed(is_suffix_char, TokKind::Value, "expected SSA value name after '%'"),
            b'#' => self.lex_prefixed(is_suffix_char, TokKind::Hash, "expected identifier after '#'"),
            b'^' => self.lex_prefixed(is_suffix_char, TokKind::Caret, "expected block label after '^'"),
            b'@' => self.lex_symbol(),
            b'!' => self.lex_dialect_type(),
            b'0'..=b'9' => self.lex_number(),
            b if is_ident_start(b) => {
                self.bump_while(is_ident_char);
                let word = self.src.get(start..self.pos).unwrap_or("");
                if SHAPED_TYPES.contains(&word)
                    && self.peek(0) == Some(b'<')
                    && let Err(msg) = self.lex_angle_body()
                {
                    return self.make(TokKind::Error(msg), start, line, col);
                }
                TokKind::Ident
            }
            b'-' if self.peek(1) == Some(b'>') => {
                self.bump();
                self.bump();
                TokKind::Arrow
            }
            b'(' | b')' | b'{' | b'}' | b'[' | b']' | b'<' | b'>' | b',' | b':' | b'=' | b'-' | b'+'
            | b'*' | b'?' => {
                self.bump();
                TokKind::Punct(b)
            }
            _ => {
                let ch = self.src.get(start..).and_then(|s| s.chars().next()).unwrap_or('?');
                TokKind::Error(format!("unexpected character '{}'", ch.escape_default()))
            }
        };
        self.make(kind, start, line, col)
    }

    /// `%name`, `#name`, `^name`: the sigil, then suffix characters.
    fn lex_prefixed(&mut self, pred: fn(u8) -> bool, kind: TokKind, msg: &str) -> TokKind {
        self.bump();
        if !self.peek(0).is_some_and(pred) {
            return TokKind::Error(msg.to_string());
        }
        if self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
            self.bump_while(|b| b.is_ascii_digit());
        } else {
            self.bump_while(pred);
        }
        kind
    }

    fn lex_symbol(&mut self) -> TokKind {
        self.bump();
        match self.peek(0) {
            Some(b'"') => match self.lex_string() {
                Ok(s) => TokKind::Symbol(s),
                Err(msg) => TokKind::Error(msg),
            },
            Some(b) if is_ident_start(b) => {
                let start = self.pos;
                self.bump_while(is_ident_char);
                TokKind::Symbol(self.src.get(start..self.pos).unwrap_or("").to_string())
            }
            _ => TokKind::Error("expected symbol name after '@'".to_string()),
        }
    }

    fn lex_dialect_type(&mut self) -> TokKind {
        self.bump();
        if !self.peek(0).is_some_and(is_ident_start) {
            return TokKind::Error("expected dialect type name after '!'".to_string());
        }
        self.bump_while(is_ident_char);
        if self.peek(0) == Some(b'<')
            && let Err(msg) = self.lex_angle_body()
        {
            return TokKind::Error(msg);
        }
        TokKind::Bang
    }

    /// Consumes a balanced `<...>` type body (nested `<>`, `->` and strings allowed).
    fn lex_angle_body(&mut self) -> Result<(), String> {
        let mut depth: u32 = 0;
        loop {
            match self.peek(0) {
                None => return Err("unterminated '<' in type".to_string()),
                Some(b'<') => depth = depth.saturating_add(1),
                Some(b'>') => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.bump();
                        return Ok(());
                    }
                }
                Some(b'-') if self.peek(1) == Some(b'>') => self.bump(),
                Some(b'"') => {
                    self.lex_string()?;
                    continue;
                }
                Some(_) => {}
            }
            self.bump();
        }
    }

    fn lex_number(&mut self) -> TokKind {
        if self.peek(0) == Some(b'0') && self.peek(1) == Some(b'x') {
            self.bump();
            self.bump();
            if !self.peek(0).is_some_and(|b| b.is_ascii_hexdigit()) {
                return TokKind::Error("expected hexadecimal digits after '0x'".to_string());
            }
            self.bump_while(|b| b.is_ascii_hexdigit());
            return TokKind::Int;
        }
        self.bump_while(|b| b.is_ascii_digit());
        if self.peek(0) != Some(b'.') {
            return TokKind::Int;
        }
        self.bump();
        self.bump_while(|b| b.is_ascii_digit());
        let exp_digit = |n: usize| self.peek(n).is_some_and(|b| b.is_ascii_digit());
        if matches!(self.peek(0), Some(b'e' | b'E'))
            && (exp_digit(1) || (matches!(self.peek(1), Some(b'+' | b'-')) && exp_digit(2)))
        {
            self.bump();
            self.bump();
            self.bump_while(|b| b.is_ascii_digit());
        }
        TokKind::Float
    }

    /// A `"..."` literal with escapes `\"`, `\\`, `\n`, `\t` and `\XX` (two hex digits).
    /// Errors name the problem; the token's position is the opening quote.
    fn lex_string(&mut self) -> Result<String, String> {
        self.bump();
        let mut bytes = Vec::new();
        loop {
            match self.peek(0) {
                None | Some(b'\n') => return Err("unterminated string literal (missing closing '\"')".into()),
                Some(b'"') => {
                    self.bump();
                    break;
                }
                Some(b'\\') => {
                    let byte = match (self.peek(1), self.peek(2)) {
                        (Some(b'"'), _) => b'"',
                        (Some(b'\\'), _) => b'\\',
                        (Some(b'n'), _) => b'\n',
                        (Some(b't'), _) => b'\t',
                        (Some(h), Some(l)) if h.is_ascii_hexdigit() && l.is_ascii_hexdigit() => {
                            let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                            self.bump();
                            hex(h) * 16 + hex(l)
                        }
                        _ => return Err("unknown escape sequence in string literal".into()),
                    };
                    self.bump();
                    self.bump();
                    bytes.push(byte);
                }
                Some(b) => {
                    bytes.push(b);
                    self.bump();
                }
            }
        }
        String::from_utf8(bytes).map_err(|_| "string literal is not valid UTF-8".to_string())
    }
}
