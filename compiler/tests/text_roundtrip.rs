//! Every conformance program parses, prints, and parses back to the same module; printing is
//! idempotent. The programs are read from `shared/conformance/tfrt` at run time; the tests
//! skip (with a message) when that folder is absent.

use std::collections::HashMap;

use hostrt_compiler::ast::{Attr, Func, Loc, Module, NamedAttr, Op, Region, ResultGroup, ValueRef};
use hostrt_compiler::text::{PrintOptions, parse, print};

/// `(file name, text)` of every `.mlir` conformance program, or `None` (after saying so).
fn programs() -> Option<Vec<(String, String)>> {
    let dir = hostrt_testing::conformance_dir("tfrt")?;
    let entries = std::fs::read_dir(&dir).expect("readable conformance folder");
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    files.sort();
    let programs: Vec<_> = files
        .iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            (name, std::fs::read_to_string(p).expect("readable conformance program"))
        })
        .collect();
    assert!(!programs.is_empty(), "no .mlir files in {}", dir.display());
    Some(programs)
}

/// Renames every value canonically (definition order, one name per result), sorts attribute
/// dictionaries, drops use locations, and op/function locations unless `keep_locs`: what a
/// round trip must preserve.
struct Canon {
    keep_locs: bool,
    next: usize,
    scopes: Vec<HashMap<String, String>>,
}

impl Canon {
    fn fresh(&mut self, name: &str) -> String {
        let new = format!("v{}", self.next);
        self.next += 1;
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(name.to_string(), new.clone());
        }
        new
    }

    fn use_(&self, v: &ValueRef) -> ValueRef {
        for scope in self.scopes.iter().rev() {
            if let Some(i) = v.index
                && let Some(n) = scope.get(&format!("{}#{i}", v.name))
            {
                return ValueRef { name: n.clone(), index: None, loc: Loc::Unknown };
            }
            if let Some(n) = scope.get(&v.name) {
                return ValueRef { name: n.clone(), index: v.index, loc: Loc::Unknown };
            }
        }
        panic!("use of undefined value %{}", v.name);
    }

    fn loc(&self, loc: &Loc) -> Loc {
        if self.keep_locs { loc.clone() } else { Loc::Unknown }
    }

    fn region(&mut self, r: &Region) -> Region {
        self.scopes.push(HashMap::new());
        let args = r.args.iter().map(|(n, t)| (self.fresh(n), t.clone())).collect();
        let ops = r.ops.iter().map(|op| self.op(op)).collect();
        self.scopes.pop();
        Region { args, ops }
    }

    fn op(&mut self, op: &Op) -> Op {
        let operands = op.operands.iter().map(|v| self.use_(v)).collect();
        // One canonical name per result: `%a, %b = ...` and `%p:2 = ...` (which the printer
        // makes of it) are the same op.
        let mut results = Vec::new();
        for g in &op.results {
            let first = self.fresh(&g.name);
            if let Some(scope) = self.scopes.last_mut() {
                scope.insert(format!("{}#0", g.name), first.clone());
            }
            results.push(ResultGroup { name: first, count: 1 });
            for j in 1..g.count {
                results.push(ResultGroup { name: self.fresh(&format!("{}#{j}", g.name)), count: 1 });
            }
        }
        Op {
            name: op.name.clone(),
            results,
            operands,
            operand_types: op.operand_types.clone(),
            result_types: op.result_types.clone(),
            attrs: sorted(&op.attrs),
            regions: op.regions.iter().map(|r| self.region(r)).collect(),
            loc: self.loc(&op.loc),
        }
    }

    fn func(&mut self, f: &Func) -> Func {
        self.next = 0;
        self.scopes = vec![HashMap::new()];
        let args: Vec<_> = f.args.iter().map(|(n, t)| (self.fresh(n), t.clone())).collect();
        let body = f.body.as_ref().map(|b| {
            assert_eq!(b.args, f.args, "function body arguments are the function arguments");
            Region { args: args.clone(), ops: b.ops.iter().map(|op| self.op(op)).collect() }
        });
        Func {
            name: f.name.clone(),
            args,
            results: f.results.clone(),
            attrs: sorted(&f.attrs),
            body,
            loc: self.loc(&f.loc),
        }
    }
}

fn sorted(attrs: &[NamedAttr]) -> Vec<NamedAttr> {
    fn value(a: &Attr) -> Attr {
        match a {
            Attr::Dict(d) => Attr::Dict(sorted(d)),
            Attr::Array(items) => Attr::Array(items.iter().map(value).collect()),
            other => other.clone(),
        }
    }
    let mut out: Vec<NamedAttr> =
        attrs.iter().map(|a| NamedAttr { name: a.name.clone(), value: value(&a.value) }).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn canon(m: &Module, keep_locs: bool) -> Module {
    let mut c = Canon { keep_locs, next: 0, scopes: Vec::new() };
    Module { attrs: sorted(&m.attrs), funcs: m.funcs.iter().map(|f| c.func(f)).collect() }
}

fn check_round_trip(locations: bool) {
    let Some(programs) = programs() else { return };
    let opts = PrintOptions { locations };
    for (name, text) in &programs {
        let first = parse(name, text).unwrap_or_else(|e| panic!("{name} does not parse:\n{e}"));
        let printed = print(&first, &opts);
        let second = parse("printed.mlir", &printed)
            .unwrap_or_else(|e| panic!("printed {name} does not parse:\n{e}\n{printed}"));
        let reprinted = print(&second, &opts);
        assert_eq!(printed, reprinted, "printing {name} is not idempotent");
        assert_eq!(canon(&first, locations), canon(&second, locations), "{name} changed in a round trip");
    }
}

#[test]
fn every_program_parses() {
    let Some(programs) = programs() else { return };
    for (name, text) in &programs {
        let module = parse(name, text).unwrap_or_else(|e| panic!("{name} does not parse:\n{e}"));
        assert!(!module.funcs.is_empty(), "{name} has no functions");
        for f in &module.funcs {
            assert!(matches!(&f.loc, Loc::FileLineCol { file, .. } if file == name));
        }
    }
}

#[test]
fn round_trip_without_locations() {
    check_round_trip(false);
}

#[test]
fn round_trip_with_locations() {
    check_round_trip(true);
}

#[test]
fn printed_programs_follow_tfrt_opt_conventions() {
    let Some(programs) = programs() else { return };
    for (name, text) in &programs {
        let printed = print(&parse(name, text).expect("parses"), &PrintOptions::default());
        assert!(printed.starts_with("module {\n  func.func @"), "{name}:\n{printed}");
        assert!(printed.ends_with("}\n"));
        assert!(!printed.contains("loc("), "no locations unless asked");
        for line in printed.lines() {
            let indent = line.len() - line.trim_start().len();
            assert_eq!(indent % 2, 0, "{name}: odd indentation in {line:?}");
        }
    }
}
