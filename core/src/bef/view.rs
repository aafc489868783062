//! Read access to a loaded file: functions, kernels, attributes, names and locations.
//! Everything here was verified by `load`, so lookups fall back to empty values instead of
//! failing.

use super::format::{self as f, FunctionRecord, KernelRecord, RegisterRecord, StrRef};
use super::reader::{BefFile, cast};
use crate::diagnostic::Location;
use crate::kernel::{AttrKind, AttrRef, LocRef, ScalarKind, scalar_attr_kind};

/// The arena a function needs, as recorded in the file: a
/// [`FixedArena`](crate::FixedArena) capacity from which on (at it and above it) the program
/// loads and a call of the function completes from an empty arena, on a machine with
/// `pointer_bytes`-byte pointers (docs/bef.md, "Arena sizes"). It is no bound for another
/// pointer size: block sizes, and so the padding between blocks, differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaNeed {
    /// Arena capacity in bytes.
    pub bytes: usize,
    /// A measured run (`hostrt run --record-arena-peak`), not a bound derived from the
    /// program: other inputs may need more.
    pub measured: bool,
    /// Pointer size of the machine the figure is for.
    pub pointer_bytes: u8,
}

/// A location as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BefLoc<'a> {
    /// `file:line:col`.
    FileLineCol {
        /// File name.
        file: &'a str,
        /// Line.
        line: u32,
        /// Column.
        col: u32,
    },
    /// `loc("name")`.
    Name(&'a str),
    /// No location.
    Unknown,
}

