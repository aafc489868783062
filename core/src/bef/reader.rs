//! Loading: one verifying pass over borrowed bytes, no copies. After `load` succeeds every
//! index and offset reachable through [`BefFile`] is known to be in range.

use core::alloc::Layout;
use core::mem::{align_of, size_of};
use core::ptr::NonNull;

use super::error::{BefError, BefErrorKind as K};
use super::format::{
    self as f, AttrHeader, FunctionRecord, KernelRecord, LocationRecord, RegisterRecord, StrRef,
};
use crate::allocator::Allocator;
use crate::kernel::KernelLookup;

/// Plain records that can be viewed in place from aligned little-endian bytes.
///
/// # Safety
/// Implementors are `repr(C)` structs of `u32` fields only (any bit pattern valid, align 4).
pub(crate) unsafe trait Record: Copy {}
// SAFETY: all four are repr(C) structs of u32 fields.
unsafe impl Record for StrRef {}
// SAFETY: as above.
unsafe impl Record for FunctionRecord {}
// SAFETY: as above.
unsafe impl Record for KernelRecord {}
// SAFETY: as above.
unsafe impl Record for LocationRecord {}
// SAFETY: as above.
unsafe impl Record for RegisterRecord {}
// SAFETY: a u32 is a u32.
unsafe impl Record for u32 {}

/// View `bytes` as records, if aligned and a whole number of them.
pub(crate) fn cast<T: Record>(bytes: &[u8]) -> Option<&[T]> {
    if !(bytes.as_ptr() as usize).is_multiple_of(align_of::<T>())
        || !bytes.len().is_multiple_of(size_of::<T>())
    {
        return None;
    }
    // SAFETY: aligned, in bounds, whole records; `Record` types accept any bit pattern.
    Some(unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size_of::<T>()) })
}

fn rd32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// A loaded, verified BEF file borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct BefFile<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) strings: &'a [u8],
    pub(crate) types: &'a [StrRef],
    pub(crate) kernel_names: &'a [StrRef],
    pub(crate) attributes: &'a [u8],
    pub(crate) attr_index: &'a [u32],
    pub(crate) functions: &'a [FunctionRecord],
    pub(crate) kernels: &'a [KernelRecord],
    pub(crate) pool: &'a [u32],
    pub(crate) locations: &'a [LocationRecord],
    /// The MODULE section's word, in place (its address locates an error in it).
    pub(crate) module_attrs: &'a u32,
    /// Stream ids: one per function, then one per kernel; empty when the file has none.
    pub(crate) streams: &'a [u32],
    /// Arena records, two words per function; empty when the file has none.
    pub(crate) arena: &'a [u32],
    /// ARENA_ALT's words (empty when absent).
    pub(crate) arena_alt: &'a [u32],
}

/// A failed check before it becomes a [`BefError`]: small and `Copy`, so the verifier's
/// many `?`s pass three words rather than a 150-byte error, and the error is built once,
/// out of line.
#[derive(Clone, Copy, Debug)]
struct Fail {
    kind: K,
    offset: usize,
    detail: &'static str,
}

impl Fail {
    const fn new(kind: K, offset: usize, detail: &'static str) -> Self {
        Fail { kind, offset, detail }
    }
}

impl From<Fail> for BefError {
    #[cold]
    #[inline(never)]
    fn from(f: Fail) -> Self {
        BefError::new(f.kind, f.offset, f.detail)
    }
}

/// Result of a check.
type Check<T> = Result<T, Fail>;

impl<'a> BefFile<'a> {
    /// Load and verify `bytes`, and check every kernel name against `kernels`.
    ///
    /// `scratch` provides temporary memory for verification (4 bytes per register of the
    /// largest function), freed before returning.
    pub fn load(bytes: &'a [u8], kernels: &dyn KernelLookup, scratch: Allocator) -> Result<Self, BefError> {
        let file = Self::load_unresolved(bytes, scratch)?;
        file.check_kernel_names(kernels)?;
        Ok(file)
    }

