//! From lowered steps to a hostrt program: plan the arena, resolve regions to offsets, and
//! write the `@main` function (docs/models.md).

use std::collections::BTreeMap;

use hostrt_compiler::ast::{Attr, Func, Loc, Module, NamedAttr, Op, Region, ResultGroup, Type, ValueRef};

use crate::error::ImportError;
use crate::plan::{self, Buffer};
use crate::tflite::lower::{AttrSpec, Lowered, StepKind};
use crate::tflite::model::Graph;

/// What the importer did, for `hostrt import` to print and tests to check.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Per model operator name: how many, and the kernel(s) chosen.
    pub ops: BTreeMap<String, (usize, String)>,
    /// Bytes of weights and other constants (read in place from the program).
    pub weight_bytes: usize,
    /// The planned activation arena, in bytes (the same on 32- and 64-bit targets).
    pub arena_bytes: usize,
    /// The sum of every arena tensor's size (what the arena would be without reuse).
    pub unplanned_bytes: usize,
    /// Kernels in the program.
    pub kernels: usize,
    /// The model's outputs, which `@main` returns as tensors, in bytes.
    pub output_bytes: usize,
    /// The program's kernels in order, with the arena tensors each reads and writes
    /// (indices into `tensors`): what `hostrt graph` draws.
    pub steps: Vec<PlannedStep>,
    /// Every buffer of the activation arena: its place and its lifetime in steps.
    pub tensors: Vec<PlannedTensor>,
}

/// A kernel of an imported program, as planned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlannedStep {
    /// The kernel (`nn.conv_2d.i8`).
    pub kernel: String,
    /// Its location: the model's layer (`op#3 CONV_2D:conv1/Relu`), `input#0:...`.
    pub loc: String,
    /// The buffers it reads (indices into [`Report::tensors`]).
    pub reads: Vec<usize>,
    /// The buffer it writes, if any.
    pub writes: Option<usize>,
}

/// A buffer of the activation arena.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlannedTensor {
    /// The model tensor's name, or `scratch of step N` for a kernel's scratch space.
    pub name: String,
    /// Element type and shape (`i8 [1, 25, 5, 64]`); empty for scratch.
    pub ty: String,
    /// Bytes, and where the plan put them.
    pub bytes: usize,
    pub offset: usize,
    /// The first and last steps that use it (inclusive).
    pub first: usize,
    pub last: usize,
}

const TENSOR: &str = "!tfrt_tensor.tensor";
const CHAIN: &str = "!tfrt.chain";
const ARENA: &str = "!nn.arena";

fn value(name: &str) -> ValueRef {
    ValueRef { name: name.into(), index: None, loc: Loc::Unknown }
}

fn op(
    name: &str,
    result: Option<&str>,
    operands: Vec<ValueRef>,
    types: (Vec<&str>, Vec<&str>),
    attrs: Vec<NamedAttr>,
    loc: Loc,
) -> Op {
    Op {
        name: name.into(),
        results: result.map(|r| ResultGroup { name: r.into(), count: 1 }).into_iter().collect(),
        operands,
        operand_types: types.0.into_iter().map(|t| Type(t.into())).collect(),
        result_types: types.1.into_iter().map(|t| Type(t.into())).collect(),
        attrs,
        regions: vec![],
        loc,
    }
}

