//! AST → BEF. Resolves SSA names to registers, checks types (and verifies `tfrt.if` and the
//! registered tensor-layer ops as `tfrt_opt` does), builds users lists, lays out the sections
//! of `hostrt_core::bef::format`. Output depends only on the input (deterministic).

use std::collections::HashMap;

use hostrt_core::bef::format::{
    self as f, FunctionRecord, KernelRecord, LocationRecord, RegisterRecord, StrRef, frame_bytes, section,
};

use super::encode_attr::{Attrs, Ctx, DENSE_ALIGN};
use super::tables::{Interner, Strings};
use crate::CompileError;
use crate::ast::{Attr, Loc, Module, NamedAttr, Op, Region, Type};
use crate::tensor_ops;

/// How [`write_with`] lays out a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Assign TFRT's streams (docs/execution.md, Streams and the ready queue) and store
    /// them: kernels off the current stream become work-queue tasks, as TFRT schedules them.
    /// Off, the file has no stream section and each call runs depth-first on one stream,
    /// which keeps the live state of a recursive program small (what firmware wants).
    pub streams: bool,
    /// Keep each function's and kernel's source location (docs/bef.md, "Locations"), which
    /// diagnostics name. Off, every location is NONE and the LOCATIONS section is empty:
    /// a smaller file for firmware that reports errors as codes only.
    pub locations: bool,
    /// Where dense attributes' elements start (those of at least this many bytes; smaller
    /// ones of 16 bytes or more start 16-aligned): a multiple of 16 (the default), 32 or 64
    /// bytes in the file (other values round up to one of these; docs/bef.md,
    /// "Attributes"). 64 puts a host's weights on cache lines for 512-bit loads, at up to
    /// 56 bytes of padding each.
    pub dense_align: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions { streams: true, locations: true, dense_align: DENSE_ALIGN }
    }
}

/// Compile `module` to BEF bytes with the default [`WriteOptions`]. `source` is the file
/// name and text the module was parsed from, used to quote the offending line in errors.
pub fn write(module: &Module, source: Option<(&str, &str)>) -> Result<Vec<u8>, CompileError> {
    write_with(module, source, WriteOptions::default())
}

/// The stream of each kernel of `region`, in order (its terminator excluded), as [`write`]
/// assigns them with [`WriteOptions::streams`] on (docs/execution.md, "Streams and the ready
/// queue"): `func` is the function whose body `region` is, `None` for a region inside an
/// op (whose options are the module's). For pictures of a program (`hostrt graph`).
pub fn kernel_streams(module: &Module, func: Option<&crate::ast::Func>, region: &Region) -> Vec<u32> {
    let module_options = StreamOptions::of(&module.attrs, None);
    let options = func.map_or(module_options, |f| StreamOptions::of(&f.attrs, Some(module_options)));
    super::streams::assign(region, options.threshold, options.merge_inter_dependent).kernels
}

/// Compile `module` to BEF bytes (see [`write`]) with `options`.
pub fn write_with(
    module: &Module,
    source: Option<(&str, &str)>,
    options: WriteOptions,
) -> Result<Vec<u8>, CompileError> {
    let module_options = StreamOptions::of(&module.attrs, None);
    let mut w = Writer {
        source,
        module_options,
        streams: options.streams,
        strip_locations: !options.locations,
        attrs: Attrs::with_dense_align(options.dense_align.clamp(DENSE_ALIGN, 64).next_power_of_two()),
        ..Writer::default()
    };
    for (i, func) in module.funcs.iter().enumerate() {
        if w.func_index.insert(func.name.clone(), i as u32).is_some() {
            return Err(w.err(&func.loc, format!("redefinition of symbol named '{}'", func.name)));
        }
        w.functions.push(FunctionRecord::default());
        w.root_streams.push(0);
    }
    for (i, func) in module.funcs.iter().enumerate() {
        let attrs = w.dict(&func.attrs, &func.loc)?;
        let loc = w.loc(&func.loc);
        match &func.body {
            Some(body) => {
                // The function's own options apply to its body only; regions use the module's.
                let options = StreamOptions::of(&func.attrs, Some(module_options));
                w.body(i as u32, &func.name, &func.args, body, Some(&func.results), attrs, loc, options)?;
            }
            None => {
                let sig = w.signature(func.args.iter().map(|a| &a.1), func.results.iter());
                let name = w.str_ref(&func.name);
                w.functions[i] = FunctionRecord {
                    name,
                    kind: f::FUNC_NATIVE,
                    location: loc,
                    num_args: func.args.len() as u32,
                    num_results: func.results.len() as u32,
                    signature: sig,
                    frame_bytes32: frame_bytes(4, 0, 0) as u32,
                    frame_bytes64: frame_bytes(8, 0, 0) as u32,
                    attrs,
                    ..FunctionRecord::default()
                };
            }
        }
    }
    w.module_attrs = if module.attrs.is_empty() { f::NONE } else { w.dict(&module.attrs, &Loc::Unknown)? };
    Ok(w.emit())
}

