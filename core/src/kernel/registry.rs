//! The kernel registry: explicit registration by name, fixed capacity, no allocation and no
//! static initializers. Names are resolved to function pointers once, when a program loads.

use core::fmt;

use super::KernelFn;
use super::prepared::PrepareFn;
use super::scalar::ScalarFn;
use super::signature::Signature;

/// A registered kernel.
#[derive(Clone, Copy)]
pub struct KernelEntry {
    /// The name programs use (`tfrt.add.i32`).
    pub name: &'static str,
    /// The implementation. Private (read it with [`func`](Self::func)): replacing it would
    /// separate it from its signature.
    func: KernelFn,
    /// Whether the kernel may run before all arguments are available (like `tfrt.call`).
    non_strict: bool,
    /// The types `func` takes and sets, when it was declared with
    /// [`kernel_entry!`](crate::kernel_entry): a program's uses of it are then type-checked
    /// once at load (docs/execution.md, "Types checked at load"). Private: a signature
    /// that does not describe `func` would let it read a value as the wrong type.
    signature: Option<&'static Signature>,
    /// Set only in a loaded program's own copy of the entry: every use of the kernel in the
    /// program has its argument types proved (docs/execution.md, "Types checked at load").
    pub(crate) proved: bool,
    /// How to run the kernel on register words, when it was declared with
    /// [`scalar_kernel_entry!`](crate::scalar_kernel_entry) (docs/execution.md, "Scalar
    /// registers").
    #[cfg(feature = "scalar-registers")]
    scalar: Option<&'static ScalarFn>,
    /// Declared by the kernel's author: a call allocates nothing but its result values (and
    /// an error value when it fails), which derived arena bounds rely on (docs/bef.md,
    /// "Arena sizes").
    #[cfg(feature = "proved-types")]
    results_only: bool,
    /// How the kernel calls the functions it names, when it is a control kernel: derived
    /// arena bounds follow it into them (docs/bef.md, "Arena sizes").
    #[cfg(feature = "proved-types")]
    calls: Option<Calls>,
    /// Works out the kernel's state for one use once, when a program loads
    /// (docs/execution.md, "Prepared state").
    #[cfg(feature = "prepared")]
    prepare: Option<PrepareFn>,
}

/// How a control kernel runs the functions it names, which derived arena bounds
/// (`Program::call_arena_bound`) follow into: only hostrt's own control kernels
/// (`basic_kernels::control`) declare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Calls {
    /// `tfrt.call`: the function its attribute names, with all its operands.
    Call,
    /// `tfrt.once`: as `Call`, at most once per request.
    Once,
    /// `tfrt.if`: one of its two regions, after an `i1` condition.
    If,
    /// `tfrt.cond`: one of the functions its attributes name, after an `i1` condition.
    Cond,
    /// `tfrt.case`: one of the functions its attributes name, after an `i32` index.
    Case,
}

impl KernelEntry {
    /// A strict kernel (runs when all arguments are available), usable in `const` tables.
    /// Its arguments are checked on every call; [`kernel_entry!`](crate::kernel_entry)
    /// makes one whose signature is checked at load instead.
    pub const fn strict(name: &'static str, func: KernelFn) -> Self {
        KernelEntry {
            name,
            func,
            non_strict: false,
            signature: None,
            proved: false,
            #[cfg(feature = "scalar-registers")]
            scalar: None,
            #[cfg(feature = "proved-types")]
            results_only: false,
            #[cfg(feature = "proved-types")]
            calls: None,
            #[cfg(feature = "prepared")]
            prepare: None,
        }
    }

    /// A non-strict kernel (may run before its arguments are available, like `tfrt.call`).
    pub const fn non_strict(name: &'static str, func: KernelFn) -> Self {
        KernelEntry {
            name,
            func,
            non_strict: true,
            signature: None,
            proved: false,
            #[cfg(feature = "scalar-registers")]
            scalar: None,
            #[cfg(feature = "proved-types")]
            results_only: false,
            #[cfg(feature = "proved-types")]
            calls: None,
            #[cfg(feature = "prepared")]
            prepare: None,
        }
    }

