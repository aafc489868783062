//! An LLVM FileCheck work-alike for the directives the suite uses: `CHECK`,
//! `-NEXT`, `-SAME`, `-NOT`, `-LABEL`, `-DAG`, `-EMPTY`, `-COUNT-n`, `{{regex}}`,
//! `[[VAR:regex]]` / `[[VAR]]` / `[[@LINE±n]]`, custom prefixes and FileCheck's default
//! whitespace canonicalisation.
//!
//! Matching follows LLVM's algorithm: labels are located first and cut the input into
//! blocks; within a block each check string (a positive directive plus the `-DAG`/`-NOT`
//! directives before it) is matched after the previous one, with `-NEXT`/`-SAME` line
//! constraints and `-NOT` exclusions checked on the text skipped in between.

use std::collections::HashMap;
use std::fmt::Write as _;

use regex::Regex;

/// FileCheck's command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The file holding the directives.
    pub check_file: String,
    /// Where the input comes from (`None` or `-`: standard input).
    pub input_file: Option<String>,
    /// Directive prefixes (default `CHECK`).
    pub prefixes: Vec<String>,
    /// `--strict-whitespace`: do not canonicalise horizontal whitespace.
    pub strict_whitespace: bool,
    /// `--allow-empty`: accept an empty input.
    pub allow_empty: bool,
    /// `--enable-var-scope`: variables not starting with `$` are forgotten at each label.
    pub enable_var_scope: bool,
}

fn valid_prefix(p: &str) -> bool {
    p.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Parse FileCheck's arguments (LLVM style: one or two dashes, `-opt=value` or `-opt value`).
/// Options that only affect failure dumps or colours are accepted and ignored.
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut positional: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|b| !b.is_empty())
        else {
            positional.push(arg.clone());
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let value = |it: &mut std::slice::Iter<'_, String>| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().cloned().ok_or_else(|| format!("FileCheck option '{arg}' needs a value")),
            }
        };
        match name {
            "check-prefix" => o.prefixes.push(value(&mut it)?),
            "check-prefixes" => o.prefixes.extend(value(&mut it)?.split(',').map(String::from)),
            "input-file" => o.input_file = Some(value(&mut it)?),
            "strict-whitespace" => o.strict_whitespace = true,
            "allow-empty" => o.allow_empty = true,
            "enable-var-scope" => o.enable_var_scope = true,
            // Failure-dump, colour and verbosity options do not change the verdict.
            "dump-input" | "dump-input-filter" | "dump-input-context" => {
                if inline.is_none() {
                    value(&mut it)?;
                }
            }
            "color" | "v" | "vv" | "allow-unused-prefixes" => {}
            _ => return Err(format!("unsupported FileCheck option '{arg}'")),
        }
    }
    match positional.len() {
        1 => o.check_file = positional.remove(0),
        0 => return Err("FileCheck needs a check file".into()),
        _ => return Err(format!("FileCheck takes one check file, got {positional:?}")),
    }
    if o.prefixes.is_empty() {
        o.prefixes.push("CHECK".into());
    }
    for p in &o.prefixes {
        if !valid_prefix(p) {
            return Err(format!(
                "supplied check prefix must start with a letter and contain only alphanumeric characters, hyphens, and underscores: '{p}'"
            ));
        }
    }
    Ok(o)
}

/// FileCheck's default input canonicalisation: CRLF → LF and, unless `strict`, every run of
/// spaces and tabs → one space. Lines keep their numbers.
pub fn canonicalize(text: &str, strict: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        if strict || (c != ' ' && c != '\t') {
            out.push(c);
            continue;
        }
        out.push(' ');
        while matches!(chars.peek(), Some(' ' | '\t')) {
            chars.next();
        }
    }
    out
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Plain,
    Next,
    Same,
    Not,
    Label,
    Dag,
    Empty,
    Count(usize),
    /// The implicit end-of-input check that carries trailing `-NOT`/`-DAG` directives.
    Eof,
}

