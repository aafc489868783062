//! Scalar registers (docs/execution.md): which kernels of a program run on register words,
//! decided once at load (how such a kernel runs is the run half's `scalar_dispatch`).
//!
//! A register is *inline* when its value never needs to be an async value: its producer is
//! a scalar kernel whose every operand is inline (so the value can be neither unavailable
//! nor an error), it is not a function result, and every user is a scalar kernel that reads
//! it as the type the producer makes. An inline register holds the value's word itself
//! instead of a pointer. Every use of a kernel with a scalar form *runs scalar*: it reads
//! inline operands as words and takes the others as async values; its result is inline, or
//! made into an async value.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::allocator::Allocator;
use crate::bef::BefFile;
use crate::bef::format::{FunctionRecord, KernelRecord};
use crate::kernel::{KernelEntry, ScalarFn, Slot};

/// Mode bit: the kernel runs on register words.
pub(crate) const SCALAR: u8 = 1;
/// Mode bit: the kernel's result stays in its register as a word.
pub(crate) const INLINE: u8 = 2;
/// Mode bit of argument 0 (`WORD << i` for argument `i`): the argument is a register word;
/// without it the register holds an async value.
pub(crate) const WORD: u8 = 4;
/// Most parameters a scalar kernel has (`scalar_kernel_entry!` takes up to 4).
pub(crate) const MAX_PARAMS: usize = 4;
/// Mode bit: the record was planned (as part of one function; a record two functions
/// claimed would get two plans, so the plan is dropped instead).
const PLANNED: u8 = 0x80;
/// A register's scratch flag during the plan: inline.
const REG_INLINE: u32 = 1;

/// The mode of every kernel of `file` (indexed like the file's kernel records), in a block
/// from `alloc`; `None` when no kernel can run scalar or there is no memory for the plan
/// (every kernel then runs the generic path, which is always correct).
pub(crate) fn plan(file: &BefFile<'_>, table: &[KernelEntry], alloc: Allocator) -> Option<Modes> {
    if !table.iter().any(|e| e.scalar().is_some()) {
        return None;
    }
    let nk = file.kernels.len();
    let nf = file.num_functions() as u32;
    let records = || (0..nf).filter_map(|f| file.function_record(f));
    let max_regs = records().map(|r| file.registers_of(r).len()).max().unwrap_or(0);
    let max_kernels = records().map(|r| file.kernels_of(r).len()).max().unwrap_or(0);
    let modes = Modes::new(alloc, nk)?;
    // Scratch: a flag per register and a work list of kernels, for the largest function.
    let layout = Layout::array::<u32>(max_regs + max_kernels + 1).ok()?;
    let scratch = alloc.allocate(layout).ok()?.cast::<u32>();
    // SAFETY: a fresh block of `max_regs + max_kernels + 1` `u32`s, each written before the
    // slices are made; `modes` holds `nk` initialised bytes and is not shared yet.
    let (regs, work, all) = unsafe {
        for i in 0..max_regs + max_kernels + 1 {
            scratch.as_ptr().add(i).write(0);
        }
        let s = core::slice::from_raw_parts_mut(scratch.as_ptr(), max_regs + max_kernels + 1);
        let (regs, work) = s.split_at_mut(max_regs);
        (regs, work, core::slice::from_raw_parts_mut(modes.ptr.as_ptr(), nk))
    };
    // The format gives each function its own run of kernel records, but the verifier does
    // not check that runs are disjoint: a record two functions share would be planned
    // twice, and the later plan could make it read as a value what the earlier one made a
    // word. Such a file runs everything generically.
    let mut disjoint = true;
    for rec in records() {
        let first = rec.first_kernel as usize;
        if let Some(m) = all.get_mut(first..first + rec.num_kernels as usize) {
            if m.iter().any(|x| x & PLANNED != 0) {
                disjoint = false;
                break;
            }
            plan_function(file, table, rec, m, regs, work);
            m.iter_mut().for_each(|x| *x |= PLANNED);
        }
    }
    // SAFETY: allocated above with this layout; `u32`s need no drop.
    unsafe { alloc.deallocate(scratch.cast(), layout) };
    disjoint.then_some(modes)
}

/// The kernel's scalar form, when its use `kr` can run scalar: strict, one result, no
/// regions, and exactly the arguments and attributes (of the right kinds) the form reads.
fn candidate<'t>(file: &BefFile<'_>, table: &'t [KernelEntry], kr: &KernelRecord) -> Option<&'t ScalarFn> {
    let e = table.get(kr.code as usize)?;
    let sc = e.scalar().filter(|_| !e.is_non_strict())?;
    if kr.num_results() != 1 || kr.num_regions() != 0 || sc.slots.len() > MAX_PARAMS {
        return None;
    }
    let (attrs, _) = file.kernel_attrs(kr);
    let mut attr = attrs.iter();
    let mut args = 0;
    for slot in sc.slots {
        match slot {
            Slot::Arg(_) => args += 1,
            Slot::Attr(fits) => {
                let a = attr.next().and_then(|i| file.attr_ref(*i))?;
                if !fits(&a) {
                    return None;
                }
            }
        }
    }
    (args == kr.num_args() && attr.next().is_none()).then_some(sc)
}

