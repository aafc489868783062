//! Scalar registers (docs/execution.md): which kernels of a program run on register words,
//! decided once at load, and how such a kernel runs.
//!
//! A register is *inline* when its value never needs to be an async value: its producer is
//! a scalar kernel whose every operand is inline (so the value can be neither unavailable
//! nor an error), it is not a function result, and every user is a scalar kernel that reads
//! it as the type the producer makes. An inline register holds the value's word itself
//! instead of a pointer. Every use of a kernel with a scalar form *runs scalar*: it reads
//! inline operands as words and takes the others as async values; its result is inline, or
//! made into an async value.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use super::frame::Frame;
use super::program::Program;
use super::run::{Body, Failure, ReadyQueue, failure, notify, publish_result};
use crate::allocator::Allocator;
use crate::async_value::RcAsyncValue;
use crate::bef::BefFile;
use crate::bef::format::{FunctionRecord, KernelRecord};
use crate::kernel::{AttrRef, KernelEntry, ScalarFn, Slot};
use crate::sync::Ordering;

/// Mode bit: the kernel runs on register words.
pub(super) const SCALAR: u8 = 1;
/// Mode bit: the kernel's result stays in its register as a word.
pub(super) const INLINE: u8 = 2;
/// Mode bit of argument 0 (`WORD << i` for argument `i`): the argument is a register word;
/// without it the register holds an async value.
const WORD: u8 = 4;
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

