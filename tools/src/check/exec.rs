//! Running a parsed RUN command in process: the tools of the suite mapped to hostrt's
//!, pipes with *pipefail*, `not`, redirections, and `%s.bef` built from `%s`.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::Mutex;

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

use super::diagnostics::{Verifier, marker};
use super::filecheck;
use super::runline::{Command, Join, Redirect, Script};
use crate::run::{self, OptionError, RunIo, RunOptions, llvm_option};

/// What one test's commands share: the test file and its compiled form.
#[derive(Debug)]
pub struct Env {
    /// `%s`: the test file's path as substituted.
    pub source: String,
    /// `%s.bef`, built on first use.
    bef: RefCell<Option<Result<Vec<u8>, String>>>,
}

impl Env {
    pub fn new(source: String) -> Self {
        Env { source, bef: RefCell::new(None) }
    }

    /// Read a file; `%s.bef` is the test compiled in memory (as the reference build's
    /// `tfrt_translate -mlir-to-bef %s` would produce it), never a file on disk.
    fn read(&self, path: &str) -> Result<Vec<u8>, String> {
        if path == format!("{}.bef", self.source) {
            let mut cached = self.bef.borrow_mut();
            let bef = cached.get_or_insert_with(|| {
                let text =
                    std::fs::read_to_string(&self.source).map_err(|e| format!("{}: {e}", self.source))?;
                compile(&self.source, &text).map_err(|e| {
                    let first = e.lines().next().unwrap_or("").to_string();
                    format!("cannot build %s.bef: {first}")
                })
            });
            return bef.clone();
        }
        std::fs::read(path).map_err(|e| e.to_string())
    }
}

/// MLIR text to BEF; locations name `name`.
fn compile(name: &str, text: &str) -> Result<Vec<u8>, String> {
    hostrt_compiler::compile(name, text, Default::default()).map_err(|e| e.to_string())
}

/// One command's streams, as the shell would wire them.
#[derive(Debug, Default)]
struct Capture {
    out: Mutex<Vec<u8>>,
    err: Mutex<Vec<u8>>,
    /// Everything written to stderr, whatever its destination (for failure reasons).
    err_log: Mutex<String>,
    err_to_out: bool,
    out_to_err: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Capture {
    fn write_out(&self, b: &[u8]) {
        if self.out_to_err {
            self.write_err(b);
        } else {
            lock(&self.out).extend_from_slice(b);
        }
    }

    fn write_err(&self, b: &[u8]) {
        lock(&self.err_log).push_str(&String::from_utf8_lossy(b));
        if self.err_to_out && !self.out_to_err {
            lock(&self.out).extend_from_slice(b);
        } else {
            lock(&self.err).extend_from_slice(b);
        }
    }

    fn first_err_line(&self) -> Option<String> {
        lock(&self.err_log).lines().find(|l| !l.trim().is_empty()).map(String::from)
    }
}

impl RunIo for Capture {
    fn out(&self, text: &str) {
        self.write_out(text.as_bytes());
    }

    fn err(&self, text: &str) {
        self.write_err(text.as_bytes());
    }
}

/// `tfrt_translate` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Translate {
    MlirToBef,
    BefToMlir,
}

/// A command with its arguments understood.
#[derive(Debug)]
enum Tool {
    /// `bef_executor`, `bef_executor_lite`: the run driver.
    Driver {
        argv0: String,
        opts: RunOptions,
        input: String,
    },
    /// The driver rejects its command line (as LLVM's option parser would): message, exit 1.
    BadOption(String),
    CodeSize,
    Translate {
        mode: Translate,
        input: String,
        output: Option<String>,
    },
    Opt {
        input: String,
        split: bool,
        verify: bool,
        locations: bool,
        output: Option<String>,
    },
    FileCheck(filecheck::Options),
    Cat(Vec<String>),
    Echo(Vec<String>),
    Exit(i32),
}

#[derive(Debug)]
struct Prepared {
    /// How many `not`s wrap the command.
    nots: usize,
    /// The command line (for messages).
    text: String,
    name: String,
    tool: Tool,
    redirects: Vec<Redirect>,
}

