//! A bound on the arena one call needs, derived from the program without running it
//! (docs/bef.md, "Arena sizes"). It adds up every block the call could allocate, each once
//! per allocation and with its worst padding in a `FixedArena`'s first-fit heap: a sum, not
//! a peak, so it holds however the heap places and reuses blocks, for any inputs. It covers
//! calls whose kernels declare that they allocate only their results
//! ([`KernelEntry::allocating_only_results`](crate::kernel::KernelEntry::allocating_only_results),
//! with a signature naming the result types) and the calls and branches of kernels that
//! declare how they call functions ([`Calls`]: the control kernels); anything else is
//! [`Unbounded`], and is measured instead (`hostrt run --record-arena-peak`).

use core::alloc::Layout;
use core::cell::Cell;

use crate::allocator::Allocator;
use crate::allocator::arena_block_bytes;
use crate::async_value::BARE_BLOCK;
use crate::bef::BefFile;
use crate::bef::format::{KernelRecord, RegisterRecord};
use crate::chain::Chain;
use crate::diagnostic::Diagnostic;
use crate::executor::buf::{CallBuf, INLINE};
use crate::host_context::{DEFAULT_MAX_CALL_DEPTH, MAX_ONCE_FUNCTIONS, MAX_ONCE_RESULTS};
use crate::kernel::{AttrKind, AttrRef, Calls, KernelEntry, Param, Signature, TypeKey};

/// Why a function has no derived arena bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unbounded<'a> {
    /// `function` uses `kernel`, whose allocations the bound cannot see: it is not declared
    /// to allocate only its results, its signature leaves a result's type open, this use
    /// does not fit the types and counts it or its callee declares (so it could fail), or
    /// it is a loop (`tfrt.repeat.i32`, `tfrt.while`: each iteration frees what the last
    /// one allocated, which a sum of blocks cannot follow).
    Kernel {
        /// The function using it.
        function: &'a str,
        /// The kernel's name.
        kernel: &'a str,
    },
    /// `function` can call itself, directly or through others.
    Recursion {
        /// The function.
        function: &'a str,
    },
    /// `function` is native: its allocations are its own.
    Native {
        /// The function.
        function: &'a str,
    },
    /// Calls nest deeper than [`DEFAULT_MAX_CALL_DEPTH`], past which they continue in
    /// work-queue tasks.
    TooDeep,
    /// The bound does not fit the 32-bit field BEF stores it in.
    TooLarge,
    /// No function with this index.
    NoFunction,
    /// No memory for the bookkeeping (two words per function) in the program's allocator.
    NoMemory,
}

impl core::fmt::Display for Unbounded<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Unbounded::Kernel { function: "", kernel } => {
                write!(f, "a region uses '{kernel}', whose allocations are not declared")
            }
            Unbounded::Kernel { function, kernel } => {
                write!(f, "@{function} uses '{kernel}', whose allocations are not declared")
            }
            Unbounded::Recursion { function } => write!(f, "@{function} is recursive"),
            Unbounded::Native { function } => write!(f, "@{function} is a native function"),
            Unbounded::TooDeep => write!(f, "calls nest deeper than {DEFAULT_MAX_CALL_DEPTH}"),
            Unbounded::TooLarge => f.write_str("the bound exceeds 4 GiB"),
            Unbounded::NoFunction => f.write_str("no such function"),
            Unbounded::NoMemory => f.write_str("no memory to derive the bound"),
        }
    }
}

/// A function's bound so far: its bytes and its height (itself and the calls nested in it,
/// in call levels).
#[derive(Clone, Copy)]
struct Known {
    bytes: usize,
    height: u32,
}

/// Memo entries: not yet visited, and on the current call path.
const UNSEEN: Known = Known { bytes: usize::MAX, height: 0 };
const ON_PATH: Known = Known { bytes: usize::MAX, height: 1 };