/// Plans `lowered`'s arena and writes the program: `@main` takes the model's inputs and
/// returns its outputs, as tensors.
pub fn build(g: &Graph<'_>, lowered: &Lowered) -> Result<(Module, Report), ImportError> {
    // Lifetimes of every arena tensor (alias root), in steps.
    let mut life: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    for (i, s) in lowered.steps.iter().enumerate() {
        for t in s.tensors() {
            let e = life.entry(t).or_insert((i, i));
            e.0 = e.0.min(i);
            e.1 = e.1.max(i);
        }
    }
    let roots: Vec<usize> = life.keys().copied().collect();
    let mut buffers: Vec<Buffer> = roots
        .iter()
        .map(|t| Buffer { size: g.tensors[*t].bytes(), first: life[t].0, last: life[t].1 })
        .collect();
    // Step-local scratch buffers (step, attribute), placed after the tensors: alive for
    // their step only.
    let mut scratch = Vec::new();
    for (i, s) in lowered.steps.iter().enumerate() {
        for (k, (_, spec)) in s.attrs.iter().enumerate() {
            if let AttrSpec::Scratch(size) = spec {
                scratch.push((i, k));
                buffers.push(Buffer { size: *size, first: i, last: i });
            }
        }
    }
    let p = plan::plan(&buffers);
    debug_assert!(plan::is_valid(&buffers, &p));
    let offset_of: BTreeMap<usize, usize> = roots.iter().copied().zip(p.offsets.iter().copied()).collect();
    let scratch_at: BTreeMap<(usize, usize), usize> =
        scratch.into_iter().zip(p.offsets[roots.len()..].iter().copied()).collect();
    let checked = |o: usize| {
        i64::try_from(o)
            .ok()
            .filter(|&o| o <= i64::from(i32::MAX))
            .ok_or_else(|| ImportError::model("the arena exceeds 2 GiB".into()))
    };
    let at = |t: usize| -> Result<i64, ImportError> {
        checked(
            offset_of
                .get(&t)
                .copied()
                .ok_or_else(|| ImportError::model(format!("internal: tensor {t} has no arena slot")))?,
        )
    };
    let int = |v: i64| Attr::Int { value: v, ty: Type("i32".into()) };

    // The plan as `hostrt graph` shows it: buffers in planning order (tensors, then scratch).
    let mut tensors: Vec<PlannedTensor> = roots
        .iter()
        .zip(&p.offsets)
        .map(|(&t, &offset)| {
            let info = &g.tensors[t];
            PlannedTensor {
                name: info.name.clone(),
                ty: format!("{} {:?}", info.elem.name(), info.shape),
                bytes: info.bytes(),
                offset,
                first: life[&t].0,
                last: life[&t].1,
            }
        })
        .collect();
    for (&(step, _), &offset) in &scratch_at {
        let bytes = buffers[tensors.len()].size;
        let name = format!("scratch of step {step}");
        tensors.push(PlannedTensor { name, ty: String::new(), bytes, offset, first: step, last: step });
    }
    let index_of: BTreeMap<usize, usize> = roots.iter().enumerate().map(|(i, &t)| (t, i)).collect();
    let steps = lowered
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let writes = s.write.and_then(|t| index_of.get(&t).copied());
            let mut reads: Vec<usize> = s
                .tensors()
                .filter(|t| Some(*t) != s.write)
                .filter_map(|t| index_of.get(&t).copied())
                .collect();
            reads.extend(
                scratch_at.keys().zip(roots.len()..).filter(|((step, _), _)| *step == i).map(|(_, b)| b),
            );
            reads.sort_unstable();
            reads.dedup();
            PlannedStep { kernel: s.kernel.clone(), loc: s.loc.clone(), reads, writes }
        })
        .collect();
    let mut report = Report {
        steps,
        tensors,
        arena_bytes: p.size,
        unplanned_bytes: buffers.iter().map(|b| b.size).sum(),
        output_bytes: g.outputs.iter().map(|&t| g.tensors[t].bytes()).sum(),
        ..Report::default()
    };
    let mut ops = vec![
        op(
            "nn.arena",
            Some("arena"),
            vec![],
            (vec![], vec![ARENA]),
            vec![NamedAttr {
                name: "size".into(),
                value: Attr::Int { value: p.size as i64, ty: Type("i64".into()) },
            }],
            Loc::Name("arena".into()),
        ),
        op("tfrt.new.chain", Some("c"), vec![], (vec![], vec![CHAIN]), vec![], Loc::Unknown),
    ];
    let mut chain = "c".to_string();
    let mut counted = std::collections::HashSet::new();
    let mut results = Vec::new();
    for (i, s) in lowered.steps.iter().enumerate() {
        let mut attrs = Vec::new();
        for (k, (name, spec)) in s.attrs.iter().enumerate() {
            let value = match spec {
                AttrSpec::Value(v) => v.clone(),
                AttrSpec::Offset(t) => Attr::Array(vec![int(at(*t)?)]),
                AttrSpec::Strided { tensor, start, strides } => {
                    let o = at(*tensor)? + start;
                    if i32::try_from(o).is_err() {
                        return Err(ImportError::model(format!(
                            "internal: offset {o} of {} is not an i32",
                            s.loc
                        )));
                    }
                    let mut v = vec![int(o)];
                    v.extend(strides.iter().map(|&s| int(s.into())));
                    Attr::Array(v)
                }
                AttrSpec::Region { tensor, dims } => {
                    let mut v = vec![int(at(*tensor)?)];
                    v.extend(dims.iter().map(|&d| int(d as i64)));
                    Attr::Array(v)
                }
                AttrSpec::Scratch(size) => {
                    let o = scratch_at.get(&(i, k)).copied().ok_or_else(|| {
                        ImportError::model(format!("internal: the scratch of {} has no arena slot", s.loc))
                    })?;
                    Attr::Array(vec![int(checked(o)?), int(checked(*size)?)])
                }
            };
            if let Attr::Dense(d) = &value {
                report.weight_bytes += d.data.len();
            }
            attrs.push(NamedAttr { name: name.clone(), value });
        }
        let loc = Loc::Name(s.loc.clone());
        let mut operands = vec![value("arena"), value(&chain)];
        let mut operand_types = vec![ARENA, CHAIN];
        if let StepKind::Input(n) = s.kind {
            operands.push(value(&format!("in{n}")));
            operand_types.push(TENSOR);
        }
        // Outputs end the chain in a result tensor; inputs and layers continue it.
        let (result, result_type) = match s.kind {
            StepKind::Output(n) => (format!("out{n}"), TENSOR),
            StepKind::Input(_) | StepKind::Layer => (format!("c{i}"), CHAIN),
        };
        ops.push(op(&s.kernel, Some(&result), operands, (operand_types, vec![result_type]), attrs, loc));
        if result_type == TENSOR {
            results.push(result);
        } else {
            chain = result;
        }
        if let Some(m) = s.op {
            let name = &g.ops[m].name;
            let e = report.ops.entry(name.clone()).or_insert((0, String::new()));
            // An operator may lower to several kernels (PAD: a fill and a copy).
            // A translated node counts once however many operators it became.
            if counted.insert(g.ops[m].node.as_ref().map_or(m, |n| n.0)) {
                e.0 += 1;
            }
            if !e.1.split(", ").any(|k| k == s.kernel) {
                if !e.1.is_empty() {
                    e.1.push_str(", ");
                }
                e.1.push_str(&s.kernel);
            }
        }
    }
    report.kernels = ops.len();
    ops.push(op(
        "tfrt.return",
        None,
        results.iter().map(|r| value(r)).collect(),
        (results.iter().map(|_| TENSOR).collect(), vec![]),
        vec![],
        Loc::Unknown,
    ));
    let main = Func {
        name: "main".into(),
        args: (0..g.inputs.len()).map(|n| (format!("in{n}"), Type(TENSOR.into()))).collect(),
        results: results.iter().map(|_| Type(TENSOR.into())).collect(),
        attrs: vec![],
        body: Some(Region { args: vec![], ops }),
        loc: Loc::Name("main".into()),
    };
    let module = Module {
        attrs: vec![NamedAttr {
            name: "nn.arena_bytes".into(),
            value: Attr::Int { value: p.size as i64, ty: Type("i64".into()) },
        }],
        funcs: vec![main],
    };
    Ok((module, report))
}
