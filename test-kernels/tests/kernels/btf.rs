//! `btf.read_dense_tensor.*` on files written here: good records (in place and, when
//! misaligned, copied), every kind of damage, and writes that never reach the file.

use crate::harness::drive;

/// A BTF file of (dtype code, dims, data) records, each record's data padded to 8 bytes;
/// `shift` extra bytes before the first record misalign every record.
fn btf(records: &[(u8, &[u64], Vec<u8>)], shift: usize) -> Vec<u8> {
    let mut out = (records.len() as u64).to_le_bytes().to_vec();
    let mut body = vec![0u8; shift];
    let base = 8 * (1 + records.len());
    for (code, dims, data) in records {
        out.extend(((base + body.len()) as u64).to_le_bytes());
        body.extend((dims.len() as u64).to_le_bytes());
        body.extend([*code, 0, 0, 0, 0, 0, 0, 0]);
        dims.iter().for_each(|d| body.extend(d.to_le_bytes()));
        body.extend(data);
        body.resize(body.len().next_multiple_of(8), 0);
    }
    out.extend(body);
    out
}

fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A program reading `path` record `index` as `kernel` and printing it.
fn read(path: &std::path::Path, index: i32, kernel: &str) -> String {
    format!(
        r#"
func.func @f() {{
  %ch = tfrt.new.chain
  %path = "tfrt_test.get_string"() {{ value = "{}" }} : () -> !tfrt.string
  %i = tfrt.constant.i32 {index}
  %t = "{kernel}"(%path, %i) : (!tfrt.string, i32) -> !tfrt_tensor.tensor
  %ch1 = tfrt_dht.print_tensor %t, %ch
  tfrt.return
}}
"#,
        path.display()
    )
}

fn dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("hostrt-btf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn records_are_read_in_place_or_copied_when_misaligned() {
    let d = dir();
    for (name, shift) in [("aligned.btf", 0), ("misaligned.btf", 4)] {
        let path = d.join(name);
        let f = btf(&[(2, &[2, 2], i32s(&[1, 2, 3, 4])), (3, &[1], (-42i64).to_le_bytes().to_vec())], shift);
        std::fs::write(&path, &f).unwrap();
        let o = drive(&read(&path, 0, "btf.read_dense_tensor.i32.2"));
        assert_eq!(
            o.section("f"),
            ["DenseHostTensor dtype = i32, shape = [2, 2], values = [1, 2, 3, 4]"],
            "{name}"
        );
        // With the shift, the i64 data sits at an address 4 mod 8: it is copied.
        let o = drive(&read(&path, 1, "btf.read_dense_tensor.i64.1"));
        assert_eq!(o.section("f"), ["DenseHostTensor dtype = i64, shape = [1], values = [-42]"], "{name}");
    }
}

#[test]
fn writes_to_a_read_tensor_stay_in_memory() {
    let path = dir().join("cow.btf");
    let f = btf(&[(2, &[3], i32s(&[7, 8, 9]))], 0);
    std::fs::write(&path, &f).unwrap();
    let o = drive(&format!(
        r#"
func.func @f() {{
  %ch = tfrt.new.chain
  %path = "tfrt_test.get_string"() {{ value = "{}" }} : () -> !tfrt.string
  %i = tfrt.constant.i32 0
  %t = "btf.read_dense_tensor.i32.1"(%path, %i) : (!tfrt.string, i32) -> !tfrt_tensor.tensor
  %ch1 = "tfrt_dht.fill_tensor_with_constant.i32"(%t, %ch) {{ value = 5 : i32 }} : (!tfrt_tensor.tensor, !tfrt.chain) -> !tfrt.chain
  %ch2 = tfrt_dht.print_tensor %t, %ch1
  tfrt.return
}}
"#,
        path.display()
    ));
    assert_eq!(o.section("f"), ["DenseHostTensor dtype = i32, shape = [3], values = [5, 5, 5]"]);
    assert_eq!(std::fs::read(&path).unwrap(), f, "the file is untouched (private mapping)");
}

#[test]
fn damaged_files_are_errors_at_the_kernel() {
    let d = dir();
    let good = btf(&[(2, &[2, 2], i32s(&[1, 2, 3, 4]))], 0);
    let cases: [(&str, Vec<u8>, i32, &str, String); 6] = [
        (
            "empty.btf",
            vec![],
            0,
            "btf.read_dense_tensor.i32.2",
            "failed to read tensor num_tensors from path {}".into(),
        ),
        (
            "index.btf",
            good.clone(),
            1,
            "btf.read_dense_tensor.i32.2",
            "invalid tensor index 1 to read tensor from path {} which contains 1 tensors".into(),
        ),
        (
            "dtype.btf",
            good.clone(),
            0,
            "btf.read_dense_tensor.f32.2",
            "unexpected tensor dtype i32. Expected dtype is f32".into(),
        ),
        (
            "rank.btf",
            good.clone(),
            0,
            "btf.read_dense_tensor.i32.1",
            "unexpected tensor rank 2. Expected rank is 1".into(),
        ),
        (
            "truncated.btf",
            good[..good.len() - 4].to_vec(),
            0,
            "btf.read_dense_tensor.i32.2",
            "failed to read tensor data from stream at offset 16".into(),
        ),
        (
            "missing.btf",
            vec![],
            0,
            "btf.read_dense_tensor.i32.2",
            "failed to open file {} for reading".into(),
        ),
    ];
    for (name, bytes, index, kernel, message) in cases {
        let path = d.join(name);
        if name != "missing.btf" {
            std::fs::write(&path, &bytes).unwrap();
        }
        let o = drive(&read(&path, index, kernel));
        let want =
            format!("t.mlir:6:8: runtime error: {}", message.replace("{}", &path.display().to_string()));
        assert!(o.lines().contains(&want.as_str()), "{name}: want {want}\n{}", o.output);
        assert!(!o.output.contains("DenseHostTensor"), "{name}");
    }
}
