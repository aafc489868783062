//! `Program`: a loaded BEF file with its kernel names resolved to function pointers once.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::allocator::Allocator;
use crate::bef::{ArenaNeed, BefError, BefErrorKind, BefFile};
use crate::diagnostic::Diagnostic;
use crate::kernel::{KernelEntry, KernelLookup};

#[cfg(feature = "proved-types")]
use super::typing;

/// A verified BEF file plus a table (in allocator memory) mapping each kernel code to its
/// implementation, and one mapping each native function declaration to the registry entry
/// of the same name (docs/execution.md). Dropping it frees the tables.
pub struct Program<'a> {
    pub(crate) file: BefFile<'a>,
    table: NonNull<KernelEntry>,
    len: usize,
    /// One slot per function when the file declares native functions.
    natives: Option<NonNull<Option<KernelEntry>>>,
    alloc: Allocator,
    /// The file's bytes when they live for the whole program run ([`Program::load_static`]):
    /// kernels may then borrow attribute data instead of copying it.
    static_bytes: Option<&'static [u8]>,
    /// Which kernels run on register words (docs/execution.md, "Scalar registers"); `None`
    /// when none does.
    #[cfg(feature = "scalar-registers")]
    modes: Option<super::scalar_plan::Modes>,
    /// Each kernel use's prepared state (docs/execution.md, "Prepared state"); `None` when
    /// none has any.
    #[cfg(feature = "prepared")]
    prepared: Option<super::prepare::Table>,
}

// SAFETY: the table is written once in `load` and only read afterwards; `BefFile` borrows
// immutable bytes; `KernelEntry` holds a name and a function pointer.
unsafe impl Send for Program<'_> {}
// SAFETY: as above.
unsafe impl Sync for Program<'_> {}

impl core::fmt::Debug for Program<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Program")
            .field("functions", &self.file.num_functions())
            .field("kernels", &self.len)
            .finish()
    }
}

impl<'a> Program<'a> {
    /// Verify `bytes`, resolve every kernel name and native function declaration against
    /// `kernels`, and keep the resolved tables in `alloc` (an [`Allocator`], or the
    /// [`HostContext`](crate::HostContext) the program will run on, meaning its allocator). Fails with the reader's error (an
    /// unknown kernel names itself and its location), with `UnknownNativeFunction` naming
    /// the first unregistered native function (`NativeNotBuilt` when the `native` feature
    /// is off), or when a table cannot be allocated.
    pub fn load(
        bytes: &'a [u8],
        kernels: &dyn KernelLookup,
        alloc: impl Into<Allocator>,
    ) -> Result<Self, BefError> {
        Self::load_into(bytes, kernels, alloc.into())
    }