/// The location a BEF file keeps for `loc`. A record holds one name or one `file:line:col`
/// (docs/bef.md, Locations): a fused location with both keeps its position, which is what
/// compile and runtime errors report.
fn stored(loc: &Loc) -> Loc {
    match loc {
        Loc::Fused { file, line, col, .. } => Loc::FileLineCol { file: file.clone(), line: *line, col: *col },
        other => other.clone(),
    }
}

#[derive(Default)]
struct Writer<'s> {
    source: Option<(&'s str, &'s str)>,
    strings: Strings,
    types: Interner<Type>,
    kernel_names: Interner<String>,
    locations: Interner<Loc>,
    attrs: Attrs,
    functions: Vec<FunctionRecord>,
    kernels: Vec<KernelRecord>,
    pool: Vec<u32>,
    func_index: HashMap<String, u32>,
    module_attrs: u32,
    /// Stream of each function's pseudo kernel, by function index.
    root_streams: Vec<u32>,
    /// Stream of each kernel, in KERNELS order.
    kernel_streams: Vec<u32>,
    /// Whether to emit the STREAMS section.
    streams: bool,
    /// Store no locations (`WriteOptions::locations` off).
    strip_locations: bool,
    /// Stream options of the module, used for regions.
    module_options: StreamOptions,
}

/// `tfrt.cost_threshold` and `tfrt.merge_inter_dependent_streams`: the options of the stream
/// assignment (docs/execution.md, Streams and the ready queue).
#[derive(Clone, Copy, Debug, Default)]
struct StreamOptions {
    threshold: Option<i64>,
    merge_inter_dependent: bool,
}

impl StreamOptions {
    /// The options in `attrs`, each falling back to `outer` (the module's) when absent.
    fn of(attrs: &[NamedAttr], outer: Option<StreamOptions>) -> Self {
        let outer = outer.unwrap_or_default();
        let find = |name: &str| attrs.iter().find(|a| a.name == name).map(|a| &a.value);
        StreamOptions {
            threshold: match find("tfrt.cost_threshold") {
                Some(Attr::Int { value, .. }) => Some(*value),
                _ => outer.threshold,
            },
            merge_inter_dependent: match find("tfrt.merge_inter_dependent_streams") {
                Some(Attr::Bool(b)) => *b,
                Some(Attr::Unit) => true,
                _ => outer.merge_inter_dependent,
            },
        }
    }
}

/// Per-function state while compiling a body.
#[derive(Default)]
struct Body {
    reg_types: Vec<Type>,
    names: HashMap<String, u32>,
    users: Vec<Vec<u32>>,
    kernels: Vec<KernelRecord>,
}

impl<'s> Writer<'s> {
    fn err(&self, loc: &Loc, message: impl Into<String>) -> CompileError {
        match (&stored(loc), self.source) {
            (Loc::FileLineCol { file, line, col }, Some((name, text))) if file == name => {
                CompileError::at(file, text, *line, *col, message)
            }
            (Loc::FileLineCol { file, line, col }, _) => CompileError::at(file, "", *line, *col, message),
            _ => CompileError::at(self.source.map_or("<input>", |s| s.0), "", 0, 0, message),
        }
    }

