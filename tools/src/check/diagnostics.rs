//! `expected-*` annotations and diagnostic verification, after MLIR's
//! `SourceMgrDiagnosticVerifierHandler`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{LazyLock, Mutex};

use hostrt_core::Location;
use regex::Regex;

use crate::run::{DiagnosticHandler, DiagnosticKind, RunIo};

/// Severity named by an annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Note,
    Remark,
    Warning,
}

impl Severity {
    fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Note => "note",
            Severity::Remark => "remark",
            Severity::Warning => "warning",
        }
    }
}

/// One `expected-*` annotation.
#[derive(Clone, Debug)]
pub struct Annotation {
    pub severity: Severity,
    /// The expected text (between the outermost `{{` and `}}`).
    pub text: String,
    /// For `-re` annotations: the compiled pattern.
    pub regex: Option<Regex>,
    /// The line it applies to (1-based); `None` for `@unknown`.
    pub target: Option<usize>,
    /// Where the annotation itself is: 1-based line and the column of `expected-`.
    pub line: usize,
    pub col: usize,
    /// Whether some diagnostic matched it.
    pub matched: bool,
}

impl Annotation {
    fn accepts(&self, text: &str) -> bool {
        match &self.regex {
            Some(re) => re.is_match(text),
            None => text.contains(&self.text),
        }
    }
}

static ANNOTATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"expected-(error|note|remark|warning)(-re)? *(@([+-][0-9]+|above|below|unknown))? *\{\{(.*)\}\}$",
    )
    .expect("annotation pattern")
});

/// The regex of an `expected-*-re` text: `{{re}}` segments are regexes, the rest literal.
fn annotation_regex(text: &str) -> Result<Regex, String> {
    let mut pattern = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        pattern.push_str(&regex::escape(&rest[..open]));
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| "found start of regex with no end '}}'".to_string())?;
        write!(pattern, "(?:{})", &after[..close]).ok();
        rest = &after[close + 2..];
    }
    pattern.push_str(&regex::escape(rest));
    Regex::new(&pattern).map_err(|e| format!("invalid regex: {e}"))
}

/// The annotations of one buffer, plus errors found while reading them (bad regexes).
#[derive(Clone, Debug, Default)]
pub struct FileAnnotations {
    pub annotations: Vec<Annotation>,
    /// `(line, col, message)` of malformed annotations.
    pub errors: Vec<(usize, usize, String)>,
}

/// Scan `text` for annotations (every line, as MLIR's verifier does).
pub fn scan(text: &str) -> FileAnnotations {
    let mut out = FileAnnotations::default();
    let mut last_plain_line = 0usize;
    let mut for_next_line: Vec<usize> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim_end();
        let Some(caps) = ANNOTATION.captures(line) else {
            last_plain_line = line_no;
            for a in for_next_line.drain(..) {
                out.annotations[a].target = Some(line_no);
            }
            continue;
        };
        let severity = match &caps[1] {
            "error" => Severity::Error,
            "note" => Severity::Note,
            "remark" => Severity::Remark,
            _ => Severity::Warning,
        };
        let col = caps.get(0).map_or(0, |m| m.start()) + 1;
        let text = caps[5].to_string();
        let regex = if caps.get(2).is_some() {
            match annotation_regex(&text) {
                Ok(r) => Some(r),
                Err(e) => {
                    out.errors.push((line_no, col, e));
                    continue;
                }
            }
        } else {
            None
        };
        let mut below = false;
        let target = match caps.get(4).map(|m| m.as_str()) {
            None => Some(line_no),
            Some("unknown") => None,
            Some("above") => Some(last_plain_line),
            Some("below") => {
                below = true;
                None
            }
            Some(offset) => {
                let n: i64 = offset.parse().unwrap_or(0);
                let t = line_no as i64 + n;
                if t < 1 {
                    out.errors.push((
                        line_no,
                        col,
                        format!("'{offset}' points before the start of the file"),
                    ));
                    continue;
                }
                Some(t as usize)
            }
        };
        out.annotations.push(Annotation {
            severity,
            text,
            regex,
            target,
            line: line_no,
            col,
            matched: false,
        });
        if below {
            for_next_line.push(out.annotations.len() - 1);
        }
    }
    // `@below` with no following plain line applies to no line at all (never matches).
    out
}