    /// A strict kernel with its signature (what [`kernel_entry!`](crate::kernel_entry)
    /// expands to).
    ///
    /// # Safety
    /// `signature` describes `func`: `func` is `kernel!(f)` and `signature` is
    /// `signature_of(&f)` for the same `f` (a [`TypedKernel`](super::TypedKernel), whose
    /// parameters and return type are `hostrt-core`'s own, so `func` fetches its arguments
    /// exactly where the signature says). Arguments `func` reads through
    /// [`Argument`](super::Argument) are not type-checked per call in release builds when
    /// the program's load proved their types from `signature`.
    pub const unsafe fn typed(name: &'static str, func: KernelFn, signature: &'static Signature) -> Self {
        // Without the `proved-types` feature the signature is dropped here, so that no
        // signature constant is linked.
        let signature = if cfg!(feature = "proved-types") { Some(signature) } else { None };
        KernelEntry {
            name,
            func,
            non_strict: false,
            signature,
            proved: false,
            #[cfg(feature = "scalar-registers")]
            scalar: None,
            #[cfg(feature = "proved-types")]
            results_only: false,
            #[cfg(feature = "proved-types")]
            calls: None,
            #[cfg(feature = "prepared")]
            prepare: None,
        }
    }

    /// A strict kernel with its signature and its scalar form (what
    /// [`scalar_kernel_entry!`](crate::scalar_kernel_entry) expands to). Without the
    /// `scalar-registers` feature the scalar form is dropped and this is [`typed`](Self::typed).
    ///
    /// # Safety
    /// As for [`typed`](Self::typed), and `scalar` is `scalar_of(&f, call)` for the same `f`,
    /// with `call` calling `invoke_scalar(&f, ..)` (a [`ScalarKernel`](super::ScalarKernel),
    /// which only functions and closures are, so its result word is made from the type its
    /// signature names).
    pub const unsafe fn typed_scalar(
        name: &'static str,
        func: KernelFn,
        signature: &'static Signature,
        scalar: Option<&'static ScalarFn>,
    ) -> Self {
        // SAFETY: forwarded from this function's contract.
        let entry = unsafe { Self::typed(name, func, signature) };
        #[cfg(feature = "scalar-registers")]
        let entry = KernelEntry { scalar: if entry.signature.is_some() { scalar } else { None }, ..entry };
        #[cfg(not(feature = "scalar-registers"))]
        let _ = scalar;
        entry
    }

    /// This entry with a prepare function: each use of the kernel in a program gets the
    /// state `prepare` makes from its attributes once, at load, and is then called with that
    /// state ([`KernelFrame::prepared`](super::KernelFrame::prepared)) and no attributes
    /// (docs/execution.md, "Prepared state"). Without the `prepared` feature `prepare` is
    /// dropped and the kernel reads its attributes on every call, so it must do both.
    ///
    /// ```
    /// use hostrt_core::kernel::{KernelEntry, KernelFrame, PrepareInput, Prepared};
    ///
    /// /// Keeps the use's `i32` attribute (its first) as four bytes.
    /// fn prepare(input: &PrepareInput<'_>) -> Option<Prepared> {
    ///     let k = input.attrs().first()?.get::<i32>()?;
    ///     Prepared::new(&k.to_le_bytes())
    /// }
    ///
    /// /// `x + k`: `k` from the prepared block when the load made one, else from the attribute.
    /// fn add_k(frame: &KernelFrame<'_>) {
    ///     let k = match frame.prepared() {
    ///         Some(p) => i32::from_le_bytes(p.bytes()[..4].try_into().unwrap()),
    ///         None => frame.attrs().first().and_then(|a| a.get::<i32>()).unwrap_or(0),
    ///     };
    ///     if let Some(x) = frame.arg(0).and_then(|v| v.get::<i32>()) {
    ///         frame.emplace_result(0, x + k);
    ///     }
    /// }
    ///
    /// const ADD_K: KernelEntry = KernelEntry::strict("my.add_k.i32", add_k).with_prepare(prepare);
    /// # let _ = ADD_K;
    /// ```
    pub const fn with_prepare(self, prepare: PrepareFn) -> Self {
        #[cfg(feature = "prepared")]
        return KernelEntry { prepare: Some(prepare), ..self };
        #[cfg(not(feature = "prepared"))]
        {
            let _ = prepare;
            self
        }
    }

