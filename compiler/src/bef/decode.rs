//! Verified BEF → AST (the disassembler's first half; the text printer is the second).
//! Registers become SSA names `r<N>`; the results of a kernel with several results are one
//! group named after its first register, as MLIR's printer numbers them (`%r4:2`, used as
//! `%r4#0`, `%r4#1`); regions are decoded inside the op that owns them.

use hostrt_core::bef::format::scalar;
use hostrt_core::bef::{BefAttr, BefFile, BefLoc, Function};

use crate::ast::{Attr, Func, Loc, Module, NamedAttr, Op, Region, ResultGroup, Type, ValueRef};

/// Deepest region nesting the decoder follows (the parser accepts less, so only crafted
/// files reach it).
pub const MAX_REGION_DEPTH: usize = 256;

/// Rebuild the module of a loaded file. Fails only on regions nested deeper than
/// [`MAX_REGION_DEPTH`].
pub fn decode(file: &BefFile<'_>) -> Result<Module, String> {
    let mut m =
        Module { attrs: file.module_attrs().map(|a| dict(file, a)).unwrap_or_default(), funcs: Vec::new() };
    for f in (0..file.num_functions() as u32).filter_map(|i| file.function(i)) {
        if f.name().is_empty() {
            continue; // a region: decoded inside its op
        }
        m.funcs.push(Func {
            name: f.name().to_string(),
            args: f.arg_types().iter().enumerate().map(|(i, t)| (format!("r{i}"), ty(file, *t))).collect(),
            results: f.result_types().iter().map(|t| ty(file, *t)).collect(),
            attrs: f.attrs().map(|a| dict(file, a)).unwrap_or_default(),
            body: if f.is_native() { None } else { Some(region(file, &f, 0)?) },
            loc: loc(f.loc()),
        });
    }
    Ok(m)
}

fn ty(file: &BefFile<'_>, t: u32) -> Type {
    Type(file.type_name(t).to_string())
}

fn loc(l: BefLoc<'_>) -> Loc {
    match l {
        BefLoc::FileLineCol { file, line, col } => Loc::FileLineCol { file: file.to_string(), line, col },
        BefLoc::Name(n) => Loc::Name(n.to_string()),
        BefLoc::Unknown => Loc::Unknown,
    }
}

/// How the values of one function or region are used, by register: the register that names
/// its group (the kernel's first result) and its index in the group (`None` for arguments and
/// the results of single-result kernels).
struct Names(Vec<(u32, Option<u32>)>);

impl Names {
    /// The use of register `r`.
    fn value(&self, r: u32) -> ValueRef {
        let (first, index) = self.0.get(r as usize).copied().unwrap_or((r, None));
        ValueRef { name: format!("r{first}"), index, loc: Loc::Unknown }
    }

    /// Binds the `n` results of a kernel, starting at register `first`, and returns their
    /// result groups: one group of `n` when `n > 1`.
    fn bind(&mut self, first: u32, n: u32) -> Vec<ResultGroup> {
        for i in 0..n {
            if let Some(slot) = self.0.get_mut(first.saturating_add(i) as usize) {
                *slot = (first, (n > 1).then_some(i));
            }
        }
        if n == 0 { Vec::new() } else { vec![ResultGroup { name: format!("r{first}"), count: n }] }
    }
}

fn region(file: &BefFile<'_>, f: &Function<'_>, depth: usize) -> Result<Region, String> {
    if depth > MAX_REGION_DEPTH {
        return Err(format!("regions nested deeper than {MAX_REGION_DEPTH}"));
    }
    let regs = f.registers();
    let reg_ty = |r: u32| regs.get(r as usize).map_or(Type(String::new()), |rec| ty(file, rec.ty));
    let args = (0..f.record().num_args).map(|i| (format!("r{i}"), reg_ty(i))).collect();
    let mut ops = Vec::with_capacity(f.kernels().len() + 1);
    let mut values = Names((0..regs.len() as u32).map(|r| (r, None)).collect());
    for k in f.kernels() {
        let operands = file.kernel_args(k);
        let mut regions = Vec::with_capacity(k.num_regions() as usize);
        for rf in file.kernel_regions(k).iter().filter_map(|fi| file.function(*fi)) {
            regions.push(region(file, &rf, depth + 1)?);
        }
        let (attr_idx, names) = file.kernel_attrs(k);
        let results = k.first_result..k.first_result + k.num_results();
        ops.push(Op {
            name: file.kernel_name(k.code).to_string(),
            results: values.bind(k.first_result, k.num_results()),
            operands: operands.iter().map(|r| values.value(*r)).collect(),
            operand_types: operands.iter().map(|r| reg_ty(*r)).collect(),
            result_types: results.map(reg_ty).collect(),
            attrs: attr_idx
                .iter()
                .zip(names.chunks_exact(2))
                .map(|(a, n)| NamedAttr { name: file.name_at(n[0], n[1]).to_string(), value: attr(file, *a) })
                .collect(),
            regions,
            loc: loc(file.loc(k.location)),
        });
    }
    ops.push(Op {
        name: "tfrt.return".to_string(),
        results: Vec::new(),
        operands: f.result_regs().iter().map(|r| values.value(*r)).collect(),
        operand_types: f.result_regs().iter().map(|r| reg_ty(*r)).collect(),
        result_types: Vec::new(),
        attrs: Vec::new(),
        regions: Vec::new(),
        loc: Loc::Unknown,
    });
    Ok(Region { args, ops })
}

