//! Publication (docs/execution.md): a kernel's result, or an argument, made visible to its
//! users. An available value is stored in its register and its users counted down; an
//! unavailable one gets a waiter ([`Continuation`]) that does so when it completes, while
//! non-strict users start at once.

use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use super::context::{Body, ReadyQueue, Run};
use super::depth::{Level, Nesting};
use super::failure::{Failure, failure};
use super::frame::{Frame, PLACEHOLDER};
use crate::async_value::{AsyncValue, IndirectAsyncValue, RcAsyncValue};
use crate::bef::format::{KernelRecord, RegisterRecord};
use crate::callback::{self, CallbackHeader};
use crate::executor::list_sort::NIL;
use crate::sync::{AtomicPtr, Ordering};
use crate::work_queue::Task;

/// Waiter callbacks nested on this stack beyond this depth are re-enqueued as tasks instead.
pub const MAX_STACK_DEPTH: u32 = 100;

impl Run<'_> {
    /// Make `v`, the value of register `r` (whose record is `rec`), visible to its users. The
    /// common case, an available value, is short; waiting is out of line.
    pub(super) fn publish(&mut self, v: RcAsyncValue, r: u32, rec: &RegisterRecord) {
        let frame = self.frame;
        let users = frame.program().file.pool_words(rec.users, rec.num_users as usize).unwrap_or(&[]);
        if v.is_available() || users.is_empty() {
            store(frame, rec.num_users, v, r);
            // Consumers in descending textual order (BEF stores them ascending).
            for &k in users.iter().rev() {
                self.queue.notify(frame, k);
            }
            return;
        }
        self.publish_unavailable(v, r, rec, users)
    }

    /// [`publish`](Self::publish) of a value that is not available yet: non-strict users
    /// start now, a waiter readies the strict ones when it completes.
    #[inline(never)]
    fn publish_unavailable(&mut self, v: RcAsyncValue, r: u32, rec: &RegisterRecord, users: &[u32]) {
        let frame = self.frame;
        let n = users.len() as u32;
        let kernels = self.body.kernels;
        let program = frame.program();
        let non_strict = |k: u32| program.entry(kernels[k as usize].code).is_non_strict();
        // Unavailable with users: non-strict users may start now; strict ones wait.
        let any_non_strict = users.iter().any(|k| non_strict(*k));
        let v = if any_non_strict {
            store(frame, n, v.clone(), r);
            for &k in users.iter().rev().filter(|k| non_strict(**k)) {
                self.notify(k);
            }
            // The strict users wait for what they will take from the register: `v`, or the
            // placeholder of a function result forwarded to it, which becomes available only
            // after `v` does (its forwarding waiter on `v` may run after ours).
            stored_value(frame, r, v)
        } else {
            v
        };
        // The continuation takes our reference (no count traffic); `handle` pushes its node,
        // which keeps the value alive until it runs (`push_waiter` touches nothing after).
        let handle = v.borrowed();
        let waiting = Continuation {
            frame: frame.retain(),
            value: v,
            r,
            stream: self.queue.stream,
            users: rec.users,
            num_users: rec.num_users,
            all_strict: !any_non_strict,
        };
        let alloc = frame.exec().allocator();
        match callback::new_data_node(alloc, callback::KIND_CLOSURE, waiting, run_continuation) {
            Ok(node) => handle.push_waiter(node),
            Err(oom) => {
                // No memory to wait: the users see an out-of-memory error instead.
                drop(oom);
                if !any_non_strict {
                    store(frame, n, failure(frame.exec(), Failure::NoMemoryToWait), r);
                }
                for &k in users.iter().rev().filter(|k| !non_strict(**k)) {
                    self.notify(k);
                }
            }
        }
    }

    /// Publish result `i` of kernel `kr` (a missing result becomes an error value).
    pub(super) fn publish_result(&mut self, kr: &KernelRecord, i: usize, v: Option<RcAsyncValue>) {
        let r = kr.first_result + i as u32;
        let v = match v {
            Some(v) => v,
            None => failure(self.frame.exec(), Failure::NoResultSet),
        };
        let rec = &self.body.regs[r as usize];
        if rec.num_uses == 0 {
            drop(v);
        } else {
            self.publish(v, r, rec);
        }
    }
}

/// Store `v` in register `r`, which has `users` kernel uses (holding one reference per use
/// from now on).
#[inline]
fn store(frame: &Frame, users: u32, v: RcAsyncValue, r: u32) {
    let reg = frame.reg(r);
    let current = reg.load(Ordering::Acquire);
    if current.addr() & PLACEHOLDER != 0 {
        return forward_placeholder(reg, current, users, v);
    }
    if users == 0 {
        return;
    }
    v.add_refs(users - 1);
    reg.store(v.into_raw().as_ptr(), Ordering::Release);
}