/// Tabs expanded to multiples of 8 columns.
fn expand_tabs(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c == '\t' {
            let pad = 8 - out.chars().count() % 8;
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            out.push(c);
        }
    }
    out
}

/// `source_line`, then a marker line: `^` under byte column `col` (1-based) followed by
/// `width - 1` tildes.
pub fn marker(source_line: &str, col: usize, width: usize) -> String {
    let before = source_line.get(..col.saturating_sub(1)).unwrap_or(source_line);
    let pad = expand_tabs(before).chars().count();
    let tildes = "~".repeat(width.saturating_sub(1));
    format!("{}\n{}^{tildes}\n", expand_tabs(source_line), " ".repeat(pad))
}

/// A buffer whose annotations are being verified.
#[derive(Debug)]
struct Scanned {
    /// The name printed in messages.
    name: String,
    lines: Vec<String>,
    ann: FileAnnotations,
}

impl Scanned {
    fn new(name: &str, text: &str) -> Self {
        Scanned { name: name.to_string(), lines: text.lines().map(String::from).collect(), ann: scan(text) }
    }

    fn line(&self, n: usize) -> &str {
        self.lines.get(n.wrapping_sub(1)).map_or("", String::as_str)
    }
}

#[derive(Debug, Default)]
struct State {
    /// Buffers in scan order.
    files: Vec<Scanned>,
    /// Location file name → index in `files` (`None`: the file cannot be read).
    by_name: HashMap<String, Option<usize>>,
    failed: bool,
}

/// Verifies error diagnostics against `expected-*` annotations; unconsumed diagnostics and
/// unmatched annotations are reported on stderr in MLIR's words.
#[derive(Debug)]
pub struct Verifier {
    /// Paths that a (possibly shortened) location file name may stand for.
    sources: Vec<String>,
    state: Mutex<State>,
}

impl Verifier {
    /// A verifier that reads annotation files lazily, on their first diagnostic (the
    /// driver's behaviour). A location's file name that is a tail of one of `sources` (BEF
    /// keeps only the last bytes of long names) is read from that source.
    pub fn lazy(sources: Vec<String>) -> Self {
        Verifier { sources, state: Mutex::new(State::default()) }
    }