/// An attribute as stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BefAttr<'a> {
    /// No value.
    Unit,
    /// Dense elements: [`format::dense`](super::format::dense) element-type code, type index,
    /// and the payload (`u64` rank, dims, data; verified at load).
    Dense {
        /// Element-type code.
        code: u8,
        /// Type index, if recorded.
        ty: Option<u32>,
        /// The payload.
        payload: &'a [u8],
    },
    /// A scalar: [`format::scalar`](super::format::scalar) kind, type index, LE bytes.
    Scalar {
        /// Scalar kind.
        kind: u8,
        /// Type index, if recorded.
        ty: Option<u32>,
        /// The value's bytes.
        bytes: &'a [u8],
    },
    /// Text.
    String(&'a str),
    /// Homogeneous array of scalars.
    Array {
        /// Element kind.
        kind: u8,
        /// Element type index, if recorded.
        ty: Option<u32>,
        /// The elements' bytes.
        bytes: &'a [u8],
    },
    /// Nested attributes, by index.
    Aggregate(&'a [u32]),
    /// A function index.
    Function(u32),
    /// An array of function indices (`[@f, @g]`).
    Functions(&'a [u32]),
    /// A type index.
    Type(u32),
    /// Entries of 3 words: name offset, name length, attribute index.
    Dict(&'a [u32]),
}

/// A function of a loaded file.
#[derive(Clone, Copy, Debug)]
pub struct Function<'a> {
    file: BefFile<'a>,
    index: u32,
    rec: f::FunctionRecord,
}

impl<'a> BefFile<'a> {
    /// The whole file.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Number of functions (named and regions).
    pub fn num_functions(&self) -> usize {
        self.functions.len()
    }

    /// Function `index`.
    pub fn function(&self, index: u32) -> Option<Function<'a>> {
        let rec = *self.functions.get(index as usize)?;
        Some(Function { file: *self, index, rec })
    }

    /// The record of function `index` (what [`function`](Self::function) wraps, without
    /// copying the file into a [`Function`]: the executor asks per task).
    pub(crate) fn function_record(&self, index: u32) -> Option<&'a FunctionRecord> {
        self.functions.get(index as usize)
    }

    /// [`Function::registers`] of the function with record `rec`.
    pub(crate) fn registers_of(&self, rec: &FunctionRecord) -> &'a [RegisterRecord] {
        let n = rec.num_registers as usize;
        self.pool_words(rec.registers, 4 * n)
            .and_then(|w| {
                // SAFETY: u32 words reinterpreted as bytes of the same memory.
                let bytes = unsafe { core::slice::from_raw_parts(w.as_ptr().cast::<u8>(), w.len() * 4) };
                cast(bytes)
            })
            .unwrap_or(&[])
    }

    /// [`Function::result_types`] of the function with record `rec`.
    pub(crate) fn result_types_of(&self, rec: &FunctionRecord) -> &'a [u32] {
        let n = (rec.num_args + rec.num_results) as usize;
        self.pool_words(rec.signature, n).map_or(&[], |w| &w[rec.num_args as usize..])
    }

    /// [`Function::result_regs`] of the function with record `rec`.
    pub(crate) fn result_regs_of(&self, rec: &FunctionRecord) -> &'a [u32] {
        self.pool_words(rec.result_regs, rec.num_results as usize).unwrap_or(&[])
    }

    /// [`Function::kernels`] of the function with record `rec`.
    pub(crate) fn kernels_of(&self, rec: &FunctionRecord) -> &'a [KernelRecord] {
        let first = rec.first_kernel as usize;
        self.kernels.get(first..first + rec.num_kernels as usize).unwrap_or(&[])
    }

    /// [`Function::root_stream`] of function `index`.
    pub(crate) fn root_stream_of(&self, index: u32) -> u32 {
        self.streams.get(index as usize).copied().unwrap_or(0)
    }

    /// [`Function::kernel_streams`] of the function with record `rec`.
    pub(crate) fn kernel_streams_of(&self, rec: &FunctionRecord) -> &'a [u32] {
        let first = self.functions.len() + rec.first_kernel as usize;
        self.streams.get(first..first + rec.num_kernels as usize).unwrap_or(&[])
    }

    /// The arena function `index` needs, when the file records it (docs/bef.md, "Arena
    /// sizes"; `hostrt run --record-arena-peak` and `hostrt import` write it): the record for
    /// this machine's pointer size when there is one, else ARENA's.
    pub fn arena_need(&self, index: u32) -> Option<ArenaNeed> {
        self.arena_need_for(index, size_of::<usize>() as u8).or_else(|| arena_record(self.arena, index))
    }

    /// The arena function `index` needs on a machine with `pointer_bytes`-byte pointers, from
    /// ARENA or ARENA_ALT; `None` when neither records one for that pointer size.
    pub fn arena_need_for(&self, index: u32, pointer_bytes: u8) -> Option<ArenaNeed> {
        [self.arena, self.arena_alt]
            .into_iter()
            .filter_map(|words| arena_record(words, index))
            .find(|need| need.pointer_bytes == pointer_bytes)
    }

    /// The named function `name`.
    pub fn function_by_name(&self, name: &str) -> Option<Function<'a>> {
        (0..self.functions.len() as u32)
            .filter_map(|i| self.function(i))
            .find(|f| f.name() == name && !name.is_empty())
    }

    pub(crate) fn str_of(&self, r: StrRef) -> &'a str {
        self.str_checked(r).unwrap_or("")
    }

    /// A string from a verified record (no UTF-8 re-check: `load` validated every string
    /// that records reference). Out-of-range references give "".
    pub(crate) fn str_verified(&self, r: StrRef) -> &'a str {
        let start = r.offset as usize;
        match start.checked_add(r.len as usize).and_then(|end| self.strings.get(start..end)) {
            // SAFETY: `load` checked that these bytes are UTF-8 (locations, names, types).
            Some(b) => unsafe { core::str::from_utf8_unchecked(b) },
            None => "",
        }
    }

    /// Number of types.
    pub fn num_types(&self) -> usize {
        self.types.len()
    }

    /// Name of type `index`.
    pub fn type_name(&self, index: u32) -> &'a str {
        self.types.get(index as usize).map_or("", |r| self.str_verified(*r))
    }

    /// Name of kernel code `code`.
    pub fn kernel_name(&self, code: u32) -> &'a str {
        self.kernel_names.get(code as usize).map_or("", |r| self.str_verified(*r))
    }

    /// Number of kernel names.
    pub fn num_kernel_names(&self) -> usize {
        self.kernel_names.len()
    }

    /// Location `index` as stored.
    pub fn loc(&self, index: u32) -> BefLoc<'a> {
        match self.locations.get(index as usize) {
            None => BefLoc::Unknown,
            Some(l) if l.line == f::LOC_NAME => BefLoc::Name(self.str_verified(l.file)),
            Some(l) if l.file.len == 0 && l.line == 0 => BefLoc::Unknown,
            Some(l) => BefLoc::FileLineCol { file: self.str_verified(l.file), line: l.line, col: l.col },
        }
    }

    /// Location `index` as a kernel sees it (a name has line and column 0; `None` when
    /// unknown).
    pub(crate) fn loc_ref(&self, index: u32) -> Option<LocRef<'a>> {
        match self.loc(index) {
            BefLoc::FileLineCol { file, line, col } => Some(LocRef { file, line, column: col }),
            BefLoc::Name(n) => Some(LocRef { file: n, line: 0, column: 0 }),
            BefLoc::Unknown => None,
        }
    }

    /// Location `index` for a diagnostic (`None` when unknown).
    pub fn location(&self, index: u32) -> Option<Location> {
        self.loc_ref(index).map(|l| l.to_location())
    }

    /// Number of attributes.
    pub fn num_attrs(&self) -> usize {
        self.attr_index.len()
    }

    /// Attribute `index` as stored.
    pub fn attr(&self, index: u32) -> Option<BefAttr<'a>> {
        let (h, p) = self.attr_blob(index)?;
        let ty = (h.ty() != u16::MAX).then_some(u32::from(h.ty()));
        let word = || cast::<u32>(p).and_then(|w| w.first().copied()).unwrap_or(0);
        Some(match h.kind() {
            f::attr::SCALAR => BefAttr::Scalar { kind: h.scalar(), ty, bytes: p },
            f::attr::STRING => BefAttr::String(crate::utf8::to_str(p).unwrap_or("")),
            f::attr::ARRAY => BefAttr::Array { kind: h.scalar(), ty, bytes: p },
            f::attr::AGGREGATE => BefAttr::Aggregate(cast(p).unwrap_or(&[])),
            f::attr::FUNCTION if h.scalar() == f::attr::FUNCTION_ARRAY => {
                BefAttr::Functions(cast(p).unwrap_or(&[]))
            }
            f::attr::FUNCTION => BefAttr::Function(word()),
            f::attr::TYPE => BefAttr::Type(word()),
            f::attr::DICT => BefAttr::Dict(cast(p).unwrap_or(&[])),
            f::attr::DENSE => BefAttr::Dense { code: h.scalar(), ty, payload: p },
            _ => BefAttr::Unit,
        })
    }

    /// Attribute `index` as a kernel sees it (read in place). Not re-checked: `load`
    /// verified every blob for its kind (sizes, bool bytes, UTF-8, alignment), which keeps
    /// the per-kind checks out of images that only read attributes.
    pub fn attr_ref(&self, index: u32) -> Option<AttrRef<'a>> {
        let (h, p) = self.attr_blob(index)?;
        let kind = match h.kind() {
            f::attr::SCALAR => scalar_attr_kind(scalar_kind(h.scalar())?),
            f::attr::STRING => AttrKind::String,
            f::attr::ARRAY => AttrKind::Array(scalar_kind(h.scalar())?),
            f::attr::FUNCTION => AttrKind::Function,
            f::attr::TYPE => AttrKind::Type,
            f::attr::DICT => AttrKind::Dict,
            f::attr::UNIT => AttrKind::Unit,
            f::attr::DENSE => AttrKind::Dense(crate::tensor::DType::from_bef_dense(h.scalar())?),
            _ => AttrKind::Aggregate,
        };
        // SAFETY: every `BefFile` passed the verifier (`load`, or the build-time check that
        // `load_preverified`'s contract requires), which checked this blob for its kind: a
        // scalar's size and bool byte, a string's UTF-8, an array's whole elements, bool
        // bytes and 8-byte alignment.
        Some(unsafe { AttrRef::verified(kind, p) })
    }

    /// The module attribute dictionary's index, if any.
    pub fn module_attrs(&self) -> Option<u32> {
        (*self.module_attrs != f::NONE).then_some(*self.module_attrs)
    }

    /// The name of a dictionary entry or kernel attribute.
    pub fn name_at(&self, offset: u32, len: u32) -> &'a str {
        self.str_of(StrRef { offset, len })
    }

    /// Argument registers of a kernel.
    pub fn kernel_args(&self, k: &KernelRecord) -> &'a [u32] {
        self.pool_words(k.args, k.num_args() as usize).unwrap_or(&[])
    }

    /// Attribute indices of a kernel, and their names as (offset, len) word pairs.
    pub fn kernel_attrs(&self, k: &KernelRecord) -> (&'a [u32], &'a [u32]) {
        let n = k.num_attrs() as usize;
        self.pool_words(k.attrs, 3 * n).map_or((&[], &[]), |w| w.split_at(n))
    }

    /// Region function indices of a kernel.
    pub fn kernel_regions(&self, k: &KernelRecord) -> &'a [u32] {
        self.pool_words(k.regions, k.num_regions() as usize).unwrap_or(&[])
    }
}

