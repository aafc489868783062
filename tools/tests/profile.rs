//! `--profile` and `--trace` of `hostrt infer` and `hostrt run` (docs/profiling.md): the
//! profile names every kernel of an imported model by its layer, and every trace is well
//! formed for Chrome's trace event format: known phases, begin and end events that match
//! per thread, device spans that end once after they begin, timestamps that never go back on
//! a thread.

#[allow(dead_code)] // only the conformance programs are used here
mod suites;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn models() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../import/tests/models")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hostrt-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn hostrt(args: &[&str], dir: Option<&Path>) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hostrt"));
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd.args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "hostrt {args:?}: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// What a valid trace holds, counted: `(events by phase, span names, threads)`. Panics,
/// naming the event, on anything Chrome's trace event format does not allow or that
/// breaks nesting or time order on a thread.
fn check_trace(path: &Path) -> (HashMap<String, usize>, Vec<String>, usize) {
    let json: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).expect("the trace is JSON");
    let events = json["traceEvents"].as_array().expect("a traceEvents array");
    let mut phases = HashMap::new();
    let mut open: HashMap<u64, Vec<String>> = HashMap::new();
    let mut last_ts: HashMap<u64, f64> = HashMap::new();
    let mut names = Vec::new();
    let mut threads = std::collections::HashSet::new();
    let mut device: HashMap<u64, f64> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let ph = e["ph"].as_str().unwrap_or_else(|| panic!("event {i} has no phase: {e}"));
        let name = e["name"].as_str().unwrap_or_else(|| panic!("event {i} has no name: {e}"));
        assert_eq!(e["pid"].as_u64(), Some(1), "event {i}: pid");
        let tid = e["tid"].as_u64().unwrap_or_else(|| panic!("event {i} has no tid: {e}"));
        *phases.entry(ph.to_string()).or_insert(0) += 1;
        if ph == "M" {
            assert_eq!(name, "thread_name", "event {i}");
            assert!(e["args"]["name"].is_string(), "event {i}: a thread name");
            threads.insert(tid);
            continue;
        }
        let ts = e["ts"].as_f64().unwrap_or_else(|| panic!("event {i} has no timestamp: {e}"));
        let last = last_ts.entry(tid).or_insert(0.0);
        assert!(ts >= *last, "event {i} ({name}) at {ts} us goes back on thread {tid} (last {last})");
        *last = ts;
        let stack = open.entry(tid).or_default();
        match ph {
            "B" => {
                stack.push(name.to_string());
                names.push(name.to_string());
            }
            "E" => {
                let began = stack.pop().unwrap_or_else(|| panic!("event {i}: end of {name} without a begin"));
                assert_eq!(began, name, "event {i}: the end of {name} closes {began}");
            }
            "C" => assert!(e["args"]["bytes"].is_u64(), "event {i}: a counter's value"),
            // Device spans: async, matched by id (they overlap the thread's own spans).
            "b" => {
                let id = e["id"].as_u64().unwrap_or_else(|| panic!("event {i}: a device span's id"));
                assert!(device.insert(id, ts).is_none(), "event {i}: device span {id} begins twice");
                names.push(name.to_string());
            }
            "e" => {
                let id = e["id"].as_u64().unwrap_or_else(|| panic!("event {i}: a device span's id"));
                let began =
                    device.remove(&id).unwrap_or_else(|| panic!("event {i}: device span {id} ends unbegun"));
                assert!(ts >= began, "event {i}: device span {id} ends before it begins");
            }
            other => panic!("event {i}: phase {other}"),
        }
    }
    assert!(device.is_empty(), "device spans {device:?} never end");
    for (tid, stack) in open {
        assert!(stack.is_empty(), "thread {tid} leaves {stack:?} open");
        assert!(threads.contains(&tid), "thread {tid} has no name");
    }
    (phases, names, threads.len())
}

#[test]
fn an_imported_model_profiles_by_layer_and_traces() {
    let (model, input) = (models().join("ds_cnn_i8.tflite"), models().join("ds_cnn_i8.input.npy"));
    let trace = scratch("ds_cnn.json");
    let out = hostrt(
        &[
            "infer",
            model.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
            "--benchmark",
            "4",
            "--threads",
            "2",
            "--profile=csv",
            "--trace",
            trace.to_str().unwrap(),
        ],
        None,
    );
    let csv: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("location,")).collect();
    assert_eq!(csv[0], "location,kernel,calls,total_ns,self_ns,mean_ns,share,allocations,allocated_bytes");
    let rows: Vec<Vec<&str>> = csv[1..].iter().map(|l| l.rsplitn(9, ',').collect()).collect();
    // Every layer of the model ran five times (one run and four timed), named by its
    // operator; the shares add up to the whole.
    let layers: Vec<_> = rows.iter().filter(|r| r[8].starts_with("\"op#")).collect();
    assert!(layers.len() >= 10, "{out}");
    assert!(layers.iter().all(|r| r[6] == "5"), "{out}");
    assert!(rows.iter().any(|r| r[8].contains("CONV_2D") && r[7].starts_with("nn.conv_2d")), "{out}");
    let share: f64 = rows.iter().map(|r| r[2].parse::<f64>().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-3, "shares add to {share}");

    let (phases, names, threads) = check_trace(&trace);
    assert_eq!(names.iter().filter(|n| *n == "call @main").count(), 5);
    assert!(names.iter().any(|n| n.starts_with("op#") && n.contains("DEPTHWISE_CONV_2D")));
    assert!(threads >= 1 && phases["C"] > 0, "no allocator counter");
}

