//! `// RUN:` lines: extraction with `\` continuations, lit substitutions, and a
//! small shell grammar (words, quotes, pipes, `&&`/`||`/`;`, redirections).

/// One RUN command: the joined text of its `RUN:` lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunLine {
    /// 1-based line of its first `RUN:` line.
    pub line: usize,
    /// The command, continuation lines joined, trimmed.
    pub text: String,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The text after a `RUN:` keyword on this line (not part of a longer word), if any.
fn run_keyword(line: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(i) = line[from..].find("RUN:") {
        let at = from + i;
        if !line[..at].chars().next_back().is_some_and(is_word_char) {
            return Some(&line[at + 4..]);
        }
        from = at + 4;
    }
    None
}

/// Every RUN command of `source`, in order. A line ending in `\` continues on the next RUN
/// line (lit semantics: the backslash is dropped and the next line's text appended).
pub fn extract(source: &str) -> Result<Vec<RunLine>, String> {
    let mut out: Vec<RunLine> = Vec::new();
    let mut pending: Option<RunLine> = None;
    for (i, line) in source.lines().enumerate() {
        let Some(rest) = run_keyword(line) else { continue };
        let rest = rest.trim_end();
        let mut cur = match pending.take() {
            Some(mut p) => {
                p.text.push_str(rest);
                p
            }
            None => RunLine { line: i + 1, text: rest.to_string() },
        };
        if cur.text.ends_with('\\') {
            cur.text.pop();
            pending = Some(cur);
        } else {
            cur.text = cur.text.trim().to_string();
            out.push(cur);
        }
    }
    if let Some(p) = pending {
        return Err(format!("RUN line {} ends with a '\\' continuation but no RUN line follows", p.line));
    }
    Ok(out)
}

/// Values for lit's substitutions.
#[derive(Clone, Debug, Default)]
pub struct Substitutions {
    /// `%s`: the test file's path.
    pub source: String,
    /// `%S`, `%p`: the directory of the test file.
    pub source_dir: String,
    /// `%t`: a temporary file path for this test.
    pub tmp_file: String,
    /// `%T`: a temporary directory for this test.
    pub tmp_dir: String,
}

/// Apply `%s`, `%S`, `%p`, `%t`, `%T` and `%%`; any other `%x` is an error.
pub fn substitute(text: &str, subs: &Substitutions) -> Result<String, String> {
    let mut out = String::with_capacity(text.len() + 64);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('s') => out.push_str(&subs.source),
            Some('S' | 'p') => out.push_str(&subs.source_dir),
            Some('t') => out.push_str(&subs.tmp_file),
            Some('T') => out.push_str(&subs.tmp_dir),
            Some(x) => return Err(format!("unsupported lit substitution '%{x}'")),
            None => return Err("a RUN line ends with a lone '%'".into()),
        }
    }
    Ok(out)
}

/// A redirection of one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Redirect {
    /// `2>&1`: standard error joins standard output.
    ErrToOut,
    /// `>&2`, `1>&2`: standard output joins standard error.
    OutToErr,
    /// `< FILE`.
    Stdin(String),
    /// `> FILE`, `>> FILE` (append).
    Stdout(String, bool),
    /// `2> FILE`, `2>> FILE` (append).
    Stderr(String, bool),
}

/// One command: its words and redirections.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    pub args: Vec<String>,
    pub redirects: Vec<Redirect>,
}

/// Commands joined by `|`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub commands: Vec<Command>,
}

/// How a pipeline is joined to the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// First pipeline, or after `;`: always runs.
    Always,
    /// After `&&`: runs if the previous one succeeded.
    And,
    /// After `||`: runs if the previous one failed.
    Or,
}

/// A whole RUN command: pipelines with how each is joined to the previous.
pub type Script = Vec<(Join, Pipeline)>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Word(String),
    Pipe,
    And,
    Or,
    Semi,
    Redir(Redirect),
}