impl Kind {
    fn suffix(self) -> String {
        match self {
            Kind::Plain | Kind::Eof => String::new(),
            Kind::Next => "-NEXT".into(),
            Kind::Same => "-SAME".into(),
            Kind::Not => "-NOT".into(),
            Kind::Label => "-LABEL".into(),
            Kind::Dag => "-DAG".into(),
            Kind::Empty => "-EMPTY".into(),
            Kind::Count(n) => format!("-COUNT-{n}"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Lit(String),
    Re(String),
    Def(String, String),
    Use(String),
    Line(i64),
}

#[derive(Clone, Debug)]
struct Pattern {
    kind: Kind,
    prefix: String,
    pieces: Vec<Piece>,
    /// The pattern as written (after canonicalisation).
    text: String,
    /// 1-based line and column of the pattern in the check file.
    line: usize,
    col: usize,
}

impl Pattern {
    fn name(&self) -> String {
        format!("{}{}", self.prefix, self.kind.suffix())
    }
}

#[derive(Clone, Debug)]
struct CheckString {
    pat: Pattern,
    dag_not: Vec<Pattern>,
}

/// Why FileCheck failed: a one-line summary and LLVM-style details (directive location,
/// input location, the input around where matching stopped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub summary: String,
    pub detail: String,
}

impl Failure {
    fn usage(msg: String) -> Self {
        Failure { summary: msg.clone(), detail: format!("{msg}\n") }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// The suffix after a prefix: `:` or `-KIND:`; returns the kind and the length consumed.
fn directive_suffix(rest: &str) -> Result<Option<(Kind, usize)>, String> {
    if rest.starts_with(':') {
        return Ok(Some((Kind::Plain, 1)));
    }
    const KINDS: &[(&str, Kind)] = &[
        ("-NEXT:", Kind::Next),
        ("-SAME:", Kind::Same),
        ("-NOT:", Kind::Not),
        ("-LABEL:", Kind::Label),
        ("-DAG:", Kind::Dag),
        ("-EMPTY:", Kind::Empty),
    ];
    for (s, k) in KINDS {
        if rest.starts_with(s) {
            return Ok(Some((*k, s.len())));
        }
    }
    if let Some(after) = rest.strip_prefix("-COUNT-") {
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() && after[digits.len()..].starts_with(':') {
            let n: usize =
                digits.parse().map_err(|_| format!("invalid count in -COUNT specification: {digits}"))?;
            if n == 0 {
                return Err("invalid count in -COUNT specification on prefix".into());
            }
            return Ok(Some((Kind::Count(n), "-COUNT-".len() + digits.len() + 1)));
        }
    }
    Ok(None)
}

/// The directive on `line`, if any: (prefix, kind, byte offset where the pattern starts).
/// A comment prefix (`COM:`, `RUN:`) before any directive makes the rest of the line a comment.
fn find_directive(line: &str, prefixes: &[String]) -> Result<Option<(String, Kind, usize)>, String> {
    for (i, _) in line.char_indices() {
        if line[..i].chars().next_back().is_some_and(is_word_char) {
            continue;
        }
        let rest = &line[i..];
        if rest.starts_with("COM:") || rest.starts_with("RUN:") {
            return Ok(None);
        }
        for p in prefixes {
            if let Some(after) = rest.strip_prefix(p.as_str())
                && let Some((kind, used)) = directive_suffix(after)?
            {
                return Ok(Some((p.clone(), kind, i + p.len() + used)));
            }
        }
    }
    Ok(None)
}

fn valid_var_name(name: &str) -> bool {
    let n = name.strip_prefix('$').unwrap_or(name);
    n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Offset of the `]]` closing a `[[` whose content starts at `s` (LLVM's FindRegexVarEnd).
fn var_end(s: &str) -> Result<usize, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    while i < b.len() {
        if depth == 0 && s[i..].starts_with("]]") {
            return Ok(i);
        }
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' => depth += 1,
            b']' => {
                if depth == 0 {
                    return Err("missing closing \"]\" for regex variable".into());
                }
                depth -= 1;
            }
            _ => {}
        }
        i += 1;
    }
    Err("invalid named regex reference, no ]] found".into())
}

fn parse_pattern(text: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("{{") {
            let mut end = after.find("}}").ok_or("found start of regex string with no end '}}'")?;
            // `{{a{2}}}`: the regex ends at the last of a run of closing braces.
            while after[end + 2..].starts_with('}') {
                end += 1;
            }
            let re = &after[..end];
            Regex::new(re).map_err(|e| format!("invalid regex '{re}': {e}"))?;
            pieces.push(Piece::Re(re.to_string()));
            rest = &after[end + 2..];
        } else if let Some(after) = rest.strip_prefix("[[") {
            let end = var_end(after)?;
            let inner = &after[..end];
            rest = &after[end + 2..];
            if inner.starts_with('#') {
                return Err(format!("numeric substitution '[[{inner}]]' is not supported"));
            }
            if let Some(off) = inner.strip_prefix("@LINE") {
                let off = off.replace(' ', "");
                let n: i64 = if off.is_empty() {
                    0
                } else {
                    off.strip_prefix('+')
                        .unwrap_or(&off)
                        .parse()
                        .map_err(|_| format!("invalid @LINE expression '[[{inner}]]'"))?
                };
                pieces.push(Piece::Line(n));
                continue;
            }
            match inner.split_once(':') {
                Some((name, re)) => {
                    if !valid_var_name(name) {
                        return Err(format!("invalid name in string variable definition '{name}'"));
                    }
                    Regex::new(re).map_err(|e| format!("invalid regex '{re}': {e}"))?;
                    pieces.push(Piece::Def(name.to_string(), re.to_string()));
                }
                None => {
                    if !valid_var_name(inner) {
                        return Err(format!("invalid variable name '{inner}'"));
                    }
                    pieces.push(Piece::Use(inner.to_string()));
                }
            }
        } else {
            let end = [rest.find("{{"), rest.find("[[")].into_iter().flatten().min().unwrap_or(rest.len());
            match pieces.last_mut() {
                Some(Piece::Lit(l)) => l.push_str(&rest[..end]),
                _ => pieces.push(Piece::Lit(rest[..end].to_string())),
            }
            rest = &rest[end..];
        }
    }
    Ok(pieces)
}

fn prefixes_text(prefixes: &[String]) -> String {
    let quoted: Vec<String> = prefixes.iter().map(|p| format!("'{p}:'")).collect();
    let s = if prefixes.len() == 1 { "" } else { "es" };
    format!("prefix{s} {}", quoted.join(", "))
}

/// Parse the directives of a (canonicalised) check file.
fn parse_checks(check_name: &str, text: &str, prefixes: &[String]) -> Result<Vec<CheckString>, Failure> {
    let mut prefixes = prefixes.to_vec();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    let mut checks: Vec<CheckString> = Vec::new();
    let mut pending: Vec<Pattern> = Vec::new();
    let mut found_any = false;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let err = |col: usize, msg: String| Failure {
            summary: format!("{check_name}:{line_no}: {msg}"),
            detail: format!("{check_name}:{line_no}:{col}: error: {msg}\n{line}\n{}^\n", " ".repeat(col - 1)),
        };
        let (prefix, kind, start) = match find_directive(line, &prefixes) {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(e) => return Err(err(1, e)),
        };
        found_any = true;
        let raw = &line[start..];
        let lead = raw.len() - raw.trim_start_matches([' ', '\t']).len();
        let pat_text = raw.trim_matches([' ', '\t']).to_string();
        let col = start + lead + 1;
        let name = format!("{prefix}{}", kind.suffix());
        if pat_text.is_empty() && kind != Kind::Empty {
            return Err(err(col, format!("found empty check string with prefix '{name}:'")));
        }
        if !pat_text.is_empty() && kind == Kind::Empty {
            return Err(err(
                col,
                format!("found non-empty check string for empty check with prefix '{name}:'"),
            ));
        }
        let pieces = parse_pattern(&pat_text).map_err(|e| err(col, e))?;
        if kind == Kind::Label && pieces.iter().any(|p| matches!(p, Piece::Def(..) | Piece::Use(_))) {
            return Err(err(
                col,
                format!("found variable definition or use in '{name}:'; labels may not use variables"),
            ));
        }
        let pat = Pattern { kind, prefix: prefix.clone(), pieces, text: pat_text, line: line_no, col };
        match kind {
            Kind::Dag | Kind::Not => pending.push(pat),
            Kind::Next | Kind::Same | Kind::Empty if checks.is_empty() => {
                return Err(err(col, format!("found '{name}' without previous '{prefix}: line")));
            }
            _ => checks.push(CheckString { pat, dag_not: std::mem::take(&mut pending) }),
        }
    }
    if !found_any {
        let msg = format!("no check strings found with {}", prefixes_text(&prefixes));
        return Err(Failure { summary: format!("{check_name}: {msg}"), detail: format!("error: {msg}\n") });
    }
    if !pending.is_empty() {
        let last = pending.last().map_or(0, |p| p.line);
        let eof = Pattern {
            kind: Kind::Eof,
            prefix: String::new(),
            pieces: Vec::new(),
            text: String::new(),
            line: last,
            col: 1,
        };
        checks.push(CheckString { pat: eof, dag_not: pending });
    }
    Ok(checks)
}

/// A match: start, length, variables it defines.
type Found = (usize, usize, Vec<(String, String)>);

struct Matcher<'a> {
    check_name: &'a str,
    check_lines: Vec<&'a str>,
    input_name: &'a str,
    input: &'a str,
    vars: HashMap<String, String>,
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push_str("...");
    t
}

impl Matcher<'_> {
    /// 1-based line and column of byte `off` of the input, and that line's text.
    fn input_pos(&self, off: usize) -> (usize, usize, &str) {
        let off = off.min(self.input.len());
        let line_start = self.input[..off].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.input[off..].find('\n').map_or(self.input.len(), |i| off + i);
        let line = self.input[..off].matches('\n').count() + 1;
        (line, off - line_start + 1, &self.input[line_start..line_end])
    }

