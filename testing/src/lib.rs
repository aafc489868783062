//! What the workspace's tests share, so that none of them knows where another crate keeps
//! its files:
//!
//! - [`program`]: the text of a test program of `tools/tests/programs` (the `hostrt check`
//!   suites, whose CHECK lines pin their output), by its path in that folder;
//! - [`conformance_dir`]: TFRT's own test programs in `shared/conformance`, outside the
//!   repository, or `None` (after saying so) where that folder is absent;
//! - [`scratch`]: one registered arena for verification scratch, shared by a test binary;
//! - [`sample_module`]: a small module that uses every feature a BEF file can store;
//! - [`rust_files`]: the sources under a folder, for tests that read them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hostrt_compiler::ast::{Attr, Func, Loc, Module, NamedAttr, Op, Region, ResultGroup, Type, ValueRef};
use hostrt_core::Allocator;

/// The workspace's root directory.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The text of test program `name` of `tools/tests/programs` (`executor/calls.mlir`).
/// Panics naming the file when it cannot be read: a test without its program cannot run.
///
/// ```
/// let calls = hostrt_testing::program("executor/calls.mlir");
/// assert!(calls.contains("func.func"));
/// ```
pub fn program(name: &str) -> String {
    let path = root().join("tools/tests/programs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("test program {}: {e}", path.display()))
}

/// The folder of TFRT's conformance programs `suite` (`tfrt`, `tfrt-tensor`) in
/// `shared/conformance`, next to the repository; `None` when it is absent, after printing
/// that the test is skipped (the programs are TFRT's, never copied into the repository).
pub fn conformance_dir(suite: &str) -> Option<PathBuf> {
    let dir = root().join("../shared/conformance").join(suite);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("skipping: conformance folder {} not found", dir.display());
        None
    }
}

/// One registered arena, shared by all tests of a binary, for the BEF reader's scratch
/// memory (an allocator slot per test would exhaust the table).
pub fn scratch() -> Allocator {
    static ALLOC: OnceLock<Allocator> = OnceLock::new();
    *ALLOC.get_or_init(|| hostrt_std::leaked_arena(1 << 20).expect("an arena in a free allocator slot").1)
}

/// Every `.rs` file under `dir`, recursively, sorted (for tests that read sources, such as
/// the layering checks).
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let p = e.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The type named `s`.
pub fn t(s: &str) -> Type {
    Type(s.to_string())
}

/// `"hand.mlir":line:3`.
pub fn loc(line: u32) -> Loc {
    Loc::FileLineCol { file: "hand.mlir".into(), line, col: 3 }
}

/// A use of value `%name`.
pub fn v(name: &str) -> ValueRef {
    ValueRef { name: name.into(), index: None, loc: Loc::Unknown }
}

/// Op `name` with one result per name of `results`, the operands `operands` and the
/// result types `result_types`, at line 2.
pub fn op(name: &str, results: &[&str], operands: &[&str], result_types: &[&str]) -> Op {
    Op {
        name: name.into(),
        results: results.iter().map(|r| ResultGroup { name: r.to_string(), count: 1 }).collect(),
        operands: operands.iter().map(|o| v(o)).collect(),
        operand_types: Vec::new(),
        result_types: result_types.iter().map(|r| t(r)).collect(),
        attrs: Vec::new(),
        regions: Vec::new(),
        loc: loc(2),
    }
}

/// A module that uses every feature a BEF file can store: module and function attributes,
/// constants, a region with block arguments, nested array attributes, file and name
/// locations, a native function declaration.
pub fn sample_module() -> Module {
    let mut c = op("tfrt.constant.i32", &["x"], &[], &["i32"]);
    c.attrs.push(NamedAttr { name: "value".into(), value: Attr::Int { value: 42, ty: t("i32") } });
    let add = op("tfrt.add.i32", &["y"], &["x", "x"], &["i32"]);
    let mut ret = op("tfrt.return", &[], &["y"], &[]);
    ret.operand_types = vec![t("i32")];
    let mut iff = op("tfrt.if", &["z"], &["c", "y"], &["i32"]);
    let body = |val: &str| Region {
        args: vec![("a".into(), t("i32"))],
        ops: vec![{
            let mut r = op("tfrt.return", &[], &[val], &[]);
            r.loc = Loc::Unknown;
            r
        }],
    };
    iff.regions = vec![body("a"), body("a")];
    iff.attrs.push(NamedAttr {
        name: "nested".into(),
        value: Attr::Array(vec![
            Attr::Int { value: 1, ty: t("i64") },
            Attr::Array(vec![Attr::String("s".into()), Attr::Symbol("main".into())]),
            Attr::Float { value: 0.5, ty: t("f32") },
        ]),
    });
    let mut cst = op("tfrt.constant.i1", &["c"], &[], &["i1"]);
    cst.attrs.push(NamedAttr { name: "value".into(), value: Attr::Bool(true) });
    let mut ret2 = op("tfrt.return", &[], &["z"], &[]);
    ret2.loc = Loc::Name("end".into());
    Module {
        attrs: vec![NamedAttr {
            name: "tfrt.cost_threshold".into(),
            value: Attr::Int { value: 1, ty: t("i64") },
        }],
        funcs: vec![
            Func {
                name: "main".into(),
                args: vec![],
                results: vec![t("i32")],
                attrs: vec![],
                body: Some(Region { args: vec![], ops: vec![c, add, ret] }),
                loc: loc(1),
            },
            Func {
                name: "branchy".into(),
                args: vec![("p".into(), t("i32"))],
                results: vec![t("i32")],
                attrs: vec![NamedAttr { name: "tfrt.sync".into(), value: Attr::Unit }],
                body: Some(Region {
                    args: vec![],
                    ops: vec![cst, op("tfrt.add.i32", &["y"], &["p", "p"], &["i32"]), iff, ret2],
                }),
                loc: loc(5),
            },
            Func {
                name: "native".into(),
                args: vec![("a".into(), t("!tfrt.chain"))],
                results: vec![],
                attrs: vec![NamedAttr { name: "tfrt.native".into(), value: Attr::Unit }],
                body: None,
                loc: loc(9),
            },
        ],
    }
}
