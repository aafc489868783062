//! The tensor-layer ops that TFRT registers (`ts.*` and `tfrt_dht.*`) and
//! their signatures: operand, result and attribute types. One table serves both sides: the
//! text side derives these ops' custom forms from it (`text::forms`), and the BEF writer checks
//! every op of these names against it, generic forms included, with `tfrt_opt`'s messages
//! ([`verify`]).
//!
//! Other names in these dialects (`tfrt_dht.tensor_allclose.f32`, `btf.*`,
//! `tfrt_dht.create_uninitialized_tensor.f64.2`, ...) are not registered in TFRT either: they
//! have no custom form and are not checked.

use crate::ast::{Attr, Op, Type};

/// `!tfrt.chain`.
pub(crate) const CHAIN: &str = "!tfrt.chain";
/// `!tfrt_tensor.tensor`, the type of every tensor.
pub(crate) const TENSOR: &str = "!tfrt_tensor.tensor";
/// `!ts.shape`.
pub(crate) const SHAPE: &str = "!ts.shape";
/// `!ts.partial_shape`.
pub(crate) const PARTIAL_SHAPE: &str = "!ts.partial_shape";
/// `!ht.host_buffer`.
pub(crate) const HOST_BUFFER: &str = "!ht.host_buffer";

/// The spelling of [`TENSOR`] in programs of TFRT's revision e94ffc4b, when the tensor dialect
/// was named `t`.
const OLD_TENSOR: &str = "!t.tensor";

/// `!ts.fixed_rank_shape.N`, by N - 1.
const FIXED_RANK_SHAPES: [&str; 3] =
    ["!ts.fixed_rank_shape.1", "!ts.fixed_rank_shape.2", "!ts.fixed_rank_shape.3"];
/// Stands in [`TABLE`] for the fixed-rank shape type whose rank the op's name gives.
const FIXED: &str = "!ts.fixed_rank_shape.N";

/// The dtype suffixes of the registered `tfrt_dht` ops (TFRT's `dense_host_tensor.td`; other
/// dtypes have kernels but are written in generic form).
const DTYPES: &[&str] =
    &["ui8", "ui16", "ui32", "ui64", "i32", "f32", "i64", "bool", "complex64", "complex128"];
/// The rank suffixes of the registered `tfrt_dht.create_uninitialized_tensor.<dtype>.<rank>`.
const CREATE_RANKS: &[&str] = &["0", "1", "2", "3", "4"];
/// The rank suffixes of `ts.as_fixed_rank_shape.N` and `ts.print_fixed_rank_shape.N`.
const FIXED_RANKS: &[&str] = &["1", "2", "3"];

/// `ty` in its canonical spelling: `!t.tensor` is `!tfrt_tensor.tensor` (both spellings denote
/// one type), every other type is itself. The parser stores types canonically, so the printer,
/// the writer and BEF files see one spelling.
pub(crate) fn canonical_type(ty: &str) -> &str {
    if ty == OLD_TENSOR { TENSOR } else { ty }
}

/// What an op's attribute must be (TFRT's attribute constraints).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AttrKind {
    /// An array of `i64` integers (`I64ArrayAttr`): the dims of a shape.
    I64Array,
    /// Any array (`ArrayAttr`).
    Array,
    /// Any attribute (`AnyAttr`).
    Any,
}

impl AttrKind {
    fn admits(self, a: &Attr) -> bool {
        match (self, a) {
            (AttrKind::I64Array, Attr::Array(items)) => {
                items.iter().all(|i| matches!(i, Attr::Int { ty, .. } if ty.0 == "i64"))
            }
            (AttrKind::Array, Attr::Array(_)) | (AttrKind::Any, _) => true,
            _ => false,
        }
    }

    /// The constraint's summary in `tfrt_opt`'s message.
    fn summary(self) -> &'static str {
        match self {
            AttrKind::I64Array => "64-bit integer array attribute",
            AttrKind::Array => "array attribute",
            AttrKind::Any => "any attribute",
        }
    }
}

/// How the names of a [`TABLE`] entry are formed from its base name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Names {
    /// The base name alone.
    Exact,
    /// `<base>.<dtype>` with a dtype of [`DTYPES`].
    DType,
    /// `<base>.<dtype>.<rank>` with a dtype of [`DTYPES`] and a rank of [`CREATE_RANKS`].
    DTypeRank,
    /// `<base>.<N>` with N of [`FIXED_RANKS`]; [`FIXED`] in the types is the rank-N type.
    FixedRank,
}

