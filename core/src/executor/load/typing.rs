//! Types checked at load (docs/execution.md): from the registered signatures, which kernels
//! of a program have the argument types of every use proved, so that release builds skip
//! their per-call type checks; and the load error for an argument whose type is known to be
//! wrong.

use core::alloc::Layout;

use crate::allocator::Allocator;
use crate::bef::format::{FunctionRecord, KernelRecord};
use crate::bef::{BefError, BefErrorKind, BefFile};
use crate::diagnostic::MessageText;
use crate::kernel::{KernelEntry, TypeKey};

/// Mark the entries of `table` (the implementation of each kernel code of `file`) whose
/// every use in `file` is proved.
///
/// A register's type is what its producing kernel's signature guarantees; it is unknown for
/// function arguments and for results of kernels without one. A use of a strict kernel with
/// a signature is proved when every argument the signature fixes comes from a register of
/// that very type. An argument from a register of another known type fails the load with
/// [`ArgumentType`](BefErrorKind::ArgumentType), naming the kernel, the argument, both types
/// and the kernel's location. Without memory for the scratch (a pointer per register of
/// the largest function, freed before returning) nothing is proved.
pub(crate) fn check(file: &BefFile<'_>, table: &mut [KernelEntry], alloc: Allocator) -> Result<(), BefError> {
    let mut any = false;
    for e in table.iter_mut() {
        e.proved = e.signature().is_some() && !e.is_non_strict();
        any |= e.proved;
    }
    if !any {
        return Ok(());
    }
    let nf = file.num_functions() as u32;
    let records = || (0..nf).filter_map(|f| file.function_record(f));
    let max_regs = records().map(|r| file.registers_of(r).len()).max().unwrap_or(0);
    // Without memory for the scratch nothing is proved: every argument is checked per call.
    let layout = Layout::array::<Option<TypeKey>>(max_regs.max(1));
    let Some((layout, scratch)) = layout.ok().and_then(|l| Some((l, alloc.allocate(l).ok()?))) else {
        table.iter_mut().for_each(|e| e.proved = false);
        return Ok(());
    };
    // SAFETY: a fresh block of `max_regs` (at least 1) `Option<TypeKey>`s, aligned for
    // them; every element is written before the slice is made.
    let reg_types = unsafe {
        let p = scratch.as_ptr().cast::<Option<TypeKey>>();
        for i in 0..max_regs {
            p.add(i).write(None);
        }
        core::slice::from_raw_parts_mut(p, max_regs)
    };
    let result = records().try_for_each(|rec| check_function(file, table, rec, reg_types));
    // SAFETY: allocated above with this layout; its elements need no drop.
    unsafe { alloc.deallocate(scratch, layout) };
    result
}

/// [`check`] of one function, with `reg_types` as scratch for its register types.
fn check_function(
    file: &BefFile<'_>,
    table: &mut [KernelEntry],
    rec: &FunctionRecord,
    reg_types: &mut [Option<TypeKey>],
) -> Result<(), BefError> {
    let regs = &mut reg_types[..file.registers_of(rec).len()];
    regs.fill(None);
    let kernels = file.kernels_of(rec);
    for kr in kernels {
        if let Some(sig) = table.get(kr.code as usize).and_then(KernelEntry::signature) {
            for j in 0..kr.num_results() {
                let r = kr.first_result.checked_add(j).map_or(usize::MAX, |r| r as usize);
                if let Some(t) = regs.get_mut(r) {
                    *t = sig.result_type(j as usize);
                }
            }
        }
    }
    for kr in kernels {
        if let Some(e) = table.get_mut(kr.code as usize) {
            e.proved &= proved(file, e, kr, regs)?;
        }
    }
    Ok(())
}

/// Whether this use `kr` of kernel `e` has every argument its signature fixes proved by
/// `regs`, the function's register types; an error when one is known to be another type.
fn proved(
    file: &BefFile<'_>,
    e: &KernelEntry,
    kr: &KernelRecord,
    regs: &[Option<TypeKey>],
) -> Result<bool, BefError> {
    let Some(sig) = e.signature() else { return Ok(false) };
    let args = file.kernel_args(kr);
    let mut all = !e.is_non_strict();
    for (i, want) in sig.typed_args() {
        match args.get(i).and_then(|r| regs.get(*r as usize)).copied().flatten() {
            Some(have) if have == want => {}
            Some(have) => return Err(mismatch(file, e, kr, i, have, want)),
            None => all = false,
        }
    }
    Ok(all)
}

/// The load error for argument `i` of `kr`, known to hold a `have` where it takes a `want`.
#[cold]
fn mismatch(
    file: &BefFile<'_>,
    e: &KernelEntry,
    kr: &KernelRecord,
    i: usize,
    have: TypeKey,
    want: TypeKey,
) -> BefError {
    let offset = (kr as *const KernelRecord).addr().wrapping_sub(file.bytes().as_ptr().addr());
    let mut text = MessageText::new("", false);
    crate::write_diag!(text, "{} argument {} is {}, not {}", e.name, i, have.short_name(), want.short_name());
    let mut err = BefError::new(BefErrorKind::ArgumentType, offset, text.as_str());
    err.location = file.location(kr.location);
    err
}
