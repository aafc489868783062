//! A bound on the arena one call needs, derived from the program without running it
//! (docs/bef.md, "Arena sizes"). It adds up every block the call could allocate, each once
//! per allocation and with its worst padding in a `FixedArena`'s first-fit heap: a sum, not
//! a peak, so it holds however the heap places and reuses blocks, for any inputs. It covers
//! calls whose kernels declare what they allocate (typed kernels that read only arguments
//! and attributes, and the calls and branches of `basic_kernels::control`); anything else
//! is [`Unbounded`], and is measured instead (`hostrt run --record-arena-peak`).

use core::alloc::Layout;
use core::cell::Cell;

use super::Program;
use super::buf::{CallBuf, INLINE};
use crate::allocator::arena_block_bytes;
use crate::async_value::BARE_BLOCK;
use crate::basic_kernels::{control, print};
use crate::bef::format::KernelRecord;
use crate::diagnostic::Diagnostic;
use crate::host_context::DEFAULT_MAX_CALL_DEPTH;
use crate::kernel::{AttrRef, KernelEntry, Param};

/// Why a function has no derived arena bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unbounded<'a> {
    /// `function` uses `kernel`, whose allocations the bound cannot see: it has no
    /// signature, takes the execution context, sets results of undeclared types, or is a
    /// loop (`tfrt.repeat.i32`, `tfrt.while`: each iteration frees what the last one
    /// allocated, which a sum of blocks cannot follow).
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
    /// No memory for the bookkeeping (a word per function) in the program's allocator.
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
            Unbounded::NoMemory => f.write_str("no memory to derive the bound"),
        }
    }
}

/// Memo entries: not yet visited, and on the current call path.
const UNSEEN: usize = usize::MAX;
const ON_PATH: usize = usize::MAX - 1;

