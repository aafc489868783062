//! Default and explicit locations, location aliases.

use super::*;
use crate::ast::Loc;

fn flc(line: u32, col: u32) -> Loc {
    Loc::FileLineCol { file: "t.mlir".into(), line, col }
}

#[test]
fn default_locations_are_the_op_name_token() {
    let src = "func.func @f(%a: i32) {\n  %x = tfrt.add.i32 %a, %a\n    \"t.g\"(%x) : (i32) -> ()\n  tfrt.return\n}";
    let m = parse_ok(src);
    let f = &m.funcs[0];
    assert_eq!(f.loc, flc(1, 1));
    let ops = &f.body.as_ref().expect("body").ops;
    assert_eq!(ops[0].loc, flc(2, 8));
    assert_eq!(ops[0].operands[1].loc, flc(2, 25));
    assert_eq!(ops[1].loc, flc(3, 5), "generic op: the opening quote");
    assert_eq!(ops[2].loc, flc(4, 3));
}

#[test]
fn explicit_locations() {
    let src = r#"func.func @f() {
  %a = tfrt.new.chain loc("other.mlir":7:9)
  %b = tfrt.new.chain
      loc("scope/name")
  %c = tfrt.new.chain loc(unknown)
  %d = tfrt.new.chain loc(fused[unknown, "n1", "m.py":3:4])
  %e = tfrt.new.chain loc(fused<"meta">["m.py":5:6])
  %f = tfrt.new.chain loc(fused[])
  %g = tfrt.new.chain loc(callsite("callee" at "caller.py":1:2))
  %h = tfrt.new.chain loc("name"("inner.py":1:1))
  tfrt.repeat.i32 %a {
    tfrt.return
  } loc("region.mlir":1:2)
  tfrt.return loc(callsite(callsite(unknown at "x") at "y"))
} loc("func.mlir":3:3)
"#;
    let m = parse_ok(src);
    let f = &m.funcs[0];
    assert_eq!(f.loc, Loc::FileLineCol { file: "func.mlir".into(), line: 3, col: 3 });
    let locs: Vec<Loc> = f.body.as_ref().expect("body").ops.iter().map(|o| o.loc.clone()).collect();
    assert_eq!(
        locs,
        [
            Loc::FileLineCol { file: "other.mlir".into(), line: 7, col: 9 },
            Loc::Name("scope/name".into()),
            Loc::Unknown,
            Loc::Fused { name: "n1".into(), file: "m.py".into(), line: 3, col: 4 },
            Loc::FileLineCol { file: "m.py".into(), line: 5, col: 6 },
            Loc::Unknown,
            Loc::Name("callee".into()),
            Loc::Name("name".into()),
            Loc::FileLineCol { file: "region.mlir".into(), line: 1, col: 2 },
            Loc::Unknown,
        ]
    );
}