    /// [`load`](Self::load) for bytes verified before, on any machine: only the header, the
    /// section directory and the checksum are checked here, and every kernel name against
    /// `kernels`. Firmware whose build script verified the BEF it embeds leaves the
    /// verifier out of its image this way (about 4.5 KB, docs/porting.md); a flipped bit in
    /// flash still fails the checksum.
    ///
    /// # Safety
    ///
    /// These exact bytes must have passed [`load`](Self::load) or
    /// [`load_unresolved`](Self::load_unresolved) of this version of `hostrt-core` (on any
    /// target). The checksum is checked before anything past the header is read, so a copy
    /// that differs from such bytes by one flipped bit, or by a burst of at most 32 bits, is
    /// refused; other corruption can go unnoticed (CRC-32 misses some three-bit errors in
    /// files of about 12 KB and more), and is then undefined behaviour: the readers, and the
    /// executor, index by the ranges the verifier checked without checking them again.
    pub unsafe fn load_preverified(bytes: &'a [u8], kernels: &dyn KernelLookup) -> Result<Self, BefError> {
        let file = Self::sections(bytes)?;
        file.check_kernel_names(kernels)?;
        Ok(file)
    }

    /// Load and verify `bytes` without checking kernel names (for tools such as the
    /// disassembler).
    pub fn load_unresolved(bytes: &'a [u8], scratch: Allocator) -> Result<Self, BefError> {
        Ok(Self::verify(bytes, scratch)?)
    }

    /// Slice the sections and verify everything but kernel names.
    fn verify(bytes: &'a [u8], scratch: Allocator) -> Check<Self> {
        let file = Self::sections(bytes)?;
        file.verify_strings()?;
        file.verify_attributes()?;
        file.verify_locations()?;
        if *file.module_attrs != f::NONE {
            let ok = file.attr_header(*file.module_attrs).is_some_and(|h| h.kind() == f::attr::DICT);
            if !ok {
                let at = file.offset_of(core::slice::from_ref(file.module_attrs));
                return Err(Fail::new(K::BadAttribute, at, "module attributes"));
            }
        }
        for i in 0..file.functions.len() {
            file.verify_function(i, scratch)?;
        }
        Ok(file)
    }

    /// The byte offset in the file of a section (or a record in one), for error reporting:
    /// computed from the slice rather than kept, which keeps the view small (it is copied
    /// into every function view).
    fn offset_of<T>(&self, part: &[T]) -> usize {
        offset_in(self.bytes, part)
    }