/// The driver's command line, parsed as `hostrt run` parses it. `Err` is a feature hostrt
/// does not have yet.
fn driver_tool(argv0: &str, args: &[String]) -> Result<Tool, String> {
    match RunOptions::parse(argv0, args) {
        Ok((opts, input)) => Ok(Tool::Driver { argv0: argv0.to_string(), opts, input }),
        Err(OptionError::Bad(message)) => Ok(Tool::BadOption(format!("{argv0}: {message}\n"))),
        Err(OptionError::Unsupported(what)) => Err(what),
    }
}

fn translate_tool(args: &[String]) -> Result<Tool, String> {
    let mut mode = None;
    let mut input = None;
    let mut output = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match llvm_option(arg) {
            Some(("mlir-to-bef", None)) => mode = Some(Translate::MlirToBef),
            Some(("bef-to-mlir", None)) => mode = Some(Translate::BefToMlir),
            Some(("o", v)) => {
                output = Some(
                    v.map(String::from)
                        .or_else(|| it.next().cloned())
                        .ok_or("tfrt_translate -o needs a file")?,
                )
            }
            Some(_) => return Err(format!("tfrt_translate option '{arg}' is not supported")),
            None => {
                if input.replace(arg.clone()).is_some() {
                    return Err("tfrt_translate takes one input file".into());
                }
            }
        }
    }
    let mode = mode.ok_or("tfrt_translate needs -mlir-to-bef or -bef-to-mlir")?;
    Ok(Tool::Translate { mode, input: input.unwrap_or_else(|| "-".into()), output })
}

fn opt_tool(args: &[String]) -> Result<Tool, String> {
    let (mut split, mut verify, mut locations) = (false, false, false);
    let mut input = None;
    let mut output = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match llvm_option(arg) {
            Some(("split-input-file", None)) => split = true,
            Some(("verify-diagnostics", None)) => verify = true,
            Some(("mlir-print-debuginfo", None)) => locations = true,
            // hostrt's parser accepts ops of any dialect.
            Some(("allow-unregistered-dialect", None)) => {}
            Some(("o", v)) => {
                output = Some(
                    v.map(String::from).or_else(|| it.next().cloned()).ok_or("tfrt_opt -o needs a file")?,
                )
            }
            Some(_) => return Err(format!("tfrt_opt option or pass '{arg}' is not implemented")),
            None => {
                if input.replace(arg.clone()).is_some() {
                    return Err("tfrt_opt takes one input file".into());
                }
            }
        }
    }
    Ok(Tool::Opt { input: input.unwrap_or_else(|| "-".into()), split, verify, locations, output })
}

/// Understand one command; `Err` says what hostrt lacks to run it.
fn prepare(cmd: &Command) -> Result<Prepared, String> {
    let text = cmd.args.join(" ");
    let mut args: &[String] = &cmd.args;
    let mut nots = 0;
    while let Some(first) = args.first() {
        match first.as_str() {
            "not" => {
                nots += 1;
                args = &args[1..];
            }
            "--crash" if nots > 0 => return Err("'not --crash' is not supported".into()),
            _ => break,
        }
    }
    let Some((name, rest)) = args.split_first() else {
        return Err(format!("'{text}': no command after 'not'"));
    };
    let tool = match name.as_str() {
        "bef_executor" | "bef_executor_lite" => driver_tool(name, rest)?,
        "code_size_test_driver" => {
            if !rest.is_empty() {
                return Err("code_size_test_driver takes no arguments".into());
            }
            Tool::CodeSize
        }
        "tfrt_translate" => translate_tool(rest)?,
        "tfrt_opt" => opt_tool(rest)?,
        "FileCheck" => Tool::FileCheck(filecheck::parse_args(rest)?),
        "cat" => Tool::Cat(rest.to_vec()),
        "echo" => Tool::Echo(rest.to_vec()),
        "true" => Tool::Exit(0),
        "false" => Tool::Exit(1),
        other => return Err(format!("unknown tool '{other}'")),
    };
    let mut tool = tool;
    let mut redirects = cmd.redirects.clone();
    // `-o FILE` is the same as `> FILE`.
    if let Tool::Translate { output, .. } | Tool::Opt { output, .. } = &mut tool
        && let Some(file) = output.take()
    {
        redirects.push(Redirect::Stdout(file, false));
    }
    Ok(Prepared { nots, text, name: name.clone(), tool, redirects })
}

