//! The outline list (docs/execution.md): ready kernels of other streams than the current
//! one, handed to the work queue as one task per stream, in ascending stream order, after
//! each step; "switch" makes the first one's stream current when the inline list runs dry.
//! The order reproduces the reference's exchange partition and (stream, position) sort.

use super::context::Run;
use super::frame::Frame;
use super::stream_tasks::{Batch, ProcessStream};
use crate::executor::buf::CallBuf;
use crate::executor::list_sort::{NIL, sort_list};

/// Stream tasks per shared block: small enough that the block stays a small allocation
/// (under 1 KiB, where glibc's malloc serves from its bins without consolidating).
const MAX_BATCH: usize = 16;

impl Run<'_> {
    /// "Switch" (when `switch` is set: the first outline kernel's stream becomes current and
    /// its kernels move to the inline list, using the reference's exchange partition so the
    /// order matches), then "enqueue outline": one task per stream, in ascending stream order.
    pub(super) fn flush_outline(&mut self, switch: bool) {
        let (frame, queue) = (self.frame, &mut self.queue);
        let (head, n) = (queue.out_head, queue.out_len);
        queue.out_head = NIL;
        queue.out_tail = NIL;
        queue.out_len = 0;
        let links = (|k| frame.link(k), |k, next| frame.set_link(k, next));
        let Some(rest) = order_outline(head, n, switch, links, |k| queue.stream_of(k)) else {
            return self.switch_partitioned(head, n);
        };
        if switch {
            queue.stream = queue.stream_of(head);
            frame.set_link(head, queue.inline);
            queue.inline = head;
        }
        self.enqueue_streams(rest);
    }

    /// [`flush_outline`](Self::flush_outline) with the switch when the first kernel's stream
    /// occurs more than once: the reference's exchange partition over a buffer of the `n`
    /// kernels from `head`.
    #[cold]
    fn switch_partitioned(&mut self, head: u32, n: usize) {
        let frame = self.frame;
        let mut items = CallBuf::empty();
        let mut next = head;
        let collected = items.fill(
            frame.exec().allocator(),
            n,
            core::iter::from_fn(|| {
                let k = next;
                next = if k == NIL { NIL } else { frame.link(k) };
                (k != NIL).then_some(k)
            }),
        );
        if !collected {
            // No memory to order them: every outline kernel becomes its own task, in list
            // order (still correct, only the order differs from the reference).
            let mut k = head;
            while k != NIL {
                let after = frame.link(k);
                frame.set_link(k, NIL);
                enqueue_stream(frame, self.queue.stream_of(k), k);
                k = after;
            }
            return;
        }
        let items = items.as_mut_slice();
        let queue = &mut self.queue;
        let s = queue.stream_of(items[0]);
        let (mut i, mut j) = (0, items.len());
        loop {
            while i < j && queue.stream_of(items[i]) != s {
                i += 1;
            }
            if i == j {
                break;
            }
            j -= 1;
            while j > i && queue.stream_of(items[j]) == s {
                j -= 1;
            }
            if i == j {
                break;
            }
            items.swap(i, j);
            i += 1;
        }
        queue.stream = s;
        for &k in &items[i..] {
            frame.set_link(k, queue.inline);
            queue.inline = k;
        }
        // The rest, relinked in buffer order, goes to the queue by stream.
        let mut rest = NIL;
        for &k in items[..i].iter().rev() {
            frame.set_link(k, rest);
            rest = k;
        }
        let sorted =
            sort_list(rest, |k| frame.link(k), |k, next| frame.set_link(k, next), |k| queue.stream_of(k));
        self.enqueue_streams(sorted);
    }

    /// Hand the stream-sorted list at `head` to the work queue: one task per stream, in list
    /// order, each running its kernels last-first (its ready list is built by pushing). Up to
    /// [`MAX_BATCH`] tasks share one block ([`Batch`]); without memory for it each gets its
    /// own.
    fn enqueue_streams(&self, head: u32) {
        let (frame, queue) = (self.frame, &self.queue);
        // Tasks not yet given a place in a batch.
        let mut tasks = 0;
        let mut k = head;
        let mut prev = None;
        while k != NIL {
            let s = queue.stream_of(k);
            tasks += usize::from(prev != Some(s));
            prev = Some(s);
            k = frame.link(k);
        }
        let work_queue = frame.exec().host().work_queue();
        let mut batch = None;
        let mut k = head;
        while k != NIL {
            let s = queue.stream_of(k);
            let mut ready = NIL;
            while k != NIL && queue.stream_of(k) == s {
                let after = frame.link(k);
                frame.set_link(k, ready);
                ready = k;
                k = after;
            }
            if batch.is_none() && tasks > 1 {
                let len = tasks.min(MAX_BATCH);
                batch = Batch::new(frame, len);
                tasks -= len;
            }
            match &mut batch {
                Some(b) => {
                    b.push::<Run<'_>>(s, ready);
                    if b.is_full()
                        && let Some(full) = batch.take()
                    {
                        full.enqueue(work_queue);
                    }
                }
                None => enqueue_stream(frame, s, ready),
            }
        }
    }
}