/// [`store`] into a function result's register, which holds the result's placeholder
/// (`current`): forward the placeholder to `v`, then drop the reference that stood for the
/// `tfrt.return` use. Kernel users receive the placeholder.
#[inline(never)]
fn forward_placeholder(reg: &AtomicPtr<AsyncValue>, current: *mut AsyncValue, users: u32, v: RcAsyncValue) {
    let p = current.map_addr(|a| a & !PLACEHOLDER);
    let Some(p) = core::ptr::NonNull::new(p) else { return };
    // SAFETY: the register owns `users + 1` references to the placeholder.
    let hold = unsafe { RcAsyncValue::from_raw(p) };
    IndirectAsyncValue::from_rc_unchecked(hold).forward_to(v);
    reg.store(if users == 0 { core::ptr::null_mut() } else { p.as_ptr() }, Ordering::Release);
}

/// The value register `r` holds after [`store`] of `v`: `v` itself, or the function
/// result's placeholder that forwards to it.
fn stored_value(frame: &Frame, r: u32, v: RcAsyncValue) -> RcAsyncValue {
    let p = frame.reg(r).load(Ordering::Acquire);
    let Some(p) = NonNull::new(p.map_addr(|a| a & !PLACEHOLDER)) else { return v };
    // SAFETY: the register holds a reference for each remaining use, and the caller's
    // strict users have not run yet; the handle is not dropped, its clone is one more.
    let held = ManuallyDrop::new(unsafe { RcAsyncValue::from_raw(p) });
    if held.ptr_eq(&v) { v } else { RcAsyncValue::clone(&held) }
}

/// What a kernel waiting on an unavailable value needs when it becomes available: a waiter
/// node on the value (no closure), so that it can be re-queued as a task without allocating.
struct Continuation {
    frame: Frame,
    value: RcAsyncValue,
    r: u32,
    stream: u32,
    /// The register's users list (its record's: with `all_strict`, a continuation that
    /// readies no kernel needs nothing else of the function).
    users: u32,
    num_users: u32,
    /// Every user is strict: the value is stored and all of them count down now (with a
    /// non-strict user, it was stored when published and only the strict ones wait).
    all_strict: bool,
}

/// `invoke` of a [`Continuation`] node: store the value and run the strict users inline,
/// or, with [`MAX_STACK_DEPTH`] waiters already nested, hand this very node to the work
/// queue as a task (it runs this function again on a fresh stack). Needs no memory, so even
/// an exhausted allocator cannot make a long waiter chain nest.
unsafe fn run_continuation(node: NonNull<CallbackHeader>, run: bool) {
    if !run {
        // SAFETY: `invoke`'s contract: a `Continuation` node we own.
        drop(unsafe { callback::take_data::<Continuation>(node) });
        return;
    }
    let (level, depth) = Level::enter(Nesting::Waiters);
    if depth >= MAX_STACK_DEPTH {
        drop(level);
        // SAFETY: we own the node; its data stays in place for the task.
        let host = unsafe { (*callback::data_ptr::<Continuation>(node)).frame.exec().host() };
        // SAFETY: the node is detached from the value's waiter list and owned by us; a task
        // node has the same layout and runs `invoke(node, true)`, this function.
        host.work_queue().add_task(unsafe { Task::from_node(node) });
        return;
    }
    // SAFETY: `invoke`'s contract: a `Continuation` node we own; freed here.
    let c = unsafe { callback::take_data::<Continuation>(node) };
    on_available_now(c);
    drop(level);
}

/// The value `c` waited for is available: store it (unless stored already for non-strict
/// users) and count its strict users down. Only when that readies a kernel does the ready
/// queue get set up and run, so a value that is one of many a kernel waits for, as in a
/// fan-in, costs no more than the count-down (nor decodes the function, when every user is
/// strict).
fn on_available_now(c: Continuation) {
    let frame = &c.frame;
    // The function's tables, needed up front only to pick out the strict users.
    let mut body = None;
    if c.all_strict {
        store(frame, c.num_users, c.value, c.r);
    } else {
        let Some(f) = Body::of(frame) else { return };
        body = Some(f);
    }
    let program = frame.program();
    let users = program.file.pool_words(c.users, c.num_users as usize).unwrap_or(&[]);
    // Set up when the first user becomes ready.
    let mut queue = None;
    for &k in users.iter().rev() {
        if let Some(f) = &body
            && program.entry(f.kernels[k as usize].code).is_non_strict()
        {
            continue;
        }
        if !frame.count_down(k) {
            continue;
        }
        if queue.is_none() {
            if body.is_none() {
                body = Body::of(frame);
            }
            // (`Body::of` succeeded for this function when the value was published, and
            // the program does not change, so this returns only on a broken invariant.)
            let Some(f) = &body else { return };
            queue = Some(ReadyQueue::of(frame, f, c.stream, NIL));
        }
        if let Some(q) = &mut queue {
            q.push_ready(frame, k);
        }
    }
    if let (Some(body), Some(queue)) = (&body, queue) {
        Run { frame, body, queue }.process();
    }
}