/// The outcome of one command.
struct Outcome {
    status: i32,
    /// Why it failed, in one line (when it did).
    reason: Option<String>,
}

impl Outcome {
    fn ok() -> Self {
        Outcome { status: 0, reason: None }
    }

    fn fail(status: i32, reason: String) -> Self {
        Outcome { status, reason: Some(reason) }
    }
}

fn read_input(env: &Env, path: &str, stdin: &[u8]) -> Result<Vec<u8>, String> {
    if path == "-" { Ok(stdin.to_vec()) } else { env.read(path) }
}

fn run_driver(argv0: &str, opts: &RunOptions, input: &str, stdin: &[u8], io: &Capture, env: &Env) -> Outcome {
    let bytes = match read_input(env, input, stdin) {
        Ok(b) => b,
        Err(e) => {
            io.err(&format!("cannot open input file '{input}': {e}\n"));
            return Outcome::fail(1, format!("{argv0}: cannot open input file '{input}': {e}"));
        }
    };
    let bef = if bytes.starts_with(&hostrt_core::bef::format::MAGIC) {
        bytes
    } else {
        let name = if input == "-" { "<stdin>" } else { input };
        let compiled = String::from_utf8(bytes)
            .map_err(|e| format!("{name}: neither BEF nor UTF-8 text: {e}"))
            .and_then(|text| compile(name, &text));
        match compiled {
            Ok(b) => b,
            Err(e) => {
                io.err(&format!("{e}\n"));
                return Outcome::fail(1, format!("{argv0}: {}", e.lines().next().unwrap_or("")));
            }
        }
    };
    let verifier = Verifier::lazy(vec![env.source.clone()]);
    let status = i32::from(run::run(argv0, &bef, opts, io, &verifier));
    if status == 0 {
        return Outcome::ok();
    }
    let why = io.first_err_line().unwrap_or_else(|| "no message on stderr".into());
    Outcome::fail(status, format!("{argv0} exited with status {status}: {why}"))
}

fn run_translate(mode: Translate, input: &str, stdin: &[u8], io: &Capture, env: &Env) -> Outcome {
    let bytes = match read_input(env, input, stdin) {
        Ok(b) => b,
        Err(e) => {
            io.err(&format!("tfrt_translate: cannot open '{input}': {e}\n"));
            return Outcome::fail(1, format!("tfrt_translate: cannot open '{input}': {e}"));
        }
    };
    let name = if input == "-" { "<stdin>" } else { input };
    let result = match mode {
        Translate::MlirToBef => String::from_utf8(bytes)
            .map_err(|e| format!("{name}: not UTF-8: {e}"))
            .and_then(|t| compile(name, &t)),
        Translate::BefToMlir => dis(name, &bytes).map(String::into_bytes),
    };
    match result {
        Ok(out) => {
            io.write_out(&out);
            Outcome::ok()
        }
        Err(e) => {
            io.err(&format!("{e}\n"));
            Outcome::fail(1, format!("tfrt_translate: {}", e.lines().next().unwrap_or("")))
        }
    }
}

/// BEF to MLIR text, as `hostrt dis` does.
fn dis(name: &str, bytes: &[u8]) -> Result<String, String> {
    let bytes = AlignedBytes::new(bytes);
    let alloc = crate::scratch_allocator(bytes.as_bytes().len() + 64)?;
    let text = BefFile::load_unresolved(bytes.as_bytes(), alloc)
        .map_err(|e| format!("{name}: {e}"))
        .and_then(|file| decode(&file).map_err(|e| format!("{name}: {e}")))
        .map(|module| print(&module, &PrintOptions { locations: true }));
    let _ = alloc.unregister();
    text
}

