//! The custom op forms: which ops have a custom textual form, and the shape each form gives
//! its op (operand, result and attribute types). The parser builds ops of exactly these shapes;
//! the printer writes an op in its custom form only when the op has that shape, so a round
//! trip never changes an op. Both read this table; neither reads the other's internals. The
//! forms of the tensor-layer ops follow from their signatures ([`crate::tensor_ops`]).

use crate::tensor_ops::{self, AttrKind};

pub(super) use crate::tensor_ops::CHAIN;

const CONSTANT_TYPES: &[&str] = &["i1", "i32", "i64", "ui32", "ui64", "f32", "f64"];
const ADD_TYPES: &[&str] = &["i32", "i64", "f32", "f64"];
const DIV_TYPES: &[&str] = &["i32", "i64"];
const PRINT_TYPES: &[&str] = &["i1", "i32", "i64", "f32", "f64"];
const COUNT3_TYPES: &[&str] = &["i32", "i64"];

/// The integer attributes of `tfrt_test.benchmark`, in the order they are stored (after
/// `name`) and printed.
pub(super) const BENCHMARK_KEYS: &[&str] = &["duration_secs", "max_count", "num_warmup_runs"];

/// Float types (attribute literals of these types are floats).
const FLOAT_TYPES: &[&str] = &["f16", "bf16", "tf32", "f32", "f64", "f80", "f128"];

/// Whether `s` is a float type name.
pub(super) fn is_float_type(s: &str) -> bool {
    FLOAT_TYPES.contains(&s)
}

/// `T` if `name` is `prefix` followed by one of `types`.
fn suffix_type<'n>(name: &'n str, prefix: &str, types: &[&str]) -> Option<&'n str> {
    name.strip_prefix(prefix).filter(|t| types.contains(t))
}

