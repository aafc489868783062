use super::*;
use crate::tf::op_def::{AttrKind, AttrValue as V};
use crate::tf::tf_datatype::{TF_FLOAT, TF_QINT8};

fn dims(d: &[i64]) -> ShapeValue {
    ShapeValue::Dims(d.to_vec())
}

fn ints(v: &[i64]) -> V {
    V::List(v.iter().map(|i| V::I(*i)).collect())
}

fn attrs(a: &[(&str, V)]) -> Vec<(String, V)> {
    a.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect()
}

fn infer(op: &str, inputs: &[ShapeValue], a: &[(&str, V)]) -> Result<Vec<ShapeValue>, String> {
    register_standard_ops();
    infer_shapes(op, inputs.to_vec(), &attrs(a), 1).map_err(|(_, m)| m)
}

#[test]
fn definitions_carry_tensorflow_attrs_and_defaults() {
    register_standard_ops();
    register_standard_ops();
    let conv = lookup("Conv2D").unwrap().def;
    let attr = |n: &str| conv.attrs.iter().find(|a| a.name == n).unwrap().clone();
    assert_eq!(attr("data_format").default, Some(V::S("NHWC".into())));
    assert_eq!(attr("dilations").default, Some(ints(&[1, 1, 1, 1])));
    assert_eq!(attr("use_cudnn_on_gpu").default, Some(V::B(true)));
    assert_eq!(attr("padding").allowed_strings.unwrap(), ["SAME", "VALID", "EXPLICIT"]);
    assert_eq!(
        (attr("strides").kind, attr("strides").list, attr("strides").default),
        (AttrKind::Int, true, None)
    );
    assert_eq!(lookup("MaxPool").unwrap().def.attrs[0].default, Some(V::Type(TF_FLOAT)));
    assert!(lookup("Relu").unwrap().def.attrs[0].allowed_types.as_ref().unwrap().contains(&TF_QINT8));
    let add = lookup("AddV2").unwrap().def;
    assert!(add.is_commutative && add.is_aggregate);
    for name in ["Relu", "Conv2D", "MatMul", "BiasAdd", "AddV2", "Softmax", "MaxPool"] {
        assert!(lookup(name).unwrap().shape_fn.is_some(), "{name}");
    }
}

#[test]
fn conv2d_and_max_pool_shapes_follow_tensorflow() {
    let same = [("strides", ints(&[1, 2, 2, 1])), ("padding", V::S("SAME".into()))];
    assert_eq!(
        infer("Conv2D", &[dims(&[8, 28, 28, 3]), dims(&[3, 3, 3, 16])], &same),
        Ok(vec![dims(&[8, 14, 14, 16])])
    );
    let valid = [
        ("strides", ints(&[1, 1, 1, 1])),
        ("padding", V::S("VALID".into())),
        ("dilations", ints(&[1, 2, 2, 1])),
    ];
    assert_eq!(
        infer("Conv2D", &[dims(&[1, 9, 9, 2]), dims(&[3, 3, 2, 4])], &valid),
        Ok(vec![dims(&[1, 5, 5, 4])])
    );
    let nchw = [
        ("strides", ints(&[1, 1, 1, 1])),
        ("padding", V::S("VALID".into())),
        ("data_format", V::S("NCHW".into())),
    ];
    assert_eq!(
        infer("Conv2D", &[dims(&[1, 2, 9, 7]), dims(&[3, 3, 2, 4])], &nchw),
        Ok(vec![dims(&[1, 4, 7, 5])])
    );
    let explicit = [
        ("strides", ints(&[1, 1, 1, 1])),
        ("padding", V::S("EXPLICIT".into())),
        ("explicit_paddings", ints(&[0, 0, 1, 1, 2, 2, 0, 0])),
    ];
    assert_eq!(
        infer("Conv2D", &[dims(&[1, 5, 5, 1]), dims(&[3, 3, 1, 1])], &explicit),
        Ok(vec![dims(&[1, 5, 7, 1])])
    );
    assert_eq!(
        infer("Conv2D", &[dims(&[-1, 28, -1, 3]), ShapeValue::Unknown], &same),
        Ok(vec![dims(&[-1, -1, -1, -1])])
    );
    let e = infer("Conv2D", &[dims(&[1, 4, 4, 3]), dims(&[3, 3, 2, 1])], &same).unwrap_err();
    assert!(e.contains("Depth of input (3) is not a multiple of input depth of filter (2)"), "{e}");
    let e = infer("Conv2D", &[dims(&[1, 4, 4]), dims(&[3, 3, 2, 1])], &same).unwrap_err();
    assert!(e.contains("Shape must be rank 4 but is rank 3"), "{e}");
    let e = infer(
        "Conv2D",
        &[dims(&[1, 4, 4, 1]), dims(&[3, 3, 1, 1])],
        &[("strides", ints(&[2, 1, 1, 1])), same[1].clone()],
    );
    assert!(e.unwrap_err().contains("batch and depth"));
    let e = infer(
        "Conv2D",
        &[dims(&[1, 4, 4, 1]), dims(&[3, 3, 1, 1])],
        &[("strides", ints(&[1, 1])), same[1].clone()],
    );
    assert!(e.unwrap_err().contains("contain 4 values, but got: 2"));
    let e =
        infer("Conv2D", &[dims(&[1, 2, 2, 1]), dims(&[5, 5, 1, 1])], &[valid[0].clone(), valid[1].clone()]);
    assert!(e.unwrap_err().contains("negative"));

    let pool =
        [("ksize", ints(&[1, 2, 2, 1])), ("strides", ints(&[1, 2, 2, 1])), ("padding", V::S("VALID".into()))];
    assert_eq!(infer("MaxPool", &[dims(&[2, 5, 5, 8])], &pool), Ok(vec![dims(&[2, 2, 2, 8])]));
    let e = infer("MaxPool", &[dims(&[2, 5, 5, 8])], &[pool[0].clone(), pool[2].clone()]).unwrap_err();
    assert!(e.contains("strides"), "a missing required attr is an error: {e}");
}