/// The order [`Run::flush_outline`] gives the `n` kernels of the outline list at `head`
/// (linked through `links`), without the first one when `switch` adopts it: the head of the
/// rest sorted stably by stream, as the reference's exchange partition and (stream,
/// position) sort leave it. `None` when `switch` is set and the first kernel's stream occurs
/// again, which needs the partition itself.
fn order_outline(
    head: u32,
    n: usize,
    switch: bool,
    (link, set_link): (impl Fn(u32) -> u32 + Copy, impl Fn(u32, u32) + Copy),
    stream_of: impl Fn(u32) -> u32 + Copy,
) -> Option<u32> {
    let mut first = head;
    if switch {
        let s = stream_of(head);
        let (mut before_last, mut prev, mut k) = (NIL, head, link(head));
        while k != NIL {
            if stream_of(k) == s {
                return None;
            }
            let after = link(k);
            if after == NIL {
                before_last = prev;
            }
            prev = k;
            k = after;
        }
        // Alone in its stream, the first kernel is all the partition moves; it swaps places
        // with the last kernel, which thus leads the rest.
        first = link(head);
        if n > 2 {
            let last = link(before_last);
            set_link(before_last, NIL);
            set_link(last, first);
            first = last;
        }
    }
    Some(sort_list(first, link, set_link, stream_of))
}

/// A stream task runs the run context's processing of its list.
impl ProcessStream for Run<'_> {
    fn process_stream(frame: &Frame, stream: u32, inline: u32) {
        Run::run_stream(frame, stream, inline);
    }
}

/// Enqueue a task that processes the ready list `inline` (kernels of `stream`).
fn enqueue_stream(frame: &Frame, stream: u32, inline: u32) {
    let task_frame = frame.retain();
    let task = move || Run::run_stream(&task_frame, stream, inline);
    if let Err(oom) = frame.exec().host().enqueue_work(task) {
        (oom.into_inner())(); // no memory for a task: run it here after all
    }
}

#[cfg(test)]
mod tests {
    use super::order_outline;
    use crate::executor::list_sort::test_lists::{List, chain, walk, xorshift};

    /// The reference's flush over an array: exchange partition (with `switch`), then the
    /// rest sorted by (stream, position). Returns the rest's order.
    fn reference(streams: &[u32], switch: bool) -> List {
        let mut items: List = (0..streams.len() as u32).collect();
        let mut rest = items.len();
        if switch {
            let s = streams[0];
            let (mut i, mut j) = (0, items.len());
            loop {
                while i < j && streams[items[i] as usize] != s {
                    i += 1;
                }
                if i == j {
                    break;
                }
                j -= 1;
                while j > i && streams[items[j] as usize] == s {
                    j -= 1;
                }
                if i == j {
                    break;
                }
                items.swap(i, j);
                i += 1;
            }
            rest = i;
        }
        let mut keys: heapless::Vec<(u32, usize), 40> =
            items[..rest].iter().enumerate().map(|(pos, &k)| (streams[k as usize], pos)).collect();
        keys.sort_unstable();
        keys.iter().map(|&(_, pos)| items[pos]).collect()
    }

    #[test]
    fn outline_order_matches_the_reference_partition_and_sort() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut checked = 0;
        // Fewer rounds under Miri, which checks the same code paths about 1000 times slower.
        let rounds = if cfg!(miri) { 200 } else { 4000 };
        for round in 0..rounds {
            let n = 1 + (xorshift(&mut seed) % 12) as usize;
            let kinds = 1 + (xorshift(&mut seed) % 6) as u32;
            let streams: List = (0..n).map(|_| (xorshift(&mut seed) % u64::from(kinds)) as u32).collect();
            let switch = round % 2 == 0;
            let links = chain(n);
            let ls = (|k: u32| links[k as usize].get(), |k: u32, v| links[k as usize].set(v));
            let Some(k) = order_outline(0, n, switch, ls, |k| streams[k as usize]) else {
                assert!(switch && streams[1..].contains(&streams[0]));
                continue;
            };
            assert_eq!(walk(&links, k), reference(&streams, switch), "streams {streams:?}, switch {switch}");
            checked += 1;
        }
        assert!(checked > rounds / 2, "{checked} of {rounds}");
    }
}