    fn directive_header(&self, pat: &Pattern, msg: &str) -> String {
        let src = self.check_lines.get(pat.line.wrapping_sub(1)).copied().unwrap_or("");
        format!(
            "{}:{}:{}: error: {}: {msg}\n{src}\n{}^\n",
            self.check_name,
            pat.line,
            pat.col,
            pat.name(),
            " ".repeat(pat.col.saturating_sub(1))
        )
    }

    fn note(&self, off: usize, what: &str) -> String {
        let (l, c, text) = self.input_pos(off);
        format!("{}:{l}:{c}: note: {what}\n{text}\n{}^\n", self.input_name, " ".repeat(c - 1))
    }

    /// The input lines around byte `off`, numbered, the line of `off` marked `>>`.
    fn context(&self, off: usize) -> String {
        let (at, _, _) = self.input_pos(off);
        let first = at.saturating_sub(3).max(1);
        let mut s = String::from("input around that point:\n");
        for (i, text) in self.input.lines().enumerate().skip(first - 1).take(at + 4 - first) {
            let mark = if i + 1 == at { ">>" } else { "  " };
            let _ = writeln!(s, "{mark} {:5}: {text}", i + 1);
        }
        s
    }

    fn pattern_regex(&self, pat: &Pattern) -> Result<(String, bool, Vec<String>), String> {
        let mut re = String::new();
        let mut fixed = true;
        let mut defs: Vec<String> = Vec::new();
        for piece in &pat.pieces {
            match piece {
                Piece::Lit(l) => re.push_str(&regex::escape(l)),
                Piece::Re(r) => {
                    fixed = false;
                    let _ = write!(re, "(?:{r})");
                }
                Piece::Def(name, r) => {
                    fixed = false;
                    if defs.contains(name) {
                        return Err(format!("variable '{name}' defined twice in one pattern"));
                    }
                    let _ = write!(re, "(?P<v{}>{r})", defs.len());
                    defs.push(name.clone());
                }
                Piece::Use(name) => {
                    if defs.contains(name) {
                        return Err(format!(
                            "using variable '{name}' in the pattern that defines it is not supported"
                        ));
                    }
                    let v = self.vars.get(name).ok_or_else(|| format!("undefined variable: {name}"))?;
                    re.push_str(&regex::escape(v));
                }
                Piece::Line(n) => re.push_str(&(pat.line as i64 + n).to_string()),
            }
        }
        Ok((re, fixed, defs))
    }

