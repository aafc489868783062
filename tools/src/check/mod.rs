//! `hostrt check FILE.mlir...`: run each test file's `// RUN:` lines in process, the way
//! LLVM `lit` runs TFRT's test programs, with hostrt's tools standing in for
//! TFRT's and a built-in FileCheck and `expected-*` verifier.
//!
//! Output: `PASS path` or `FAIL path: reason` per file, then `N passed, N failed`.

mod diagnostics;
mod exec;
mod filecheck;
mod runline;

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The verdict on one test file.
#[derive(Debug)]
pub struct FileResult {
    /// `Err(reason)`: the first failing RUN line and why, on one line.
    pub outcome: Result<(), String>,
    /// Per RUN line: the command run and each tool's status and stderr.
    pub log: String,
}

/// A fresh temporary directory for `%t`/`%T` (removed after the file is checked).
fn temp_dir_for(source: &Path) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let stem = source.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    std::env::temp_dir().join(format!("hostrt-check-{}-{n}-{stem}", std::process::id()))
}

/// Run every RUN line of `path`, stopping at the first that fails.
pub fn check_file(path: &Path) -> FileResult {
    let mut log = String::new();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return FileResult { outcome: Err(format!("cannot read: {e}")), log },
    };
    let lines = match runline::extract(&text) {
        Ok(l) if l.is_empty() => return FileResult { outcome: Err("no RUN lines".into()), log },
        Ok(l) => l,
        Err(e) => return FileResult { outcome: Err(e), log },
    };
    let tmp_dir = temp_dir_for(path);
    let source = path.display().to_string();
    let subs = runline::Substitutions {
        source: source.clone(),
        source_dir: path
            .parent()
            .map(|p| p.display().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or(".".into()),
        tmp_file: tmp_dir.join("out.tmp").display().to_string(),
        tmp_dir: tmp_dir.display().to_string(),
    };
    let env = exec::Env::new(source);
    let mut outcome = Ok(());
    for run in &lines {
        let script = runline::substitute(&run.text, &subs).and_then(|cmd| {
            log.push_str(&format!("RUN line {}: {cmd}\n", run.line));
            runline::parse(&cmd)
        });
        let result = script.and_then(|script| {
            if let Err(e) = std::fs::create_dir_all(&tmp_dir) {
                return Err(format!("cannot create {}: {e}", tmp_dir.display()));
            }
            exec::run_script(&script, &env, &mut log)
        });
        if let Err(reason) = result {
            outcome = Err(format!("RUN line {}: {reason}", run.line));
            break;
        }
    }
    if tmp_dir.exists() {
        let _ = std::fs::remove_dir_all(&tmp_dir);
    }
    FileResult { outcome, log }
}

/// The test files named by `inputs`: files as given, directories expanded to the `.mlir`
/// files anywhere below them (sorted by path; hidden folders such as `.git` skipped).
fn collect(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let hidden =
                |e: &walkdir::DirEntry| e.depth() > 0 && e.file_name().to_string_lossy().starts_with('.');
            let mut found = Vec::new();
            for entry in
                walkdir::WalkDir::new(input).sort_by_file_name().into_iter().filter_entry(|e| !hidden(e))
            {
                let entry = entry.map_err(|e| format!("{}: {e}", input.display()))?;
                let path = entry.path();
                if entry.file_type().is_file() && path.extension().is_some_and(|x| x == "mlir") {
                    found.push(path.to_path_buf());
                }
            }
            files.extend(found);
        } else {
            files.push(input.clone());
        }
    }
    Ok(files)
}

fn one_line(s: &str) -> String {
    s.split('\n').map(str::trim_end).filter(|l| !l.is_empty()).collect::<Vec<_>>().join(" | ")
}

/// `hostrt check`: prints one line per file and the totals; exit status 0 iff all passed.
pub fn main(inputs: &[PathBuf], verbose: bool) -> u8 {
    let files = match collect(inputs) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut stdout = std::io::stdout().lock();
    for file in &files {
        let result = catch_unwind(AssertUnwindSafe(|| check_file(file))).unwrap_or_else(|panic| {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            FileResult { outcome: Err(format!("hostrt panicked: {msg}")), log: String::new() }
        });
        let line = match &result.outcome {
            Ok(()) => {
                passed += 1;
                format!("PASS {}\n", file.display())
            }
            Err(reason) => {
                failed += 1;
                format!("FAIL {}: {}\n", file.display(), one_line(reason))
            }
        };
        let _ = stdout.write_all(line.as_bytes());
        if verbose && (result.outcome.is_err() || !result.log.is_empty()) {
            for l in result.log.lines() {
                let _ = writeln!(stdout, "    {l}");
            }
        }
        let _ = stdout.flush();
    }
    let _ = writeln!(stdout, "{passed} passed, {failed} failed");
    if files.is_empty() {
        eprintln!("error: no test files given");
        return 1;
    }
    u8::from(failed > 0)
}