    fn str_ref(&mut self, s: &str) -> StrRef {
        let (offset, len) = self.strings.add(s);
        StrRef { offset, len }
    }

    fn loc(&mut self, loc: &Loc) -> u32 {
        if self.strip_locations {
            return f::NONE;
        }
        self.locations.intern(&stored(loc))
    }

    fn pool_list(&mut self, words: impl IntoIterator<Item = u32>) -> u32 {
        let at = self.pool.len() as u32;
        self.pool.extend(words);
        at
    }

    fn signature<'t>(
        &mut self,
        args: impl Iterator<Item = &'t Type>,
        results: impl Iterator<Item = &'t Type>,
    ) -> u32 {
        let words: Vec<u32> = args.chain(results).map(|t| self.types.intern(t)).collect();
        self.pool_list(words)
    }

    fn attr(&mut self, a: &Attr, loc: &Loc) -> Result<u32, CompileError> {
        let mut ctx = Ctx { types: &mut self.types, strings: &mut self.strings, functions: &self.func_index };
        self.attrs.encode(&mut ctx, a).map_err(|m| self.err(loc, m))
    }

    fn dict(&mut self, attrs: &[NamedAttr], loc: &Loc) -> Result<u32, CompileError> {
        if attrs.is_empty() {
            return Ok(f::NONE);
        }
        self.attr(&Attr::Dict(attrs.to_vec()), loc)
    }

    /// Compile a function or region body into function slot `slot`, with the stream
    /// `options` that apply to it; returns result types.
    #[allow(clippy::too_many_arguments)]
    fn body(
        &mut self,
        slot: u32,
        name: &str,
        args: &[(String, Type)],
        region: &Region,
        declared: Option<&[Type]>,
        attrs: u32,
        loc: u32,
        options: StreamOptions,
    ) -> Result<Vec<Type>, CompileError> {
        let mut b = Body::default();
        let streams = super::streams::assign(region, options.threshold, options.merge_inter_dependent);
        for (arg, ty) in args {
            let r = b.reg_types.len() as u32;
            b.reg_types.push(ty.clone());
            b.users.push(Vec::new());
            b.names.insert(arg.clone(), r);
        }
        let Some((ret, ops)) = region.ops.split_last().filter(|(last, _)| last.name == "tfrt.return") else {
            let at = region.ops.last().map_or(Loc::Unknown, |o| o.loc.clone());
            return Err(self.err(&at, "expected tfrt.return in body"));
        };
        for op in ops {
            if op.name == "tfrt.return" {
                return Err(self.err(&op.loc, "'tfrt.return' op must be the last operation of its block"));
            }
            self.kernel(&mut b, op)?;
        }
        let result_regs = self.operands(&b, ret)?;
        let result_types: Vec<Type> = result_regs.iter().map(|r| b.reg_types[*r as usize].clone()).collect();
        if let Some(declared) = declared {
            if declared.len() != result_types.len() {
                return Err(self.err(
                    &ret.loc,
                    format!(
                        "'tfrt.return' op has {} operands, but enclosing function returns {}",
                        result_types.len(),
                        declared.len()
                    ),
                ));
            }
            for (i, (have, want)) in result_types.iter().zip(declared).enumerate() {
                if have != want {
                    return Err(self.err(
                        &ret.loc,
                        format!(
                            "type of return operand {i} ('{}') doesn't match function result type ('{}')",
                            have.0, want.0
                        ),
                    ));
                }
            }
        }
        let mut regs = Vec::with_capacity(b.reg_types.len() * 4);
        for (r, users) in b.users.iter().enumerate() {
            let returns = result_regs.iter().filter(|x| **x as usize == r).count() as u32;
            let list = self.pool_list(users.iter().copied());
            let ty = self.types.intern(&b.reg_types[r]);
            let rec = RegisterRecord {
                ty,
                num_uses: users.len() as u32 + returns,
                users: list,
                num_users: users.len() as u32,
            };
            regs.extend([rec.ty, rec.num_uses, rec.users, rec.num_users]);
        }
        let registers = self.pool_list(regs);
        let result_regs_at = self.pool_list(result_regs.iter().copied());
        let signature = self.signature(args.iter().map(|a| &a.1), result_types.iter());
        let first_kernel = self.kernels.len() as u32;
        let (nreg, nk) = (b.reg_types.len(), b.kernels.len());
        self.kernels.append(&mut b.kernels);
        self.kernel_streams.extend(streams.kernels.iter().copied().chain(std::iter::repeat(0)).take(nk));
        self.root_streams[slot as usize] = streams.root;
        let name = self.str_ref(name);
        self.functions[slot as usize] = FunctionRecord {
            name,
            kind: f::FUNC_BEF,
            location: loc,
            num_args: args.len() as u32,
            num_results: result_types.len() as u32,
            signature,
            result_regs: result_regs_at,
            num_registers: nreg as u32,
            registers,
            first_kernel,
            num_kernels: nk as u32,
            frame_bytes32: frame_bytes(4, nreg, nk) as u32,
            frame_bytes64: frame_bytes(8, nreg, nk) as u32,
            attrs,
        };
        Ok(result_types)
    }

    /// Registers of `op`'s operands, checking written operand types.
    fn operands(&self, b: &Body, op: &Op) -> Result<Vec<u32>, CompileError> {
        if !op.operand_types.is_empty() && op.operand_types.len() != op.operands.len() {
            return Err(self.err(
                &op.loc,
                format!(
                    "'{}' op has {} operands but {} operand types",
                    op.name,
                    op.operands.len(),
                    op.operand_types.len()
                ),
            ));
        }
        let mut regs = Vec::with_capacity(op.operands.len());
        for (i, v) in op.operands.iter().enumerate() {
            let key = match v.index {
                Some(ix) => format!("{}#{ix}", v.name),
                None => v.name.clone(),
            };
            let Some(r) = b.names.get(&key) else {
                let shown = if v.index.is_some() { key } else { v.name.clone() };
                return Err(self.err(&v.loc, format!("use of undeclared SSA value name '%{shown}'")));
            };
            if let Some(t) = op.operand_types.get(i)
                && *t != b.reg_types[*r as usize]
            {
                return Err(self.err(
                    &v.loc,
                    format!(
                        "use of value '%{}' expects different type than prior uses: '{}' vs '{}'",
                        v.name, t.0, b.reg_types[*r as usize].0
                    ),
                ));
            }
            regs.push(*r);
        }
        Ok(regs)
    }

    fn kernel(&mut self, b: &mut Body, op: &Op) -> Result<(), CompileError> {
        let args = self.operands(b, op)?;
        let is_if = op.name == "tfrt.if";
        let types: Vec<&Type> = args.iter().map(|r| &b.reg_types[*r as usize]).collect();
        if is_if {
            self.verify_if(op, &types)?;
        }
        // The registered tensor-layer ops (their signatures are `tensor_ops`'s table).
        tensor_ops::verify(op, &types).map_err(|m| self.err(&op.loc, format!("'{}' op {m}", op.name)))?;
        let k = b.kernels.len() as u32;
        let first_result = b.reg_types.len() as u32;
        let bound: u32 = op.results.iter().map(|g| g.count).sum();
        if !op.results.is_empty() && bound as usize != op.result_types.len() {
            return Err(self.err(
                &op.loc,
                format!(
                    "operation defines {} results but was provided {bound} to bind",
                    op.result_types.len()
                ),
            ));
        }
        if args.len() > 0xffff
            || op.result_types.len() > 0xffff
            || op.attrs.len() > 0xffff
            || op.regions.len() > 0xffff
        {
            return Err(self.err(&op.loc, "too many operands, results, attributes or regions"));
        }
        for t in &op.result_types {
            b.reg_types.push(t.clone());
            b.users.push(Vec::new());
        }
        let mut next = first_result;
        for g in &op.results {
            let mut bind = |key: String, r: u32| b.names.insert(key, r).is_some();
            let mut dup = bind(g.name.clone(), next);
            if g.count > 1 {
                for i in 0..g.count {
                    dup |= bind(format!("{}#{i}", g.name), next + i);
                }
            }
            if dup {
                return Err(self.err(&op.loc, format!("redefinition of SSA value '%{}'", g.name)));
            }
            next += g.count;
        }
        let mut attrs: Vec<&NamedAttr> = op.attrs.iter().collect();
        attrs.sort_by(|a, c| a.name.cmp(&c.name));
        let mut idx = Vec::with_capacity(attrs.len() * 3);
        let mut names = Vec::with_capacity(attrs.len() * 2);
        for a in &attrs {
            idx.push(self.attr(&a.value, &op.loc)?);
            let r = self.str_ref(&a.name);
            names.extend([r.offset, r.len]);
        }
        idx.extend(names);
        let attrs_at = self.pool_list(idx);
        let mut regions = Vec::with_capacity(op.regions.len());
        for region in &op.regions {
            let slot = self.functions.len() as u32;
            self.functions.push(FunctionRecord::default());
            self.root_streams.push(0);
            let loc = self.loc(&op.loc);
            if is_if && region.ops.last().is_none_or(|last| last.name != "tfrt.return") {
                return Err(self.err(&op.loc, "'tfrt.if' op expected tfrt.return in body"));
            }
            let results =
                self.body(slot, "", &region.args, region, None, f::NONE, loc, self.module_options)?;
            if is_if && results != op.result_types {
                let ret = region.ops.last().map_or(&op.loc, |last| &last.loc);
                return Err(self.err(ret, "'tfrt.return' op operand types don't match 'tfrt.if' result"));
            }
            regions.push(slot);
        }
        let regions_at = self.pool_list(regions.iter().copied());
        let args_at = self.pool_list(args.iter().copied());
        for a in &args {
            b.users[*a as usize].push(k);
        }
        let code = self.kernel_names.intern(&op.name);
        let location = self.loc(&op.loc);
        b.kernels.push(KernelRecord {
            code,
            location,
            counts: args.len() as u32 | (op.result_types.len() as u32) << 16,
            counts2: attrs.len() as u32 | (op.regions.len() as u32) << 16,
            args: args_at,
            first_result,
            attrs: attrs_at,
            regions: regions_at,
        });
        Ok(())
    }

    /// What TFRT's verifier of `tfrt.if` (and its op definition) checks before its regions'
    /// `tfrt.return`s, with `tfrt_opt`'s messages: two regions, an `i1` condition, and block
    /// arguments of both regions typed as the operands after the condition. `operand_types`
    /// are the types of the operands' values. (The `tfrt.return` of each region must then
    /// return the op's result types: see [`Self::kernel`].)
    fn verify_if(&self, op: &Op, operand_types: &[&Type]) -> Result<(), CompileError> {
        let fail = |message: &str| Err(self.err(&op.loc, format!("'tfrt.if' op {message}")));
        if op.regions.len() != 2 {
            return fail("expected 2 regions");
        }
        let Some((cond, args)) = operand_types.split_first() else {
            return fail("expected 1 or more operands, but found 0");
        };
        if cond.0 != "i1" {
            return fail(&format!("operand #0 must be 1-bit signless integer, but got '{}'", cond.0));
        }
        for (region, block) in op.regions.iter().zip(["then", "else"]) {
            if region.args.len() != args.len() {
                return fail(&format!("incorrect number of arguments to '{block}' block"));
            }
        }
        for (i, want) in args.iter().enumerate() {
            if op.regions.iter().any(|r| r.args[i].1 != **want) {
                return fail("operand/argument type mismatch");
            }
        }
        Ok(())
    }

    /// Lay out header, directory and sections.
    fn emit(mut self) -> Vec<u8> {
        let types: Vec<u32> = self
            .types
            .items
            .clone()
            .iter()
            .flat_map(|t| {
                let r = self.str_ref(&t.0);
                [r.offset, r.len]
            })
            .collect();
        let kernel_names: Vec<u32> = self
            .kernel_names
            .items
            .clone()
            .iter()
            .flat_map(|n| {
                let r = self.str_ref(n);
                [r.offset, r.len]
            })
            .collect();
        let locations: Vec<u32> = self
            .locations
            .items
            .clone()
            .iter()
            .flat_map(|l| {
                let rec = match l {
                    Loc::FileLineCol { file, line, col } => {
                        LocationRecord { file: self.str_ref(file), line: *line, col: *col }
                    }
                    Loc::Name(n) => LocationRecord { file: self.str_ref(n), line: f::LOC_NAME, col: 0 },
                    // Never interned: `stored` turns them into their position.
                    Loc::Fused { .. } | Loc::Unknown => LocationRecord::default(),
                };
                [rec.file.offset, rec.file.len, rec.line, rec.col]
            })
            .collect();
        let functions: Vec<u32> = self
            .functions
            .iter()
            .flat_map(|r| {
                [
                    r.name.offset,
                    r.name.len,
                    r.kind,
                    r.location,
                    r.num_args,
                    r.num_results,
                    r.signature,
                    r.result_regs,
                    r.num_registers,
                    r.registers,
                    r.first_kernel,
                    r.num_kernels,
                    r.frame_bytes32,
                    r.frame_bytes64,
                    r.attrs,
                ]
            })
            .collect();
        let kernels: Vec<u32> = self
            .kernels
            .iter()
            .flat_map(|k| {
                [k.code, k.location, k.counts, k.counts2, k.args, k.first_result, k.attrs, k.regions]
            })
            .collect();
        let words = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let mut sections: Vec<(u32, Vec<u8>)> = vec![
            (section::STRINGS, std::mem::take(&mut self.strings.bytes)),
            (section::TYPES, words(&types)),
            (section::KERNEL_NAMES, words(&kernel_names)),
            (section::ATTRIBUTES, std::mem::take(&mut self.attrs.blobs)),
            (section::ATTR_INDEX, words(&self.attrs.offsets)),
            (section::FUNCTIONS, words(&functions)),
            (section::KERNELS, words(&kernels)),
            (section::POOL, words(&self.pool)),
            (section::LOCATIONS, words(&locations)),
            (section::MODULE, words(&[self.module_attrs])),
        ];
        if self.streams {
            let streams = [self.root_streams.as_slice(), self.kernel_streams.as_slice()].concat();
            sections.push((section::STREAMS, words(&streams)));
        }
        assemble(&sections, self.attrs.dense_align.max(DENSE_ALIGN))
    }
}

