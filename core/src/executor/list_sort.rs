//! Lists of indices threaded through a link array, as the executor's ready lists are
//! (docs/execution.md), and a stable sort of them that needs no buffer.

/// The end of a list.
pub(crate) const NIL: u32 = u32::MAX;

/// Sort the list starting at `head` (linked through `link`/`set_link`) by `key`, stably,
/// and return its new head: a natural merge sort with no buffer and a few hundred bytes of
/// code (`sort_unstable` costs kilobytes of flash). Each pass cuts the list into ascending
/// runs and merges them in pairs, so a sorted list, as the outline list of independent
/// streams usually is (the compiler numbers streams from the end of a block, and a value's
/// users are readied last first), takes one pass.
pub(crate) fn sort_list(
    mut head: u32,
    link: impl Fn(u32) -> u32 + Copy,
    set_link: impl Fn(u32, u32) + Copy,
    key: impl Fn(u32) -> u32 + Copy,
) -> u32 {
    loop {
        let (mut out, mut tail, mut merged) = (NIL, NIL, 0);
        let mut k = head;
        while k != NIL {
            let (a, after_a) = take_run(k, link, set_link, key);
            if k == head && after_a == NIL {
                return a; // one run: sorted already
            }
            let (b, after_b) =
                if after_a == NIL { (NIL, NIL) } else { take_run(after_a, link, set_link, key) };
            // Merge, taking from `a` on ties (stability), onto the output.
            let (mut a, mut b) = (a, b);
            while a != NIL || b != NIL {
                let take_a = b == NIL || (a != NIL && key(a) <= key(b));
                let m = if take_a { a } else { b };
                if take_a {
                    a = link(a);
                } else {
                    b = link(b);
                }
                if tail == NIL {
                    out = m;
                } else {
                    set_link(tail, m);
                }
                tail = m;
            }
            merged += 1;
            k = after_b;
        }
        if tail != NIL {
            set_link(tail, NIL);
        }
        head = out;
        if merged <= 1 {
            return head;
        }
    }
}

/// Detach the run at the front of the list at `k` (its longest ascending prefix); returns
/// the run, ending in `NIL`, and what follows it.
fn take_run(
    k: u32,
    link: impl Fn(u32) -> u32,
    set_link: impl Fn(u32, u32),
    key: impl Fn(u32) -> u32,
) -> (u32, u32) {
    let (mut end, mut next) = (k, link(k));
    while next != NIL && key(next) >= key(end) {
        end = next;
        next = link(next);
    }
    set_link(end, NIL);
    (k, next)
}

/// Lists for the tests, here and in the executor's.
#[cfg(test)]
pub(crate) mod test_lists {
    use super::NIL;
    use core::cell::Cell;

    pub(crate) type List = heapless::Vec<u32, 40>;

    pub(crate) fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// The list `0 -> 1 -> ... -> n-1` in a link array.
    pub(crate) fn chain(n: usize) -> [Cell<u32>; 40] {
        core::array::from_fn(|i| Cell::new(if i + 1 < n { i as u32 + 1 } else { NIL }))
    }

    /// The kernels of the list at `head`, in order.
    pub(crate) fn walk(links: &[Cell<u32>], mut k: u32) -> List {
        let mut out = List::new();
        while k != NIL {
            out.push(k).unwrap();
            k = links[k as usize].get();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::test_lists::{List, chain, walk, xorshift};
    use super::{NIL, sort_list};

    #[test]
    fn sort_list_is_a_stable_sort() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        // Shorter lists under Miri, which checks the same code paths about 1000 times slower.
        let longest = if cfg!(miri) { 12 } else { 40 };
        for (n, shape) in (0..longest).flat_map(|n| (0..4).map(move |shape| (n, shape))) {
            // Random keys, then runs that go up, down, and down with ties.
            let keys: List = (0..n)
                .map(|i| {
                    let noise = (xorshift(&mut seed) % 8) as u32;
                    match shape {
                        0 => noise,
                        1 => (i as u32 % 9) * 3 + noise % 2,
                        2 => 200 - i as u32 * 2 - noise % 2,
                        _ => 100 - (i as u32 / 3) % 7,
                    }
                })
                .collect();
            let links = chain(n);
            let head = if n == 0 { NIL } else { 0 };
            let sorted = sort_list(
                head,
                |k| links[k as usize].get(),
                |k, v| links[k as usize].set(v),
                |k| keys[k as usize],
            );
            let mut want: List = (0..n as u32).collect();
            want.sort_by_key(|k| keys[*k as usize]); // stable
            assert_eq!(walk(&links, sorted), want, "keys {keys:?}");
        }
    }
}