/// What one function allocates itself (its frame and result placeholders), with its name
/// and kernels; kept out of [`Bounds::function_bound`], whose frame every nested call adds
/// to the stack (a `Function` copies the whole file view).
struct Own<'a> {
    name: &'a str,
    kernels: &'a [KernelRecord],
    registers: &'a [RegisterRecord],
    bytes: usize,
}

/// Derives bounds for one program: its file and the implementation of each kernel code.
struct Bounds<'p, 'a> {
    file: &'p BefFile<'a>,
    entries: &'p [KernelEntry],
}

/// `Program::call_arena_bound` (load/program.rs): the most arena bytes one call of
/// `function` of `file` allocates, whose kernel codes `entries` implement (scratch from
/// `alloc`), or why there is no bound.
pub(crate) fn call_bound<'a>(
    file: &BefFile<'a>,
    entries: &[KernelEntry],
    alloc: Allocator,
    function: u32,
) -> Result<usize, Unbounded<'a>> {
    let b = Bounds { file, entries };
    let n = b.file.num_functions();
    if function as usize >= n {
        return Err(Unbounded::NoFunction);
    }
    let mut memo = CallBuf::empty();
    if !memo.fill(alloc, n, (0..n).map(|_| Cell::new(UNSEEN))) {
        return Err(Unbounded::NoMemory);
    }
    let walk = Walk { memo: memo.as_slice(), once_fits: b.once_fits() };
    let call = b.function_bound(function, &walk, 1)?.bytes;
    // `Program::call` gathers the result slots and values in two arrays.
    let results = b.file.function(function).map_or(0, |f| f.record().num_results as usize);
    let arrays = if results > INLINE { 2 * words(results) } else { 0 };
    let total = call.saturating_add(arrays);
    if total > u32::MAX as usize { Err(Unbounded::TooLarge) } else { Ok(total) }
}