#[test]
fn matmul_bias_add_broadcast_softmax_and_relu_shapes() {
    assert_eq!(infer("MatMul", &[dims(&[100, 784]), dims(&[784, 512])], &[]), Ok(vec![dims(&[100, 512])]));
    let t = [("transpose_a", V::B(true)), ("transpose_b", V::B(true))];
    assert_eq!(infer("MatMul", &[dims(&[784, 100]), dims(&[512, -1])], &t), Ok(vec![dims(&[100, 512])]));
    assert_eq!(
        infer("MatMul", &[dims(&[2, 3]), dims(&[4, 5])], &[]),
        Err("shape function of 'MatMul': Dimensions must be equal, but are 3 and 4 for 'MatMul' with input shapes: [2,3], [4,5]".into())
    );
    assert_eq!(infer("BiasAdd", &[dims(&[8, 10]), dims(&[10])], &[]), Ok(vec![dims(&[8, 10])]));
    assert_eq!(
        infer("BiasAdd", &[dims(&[8, -1, 4, 4]), dims(&[3])], &[("data_format", V::S("NCHW".into()))]),
        Ok(vec![dims(&[8, 3, 4, 4])])
    );
    assert!(infer("BiasAdd", &[dims(&[8, 10]), dims(&[9])], &[]).unwrap_err().contains("are 10 and 9"));
    assert!(infer("BiasAdd", &[dims(&[10]), dims(&[10])], &[]).unwrap_err().contains("at least rank 2"));
    assert_eq!(infer("AddV2", &[dims(&[2, 1, 3]), dims(&[4, 1])], &[]), Ok(vec![dims(&[2, 4, 3])]));
    assert_eq!(infer("AddV2", &[dims(&[-1, 3]), dims(&[3])], &[]), Ok(vec![dims(&[-1, 3])]));
    assert_eq!(
        infer("AddV2", &[dims(&[2, 3]), dims(&[4])], &[]),
        Err("shape function of 'AddV2': Incompatible shapes: [2,3] vs. [4] for 'AddV2'".into())
    );
    assert_eq!(infer("AddV2", &[ShapeValue::Unknown, dims(&[4])], &[]), Ok(vec![ShapeValue::Unknown]));
    assert_eq!(infer("Softmax", &[dims(&[100, 10])], &[]), Ok(vec![dims(&[100, 10])]));
    assert!(infer("Softmax", &[dims(&[])], &[]).unwrap_err().contains("at least rank 1"));
    assert_eq!(infer("Relu", &[dims(&[3, -1])], &[]), Ok(vec![dims(&[3, -1])]));
}
