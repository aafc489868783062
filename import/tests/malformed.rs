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

#[test]
fn int8_log_softmax_needs_tflm_output_quantization() {
    let m = model("log_softmax_i8.tflite");
    hostrt_import::tflite(&m).expect("the model as converted imports");
    // The output's zero point 127 (int64) and scale 16/256 (float32): the only such bytes.
    let at = |pattern: &[u8]| {
        let hits: Vec<usize> =
            m.windows(pattern.len()).enumerate().filter(|(_, w)| *w == pattern).map(|(i, _)| i).collect();
        assert_eq!(hits.len(), 1, "{pattern:?} at {hits:?}");
        hits[0]
    };
    let mut zero_point = m.clone();
    zero_point[at(&127i64.to_le_bytes())] = 126;
    let mut scale = m.clone();
    let i = at(&0.0625f32.to_le_bytes());
    scale[i..i + 4].copy_from_slice(&0.125f32.to_le_bytes());
    for (bytes, has) in [(zero_point, "has 0.0625 and 126"), (scale, "has 0.125 and 127")] {
        let e = error(&bytes);
        assert!(e.contains("int8 LOG_SOFTMAX output must have scale 16/256 and zero point 127"), "{e}");
        assert!(e.contains(has), "{e}");
    }
}
