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
            Loc::Name("n1".into()),
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
