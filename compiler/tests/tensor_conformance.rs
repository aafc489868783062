//! TFRT's tensor-layer programs compile, except `kernel_errors.mlir`,
//! which fails with the verifier error it expects; each round-trips text → BEF → text → BEF and
//! text → text → BEF byte-identically, and `tfrt_opt %s | tfrt_opt` prints the custom forms.
//! The programs are read from `../shared/conformance/tfrt-tensor` at run time; the tests skip
//! (with a message) when that folder is absent.

use std::path::Path;

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

/// The program expected to fail to compile (`tfrt_opt --verify-diagnostics`).
const KERNEL_ERRORS: &str = "mlir_tests/tensor/kernel_errors.mlir";

/// `(path relative to the folder, text)` of every `.mlir` program under the folder, or `None`.
fn programs() -> Option<Vec<(String, String)>> {
    let root = hostrt_testing::conformance_dir("tfrt-tensor")?;
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for path in std::fs::read_dir(&dir).expect("readable folder").filter_map(|e| e.ok().map(|e| e.path()))
        {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "mlir") {
                files.push(path);
            }
        }
    }
    files.sort();
    let relative =
        |p: &Path| p.strip_prefix(&root).expect("under the root").to_string_lossy().replace('\\', "/");
    let programs: Vec<_> =
        files.iter().map(|p| (relative(p), std::fs::read_to_string(p).expect("readable program"))).collect();
    assert_eq!(programs.len(), 7, "the seven programs of the suite");
    Some(programs)
}

fn compile(name: &str, text: &str) -> Vec<u8> {
    let module = parse(name, text).unwrap_or_else(|e| panic!("{e}"));
    write(&module, Some((name, text))).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn programs_compile_and_round_trip() {
    let Some(programs) = programs() else { return };
    for (name, text) in programs.iter().filter(|(n, _)| n != KERNEL_ERRORS) {
        let bef = compile(name, text);
        // Text → text (with locations) → BEF.
        let printed = print(&parse(name, text).expect("parses"), &PrintOptions { locations: true });
        assert!(compile(name, &printed) == bef, "{name}: text -> text -> BEF differs\n{printed}");
        // BEF → text → BEF.
        let aligned = AlignedBytes::new(&bef);
        let file = BefFile::load_unresolved(aligned.as_bytes(), hostrt_testing::scratch())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let dis = print(&decode(&file).expect("decodes"), &PrintOptions { locations: true });
        assert!(compile(name, &dis) == bef, "{name}: text -> BEF -> text -> BEF differs\n{dis}");
        // One spelling of the tensor type.
        assert!(!printed.contains("!t.tensor"), "{name}:\n{printed}");
    }
}

/// `tfrt_opt %s | tfrt_opt`: the printed program (without locations) compiles again and uses
/// the custom forms as `tfrt_opt` prints them.
#[test]
fn tensor_shape_prints_custom_forms() {
    let Some(programs) = programs() else { return };
    let (name, text) =
        programs.iter().find(|(n, _)| n.ends_with("tensor_shape.mlir")).expect("tensor_shape.mlir");
    let printed = print(&parse(name, text).expect("parses"), &PrintOptions::default());
    compile("printed.mlir", &printed);
    for form in [
        " = ts.build_shape [1, 57, 92]\n",
        " = ts.build_shape []\n",
        " = ts.build_shape [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]\n",
        " = ts.build_partial_shape [-1, 57, -1]\n",
        " = ts.build_unranked_partial_shape\n",
        " = ts.as_fixed_rank_shape.3 %",
        " = ts.print_fixed_rank_shape.3 %",
        " = ts.print_shape %",
        " = ts.equal_shape %",
        " = ts.to_shape %",
    ] {
        assert!(printed.contains(form), "missing {form:?} in\n{printed}");
    }
    assert!(!printed.contains("\"ts."), "generic ts ops print in custom form:\n{printed}");
}

/// `kernel_errors.mlir` fails with the error its `expected-error` names, on the line after it.
#[test]
fn kernel_errors_gives_its_expected_error() {
    let Some(programs) = programs() else { return };
    let (name, text) = programs.iter().find(|(n, _)| n == KERNEL_ERRORS).expect("kernel_errors.mlir");
    let (at, expected) = text
        .lines()
        .enumerate()
        .find_map(|(i, line)| {
            let (_, rest) = line.split_once("expected-error @+1 {{")?;
            Some((i as u32 + 2, rest.split_once("}}")?.0))
        })
        .expect("an expected-error annotation");
    let module = parse(name, text).unwrap_or_else(|e| panic!("{e}"));
    let e = write(&module, Some((name, text))).expect_err("a verifier error");
    assert_eq!(e.line, at, "{e}");
    assert!(e.message.contains(expected), "{e}");
    assert_eq!(e.message, "'ts.build_shape' op result #0 must be !ts.shape type, but got 'i64'");
}