    /// The first match of `pat` in `input[start..end]` (searched as its own buffer, as LLVM
    /// does: `^` also matches at `start`).
    fn find(&self, pat: &Pattern, start: usize, end: usize) -> Result<Option<Found>, Failure> {
        let hay = &self.input[start..end];
        match pat.kind {
            Kind::Eof => return Ok(Some((end, 0, Vec::new()))),
            Kind::Empty => {
                let re = Regex::new(r"(?m)\n$").expect("static regex");
                return Ok(re.find(hay).map(|m| (start + m.start() + 1, 0, Vec::new())));
            }
            _ => {}
        }
        let (re, fixed, defs) = self.pattern_regex(pat).map_err(|e| Failure {
            summary: format!("{} at line {}: {e}", pat.name(), pat.line),
            detail: self.directive_header(pat, &e),
        })?;
        if fixed {
            // Every piece was literal: `re` is the escaped text; search the text itself.
            let mut lit = String::new();
            for piece in &pat.pieces {
                match piece {
                    Piece::Lit(l) => lit.push_str(l),
                    Piece::Use(name) => lit.push_str(self.vars.get(name).map_or("", String::as_str)),
                    Piece::Line(n) => lit.push_str(&(pat.line as i64 + n).to_string()),
                    Piece::Re(_) | Piece::Def(..) => {}
                }
            }
            return Ok(hay.find(&lit).map(|p| (start + p, lit.len(), Vec::new())));
        }
        let compiled = Regex::new(&format!("(?m){re}")).map_err(|e| Failure {
            summary: format!("{} at line {}: invalid regex: {e}", pat.name(), pat.line),
            detail: self.directive_header(pat, &format!("invalid regex: {e}")),
        })?;
        let Some(caps) = compiled.captures(hay) else { return Ok(None) };
        let m = caps.get(0).expect("group 0");
        let values = defs
            .iter()
            .enumerate()
            .map(|(i, name)| {
                (name.clone(), caps.name(&format!("v{i}")).map_or("", |g| g.as_str()).to_string())
            })
            .collect();
        Ok(Some((start + m.start(), m.len(), values)))
    }