/// A custom form and the shape of the op it stands for. Unless said otherwise, a form's
/// operand types are written in the text (as a types list or function type).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Form<'n> {
    /// `NAME %a, ...` (possibly no operands): operands of implied types, the given result
    /// types, no attributes or regions (`tfrt.new.chain`, `tfrt.add.T`, `tfrt.print.T`,
    /// `tfrt_test.count3.T`, the tensor-layer ops without attributes such as
    /// `ts.print_shape %s, %ch`, ...). An optional trailing chain is always written.
    Implied {
        /// The operand types, one per operand (the number of operands written).
        operands: Vec<&'n str>,
        results: Vec<&'n str>,
    },
    /// `tfrt.constant.T LIT`: no operands, attribute `value` of type `T` (a boolean for
    /// `i1`), one result of type `T`.
    Constant(&'n str),
    /// `NAME %a, ... VALUE` (possibly no operands): operands of implied types, the given
    /// result types, and one attribute `attr` written after the operands; an array when
    /// `array`. The tensor-layer ops with an attribute (`ts.build_shape [1, 2]`,
    /// `tfrt_dht.create_uninitialized_tensor.<dtype>.<rank> [dims]`,
    /// `tfrt_dht.fill_tensor_with_constant.<dtype> %t, %ch 1.0 : f32`,
    /// `tfrt_dht.set_tensor_with_constant_values.<dtype> %t, %ch [1 : i32]`).
    Valued { operands: Vec<&'n str>, results: Vec<&'n str>, attr: &'n str, array: bool },
    /// `tfrt.merge.chains %a, ... : T, ...`: one [`CHAIN`] result.
    MergeChains,
    /// `tfrt.return [%a, ... : T, ...]`.
    Return,
    /// `tfrt.call @f(%a, ...) : (T, ...) -> R`: attribute `callee`.
    Call,
    /// `tfrt.once @f(%a, ...) : (T, ...) -> (R)`: attribute `function`.
    Once,
    /// `tfrt.if %c, %a... [attributes {...}] : (T...) -> (R...) { then } [else { else }]`: an
    /// `i1` condition; both regions take the other operands as block arguments.
    If,
    /// `tfrt.repeat.i32 %n, %a... [: T...] { body }`: an `i32` count; results and block
    /// arguments are the loop values.
    Repeat,
    /// `tfrt.cond %c @t @f (%a...) : (T...) -> (R...)`: attributes `a_true_fn`, `b_false_fn`.
    Cond,
    /// `tfrt.case %i [@f0, ...] (%a...) : (T...) -> (R...)`: attribute `branches`.
    Case,
    /// `tfrt.while %c @body(%a...) [parallel_iterations(N)] : (T...) -> (T...)`: attributes
    /// `body_fn` and `parallel_iterations` (an `i64`, 1 when not written).
    While,
    /// `tfrt.parallel_for.i32 %s to %e fixed %b [, %a... : T...] { body }`: three `i32`
    /// operands, one [`CHAIN`] result; block arguments `s, e, a...`.
    ParallelFor,
    /// `tfrt.parallel_call.i32 %s to %e fixed %b @f(%a...) [: T...]`: attribute `callee`.
    ParallelCall,
    /// `tfrt_test.do.async %a... [attributes {...}] : (T...) -> (R...) { body }`.
    DoAsync,
    /// `tfrt_test.benchmark "NAME"(%a : T, ...) key = INT, ... { body }`: attributes `name`
    /// then [`BENCHMARK_KEYS`] (all `i32`), one [`CHAIN`] result.
    Benchmark,
    /// `tfrt_test.test_cost %a... [{attrs}] [: T...]`: one `i32` result.
    TestCost,
}

/// The ops with a custom form that takes a types list, a signature or regions.
const STRUCTURED: &[(&str, Form<'static>)] = &[
    ("tfrt.merge.chains", Form::MergeChains),
    ("tfrt.return", Form::Return),
    ("tfrt.call", Form::Call),
    ("tfrt.once", Form::Once),
    ("tfrt.if", Form::If),
    ("tfrt.repeat.i32", Form::Repeat),
    ("tfrt.cond", Form::Cond),
    ("tfrt.case", Form::Case),
    ("tfrt.while", Form::While),
    ("tfrt.parallel_for.i32", Form::ParallelFor),
    ("tfrt.parallel_call.i32", Form::ParallelCall),
    ("tfrt_test.do.async", Form::DoAsync),
    ("tfrt_test.benchmark", Form::Benchmark),
    ("tfrt_test.test_cost", Form::TestCost),
];

fn implied<'n>(operands: &[&'n str], results: &[&'n str]) -> Form<'n> {
    Form::Implied { operands: operands.to_vec(), results: results.to_vec() }
}

/// The custom form of the op named `name`, if it has one.
pub(super) fn form(name: &str) -> Option<Form<'_>> {
    if name == "tfrt.new.chain" {
        return Some(Form::Implied { operands: Vec::new(), results: vec![CHAIN] });
    }
    if let Some(t) = suffix_type(name, "tfrt.constant.", CONSTANT_TYPES) {
        return Some(Form::Constant(t));
    }
    if let Some(t) = suffix_type(name, "tfrt.add.", ADD_TYPES).or(suffix_type(name, "tfrt.mul.", &["i32"])) {
        return Some(implied(&[t, t], &[t]));
    }
    if let Some(t) = suffix_type(name, "tfrt.div.", DIV_TYPES) {
        return Some(implied(&[t, t], &[t, t]));
    }
    if name == "tfrt.equal.i32" {
        return Some(implied(&["i32", "i32"], &["i1"]));
    }
    if let Some(t) = suffix_type(name, "tfrt.print.", PRINT_TYPES) {
        return Some(implied(&[t, CHAIN], &[CHAIN]));
    }
    if let Some(t) = suffix_type(name, "tfrt_test.count3.", COUNT3_TYPES) {
        return Some(implied(&[t], &[t, t, t]));
    }
    if let Some(sig) = tensor_ops::signature(name) {
        let (operands, results) = (sig.operands, sig.results);
        return Some(match sig.attr {
            None => Form::Implied { operands, results },
            Some((attr, kind)) => Form::Valued { operands, results, attr, array: kind != AttrKind::Any },
        });
    }
    STRUCTURED.iter().find(|(n, _)| *n == name).map(|(_, f)| f.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_by_name() {
        assert_eq!(form("tfrt.new.chain"), Some(Form::Implied { operands: vec![], results: vec![CHAIN] }));
        assert_eq!(form("tfrt.constant.ui64"), Some(Form::Constant("ui64")));
        assert_eq!(form("tfrt.constant.i8"), None);
        assert_eq!(
            form("tfrt.div.i64"),
            Some(Form::Implied { operands: vec!["i64"; 2], results: vec!["i64"; 2] })
        );
        assert_eq!(form("tfrt.mul.i64"), None);
        assert_eq!(
            form("tfrt.print.i1"),
            Some(Form::Implied { operands: vec!["i1", CHAIN], results: vec![CHAIN] })
        );
        assert_eq!(
            form("tfrt_dht.create_uninitialized_tensor.f32.2"),
            Some(Form::Valued {
                operands: vec![],
                results: vec!["!tfrt_tensor.tensor"],
                attr: "shape",
                array: true
            })
        );
        assert_eq!(
            form("tfrt_dht.fill_tensor_with_constant.bool"),
            Some(Form::Valued {
                operands: vec!["!tfrt_tensor.tensor", CHAIN],
                results: vec![CHAIN],
                attr: "value",
                array: false
            })
        );
        assert_eq!(
            form("ts.print_fixed_rank_shape.1"),
            Some(Form::Implied { operands: vec!["!ts.fixed_rank_shape.1", CHAIN], results: vec![CHAIN] })
        );
        assert_eq!(form("tfrt_dht.create_uninitialized_tensor.f64.2"), None, "not registered in TFRT");
        assert_eq!(form("tfrt_dht.tensor_allclose.f32"), None);
        assert_eq!(form("tfrt.if"), Some(Form::If));
        assert_eq!(form("tfrt.if.x"), None);
        assert_eq!(form("tfrt_test.print_hello"), None);
        assert!(is_float_type("bf16") && !is_float_type("i32") && !is_float_type("index"));
    }
}