    /// Parse the header and directory and slice the sections.
    fn sections(bytes: &'a [u8]) -> Check<Self> {
        if bytes.len() < f::HEADER_SIZE {
            return Err(Fail::new(K::Truncated, bytes.len(), "header"));
        }
        if !(bytes.as_ptr() as usize).is_multiple_of(f::ALIGN) {
            return Err(Fail::new(K::Misaligned, 0, ""));
        }
        if bytes[0..4] != f::MAGIC {
            return Err(Fail::new(K::BadMagic, 0, ""));
        }
        if u16::from_le_bytes([bytes[4], bytes[5]]) != f::VERSION_MAJOR {
            return Err(Fail::new(K::UnsupportedVersion, 4, ""));
        }
        if rd32(bytes, 8) as usize != bytes.len() {
            return Err(Fail::new(K::Truncated, 8, "file_size"));
        }
        if rd32(bytes, f::CHECKSUM_OFFSET) != f::checksum(bytes) {
            return Err(Fail::new(K::BadChecksum, f::CHECKSUM_OFFSET, ""));
        }
        let count = rd32(bytes, 12) as usize;
        let dir_end = count.checked_mul(f::SECTION_ENTRY_SIZE).and_then(|n| n.checked_add(f::HEADER_SIZE));
        if dir_end.is_none_or(|end| end > bytes.len()) {
            return Err(Fail::new(K::Truncated, 12, "section directory"));
        }
        // Each known section's bytes (an absent one is the file's first zero bytes, 8-aligned
        // like the rest), and a bit per slot for the ones present.
        let mut found = Sections([&bytes[..0]; SLOTS]);
        let mut present = 0u32;
        for i in 0..count {
            let at = f::HEADER_SIZE + i * f::SECTION_ENTRY_SIZE;
            let (id, off, size) =
                (rd32(bytes, at), rd32(bytes, at + 4) as usize, rd32(bytes, at + 8) as usize);
            let slot = section_slot(id);
            if slot == 0 {
                continue; // unknown section: skipped, as the format promises
            }
            let in_file = off.checked_add(size).is_some_and(|end| end <= bytes.len());
            if !in_file || !off.is_multiple_of(f::ALIGN) || present & (1 << slot) != 0 {
                return Err(Fail::new(K::BadSection, at, "offset, size or duplicate"));
            }
            if !size.is_multiple_of(usize::from(RECORD_BYTES[slot])) {
                return Err(Fail::new(K::BadSection, off, "size is not whole records"));
            }
            found.0[slot] = &bytes[off..off + size]; // checked above: what `Sections` promises
            present |= 1 << slot;
        }
        if present & REQUIRED_SLOTS != REQUIRED_SLOTS {
            return Err(Fail::new(K::MissingSection, 12, ""));
        }
        let section = |id: u32| found.bytes(id);
        let module = found.records::<u32, { f::section::MODULE }>();
        let functions = found.records::<FunctionRecord, { f::section::FUNCTIONS }>();
        let kernels = found.records::<KernelRecord, { f::section::KERNELS }>();
        let streams = found.records::<u32, { f::section::STREAMS }>();
        let arena = found.records::<u32, { f::section::ARENA }>();
        let arena_alt = found.records::<u32, { f::section::ARENA_ALT }>();
        // Where a found section starts, for the errors below.
        let at = |id: u32| offset_in(bytes, section(id));
        let [module_attrs] = module else {
            return Err(Fail::new(K::BadSection, at(f::section::MODULE), "size is not whole records"));
        };
        let present = |id: u32| present & (1 << section_slot(id)) != 0;
        if present(f::section::STREAMS) && streams.len() != functions.len() + kernels.len() {
            let at = at(f::section::STREAMS);
            return Err(Fail::new(K::BadSection, at, "streams: not one id per function and kernel"));
        }
        // An empty ARENA or ARENA_ALT records nothing, as an absent one.
        let bad_arena = |words: &[u32]| !words.is_empty() && words.len() != 2 * functions.len();
        if bad_arena(arena) || bad_arena(arena_alt) {
            let id = if bad_arena(arena) { f::section::ARENA } else { f::section::ARENA_ALT };
            return Err(Fail::new(K::BadSection, at(id), "arena: not two words per function"));
        }
        Ok(BefFile {
            bytes,
            strings: section(f::section::STRINGS),
            types: found.records::<StrRef, { f::section::TYPES }>(),
            kernel_names: found.records::<StrRef, { f::section::KERNEL_NAMES }>(),
            attributes: section(f::section::ATTRIBUTES),
            attr_index: found.records::<u32, { f::section::ATTR_INDEX }>(),
            functions,
            kernels,
            pool: found.records::<u32, { f::section::POOL }>(),
            locations: found.records::<LocationRecord, { f::section::LOCATIONS }>(),
            module_attrs,
            streams,
            arena,
            arena_alt,
        })
    }