impl<'a> Program<'a> {
    /// The most arena bytes one call of `function` allocates, as [`call`](Self::call) and the
    /// test driver make it, from a host whose queue runs one task at a time without stream
    /// tasks (firmware, `SingleThreadedWorkQueue`) and whose call depth limit is the
    /// default: every block the call and its nested calls can allocate, each with its worst
    /// padding (docs/bef.md, "Arena sizes"). The program's own tables (the load) come on
    /// top. `Err` says why there is no bound.
    ///
    /// ```
    /// use hostrt_core::basic_kernels::integer;
    /// use hostrt_core::allocator::HostAllocator;
    /// use hostrt_core::executor::Program;
    /// use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
    ///
    /// # let text = "func.func @add() -> i32 {\n %a = tfrt.constant.i32 2\n %b = tfrt.add.i32 %a, %a\n tfrt.return %b : i32\n}\n";
    /// # let bef = hostrt_compiler::compile("add.mlir", text, Default::default()).unwrap();
    /// # let bef = hostrt_std::AlignedBytes::new(&bef);
    /// # let bytes = bef.as_bytes();
    /// static ARENA: FixedArena = FixedArena::empty();
    /// static QUEUE: SingleThreadedWorkQueue = SingleThreadedWorkQueue::new();
    /// ARENA.init(hostrt_core::static_buffer!(16 * 1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    /// let registry = KernelRegistry::<2>::with_entries(&[integer::CONSTANT_I32, integer::ADD_I32]).unwrap();
    /// let host = HostContext::new(alloc, &QUEUE);
    /// let program = Program::load(bytes, &registry, &host).unwrap();
    /// let add = program.function_index("add").unwrap();
    /// let bound = program.call_arena_bound(add).unwrap();
    ///
    /// // The call allocates no more than that (the program's tables were there before).
    /// let before = ARENA.stats().unwrap().in_use;
    /// let results = program.call(&host, "add", &[]).unwrap();
    /// assert!(ARENA.stats().unwrap().peak - before <= bound);
    /// # drop(results);
    /// ```
    pub fn call_arena_bound(&self, function: u32) -> Result<usize, Unbounded<'a>> {
        let n = self.file.num_functions();
        let mut memo = CallBuf::empty();
        if !memo.fill(self.alloc, n, (0..n).map(|_| Cell::new(UNSEEN))) {
            return Err(Unbounded::NoMemory);
        }
        let call = self.function_bound(function, memo.as_slice(), 0)?;
        // `Program::call` gathers the result slots and values in two arrays.
        let results = self.file.function(function).map_or(0, |f| f.record().num_results as usize);
        let arrays = if results > INLINE { 2 * words(results) } else { 0 };
        let total = call.saturating_add(arrays);
        if total > u32::MAX as usize { Err(Unbounded::TooLarge) } else { Ok(total) }
    }

    /// The blocks one call of `fi` allocates: its frame, its result placeholders and what its
    /// kernels allocate.
    fn function_bound(&self, fi: u32, memo: &[Cell<usize>], depth: u32) -> Result<usize, Unbounded<'a>> {
        let Some(f) = self.file.function(fi) else { return Ok(0) };
        let seen = memo.get(fi as usize).ok_or(Unbounded::TooLarge)?;
        match seen.get() {
            ON_PATH => return Err(Unbounded::Recursion { function: f.name() }),
            UNSEEN => {}
            known => return Ok(known),
        }
        if f.is_native() {
            return Err(Unbounded::Native { function: f.name() });
        }
        if depth >= DEFAULT_MAX_CALL_DEPTH {
            return Err(Unbounded::TooDeep);
        }
        seen.set(ON_PATH);
        let rec = f.record();
        let frame = super::frame::layout(rec.num_registers as usize, rec.num_kernels as usize)
            .ok_or(Unbounded::TooLarge)?;
        let mut sum = arena_block_bytes(frame);
        let returned = f.result_regs();
        for (i, r) in returned.iter().enumerate() {
            if !returned[..i].contains(r) {
                sum = sum.saturating_add(arena_block_bytes(BARE_BLOCK));
            }
        }
        for k in f.kernels() {
            let cost = self.kernel_bound(f.name(), k, memo, depth).inspect_err(|_| seen.set(UNSEEN))?;
            sum = sum.saturating_add(cost);
        }
        seen.set(sum.min(ON_PATH - 1));
        Ok(sum)
    }

    /// The blocks one run of kernel `k` (of `function`) allocates: its wide operand and attribute arrays, then its results or the calls it
    /// makes.
    fn kernel_bound(
        &self,
        function: &'a str,
        k: &KernelRecord,
        memo: &[Cell<usize>],
        depth: u32,
    ) -> Result<usize, Unbounded<'a>> {
        let file = &self.file;
        let (nargs, nres) = (k.num_args() as usize, k.num_results() as usize);
        let mut sum = 0usize;
        if nargs > INLINE || nres > INLINE {
            sum += words(nargs + nres);
        }
        let (attrs, _) = file.kernel_attrs(k);
        if attrs.len() > INLINE {
            sum += Layout::array::<AttrRef<'_>>(attrs.len()).map_or(usize::MAX, arena_block_bytes);
        }
        let entry = self.entry(k.code);
        let unbounded = Unbounded::Kernel { function, kernel: file.kernel_name(k.code) };
        let is = |e: &KernelEntry| core::ptr::fn_addr_eq(entry.func(), e.func());
        if is(&control::CALL) || is(&control::COND) || is(&control::CASE) || is(&control::ONCE) {
            // One of the named functions runs (`tfrt.once`: at most once per request); its
            // placeholders are this kernel's results.
            let mut most = 0;
            for a in attrs.iter().filter_map(|a| file.attr_ref(*a)) {
                most = most.max(self.most_of(a.functions(), memo, depth)?);
            }
            return Ok(sum.saturating_add(most));
        }
        if is(&control::IF) {
            let branches = file.kernel_regions(k).iter().copied();
            return Ok(sum.saturating_add(self.most_of(branches, memo, depth)?));
        }
        let Some(sig) = entry.signature().filter(|s| s.is_known() && !entry.is_non_strict()) else {
            return Err(unbounded);
        };
        // Arguments and attributes are read in place; anything that reaches the host could
        // allocate anything, except the print kernels, which use their context to print.
        let prints = print::ALL.iter().any(is);
        let reads_only = |p: &Param| {
            matches!(p, Param::Arg(_) | Param::RestArgs | Param::Attribute | Param::ErrorHandler)
                || (prints && *p == Param::Other)
        };
        if !sig.params().iter().all(reads_only) {
            return Err(unbounded);
        }
        for i in 0..nres {
            let ty = sig.result_type(i).ok_or(unbounded)?;
            sum = sum.saturating_add(arena_block_bytes(ty.block_layout()));
        }
        if sig.may_fail() {
            // An error value shared by the results, and the diagnostic each error result
            // boxes.
            let diagnostic = arena_block_bytes(Layout::new::<Diagnostic>());
            sum = sum.saturating_add(arena_block_bytes(BARE_BLOCK) + nres.max(1) * diagnostic);
        }
        Ok(sum)
    }

    /// The largest bound of the functions `fs`, called from depth `depth`.
    fn most_of(
        &self,
        fs: impl Iterator<Item = u32>,
        memo: &[Cell<usize>],
        depth: u32,
    ) -> Result<usize, Unbounded<'a>> {
        let mut most = 0usize;
        for callee in fs {
            most = most.max(self.function_bound(callee, memo, depth + 1)?);
        }
        Ok(most)
    }
}

/// The arena bytes of one array of `n` words.
fn words(n: usize) -> usize {
    Layout::array::<usize>(n).map_or(usize::MAX, arena_block_bytes)
}