#[test]
fn a_conformance_program_profiles_and_traces_on_two_workers() {
    let Some(programs) = suites::conformance_programs() else { return };
    let fib = programs.iter().find(|p| p.ends_with("fib.mlir")).expect("fib.mlir in the suite");
    let dir = fib.parent().unwrap();
    let trace = scratch("fib.json");
    let arg = format!("--trace={}", trace.display());
    let out = hostrt(&["run", "fib.mlir", "--work_queue_type=mstd:2", "--profile", &arg], Some(dir));
    // The table: the recursive calls by line and column, most time first.
    let table: Vec<&str> = out.lines().skip_while(|l| !l.starts_with("location ")).collect();
    assert!(table.iter().any(|l| l.starts_with("fib.mlir:") && l.contains("tfrt.call")), "{out}");
    let (_, names, threads) = check_trace(&trace);
    assert!(names.iter().any(|n| n == "call @fib_driver"), "{names:?}");
    // The recursion's other streams run as tasks of the two workers, spans on their threads.
    assert!(names.iter().any(|n| n == "task"), "no work-queue task spans");
    assert!(threads >= 3, "{threads} thread(s)");
    assert!(names.iter().filter(|n| n.starts_with("fib.mlir:")).count() > 1000);
}

#[test]
fn a_bad_profile_format_is_refused() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_hostrt")).args(["run", "x.mlir", "--profile=xml"]).output().unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr) + String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("'xml' is not table or csv"), "{text}");
}

#[test]
fn graph_draws_a_model_and_prints_its_plan() {
    let model = models().join("ds_cnn_i8.tflite");
    let plan = hostrt(&["graph", model.to_str().unwrap(), "--plan"], None);
    // The plan's arena is the one the import plans and the program records.
    let bef = scratch("ds_cnn.mlir");
    let imported = hostrt(&["import", model.to_str().unwrap(), "-o", bef.to_str().unwrap()], None);
    let planned = imported.lines().find_map(|l| l.strip_prefix("activation arena: ")).unwrap();
    let bytes = planned.split_whitespace().next().unwrap();
    assert!(plan.starts_with(&format!("activation arena: {bytes} bytes")), "{plan}\n{imported}");
    assert!(plan.contains("most bytes live: "), "{plan}");
    // Every buffer line's bar covers every step once.
    let steps = plan
        .lines()
        .filter(|l| l.trim_start().split("  ").next().is_some_and(|n| n.parse::<usize>().is_ok()))
        .count();
    let bars: Vec<&str> = plan.lines().filter(|l| l.starts_with('[')).collect();
    assert!(
        !bars.is_empty()
            && bars
                .iter()
                .all(|l| l.split("  ").any(|f| f.len() == steps && f.chars().all(|c| c == '#' || c == '.'))),
        "{plan}"
    );
    let dot = hostrt(&["graph", model.to_str().unwrap(), "--dot"], None);
    assert!(dot.starts_with("digraph model {") && dot.trim_end().ends_with('}'), "{dot}");
    assert!(dot.matches(" -> ").count() >= 10, "{dot}");
}

#[test]
fn graph_colours_a_programs_streams() {
    // Two independent chains: two streams, the same from the text and from its BEF.
    let text = "func.func @two(%a: i32) -> (i32, i32) {
  %b = \"tfrt.add.i32\"(%a, %a) : (i32, i32) -> i32
  %c = \"tfrt.add.i32\"(%b, %b) : (i32, i32) -> i32
  %d = \"tfrt.add.i32\"(%a, %a) : (i32, i32) -> i32
  %e = \"tfrt.add.i32\"(%d, %d) : (i32, i32) -> i32
  tfrt.return %c, %e : i32, i32
}
";
    let (mlir, bef) = (scratch("two.mlir"), scratch("two.bef"));
    std::fs::write(&mlir, text).unwrap();
    hostrt(&["compile", mlir.to_str().unwrap(), "-o", bef.to_str().unwrap()], None);
    for input in [&mlir, &bef] {
        let dot = hostrt(&["graph", input.to_str().unwrap(), "--dot"], None);
        let streams: Vec<&str> = dot.lines().filter_map(|l| l.split("\\nstream ").nth(1)).collect();
        assert_eq!(streams.len(), 4, "{dot}");
        assert_eq!(streams.iter().filter(|s| s.starts_with("0\"")).count(), 2, "{dot}");
        assert_eq!(
            streams.iter().filter(|s| s.starts_with("1\", fillcolor=\"#cfe8ff\"")).count(),
            2,
            "{dot}"
        );
    }
}

#[test]
fn device_work_is_a_span_from_submission_to_fence() {
    let program = scratch("vk.mlir");
    std::fs::write(&program, suites::VK_MATMUL).unwrap();
    let trace = scratch("vk.json");
    let arg = format!("--trace={}", trace.display());
    let out = Command::new(env!("CARGO_BIN_EXE_hostrt"))
        .args(["run", program.to_str().unwrap(), &arg])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.contains("values = [7.000000e+00") {
        // No Vulkan device here (tests/devices.rs says whether one is required).
        assert!(std::env::var("HOSTRT_REQUIRE_VULKAN").as_deref() != Ok("1"), "Vulkan is required: {stdout}");
        println!("skipped: no Vulkan device ran the program");
        return;
    }
    let (phases, names, _) = check_trace(&trace);
    assert_eq!((phases.get("b"), phases.get("e")), (Some(&1), Some(&1)), "{phases:?}");
    assert!(names.iter().any(|n| n == "vulkan: submit to fence"), "{names:?}");
    assert!(names.iter().any(|n| n.contains("vk.mlir:6:")), "the host kernel that submitted: {names:?}");
}