impl<'a> Function<'a> {
    /// Index in the file.
    pub fn index(&self) -> u32 {
        self.index
    }
    /// Name (empty for a region).
    pub fn name(&self) -> &'a str {
        self.file.str_verified(self.rec.name)
    }
    /// The raw record.
    pub fn record(&self) -> &f::FunctionRecord {
        &self.rec
    }
    /// Whether this is a native declaration without a body.
    pub fn is_native(&self) -> bool {
        self.rec.kind == f::FUNC_NATIVE
    }
    /// Argument type indices.
    pub fn arg_types(&self) -> &'a [u32] {
        self.file.pool_words(self.rec.signature, self.rec.num_args as usize).unwrap_or(&[])
    }
    /// Result type indices.
    pub fn result_types(&self) -> &'a [u32] {
        self.file.result_types_of(&self.rec)
    }
    /// Registers returned by `tfrt.return`.
    pub fn result_regs(&self) -> &'a [u32] {
        self.file.result_regs_of(&self.rec)
    }
    /// The register table.
    pub fn registers(&self) -> &'a [RegisterRecord] {
        self.file.registers_of(&self.rec)
    }
    /// The kernels, in order.
    pub fn kernels(&self) -> &'a [KernelRecord] {
        self.file.kernels_of(&self.rec)
    }
    /// Stream of the function's pseudo kernel (0 when the file has no stream section).
    pub fn root_stream(&self) -> u32 {
        self.file.root_stream_of(self.index)
    }
    /// Stream of each kernel, in order; empty when the file has no stream section (then all
    /// kernels share the root's stream 0).
    pub fn kernel_streams(&self) -> &'a [u32] {
        self.file.kernel_streams_of(&self.rec)
    }
    /// Index of the function's attribute dictionary, if any.
    pub fn attrs(&self) -> Option<u32> {
        (self.rec.attrs != f::NONE).then_some(self.rec.attrs)
    }
    /// The function's location.
    pub fn loc(&self) -> BefLoc<'a> {
        self.file.loc(self.rec.location)
    }
}

/// Function `index`'s record in an ARENA-shaped section's `words`, when it records one.
fn arena_record(words: &[u32], index: u32) -> Option<ArenaNeed> {
    let i = 2 * index as usize;
    let (bytes, flags) = (*words.get(i)?, *words.get(i + 1)?);
    (bytes != 0).then_some(ArenaNeed {
        bytes: bytes as usize,
        measured: flags & f::arena::MEASURED != 0,
        pointer_bytes: (flags & f::arena::POINTER_BYTES_MASK) as u8,
    })
}

/// The kind of BEF scalar code `code` (docs/bef.md, "Attributes"), if it is one.
const fn scalar_kind(code: u8) -> Option<ScalarKind> {
    use f::scalar as s;
    Some(match code {
        s::BOOL => ScalarKind::Bool,
        s::I8 => ScalarKind::I8,
        s::I32 => ScalarKind::I32,
        s::I64 => ScalarKind::I64,
        s::F32 => ScalarKind::F32,
        s::F64 => ScalarKind::F64,
        _ => return None,
    })
}