    /// The kernel's prepare function, when it has one.
    #[cfg(feature = "prepared")]
    #[inline]
    pub(crate) fn prepare(&self) -> Option<PrepareFn> {
        self.prepare
    }

    /// The kernel's scalar form, when it has one.
    #[cfg(feature = "scalar-registers")]
    #[inline]
    pub(crate) fn scalar(&self) -> Option<&'static ScalarFn> {
        self.scalar
    }

    /// The implementation.
    #[inline]
    pub const fn func(&self) -> KernelFn {
        self.func
    }

    /// Whether the kernel may run before all arguments are available (like `tfrt.call`).
    #[inline]
    pub const fn is_non_strict(&self) -> bool {
        self.non_strict
    }

    /// The same kernel, declared to allocate nothing but its result values (and an error
    /// value when it fails): derived arena bounds (`Program::call_arena_bound`) count it
    /// then, by its signature's result types; kernels without the declaration leave a
    /// function unbounded. A kernel that allocates more (through its context, or an
    /// argument's allocator) must not declare it: its bound would be too small, and the
    /// arena could run out (an error, not undefined behaviour).
    pub const fn allocating_only_results(self) -> Self {
        #[cfg(feature = "proved-types")]
        let entry = KernelEntry { results_only: true, ..self };
        #[cfg(not(feature = "proved-types"))]
        let entry = self;
        entry
    }

    /// The same kernel, declared to call the functions it names as `calls` says (only the
    /// control kernels, whose calls derived arena bounds know how to follow).
    pub(crate) const fn calling(self, calls: Calls) -> Self {
        #[cfg(feature = "proved-types")]
        let entry = KernelEntry { calls: Some(calls), ..self };
        #[cfg(not(feature = "proved-types"))]
        let entry = {
            let _ = calls;
            self
        };
        entry
    }

    /// How the kernel calls the functions it names, when it is a control kernel.
    #[cfg(feature = "proved-types")]
    pub fn calls(&self) -> Option<Calls> {
        self.calls
    }

    /// Whether the kernel was declared with
    /// [`allocating_only_results`](Self::allocating_only_results).
    #[cfg(feature = "proved-types")]
    pub fn allocates_only_results(&self) -> bool {
        self.results_only
    }

    /// The same kernel under another name.
    pub const fn renamed(self, name: &'static str) -> Self {
        KernelEntry { name, ..self }
    }

    /// The kernel's signature, when it has a known one.
    pub fn signature(&self) -> Option<&'static Signature> {
        self.signature.filter(|s| s.is_known())
    }
}

impl fmt::Debug for KernelEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelEntry").field("name", &self.name).field("non_strict", &self.non_strict).finish()
    }
}

/// Looks kernels up by name. Implemented by [`KernelRegistry`]; `std` users may supply a
/// hash map.
pub trait KernelLookup: Sync {
    /// The kernel registered as `name`.
    fn lookup(&self, name: &str) -> Option<KernelEntry>;
}