/// Split `text` into shell tokens.
fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    // Whether `word` came from unquoted text only (so `2>` is a redirection, not "2" then `>`).
    let mut plain = true;
    // Pending redirection waiting for its file operand.
    let mut want_file: Option<fn(String) -> Redirect> = None;
    macro_rules! flush {
        () => {
            if in_word {
                let w = std::mem::take(&mut word);
                match want_file.take() {
                    Some(make) => toks.push(Tok::Redir(make(w))),
                    None => toks.push(Tok::Word(w)),
                }
                in_word = false;
                plain = true;
            }
        };
    }
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => flush!(),
            '\'' => {
                in_word = true;
                plain = false;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => word.push(x),
                        None => return Err("unterminated single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                plain = false;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => word.push(x),
                            Some(x) => {
                                word.push('\\');
                                word.push(x);
                            }
                            None => return Err("unterminated double quote".into()),
                        },
                        Some(x) => word.push(x),
                        None => return Err("unterminated double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                plain = false;
                match chars.next() {
                    Some(x) => word.push(x),
                    None => return Err("a RUN line ends with '\\'".into()),
                }
            }
            '|' | '&' | ';' | '<' | '>' => {
                // `2>`, `1>`: a file-descriptor prefix glued to the operator.
                let fd = if c == '>' && in_word && plain && (word == "1" || word == "2") {
                    let fd = if word == "2" { 2 } else { 1 };
                    word.clear();
                    in_word = false;
                    fd
                } else {
                    flush!();
                    1
                };
                if want_file.is_some() {
                    return Err(format!("a redirection needs a file name before '{c}'"));
                }
                match c {
                    '|' if chars.peek() == Some(&'|') => {
                        chars.next();
                        toks.push(Tok::Or);
                    }
                    '|' => toks.push(Tok::Pipe),
                    '&' if chars.peek() == Some(&'&') => {
                        chars.next();
                        toks.push(Tok::And);
                    }
                    '&' => return Err("background jobs ('&') are not supported in RUN lines".into()),
                    ';' => toks.push(Tok::Semi),
                    '<' => want_file = Some(Redirect::Stdin),
                    _ => {
                        let append = chars.peek() == Some(&'>');
                        if append {
                            chars.next();
                        }
                        if chars.peek() == Some(&'&') {
                            chars.next();
                            let target = chars.next();
                            match (fd, target, append) {
                                (2, Some('1'), false) => toks.push(Tok::Redir(Redirect::ErrToOut)),
                                (1, Some('2'), false) => toks.push(Tok::Redir(Redirect::OutToErr)),
                                _ => return Err("unsupported file-descriptor redirection".into()),
                            }
                        } else {
                            want_file = Some(match (fd, append) {
                                (2, false) => |f| Redirect::Stderr(f, false),
                                (2, true) => |f| Redirect::Stderr(f, true),
                                (_, false) => |f| Redirect::Stdout(f, false),
                                (_, true) => |f| Redirect::Stdout(f, true),
                            });
                        }
                    }
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        match want_file.take() {
            Some(make) => toks.push(Tok::Redir(make(word))),
            None => toks.push(Tok::Word(word)),
        }
    }
    if want_file.is_some() {
        return Err("a redirection at the end of a RUN line needs a file name".into());
    }
    Ok(toks)
}

/// Parse a substituted RUN command into pipelines.
pub fn parse(text: &str) -> Result<Script, String> {
    let mut script: Script = Vec::new();
    let mut join = Join::Always;
    let mut pipeline = Pipeline::default();
    let mut cmd = Command::default();
    let finish_cmd = |cmd: &mut Command, pipeline: &mut Pipeline, op: &str| -> Result<(), String> {
        if cmd.args.is_empty() {
            return Err(format!("empty command before '{op}'"));
        }
        pipeline.commands.push(std::mem::take(cmd));
        Ok(())
    };
    for tok in tokenize(text)? {
        match tok {
            Tok::Word(w) => cmd.args.push(w),
            Tok::Redir(r) => cmd.redirects.push(r),
            Tok::Pipe => finish_cmd(&mut cmd, &mut pipeline, "|")?,
            Tok::And | Tok::Or | Tok::Semi => {
                let (op, next) = match tok {
                    Tok::And => ("&&", Join::And),
                    Tok::Or => ("||", Join::Or),
                    _ => (";", Join::Always),
                };
                finish_cmd(&mut cmd, &mut pipeline, op)?;
                script.push((join, std::mem::take(&mut pipeline)));
                join = next;
            }
        }
    }
    finish_cmd(&mut cmd, &mut pipeline, "end of line")?;
    script.push((join, pipeline));
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(c: &Command) -> Vec<&str> {
        c.args.iter().map(String::as_str).collect()
    }

    #[test]
    fn extracts_run_lines_and_joins_continuations() {
        let src = "# a comment\n; RUN: tool-a one \\\n; RUN:   two\nfoo XRUN: not me\n;RUN: tool-b\n";
        let lines = extract(src).unwrap();
        assert_eq!(
            lines,
            vec![
                RunLine { line: 2, text: "tool-a one    two".into() },
                RunLine { line: 5, text: "tool-b".into() },
            ]
        );
        assert!(extract("-- RUN: dangling \\\n").is_err());
        assert!(extract("no commands here\n").unwrap().is_empty());
    }

    #[test]
    fn substitutes_lit_variables() {
        let subs = Substitutions {
            source: "/d/x.mlir".into(),
            source_dir: "/d".into(),
            tmp_file: "/tmp/x.tmp".into(),
            tmp_dir: "/tmp".into(),
        };
        assert_eq!(
            substitute("a %s.bef %S/y %t %T 100%%", &subs).unwrap(),
            "a /d/x.mlir.bef /d/y /tmp/x.tmp /tmp 100%"
        );
        assert!(substitute("%q", &subs).unwrap_err().contains("%q"));
    }

    #[test]
    fn parses_pipes_redirections_and_quotes() {
        let s = parse("cat in.bef | not drv -x=1 'a b' \"c\\\"d\" 2>&1 | check file").unwrap();
        assert_eq!(s.len(), 1);
        let p = &s[0].1;
        assert_eq!(p.commands.len(), 3);
        assert_eq!(words(&p.commands[0]), ["cat", "in.bef"]);
        assert_eq!(words(&p.commands[1]), ["not", "drv", "-x=1", "a b", "c\"d"]);
        assert_eq!(p.commands[1].redirects, [Redirect::ErrToOut]);
        assert_eq!(words(&p.commands[2]), ["check", "file"]);
    }

    #[test]
    fn parses_sequences_and_file_redirections() {
        let s = parse("a > out.txt && b < out.txt 2> err.txt; c >> log || d >&2").unwrap();
        let joins: Vec<Join> = s.iter().map(|(j, _)| *j).collect();
        assert_eq!(joins, [Join::Always, Join::And, Join::Always, Join::Or]);
        assert_eq!(s[0].1.commands[0].redirects, [Redirect::Stdout("out.txt".into(), false)]);
        assert_eq!(
            s[1].1.commands[0].redirects,
            [Redirect::Stdin("out.txt".into()), Redirect::Stderr("err.txt".into(), false)]
        );
        assert_eq!(s[2].1.commands[0].redirects, [Redirect::Stdout("log".into(), true)]);
        assert_eq!(s[3].1.commands[0].redirects, [Redirect::OutToErr]);
        // A quoted "2" is a word, not a file descriptor.
        let s = parse("echo '2'>f").unwrap();
        assert_eq!(words(&s[0].1.commands[0]), ["echo", "2"]);
        assert_eq!(s[0].1.commands[0].redirects, [Redirect::Stdout("f".into(), false)]);
    }

    #[test]
    fn rejects_malformed_commands() {
        assert!(parse("a | | b").is_err());
        assert!(parse("a 'open").is_err());
        assert!(parse("a >").is_err());
        assert!(parse("a &").is_err());
        assert!(parse("| a").is_err());
    }
}