    fn not_found(&self, pat: &Pattern, from: usize) -> Failure {
        // Like LLVM, point "scanning from here" at the next non-blank character.
        let skip = self.input[from..].find(|c: char| !c.is_whitespace()).unwrap_or(self.input.len() - from);
        let at = from + skip;
        let (l, _, text) = self.input_pos(at);
        let summary = format!(
            "{} at {}:{} \"{}\": expected string not found in input (scanning from input line {l}: \"{}\")",
            pat.name(),
            self.check_name,
            pat.line,
            clip(&pat.text, 60),
            clip(text, 60)
        );
        let detail = format!(
            "{}{}{}",
            self.directive_header(pat, "expected string not found in input"),
            self.note(at, "scanning from here"),
            self.context(at)
        );
        Failure { summary, detail }
    }

    fn misplaced(&self, pat: &Pattern, prev_end: usize, pos: usize, msg: &str) -> Failure {
        let (ml, _, mtext) = self.input_pos(pos);
        let (pl, _, _) = self.input_pos(prev_end);
        let summary = format!(
            "{} at {}:{} \"{}\": {msg} (matched input line {ml}: \"{}\"; previous match ended on input line {pl})",
            pat.name(),
            self.check_name,
            pat.line,
            clip(&pat.text, 60),
            clip(mtext, 60)
        );
        let what = if pat.kind == Kind::Same { "'same' match was here" } else { "'next' match was here" };
        let detail = format!(
            "{}{}{}{}",
            self.directive_header(pat, msg),
            self.note(pos, what),
            self.note(prev_end, "previous match ended here"),
            self.context(pos)
        );
        Failure { summary, detail }
    }

    fn check_nots(&mut self, nots: &[&Pattern], start: usize, end: usize) -> Result<(), Failure> {
        for pat in nots {
            if let Some((pos, _, _)) = self.find(pat, start, end)? {
                let (l, _, text) = self.input_pos(pos);
                let summary = format!(
                    "{} at {}:{} \"{}\": excluded string found in input (input line {l}: \"{}\")",
                    pat.name(),
                    self.check_name,
                    pat.line,
                    clip(&pat.text, 60),
                    clip(text, 60)
                );
                let detail = format!(
                    "{}{}{}",
                    self.directive_header(pat, "excluded string found in input"),
                    self.note(pos, "found here"),
                    self.context(pos)
                );
                return Err(Failure { summary, detail });
            }
        }
        Ok(())
    }

    /// Match the `-DAG` groups (and collect `-NOT`s) of `cs` in `[start, end)`; returns
    /// where the positive pattern's search starts.
    fn check_dag<'c>(
        &mut self,
        cs: &'c CheckString,
        start: usize,
        end: usize,
        nots: &mut Vec<&'c Pattern>,
    ) -> Result<usize, Failure> {
        let mut start_pos = start;
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for (k, pat) in cs.dag_not.iter().enumerate() {
            if pat.kind == Kind::Not {
                nots.push(pat);
                continue;
            }
            let mut from = start_pos;
            loop {
                let Some((pos, len, defs)) = self.find(pat, from, end)? else {
                    return Err(self.not_found(pat, start_pos));
                };
                let m = (pos, pos + len);
                // Overlapping an earlier match of this group: search again after that one
                // (`r.1 > pos`, so the search always moves on).
                match ranges.iter().find(|r| m.0 < r.1).filter(|r| r.0 < m.1 || r.0 == m.0) {
                    Some(r) => from = r.1,
                    None => {
                        ranges.push(m);
                        ranges.sort_unstable();
                        self.vars.extend(defs);
                        break;
                    }
                }
            }
            let group_ends = cs.dag_not.get(k + 1).is_none_or(|p| p.kind == Kind::Not);
            if group_ends {
                let first = ranges.first().map_or(start_pos, |r| r.0);
                if !nots.is_empty() {
                    self.check_nots(nots, start_pos, first)?;
                    nots.clear();
                }
                start_pos = ranges.iter().map(|r| r.1).max().unwrap_or(start_pos);
                ranges.clear();
            }
        }
        Ok(start_pos)
    }

    /// Match one check string in `[start, end)`; returns its match (start, length).
    fn check_string(
        &mut self,
        cs: &CheckString,
        start: usize,
        end: usize,
        label_scan: bool,
    ) -> Result<(usize, usize), Failure> {
        let mut nots: Vec<&Pattern> = Vec::new();
        let last = if label_scan { start } else { self.check_dag(cs, start, end, &mut nots)? };
        let count = if let Kind::Count(n) = cs.pat.kind { n } else { 1 };
        let mut match_end = last;
        let mut first = None;
        for _ in 0..count {
            let Some((pos, len, defs)) = self.find(&cs.pat, match_end, end)? else {
                return Err(self.not_found(&cs.pat, match_end));
            };
            self.vars.extend(defs);
            first.get_or_insert(pos);
            match_end = pos + len;
        }
        let first = first.unwrap_or(last);
        if !label_scan {
            let newlines = self.input[last..first].matches('\n').count();
            match cs.pat.kind {
                Kind::Next | Kind::Empty if newlines == 0 => {
                    return Err(self.misplaced(
                        &cs.pat,
                        last,
                        first,
                        "is on the same line as previous match",
                    ));
                }
                Kind::Next | Kind::Empty if newlines > 1 => {
                    return Err(self.misplaced(
                        &cs.pat,
                        last,
                        first,
                        "is not on the line after the previous match",
                    ));
                }
                Kind::Same if newlines > 0 => {
                    return Err(self.misplaced(
                        &cs.pat,
                        last,
                        first,
                        "is not on the same line as the previous match",
                    ));
                }
                _ => {}
            }
            self.check_nots(&nots, last, first)?;
        }
        Ok((first, match_end - first))
    }
}

