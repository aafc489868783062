//! The standard NN ops plugins most often implement kernels for, defined the way TensorFlow
//! defines them (names, attrs, defaults) through the C builder, so a kernel library may
//! register kernels for an op it does not define: `Relu`, `Conv2D`, `MatMul`, `BiasAdd`,
//! `AddV2`, `Softmax`, `MaxPool`. Their shape functions are written in Rust against the
//! same context the C shape functions see.

use std::ffi::CString;
use std::sync::Once;

use crate::ffi::guard;
use crate::tf::op_def::{AttrValue, ShapeValue};
use crate::tf::ops::*;
use crate::tf::tf_status::{TF_INTERNAL, TF_INVALID_ARGUMENT, TF_OK, TF_Status, report};

/// One standard op: name, attr specs, input specs, output specs, shape function, and
/// whether it is commutative and an aggregate (AddV2).
struct Std {
    name: &'static str,
    attrs: &'static [&'static str],
    inputs: &'static [&'static str],
    outputs: &'static [&'static str],
    shape: ShapeFn,
    commutative: bool,
}

const NUMBER_T: &str = "T: {bfloat16, half, float, double, uint8, uint16, uint32, uint64, int8, int16, int32, int64, complex64, complex128}";

const STANDARD: &[Std] = &[
    Std {
        name: "Relu",
        attrs: &["T: {realnumbertype, qint8}"],
        inputs: &["features: T"],
        outputs: &["activations: T"],
        shape: unchanged,
        commutative: false,
    },
    Std {
        name: "Conv2D",
        attrs: &[
            "T: {half, bfloat16, float, double, int32}",
            "strides: list(int)",
            "use_cudnn_on_gpu: bool = true",
            "padding: {'SAME', 'VALID', 'EXPLICIT'}",
            "explicit_paddings: list(int) = []",
            "data_format: {'NHWC', 'NCHW'} = 'NHWC'",
            "dilations: list(int) = [1, 1, 1, 1]",
        ],
        inputs: &["input: T", "filter: T"],
        outputs: &["output: T"],
        shape: conv2d,
        commutative: false,
    },
    Std {
        name: "MatMul",
        attrs: &[
            "transpose_a: bool = false",
            "transpose_b: bool = false",
            "T: {bfloat16, half, float, double, int32, int64, uint8, uint16, uint32, uint64, int8, int16, complex64, complex128}",
            "grad_a: bool = false",
            "grad_b: bool = false",
        ],
        inputs: &["a: T", "b: T"],
        outputs: &["product: T"],
        shape: matmul,
        commutative: false,
    },
    Std {
        name: "BiasAdd",
        attrs: &["T: numbertype", "data_format: {'NHWC', 'NCHW'} = 'NHWC'"],
        inputs: &["value: T", "bias: T"],
        outputs: &["output: T"],
        shape: bias_add,
        commutative: false,
    },
    Std {
        name: "AddV2",
        attrs: &[NUMBER_T],
        inputs: &["x: T", "y: T"],
        outputs: &["z: T"],
        shape: broadcast,
        commutative: true,
    },
    Std {
        name: "Softmax",
        attrs: &["T: {half, bfloat16, float, double}"],
        inputs: &["logits: T"],
        outputs: &["softmax: T"],
        shape: at_least_rank_1,
        commutative: false,
    },
    Std {
        name: "MaxPool",
        attrs: &[
            "T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, qint8} = DT_FLOAT",
            "ksize: list(int) >= 4",
            "strides: list(int) >= 4",
            "padding: {'SAME', 'VALID', 'EXPLICIT'}",
            "explicit_paddings: list(int) = []",
            "data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'",
        ],
        inputs: &["input: T"],
        outputs: &["output: T"],
        shape: max_pool,
        commutative: false,
    },
];

/// Registers the standard ops (once per process; later calls do nothing). An op a plugin
/// registered first under the same name is kept.
pub fn register_standard_ops() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for op in STANDARD {
            let c = |s: &str| CString::new(s).expect("no NUL in the table");
            // SAFETY: a fresh builder consumed by TF_RegisterOpDefinition; specs are C
            // strings that outlive the calls; the status is stack-owned.
            unsafe {
                let b = TF_NewOpDefinitionBuilder(c(op.name).as_ptr());
                for a in op.attrs {
                    TF_OpDefinitionBuilderAddAttr(b, c(a).as_ptr());
                }
                for i in op.inputs {
                    TF_OpDefinitionBuilderAddInput(b, c(i).as_ptr());
                }
                for o in op.outputs {
                    TF_OpDefinitionBuilderAddOutput(b, c(o).as_ptr());
                }
                if op.commutative {
                    TF_OpDefinitionBuilderSetIsCommutative(b, true);
                    TF_OpDefinitionBuilderSetIsAggregate(b, true);
                }
                TF_OpDefinitionBuilderSetShapeInferenceFunction(b, Some(op.shape));
                let mut status = TF_Status::default();
                TF_RegisterOpDefinition(b, &mut status);
            }
        }
    });
}