    /// The text of a string reference, if in range and UTF-8.
    pub(crate) fn str_checked(&self, r: StrRef) -> Option<&'a str> {
        let start = r.offset as usize;
        let bytes = self.strings.get(start..start.checked_add(r.len as usize)?)?;
        crate::utf8::to_str(bytes)
    }

    fn verify_strings(&self) -> Check<()> {
        for table in [self.types, self.kernel_names] {
            for r in table {
                let at = self.offset_of(core::slice::from_ref(r));
                self.str_checked(*r).ok_or(Fail::new(K::BadString, at, "name"))?;
            }
        }
        Ok(())
    }

    fn verify_locations(&self) -> Check<()> {
        for l in self.locations {
            let at = self.offset_of(core::slice::from_ref(l));
            self.str_checked(l.file).ok_or(Fail::new(K::BadString, at, "file"))?;
        }
        Ok(())
    }

    /// The header of attribute `index` (valid after load).
    pub(crate) fn attr_header(&self, index: u32) -> Option<AttrHeader> {
        let off = *self.attr_index.get(index as usize)? as usize;
        let h = cast::<u32>(self.attributes.get(off..off + 8)?)?;
        Some(AttrHeader { tag: h[0], len: h[1] })
    }

    /// The header and payload of attribute `index` (valid after load), the index entry read
    /// once for both.
    pub(crate) fn attr_blob(&self, index: u32) -> Option<(AttrHeader, &'a [u8])> {
        let off = *self.attr_index.get(index as usize)? as usize;
        let words = cast::<u32>(self.attributes.get(off..off + 8)?)?;
        let h = AttrHeader { tag: words[0], len: words[1] };
        Some((h, self.attributes.get(off + 8..off + 8 + h.len as usize)?))
    }

    /// Walk the attribute blobs in file order: each index entry must be the next blob, and
    /// every blob must be well formed, referring only to earlier attributes.
    fn verify_attributes(&self) -> Check<()> {
        let base = self.offset_of(self.attributes);
        let mut expect = 0usize;
        for (i, &off) in self.attr_index.iter().enumerate() {
            let fail = |d: &'static str| Fail::new(K::BadAttribute, base + off as usize, d);
            if off as usize != expect {
                return Err(Fail::new(K::BadAttribute, base + expect, "index does not match blob layout"));
            }
            self.attr_header(i as u32).ok_or(fail("header out of range"))?;
            let (h, payload) = self.attr_blob(i as u32).ok_or(fail("payload out of range"))?;
            let ty_ok = h.ty() == u16::MAX || (h.ty() as usize) < self.types.len();
            let earlier = |idx: u32| (idx as usize) < i;
            let words = || cast::<u32>(payload);
            let ok = match h.kind() {
                f::attr::UNIT => payload.is_empty(),
                f::attr::SCALAR => {
                    let n = f::scalar::size(h.scalar());
                    n != 0
                        && payload.len() == n
                        && ty_ok
                        && (h.scalar() != f::scalar::BOOL || payload[0] <= 1)
                }
                f::attr::STRING => crate::utf8::to_str(payload).is_some(),
                f::attr::ARRAY => {
                    let n = f::scalar::size(h.scalar());
                    n != 0
                        && payload.len().is_multiple_of(n)
                        && ty_ok
                        && (h.scalar() != f::scalar::BOOL || payload.iter().all(|b| *b <= 1))
                }
                f::attr::AGGREGATE => words().is_some_and(|w| w.iter().all(|c| earlier(*c))),
                f::attr::FUNCTION => words().is_some_and(|w| {
                    let count_ok =
                        if h.scalar() == f::attr::FUNCTION_ARRAY { !w.is_empty() } else { w.len() == 1 };
                    count_ok && w.iter().all(|fi| (*fi as usize) < self.functions.len())
                }),
                f::attr::TYPE => matches!(words(), Some([t]) if (*t as usize) < self.types.len()),
                f::attr::DENSE => ty_ok && dense_payload_ok(h.scalar(), payload),
                f::attr::DICT => words().is_some_and(|w| {
                    w.len().is_multiple_of(3)
                        && w.chunks_exact(3).all(|e| {
                            self.str_checked(StrRef { offset: e[0], len: e[1] }).is_some() && earlier(e[2])
                        })
                }),
                _ => false,
            };
            if !ok {
                return Err(fail("kind, size or contents"));
            }
            expect = (off as usize + 8 + payload.len()).next_multiple_of(f::ALIGN);
        }
        Ok(())
    }

    /// `n` words of the pool starting at `at`.
    // One copy on bare metal, where flash counts (callers throughout the executor); hosts
    // inline it into the per-kernel path.
    #[cfg_attr(target_os = "none", inline(never))]
    pub(crate) fn pool_words(&self, at: u32, n: usize) -> Option<&'a [u32]> {
        let start = at as usize;
        self.pool.get(start..start.checked_add(n)?)
    }

    fn verify_function(&self, fi: usize, scratch: Allocator) -> Check<()> {
        let fr = self.functions[fi];
        let at = self.offset_of(&self.functions[fi..]);
        let fail = |d: &'static str| Fail::new(K::BadFunction, at, d);
        self.str_checked(fr.name).ok_or(Fail::new(K::BadString, at, "function name"))?;
        if fr.location != f::NONE && fr.location as usize >= self.locations.len() {
            return Err(Fail::new(K::BadIndex, at, "function location"));
        }
        if fr.attrs != f::NONE && self.attr_header(fr.attrs).is_none_or(|h| h.kind() != f::attr::DICT) {
            return Err(Fail::new(K::BadIndex, at, "function attributes"));
        }
        let (na, nr, nreg) = (fr.num_args as usize, fr.num_results as usize, fr.num_registers as usize);
        let sig = self
            .pool_words(fr.signature, na.checked_add(nr).ok_or(fail("signature"))?)
            .ok_or(fail("signature"))?;
        if sig.iter().any(|t| *t as usize >= self.types.len()) {
            return Err(fail("signature type"));
        }
        match fr.kind {
            f::FUNC_NATIVE => {
                return if nreg == 0 && fr.num_kernels == 0 {
                    Ok(())
                } else {
                    Err(fail("native function with a body"))
                };
            }
            f::FUNC_BEF => {}
            _ => return Err(fail("kind")),
        }
        let regs: &[RegisterRecord] = cast(bytemuck_words(
            self.pool_words(fr.registers, nreg.checked_mul(4).ok_or(fail("register table"))?)
                .ok_or(fail("register table"))?,
        ))
        .ok_or(fail("register table"))?;
        let results = self.pool_words(fr.result_regs, nr).ok_or(fail("result registers"))?;
        let nk = fr.num_kernels as usize;
        let first = fr.first_kernel as usize;
        let kernels =
            self.kernels.get(first..first.checked_add(nk).ok_or(fail("kernels"))?).ok_or(fail("kernels"))?;
        if na > nreg
            || results.iter().any(|r| *r as usize >= nreg)
            || fr.frame_bytes32 as usize != f::frame_bytes(4, nreg, nk)
            || fr.frame_bytes64 as usize != f::frame_bytes(8, nreg, nk)
        {
            return Err(fail("arguments, results or frame size"));
        }
        for (i, t) in sig[..na].iter().enumerate() {
            if regs[i].ty != *t {
                return Err(fail("argument register type differs from signature"));
            }
        }
        for (r, t) in results.iter().zip(&sig[na..]) {
            if regs[*r as usize].ty != *t {
                return Err(fail("result register type differs from signature"));
            }
        }
        for r in regs {
            let users = self.pool_words(r.users, r.num_users as usize).ok_or(fail("users"))?;
            let sorted = users.windows(2).all(|w| w[0] <= w[1]);
            if r.ty as usize >= self.types.len() || !sorted || users.last().is_some_and(|u| *u as usize >= nk)
            {
                return Err(fail("register record"));
            }
        }
        let mut cursors = Scratch::new(scratch, nreg).ok_or(Fail::new(K::OutOfMemory, at, ""))?;
        self.verify_kernels(fi, fr, kernels, regs, results, cursors.words())
    }

    /// Each kernel's arguments must be defined earlier (so the graph is acyclic), its results
    /// must be the next registers, and the users lists must list exactly the kernels' uses.
    #[allow(clippy::too_many_arguments)]
    fn verify_kernels(
        &self,
        fi: usize,
        fr: FunctionRecord,
        kernels: &[KernelRecord],
        regs: &[RegisterRecord],
        results: &[u32],
        cursor: &mut [u32],
    ) -> Check<()> {
        let mut next = fr.num_args;
        for (ki, k) in kernels.iter().enumerate() {
            let at = self.offset_of(core::slice::from_ref(k));
            let fail = |kind, d: &'static str| Fail::new(kind, at, d);
            if k.code as usize >= self.kernel_names.len() {
                return Err(fail(K::BadIndex, "kernel code"));
            }
            if k.location != f::NONE && k.location as usize >= self.locations.len() {
                return Err(fail(K::BadIndex, "kernel location"));
            }
            let args =
                self.pool_words(k.args, k.num_args() as usize).ok_or(fail(K::BadKernel, "arguments"))?;
            for &a in args {
                if a >= next {
                    return Err(fail(K::BadKernel, "argument used before it is defined"));
                }
                let r = &regs[a as usize];
                let c = &mut cursor[a as usize];
                let listed = self.pool_words(r.users, r.num_users as usize).and_then(|u| u.get(*c as usize));
                if listed != Some(&(ki as u32)) {
                    return Err(fail(K::BadKernel, "users list does not match the uses"));
                }
                *c += 1;
            }
            if k.first_result != next {
                return Err(fail(K::BadKernel, "result registers out of order"));
            }
            next = next.checked_add(k.num_results()).ok_or(fail(K::BadKernel, "results"))?;
            if next > fr.num_registers {
                return Err(fail(K::BadKernel, "more results than registers"));
            }
            let na = k.num_attrs() as usize;
            let attrs = self.pool_words(k.attrs, na * 3).ok_or(fail(K::BadKernel, "attributes"))?;
            let (idx, names) = attrs.split_at(na);
            if idx.iter().any(|a| *a as usize >= self.attr_index.len())
                || names
                    .chunks_exact(2)
                    .any(|n| self.str_checked(StrRef { offset: n[0], len: n[1] }).is_none())
            {
                return Err(fail(K::BadKernel, "attribute index or name"));
            }
            let regions =
                self.pool_words(k.regions, k.num_regions() as usize).ok_or(fail(K::BadKernel, "regions"))?;
            // A region's function comes after its owner's, so regions nest without cycles.
            let bad_region = |ri: &u32| {
                *ri as usize <= fi || self.functions.get(*ri as usize).is_none_or(|g| g.kind != f::FUNC_BEF)
            };
            if regions.iter().any(bad_region) {
                return Err(fail(K::BadKernel, "region function"));
            }
        }
        let at = self.offset_of(&self.functions[fi..]);
        if next != fr.num_registers {
            return Err(Fail::new(K::BadFunction, at, "registers not all defined"));
        }
        for (c, r) in cursor.iter().zip(regs) {
            if *c != r.num_users {
                return Err(Fail::new(K::BadFunction, at, "users list longer than the uses"));
            }
        }
        for r in results {
            cursor[*r as usize] += 1;
        }
        for (c, r) in cursor.iter().zip(regs) {
            if *c != r.num_uses {
                return Err(Fail::new(K::BadFunction, at, "use count"));
            }
        }
        Ok(())
    }

    /// Resolve every kernel name once; an unknown name is reported with the location of its
    /// first use.
    fn check_kernel_names(&self, kernels: &dyn KernelLookup) -> Result<(), BefError> {
        for code in 0..self.kernel_names.len() as u32 {
            if kernels.lookup(self.kernel_name(code)).is_none() {
                return Err(self.unknown_kernel(code));
            }
        }
        Ok(())
    }

    /// The error for kernel name `code` missing from the registry: its name, the offset of
    /// its record and the location of its first use.
    #[cold]
    #[inline(never)]
    pub(crate) fn unknown_kernel(&self, code: u32) -> BefError {
        let at = self.kernel_names.get(code as usize).map_or(0, |r| self.offset_of(core::slice::from_ref(r)));
        let mut e = BefError::new(K::UnknownKernel, at, self.kernel_name(code));
        if let Some(k) = self.kernels.iter().find(|k| k.code == code) {
            e.location = self.location(k.location);
        }
        e
    }

    /// [`load_preverified`](Self::load_preverified) without the kernel names, for
    /// [`Program`](crate::executor::Program), which resolves each name once itself.
    ///
    /// # Safety
    ///
    /// As for [`load_preverified`](Self::load_preverified).
    pub(crate) unsafe fn load_preverified_unresolved(bytes: &'a [u8]) -> Result<Self, BefError> {
        Ok(Self::sections(bytes)?)
    }
}