    /// A verifier for one buffer, scanned up front (`tfrt_opt --verify-diagnostics`).
    pub fn with_buffer(name: &str, text: &str) -> Self {
        let v = Verifier::lazy(vec![name.to_string()]);
        {
            let mut st = v.lock();
            st.files.push(Scanned::new(name, text));
            st.by_name.insert(name.to_string(), Some(0));
        }
        v
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Index of the scanned file for location file `file`, reading it on first use.
    fn file_index(&self, st: &mut State, io: &dyn RunIo, file: &str) -> Option<usize> {
        if let Some(&idx) = st.by_name.get(file) {
            return idx;
        }
        let path = self
            .sources
            .iter()
            .find(|s| s.as_str() == file || (!file.is_empty() && s.ends_with(file)))
            .cloned()
            .unwrap_or_else(|| file.to_string());
        let idx = std::fs::read_to_string(&path).ok().map(|text| {
            let scanned = Scanned::new(&path, &text);
            for (line, col, msg) in &scanned.ann.errors {
                st.failed = true;
                let src = scanned.line(*line).to_string();
                io.err(&format!("{path}:{line}:{col}: error: {msg}\n{}", marker(&src, *col, 1)));
            }
            st.files.push(scanned);
            st.files.len() - 1
        });
        st.by_name.insert(file.to_string(), idx);
        idx
    }

    /// Handle one error diagnostic at `file:line:col` (a file location) or without one
    /// (`file` None: unknown; `Some(name)` with `line` 0: a name location).
    pub fn diagnose(&self, io: &dyn RunIo, file: Option<&str>, line: usize, col: usize, text: &str) {
        let mut st = self.lock();
        let st = &mut *st;
        match file {
            Some(file) if line > 0 => {
                let Some(idx) = self.file_index(st, io, file) else {
                    st.failed = true;
                    io.err(&format!("{file}:{line}:{col}: error: unexpected error: {text}\n"));
                    return;
                };
                let f = &mut st.files[idx];
                let mut wrong_kind: Option<usize> = None;
                let mut consumed = false;
                for (i, a) in f.ann.annotations.iter_mut().enumerate() {
                    if a.target != Some(line) || !a.accepts(text) {
                        continue;
                    }
                    if a.severity == Severity::Error {
                        a.matched = true;
                        consumed = true;
                    } else if wrong_kind.is_none() {
                        wrong_kind = Some(i);
                    }
                }
                if consumed {
                    return;
                }
                st.failed = true;
                if let Some(i) = wrong_kind {
                    let a = &f.ann.annotations[i];
                    let src = f.line(a.line);
                    io.err(&format!(
                        "{}:{}:{}: error: 'error' diagnostic emitted when expecting a '{}'\n{}",
                        f.name,
                        a.line,
                        a.col,
                        a.severity.name(),
                        marker(src, a.col, 1)
                    ));
                    return;
                }
                let src = f.line(line).to_string();
                io.err(&format!(
                    "{}:{line}:{col}: error: unexpected error: {text}\n{}",
                    f.name,
                    marker(&src, col, 1)
                ));
            }
            _ => {
                let mut consumed = false;
                for f in &mut st.files {
                    for a in &mut f.ann.annotations {
                        if a.target.is_none() && a.severity == Severity::Error && a.accepts(text) {
                            a.matched = true;
                            consumed = true;
                        }
                    }
                }
                if consumed {
                    return;
                }
                st.failed = true;
                match file {
                    Some(name) => io.err(&format!("error: loc(\"{name}\"): unexpected error: {text}\n")),
                    None => io.err(&format!("error: unexpected error: {text}\n")),
                }
            }
        }
    }

    /// Report every annotation that matched nothing; true when verification failed.
    pub fn finish_verification(&self, io: &dyn RunIo) -> bool {
        let mut st = self.lock();
        let st = &mut *st;
        for f in &mut st.files {
            for a in &mut f.ann.annotations {
                if a.matched {
                    continue;
                }
                st.failed = true;
                // Report each only once, even if finish is called again.
                a.matched = true;
                let src = f.lines.get(a.line - 1).map_or("", String::as_str);
                io.err(&format!(
                    "{}:{}:{}: error: expected {} \"{}\" was not produced\n{}",
                    f.name,
                    a.line,
                    a.col,
                    a.severity.name(),
                    a.text,
                    marker(src, a.col, a.text.chars().count().max(1))
                ));
            }
        }
        st.failed
    }
}

impl DiagnosticHandler for Verifier {
    fn emit(&self, io: &dyn RunIo, _kind: DiagnosticKind, location: Option<&Location>, text: &str) {
        match location {
            Some(l) => self.diagnose(io, Some(l.file()), l.line as usize, l.column as usize, text),
            None => self.diagnose(io, None, 0, 0, text),
        }
    }

