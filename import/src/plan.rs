//! The activation-arena planner: places every intermediate tensor at a byte offset so that
//! tensors alive at the same time never overlap (docs/models.md, "Planned memory").
//!
//! Greedy by size, as TensorFlow Lite Micro's `GreedyMemoryPlanner`: the largest buffer is
//! placed first, each at the lowest aligned offset that clears every placed buffer whose
//! lifetime overlaps its own. A second ordering (by first use) is also tried, and the
//! smaller arena is kept.

/// One buffer to place: `size` bytes alive from step `first` to step `last` (inclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub size: usize,
    pub first: usize,
    pub last: usize,
}

/// Offsets are multiples of this (enough for every element type and for SIMD loads).
pub const ALIGN: usize = 16;

/// A placement: one offset per buffer, and the arena size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub offsets: Vec<usize>,
    pub size: usize,
}

fn align(v: usize) -> usize {
    v.div_ceil(ALIGN) * ALIGN
}

/// Places `buffers` in the given `order`.
fn place(buffers: &[Buffer], order: &[usize]) -> Plan {
    let mut offsets = vec![usize::MAX; buffers.len()];
    let mut placed: Vec<usize> = Vec::with_capacity(buffers.len());
    let mut size = 0;
    for &i in order {
        let b = buffers[i];
        let mut live: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| buffers[j].first <= b.last && b.first <= buffers[j].last)
            .map(|&j| (offsets[j], buffers[j].size))
            .collect();
        live.sort_unstable();
        let mut at = 0;
        for (o, s) in live {
            if at + b.size <= o || b.size == 0 {
                break;
            }
            at = at.max(align(o + s));
        }
        offsets[i] = at;
        size = size.max(at + b.size);
        placed.push(i);
    }
    Plan { offsets, size: align(size) }
}

/// Plans `buffers`: the tighter of largest-first and first-use orders.
pub fn plan(buffers: &[Buffer]) -> Plan {
    let mut by_size: Vec<usize> = (0..buffers.len()).collect();
    by_size.sort_by_key(|&i| (std::cmp::Reverse(buffers[i].size), buffers[i].first));
    let mut by_first: Vec<usize> = (0..buffers.len()).collect();
    by_first.sort_by_key(|&i| (buffers[i].first, std::cmp::Reverse(buffers[i].size)));
    let a = place(buffers, &by_size);
    let b = place(buffers, &by_first);
    if b.size < a.size { b } else { a }
}

/// Whether `plan` keeps every pair of buffers alive at the same time apart.
pub fn is_valid(buffers: &[Buffer], plan: &Plan) -> bool {
    buffers.iter().enumerate().all(|(i, a)| {
        plan.offsets[i].is_multiple_of(ALIGN)
            && plan.offsets[i] + a.size <= plan.size
            && buffers.iter().enumerate().skip(i + 1).all(|(j, b)| {
                let time = a.first <= b.last && b.first <= a.last;
                let space =
                    plan.offsets[i] < plan.offsets[j] + b.size && plan.offsets[j] < plan.offsets[i] + a.size;
                !(time && space && a.size > 0 && b.size > 0)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_reuses_memory() {
        // a -> b -> c -> d, each alive for two steps: two slots suffice.
        let bufs: Vec<Buffer> = (0..4).map(|i| Buffer { size: 100, first: i, last: i + 1 }).collect();
        let p = plan(&bufs);
        assert!(is_valid(&bufs, &p));
        assert_eq!(p.size, 2 * align(100));
    }

    #[test]
    fn overlapping_lifetimes_never_share_bytes() {
        // A pseudo-random mix; the plan must be valid and no larger than the sum.
        let mut seed = 12345u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 16) as usize
        };
        for _ in 0..200 {
            let bufs: Vec<Buffer> = (0..12)
                .map(|_| {
                    let first = next() % 10;
                    Buffer { size: next() % 300, first, last: first + next() % 5 }
                })
                .collect();
            let p = plan(&bufs);
            assert!(is_valid(&bufs, &p), "{bufs:?} {p:?}");
            assert!(p.size <= bufs.iter().map(|b| align(b.size)).sum::<usize>());
        }
    }
}
