//! Every TFRT conformance program compiles, loads, and round-trips text → BEF → text → BEF
//! byte-identically. The programs are read from `../shared/conformance/tfrt` at run time; the
//! test skips (with a message) when that folder is absent.

use std::path::PathBuf;

use hostrt_compiler::bef::{decode, write};
use hostrt_compiler::text::{PrintOptions, parse, print};
use hostrt_core::bef::BefFile;
use hostrt_std::AlignedBytes;

fn programs() -> Option<Vec<PathBuf>> {
    let dir = hostrt_testing::conformance_dir("tfrt")?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mlir"))
        .collect();
    files.sort();
    Some(files)
}

#[test]
fn conformance_programs_round_trip_byte_identical() {
    let Some(files) = programs() else { return };
    assert!(!files.is_empty());
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let module = parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
        let bef = write(&module, Some((&name, &text))).unwrap_or_else(|e| panic!("{e}"));
        let aligned = AlignedBytes::new(&bef);
        let file = BefFile::load_unresolved(aligned.as_bytes(), hostrt_testing::scratch())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let dis = print(&decode(&file).unwrap(), &PrintOptions { locations: true });
        let again =
            write(&parse(&name, &dis).unwrap_or_else(|e| panic!("{name}: disassembly: {e}\n{dis}")), None)
                .unwrap_or_else(|e| panic!("{name}: disassembly: {e}"));
        assert!(bef == again, "{name}: text -> BEF -> text -> BEF differs");
        // Compiling is deterministic.
        assert_eq!(
            bef,
            write(&parse(&name, &text).unwrap(), None).unwrap(),
            "{name}: nondeterministic output"
        );
    }
}