/// A BEF file of `sections` (id, bytes), in this order: header, directory, then each
/// section 8-byte aligned (ATTRIBUTES `attrs_align`-byte aligned: 16 or more); the size and
/// checksum filled in.
fn assemble(sections: &[(u32, Vec<u8>)], attrs_align: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&f::MAGIC);
    out.extend_from_slice(&f::VERSION_MAJOR.to_le_bytes());
    out.extend_from_slice(&f::VERSION_MINOR.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes()); // file size, patched below
    out.extend_from_slice(&(sections.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 8]); // checksum (patched below), flags
    let dir = out.len();
    out.resize(dir + sections.len() * f::SECTION_ENTRY_SIZE, 0);
    for (i, (id, data)) in sections.iter().enumerate() {
        // Attributes start as aligned as their dense elements are within them.
        let align = if *id == section::ATTRIBUTES { attrs_align } else { f::ALIGN };
        out.resize(out.len().next_multiple_of(align), 0);
        let at = dir + i * f::SECTION_ENTRY_SIZE;
        let entry = [*id, out.len() as u32, data.len() as u32, 0];
        for (j, w) in entry.iter().enumerate() {
            out[at + 4 * j..at + 4 * j + 4].copy_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(data);
    }
    let size = out.len() as u32;
    out[8..12].copy_from_slice(&size.to_le_bytes());
    f::seal(&mut out);
    out
}