/// Run kernel `kr`, planned [`SCALAR`] with `mode` (docs/execution.md, "Scalar registers"):
/// its word operands are read from their registers, its other operands taken as async
/// values as the generic path takes them. As there, the last error operand, else the
/// cancellation, else an operand missing or of the wrong type, is the result instead of a
/// call. An inline result is stored as a word (only kernels whose operands are all words
/// have one, so only cancellation can stop it: it is then left unwritten, and its users,
/// all scalar, see the cancellation too and skip); any other result is an async value.
#[inline(never)]
pub(super) fn run(frame: &Frame, f: &Body<'_>, kr: &KernelRecord, mode: u8, queue: &mut ReadyQueue<'_>) {
    let program: &Program<'_> = frame.program();
    let file = &program.file;
    let exec = frame.exec();
    let r = kr.first_result;
    let sc = program.entry(kr.code).scalar();
    let args = file.kernel_args(kr);
    let n = args.len().min(MAX_PARAMS);
    let all_words = (WORD << n) - WORD; // the bits of arguments 0..n
    let outcome = match sc {
        // The common case: every operand a word (no reference to take, no type to check).
        Some(sc) if mode & all_words == all_words => {
            if exec.request().is_cancelled() {
                Err(None)
            } else {
                let mut words = [0usize; MAX_PARAMS];
                for (w, &a) in words.iter_mut().zip(args) {
                    *w = frame.reg(a).load(Ordering::Acquire).addr();
                }
                call(file, kr, sc, &words[..n]).ok_or_else(|| Some(failure(exec, Failure::NoResultSet)))
            }
        }
        Some(sc) => with_values(frame, kr, sc, mode, queue),
        // The plan marks only kernels with a scalar form.
        None => Err(Some(failure(exec, Failure::NoResultSet))),
    };
    if mode & INLINE != 0 {
        // Every operand is a word, and the load checked every argument and attribute the
        // form reads: only cancellation stops it, and then no user reads the word.
        debug_assert!(
            matches!(outcome, Ok(_) | Err(None)),
            "scalar form of kernel code {} failed with word operands",
            kr.code
        );
        if let Ok(w) = outcome {
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
    let v = match (outcome, sc) {
        (Ok(w), Some(sc)) => match (sc.make)(exec.allocator(), &queue.spare, w) {
            Ok(v) => v,
            Err(e) => no_memory_for_result(program, exec, kr, e),
        },
        (Err(Some(e)), _) => e,
        _ => match exec.request().cancel_value() {
            Some(e) => e,
            None => failure(exec, Failure::NoResultSet),
        },
    };
    publish_result(frame, f, kr, 0, Some(v), queue);
}

/// Call `sc`, the form of `kr`, on argument `words` and `kr`'s attributes.
#[inline(always)]
fn call(file: &BefFile<'_>, kr: &KernelRecord, sc: &ScalarFn, words: &[usize]) -> Option<usize> {
    if kr.num_attrs() == 0 {
        return (sc.call)(words, &[]);
    }
    let attrs: heapless::Vec<AttrRef<'_>, MAX_PARAMS> =
        file.kernel_attrs(kr).0.iter().filter_map(|a| file.attr_ref(*a)).take(MAX_PARAMS).collect();
    (sc.call)(words, &attrs)
}

/// [`run`] of a kernel with an operand held in an async value: its word operands are read
/// from their registers, the others taken as the generic path takes them (and dropped, the
/// last reference's block kept for the result, before returning). `Ok` with the result
/// word, or the error that is the result instead (`None`: the cancellation).
#[inline(never)]
fn with_values(
    frame: &Frame,
    kr: &KernelRecord,
    sc: &ScalarFn,
    mode: u8,
    queue: &mut ReadyQueue<'_>,
) -> Result<usize, Option<RcAsyncValue>> {
    let program: &Program<'_> = frame.program();
    let file = &program.file;
    let exec = frame.exec();
    let args = file.kernel_args(kr);
    let mut words = [0usize; MAX_PARAMS];
    // Operands held in async values, one reference each.
    let mut held = [const { None::<RcAsyncValue> }; MAX_PARAMS];
    // The last error operand: `Some(Some(e))` an async value holding an error, `Some(None)`
    // a word under cancellation (it stands for the cancellation error its producer would
    // have made on the generic path: exact when the cancellation came before the producer
    // ran; when it came between the two, either error is an outcome the race allows).
    let mut err = None;
    let cancelled = exec.request().is_cancelled();
    let (mut missing, mut wrong) = (false, None);
    for (i, &a) in args.iter().enumerate().take(MAX_PARAMS) {
        if mode & (WORD << i) != 0 {
            words[i] = frame.reg(a).load(Ordering::Acquire).addr();
            if cancelled {
                err = Some(None);
            }
            continue;
        }
        let Some(v) = frame.take(a) else {
            missing = true;
            continue;
        };
        if v.is_error() {
            err = Some(Some(v.clone()));
        } else {
            match (sc.load)(i, &v) {
                Some(w) => words[i] = w,
                None => wrong = wrong.or(Some(i)),
            }
        }
        held[i] = Some(v);
    }
    let outcome = match err {
        Some(e) => Err(e),
        None if cancelled => Err(None),
        None if missing => Err(Some(failure(exec, Failure::OperandsUndefined(file.kernel_name(kr.code))))),
        None => match wrong {
            Some(i) => Err(Some(argument_error(program, exec, kr, sc, i, &held))),
            None => call(file, kr, sc, &words[..args.len().min(MAX_PARAMS)])
                .ok_or_else(|| Some(failure(exec, Failure::NoResultSet))),
        },
    };
    // Operands die before the result is published; the block of one whose last reference
    // dies here may take the result (docs/execution.md, "Result blocks").
    for v in held.into_iter().flatten() {
        if let Ok(block) = v.into_spare() {
            queue.spare.set(Some(block));
        }
    }
    outcome
}

/// Argument `i`, an async value, is not the type the kernel reads: the error a typed
/// kernel's `Argument` reports (to the diagnostic sink, with the kernel's location).
#[cold]
#[inline(never)]
fn argument_error(
    program: &Program<'_>,
    exec: &crate::host_context::ExecutionContext<'_>,
    kr: &KernelRecord,
    sc: &ScalarFn,
    i: usize,
    held: &[Option<RcAsyncValue>],
) -> RcAsyncValue {
    let want = sc.arg_types().nth(i).map_or("?", |t| t.name());
    let diag = match held.get(i).and_then(Option::as_ref) {
        Some(v) if !v.is_available() => crate::diag!(Internal, "argument {} is not available", i),
        Some(v) => {
            crate::diag!(InvalidArgument, "argument {} has type {}, expected {}", i, v.type_name(), want)
        }
        None => crate::diag!(InvalidArgument, "kernel expects argument {}", i),
    };
    report(program, exec, kr, diag)
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
) -> RcAsyncValue {
    report(program, exec, kr, crate::diagnostic::Diagnostic::from(e))
}

/// `diag` as a kernel reports an error (`KernelFrame::report_error`): with the kernel's
/// location, to the diagnostic sink, and as the error value that becomes its result.
fn report(
    program: &Program<'_>,
    exec: &crate::host_context::ExecutionContext<'_>,
    kr: &KernelRecord,
    mut diag: crate::diagnostic::Diagnostic,
) -> RcAsyncValue {
    diag.location = crate::kernel::Invoke::location(program, kr.location).map(|l| l.to_location());
    exec.host().emit_error(&diag);
    RcAsyncValue::error_or_oom(exec.allocator(), diag)
}
