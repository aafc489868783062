//! Malformed and unsupported ONNX models: each is a clear import error naming the node,
//! input or tensor at fault, never a panic. `cargo test -p hostrt-import --test
//! onnx_malformed -- --nocapture` prints the table of cases and messages.

mod common;

use common::{model, value};
use hostrt_import::onnx::model::ReadOptions;
use hostrt_import::onnx::proto::*;
use prost::Message;

fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: Some(format!("{}_0", op.to_lowercase())),
        op_type: Some(op.into()),
        domain: None,
        attribute: vec![],
    }
}

fn floats(name: &str, dims: &[i64], raw: Vec<u8>) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: Some(data_type::FLOAT),
        name: Some(name.into()),
        raw_data: Some(raw),
        ..Default::default()
    }
}

/// A valid model: `y = Relu(x)`, x of [1, 4].
fn relu() -> ModelProto {
    model(vec![node("Relu", &["x"], &["y"])], vec![], vec![value("x", &[1, 4])], vec![value("y", &[1, 4])])
}

fn import(bytes: &[u8]) -> Result<(), String> {
    hostrt_import::onnx_with(bytes, &ReadOptions::default(), Default::default())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Makes a case's model bytes.
type Bytes = Box<dyn Fn() -> Vec<u8>>;

/// Other operator sets may be declared beside ai.onnx (onnxruntime's optimizer adds
/// ai.onnx.ml to the models it writes) as long as no node uses them.
#[test]
fn other_declared_operator_sets_are_accepted() {
    let ml = OperatorSetIdProto { domain: Some("ai.onnx.ml".into()), version: Some(5) };
    assert_eq!(import(&edit(|m| m.opset_import.push(ml.clone()))), Ok(()));
}

#[test]
fn malformed_models_are_clear_errors() {
    let cases: Vec<(&str, Bytes, &str)> = vec![
        ("truncated protobuf", Box::new(|| relu().encode_to_vec()[..20].to_vec()), "malformed protobuf"),
        ("not a model at all", Box::new(|| b"hello, world".to_vec()), "not an ONNX model"),
        ("no default opset", Box::new(|| edit(|m| m.opset_import.clear())), "imports no ai.onnx opset"),
        ("opset 3", Box::new(|| edit(|m| m.opset_import[0].version = Some(3))), "opset 3 is not supported"),
        (
            "custom domain",
            Box::new(|| edit(|m| m.opset_import[0].domain = Some("com.microsoft".into()))),
            "imports no ai.onnx opset (only com.microsoft)",
        ),
        (
            "node of another domain",
            Box::new(|| {
                edit(|m| {
                    m.opset_import
                        .push(OperatorSetIdProto { domain: Some("com.microsoft".into()), version: Some(1) });
                    m.graph.as_mut().unwrap().node[0].domain = Some("com.microsoft".into());
                })
            }),
            "node #0 Relu 'relu_0': operator domain 'com.microsoft' is not supported",
        ),
        (
            "unknown operator",
            Box::new(|| edit(|m| m.graph.as_mut().unwrap().node[0].op_type = Some("Frobnicate".into()))),
            "node #0 Frobnicate 'relu_0': operator Frobnicate is not supported",
        ),
        (
            "undefined input",
            Box::new(|| edit(|m| m.graph.as_mut().unwrap().node[0].input[0] = "nowhere".into())),
            "input 0 'nowhere' is not defined",
        ),
        (
            "output never computed",
            Box::new(|| edit(|m| m.graph.as_mut().unwrap().output[0].name = Some("zz".into()))),
            "graph output 'zz' is computed by no node",
        ),
        (
            "raw_data too short",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.initializer.push(floats("w", &[2, 2], vec![0; 12]));
                })
            }),
            "initializer #0 'w': raw_data holds 12 bytes",
        ),
        (
            "negative dimension",
            Box::new(|| {
                edit(|m| {
                    m.graph.as_mut().unwrap().initializer.push(floats("w", &[-2], vec![]));
                })
            }),
            "dimension -2 is negative",
        ),
        (
            "huge dimensions",
            Box::new(|| {
                edit(|m| {
                    m.graph.as_mut().unwrap().initializer.push(floats("w", &[1 << 20, 1 << 20], vec![]));
                })
            }),
            "more than 2^31 elements",
        ),
        (
            "float64 input",
            Box::new(|| {
                edit(|m| {
                    let t = m.graph.as_mut().unwrap().input[0].r#type.as_mut().unwrap();
                    t.tensor_type.as_mut().unwrap().elem_type = Some(data_type::DOUBLE);
                })
            }),
            "element type double is not supported",
        ),
        (
            "symbolic dim unbound",
            Box::new(|| {
                edit(|m| {
                    let t = m.graph.as_mut().unwrap().input[0].r#type.as_mut().unwrap();
                    t.tensor_type.as_mut().unwrap().shape.as_mut().unwrap().dim[1] =
                        Dimension { dim_value: None, dim_param: Some("width".into()) };
                })
            }),
            "dimension 1 is symbolic ('width'): bind it (--dim width=N)",
        ),
        (
            "external data escapes",
            Box::new(|| {
                edit(|m| {
                    let mut t = floats("w", &[1], vec![]);
                    t.raw_data = None;
                    t.data_location = Some(1);
                    t.external_data = vec![StringStringEntryProto {
                        key: Some("location".into()),
                        value: Some("../../etc/passwd".into()),
                    }];
                    m.graph.as_mut().unwrap().initializer.push(t);
                })
            }),
            "external file",
        ),
        (
            "Conv filter at run time",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.input = vec![value("x", &[1, 1, 4, 4]), value("w", &[1, 1, 3, 3])];
                    g.output = vec![value("y", &[1, 1, 2, 2])];
                    g.node = vec![node("Conv", &["x", "w"], &["y"])];
                })
            }),
            "node #0 Conv 'conv_0': the filter (input 1) must be a constant",
        ),
        (
            "Reshape to a wrong size",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.initializer.push(TensorProto {
                        dims: vec![1],
                        data_type: Some(data_type::INT64),
                        name: Some("s".into()),
                        int64_data: vec![5],
                        ..Default::default()
                    });
                    g.node = vec![node("Reshape", &["x", "s"], &["y"])];
                })
            }),
            "node #0 Reshape 'reshape_0': shape [5] does not fit",
        ),
        // Found by fuzzing (fuzz/fuzz_targets/onnx_import.rs): each once a panic.
        (
            "empty tensor, huge dimension",
            Box::new(|| {
                edit(|m| {
                    m.graph.as_mut().unwrap().initializer.push(floats("w", &[0, 1 << 38], vec![]));
                })
            }),
            "dimension 274877906944 of shape [0, 274877906944] is larger than 2^31",
        ),
        (
            "MaxPool without kernel_shape",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.input = vec![value("x", &[1, 1, 4, 4])];
                    g.node = vec![node("MaxPool", &["x"], &["y"])];
                })
            }),
            "kernel_shape is required",
        ),
        (
            "MatMul of scalars",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.input = vec![value("x", &[]), value("w", &[])];
                    g.node = vec![node("MatMul", &["x", "w"], &["y"])];
                })
            }),
            "scalars do not multiply",
        ),
        (
            "Concat of different ranks",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.initializer.push(floats("c", &[2], vec![0; 8]));
                    g.node = vec![node("Concat", &["x", "c"], &["y"])];
                    g.node[0].attribute.push(AttributeProto {
                        name: Some("axis".into()),
                        r#type: Some(attribute_type::INT),
                        i: Some(1),
                        ..Default::default()
                    });
                })
            }),
            "does not concatenate",
        ),
        (
            "subgraph operator",
            Box::new(|| {
                edit(|m| {
                    m.graph.as_mut().unwrap().node[0].op_type = Some("If".into());
                })
            }),
            "operator If is not supported",
        ),
        (
            "Einsum with an ellipsis",
            Box::new(|| {
                edit(|m| {
                    let n = &mut m.graph.as_mut().unwrap().node[0];
                    n.op_type = Some("Einsum".into());
                    n.attribute.push(AttributeProto {
                        name: Some("equation".into()),
                        r#type: Some(3),
                        s: Some(b"...i->...i".to_vec()),
                        ..Default::default()
                    });
                })
            }),
            "Einsum with an ellipsis is not supported",
        ),
        (
            "Tile by run-time repeats",
            Box::new(|| edit(|m| m.graph.as_mut().unwrap().node[0] = node("Tile", &["x", "x"], &["y"]))),
            "the repeats (input 1) must be a constant",
        ),
        (
            "Where on a float condition",
            Box::new(|| {
                edit(|m| m.graph.as_mut().unwrap().node[0] = node("Where", &["x", "x", "x"], &["y"]))
            }),
            "expected bool",
        ),
        (
            "Gather by float indices",
            Box::new(|| edit(|m| m.graph.as_mut().unwrap().node[0] = node("Gather", &["x", "x"], &["y"]))),
            "indices of f32",
        ),
        // Once 24 GB of per-column tables at import (a cubic Resize to 16.5M columns).
        (
            "Resize to 2^20 + 1 columns",
            Box::new(|| {
                edit(|m| {
                    let g = m.graph.as_mut().unwrap();
                    g.initializer.push(TensorProto {
                        dims: vec![4],
                        data_type: Some(data_type::INT64),
                        name: Some("sizes".into()),
                        int64_data: vec![1, 1, 1, (1 << 20) + 1],
                        ..Default::default()
                    });
                    g.input = vec![value("x", &[1, 1, 1, 4])];
                    g.output = vec![value("y", &[1, 1, 1, (1 << 20) + 1])];
                    g.node = vec![node("Resize", &["x", "", "", "sizes"], &["y"])];
                })
            }),
            "node #0 Resize 'resize_0': output [1, 1, 1, 1048577] is empty or larger than 2^20",
        ),
    ];
    let mut failures = Vec::new();
    println!("| case | message |\n|---|---|");
    for (name, bytes, expect) in &cases {
        match import(&bytes()) {
            Ok(()) => failures.push(format!("{name}: imported")),
            Err(e) => {
                println!("| {name} | {e} |");
                if !e.contains(expect) {
                    failures.push(format!("{name}: {e:?} does not say {expect:?}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(import(&relu().encode_to_vec()).is_ok(), "the unedited model imports");
}

fn edit(f: impl FnOnce(&mut ModelProto)) -> Vec<u8> {
    let mut m = relu();
    f(&mut m);
    m.encode_to_vec()
}

/// An index outside the axis at run time is the call's error, naming the index and the
/// node; the program keeps running later calls.
#[test]
fn a_gather_index_out_of_range_is_a_run_time_error() {
    let mut m = relu();
    let g = m.graph.as_mut().unwrap();
    g.node = vec![node("Gather", &["table", "ids"], &["y"])];
    g.initializer.push(floats("table", &[3, 2], (0..6).flat_map(|v| (v as f32).to_le_bytes()).collect()));
    let mut ids = value("ids", &[2]);
    ids.r#type.as_mut().unwrap().tensor_type.as_mut().unwrap().elem_type = Some(data_type::INT64);
    g.input = vec![ids];
    g.output = vec![value("y", &[2, 2])];
    let bytes = m.encode_to_vec();
    let alloc = hostrt_core::Allocator::register(Box::leak(Box::new(hostrt_std::SystemAllocator::new())))
        .expect("allocator");
    let queue = hostrt_core::SingleThreadedWorkQueue::new();
    let host = hostrt_core::HostContext::new(alloc, &queue);
    let program = hostrt_import::Program::from_onnx(&bytes, &host).expect("import");
    let call = |v: [i64; 2]| {
        let t = hostrt_import::npy::NpyTensor {
            dtype: "i64",
            shape: vec![2],
            data: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        program.call(&host, vec![hostrt_import::npy::to_tensor(alloc, &t).unwrap()])
    };
    let e = call([1, 7]).expect_err("index 7 of 3").to_string();
    assert!(e.contains("index 7 (at 1) is outside the axis of 3") && e.contains("Gather"), "{e}");
    // Negative indices count from the end; the program still runs.
    let out = call([-1, 0]).expect("valid indices");
    let y = hostrt_import::npy::from_tensor(&out[0]).unwrap();
    let got: Vec<f32> = y.data.as_chunks::<4>().0.iter().map(|b| f32::from_le_bytes(*b)).collect();
    assert_eq!(got, [4.0, 5.0, 0.0, 1.0]);
}
