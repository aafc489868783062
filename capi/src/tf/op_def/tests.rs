use super::*;

fn op(name: &str, attrs: &[&str], inputs: &[&str], outputs: &[&str]) -> Result<OpDef, SpecError> {
    let mut op = OpDef {
        name: name.to_owned(),
        attrs: attrs.iter().map(|a| parse_attr(a)).collect::<Result<_, _>>()?,
        inputs: inputs.iter().map(|a| parse_arg(a, "Input")).collect::<Result<_, _>>()?,
        outputs: outputs.iter().map(|a| parse_arg(a, "Output")).collect::<Result<_, _>>()?,
        ..OpDef::default()
    };
    check_op(&mut op)?;
    Ok(op)
}

#[test]
fn attr_specs_of_every_form_parse() {
    let a = parse_attr("T: {float, int32}").unwrap();
    assert_eq!((a.kind, a.list, a.allowed_types), (AttrKind::Type, false, Some(vec![TF_FLOAT, TF_INT32])));
    let a = parse_attr("T: type = DT_FLOAT").unwrap();
    assert_eq!(a.default, Some(AttrValue::Type(TF_FLOAT)));
    let a = parse_attr("T: {half, float} = half").unwrap();
    assert_eq!(a.default, Some(AttrValue::Type(TF_HALF)));
    let a = parse_attr("N: int >= 1 = 2").unwrap();
    assert_eq!((a.kind, a.minimum, a.default), (AttrKind::Int, Some(1), Some(AttrValue::I(2))));
    let a = parse_attr("padding: {'SAME', 'VALID', \"EXPLICIT\"}").unwrap();
    assert_eq!(a.allowed_strings, Some(vec!["SAME".into(), "VALID".into(), "EXPLICIT".into()]));
    let a = parse_attr("data_format: {'NHWC', 'NCHW'} = 'NHWC'").unwrap();
    assert_eq!(a.default, Some(AttrValue::S("NHWC".into())));
    let a = parse_attr("strides: list(int)").unwrap();
    assert_eq!((a.kind, a.list, a.minimum), (AttrKind::Int, true, None));
    let a = parse_attr("ksize: list(int) >= 4").unwrap();
    assert_eq!((a.list, a.minimum), (true, Some(4)));
    let a = parse_attr("dilations: list(int) = [1, 1, 1, 1]").unwrap();
    assert_eq!(a.default, Some(AttrValue::List(vec![AttrValue::I(1); 4])));
    let a = parse_attr("Tin: list(type) >= 0 = []").unwrap();
    assert_eq!(a.default, Some(AttrValue::List(vec![])));
    let a = parse_attr("x: numbertype").unwrap();
    assert!(a.allowed_types.unwrap().contains(&TF_COMPLEX64));
    let a = parse_attr("x: {realnumbertype, quantizedtype}").unwrap();
    let allowed = a.allowed_types.unwrap();
    assert!(
        allowed.contains(&TF_QINT8) && allowed.contains(&TF_BFLOAT16) && !allowed.contains(&TF_COMPLEX64)
    );
    let a = parse_attr("transpose_a: bool = false").unwrap();
    assert_eq!(a.default, Some(AttrValue::B(false)));
    let a = parse_attr("alpha: float = 0.2").unwrap();
    assert_eq!(a.default, Some(AttrValue::F(0.2)));
    let a = parse_attr("s: shape = [2, -1]").unwrap();
    assert_eq!(a.default, Some(AttrValue::Shape(ShapeValue::Dims(vec![2, -1]))));
    let a = parse_attr("label: string = 'a=b >= c'").unwrap();
    assert_eq!(a.default, Some(AttrValue::S("a=b >= c".into())), "'=' and '>=' inside quotes are text");
    let a = parse_attr("t: tensor").unwrap();
    assert_eq!(a.kind, AttrKind::Tensor);
}

#[test]
fn malformed_attr_specs_are_errors_naming_the_spec() {
    for (spec, why) in [
        ("T", "expected '<name>: <type>'"),
        ("1x: int", "[a-zA-Z]"),
        ("x: integer", "unknown attr type 'integer'"),
        ("x: list(nonsense)", "unknown attr type 'nonsense'"),
        ("x: {float, nonsense}", "unknown type 'nonsense'"),
        ("x: {}", "empty set"),
        ("x: float >= 1", "'>=' applies only to int and list attrs"),
        ("x: int >= one", "must be an integer"),
        ("x: int = 1.5", "the default '1.5' is not a int"),
        ("x: {float, int32} = DT_HALF", "dtype half is not allowed"),
        ("x: {'A', 'B'} = 'C'", "value 'C' is not one of"),
        ("x: int >= 2 = 1", "must be at least 2"),
        ("x: list(int) >= 2 = [1]", "needs at least 2 values"),
        ("x: bool = yes", "is not a bool"),
    ] {
        let e = parse_attr(spec).unwrap_err().to_string();
        assert!(e.starts_with(&format!("Attr(\"{spec}\")")) && e.contains(why), "{spec}: {e}");
    }
}

#[test]
fn inputs_and_outputs_resolve_against_the_attrs() {
    let o = op(
        "Concatish",
        &["N: int", "T: type", "Tlist: list(type)"],
        &["values: N * T", "extra: Tlist", "axis: int32", "r: Ref(float)"],
        &["out: T"],
    )
    .unwrap();
    assert_eq!(o.inputs[0].number_attr.as_deref(), Some("N"));
    assert_eq!(o.inputs[0].ty, ArgType::Attr("T".into()));
    assert_eq!(o.inputs[1].ty, ArgType::List("Tlist".into()));
    assert_eq!(o.inputs[2].ty, ArgType::Fixed(TF_INT32));
    assert!(o.inputs[3].is_ref && o.inputs[3].ty == ArgType::Fixed(TF_FLOAT));
    assert_eq!(o.attrs[0].minimum, Some(1), "a number attr gets TensorFlow's minimum of 1");
    for (attrs, inputs, why) in [
        (&["T: type"][..], &["x: U"][..], "no attr or type named 'U'"),
        (&["T: int"][..], &["x: T"][..], "attr 'T' must be a type"),
        (&["N: float", "T: type"][..], &["x: N * T"][..], "attr 'N' must be an int"),
        (&["T: type"][..], &["x: M * T"][..], "no attr named 'M'"),
        (&["T: type", "T: int"][..], &[][..], "attr 'T' defined twice"),
        (&["T: type"][..], &["x: T", "x: T"][..], "input 'x' defined twice"),
        (&["N: int = 0", "T: type"][..], &["x: N * T"][..], "must be at least 1"),
    ] {
        let e = op("Bad", attrs, inputs, &[]).unwrap_err().to_string();
        assert!(e.starts_with("op 'Bad': ") && e.contains(why), "{e}");
    }
    let e = parse_arg("X: float", "Input").unwrap_err().to_string();
    assert!(e.contains("[a-z][a-z0-9_]*"), "{e}");
    let e = parse_arg("x: float*", "Output").unwrap_err().to_string();
    assert!(e.starts_with("Output(\"x: float*\")"), "{e}");
    assert!(op("lower", &[], &[], &[]).unwrap_err().to_string().contains("[A-Z]"));
}
