//! Running a kernel the load planned to run on register words (docs/execution.md, "Scalar
//! registers"; the plan is the load half's `scalar_plan`).

use core::ptr;

use super::context::Run;
use super::failure::{Failure, failure};
use crate::async_value::RcAsyncValue;
use crate::bef::BefFile;
use crate::bef::format::KernelRecord;
use crate::executor::load::Program;
use crate::executor::load::{INLINE, MAX_PARAMS, WORD};
use crate::kernel::{AttrRef, ScalarFn};
use crate::sync::Ordering;

impl Run<'_> {
    /// Run kernel `kr`, planned `SCALAR` with `mode` (docs/execution.md, "Scalar registers"):
    /// its word operands are read from their registers, its other operands taken as async
    /// values as the generic path takes them. As there, the last error operand, else the
    /// cancellation, else an operand missing or of the wrong type, is the result instead of a
    /// call. An inline result is stored as a word (only kernels whose operands are all words
    /// have one, so only cancellation can stop it: it is then left unwritten, and its users,
    /// all scalar, see the cancellation too and skip); any other result is an async value.
    // Inlined into the ready loop: a chain of scalar kernels (TFRT's serial graph) runs one
    // call shorter per kernel, and the loop keeps the run context's fields in registers.
    #[inline(always)]
    pub(super) fn run_scalar(&mut self, kr: &KernelRecord, mode: u8) {
        let (frame, body) = (self.frame, self.body);
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
            Some(sc) => self.with_values(kr, sc, mode),
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
            let rec = &body.regs[r as usize];
            let users = file.pool_words(rec.users, rec.num_users as usize).unwrap_or(&[]);
            // Consumers in descending textual order, as `publish` notifies them.
            for &u in users.iter().rev() {
                self.queue.notify(frame, u);
            }
            return;
        }
        let v = match (outcome, sc) {
            (Ok(w), Some(sc)) => match (sc.make)(exec.allocator(), &self.queue.spare, w) {
                Ok(v) => v,
                Err(e) => no_memory_for_result(program, exec, kr, e),
            },
            (Err(Some(e)), _) => e,
            _ => match exec.request().cancel_value() {
                Some(e) => e,
                None => failure(exec, Failure::NoResultSet),
            },
        };
        self.publish_result(kr, 0, Some(v));
    }

    /// [`run_scalar`](Self::run_scalar) of a kernel with an operand held in an async value: its word operands are read
    /// from their registers, the others taken as the generic path takes them (and dropped, the
    /// last reference's block kept for the result, before returning). `Ok` with the result
    /// word, or the error that is the result instead (`None`: the cancellation).
    #[inline(never)]
    fn with_values(
        &mut self,
        kr: &KernelRecord,
        sc: &ScalarFn,
        mode: u8,
    ) -> Result<usize, Option<RcAsyncValue>> {
        let frame = self.frame;
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
            None if missing => {
                Err(Some(failure(exec, Failure::OperandsUndefined(file.kernel_name(kr.code)))))
            }
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
                self.queue.spare.set(Some(block));
            }
        }
        outcome
    }
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