/// One op (or family of ops) of the table.
struct Entry {
    base: &'static str,
    names: Names,
    operands: &'static [&'static str],
    /// Whether the last operand (a chain) may be left out (an optional trailing chain).
    optional_chain: bool,
    results: &'static [&'static str],
    attr: Option<(&'static str, AttrKind)>,
}

const fn op(
    base: &'static str,
    names: Names,
    operands: &'static [&'static str],
    results: &'static [&'static str],
) -> Entry {
    Entry { base, names, operands, optional_chain: false, results, attr: None }
}

impl Entry {
    const fn chain_optional(self) -> Entry {
        Entry { optional_chain: true, ..self }
    }

    const fn attr(self, name: &'static str, kind: AttrKind) -> Entry {
        Entry { attr: Some((name, kind)), ..self }
    }

    /// Whether `name` is one of this entry's names: `Some` with the fixed rank N it gives, if
    /// any.
    fn matches(&self, name: &str) -> Option<Option<usize>> {
        if self.names == Names::Exact {
            return (name == self.base).then_some(None);
        }
        let suffix = name.strip_prefix(self.base)?.strip_prefix('.')?;
        match self.names {
            Names::DType => DTYPES.contains(&suffix).then_some(None),
            Names::DTypeRank => {
                let (dtype, rank) = suffix.rsplit_once('.')?;
                (DTYPES.contains(&dtype) && CREATE_RANKS.contains(&rank)).then_some(None)
            }
            Names::FixedRank => FIXED_RANKS.iter().position(|r| *r == suffix).map(Some),
            Names::Exact => None,
        }
    }
}

use AttrKind::{Any, Array, I64Array};
use Names::{DType, DTypeRank, Exact, FixedRank};

/// The registered ops (TFRT's `tensor_shape.td` and
/// `dense_host_tensor.td`).
const TABLE: &[Entry] = &[
    op("ts.build_shape", Exact, &[], &[SHAPE]).attr("value", I64Array),
    op("ts.build_partial_shape", Exact, &[], &[PARTIAL_SHAPE]).attr("value", I64Array),
    op("ts.build_unranked_partial_shape", Exact, &[], &[PARTIAL_SHAPE]),
    op("ts.print_shape", Exact, &[SHAPE, CHAIN], &[CHAIN]).chain_optional(),
    op("ts.print_partial_shape", Exact, &[PARTIAL_SHAPE, CHAIN], &[CHAIN]).chain_optional(),
    op("ts.print_fixed_rank_shape", FixedRank, &[FIXED, CHAIN], &[CHAIN]).chain_optional(),
    op("ts.equal_shape", Exact, &[SHAPE, SHAPE], &["i1"]),
    op("ts.get_num_elements", Exact, &[SHAPE], &["i64"]),
    op("ts.get_dimension", Exact, &[SHAPE, "i32"], &["i64"]),
    op("ts.as_fixed_rank_shape", FixedRank, &[SHAPE], &[FIXED]),
    op("ts.to_shape", Exact, &[PARTIAL_SHAPE], &[SHAPE]),
    op("ts.to_partial_shape", Exact, &[SHAPE], &[PARTIAL_SHAPE]),
    op("tfrt_dht.create_uninitialized_tensor", DTypeRank, &[], &[TENSOR]).attr("shape", I64Array),
    op("tfrt_dht.fill_tensor_with_constant", DType, &[TENSOR, CHAIN], &[CHAIN])
        .chain_optional()
        .attr("value", Any),
    op("tfrt_dht.set_tensor_with_constant_values", DType, &[TENSOR, CHAIN], &[CHAIN]).attr("values", Array),
    op("tfrt_dht.print_tensor", Exact, &[TENSOR, CHAIN], &[CHAIN]).chain_optional(),
    op("tfrt_dht.tensor_equal", DType, &[TENSOR, TENSOR, CHAIN], &["i1", CHAIN]),
    op("tfrt_dht.make_tensor", DType, &[HOST_BUFFER, SHAPE, CHAIN], &[TENSOR, CHAIN]),
    op("tfrt_dht.get_tensor_shape", Exact, &[TENSOR], &[SHAPE]),
    op("tfrt_dht.allocate_buffer", Exact, &["i64", "i64"], &[HOST_BUFFER]),
    op("tfrt_dht.get_buffer", Exact, &[TENSOR, CHAIN], &[HOST_BUFFER, CHAIN]),
    op("tfrt_dht.get_buffer_slice", Exact, &[HOST_BUFFER, "i64", "i64"], &[HOST_BUFFER]),
    op("tfrt_dht.print_buffer", Exact, &[HOST_BUFFER, CHAIN], &[CHAIN]),
];

