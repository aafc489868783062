//! `tfrt.parallel_for.i32` and `tfrt.parallel_call.i32` (docs/execution.md): split `[start, end)`
//! into fixed-size blocks and run a body per block, halving the block range into work-queue
//! tasks so blocks spread over the queue's threads. `ALL` is the group.

use core::cell::Cell;

use portable_atomic::{AtomicU32, Ordering};

use crate::async_value::{AsyncValueRef, RcAsyncValue};
use crate::chain::Chain;
use crate::diagnostic::{Diagnostic, ErrorCode};
use crate::kernel::{Detached, KernelFrame};

/// Extra operands a body may take besides its block bounds.
const MAX_ARGS: usize = 8;

/// What a parallel loop shares between the tasks running its blocks.
struct Loop {
    /// The kernel's context and program, kept for the blocks' tasks.
    ctx: Detached,
    body: u32,
    args: heapless::Vec<RcAsyncValue, MAX_ARGS>,
    offset: i32,
    total: u32,
    block: u32,
    /// The body returns a chain to wait for ("async body").
    async_body: bool,
    /// Blocks not yet finished (kicked off, and for an async body, its chain available).
    pending: AtomicU32,
    done: AsyncValueRef<Chain>,
}

type Shared = AsyncValueRef<Loop>;

/// Evaluate blocks `[a, b)`: hand the upper half to a task until one block is left, then
/// compute it here.
fn evaluate(state: Shared, a: u32, mut b: u32) {
    let Some(s) = state.get() else { return };
    let exec = s.ctx.exec();
    while b - a > 1 {
        let mid = a + (b - a) / 2;
        let upper = state.clone();
        let end = b;
        if let Err(oom) = exec.host().enqueue_work(move || evaluate(upper, mid, end)) {
            (oom.into_inner())(); // no memory for a task: compute that half here
        }
        b = mid;
    }
    compute_block(&state, a);
}

/// Kick off the body for block `k` with its bounds and the extra operands.
fn compute_block(state: &Shared, k: u32) {
    let Some(s) = state.get() else { return };
    let exec = s.ctx.exec();
    let alloc = exec.allocator();
    let start = k as u64 * s.block as u64;
    let end = (start + s.block as u64).min(s.total as u64);
    let bound =
        |x: u64| AsyncValueRef::available(alloc, s.offset.wrapping_add(x as i32)).map(|v| v.into_rc());
    let mut args = heapless::Vec::<RcAsyncValue, { MAX_ARGS + 2 }>::new();
    match (bound(start), bound(end)) {
        (Ok(a), Ok(b)) => {
            let _ = args.push(a);
            let _ = args.push(b);
        }
        _ => {
            s.done.set_error(Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a parallel block"));
            return;
        }
    }
    args.extend(s.args.iter().cloned());
    let slot = [Cell::new(None::<RcAsyncValue>)];
    s.ctx.invoke(s.body, &args, &slot[..usize::from(s.async_body)]);
    match slot[0].take() {
        Some(chain) if s.async_body && !chain.is_available() => {
            let waiting = state.clone();
            if let Err(oom) = chain.and_then(move || finish_block(&waiting)) {
                drop(oom);
                finish_block(state); // cannot wait: count the block as finished
            }
        }
        _ => finish_block(state),
    }
}

fn finish_block(state: &Shared) {
    let Some(s) = state.get() else { return };
    if s.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
        // Already an error if a block could not start (then this is never reached anyway).
        let _ = s.done.try_emplace(Chain);
    }
}

/// Shared by both kernels: `body` takes `(start, end, args…)`.
fn parallel(frame: &KernelFrame<'_>, body: u32) {
    let (Some(invoker), [start, end, block, rest @ ..]) = (frame.invoker(), frame.args()) else {
        return frame.report_error(Diagnostic::internal("parallel loop needs start, end and block size"));
    };
    let (Some(&start), Some(&end), Some(&block)) = (start.get::<i32>(), end.get::<i32>(), block.get::<i32>())
    else {
        return frame.report_error(Diagnostic::internal("parallel loop bounds are not i32"));
    };
    let exec = frame.exec_ctx();
    let alloc = exec.allocator();
    let async_body = match invoker.num_results(body) {
        Some(0) => false,
        Some(1) if invoker.result_type(body, 0) == Some("!tfrt.chain") => true,
        _ => {
            let e = Diagnostic::new(ErrorCode::Internal, "Invalid parallel body function result types");
            frame.set_result(0, RcAsyncValue::error_or_oom(alloc, e));
            return;
        }
    };
    let Ok(args) = heapless::Vec::<RcAsyncValue, MAX_ARGS>::from_slice(rest) else {
        return frame.report_error(Diagnostic::internal("parallel loop takes at most 8 extra operands"));
    };
    let total = (end as i64 - start as i64).clamp(0, u32::MAX as i64) as u32;
    if total == 0 {
        return frame.emplace_result(0, Chain);
    }
    let block = (block.max(1) as u32).min(total);
    let blocks = total.div_ceil(block);
    let no_memory = || Diagnostic::new(ErrorCode::ResourceExhausted, "no memory for a parallel loop");
    let Ok(done) = AsyncValueRef::<Chain>::unconstructed(alloc) else {
        return frame.report_error(no_memory());
    };
    let state = Loop {
        ctx: Detached::of(frame),
        body,
        args,
        offset: start,
        total,
        block,
        async_body,
        pending: AtomicU32::new(blocks),
        done: done.clone(),
    };
    let Ok(state) = AsyncValueRef::available(alloc, state) else {
        return frame.report_error(no_memory());
    };
    frame.set_result(0, done.into_rc());
    evaluate(state, 0, blocks);
}

/// `tfrt.parallel_for.i32 %start to %end fixed %block, args { body }`.
fn parallel_for_i32(frame: &KernelFrame<'_>) {
    match frame.regions().first() {
        Some(&body) => parallel(frame, body),
        None => frame.report_error(Diagnostic::internal("tfrt.parallel_for.i32 needs a body")),
    }
}

/// `tfrt.parallel_call.i32 %start to %end fixed %block @callee(args)`.
fn parallel_call_i32(frame: &KernelFrame<'_>) {
    match frame.attrs().iter().flat_map(|a| a.functions()).next() {
        Some(body) => parallel(frame, body),
        None => frame.report_error(Diagnostic::internal("tfrt.parallel_call.i32 needs a callee")),
    }
}

entries! {
    PARALLEL_FOR_I32 = "tfrt.parallel_for.i32" => raw(parallel_for_i32),
    PARALLEL_CALL_I32 = "tfrt.parallel_call.i32" => raw(parallel_call_i32),
}