/// Check `input` against the directives of `check_text`. Returns every failure (LLVM goes
/// on with the next label block after a failure); empty means success.
pub fn check(
    opts: &Options,
    check_name: &str,
    check_text: &str,
    input_name: &str,
    input: &str,
) -> Vec<Failure> {
    let check_text = canonicalize(check_text, opts.strict_whitespace);
    let input = canonicalize(input, opts.strict_whitespace);
    let checks = match parse_checks(check_name, &check_text, &opts.prefixes) {
        Ok(c) => c,
        Err(f) => return vec![f],
    };
    if input.is_empty() && !opts.allow_empty {
        return vec![Failure::usage(format!("FileCheck error: '{input_name}' is empty."))];
    }
    let mut m = Matcher {
        check_name,
        check_lines: check_text.lines().collect(),
        input_name,
        input: &input,
        vars: HashMap::new(),
    };
    let mut failures = Vec::new();
    let n = checks.len();
    let (mut i, mut j, mut buf_start) = (0usize, 0usize, 0usize);
    loop {
        let region_start = buf_start;
        let region_end = if j == n {
            input.len()
        } else {
            if checks[j].pat.kind != Kind::Label {
                j += 1;
                continue;
            }
            match m.check_string(&checks[j], buf_start, input.len(), true) {
                Ok((pos, len)) => {
                    buf_start = pos + len;
                    j += 1;
                    pos + len
                }
                Err(f) => {
                    // Nothing sensible can follow a missing label.
                    failures.push(f);
                    return failures;
                }
            }
        };
        if i != 0 && opts.enable_var_scope {
            m.vars.retain(|k, _| k.starts_with('$'));
        }
        let mut cur = region_start;
        while i != j {
            match m.check_string(&checks[i], cur, region_end, false) {
                Ok((pos, len)) => {
                    cur = pos + len;
                    i += 1;
                }
                Err(f) => {
                    failures.push(f);
                    i = j;
                }
            }
        }
        if j == n {
            break;
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(prefixes: &[&str]) -> Options {
        Options {
            check_file: "c.txt".into(),
            prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
            ..Options::default()
        }
    }

    fn run(checks: &str, input: &str) -> Vec<Failure> {
        check(&opts(&["CHECK"]), "c.txt", checks, "<stdin>", input)
    }

    fn ok(checks: &str, input: &str) {
        let f = run(checks, input);
        assert!(
            f.is_empty(),
            "expected success, got:\n{}",
            f.iter().map(|f| f.detail.as_str()).collect::<String>()
        );
    }

    fn fails(checks: &str, input: &str) -> Failure {
        let f = run(checks, input);
        assert!(!f.is_empty(), "expected a failure for checks:\n{checks}");
        f.into_iter().next().unwrap()
    }

    #[test]
    fn parses_arguments() {
        let args: Vec<String> = [
            "c.mlir",
            "--check-prefixes=A,B",
            "-check-prefix",
            "C",
            "--dump-input-filter=all",
            "--input-file",
            "in",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = parse_args(&args).unwrap();
        assert_eq!(o.check_file, "c.mlir");
        assert_eq!(o.prefixes, ["A", "B", "C"]);
        assert_eq!(o.input_file.as_deref(), Some("in"));
        assert_eq!(parse_args(&["x".to_string()]).unwrap().prefixes, ["CHECK"]);
        assert!(
            parse_args(&["x".into(), "--implicit-check-not=foo".into()]).unwrap_err().contains("unsupported")
        );
        assert!(parse_args(&[]).is_err());
        assert!(parse_args(&["x".into(), "--check-prefix=1bad".into()]).is_err());
    }

    #[test]
    fn canonicalizes_horizontal_whitespace() {
        assert_eq!(canonicalize("a  \t b\r\n\tc", false), "a b\n c");
        assert_eq!(canonicalize("a  b", true), "a  b");
        ok("; CHECK: x = 1", "x    =\t1\n");
    }

    #[test]
    fn plain_checks_match_in_order() {
        ok("; CHECK: alpha\n; CHECK: gamma\n", "alpha\nbeta\ngamma\n");
        let f = fails("; CHECK: gamma\n; CHECK: alpha\n", "alpha\nbeta\ngamma\n");
        assert!(f.summary.contains("CHECK at c.txt:2 \"alpha\": expected string not found"), "{}", f.summary);
        assert!(
            f.detail.contains("c.txt:2:10: error: CHECK: expected string not found in input"),
            "{}",
            f.detail
        );
        // Substring matching: "v = 1" matches inside "v = 10".
        ok("; CHECK: v = 1", "v = 10\n");
    }

    #[test]
    fn next_and_same_constrain_lines() {
        ok("; CHECK: a\n; CHECK-NEXT: b\n; CHECK-SAME: c\n", "a\nb c\n");
        let f = fails("; CHECK: a\n; CHECK-NEXT: c\n", "a\nb\nc\n");
        assert!(f.summary.contains("is not on the line after the previous match"), "{}", f.summary);
        assert!(f.detail.contains("note: 'next' match was here"), "{}", f.detail);
        let f = fails("; CHECK: a\n; CHECK-NEXT: b\n", "a b\n");
        assert!(f.summary.contains("is on the same line as previous match"), "{}", f.summary);
        let f = fails("; CHECK: a\n; CHECK-SAME: b\n", "a\nb\n");
        assert!(f.summary.contains("is not on the same line"), "{}", f.summary);
        let f = fails("; CHECK-NEXT: a\n", "a\n");
        assert!(f.summary.contains("without previous 'CHECK: line"), "{}", f.summary);
    }

    #[test]
    fn not_excludes_text_between_matches() {
        ok("; CHECK: a\n; CHECK-NOT: x\n; CHECK: b\n", "a\ny\nb\nx\n");
        let f = fails("; CHECK: a\n; CHECK-NOT: x\n; CHECK: b\n", "a\nx\nb\n");
        assert!(
            f.summary.contains("CHECK-NOT at c.txt:2 \"x\": excluded string found in input (input line 2")
        );
        // A trailing NOT applies up to the end of the input.
        let f = fails("; CHECK: a\n; CHECK-NOT: z\n", "a\nb\nz\n");
        assert!(f.summary.contains("excluded string"), "{}", f.summary);
        // A leading NOT applies from the start.
        let f = fails("; CHECK-NOT: q\n; CHECK: a\n", "q a\n");
        assert!(f.summary.contains("excluded string"), "{}", f.summary);
    }

    #[test]
    fn labels_split_the_input_into_blocks() {
        let checks = "; CHECK-LABEL: --- f1\n; CHECK: one\n; CHECK-LABEL: --- f2\n; CHECK-NEXT: two\n";
        ok(checks, "--- f1\nx\none\n--- f2\ntwo\n");
        // `one` only occurs after the second label: the first block cannot see it.
        let f = fails(checks, "--- f1\n--- f2\ntwo\none\n");
        assert!(f.summary.contains("CHECK at c.txt:2 \"one\""), "{}", f.summary);
        // A missing label stops checking.
        let f = fails(checks, "--- f1\none\n");
        assert!(f.summary.starts_with("CHECK-LABEL at c.txt:3"), "{}", f.summary);
        // A NOT before a label is checked inside the label's block.
        let f = fails("; CHECK-LABEL: A\n; CHECK-NOT: bad\n; CHECK-LABEL: B\n", "A\nbad\nB\n");
        assert!(f.summary.contains("excluded"), "{}", f.summary);
        // Every block is checked even after a failure in an earlier one.
        let f = run("; CHECK-LABEL: A\n; CHECK: x\n; CHECK-LABEL: B\n; CHECK: y\n", "A\nB\n");
        assert_eq!(f.len(), 2);
    }

    #[test]
    fn regexes_and_variables() {
        ok("; CHECK: value {{[0-9]+}}, {{.*}}end", "value 42, and the end\n");
        ok("; CHECK: {{^}}whole{{$}}", "x\nwhole\n");
        fails("; CHECK: {{^}}whole{{$}}", "x whole\n");
        ok("; CHECK: a{{b|c}}d", "acd\n");
        ok("; CHECK: id [[ID:[0-9]+]] set\n; CHECK: use [[ID]]\n", "id 17 set\nuse 17\n");
        let f = fails("; CHECK: id [[ID:[0-9]+]] set\n; CHECK: use [[ID]]\n", "id 17 set\nuse 18\n");
        assert!(f.summary.contains("\"use [[ID]]\""), "{}", f.summary);
        // Redefinition replaces the value.
        ok("; CHECK: [[V:[a-z]+]]=\n; CHECK: [[V:[a-z]+]]=\n; CHECK: [[V]]!\n", "ab=\ncd=\ncd!\n");
        let f = fails("; CHECK: [[NOPE]]\n", "x\n");
        assert!(f.summary.contains("undefined variable: NOPE"), "{}", f.summary);
        ok("; CHECK: {{a{2}}}", "aa\n");
        ok("; CHECK: line [[@LINE]] and [[@LINE+1]]", "line 1 and 2\n");
        let f = fails("; CHECK: {{(}}", "x\n");
        assert!(f.summary.contains("invalid regex"), "{}", f.summary);
    }

    #[test]
    fn dag_matches_in_any_order() {
        ok("; CHECK-DAG: b\n; CHECK-DAG: a\n; CHECK: c\n", "a\nb\nc\n");
        let f = fails("; CHECK-DAG: a\n; CHECK-DAG: a\n", "a\n");
        assert!(f.summary.contains("CHECK-DAG"), "{}", f.summary);
        ok("; CHECK-DAG: a\n; CHECK-DAG: a\n", "a a\n");
        // The DAG match moves the search past `end`.
        let f = fails("; CHECK: start\n; CHECK-DAG: x\n; CHECK: end\n", "start\nend\nx\n");
        assert!(f.summary.contains("CHECK at c.txt:3 \"end\""), "{}", f.summary);
        // NOTs between DAG groups.
        ok("; CHECK-DAG: a\n; CHECK-NOT: z\n; CHECK-DAG: b\n", "a\nb\nz\n");
        let f = fails("; CHECK-DAG: a\n; CHECK-NOT: z\n; CHECK-DAG: b\n", "a\nz\nb\n");
        assert!(f.summary.contains("CHECK-NOT"), "{}", f.summary);
    }

    #[test]
    fn empty_count_prefixes_and_comments() {
        ok("; CHECK: a\n; CHECK-EMPTY:\n; CHECK-NEXT: b\n", "a\n\nb\n");
        fails("; CHECK: a\n; CHECK-EMPTY:\n", "a\nb\n\n");
        ok("; CHECK-COUNT-3: x\n; CHECK: y", "x x\nx\ny\n");
        fails("; CHECK-COUNT-3: x\n", "x x\n");
        let o = opts(&["FOO", "BAR"]);
        assert!(check(&o, "c", "; FOO: a\n; BAR: b\n; CHECK: zzz\n", "<stdin>", "a b\n").is_empty());
        // A directive preceded by an identifier character is not one; COM: and RUN: lines are comments.
        ok("; CHECK: a\n; XCHECK: zzz\n; COM: CHECK: zzz\n; RUN: foo | CHECK: zzz\n", "a\n");
        let f = fails("; nothing here\n", "a\n");
        assert!(f.summary.contains("no check strings found with prefix 'CHECK:'"), "{}", f.summary);
        let f = fails("; CHECK:\n", "a\n");
        assert!(f.summary.contains("found empty check string"), "{}", f.summary);
        let f = fails("; CHECK: a\n", "");
        assert!(f.summary.contains("is empty"), "{}", f.summary);
        assert!(
            check(&Options { allow_empty: true, ..opts(&["CHECK"]) }, "c", "; CHECK-NOT: a\n", "i", "")
                .is_empty()
        );
        let f = fails("; CHECK-LABEL: [[X:a]]\n", "a\n");
        assert!(f.summary.contains("labels may not use variables"), "{}", f.summary);
    }

    #[test]
    fn failure_details_show_the_input_around_the_failure() {
        let f = fails("; CHECK: one\n; CHECK: four\n", "one\ntwo\nthree\n");
        assert!(f.detail.contains("<stdin>:2:1: note: scanning from here"), "{}", f.detail);
        assert!(f.detail.contains(">>     2: two"), "{}", f.detail);
        assert!(f.detail.contains("; CHECK: four\n         ^\n"), "{}", f.detail);
    }
}
