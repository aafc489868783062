//! Scalar registers (docs/execution.md): which kernels of a program run on register words,
//! decided once at load, and how such a kernel runs.
//!
//! A register is *inline* when its value never needs to be an async value: its producer is
//! a scalar kernel whose every operand is inline (so the value can be neither unavailable
//! nor an error), it is not a function result, and every user is a scalar kernel that reads
//! it as the type the producer makes. An inline register holds the value's word itself
//! instead of a pointer. A kernel *runs scalar* when it has a scalar form and all its
//! operands are inline; its result is inline, or made into an async value when it escapes.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use super::frame::Frame;
use super::program::Program;
use super::run::{Body, Failure, ReadyQueue, failure, notify, publish_result};
use crate::allocator::Allocator;
use crate::bef::BefFile;
use crate::bef::format::{FunctionRecord, KernelRecord};
use crate::kernel::{AttrRef, KernelEntry, ScalarFn, Slot};
use crate::sync::Ordering;

/// Mode bit: the kernel runs on register words.
pub(super) const SCALAR: u8 = 1;
/// Mode bit: the kernel's result stays in its register as a word.
pub(super) const INLINE: u8 = 2;
/// Most parameters a scalar kernel has (`scalar_kernel_entry!` takes up to 4).
const MAX_PARAMS: usize = 4;
/// Mode bit: the record was planned (as part of one function; a record two functions
/// claimed would get two plans, so the plan is dropped instead).
const PLANNED: u8 = 0x80;
/// A register's scratch flag during the plan: inline.
const REG_INLINE: u32 = 1;

/// The mode of every kernel of `file` (indexed like the file's kernel records), in a block
/// from `alloc`; `None` when no kernel can run scalar or there is no memory for the plan
/// (every kernel then runs the generic path, which is always correct).
pub(super) fn plan(file: &BefFile<'_>, table: &[KernelEntry], alloc: Allocator) -> Option<Modes> {
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
    for (k, kr) in kernels.iter().enumerate() {
        let Some(made) = candidate(file, table, kr).map(|s| s.result) else { continue };
        let r = kr.first_result as usize;
        let Some(reg) = registers.get(r) else { continue };
        let reads_it = |u: &u32| {
            let Some(ukr) = kernels.get(*u as usize) else { return false };
            let Some(sc) = candidate(file, table, ukr) else { return false };
            let args = file.kernel_args(ukr);
            args.iter().zip(sc.arg_types()).all(|(a, t)| *a as usize != r || t == made)
        };
        if reg.num_uses == reg.num_users && users(r).iter().all(reads_it) && modes[k] & SCALAR != 0 {
            regs[r] = REG_INLINE;
        }
    }
    // Kernels with an operand that is not inline cannot run scalar; demoting one takes its
    // result and its operands out of the inline set, which may demote their users in turn.
    let mut top = 0;
    for (k, kr) in kernels.iter().enumerate() {
        if modes[k] & SCALAR != 0
            && file.kernel_args(kr).iter().any(|a| regs.get(*a as usize) != Some(&REG_INLINE))
        {
            modes[k] &= !SCALAR;
            work[top] = k as u32;
            top += 1;
        }
    }
    while top > 0 {
        top -= 1;
        let kr = &kernels[work[top] as usize];
        let results = (0..kr.num_results()).map(|j| kr.first_result.wrapping_add(j));
        for r in file.kernel_args(kr).iter().copied().chain(results) {
            let Some(flag) = regs.get_mut(r as usize) else { continue };
            if *flag != REG_INLINE {
                continue;
            }
            *flag = 0;
            for &u in users(r as usize) {
                if let Some(m) = modes.get_mut(u as usize)
                    && *m & SCALAR != 0
                {
                    // Each kernel is demoted once, so the list never holds more than all.
                    *m &= !SCALAR;
                    work[top] = u;
                    top += 1;
                }
            }
        }
    }
    for (m, kr) in modes.iter_mut().zip(kernels) {
        if *m & SCALAR != 0 && regs.get(kr.first_result as usize) == Some(&REG_INLINE) {
            *m |= INLINE;
        }
    }
}

