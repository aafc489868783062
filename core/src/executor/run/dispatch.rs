//! Running one ready kernel (docs/execution.md, steps 1-5 per kernel): its operands taken
//! from their registers, the call (or the error that replaces it), the operands dropped,
//! the results published. Kernels planned to run on register words take the path of
//! `scalar_dispatch` instead.

use core::cell::Cell;
use core::mem::{ManuallyDrop, MaybeUninit};

use super::context::Run;
use super::failure::{Failure, failure, fill_error};
use crate::allocator::Allocator;
use crate::async_value::{RcAsyncValue, Spare};
use crate::bef::BefFile;
use crate::bef::format::KernelRecord;
use crate::executor::buf::{CallBuf, INLINE, WideArrays};
use crate::executor::load::Program;
use crate::host_context::ExecutionContext;
use crate::kernel::{AttrRef, KernelEntry, KernelFrame, Prepared};

impl Run<'_> {
    /// Run ready kernel `k`.
    #[inline(always)] // the ready loop's body: one copy, in `process`
    pub(super) fn run_kernel(&mut self, k: u32) {
        // (Locals: a callee taking `&mut self` could change the fields, so the compiler
        // would reload them after every call.)
        let (frame, body) = (self.frame, self.body);
        let program = frame.program();
        let kr = &body.kernels[k as usize];
        // A kernel the load planned to run on register words (docs/execution.md, "Scalar
        // registers") never takes the generic path: its operands hold words, not values.
        #[cfg(feature = "scalar-registers")]
        if let Some(&mode) = body.modes.get(k as usize)
            && mode & crate::executor::load::SCALAR != 0
        {
            return self.run_scalar(kr, mode);
        }
        let arg_regs = program.file.kernel_args(kr);
        let n_res = kr.num_results() as usize;
        let exec = frame.exec();
        // Operands and result slots: plain arrays on the stack for a narrow kernel (the
        // common case: no buffer bookkeeping), one allocator block for a wide one. Every slot
        // is emptied by the publication below, so neither array needs drop glue.
        let mut args_inline = [const { MaybeUninit::<RcAsyncValue>::uninit() }; INLINE];
        // (All slots start empty: a few vector stores, where emptying only `n_res` of them
        // costs a call to `memset`.)
        let slots_inline = ManuallyDrop::new([const { Cell::new(None::<RcAsyncValue>) }; INLINE]);
        let mut wide = None;
        let (args_base, slots_base) = if arg_regs.len() <= INLINE && n_res <= INLINE {
            (args_inline.as_mut_ptr().cast::<RcAsyncValue>(), slots_inline.as_ptr())
        } else {
            let Some(block) = WideArrays::new(exec.allocator(), arg_regs.len(), n_res) else {
                return self.no_memory_for_call(kr, arg_regs);
            };
            let bases = (block.args(), block.slots());
            wide = Some(block);
            bases
        };
        let entry = program.entry(kr.code);
        let strict = !entry.is_non_strict();
        let mut err = exec.request().cancel_value();
        let mut n = 0;
        for &a in arg_regs {
            if let Some(v) = frame.take(a) {
                if strict && v.is_error() {
                    err = Some(v.clone());
                }
                // SAFETY: `n < arg_regs.len()`, the capacity of the array at `args_base`.
                unsafe { args_base.add(n).write(v) };
                n += 1;
            }
        }
        // SAFETY: the first `n` operands were written above and are read out exactly once
        // below (a panicking kernel leaks them, which is safe); `n_res` slots are initialised
        // (`None`).
        let (taken, slots) = unsafe {
            (core::slice::from_raw_parts(args_base, n), core::slice::from_raw_parts(slots_base, n_res))
        };
        let ready = err.is_none() && n == arg_regs.len();
        // A use with prepared state is called with it instead of its attributes
        // (docs/execution.md, "Prepared state").
        let prepared = if ready && kr.num_attrs() != 0 { body.prepared(k) } else { None };
        if ready && (kr.num_attrs() == 0 || prepared.is_some()) {
            // The common case, inline: every operand is there, no error, no attributes to
            // decode.
            let regions = if kr.num_regions() == 0 { &[][..] } else { program.file.kernel_regions(kr) };
            let prepared = prepared.map(|p| (p, program.file.bytes));
            call_entry(program, exec, kr, entry, (taken, &[], prepared), regions, slots, &self.queue.spare);
        } else {
            self.call_kernel(kr, entry, taken, arg_regs.len(), slots, err);
        }
        // 4. Operands die, in order, before results are published. The block of one whose
        // last reference dies here is kept for the next kernel's result (docs/execution.md,
        // "Result blocks").
        for i in 0..n {
            // SAFETY: initialised above, read once; `taken` is not used again.
            if let Ok(block) = unsafe { args_base.add(i).read() }.into_spare() {
                self.queue.spare.set(Some(block));
            }
        }
        // 5. Results in order.
        for (i, c) in slots.iter().enumerate() {
            self.publish_result(kr, i, c.take());
        }
        drop(wide); // its elements were all moved out above
    }

    /// No memory for a wide kernel's arrays: its operand references are dropped and every
    /// result is an out-of-memory error.
    #[cold]
    #[inline(never)]
    fn no_memory_for_call(&mut self, kr: &KernelRecord, arg_regs: &[u32]) {
        let frame = self.frame;
        for &a in arg_regs {
            drop(frame.take(a));
        }
        let e = failure(frame.exec(), Failure::NoMemoryForCall(frame.program().file.kernel_name(kr.code)));
        for i in 0..kr.num_results() as usize {
            self.publish_result(kr, i, Some(e.clone()));
        }
    }

    /// Steps 1-3 of running kernel `kr` (docs/execution.md) on its operands `args` (`want`
    /// of them were expected): cancellation or the last error operand `err` fills every
    /// result slot; otherwise the kernel runs. A non-strict kernel (`tfrt.call`) receives
    /// error operands like any other value: the callee's own kernels skip on them, as TFRT's
    /// non-strict function execution does.
    #[inline(never)]
    fn call_kernel(
        &self,
        kr: &KernelRecord,
        entry: &KernelEntry,
        args: &[RcAsyncValue],
        want: usize,
        slots: &[Cell<Option<RcAsyncValue>>],
        err: Option<RcAsyncValue>,
    ) {
        let program = self.frame.program();
        let file = &program.file;
        let exec = self.frame.exec();
        let mut attr_buf = CallBuf::empty();
        let (attr_idx, _) = file.kernel_attrs(kr);
        if let Some(e) = err {
            for s in slots {
                s.set(Some(e.clone()));
            }
        } else if args.len() != want {
            fill_error(exec, slots, Failure::OperandsUndefined(file.kernel_name(kr.code)));
        } else if let Some(attrs) = attrs_of(&mut attr_buf, exec.allocator(), file, attr_idx) {
            let regions = file.kernel_regions(kr);
            call_entry(program, exec, kr, entry, (args, attrs, None), regions, slots, &self.queue.spare);
        } else {
            fill_error(exec, slots, Failure::NoMemoryForAttributes(file.kernel_name(kr.code)));
        }
    }
}