/// The chunks of `-split-input-file`: text between lines starting with `// -----`.
fn split_chunks(text: &str) -> Vec<String> {
    let mut chunks = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("// -----") {
            chunks.push(String::new());
        } else if let Some(last) = chunks.last_mut() {
            last.push_str(line);
        }
    }
    chunks
}

fn run_opt(
    input: &str,
    split: bool,
    verify: bool,
    locations: bool,
    stdin: &[u8],
    io: &Capture,
    env: &Env,
) -> Outcome {
    let name = if input == "-" { "<stdin>" } else { input };
    let text =
        match read_input(env, input, stdin).and_then(|b| String::from_utf8(b).map_err(|e| e.to_string())) {
            Ok(t) => t,
            Err(e) => {
                io.err(&format!("tfrt_opt: cannot open '{input}': {e}\n"));
                return Outcome::fail(1, format!("tfrt_opt: cannot open '{input}': {e}"));
            }
        };
    let chunks = if split { split_chunks(&text) } else { vec![text] };
    let mut printed: Vec<String> = Vec::new();
    let mut first_error: Option<String> = None;
    for chunk in &chunks {
        let result = parse(name, chunk).and_then(|m| write(&m, Some((name, chunk))).map(|_| m));
        if verify {
            let v = Verifier::with_buffer(name, chunk);
            if let Err(e) = &result {
                let file = (e.line > 0).then_some(name);
                v.diagnose(io, file, e.line as usize, e.col as usize, &e.message);
            }
            if v.finish_verification(io) && first_error.is_none() {
                first_error = Some(match &result {
                    Err(e) => {
                        format!("diagnostic verification failed at {}:{}: {}", e.line, e.col, e.message)
                    }
                    Ok(_) => "diagnostic verification failed: an expected diagnostic was not produced".into(),
                });
            }
        } else if let Err(e) = &result {
            let src = chunk.lines().nth((e.line as usize).wrapping_sub(1)).unwrap_or("");
            let at = if e.line > 0 { format!("{name}:{}:{}: ", e.line, e.col) } else { String::new() };
            let mut msg = format!("{at}error: {}\n", e.message);
            if e.line > 0 {
                msg.push_str(&marker(src, e.col as usize, 1));
            }
            io.err(&msg);
            first_error.get_or_insert_with(|| format!("{at}{}", e.message));
        }
        if let Ok(module) = result {
            printed.push(print(&module, &PrintOptions { locations }));
        }
    }
    io.out(&printed.join("// -----\n"));
    match first_error {
        None => Outcome::ok(),
        Some(e) => Outcome::fail(1, format!("tfrt_opt: {e}")),
    }
}

fn run_filecheck(o: &filecheck::Options, stdin: &[u8], io: &Capture, env: &Env) -> Outcome {
    let check_text = match env
        .read(&o.check_file)
        .and_then(|b| String::from_utf8(b).map_err(|e| e.to_string()))
    {
        Ok(t) => t,
        Err(e) => {
            io.err(&format!("Could not open check file '{}': {e}\n", o.check_file));
            return Outcome::fail(2, format!("FileCheck: cannot open check file '{}': {e}", o.check_file));
        }
    };
    let (input_name, input) = match o.input_file.as_deref() {
        None | Some("-") => ("<stdin>".to_string(), stdin.to_vec()),
        Some(path) => match env.read(path) {
            Ok(b) => (path.to_string(), b),
            Err(e) => {
                io.err(&format!("Could not open input file '{path}': {e}\n"));
                return Outcome::fail(2, format!("FileCheck: cannot open input file '{path}': {e}"));
            }
        },
    };
    let input = String::from_utf8_lossy(&input);
    let failures = filecheck::check(o, &o.check_file, &check_text, &input_name, &input);
    let Some(first) = failures.first() else { return Outcome::ok() };
    for f in &failures {
        io.err(&f.detail);
    }
    let more = match failures.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Outcome::fail(1, format!("FileCheck: {}{more}", first.summary))
}