/// [`plan`] for one function: `modes` are its kernels', `regs` and `work` scratch at least
/// as long as its registers and kernels (plus one).
fn plan_function(
    file: &BefFile<'_>,
    table: &[KernelEntry],
    rec: &FunctionRecord,
    modes: &mut [u8],
    regs: &mut [u32],
    work: &mut [u32],
) {
    let kernels = file.kernels_of(rec);
    let registers = file.registers_of(rec);
    let regs = &mut regs[..registers.len()];
    regs.fill(0);
    for (m, kr) in modes.iter_mut().zip(kernels) {
        *m = if candidate(file, table, kr).is_some() { SCALAR } else { 0 };
    }
    let users =
        |r: usize| file.pool_words(registers[r].users, registers[r].num_users as usize).unwrap_or(&[]);
    // Inline candidates: made by a scalar kernel, not returned, every user a scalar kernel
    // reading it as the type made.
    // (A kernel marked SCALAR above is a candidate, so its entry has a scalar form.)
    let form = |k: usize| {
        let scalar = modes.get(k).is_some_and(|m| m & SCALAR != 0);
        kernels.get(k).filter(|_| scalar).and_then(|kr| table.get(kr.code as usize)?.scalar())
    };
    for (k, kr) in kernels.iter().enumerate() {
        let Some(made) = form(k).map(|s| s.result) else { continue };
        let r = kr.first_result as usize;
        let Some(reg) = registers.get(r) else { continue };
        let reads_it = |u: &u32| {
            let Some(sc) = form(*u as usize) else { return false };
            let args = file.kernel_args(&kernels[*u as usize]);
            args.iter().zip(sc.arg_types()).all(|(a, t)| *a as usize != r || t == made)
        };
        if reg.num_uses == reg.num_users && users(r).iter().all(reads_it) {
            regs[r] = REG_INLINE;
        }
    }
    // A value stays a word only if its producer's operands all are (so it is never
    // unavailable and never an error): a register leaving the set takes the results of its
    // users with it, each register at most once.
    let mut top = 0;
    // (Only candidates, which have one result: another kernel's `first_result` may name the
    // next kernel's register.)
    for (kr, _) in kernels.iter().zip(&*modes).filter(|(_, m)| **m & SCALAR != 0) {
        let r = kr.first_result as usize;
        if regs.get(r) == Some(&REG_INLINE)
            && file.kernel_args(kr).iter().any(|a| regs.get(*a as usize) != Some(&REG_INLINE))
        {
            regs[r] = 0;
            work[top] = r as u32;
            top += 1;
        }
    }
    while top > 0 {
        top -= 1;
        for &u in users(work[top] as usize) {
            let Some(ukr) = kernels.get(u as usize) else { continue };
            let r = ukr.first_result as usize;
            if regs.get(r) == Some(&REG_INLINE) {
                // Only a candidate's result starts inline, one per kernel: the list never
                // holds more than the function's kernels.
                regs[r] = 0;
                work[top] = r as u32;
                top += 1;
            }
        }
    }
    for (m, kr) in modes.iter_mut().zip(kernels) {
        if *m & SCALAR == 0 {
            continue;
        }
        if regs.get(kr.first_result as usize) == Some(&REG_INLINE) {
            *m |= INLINE;
        }
        for (i, a) in file.kernel_args(kr).iter().enumerate().take(MAX_PARAMS) {
            if regs.get(*a as usize) == Some(&REG_INLINE) {
                *m |= WORD << i;
            }
        }
    }
}

/// The planned modes of a program's kernels, in allocator memory.
pub(crate) struct Modes {
    ptr: NonNull<u8>,
    len: usize,
    alloc: Allocator,
}

impl Modes {
    fn new(alloc: Allocator, len: usize) -> Option<Modes> {
        let ptr = alloc.allocate(Layout::array::<u8>(len.max(1)).ok()?).ok()?;
        // SAFETY: a fresh block of at least `len` bytes.
        unsafe { ptr.as_ptr().write_bytes(0, len) };
        Some(Modes { ptr, len, alloc })
    }

    /// The modes of the `n` kernels from `first`.
    pub(crate) fn of(&self, first: usize, n: usize) -> &[u8] {
        // SAFETY: `len` initialised bytes, written only before the program is shared.
        let all = unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        all.get(first..first + n).unwrap_or(&[])
    }
}

impl Drop for Modes {
    fn drop(&mut self) {
        if let Ok(layout) = Layout::array::<u8>(self.len.max(1)) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { self.alloc.deallocate(self.ptr, layout) };
        }
    }
}
