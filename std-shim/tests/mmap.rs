//! Mapping BEF files: verified in place; truncated, grown, empty and corrupt files give
//! clear errors.

use std::sync::OnceLock;

use hostrt_compiler::bef::write;
use hostrt_core::Allocator;
use hostrt_std::{MapError, MappedBef, SystemAllocator};

fn scratch() -> Allocator {
    static A: OnceLock<Allocator> = OnceLock::new();
    static SYSTEM: SystemAllocator = SystemAllocator::new();
    *A.get_or_init(|| Allocator::register(&SYSTEM).unwrap())
}

fn bef() -> Vec<u8> {
    let text = "func.func @main() -> i32 {\n  %x = tfrt.constant.i32 7\n  tfrt.return %x : i32\n}\n";
    write(&hostrt_compiler::text::parse("m.mlir", text).unwrap(), None).unwrap()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("hostrt-mmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn maps_and_verifies_in_place() {
    let p = tmp("ok.bef");
    std::fs::write(&p, bef()).unwrap();
    let m = MappedBef::open(&p).unwrap();
    let file = m.verify(scratch()).unwrap();
    assert_eq!(file.function_by_name("main").unwrap().kernels().len(), 1);
    assert_eq!(file.bytes().as_ptr(), m.bytes().as_ptr(), "no copy");
}

#[test]
fn size_changes_and_bad_files_are_clear_errors() {
    let p = tmp("grow.bef");
    std::fs::write(&p, bef()).unwrap();
    let m = MappedBef::open(&p).unwrap();
    let mut longer = bef();
    longer.extend_from_slice(&[0; 64]);
    std::fs::write(&p, &longer).unwrap();
    let e = m.verify(scratch()).unwrap_err();
    assert!(matches!(e, MapError::Changed(..)), "{e}");
    assert!(e.to_string().contains("file changed size after it was mapped"), "{e}");

    let empty = tmp("empty.bef");
    std::fs::write(&empty, b"").unwrap();
    assert!(matches!(MappedBef::open(&empty), Err(MapError::Empty(_))));

    let corrupt = tmp("corrupt.bef");
    let mut b = bef();
    let mid = b.len() / 2;
    b[mid] ^= 0x40;
    std::fs::write(&corrupt, &b).unwrap();
    let e = MappedBef::open(&corrupt).unwrap().verify(scratch()).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");

    let missing = MappedBef::open(tmp("missing.bef")).unwrap_err();
    assert!(missing.to_string().contains("missing.bef"), "{missing}");
}