/// The planned modes of a program's kernels, in allocator memory.
pub(super) struct Modes {
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
    pub(super) fn of(&self, first: usize, n: usize) -> &[u8] {
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

/// Run kernel `kr`, planned [`SCALAR`] with `mode`, on its operands' register words
/// (docs/execution.md, "Scalar registers"). Its operands are inline, so they are available
/// and not errors; under cancellation it does not run: an inline result is left unwritten
/// (its users, all scalar, see the cancellation too and skip), an escaping one is the
/// cancellation error, as on the generic path.
#[inline(never)]
pub(super) fn run(frame: &Frame, f: &Body<'_>, kr: &KernelRecord, mode: u8, queue: &mut ReadyQueue<'_>) {
    let program: &Program<'_> = frame.program();
    let file = &program.file;
    let exec = frame.exec();
    let r = kr.first_result;
    let sc = program.entry(kr.code).scalar();
    let word = match sc {
        Some(sc) if !exec.request().is_cancelled() => {
            let args = file.kernel_args(kr);
            let mut words = [0usize; MAX_PARAMS];
            for (w, &a) in words.iter_mut().zip(args) {
                *w = frame.reg(a).load(Ordering::Acquire).addr();
            }
            let words = &words[..args.len().min(MAX_PARAMS)];
            if kr.num_attrs() == 0 {
                (sc.call)(words, &[])
            } else {
                let attrs: heapless::Vec<AttrRef<'_>, MAX_PARAMS> = file
                    .kernel_attrs(kr)
                    .0
                    .iter()
                    .filter_map(|a| file.attr_ref(*a))
                    .take(MAX_PARAMS)
                    .collect();
                (sc.call)(words, &attrs)
            }
        }
        _ => None,
    };
    if mode & INLINE != 0 {
        // The load checked every argument and attribute the form reads, so it fails only
        // under cancellation, when no user reads the word.
        debug_assert!(word.is_some() || exec.request().is_cancelled(), "scalar form of {} failed", kr.code);
        if let Some(w) = word {
            // The word is the value; the users read it after their ready count, which
            // this store happens before (release here, acquire there, or one thread).
            frame.reg(r).store(ptr::without_provenance_mut(w), Ordering::Release);
        }
        let rec = &f.regs[r as usize];
        let users = file.pool_words(rec.users, rec.num_users as usize).unwrap_or(&[]);
        // Consumers in descending textual order, as `publish` notifies them.
        for &u in users.iter().rev() {
            notify(frame, u, queue);
        }
        return;
    }
    let v = match (word, sc) {
        (Some(w), Some(sc)) => match (sc.make)(exec.allocator(), &queue.spare, w) {
            Ok(v) => v,
            Err(e) => no_memory_for_result(program, exec, kr, e),
        },
        _ => match exec.request().cancel_value() {
            Some(e) => e,
            None => failure(exec, Failure::NoResultSet),
        },
    };
    publish_result(frame, f, kr, 0, Some(v), queue);
}

/// No memory for an escaping result: reported as a kernel's `emplace_result` reports it
/// (the diagnostic sink gets the error with the kernel's location), and the result is that
/// error.
#[cold]
#[inline(never)]
fn no_memory_for_result(
    program: &Program<'_>,
    exec: &crate::host_context::ExecutionContext<'_>,
    kr: &KernelRecord,
    e: crate::allocator::AllocError,
) -> crate::async_value::RcAsyncValue {
    let mut diag = crate::diagnostic::Diagnostic::from(e);
    diag.location = crate::kernel::Invoke::location(program, kr.location).map(|l| l.to_location());
    exec.host().emit_error(&diag);
    crate::async_value::RcAsyncValue::error_or_oom(exec.allocator(), diag)
}
