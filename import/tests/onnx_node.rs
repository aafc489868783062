//! ONNX's backend node tests run through the importer and the `nn.*` kernels.
//!
//! The cases are generated from the installed `onnx` package by
//! `python3 scripts/onnx_node_tests.py target/onnx-node` (scripts/test.sh does it) and read
//! from `HOSTRT_ONNX_NODE_TESTS` or `target/onnx-node`; without them this test says so and
//! passes. A case is *supported* when every operator of its model is one the importer
//! translates; every supported case must pass (outputs within the suite's rtol/atol, integers
//! exactly) unless `onnx_node_failures.txt` lists it with why, and every listed case must
//! still fail, with an error that contains the listed message. The table of `passed / supported / total` per operator is printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hostrt_core::{Allocator, HostContext, SingleThreadedWorkQueue};
use hostrt_import::ImportOptions;
use hostrt_import::npy::{self, NpyTensor};
use hostrt_import::onnx::convert::SUPPORTED;
use hostrt_import::onnx::model::{Model, ReadOptions, Tensor};
use hostrt_import::tflite::ops::ElemType;

fn cases_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("HOSTRT_ONNX_NODE_TESTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/onnx-node"));
    dir.join("onnx-version").exists().then_some(dir)
}

/// The listed expected failures: case name → why.
fn expected_failures() -> BTreeMap<String, String> {
    include_str!("onnx_node_failures.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once(':').map(|(n, why)| (n.trim().to_string(), why.trim().to_string())))
        .collect()
}

fn read_npy(path: &Path) -> Result<NpyTensor, String> {
    npy::read(&std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// A `.npy` tensor as a constant to bind.
fn onnx_tensor(t: &NpyTensor) -> Result<Tensor, String> {
    let elem = match t.dtype {
        "f32" => ElemType::F32,
        "i8" => ElemType::I8,
        "ui8" => ElemType::U8,
        "i32" => ElemType::I32,
        "i64" => ElemType::I64,
        "bool" => ElemType::Bool,
        other => return Err(format!("cannot bind a {other} input")),
    };
    Ok(Tensor::new(elem, t.shape.clone(), t.data.clone()))
}

fn numbered(dir: &Path, kind: &str) -> Vec<PathBuf> {
    (0..).map(|i| dir.join(format!("{kind}_{i}.npy"))).take_while(|p| p.exists()).collect()
}

/// Runs one case: how many inputs were fed at run time (the rest bound at import), or
/// `Err(why)` when it fails.
fn run_case(dir: &Path, host: &HostContext<'_>, alloc: Allocator) -> Result<usize, String> {
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let (rtol, atol) = (meta["rtol"].as_f64().unwrap_or(1e-3), meta["atol"].as_f64().unwrap_or(1e-7));
    let bytes = std::fs::read(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let data: Vec<NpyTensor> =
        numbered(dir, "input").iter().map(|p| read_npy(p)).collect::<Result<_, _>>()?;
    // Every input fed at run time; else the first fed and the others (filters, shapes,
    // axes the suite passes as inputs) bound at import, where hostrt needs them; else all
    // bound (`Range` of three scalars).
    let declared = Model::read(&bytes, &ReadOptions::default()).map_err(|e| format!("import: {e}"))?.inputs;
    let (program, fed) = match hostrt_import::Program::from_onnx(&bytes, host) {
        Ok(p) => (p, data.len()),
        Err(first) => {
            let mut last = String::new();
            let mut loaded = None;
            for fed in [1, 0] {
                let bound: Vec<(String, Tensor)> = declared
                    .iter()
                    .zip(&data)
                    .skip(fed)
                    .map(|(i, d)| Ok((i.name.clone(), onnx_tensor(d)?)))
                    .collect::<Result<_, String>>()?;
                let read = ReadOptions { bound: &bound, ..ReadOptions::default() };
                match hostrt_import::onnx_with(&bytes, &read, ImportOptions::default()) {
                    Ok(imported) => {
                        let p =
                            hostrt_import::Program::load(imported, host).map_err(|e| format!("load: {e}"))?;
                        loaded = Some((p, fed));
                        break;
                    }
                    Err(e) => last = e.to_string(),
                }
            }
            loaded.ok_or_else(|| format!("import: {first} (with inputs bound at import: {last})"))?
        }
    };
    // The suite gives some scalars as [1]: fed under the model's declared shape.
    let mut inputs = Vec::new();
    for (d, i) in data.iter().zip(&declared).take(fed) {
        let mut d = d.clone();
        if d.shape.iter().product::<usize>() == i.dims.iter().product::<usize>() {
            d.shape = i.dims.clone();
        }
        inputs.push(npy::to_tensor(alloc, &d).map_err(|e| format!("input: {e}"))?);
    }
    let outputs = program.call(host, inputs).map_err(|e| format!("run: {e}"))?;
    let expected = numbered(dir, "output");
    if outputs.len() != expected.len() {
        return Err(format!("{} outputs, expected {}", outputs.len(), expected.len()));
    }
    for (i, (got, want)) in outputs.iter().zip(&expected).enumerate() {
        let got = npy::from_tensor(got)?;
        let want = read_npy(want)?;
        // A scalar expected as [1] (or the reverse) compares as the suite's numpy does.
        let one = |s: &[usize]| s.len() <= 1 && s.iter().product::<usize>() == 1;
        if got.dtype != want.dtype || (got.shape != want.shape && !(one(&got.shape) && one(&want.shape))) {
            return Err(format!(
                "output {i} is {} {:?}, expected {} {:?}",
                got.dtype, got.shape, want.dtype, want.shape
            ));
        }
        if got.dtype == "f32" {
            let f =
                |d: &[u8]| d.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect::<Vec<_>>();
            for (k, (a, b)) in f(&got.data).iter().zip(f(&want.data)).enumerate() {
                let close = (a - b).abs() as f64 <= atol + rtol * (b.abs() as f64)
                    || (a.is_nan() && b.is_nan())
                    || a == &b;
                if !close {
                    return Err(format!("output {i}[{k}] is {a}, expected {b}"));
                }
            }
        } else if got.data != want.data {
            return Err(format!("output {i} differs"));
        }
    }
    Ok(fed)
}

#[test]
fn onnx_backend_node_tests() {
    let Some(root) = cases_dir() else {
        assert!(
            std::env::var_os("HOSTRT_REQUIRE_ONNX_NODE_TESTS").is_none(),
            "HOSTRT_REQUIRE_ONNX_NODE_TESTS is set but no node tests were generated"
        );
        eprintln!(
            "skipped: no ONNX node tests (run `python3 scripts/onnx_node_tests.py target/onnx-node` \
             with the onnx package installed)"
        );
        return;
    };
    let version = std::fs::read_to_string(root.join("onnx-version")).unwrap_or_default();
    let alloc =
        Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new()))).expect("allocator");
    let queue = SingleThreadedWorkQueue::new();
    let host = HostContext::new(alloc, &queue);
    let listed = expected_failures();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("node test dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").exists())
        .collect();
    dirs.sort();
    // Per operator: (passed, supported cases, all cases).
    let mut table: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    let (mut passed, mut supported) = (0, 0);
    // Passed cases by how they ran: every input fed, operands bound at import, all folded.
    let mut modes = [0usize; 3];
    for dir in &dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let bytes = std::fs::read(dir.join("model.onnx")).expect("model");
        // The operators of the case (a model the reader refuses counts as unsupported).
        let ops: Vec<String> = Model::read(&bytes, &ReadOptions::default())
            .map(|m| m.nodes.iter().map(|n| n.op_type.clone()).collect())
            .unwrap_or_default();
        let key = match ops.as_slice() {
            [one] => one.clone(),
            [] => "(unreadable)".into(),
            _ => "(function-expanded)".into(),
        };
        let row = table.entry(key).or_default();
        row.2 += 1;
        if ops.is_empty() || !ops.iter().all(|o| SUPPORTED.contains(&o.as_str())) {
            continue;
        }
        row.1 += 1;
        supported += 1;
        let result = match std::fs::read_to_string(dir.join("skip")) {
            Ok(why) => Err(format!("data: {}", why.trim())),
            Err(_) => run_case(dir, &host, alloc),
        };
        match (result, listed.get(&name)) {
            (Ok(fed), None) => {
                row.0 += 1;
                passed += 1;
                modes[if fed == 0 {
                    2
                } else if fed == 1 && ops.len() == 1 && fed < numbered(dir, "input").len() {
                    1
                } else {
                    0
                }] += 1;
            }
            (Ok(_), Some(_)) => problems.push(format!("{name}: passes but onnx_node_failures.txt lists it")),
            (Err(e), Some(listed)) if !e.contains(listed.as_str()) => problems
                .push(format!("{name}: fails with \"{e}\" but onnx_node_failures.txt says \"{listed}\"")),
            (Err(_), Some(_)) => {}
            (Err(e), None) => problems.push(format!("{name}: {e}")),
        }
    }
    eprintln!(
        "ONNX backend node tests (onnx {}): {passed} passed / {supported} supported / {} total",
        version.trim(),
        dirs.len()
    );
    eprintln!(
        "  passed with every input fed at run time: {}; with operands bound at import: {}; folded whole at import: {}",
        modes[0], modes[1], modes[2]
    );
    for (op, (p, s, all)) in &table {
        if *s > 0 {
            eprintln!("  {op:<24} {p:>3} / {s:>3} / {all:>3}");
        }
    }
    if let Some(stale) = listed.keys().find(|k| !dirs.iter().any(|d| d.ends_with(k.as_str()))) {
        problems.push(format!("{stale}: listed in onnx_node_failures.txt but not generated"));
    }
    assert!(problems.is_empty(), "{} unexpected results:\n{}", problems.len(), problems.join("\n"));
}