impl<'a> Bounds<'_, 'a> {
    /// The blocks one call of `fi`, running at call depth `depth` (the caller's call is 1),
    /// allocates: its frame, its result placeholders and what its kernels allocate.
    fn function_bound(&self, fi: u32, walk: &Walk<'_>, depth: u32) -> Result<Known, Unbounded<'a>> {
        let seen = walk.memo.get(fi as usize).ok_or(Unbounded::NoFunction)?;
        let known = seen.get();
        if known.bytes == UNSEEN.bytes && known.height == ON_PATH.height {
            let function = self.file.function(fi).map_or("", |f| f.name());
            return Err(Unbounded::Recursion { function });
        }
        if known.bytes != UNSEEN.bytes {
            return fits(known, depth);
        }
        if depth > DEFAULT_MAX_CALL_DEPTH {
            return Err(Unbounded::TooDeep);
        }
        let own = self.own_blocks(fi)?;
        seen.set(ON_PATH);
        let mut total = Known { bytes: own.bytes, height: 1 };
        for k in own.kernels {
            let (bytes, callees) =
                self.kernel_bound(&own, k, walk, depth).inspect_err(|_| seen.set(UNSEEN))?;
            total.bytes = total.bytes.saturating_add(bytes);
            total.height = total.height.max(callees.saturating_add(1));
        }
        total.bytes = total.bytes.min(usize::MAX - 1);
        seen.set(total);
        fits(total, depth)
    }

    /// [`Own`] of function `fi` (not inlined: see [`Own`]).
    #[inline(never)]
    fn own_blocks(&self, fi: u32) -> Result<Own<'a>, Unbounded<'a>> {
        let f = self.file.function(fi).ok_or(Unbounded::NoFunction)?;
        if f.is_native() {
            return Err(Unbounded::Native { function: f.name() });
        }
        let rec = f.record();
        let frame = super::frame_layout(rec.num_registers as usize, rec.num_kernels as usize)
            .ok_or(Unbounded::TooLarge)?;
        // A placeholder per returned register; a register returned twice shares one, so
        // one per result slot is an upper bound.
        let placeholders = (rec.num_results as usize).saturating_mul(arena_block_bytes(BARE_BLOCK));
        let bytes = arena_block_bytes(frame).saturating_add(placeholders);
        Ok(Own { name: f.name(), kernels: f.kernels(), registers: f.registers(), bytes })
    }

    /// The blocks one run of kernel `k` (of the function `f`, running at call depth
    /// `depth`) allocates: its wide operand and attribute arrays, then its results or the
    /// calls it makes, and an error value where it can fail. Also the height of the calls it
    /// makes.
    ///
    /// Type errors are ruled out, not counted: every register holds a value of its declared
    /// type (or an error, which kernels pass on without allocating) when every kernel's
    /// declared operand and result types are the ones its signature or its callee takes and
    /// gives, and the caller's arguments have the types the function declares. A use that
    /// does not fit leaves the function unbounded.
    fn kernel_bound(
        &self,
        f: &Own<'a>,
        k: &KernelRecord,
        walk: &Walk<'_>,
        depth: u32,
    ) -> Result<(usize, u32), Unbounded<'a>> {
        let file = &self.file;
        let (nargs, nres) = (k.num_args() as usize, k.num_results() as usize);
        let mut sum = 0usize;
        if nargs > INLINE || nres > INLINE {
            sum = sum.saturating_add(words(nargs + nres));
        }
        let (attrs, _) = file.kernel_attrs(k);
        if attrs.len() > INLINE {
            let array = Layout::array::<AttrRef<'_>>(attrs.len()).map_or(usize::MAX, arena_block_bytes);
            sum = sum.saturating_add(array);
        }
        let unbounded = Unbounded::Kernel { function: f.name, kernel: file.kernel_name(k.code) };
        // (The load checked every kernel code against the table.)
        let entry = self.entries.get(k.code as usize).ok_or(unbounded)?;
        let declared = |r: u32| f.registers.get(r as usize).map(|reg| reg.ty);
        if let Some(control) = entry.calls() {
            let callees = self.control_bound(control, k, &declared, walk, depth, unbounded)?;
            return Ok((sum.saturating_add(callees.bytes), callees.height));
        }
        let results = k.first_result..k.first_result.saturating_add(nres as u32);
        if !entry.allocates_only_results() {
            return Err(unbounded);
        }
        let sig = entry.signature().filter(|_| !entry.is_non_strict()).ok_or(unbounded)?;
        if !fits_signature(sig, file, k, &declared) {
            return Err(unbounded);
        }
        for (i, r) in results.enumerate() {
            let ty = sig.result_type(i).ok_or(unbounded)?;
            if declared(r).and_then(|t| declared_key(file.type_name(t))) != Some(ty) {
                return Err(unbounded);
            }
            sum = sum.saturating_add(arena_block_bytes(ty.block_layout()));
        }
        // A kernel that says it can fail: an error value shared by its results, and a
        // diagnostic boxed per result.
        if sig.may_fail() {
            sum = sum.saturating_add(error_bytes(nres));
        }
        Ok((sum, 0))
    }

    /// The largest bound among the functions control kernel `k` can run, or `unbounded`
    /// when this use could fail. A control kernel runs one of the functions it names
    /// (`tfrt.once`: at most once per request) with its operands, after the condition or
    /// index for `tfrt.if`, `tfrt.cond` and `tfrt.case`. It cannot fail when every branch it
    /// can take exists, each callee takes and returns exactly the declared types, the
    /// condition is an `i1` (the index an `i32`), and a request can remember what
    /// `tfrt.once` runs (past that it reports an error).
    fn control_bound(
        &self,
        control: Calls,
        k: &KernelRecord,
        declared: &dyn Fn(u32) -> Option<u32>,
        walk: &Walk<'_>,
        depth: u32,
        unbounded: Unbounded<'a>,
    ) -> Result<Known, Unbounded<'a>> {
        let file = &self.file;
        let operands = file.kernel_args(k);
        let (skip, selector) = match control {
            Calls::Call | Calls::Once => (0, None),
            Calls::If | Calls::Cond => (1, Some("i1")),
            Calls::Case => (1, Some("i32")),
        };
        let selected = selector.is_none_or(|want| {
            operands.first().and_then(|&r| declared(r)).is_some_and(|t| file.type_name(t) == want)
        });
        let nres = k.num_results() as usize;
        if !selected || (control == Calls::Once && (nres > MAX_ONCE_RESULTS || !walk.once_fits)) {
            return Err(unbounded);
        }
        let passed = operands.get(skip..).unwrap_or(&[]);
        let results = k.first_result..k.first_result.saturating_add(nres as u32);
        let fits = |callee: u32| {
            file.function(callee).is_some_and(|c| {
                c.arg_types().iter().map(|t| Some(*t)).eq(passed.iter().map(|&r| declared(r)))
                    && c.result_types().iter().map(|t| Some(*t)).eq(results.clone().map(declared))
            })
        };
        let mut callees = Known { bytes: 0, height: 0 };
        let mut found = 0usize;
        let mut visit = |callee: u32| {
            if !fits(callee) {
                return Err(unbounded);
            }
            found += 1;
            callees = most_of(callees, self.function_bound(callee, walk, depth + 1)?);
            Ok(())
        };
        if control == Calls::If {
            file.kernel_regions(k).iter().try_for_each(|&c| visit(c))?;
        } else {
            for a in file.kernel_attrs(k).0.iter().filter_map(|a| file.attr_ref(*a)) {
                a.functions().try_for_each(&mut visit)?;
            }
        }
        // The branches the kernel can take must exist: a missing one fails it.
        let enough = match control {
            Calls::If => found == 2,
            Calls::Cond => found >= 2,
            Calls::Call | Calls::Once | Calls::Case => found >= 1,
        };
        if enough { Ok(callees) } else { Err(unbounded) }
    }
}