/// `bef` with section `id` set to `data` (replaced if present, else added); every other
/// section is kept as it is, unknown ones included. `bef` must be a verified BEF file (its
/// directory is trusted to lie inside it).
pub fn with_section(bef: &[u8], id: u32, data: &[u8]) -> Result<Vec<u8>, String> {
    let word = |at: usize| -> Result<u32, String> {
        bef.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or_else(|| format!("BEF truncated at byte {at}"))
    };
    let count = word(12)? as usize;
    let mut sections = Vec::new();
    // The attributes keep their alignment (as the dense elements within them do).
    let mut attrs_align = DENSE_ALIGN;
    for i in 0..count {
        let at = f::HEADER_SIZE + i * f::SECTION_ENTRY_SIZE;
        let (sid, off, size) = (word(at)?, word(at + 4)? as usize, word(at + 8)? as usize);
        let bytes = bef.get(off..off + size).ok_or_else(|| format!("section {sid} outside the file"))?;
        if sid == section::ATTRIBUTES && off > 0 {
            attrs_align = (1usize << off.trailing_zeros()).clamp(DENSE_ALIGN, 64);
        }
        if sid != id {
            sections.push((sid, bytes.to_vec()));
        }
    }
    sections.push((id, data.to_vec()));
    Ok(assemble(&sections, attrs_align))
}