/// The byte offset of `part` (a slice of `bytes`) in `bytes`.
fn offset_in<T>(bytes: &[u8], part: &[T]) -> usize {
    part.as_ptr() as usize - bytes.as_ptr() as usize
}

/// Reinterpret words as bytes (for casting pool words to records).
fn bytemuck_words(w: &[u32]) -> &[u8] {
    // SAFETY: u32 has no padding; the byte view covers exactly the same memory.
    unsafe { core::slice::from_raw_parts(w.as_ptr().cast::<u8>(), core::mem::size_of_val(w)) }
}

/// Entries of the per-file section tables: slot 0 (unknown) and one per known id.
const SLOTS: usize = f::section::ARENA_ALT as usize + 1;

/// A bit per required section's slot (slot = id).
const REQUIRED_SLOTS: u32 = {
    let mut mask = 0;
    let mut i = 0;
    while i < f::section::REQUIRED.len() {
        mask |= 1 << f::section::REQUIRED[i];
        i += 1;
    }
    mask
};

/// Bytes per record of each known section, by slot (1 for byte sections, and for slot 0).
/// `Sections::records` asserts each record type's size against it, which also catches a
/// size that would not fit a `u8`.
const RECORD_BYTES: [u8; SLOTS] = {
    let mut t = [1; SLOTS];
    t[f::section::TYPES as usize] = size_of::<StrRef>() as u8;
    t[f::section::KERNEL_NAMES as usize] = size_of::<StrRef>() as u8;
    t[f::section::FUNCTIONS as usize] = size_of::<FunctionRecord>() as u8;
    t[f::section::KERNELS as usize] = size_of::<KernelRecord>() as u8;
    t[f::section::POOL as usize] = 4;
    t[f::section::LOCATIONS as usize] = size_of::<LocationRecord>() as u8;
    t[f::section::MODULE as usize] = 4;
    t[f::section::ATTR_INDEX as usize] = 4;
    t[f::section::STREAMS as usize] = 4;
    t[f::section::ARENA as usize] = 4;
    t[f::section::ARENA_ALT as usize] = 4;
    t
};