/// What one derivation shares: the memo of functions' bounds, and whether a request can
/// remember the results of every function the program's `tfrt.once` kernels name.
struct Walk<'m> {
    memo: &'m [Cell<Known>],
    once_fits: bool,
}

impl Bounds<'_, '_> {
    /// Whether the program's `tfrt.once` kernels name at most [`MAX_ONCE_FUNCTIONS`]
    /// functions in all, so that no request's table of once results can fill up.
    fn once_fits(&self) -> bool {
        let mut named: heapless::Vec<u32, MAX_ONCE_FUNCTIONS> = heapless::Vec::new();
        let file = &self.file;
        for fi in 0..file.num_functions() as u32 {
            let Some(f) = file.function(fi) else { continue };
            for k in f.kernels() {
                if self.entries.get(k.code as usize).and_then(KernelEntry::calls) != Some(Calls::Once) {
                    continue;
                }
                for a in file.kernel_attrs(k).0.iter().filter_map(|a| file.attr_ref(*a)) {
                    for callee in a.functions() {
                        if !named.contains(&callee) && named.push(callee).is_err() {
                            return false;
                        }
                    }
                }
            }
        }
        true
    }
}

/// The larger bytes and the larger height of two bounds.
fn most_of(a: Known, b: Known) -> Known {
    Known { bytes: a.bytes.max(b.bytes), height: a.height.max(b.height) }
}

/// `known` for a function running at call depth `depth`, unless its deepest call nests past
/// the default limit (where calls continue in tasks, which the bound does not count).
fn fits<'a>(known: Known, depth: u32) -> Result<Known, Unbounded<'a>> {
    let deepest = depth.saturating_add(known.height).saturating_sub(1);
    if deepest > DEFAULT_MAX_CALL_DEPTH { Err(Unbounded::TooDeep) } else { Ok(known) }
}

