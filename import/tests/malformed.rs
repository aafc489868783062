//! Malformed models: clear errors, never a panic. Every truncation and every byte flip of a
//! small model either imports (a flip in weights or names can be harmless) or fails with an
//! error; whole-file cases check the messages.

use std::path::Path;

fn model(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/models").join(name)).expect("model")
}

fn error(bytes: &[u8]) -> String {
    match hostrt_import::tflite(bytes) {
        Ok(_) => panic!("imported"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn whole_file_cases_name_the_problem() {
    assert!(error(b"").contains("too short"));
    assert!(error(b"\0\0\0\0NOPE\0\0\0\0").contains("TFL3"));
    let m = model("ds_cnn_i8.tflite");
    assert!(error(&m[..m.len() / 2]).contains("malformed FlatBuffer"), "{}", error(&m[..m.len() / 2]));
}

#[test]
fn every_truncation_fails_cleanly() {
    let m = model("softmax_i8.tflite");
    for n in 0..m.len() {
        let _ = hostrt_import::tflite(&m[..n]);
    }
}

#[test]
fn every_byte_flip_imports_or_fails_cleanly() {
    let m = model("conv_same_relu_i8.tflite");
    let mut imported = 0;
    for i in 0..m.len() {
        for x in [0xff, 0x01, 0x80] {
            let mut b = m.clone();
            b[i] ^= x;
            if let Ok(p) = hostrt_import::tflite(&b) {
                p.to_bef().expect("an imported model writes BEF");
                imported += 1;
            }
        }
    }
    assert!(imported > 0, "flips in weights leave a valid model");
}
