//! Shared test fixtures: a hand-built module exercising every BEF feature.
#![allow(dead_code)]

use hostrt_compiler::ast::*;
use hostrt_core::Allocator;

/// One registered arena, shared by all tests of a binary, for the reader's scratch memory.
pub fn scratch() -> Allocator {
    static ALLOC: std::sync::OnceLock<Allocator> = std::sync::OnceLock::new();
    *ALLOC.get_or_init(|| hostrt_std::leaked_arena(1 << 20).unwrap().1)
}

pub fn t(s: &str) -> Type {
    Type(s.to_string())
}

pub fn loc(line: u32) -> Loc {
    Loc::FileLineCol { file: "hand.mlir".into(), line, col: 3 }
}

pub fn v(name: &str) -> ValueRef {
    ValueRef { name: name.into(), index: None, loc: Loc::Unknown }
}

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

pub fn sample() -> Module {
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