/// A use's prepared state and the program bytes its spans point into.
type WithBytes<'a> = Option<(&'a Prepared, &'a [u8])>;

/// Call `entry`, the implementation of kernel `kr`, on its operands, attributes (or prepared
/// state, over the program's bytes), regions and result slots, offering it the queue's
/// `spare` block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn call_entry(
    program: &Program<'_>,
    exec: &ExecutionContext<'_>,
    kr: &KernelRecord,
    entry: &KernelEntry,
    (args, attrs, prepared): (&[RcAsyncValue], &[AttrRef<'_>], WithBytes<'_>),
    regions: &[u32],
    slots: &[Cell<Option<RcAsyncValue>>],
    spare: &Cell<Option<Spare>>,
) {
    let kf = KernelFrame::for_program(
        exec,
        args,
        attrs,
        slots,
        regions,
        program,
        spare,
        kr.location,
        entry.proved,
        prepared,
    );
    (entry.func())(&kf);
}

/// The kernel's attributes as a slice: empty without touching a buffer when there are none.
fn attrs_of<'b, 'a: 'b>(
    buf: &'b mut CallBuf<AttrRef<'a>>,
    alloc: Allocator,
    file: &BefFile<'a>,
    idx: &[u32],
) -> Option<&'b [AttrRef<'a>]> {
    if idx.is_empty() {
        return Some(&[]);
    }
    buf.fill(alloc, idx.len(), idx.iter().filter_map(|a| file.attr_ref(*a))).then(|| buf.as_slice())
}