/// Why a registration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegistryError {
    /// A kernel with this name is already registered.
    Duplicate(&'static str),
    /// The registry is full.
    Full(&'static str),
}

impl crate::diagnostic::DiagArg for RegistryError {
    fn write_diag(&self, out: &mut crate::diagnostic::MessageText) {
        match self {
            RegistryError::Duplicate(n) => crate::write_diag!(out, "kernel '{}' is already registered", n),
            RegistryError::Full(n) => {
                crate::write_diag!(out, "kernel registry is full (registering '{}')", n)
            }
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::diagnostic::display_diag_arg(self, f)
    }
}

impl From<RegistryError> for crate::diagnostic::Diagnostic {
    fn from(e: RegistryError) -> Self {
        let code = match e {
            RegistryError::Duplicate(_) => crate::diagnostic::ErrorCode::AlreadyExists,
            RegistryError::Full(_) => crate::diagnostic::ErrorCode::ResourceExhausted,
        };
        crate::diagnostic::Diagnostic::from_arg(code, &e)
    }
}

/// A registry of up to `N` kernels, kept sorted by name (lookup is a binary search).
pub struct KernelRegistry<const N: usize = 128> {
    entries: heapless::Vec<KernelEntry, N>,
}

impl<const N: usize> fmt::Debug for KernelRegistry<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.entries.iter().map(|e| e.name)).finish()
    }
}

impl<const N: usize> Default for KernelRegistry<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> KernelRegistry<N> {
    /// An empty registry.
    pub const fn new() -> Self {
        KernelRegistry { entries: heapless::Vec::new() }
    }

    /// Register a strict kernel (runs when all arguments are available).
    pub fn add_kernel(&mut self, name: &'static str, func: KernelFn) -> Result<(), RegistryError> {
        self.insert(KernelEntry::strict(name, func))
    }

    /// Register a non-strict kernel (may run before its arguments are available).
    pub fn add_non_strict_kernel(&mut self, name: &'static str, func: KernelFn) -> Result<(), RegistryError> {
        self.insert(KernelEntry::non_strict(name, func))
    }

    /// Register prepared entries, such as the constants of [`crate::basic_kernels`]: firmware
    /// lists only the kernels its programs use and the linker drops the rest (TFLite
    /// Micro's `MicroMutableOpResolver`). Stops at the first refused entry.
    pub fn add_entries(&mut self, entries: &[KernelEntry]) -> Result<(), RegistryError> {
        entries.iter().try_for_each(|e| self.insert(*e))
    }

    /// A registry holding exactly `entries` (see [`add_entries`](Self::add_entries)).
    ///
    /// ```
    /// use hostrt_core::KernelRegistry;
    /// use hostrt_core::basic_kernels::{control, integer};
    /// use hostrt_core::kernel::KernelLookup;
    ///
    /// let registry = KernelRegistry::<2>::with_entries(&[integer::ADD_I32, control::CALL]).unwrap();
    /// assert!(registry.lookup("tfrt.call").is_some_and(|k| k.is_non_strict()));
    /// assert!(registry.lookup("tfrt.mul.i32").is_none());
    /// ```
    pub fn with_entries(entries: &[KernelEntry]) -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        registry.add_entries(entries)?;
        Ok(registry)
    }

    fn insert(&mut self, entry: KernelEntry) -> Result<(), RegistryError> {
        match self.entries.binary_search_by(|e| e.name.cmp(entry.name)) {
            Ok(_) => Err(RegistryError::Duplicate(entry.name)),
            Err(pos) => {
                // Append, then move the entry down into place by swaps: `Vec::insert` would
                // link `memmove` (1.5 KB of flash) into images that use it nowhere else.
                self.entries.push(entry).map_err(|_| RegistryError::Full(entry.name))?;
                for i in (pos + 1..self.entries.len()).rev() {
                    self.entries.swap(i, i - 1);
                }
                Ok(())
            }
        }
    }

    /// Number of registered kernels.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no kernel is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// All entries, sorted by name.
    pub fn entries(&self) -> &[KernelEntry] {
        &self.entries
    }
}

impl<const N: usize> KernelLookup for KernelRegistry<N> {
    fn lookup(&self, name: &str) -> Option<KernelEntry> {
        find(&self.entries, name)
    }
}

/// The entry named `name` in `entries`, sorted by name (the registry's and
/// [`KernelTable`](super::KernelTable)'s lookup).
pub(super) fn find(entries: &[KernelEntry], name: &str) -> Option<KernelEntry> {
    entries.binary_search_by(|e| e.name.cmp(name)).ok().map(|i| entries[i])
}