/// Runs a Rust shape function on a C context and reports its error.
///
/// # Safety
/// `ctx` and `status` are NULL or live.
unsafe fn run(
    ctx: *mut TF_ShapeInferenceContext,
    status: *mut TF_Status,
    f: fn(&mut TF_ShapeInferenceContext) -> Result<(), String>,
) {
    // SAFETY: NULL or live, by the caller's contract.
    let Some(c) = (unsafe { ctx.as_mut() }) else { return };
    let r = guard(Err("a shape function panicked".to_owned()), || f(c));
    let (code, msg) = match r {
        Ok(()) => (TF_OK, String::new()),
        Err(m) if m.starts_with("a shape function panicked") => (TF_INTERNAL, m),
        Err(m) => (TF_INVALID_ARGUMENT, m),
    };
    // SAFETY: NULL or live, by the caller's contract.
    unsafe { report(status, code, &msg) }
}

macro_rules! shape_fns {
    ($($name:ident => $body:ident;)*) => {$(
        unsafe extern "C-unwind" fn $name(ctx: *mut TF_ShapeInferenceContext, status: *mut TF_Status) {
            // SAFETY: the shape function contract: live context and status.
            unsafe { run(ctx, status, $body) }
        }
    )*};
}

shape_fns! {
    unchanged => unchanged_shape;
    conv2d => conv2d_shape;
    matmul => matmul_shape;
    bias_add => bias_add_shape;
    broadcast => broadcast_shape;
    at_least_rank_1 => at_least_rank_1_shape;
    max_pool => max_pool_shape;
}

fn show(s: &ShapeValue) -> String {
    match s {
        ShapeValue::Unknown => "?".into(),
        ShapeValue::Dims(d) => {
            let d: Vec<String> = d.iter().map(|x| if *x < 0 { "?".into() } else { x.to_string() }).collect();
            format!("[{}]", d.join(","))
        }
    }
}

fn input(c: &TF_ShapeInferenceContext, i: usize) -> ShapeValue {
    c.input(i).cloned().unwrap_or(ShapeValue::Unknown)
}

/// Dims of a shape of known `rank` (an unknown shape becomes `rank` unknown dims).
fn with_rank(c: &TF_ShapeInferenceContext, i: usize, rank: usize) -> Result<Vec<i64>, String> {
    match input(c, i) {
        ShapeValue::Unknown => Ok(vec![-1; rank]),
        ShapeValue::Dims(d) if d.len() == rank => Ok(d),
        ShapeValue::Dims(d) => {
            Err(format!("Shape must be rank {rank} but is rank {} for '{}'", d.len(), c.op()))
        }
    }
}

fn ints(c: &TF_ShapeInferenceContext, name: &str) -> Vec<i64> {
    match c.attr(name) {
        Some(AttrValue::List(v)) => {
            v.iter().filter_map(|x| if let AttrValue::I(i) = x { Some(*i) } else { None }).collect()
        }
        _ => Vec::new(),
    }
}

fn string(c: &TF_ShapeInferenceContext, name: &str) -> String {
    match c.attr(name) {
        Some(AttrValue::S(s)) => s.clone(),
        _ => String::new(),
    }
}

/// Two dims that must agree: the known one, or an error.
fn merge(a: i64, b: i64, what: &str) -> Result<i64, String> {
    match (a, b) {
        (-1, x) | (x, -1) => Ok(x),
        (a, b) if a == b => Ok(a),
        (a, b) => Err(format!("Dimensions must be equal, but are {a} and {b} for {what}")),
    }
}

fn unchanged_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let s = input(c, 0);
    c.set_output(0, s);
    Ok(())
}

fn at_least_rank_1_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let s = input(c, 0);
    if let ShapeValue::Dims(d) = &s
        && d.is_empty()
    {
        return Err(format!("Shape must be at least rank 1 but is rank 0 for '{}'", c.op()));
    }
    c.set_output(0, s);
    Ok(())
}

fn matmul_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let (a, b) = (with_rank(c, 0, 2)?, with_rank(c, 1, 2)?);
    let flag = |n: &str| matches!(c.attr(n), Some(AttrValue::B(true)));
    let (m, ka) = if flag("transpose_a") { (a[1], a[0]) } else { (a[0], a[1]) };
    let (kb, n) = if flag("transpose_b") { (b[1], b[0]) } else { (b[0], b[1]) };
    let what = format!("'{}' with input shapes: {}, {}", c.op(), show(&input(c, 0)), show(&input(c, 1)));
    merge(ka, kb, &what)?;
    c.set_output(0, ShapeValue::Dims(vec![m, n]));
    Ok(())
}

fn bias_add_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let bias = with_rank(c, 1, 1)?;
    let ShapeValue::Dims(mut value) = input(c, 0) else {
        c.set_output(0, ShapeValue::Unknown);
        return Ok(());
    };
    if value.len() < 2 {
        return Err(format!("Shape must be at least rank 2 but is rank {} for '{}'", value.len(), c.op()));
    }
    let at = if string(c, "data_format") == "NCHW" { value.len() - 3 } else { value.len() - 1 };
    value[at] = merge(value[at], bias[0], &format!("'{}' (channels and bias)", c.op()))?;
    c.set_output(0, ShapeValue::Dims(value));
    Ok(())
}