fn run_tool(p: &Prepared, stdin: &[u8], io: &Capture, env: &Env) -> Outcome {
    match &p.tool {
        Tool::Driver { argv0, opts, input } => run_driver(argv0, opts, input, stdin, io, env),
        Tool::BadOption(msg) => {
            io.err(msg);
            Outcome::fail(1, msg.trim_end().to_string())
        }
        Tool::CodeSize => match run::run_code_size(stdin, io) {
            0 => Outcome::ok(),
            s => Outcome::fail(
                i32::from(s),
                "code_size_test_driver: could not load the program (aborted)".into(),
            ),
        },
        Tool::Translate { mode, input, .. } => run_translate(*mode, input, stdin, io, env),
        Tool::Opt { input, split, verify, locations, .. } => {
            run_opt(input, *split, *verify, *locations, stdin, io, env)
        }
        Tool::FileCheck(o) => run_filecheck(o, stdin, io, env),
        Tool::Cat(files) => {
            let files: Vec<String> = if files.is_empty() { vec!["-".into()] } else { files.clone() };
            for f in &files {
                match read_input(env, f, stdin) {
                    Ok(b) => io.write_out(&b),
                    Err(e) => {
                        io.err(&format!("cat: {f}: {e}\n"));
                        return Outcome::fail(1, format!("cat: {f}: {e}"));
                    }
                }
            }
            Outcome::ok()
        }
        Tool::Echo(words) => {
            io.out(&format!("{}\n", words.join(" ")));
            Outcome::ok()
        }
        Tool::Exit(0) => Outcome::ok(),
        Tool::Exit(s) => Outcome::fail(*s, format!("'{}' exited with status {s}", p.name)),
    }
}

/// Run one command with its redirections; returns the outcome and what it sends down the pipe.
fn run_command(p: &Prepared, stdin: Vec<u8>, env: &Env, log: &mut String) -> (Outcome, Vec<u8>) {
    let mut io = Capture::default();
    let mut stdin = stdin;
    let mut out_file = None;
    let mut err_file = None;
    for r in &p.redirects {
        match r {
            Redirect::ErrToOut => io.err_to_out = true,
            Redirect::OutToErr => io.out_to_err = true,
            Redirect::Stdin(f) => match env.read(f) {
                Ok(b) => stdin = b,
                Err(e) => return (Outcome::fail(1, format!("cannot read '{f}' for '<': {e}")), Vec::new()),
            },
            Redirect::Stdout(f, append) => out_file = Some((f.clone(), *append)),
            Redirect::Stderr(f, append) => err_file = Some((f.clone(), *append)),
        }
    }
    // A redirected standard output does not go down the pipe; with `2>&1` after `> f` the
    // errors follow it into the file.
    let mut outcome = run_tool(p, &stdin, &io, env);
    let out = std::mem::take(&mut *lock(&io.out));
    let err = std::mem::take(&mut *lock(&io.err));
    let mut piped = out;
    let mut shown_err = err;
    for (target, bytes) in [(out_file, &mut piped), (err_file, &mut shown_err)] {
        let Some((path, append)) = target else { continue };
        let written = if append {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
        } else {
            std::fs::write(&path, &*bytes)
        };
        if let Err(e) = written {
            outcome = Outcome::fail(1, format!("cannot write '{path}': {e}"));
        }
        bytes.clear();
    }
    let _ = write!(log, "  [{}] exit status {}", p.text, outcome.status);
    if p.nots > 0 {
        let _ = write!(log, " (before 'not')");
    }
    log.push('\n');
    if !shown_err.is_empty() {
        for line in String::from_utf8_lossy(&shown_err).lines() {
            let _ = writeln!(log, "    | {line}");
        }
    }
    // `not`: success iff the command failed (a crash, status >= 128, is not a failure).
    for _ in 0..p.nots {
        outcome = if outcome.status == 0 {
            Outcome::fail(1, format!("'not {}': the command succeeded but was expected to fail", p.text))
        } else if outcome.status >= 128 {
            Outcome::fail(1, format!("'not {}': the command crashed (status {})", p.text, outcome.status))
        } else {
            Outcome::ok()
        };
    }
    (outcome, piped)
}