/// The known sections' bytes, by slot, as [`BefFile::sections`] finds them. Invariant (what
/// the directory walk checks before it stores a section): each starts 8-aligned and holds
/// whole records of `RECORD_BYTES[slot]` bytes; an absent section is the empty start of the
/// file, which is 8-aligned too.
struct Sections<'a>([&'a [u8]; SLOTS]);

impl<'a> Sections<'a> {
    fn bytes(&self, id: u32) -> &'a [u8] {
        self.0[section_slot(id)]
    }

    /// Section `ID` as its records, without a check at run time: the compiler checks that
    /// `T` is the section's record type (by size), the invariant does the rest.
    #[inline(always)] // one instance per section: a call would cost more than the body
    fn records<T: Record, const ID: u32>(&self) -> &'a [T] {
        const { assert!(RECORD_BYTES[ID as usize] as usize == size_of::<T>() && ID as usize != 0) };
        let bytes = self.bytes(ID);
        // SAFETY: by the invariant, 8-aligned (`Record` types align to 4 at most) and whole
        // records of `RECORD_BYTES[ID]` bytes, which is `T`'s size (asserted above); `Record`
        // types accept any bit pattern.
        unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), bytes.len() / size_of::<T>()) }
    }
}

/// Position of a known section id in the per-file tables (0: unknown).
fn section_slot(id: u32) -> usize {
    if (1..SLOTS as u32).contains(&id) { id as usize } else { 0 }
}