/// Whether kernel use `k` fits `sig`, so that only a failure it declares can make it fail:
/// each argument it reads present and declared of the type it reads (more when it takes the
/// rest), as many results as it sets, only parameters that read the frame in place, and
/// each attribute it reads present and of its kind.
fn fits_signature(
    sig: &Signature,
    file: &crate::bef::BefFile<'_>,
    k: &KernelRecord,
    declared: &dyn Fn(u32) -> Option<u32>,
) -> bool {
    let (attrs, _) = file.kernel_attrs(k);
    let operands = file.kernel_args(k);
    let (mut args, mut rest, mut attr) = (0usize, false, 0usize);
    for p in sig.params() {
        match p {
            Param::Arg(want) => {
                let have = operands
                    .get(args)
                    .and_then(|&r| declared(r))
                    .and_then(|t| declared_key(file.type_name(t)));
                if have != Some(*want) {
                    return false;
                }
                args += 1;
            }
            Param::RestArgs => rest = true,
            Param::Attribute(want) => {
                let have = attrs.get(attr).and_then(|a| file.attr_ref(*a));
                let empty_array = matches!(want, AttrKind::Array(_))
                    && have.is_some_and(|a| a.kind() == AttrKind::Aggregate && a.bytes().is_empty());
                if !(empty_array || have.is_some_and(|a| a.kind() == *want)) {
                    return false;
                }
                attr += 1;
            }
            Param::ErrorHandler | Param::Other => {}
            Param::Result | Param::RestResults => return false,
        }
    }
    let nargs = operands.len();
    (nargs == args || (rest && nargs >= args)) && sig.returned() == Some(k.num_results() as usize)
}

/// The payload type of a value of the MLIR type `name`, for the types hostrt's kernels
/// declare.
fn declared_key(name: &str) -> Option<TypeKey> {
    Some(match name {
        "i1" => TypeKey::of::<bool>(),
        "i32" => TypeKey::of::<i32>(),
        "ui32" => TypeKey::of::<u32>(),
        "i64" => TypeKey::of::<i64>(),
        "ui64" => TypeKey::of::<u64>(),
        "f32" => TypeKey::of::<f32>(),
        "f64" => TypeKey::of::<f64>(),
        "!tfrt.chain" => TypeKey::of::<Chain>(),
        _ => return None,
    })
}

/// An error value and the diagnostic boxed for each of `results` results (at least one).
fn error_bytes(results: usize) -> usize {
    let diagnostic = arena_block_bytes(Layout::new::<Diagnostic>());
    arena_block_bytes(BARE_BLOCK).saturating_add(results.max(1).saturating_mul(diagnostic))
}

/// The arena bytes of one array of `n` words.
fn words(n: usize) -> usize {
    Layout::array::<usize>(n).map_or(usize::MAX, arena_block_bytes)
}

#[cfg(test)]
mod tests {
    use crate::basic_kernels::register_basic_kernels;
    use crate::kernel::KernelRegistry;
    use crate::tensor_kernels::register_tensor_kernels;

    /// Only kernels checked to allocate nothing but their results say so: the tensor
    /// kernels allocate buffers (through their context), so none of them may.
    #[test]
    fn only_checked_kernels_declare_results_only() {
        let mut tensors: KernelRegistry<512> = KernelRegistry::new();
        register_tensor_kernels(&mut tensors).unwrap();
        let flagged: heapless::Vec<&str, 8> =
            tensors.entries().iter().filter(|e| e.allocates_only_results()).map(|e| e.name).take(8).collect();
        assert!(flagged.is_empty(), "tensor kernels declared results-only: {flagged:?}");
        let mut basic: KernelRegistry<256> = KernelRegistry::new();
        register_basic_kernels(&mut basic).unwrap();
        let declared =
            |name: &str| basic.entries().iter().any(|e| e.name == name && e.allocates_only_results());
        assert!(
            ["tfrt.add.i32", "tfrt.div.i32", "tfrt.print.i32", "tfrt.merge.chains"]
                .iter()
                .all(|n| declared(n))
        );
        assert!(!["tfrt.call", "tfrt.while", "tfrt.parallel_for.i32"].iter().any(|n| declared(n)));
    }
}