fn broadcast_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let (ShapeValue::Dims(x), ShapeValue::Dims(y)) = (input(c, 0), input(c, 1)) else {
        c.set_output(0, ShapeValue::Unknown);
        return Ok(());
    };
    let rank = x.len().max(y.len());
    let at = |d: &[i64], i: usize| if i < rank - d.len() { 1 } else { d[i - (rank - d.len())] };
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        out.push(match (at(&x, i), at(&y, i)) {
            (1, d) | (d, 1) => d,
            (-1, -1) => -1,
            (-1, d) | (d, -1) => d,
            (a, b) if a == b => a,
            _ => {
                let (xs, ys) = (show(&input(c, 0)), show(&input(c, 1)));
                return Err(format!("Incompatible shapes: {xs} vs. {ys} for '{}'", c.op()));
            }
        });
    }
    c.set_output(0, ShapeValue::Dims(out));
    Ok(())
}

/// TensorFlow's windowed output size (-1 stays unknown).
fn windowed(input: i64, window: i64, stride: i64, padding: &str, before_after: (i64, i64)) -> i64 {
    if input < 0 || window < 0 {
        return -1;
    }
    match padding {
        "SAME" => (input + stride - 1) / stride,
        "EXPLICIT" => (input + before_after.0 + before_after.1 - window + stride) / stride,
        _ => (input - window + stride) / stride,
    }
}

/// Positions of (batch, height, width, channels) in a data format.
fn layout(format: &str) -> [usize; 4] {
    if format.starts_with("NCHW") { [0, 2, 3, 1] } else { [0, 1, 2, 3] }
}

/// Strides (or window sizes) of 4 with batch and depth 1.
fn four(c: &TF_ShapeInferenceContext, name: &str, l: [usize; 4]) -> Result<[i64; 4], String> {
    let v = ints(c, name);
    let Ok(v) = <[i64; 4]>::try_from(v.as_slice()) else {
        return Err(format!(
            "{} requires the {name} attribute to contain 4 values, but got: {}",
            c.op(),
            v.len()
        ));
    };
    if v.iter().any(|x| *x <= 0) {
        return Err(format!("{} requires positive {name}, got {v:?}", c.op()));
    }
    if name == "strides" && (v[l[0]] != 1 || v[l[3]] != 1) {
        return Err(format!("{}: strides in the batch and depth dimensions must be 1, got {v:?}", c.op()));
    }
    Ok(v)
}

/// The (before, after) explicit padding of dim `d`, from 8 values.
fn explicit(c: &TF_ShapeInferenceContext, padding: &str, d: usize) -> Result<(i64, i64), String> {
    if padding != "EXPLICIT" {
        return Ok((0, 0));
    }
    let p = ints(c, "explicit_paddings");
    if p.len() != 8 || p.iter().any(|x| *x < 0) {
        return Err(format!("{}: explicit_paddings must hold 8 non-negative values, got {p:?}", c.op()));
    }
    Ok((p[2 * d], p[2 * d + 1]))
}

fn conv2d_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let (x, f) = (with_rank(c, 0, 4)?, with_rank(c, 1, 4)?);
    let l = layout(&string(c, "data_format"));
    let strides = four(c, "strides", l)?;
    let dilations = four(c, "dilations", l)?;
    let padding = string(c, "padding");
    let (in_depth, filter_depth) = (x[l[3]], f[2]);
    if in_depth >= 0 && filter_depth > 0 && in_depth % filter_depth != 0 {
        return Err(format!(
            "Depth of input ({in_depth}) is not a multiple of input depth of filter ({filter_depth}) for '{}'",
            c.op()
        ));
    }
    let mut out = vec![0; 4];
    out[l[0]] = x[l[0]];
    out[l[3]] = f[3];
    for (k, &d) in [l[1], l[2]].iter().enumerate() {
        let window = if f[k] < 0 { -1 } else { (f[k] - 1) * dilations[d] + 1 };
        out[d] = windowed(x[d], window, strides[d], &padding, explicit(c, &padding, d)?);
        if out[d] < -1 {
            return Err(format!("{}: computed output size would be negative: {}", c.op(), out[d]));
        }
    }
    c.set_output(0, ShapeValue::Dims(out));
    Ok(())
}

fn max_pool_shape(c: &mut TF_ShapeInferenceContext) -> Result<(), String> {
    let x = with_rank(c, 0, 4)?;
    let l = layout(&string(c, "data_format"));
    let (ksize, strides) = (four(c, "ksize", l)?, four(c, "strides", l)?);
    let padding = string(c, "padding");
    let mut out = x.clone();
    for &d in &[l[1], l[2]] {
        out[d] = windowed(x[d], ksize[d], strides[d], &padding, explicit(c, &padding, d)?);
        if out[d] < -1 {
            return Err(format!("{}: computed output size would be negative: {}", c.op(), out[d]));
        }
    }
    if x[l[3]] >= 0 {
        out[l[3]] = x[l[3]] / ksize[l[3]];
    }
    c.set_output(0, ShapeValue::Dims(out));
    Ok(())
}

#[cfg(test)]
mod tests;