/// `bef` with an ARENA section (docs/bef.md, "Arena sizes") recording, for each
/// `(function index, bytes)`, a measured need on a machine with `pointer_bytes`-byte
/// pointers; functions not listed record none.
pub fn with_arena(bef: &[u8], needs: &[(u32, usize)], pointer_bytes: u8) -> Result<Vec<u8>, String> {
    let records: Vec<ArenaRecord> =
        needs.iter().map(|&(function, bytes)| ArenaRecord { function, bytes, measured: true }).collect();
    with_arena_records(bef, &records, pointer_bytes)
}

/// One function's figure for [`with_arena_records`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaRecord {
    /// Function index.
    pub function: u32,
    /// Arena capacity in bytes.
    pub bytes: usize,
    /// A measured run (`hostrt run --record-arena-peak`) rather than a bound derived from
    /// the program.
    pub measured: bool,
}

/// `bef` with an ARENA section recording `records`, for a machine with
/// `pointer_bytes`-byte pointers; functions not listed record none.
pub fn with_arena_records(bef: &[u8], records: &[ArenaRecord], pointer_bytes: u8) -> Result<Vec<u8>, String> {
    with_section(bef, section::ARENA, &arena_words(bef, records, pointer_bytes)?)
}

/// [`with_arena_records`] into ARENA_ALT, the second record per function, for another
/// pointer size than ARENA's (`hostrt import` records a 32-bit bound there).
pub fn with_arena_alt_records(
    bef: &[u8],
    records: &[ArenaRecord],
    pointer_bytes: u8,
) -> Result<Vec<u8>, String> {
    with_section(bef, section::ARENA_ALT, &arena_words(bef, records, pointer_bytes)?)
}