#[test]
fn aliases_before_and_after_use() {
    let src = r#"#early = loc("early.mlir":1:2)
module {
  func.func @f() {
    %a = tfrt.new.chain loc(#early)
    %b = tfrt.new.chain loc(#late)
    %c = tfrt.new.chain loc(fused[#chained])
    tfrt.return loc(#late)
  }
  #inside = loc(unknown)
}
#late = loc("late")
#chained = loc(#early)
"#;
    let m = parse_ok(src);
    let locs: Vec<Loc> = m.funcs[0].body.as_ref().expect("body").ops.iter().map(|o| o.loc.clone()).collect();
    let early = Loc::FileLineCol { file: "early.mlir".into(), line: 1, col: 2 };
    assert_eq!(locs, [early.clone(), Loc::Name("late".into()), early, Loc::Name("late".into())]);
}

#[test]
fn alias_errors() {
    let e = parse_err("func.func @f() {\n  tfrt.return loc(#nowhere)\n}");
    assert_eq!(e.message, "undefined location alias '#nowhere'");
    assert_eq!((e.line, e.col), (2, 19));

    let e = parse_err("#a = loc(#b)\n#b = loc(fused[#a])\nfunc.func @f() {\n  tfrt.return loc(#a)\n}");
    assert!(e.message.contains("defined in terms of itself"), "{e}");

    let e = parse_err("#a = loc(unknown)\n#a = loc(\"x\")\n");
    assert_eq!((e.line, e.col, e.message.as_str()), (2, 1, "redefinition of location alias '#a'"));

    let e = parse_err("#a = 3\n");
    assert!(e.message.contains("only location aliases are supported"), "{e}");
    assert_eq!((e.line, e.col), (1, 6));
}

#[test]
fn bad_locations() {
    let e = parse_err("func.func @f() {\n  tfrt.return loc(\"f\":1)\n}");
    assert_eq!((e.line, e.col), (2, 24));
    assert!(e.message.starts_with("expected ':' after the line number"), "{e}");
    let e = parse_err("func.func @f() {\n  tfrt.return loc(\"f\":1:99999999999)\n}");
    assert!(e.message.contains("out of range"), "{e}");
    let e = parse_err("func.func @f() {\n  tfrt.return loc(somewhere)\n}");
    assert!(e.message.starts_with("expected a location, found 'somewhere'"), "{e}");
}

/// The location of the op in `f`'s body written with `loc(LOC)`, with alias definitions
/// `aliases` before the function.
fn loc_of(aliases: &str, loc: &str) -> Loc {
    let src = format!("{aliases}\nfunc.func @f() {{\n  tfrt.return loc({loc})\n}}\n");
    parse_ok(&src).funcs[0].body.as_ref().expect("body").ops[0].loc.clone()
}

fn fused(name: &str, file: &str, line: u32, col: u32) -> Loc {
    Loc::Fused { name: name.into(), file: file.into(), line, col }
}

fn at(file: &str, line: u32, col: u32) -> Loc {
    Loc::FileLineCol { file: file.into(), line, col }
}

#[test]
fn fused_locations_join_the_names_of_their_name_locations() {
    // The direct name locations' names, joined in order, name the fused location, as
    // TFRT's BEF debug information does; file locations add nothing.
    assert_eq!(loc_of("", r#"fused["foo", "bar"]"#), Loc::Name("foobar".into()));
    assert_eq!(loc_of("", r#"fused["foo.py":42:314, "bar"]"#), fused("bar", "foo.py", 42, 314));
    assert_eq!(loc_of("", r#"fused["a", "b", "c"]"#), Loc::Name("abc".into()));
    assert_eq!(loc_of("", r#"fused[unknown, "a"("x.py":1:1), "b"]"#), Loc::Name("ab".into()));
    // A repeated location counts once, as MLIR keeps one of equal children.
    assert_eq!(loc_of("", r#"fused["a", "b", "a"]"#), Loc::Name("ab".into()));
    // File locations never give the name, wherever they are; the first one is kept as the
    // position.
    assert_eq!(loc_of("", r#"fused["f.py":1:2, "n", "g.py":3:4, "m"]"#), fused("nm", "f.py", 1, 2));
    assert_eq!(loc_of("", r#"fused<"meta">["f.py":1:2, "g.py":3:4]"#), at("f.py", 1, 2));
    // A call site is not a name location: it neither names a fused location nor gives it a
    // position (alone and without metadata, a fused location is just its one child).
    assert_eq!(loc_of("", r#"fused[callsite("c" at "d.py":1:1), "f.py":2:2]"#), at("f.py", 2, 2));
    assert_eq!(loc_of("", r#"fused<"m">[callsite("c" at "d.py":1:1)]"#), Loc::Unknown);
    assert_eq!(loc_of("", r#"fused[callsite("c" at "d.py":1:1)]"#), Loc::Name("c".into()));
    let twice = r#"fused[callsite("c" at "d.py":1:1), unknown, callsite("c" at "d.py":1:1)]"#;
    assert_eq!(loc_of("", twice), Loc::Name("c".into()), "one location, repeated");
    // Empty, or only unknown locations.
    assert_eq!(loc_of("", "fused[]"), Loc::Unknown);
    assert_eq!(loc_of("", r#"fused<"m">[unknown, unknown]"#), Loc::Unknown);
    // Aliases count as what they stand for.
    assert_eq!(loc_of("#n = loc(\"aliased\")", r#"fused["f.py":1:1, #n]"#), fused("aliased", "f.py", 1, 1));
    let alias = "#inner = loc(fused[\"x.py\":5:5, \"inner\"])";
    assert_eq!(loc_of(alias, r#"fused[#inner, "outer"]"#), fused("innerouter", "x.py", 5, 5));
}

#[test]
fn nested_fused_locations_flatten_as_in_mlir() {
    // Nested fused locations with the same metadata (or none) are one fused location.
    assert_eq!(loc_of("", r#"fused[fused["x.py":1:1, "n"], "m"]"#), fused("nm", "x.py", 1, 1));
    assert_eq!(loc_of("", r#"fused<"m">[fused<"m">["n"], "x.py":1:1]"#), fused("n", "x.py", 1, 1));
    // Different metadata: the inner one is a child of its own kind, neither name nor file.
    assert_eq!(loc_of("", r#"fused<"m">[fused<"k">["n", "y.py":2:2], "x.py":1:1]"#), at("x.py", 1, 1));
    assert_eq!(loc_of("", r#"fused<"m">[fused<"k">["n"]]"#), Loc::Unknown);
}

#[test]
fn fused_locations_print_and_parse_back() {
    let src = r#"func.func @f() {
  %a = tfrt.new.chain loc(fused["x.py":1:2, "name \"q\""])
  tfrt.return loc(fused<"m">["n"])
}
"#;
    let m = parse_ok(src);
    let printed = print(&m, &PrintOptions { locations: true });
    assert!(printed.contains(r#"%0 = tfrt.new.chain loc(fused["name \"q\"", "x.py":1:2])"#), "{printed}");
    assert!(printed.contains(r#"tfrt.return loc("n")"#), "{printed}");
    let back = parse_ok(&printed);
    let ops = |m: &Module| {
        m.funcs[0].body.as_ref().expect("body").ops.iter().map(|o| o.loc.clone()).collect::<Vec<_>>()
    };
    assert_eq!(ops(&back), ops(&m));
    assert_eq!(ops(&m), [fused("name \"q\"", "x.py", 1, 2), Loc::Name("n".into())]);
    assert_stable(src);
}