/// Zeroed `u32` scratch memory from an allocator, freed on drop.
struct Scratch {
    alloc: Allocator,
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

impl Scratch {
    fn new(alloc: Allocator, n: usize) -> Option<Self> {
        let layout = Layout::array::<u32>(n.max(1)).ok()?;
        let ptr = alloc.allocate(layout).ok()?;
        // SAFETY: fresh block of `layout.size()` bytes.
        unsafe { core::ptr::write_bytes(ptr.as_ptr(), 0, layout.size()) };
        Some(Scratch { alloc, ptr, len: n, layout })
    }

    fn words(&mut self) -> &mut [u32] {
        // SAFETY: the block holds `len` zero-initialised u32s, exclusively ours.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u32>(), self.len) }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` from this allocator with this layout.
        unsafe { self.alloc.deallocate(self.ptr, self.layout) }
    }
}

/// Whether a DENSE attribute's payload is well formed (docs/bef.md, "Attributes"): a known
/// element type, a rank up to 16, non-negative dims whose element count times the element
/// size (without overflow) is exactly the data's length. Bools are checked to be 0/1 where the
/// elements are read (`AttrRef::get_dense`), so firmware that has no tensor kernels does not
/// link that loop. Kept out of line: firmware that never sees a dense attribute pays only for
/// the call.
#[inline(never)]
fn dense_payload_ok(code: u8, payload: &[u8]) -> bool {
    let (head, data) = payload.split_at(payload.len().min(8));
    let rank = le_u64(head);
    if head.len() < 8 || rank > f::dense::MAX_RANK as u64 || data.len() < 8 * rank as usize {
        return false;
    }
    let (dims, data) = data.split_at(8 * rank as usize);
    let mut bytes = f::dense::size(code);
    for d in dims.chunks_exact(8) {
        let dim = usize::try_from(le_u64(d)).ok().filter(|d| *d as u64 <= i64::MAX as u64);
        match dim.and_then(|d| bytes.checked_mul(d)) {
            Some(b) => bytes = b,
            None => return false,
        }
    }
    // An unknown code has size 0, and so does a tensor with a zero dim: only the latter is valid.
    f::dense::size(code) != 0 && bytes == data.len()
}

/// The little-endian `u64` at the start of `b` (0 when shorter).
fn le_u64(b: &[u8]) -> u64 {
    b.get(..8).and_then(|w| w.try_into().ok()).map_or(0, u64::from_le_bytes)
}