    fn finish(&self, io: &dyn RunIo) -> bool {
        self.finish_verification(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Buf(Mutex<String>);

    impl RunIo for Buf {
        fn out(&self, text: &str) {
            self.0.lock().unwrap().push_str(text);
        }
        fn err(&self, text: &str) {
            self.0.lock().unwrap().push_str(text);
        }
    }

    const SRC: &str = "op one\n\
        op two // expected-error {{boom}}\n\
        // expected-error @+1 {{bang}}\n\
        op three\n\
        op four\n\
        // expected-warning @above {{careful}}\n\
        // expected-error @below {{later}}\n\
        // expected-error-re @below {{code {{[0-9]+}}}}\n\
        op five\n\
        // expected-error @unknown {{nowhere}}\n";

    #[test]
    fn scans_designators() {
        let ann = scan(SRC);
        assert!(ann.errors.is_empty());
        let got: Vec<(Severity, &str, Option<usize>)> =
            ann.annotations.iter().map(|a| (a.severity, a.text.as_str(), a.target)).collect();
        assert_eq!(
            got,
            [
                (Severity::Error, "boom", Some(2)),
                (Severity::Error, "bang", Some(4)),
                (Severity::Warning, "careful", Some(5)),
                (Severity::Error, "later", Some(9)),
                (Severity::Error, "code {{[0-9]+}}", Some(9)),
                (Severity::Error, "nowhere", None),
            ]
        );
        assert_eq!(ann.annotations[0].col, 11);
        assert!(ann.annotations[4].accepts("error code 42"));
        assert!(!ann.annotations[4].accepts("error code x"));
        let bad = scan("x // expected-error-re {{a {{([}}}}\n");
        assert_eq!(bad.errors.len(), 1);
    }

    #[test]
    fn consumes_expected_and_reports_the_rest() {
        let v = Verifier::with_buffer("t.mlir", SRC);
        let io = Buf::default();
        v.diagnose(&io, Some("t.mlir"), 2, 4, "runtime error: boom");
        v.diagnose(&io, Some("t.mlir"), 2, 4, "runtime error: boom again");
        v.diagnose(&io, Some("t.mlir"), 4, 1, "runtime error: bang");
        v.diagnose(&io, Some("t.mlir"), 9, 1, "later, code 7");
        v.diagnose(&io, None, 0, 0, "nowhere to be found");
        assert_eq!(*io.0.lock().unwrap(), "");
        // The warning annotation on line 5 did not get its diagnostic.
        assert!(v.finish_verification(&io));
        let err = io.0.lock().unwrap().clone();
        assert_eq!(
            err,
            "t.mlir:6:4: error: expected warning \"careful\" was not produced\n\
             // expected-warning @above {{careful}}\n   ^~~~~~~\n"
        );
    }

    #[test]
    fn unexpected_diagnostics_are_printed_with_the_source_line() {
        let v = Verifier::with_buffer("t.mlir", "\tfoo bar\n");
        let io = Buf::default();
        v.diagnose(&io, Some("t.mlir"), 1, 6, "runtime error: nope");
        v.diagnose(&io, Some("t.mlir"), 0, 0, "runtime error: named");
        v.diagnose(&io, None, 0, 0, "runtime error: nowhere");
        assert!(v.finish_verification(&io));
        assert_eq!(
            *io.0.lock().unwrap(),
            "t.mlir:1:6: error: unexpected error: runtime error: nope\n        foo bar\n            ^\n\
             error: loc(\"t.mlir\"): unexpected error: runtime error: named\n\
             error: unexpected error: runtime error: nowhere\n"
        );
    }

    #[test]
    fn wrong_severity_is_reported_at_the_annotation() {
        let v = Verifier::with_buffer("t.mlir", "x // expected-note {{hm}}\n");
        let io = Buf::default();
        v.diagnose(&io, Some("t.mlir"), 1, 1, "hm");
        let err = io.0.lock().unwrap().clone();
        assert!(
            err.starts_with("t.mlir:1:6: error: 'error' diagnostic emitted when expecting a 'note'\n"),
            "{err}"
        );
    }

    #[test]
    fn lazy_files_are_read_on_first_diagnostic_and_matched_by_tail() {
        let dir = std::env::temp_dir().join(format!("hostrt-diag-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lazy.mlir");
        std::fs::write(&path, "a\nb // expected-error {{kaput}}\n").unwrap();
        let full = path.display().to_string();
        let v = Verifier::lazy(vec![full.clone()]);
        let io = Buf::default();
        // The location keeps only the tail of the name.
        let tail = &full[full.len() - 9..];
        v.diagnose(&io, Some(tail), 2, 1, "runtime error: kaput");
        assert!(!v.finish_verification(&io), "{}", io.0.lock().unwrap());
        // A verifier that never sees a diagnostic never reads the file, so it cannot fail.
        assert!(!Verifier::lazy(vec![full]).finish_verification(&io));
    }
}