/// An ARENA-shaped section's bytes: `records` for `bef`'s functions.
fn arena_words(bef: &[u8], records: &[ArenaRecord], pointer_bytes: u8) -> Result<Vec<u8>, String> {
    let functions = function_count(bef)?;
    let mut words = vec![0u32; 2 * functions];
    for &ArenaRecord { function: fi, bytes, measured } in records {
        let i = 2 * fi as usize;
        if i + 1 >= words.len() {
            return Err(format!("no function {fi}"));
        }
        words[i] =
            u32::try_from(bytes).map_err(|_| format!("function {fi}: {bytes} bytes do not fit 32 bits"))?;
        words[i + 1] = if measured { f::arena::MEASURED } else { 0 } | u32::from(pointer_bytes);
    }
    Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
}

/// Number of function records in `bef`'s FUNCTIONS section.
fn function_count(bef: &[u8]) -> Result<usize, String> {
    let word = |at: usize| bef.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let count = word(12).ok_or("BEF truncated")? as usize;
    (0..count)
        .map(|i| f::HEADER_SIZE + i * f::SECTION_ENTRY_SIZE)
        .find(|&at| word(at) == Some(section::FUNCTIONS))
        .and_then(|at| word(at + 8))
        .map(|size| size as usize / size_of::<FunctionRecord>())
        .ok_or_else(|| "BEF has no FUNCTIONS section".to_string())
}