/// The signature of a registered op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Signature {
    /// The operand types (all of them, the optional chain included).
    pub operands: Vec<&'static str>,
    /// Whether the last operand, a chain, may be left out.
    pub optional_chain: bool,
    pub results: Vec<&'static str>,
    /// The attribute the op requires, and what it must be.
    pub attr: Option<(&'static str, AttrKind)>,
}

/// The signature of the op named `name`, if it is registered.
pub(crate) fn signature(name: &str) -> Option<Signature> {
    TABLE.iter().find_map(|e| {
        let rank = e.matches(name)?;
        let resolve = |types: &[&'static str]| -> Vec<&'static str> {
            types
                .iter()
                .map(|t| if *t == FIXED { rank.map_or(FIXED, |n| FIXED_RANK_SHAPES[n]) } else { t })
                .collect()
        };
        Some(Signature {
            operands: resolve(e.operands),
            optional_chain: e.optional_chain,
            results: resolve(e.results),
            attr: e.attr,
        })
    })
}

/// The summary of a type in `tfrt_opt`'s messages: `N-bit signless integer` for `iN`,
/// `!dialect.name type` for a dialect type.
fn summary(ty: &str) -> String {
    match ty.strip_prefix('i').and_then(|w| w.parse::<u32>().ok()) {
        Some(bits) => format!("{bits}-bit signless integer"),
        None => format!("{ty} type"),
    }
}

/// MLIR's message (its count traits') for an op that takes `n` operands or results (`what`)
/// but has `found`; `None` if `found` is `n`.
fn count_error(what: &str, n: usize, found: usize) -> Option<String> {
    if n == found {
        return None;
    }
    Some(match (what, n) {
        (_, 0) => format!("requires zero {what}s"),
        ("operand", 1) => "requires a single operand".to_string(),
        (_, 1) => format!("requires one {what}"),
        _ => format!("expected {n} {what}s, but found {found}"),
    })
}

/// What TFRT's verifier (its op definitions) says about `op` if it is a registered op that
/// does not fit its signature: the message after `'<name>' op `. `operand_types` are the types
/// of the operands' values. Checked in MLIR's order: regions, result and operand counts, the
/// attribute, then each operand's and each result's type. Ops that are not registered pass.
pub(crate) fn verify(op: &Op, operand_types: &[&Type]) -> Result<(), String> {
    let Some(sig) = signature(&op.name) else {
        return Ok(());
    };
    if !op.regions.is_empty() {
        return Err("requires zero regions".to_string());
    }
    if let Some(message) = count_error("result", sig.results.len(), op.result_types.len()) {
        return Err(message);
    }
    let found = operand_types.len();
    if sig.optional_chain {
        let required = sig.operands.len().saturating_sub(1);
        if found < required {
            return Err(format!("expected {required} or more operands, but found {found}"));
        }
        if found > sig.operands.len() {
            let group = found - required;
            return Err(format!(
                "operand group starting at #{required} requires 0 or 1 element, but found {group}"
            ));
        }
    } else if let Some(message) = count_error("operand", sig.operands.len(), found) {
        return Err(message);
    }
    if let Some((name, kind)) = sig.attr {
        match op.attrs.iter().find(|a| a.name == name) {
            None => return Err(format!("requires attribute '{name}'")),
            Some(a) if !kind.admits(&a.value) => {
                return Err(format!("attribute '{name}' failed to satisfy constraint: {}", kind.summary()));
            }
            Some(_) => {}
        }
    }
    let check = |what: &str, i: usize, have: &Type, want: &str| {
        if canonical_type(&have.0) == want {
            Ok(())
        } else {
            Err(format!("{what} #{i} must be {}, but got '{}'", summary(want), have.0))
        }
    };
    for (i, (have, want)) in operand_types.iter().zip(&sig.operands).enumerate() {
        check("operand", i, have, want)?;
    }
    for (i, (have, want)) in op.result_types.iter().zip(&sig.results).enumerate() {
        check("result", i, have, want)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Loc, NamedAttr, ValueRef};

    #[test]
    fn registered_names() {
        let sig = signature("ts.print_fixed_rank_shape.2").expect("registered");
        assert_eq!(sig.operands, ["!ts.fixed_rank_shape.2", CHAIN]);
        assert!(sig.optional_chain);
        assert_eq!(
            signature("ts.as_fixed_rank_shape.3").expect("registered").results,
            ["!ts.fixed_rank_shape.3"]
        );
        for name in [
            "tfrt_dht.create_uninitialized_tensor.ui16.0",
            "tfrt_dht.create_uninitialized_tensor.complex128.4",
            "tfrt_dht.tensor_equal.bool",
            "tfrt_dht.make_tensor.ui8",
            "tfrt_dht.print_buffer",
        ] {
            assert!(signature(name).is_some(), "{name}");
        }
        for name in [
            "ts.as_fixed_rank_shape.4",
            "ts.as_fixed_rank_shape",
            "ts.build_shapes",
            "tfrt_dht.create_uninitialized_tensor.f32.5",
            "tfrt_dht.create_uninitialized_tensor.f64.2",
            "tfrt_dht.create_uninitialized_tensor.f32",
            "tfrt_dht.tensor_equal.i8",
            "tfrt_dht.tensor_allclose.f32",
            "tfrt_dht.print_tensor.f32",
        ] {
            assert_eq!(signature(name), None, "{name}");
        }
    }

    #[test]
    fn summaries_and_canonical_types() {
        assert_eq!(summary("i1"), "1-bit signless integer");
        assert_eq!(summary("i64"), "64-bit signless integer");
        assert_eq!(summary(SHAPE), "!ts.shape type");
        assert_eq!(summary("!ts.fixed_rank_shape.3"), "!ts.fixed_rank_shape.3 type");
        assert_eq!(canonical_type("!t.tensor"), TENSOR);
        assert_eq!(canonical_type("!t.tensor2"), "!t.tensor2");
        assert_eq!(canonical_type("i32"), "i32");
    }

    /// An op named `name` with operands of `operands` and results of `results`.
    fn op_of(name: &str, operands: &[&str], results: &[&str], attrs: Vec<NamedAttr>) -> (Op, Vec<Type>) {
        let types: Vec<Type> = operands.iter().map(|t| Type(t.to_string())).collect();
        let v = ValueRef { name: "v".into(), index: None, loc: Loc::Unknown };
        let op = Op {
            name: name.into(),
            results: vec![],
            operands: vec![v; operands.len()],
            operand_types: types.clone(),
            result_types: results.iter().map(|t| Type(t.to_string())).collect(),
            attrs,
            regions: vec![],
            loc: Loc::Unknown,
        };
        (op, types)
    }

    fn check(name: &str, operands: &[&str], results: &[&str], attrs: Vec<NamedAttr>) -> Result<(), String> {
        let (op, types) = op_of(name, operands, results, attrs);
        verify(&op, &types.iter().collect::<Vec<_>>())
    }

    #[test]
    fn counts_follow_mlir_traits() {
        let none = || vec![];
        assert_eq!(
            check("ts.get_num_elements", &[], &["i64"], none()),
            Err("requires a single operand".into())
        );
        assert_eq!(
            check("ts.equal_shape", &[SHAPE], &["i1"], none()),
            Err("expected 2 operands, but found 1".into())
        );
        assert_eq!(check("ts.to_shape", &[PARTIAL_SHAPE], &[], none()), Err("requires one result".into()));
        assert_eq!(
            check("tfrt_dht.get_buffer", &[TENSOR, CHAIN], &[HOST_BUFFER], none()),
            Err("expected 2 results, but found 1".into())
        );
        assert_eq!(
            check("ts.build_unranked_partial_shape", &[CHAIN], &[PARTIAL_SHAPE], none()),
            Err("requires zero operands".into())
        );
        // The optional trailing chain.
        assert_eq!(check("ts.print_shape", &[SHAPE], &[CHAIN], none()), Ok(()));
        assert_eq!(
            check("ts.print_shape", &[], &[CHAIN], none()),
            Err("expected 1 or more operands, but found 0".into())
        );
        assert_eq!(
            check("ts.print_shape", &[SHAPE, CHAIN, CHAIN], &[CHAIN], none()),
            Err("operand group starting at #1 requires 0 or 1 element, but found 2".into())
        );
        assert_eq!(
            check("ts.print_shape", &[SHAPE, "i32"], &[CHAIN], none()),
            Err("operand #1 must be !tfrt.chain type, but got 'i32'".into())
        );
        // Not registered: anything goes.
        assert_eq!(check("tfrt_dht.tensor_allclose.f32", &[], &[], none()), Ok(()));
    }
}
