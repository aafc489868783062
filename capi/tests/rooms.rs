//! The two rooms' layering rule (`src/tf/README.md`, `src/embed/README.md`): TensorFlow's C
//! API never imports hostrt's embedding API, which is built on top of it.

use std::path::Path;

use hostrt_testing::rust_files;

/// The lines of `text` outside comments that name the embedding room.
fn embed_uses(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .filter(|code| code.contains("crate::embed") || code.contains("super::embed"))
        .map(|code| code.trim().to_string())
        .collect()
}

#[test]
fn the_tensorflow_room_never_imports_the_embedding_room() {
    let tf = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tf");
    let mut bad = Vec::new();
    for f in rust_files(&tf) {
        for line in embed_uses(&std::fs::read_to_string(&f).unwrap()) {
            bad.push(format!("{}: {line}", f.strip_prefix(&tf).unwrap().display()));
        }
    }
    assert!(bad.is_empty(), "src/tf uses src/embed:\n{}", bad.join("\n"));
}

#[test]
fn a_use_of_the_embedding_room_is_found() {
    assert_eq!(
        embed_uses("use crate::embed::status;\n// crate::embed in a comment"),
        ["use crate::embed::status;"]
    );
}