fn dict(file: &BefFile<'_>, index: u32) -> Vec<NamedAttr> {
    match attr(file, index) {
        Attr::Dict(entries) => entries,
        _ => Vec::new(),
    }
}

/// One scalar element of kind `kind` and type `t` from little-endian `b`.
fn scalar_attr(file: &BefFile<'_>, kind: u8, t: Option<u32>, b: &[u8]) -> Attr {
    let name = t.map(|t| file.type_name(t).to_string());
    let unsigned = name.as_deref().is_some_and(|n| n.starts_with("ui"));
    let int = |value: i64| Attr::Int { value, ty: Type(name.clone().unwrap_or_else(|| "i64".into())) };
    let mut w = [0u8; 8];
    w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    match kind {
        scalar::BOOL if name.is_none() => Attr::Bool(b.first() == Some(&1)),
        scalar::BOOL => int(i64::from(b.first().copied().unwrap_or(0))),
        scalar::I8 if unsigned => int(i64::from(w[0])),
        scalar::I8 => int(i64::from(w[0] as i8)),
        scalar::I32 if unsigned => int(i64::from(u32::from_le_bytes([w[0], w[1], w[2], w[3]]))),
        scalar::I32 => int(i64::from(i32::from_le_bytes([w[0], w[1], w[2], w[3]]))),
        scalar::I64 => int(i64::from_le_bytes(w)),
        scalar::F32 => Attr::Float {
            value: f64::from(f32::from_le_bytes([w[0], w[1], w[2], w[3]])),
            ty: Type(name.unwrap_or_else(|| "f32".into())),
        },
        _ => Attr::Float { value: f64::from_le_bytes(w), ty: Type(name.unwrap_or_else(|| "f64".into())) },
    }
}

fn attr(file: &BefFile<'_>, index: u32) -> Attr {
    match file.attr(index) {
        None | Some(BefAttr::Unit) => Attr::Unit,
        Some(BefAttr::Scalar { kind, ty, bytes }) => scalar_attr(file, kind, ty, bytes),
        Some(BefAttr::String(s)) => Attr::String(s.to_string()),
        Some(BefAttr::Array { kind, ty, bytes }) => {
            let n = scalar::size(kind).max(1);
            Attr::Array(bytes.chunks_exact(n).map(|b| scalar_attr(file, kind, ty, b)).collect())
        }
        Some(BefAttr::Aggregate(items)) => Attr::Array(items.iter().map(|i| attr(file, *i)).collect()),
        Some(BefAttr::Function(fi)) => {
            Attr::Symbol(file.function(fi).map(|f| f.name().to_string()).unwrap_or_default())
        }
        Some(BefAttr::Functions(fs)) => Attr::Array(
            fs.iter()
                .map(|fi| Attr::Symbol(file.function(*fi).map(|f| f.name().to_string()).unwrap_or_default()))
                .collect(),
        ),
        Some(BefAttr::Type(t)) => Attr::Type(ty(file, t)),
        Some(BefAttr::Dense { code, payload, .. }) => {
            crate::dense::decode(code, payload).map_or(Attr::Unit, |d| Attr::Dense(Box::new(d)))
        }
        Some(BefAttr::Dict(entries)) => Attr::Dict(
            entries
                .chunks_exact(3)
                .map(|e| NamedAttr { name: file.name_at(e[0], e[1]).to_string(), value: attr(file, e[2]) })
                .collect(),
        ),
    }
}
