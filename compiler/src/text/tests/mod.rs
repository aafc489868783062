//! Unit tests of the text side: custom-form normalisation, locations, errors and printing.

mod dense;
mod errors;
mod forms;
mod locations;
mod printing;

use crate::CompileError;
use crate::ast::{Attr, Module, NamedAttr, Op, Type};
use crate::text::{PrintOptions, parse, print};

fn parse_ok(src: &str) -> Module {
    parse("t.mlir", src).unwrap_or_else(|e| panic!("unexpected error:\n{e}"))
}

fn parse_err(src: &str) -> CompileError {
    match parse("t.mlir", src) {
        Ok(m) => panic!("expected an error, parsed {m:#?}"),
        Err(e) => e,
    }
}

/// The ops of the first function of `src`.
fn ops(src: &str) -> Vec<Op> {
    let m = parse_ok(src);
    m.funcs.into_iter().next().and_then(|f| f.body).map(|b| b.ops).expect("a function with a body")
}

/// The first op of `body` (wrapped in a function taking `%a: i32, %b: i32, %c: i1, %ch: !tfrt.chain`).
fn op(body: &str) -> Op {
    let src =
        format!("func.func @f(%a: i32, %b: i32, %c: i1, %ch: !tfrt.chain) {{\n  {body}\n  tfrt.return\n}}\n");
    ops(&src).into_iter().next().expect("an op")
}

fn ty(s: &str) -> Type {
    Type(s.to_string())
}

fn tys(list: &[&str]) -> Vec<Type> {
    list.iter().map(|s| ty(s)).collect()
}

fn int(value: i64, t: &str) -> Attr {
    Attr::Int { value, ty: ty(t) }
}

fn attr<'o>(op: &'o Op, name: &str) -> &'o Attr {
    &op.attrs
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("no attribute {name} in {op:#?}"))
        .value
}

fn names(attrs: &[NamedAttr]) -> Vec<&str> {
    attrs.iter().map(|a| a.name.as_str()).collect()
}

/// Printing `src` and parsing it back gives the same text again (with and without locations).
fn assert_stable(src: &str) -> String {
    let first = parse_ok(src);
    for locations in [false, true] {
        let opts = PrintOptions { locations };
        let printed = print(&first, &opts);
        let second = parse("p.mlir", &printed).unwrap_or_else(|e| panic!("{e}\n{printed}"));
        assert_eq!(print(&second, &opts), printed, "not idempotent");
        if locations {
            assert_eq!(print(&second, &PrintOptions::default()), print(&first, &PrintOptions::default()));
        }
    }
    print(&first, &PrintOptions::default())
}