/// Run a RUN command. `Ok(())` when it passes; `Err(reason)` (one line) otherwise. `log`
/// collects each command's status and stderr for verbose reports.
pub fn run_script(script: &Script, env: &Env, log: &mut String) -> Result<(), String> {
    let mut prepared: Vec<(Join, Vec<Prepared>)> = Vec::new();
    for (join, pipeline) in script {
        let cmds = pipeline.commands.iter().map(prepare).collect::<Result<Vec<_>, _>>();
        prepared.push((*join, cmds.map_err(|e| format!("unsupported: {e}"))?));
    }
    let mut status = 0;
    let mut reasons: Vec<String> = Vec::new();
    for (join, pipeline) in &prepared {
        let runs = match join {
            Join::Always => true,
            Join::And => status == 0,
            Join::Or => status != 0,
        };
        if !runs {
            continue;
        }
        let mut stdin = Vec::new();
        let mut failures = Vec::new();
        status = 0;
        for cmd in pipeline {
            let (outcome, out) = run_command(cmd, stdin, env, log);
            if outcome.status != 0 {
                status = outcome.status;
                failures.extend(outcome.reason);
            }
            stdin = out;
        }
        reasons = failures;
    }
    if status == 0 {
        Ok(())
    } else if reasons.is_empty() {
        Err(format!("exit status {status}"))
    } else {
        Err(reasons.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn driver_flags_follow_llvm_conventions() {
        let args = strings(&[
            "x.bef",
            "-work_queue_type=s",
            "--host_allocator_type",
            "malloc",
            "--functions",
            "a,b",
            "--functions=c",
            "-test_init_function",
            "init",
            "--print_error_code",
        ]);
        let Ok(Tool::Driver { opts, input, .. }) = driver_tool("bef_executor", &args) else { panic!() };
        assert_eq!(input, "x.bef");
        assert_eq!(opts.work_queue_type, "s");
        assert_eq!(opts.host_allocator_type, "malloc");
        assert_eq!(opts.functions, ["a", "b", "c"]);
        assert_eq!(opts.test_init_function.as_deref(), Some("init"));
        assert!(opts.print_error_code);
        let Ok(Tool::Driver { input, .. }) = driver_tool("d", &[]) else { panic!() };
        assert_eq!(input, "-");
        let Ok(Tool::Driver { opts, .. }) = driver_tool("d", &strings(&["--work_queue_type=mstd:8"])) else {
            panic!()
        };
        assert_eq!(opts.work_queue_type, "mstd:8");
        let Ok(Tool::Driver { opts, .. }) =
            driver_tool("d", &strings(&["--host_allocator_type", "test_fixed_size_1k"]))
        else {
            panic!("every allocator `hostrt run` supports works in a RUN line")
        };
        assert_eq!(opts.host_allocator_type, "test_fixed_size_1k");
        assert!(driver_tool("d", &strings(&["--shared_libs=x.so"])).is_err(), "plug-ins are not built yet");
        assert!(
            matches!(driver_tool("d", &strings(&["--bogus"])), Ok(Tool::BadOption(m)) if m.contains("'--bogus'"))
        );
        assert!(matches!(driver_tool("d", &strings(&["--host_allocator_type=x"])), Ok(Tool::BadOption(_))));
    }

    #[test]
    fn unknown_tools_are_unsupported() {
        let cmd = Command { args: strings(&["not", "frobnicate", "x"]), redirects: vec![] };
        assert_eq!(prepare(&cmd).unwrap_err(), "unknown tool 'frobnicate'");
        let cmd = Command { args: strings(&["tfrt_opt", "-some-pass", "x"]), redirects: vec![] };
        assert!(prepare(&cmd).unwrap_err().contains("-some-pass"));
        let cmd = Command { args: strings(&["not", "not", "cat"]), redirects: vec![] };
        assert_eq!(prepare(&cmd).unwrap().nots, 2);
    }

    #[test]
    fn splits_input_files() {
        assert_eq!(split_chunks("a\n// -----\nb\n  // ----- x\nc"), ["a\n", "b\n", "c"]);
    }
}