    /// [`load`](Self::load) for bytes that live forever (a BEF file in flash through
    /// [`include_bef!`](crate::include_bef), a leaked or mapped-for-good file): kernels may
    /// then make tensors that borrow constant data (`dense` attributes) instead of copying
    /// it into the arena, which keeps a model's weights in flash on firmware.
    pub fn load_static(
        bytes: &'static [u8],
        kernels: &dyn KernelLookup,
        alloc: impl Into<Allocator>,
    ) -> Result<Program<'static>, BefError> {
        let mut program = Program::load_into(bytes, kernels, alloc.into())?;
        program.static_bytes = Some(bytes);
        Ok(program)
    }

    /// [`load_static`](Self::load_static) for a BEF file verified when the firmware was built
    /// (its build script ran [`BefFile::load_unresolved`] on the bytes it embeds, as
    /// `examples/firmware/build.rs` does): the verifier stays out of the image. Only the
    /// header, the section directory and the checksum are checked here, and each kernel name
    /// is resolved once (an unknown one fails as [`BefFile::load_preverified`] reports it).
    ///
    /// # Safety
    ///
    /// As for [`BefFile::load_preverified`]: these exact bytes passed the verifier of this
    /// version of `hostrt-core`.
    pub unsafe fn load_preverified(
        bytes: &'static [u8],
        kernels: &dyn KernelLookup,
        alloc: impl Into<Allocator>,
    ) -> Result<Program<'static>, BefError> {
        // SAFETY: forwarded from this function's contract.
        let file = unsafe { BefFile::load_preverified_unresolved(bytes) }?;
        let mut program = Program::from_file(file, kernels, alloc.into())?;
        program.static_bytes = Some(bytes);
        Ok(program)
    }

    /// The file's bytes, when the program was loaded with [`load_static`](Self::load_static).
    pub fn static_bytes(&self) -> Option<&'static [u8]> {
        self.static_bytes
    }

    /// [`load`](Self::load), not generic: one copy of the loader whatever `alloc` was.
    fn load_into(bytes: &'a [u8], kernels: &dyn KernelLookup, alloc: Allocator) -> Result<Self, BefError> {
        Self::from_file(BefFile::load_unresolved(bytes, alloc)?, kernels, alloc)
    }

    /// Resolve the kernel table (and native functions) of a verified file; an unknown
    /// kernel name fails as [`BefFile::load`] reports it (with the location of its first
    /// use).
    fn from_file(file: BefFile<'a>, kernels: &dyn KernelLookup, alloc: Allocator) -> Result<Self, BefError> {
        let len = file.num_kernel_names();
        let layout = Layout::array::<KernelEntry>(len.max(1))
            .map_err(|_| BefError::new(BefErrorKind::OutOfMemory, 0, "kernel table"))?;
        let table = alloc
            .allocate(layout)
            .map_err(|_| BefError::new(BefErrorKind::OutOfMemory, 0, "kernel table"))?
            .cast::<KernelEntry>();
        for code in 0..len {
            let entry = kernels.lookup(file.kernel_name(code as u32));
            match entry.ok_or_else(|| file.unknown_kernel(code as u32)) {
                // SAFETY: `code < len`, within the fresh block.
                Ok(e) => unsafe { table.as_ptr().add(code).write(e) },
                Err(e) => {
                    // SAFETY: allocated above with this layout; no entry needs dropping.
                    unsafe { alloc.deallocate(table.cast(), layout) };
                    return Err(e);
                }
            }
        }
        let mut program = Program {
            file,
            table,
            len,
            natives: None,
            alloc,
            static_bytes: None,
            #[cfg(feature = "scalar-registers")]
            modes: None,
            #[cfg(feature = "prepared")]
            prepared: None,
        };
        program.resolve_natives(kernels)?;
        #[cfg(feature = "proved-types")]
        {
            // SAFETY: the table holds `len` initialised entries, and nothing else refers to
            // it while `check` marks the proved ones.
            let entries = unsafe { core::slice::from_raw_parts_mut(program.table.as_ptr(), len) };
            typing::check(&program.file, entries, alloc)?;
            #[cfg(feature = "scalar-registers")]
            {
                program.modes = super::scalar_plan::plan(&program.file, entries, alloc);
            }
        }
        #[cfg(feature = "prepared")]
        {
            // SAFETY: the table holds `len` initialised entries, no longer changed.
            let entries = unsafe { core::slice::from_raw_parts(program.table.as_ptr(), len) };
            program.prepared = super::prepare::prepare(&program.file, entries, alloc);
        }
        Ok(program)
    }

    /// Map each native function declaration to the registry entry of its name; fails naming
    /// the first one the registry lacks (the table is kept either way, for `Drop`).
    #[cfg(feature = "native")]
    fn resolve_natives(&mut self, kernels: &dyn KernelLookup) -> Result<(), BefError> {
        let nf = self.file.num_functions();
        if !(0..nf as u32).any(|i| self.file.function(i).is_some_and(|f| f.is_native())) {
            return Ok(());
        }
        let oom = || BefError::new(BefErrorKind::OutOfMemory, 0, "native function table");
        let layout = Layout::array::<Option<KernelEntry>>(nf).map_err(|_| oom())?;
        let natives = self.alloc.allocate(layout).map_err(|_| oom())?.cast::<Option<KernelEntry>>();
        let mut missing = None;
        for i in 0..nf {
            let f = self.file.function(i as u32).filter(|f| f.is_native());
            let entry = f.and_then(|f| kernels.lookup(f.name()));
            if let (Some(f), None, None) = (f, entry, missing) {
                missing = Some(f.name());
            }
            // SAFETY: `i < nf`, within the fresh block.
            unsafe { natives.as_ptr().add(i).write(entry) };
        }
        self.natives = Some(natives);
        match missing {
            Some(name) => Err(BefError::new(BefErrorKind::UnknownNativeFunction, 0, name)),
            None => Ok(()),
        }
    }

    /// Without the `native` feature a file declaring a native function is refused.
    #[cfg(not(feature = "native"))]
    fn resolve_natives(&mut self, _: &dyn KernelLookup) -> Result<(), BefError> {
        let nf = self.file.num_functions() as u32;
        match (0..nf).filter_map(|i| self.file.function(i)).find(|f| f.is_native()) {
            Some(f) => Err(BefError::new(BefErrorKind::NativeNotBuilt, 0, f.name())),
            None => Ok(()),
        }
    }

    /// The registered implementation of native function `function`, if it is one and the
    /// registry had it when the program was loaded.
    #[cfg(feature = "native")]
    pub(crate) fn native(&self, function: u32) -> Option<&KernelEntry> {
        let natives = self.natives?;
        if function as usize >= self.file.num_functions() {
            return None;
        }
        // SAFETY: the table holds `num_functions` initialised slots, written in `load`.
        unsafe { (*natives.as_ptr().add(function as usize)).as_ref() }
    }

    /// Whether the load proved the argument types of every use of kernel `name` in the
    /// program from the registered signatures, so that release builds call it without
    /// per-call type checks (docs/execution.md, "Types checked at load"). `false` for
    /// kernels without a signature, for non-strict ones, for a kernel with any argument of
    /// unknown type (a function's argument, a result of a kernel without a signature), and
    /// for names the program does not use.
    pub fn types_proved(&self, name: &str) -> bool {
        let mut codes = (0..self.len as u32).filter(|c| self.file.kernel_name(*c) == name).peekable();
        codes.peek().is_some() && codes.all(|c| self.entry(c).proved)
    }

    /// The underlying file.
    pub fn file(&self) -> &BefFile<'a> {
        &self.file
    }

    /// Index of the named function.
    pub fn function_index(&self, name: &str) -> Option<u32> {
        self.file.function_by_name(name).map(|f| f.index())
    }

    /// The arena the named function needs, when the file records it (docs/bef.md, "Arena
    /// sizes"): a [`FixedArena`](crate::FixedArena) capacity from which on this program loads
    /// and one call of the function completes.
    pub fn arena_need(&self, name: &str) -> Option<ArenaNeed> {
        self.file.arena_need(self.function_index(name)?)
    }

    /// Check, before calling `name`, that `alloc` is big enough for it: a
    /// `RESOURCE_EXHAUSTED` error naming the function, the recorded need and the capacity
    /// when the file records a need (see [`arena_need`](Self::arena_need)) larger than a
    /// fixed-capacity allocator's. `Ok` when either is unknown, or when the need was
    /// recorded for another pointer size (block sizes and padding differ, so it would not
    /// be a bound here). Firmware calls it at
    /// start-up, to fail with this message rather than with out-of-memory results mid-run.
    ///
    /// ```
    /// use hostrt_core::{Allocator, FixedArena, HostContext, KernelRegistry, SingleThreadedWorkQueue};
    /// use hostrt_core::basic_kernels::integer;
    /// use hostrt_core::executor::Program;
    ///
    /// let bef = hostrt_compiler::compile("x.mlir", r#"
    ///     func.func @one() -> i32 {
    ///       %x = tfrt.constant.i32 1
    ///       tfrt.return %x : i32
    ///     }"#, Default::default()).unwrap();
    /// // What `hostrt run --record-arena-peak` does: add the ARENA section.
    /// let pointer_bytes = size_of::<usize>() as u8; // measured on a machine like this one
    /// let bef = hostrt_compiler::bef::with_arena(&bef, &[(0, 4096)], pointer_bytes).unwrap();
    /// let bef = hostrt_std::AlignedBytes::new(&bef);
    /// static ARENA: FixedArena = FixedArena::empty();
    /// ARENA.init(hostrt_core::static_buffer!(1024).unwrap()).unwrap();
    /// let alloc = Allocator::register(&ARENA).unwrap();
    /// let registry = KernelRegistry::<1>::with_entries(&[integer::CONSTANT_I32]).unwrap();
    /// let program = Program::load(bef.as_bytes(), &registry, alloc).unwrap();
    /// assert_eq!(program.arena_need("one").unwrap().bytes, 4096);
    /// let e = program.check_arena(alloc, "one").unwrap_err();
    /// let has = ARENA.capacity(); // 1024 less the bytes before the buffer's 64-byte boundary
    /// let want = format!("function 'one' needs an arena of 4096 bytes (recorded in its BEF file); this one has {has}");
    /// assert_eq!(e.message(), want);
    /// ```
    pub fn check_arena(&self, alloc: impl Into<Allocator>, name: &str) -> Result<(), Diagnostic> {
        let capacity = alloc.into().stats().map_or(0, |s| s.capacity);
        match self.arena_need(name) {
            Some(need)
                if capacity != 0
                    && usize::from(need.pointer_bytes) == size_of::<usize>()
                    && need.bytes > capacity =>
            {
                Err(crate::diag!(
                    ResourceExhausted,
                    "function '{}' needs an arena of {} bytes (recorded in its BEF file); this one has {}",
                    name,
                    need.bytes,
                    capacity
                ))
            }
            _ => Ok(()),
        }
    }

    /// The planned modes of function `rec`'s kernels (docs/execution.md, "Scalar
    /// registers"): empty when every kernel runs the generic path.
    #[cfg(feature = "scalar-registers")]
    pub(crate) fn modes_of(&self, rec: &crate::bef::format::FunctionRecord) -> &[u8] {
        match &self.modes {
            Some(m) => m.of(rec.first_kernel as usize, rec.num_kernels as usize),
            None => &[],
        }
    }

    /// The prepared-state index entries of function `rec`'s kernels and the blocks they name
    /// (docs/execution.md, "Prepared state"): both empty when no kernel has any.
    #[cfg(feature = "prepared")]
    pub(crate) fn prepared_of(
        &self,
        rec: &crate::bef::format::FunctionRecord,
    ) -> (&[u32], &[crate::kernel::Prepared]) {
        match &self.prepared {
            Some(t) => (t.of(rec.first_kernel as usize, rec.num_kernels as usize), t.blocks()),
            None => (&[], &[]),
        }
    }

    /// Whether kernel `k` of function `name` has prepared state (docs/execution.md,
    /// "Prepared state"): what the load made, for tests and tools. `None` when there is no
    /// such kernel.
    pub fn is_prepared(&self, name: &str, k: usize) -> Option<bool> {
        let f = self.file.function_by_name(name)?;
        let _ = f.kernels().get(k)?;
        #[cfg(feature = "prepared")]
        {
            let (index, blocks) = self.prepared_of(f.record());
            Some(index.get(k).is_some_and(|&i| (i as usize) < blocks.len()))
        }
        #[cfg(not(feature = "prepared"))]
        Some(false)
    }

    /// Whether kernel `k` of function `name` runs on register words, and whether its result
    /// stays in its register (docs/execution.md, "Scalar registers"): what the load
    /// planned, for tests and tools. `None` when there is no such kernel.
    pub fn scalar_mode(&self, name: &str, k: usize) -> Option<(bool, bool)> {
        let f = self.file.function_by_name(name)?;
        let _ = f.kernels().get(k)?;
        #[cfg(feature = "scalar-registers")]
        {
            let m = self.modes_of(f.record()).get(k).copied().unwrap_or(0);
            Some((m & super::scalar_plan::SCALAR != 0, m & super::scalar_plan::INLINE != 0))
        }
        #[cfg(not(feature = "scalar-registers"))]
        Some((false, false))
    }

    /// The most arena bytes one call of `function` allocates, as [`call`](Self::call) and the
    /// test driver make it, once its arguments exist: every block the call and its nested
    /// calls can allocate, each with its worst padding (docs/bef.md, "Arena sizes"),
    /// whatever the argument values. It holds on a host whose queue runs one task at a time
    /// without stream tasks (firmware, `SingleThreadedWorkQueue`) and whose call depth
    /// limit is at least the default. The program's own tables (the load) and the caller's
    /// arguments come on top. `Err` says why there is no bound.
    ///
    /// ```
    /// use hostrt_core::allocator::HostAllocator;
    /// use hostrt_core::basic_kernels::integer;
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
    #[cfg(feature = "proved-types")]
    pub fn call_arena_bound(&self, function: u32) -> Result<usize, super::Unbounded<'a>> {
        super::arena_bound::call_bound(&self.file, self.entries(), self.alloc, function)
    }

    /// The implementation of every kernel code, in code order.
    #[cfg(feature = "proved-types")]
    fn entries(&self) -> &[KernelEntry] {
        // SAFETY: the table holds `len` initialised entries, written in `load` and only read
        // afterwards.
        unsafe { core::slice::from_raw_parts(self.table.as_ptr(), self.len) }
    }

    /// The implementation of kernel `code` (verified in range at load).
    #[inline]
    pub(crate) fn entry(&self, code: u32) -> &KernelEntry {
        debug_assert!((code as usize) < self.len);
        // SAFETY: every code in the file was checked `< len` by `BefFile::load`; the table
        // holds `len` initialised entries.
        unsafe { &*self.table.as_ptr().add(code as usize) }
    }
}

impl Drop for Program<'_> {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::array::<KernelEntry>(self.len.max(1)) {
            // SAFETY: allocated in `load` with this (same) layout.
            unsafe { self.alloc.deallocate(self.table.cast(), layout) };
        }
        if let (Some(natives), Ok(layout)) =
            (self.natives, Layout::array::<Option<KernelEntry>>(self.file.num_functions()))
        {
            // SAFETY: allocated in `load` with this layout; entries need no dropping.
            unsafe { self.alloc.deallocate(natives.cast(), layout) };
        }
    }
}
