//! Compile-time stream assignment (docs/execution.md, Streams and the ready queue): partitions
//! one block's kernels into numbered streams so the executor can run one stream inline and
//! hand the others to the work queue.
//! A forward pass picks, for every op, the producer on its costliest path from the block start
//! as its parent; a backward pass grows streams up that tree and merges the cheap ones.

use std::collections::{HashMap, HashSet};

use crate::ast::{Attr, Op, Region, Type};

/// "No stream" / "not merged" marker.
const NONE: u32 = u32::MAX;

/// Cost and cost-from-root of the virtual root.
const ROOT_COST: i64 = 1;

/// Stream ids of one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Streams {
    /// Stream of the pseudo kernel (the root).
    pub root: u32,
    /// Stream of each op of the block except the terminator, in textual order.
    pub kernels: Vec<u32>,
}

/// Options looked up by the caller: `threshold` is the `tfrt.cost_threshold` (None = absent, i.e. T = -1),
/// `merge_inter_dependent` is `tfrt.merge_inter_dependent_streams`.
///
/// The block's terminator is its last op when that op is `tfrt.return`. Operands naming no
/// earlier value of the block are treated as defined by the root.
pub(crate) fn assign(region: &Region, threshold: Option<i64>, merge_inter_dependent: bool) -> Streams {
    let t = threshold.unwrap_or(-1);
    let tree = Tree::build(region, t, merge_inter_dependent);
    let n = region.ops.len();
    let terminator = region.ops.last().filter(|op| op.name == "tfrt.return").map(|_| n - 1);
    let mut b = Builder {
        tree: &tree,
        th: if t <= 0 { tree.max_cfr } else { t },
        cfr_mode: t <= 0,
        merge_inter_dependent,
        terminator,
        streams: Vec::new(),
        stream_of: vec![NONE; n + 1],
    };
    // Ops in reverse textual order, then the root (node `n`).
    for p in (0..n).rev() {
        b.build(p);
    }
    b.build(n);
    let kernels = (0..terminator.unwrap_or(n)).map(|x| b.stream(x)).collect();
    Streams { root: b.stream(n), kernels }
}

/// The cost of `op` in the stream assignment under threshold `t`: 1 for returns and chain
/// merges, `_tfrt_cost` for `tfrt_test.test_cost`, else `t` (1 when `t` is not positive).
fn op_cost(op: &Op, t: i64) -> i64 {
    let default = if t > 0 { t } else { 1 };
    match op.name.as_str() {
        "tfrt.return" | "func.return" | "tfrt.merge.chains" => 1,
        "tfrt_test.test_cost" => op
            .attrs
            .iter()
            .find(|a| a.name == "_tfrt_cost")
            .and_then(|a| match a.value {
                Attr::Int { value, .. } => Some(value),
                _ => None,
            })
            .unwrap_or(default),
        _ => default,
    }
}

/// Result of the forward pass. Nodes are the ops in textual order, then the root (index `n`).
struct Tree {
    /// `cost` of every node.
    cost: Vec<i64>,
    /// Cost from root of every node.
    cfr: Vec<i64>,
    /// Scheduled users of node `p`: `users[users_at[p]..users_at[p + 1]]`, in textual order.
    users_at: Vec<usize>,
    users: Vec<u32>,
    /// Side uses of every node (only filled when inter-dependent merging is on).
    side_uses: Vec<Vec<u32>>,
    /// Largest cost from root (at least 1).
    max_cfr: i64,
}

impl Tree {
    /// The forward pass: parents, costs from root, scheduled users and side uses.
    fn build(region: &Region, t: i64, track_side_uses: bool) -> Tree {
        let ops = &region.ops;
        let n = ops.len();
        let root = n as u32;
        let mut cost = vec![ROOT_COST; n + 1];
        let mut cfr = vec![ROOT_COST; n + 1];
        let mut parent = vec![root; n];
        let mut side_uses = if track_side_uses { vec![Vec::new(); n + 1] } else { Vec::new() };
        let mut max_cfr = ROOT_COST;
        // Value key (`name` or `name#i`) → defining node and the value's type.
        let mut defs: HashMap<String, (u32, Option<&Type>)> = HashMap::new();
        for (name, ty) in &region.args {
            defs.insert(name.clone(), (root, Some(ty)));
        }
        for (x, op) in ops.iter().enumerate() {
            let xu = x as u32;
            cost[x] = op_cost(op, t);
            let mut par = root;
            let mut par_cfr = ROOT_COST;
            for (i, v) in op.operands.iter().enumerate() {
                let found = match v.index {
                    None => defs.get(v.name.as_str()),
                    Some(ix) => defs.get(format!("{}#{ix}", v.name).as_str()),
                };
                let (def, ty) = found.copied().unwrap_or((root, None));
                let def_cfr = cfr[def as usize];
                if i == 0 || def_cfr > par_cfr {
                    par = def;
                    par_cfr = def_cfr;
                }
                if track_side_uses && ty.is_none_or(|ty| ty.0 != "!tfrt.chain") {
                    let uses: &mut Vec<u32> = &mut side_uses[def as usize];
                    if uses.last() != Some(&xu) {
                        uses.push(xu);
                    }
                }
            }
            if track_side_uses && side_uses[par as usize].last() == Some(&xu) {
                side_uses[par as usize].pop();
            }
            parent[x] = par;
            cfr[x] = if op.operands.is_empty() { cost[x] } else { cost[x].saturating_add(par_cfr) };
            max_cfr = max_cfr.max(cfr[x]);
            let mut result = 0;
            for g in &op.results {
                defs.insert(g.name.clone(), (xu, op.result_types.get(result)));
                if g.count > 1 {
                    for i in 0..g.count as usize {
                        defs.insert(format!("{}#{i}", g.name), (xu, op.result_types.get(result + i)));
                    }
                }
                result += g.count as usize;
            }
        }
        // Scheduled users, grouped by parent (counting sort keeps textual order).
        let mut users_at = vec![0usize; n + 2];
        for &p in &parent {
            users_at[p as usize + 1] += 1;
        }
        for p in 0..=n {
            users_at[p + 1] += users_at[p];
        }
        let mut next = users_at.clone();
        let mut users = vec![0u32; n];
        for (x, &p) in parent.iter().enumerate() {
            users[next[p as usize]] = x as u32;
            next[p as usize] += 1;
        }
        Tree { cost, cfr, users_at, users, side_uses, max_cfr }
    }

    /// Scheduled users of node `p`, in textual order.
    fn users(&self, p: usize) -> &[u32] {
        &self.users[self.users_at[p]..self.users_at[p + 1]]
    }
}

/// One stream under construction.
#[derive(Debug)]
struct Stream {
    cost: i64,
    contains_return: bool,
    /// The stream this one was merged into, or `NONE`.
    merged_into: u32,
    /// Streams this one has a side dependency on (ids possibly stale: resolve with `find`).
    side_deps: HashSet<u32>,
}

/// State of the backward pass.
struct Builder<'a> {
    tree: &'a Tree,
    /// `TH`: `max_cfr` in cfr mode, `T` in plain mode.
    th: i64,
    cfr_mode: bool,
    merge_inter_dependent: bool,
    terminator: Option<usize>,
    streams: Vec<Stream>,
    /// Stream each node was assigned to (possibly merged since), `NONE` before that.
    stream_of: Vec<u32>,
}

impl Builder<'_> {
    /// The unmerged stream `s` ended up in (with path compression).
    fn find(&mut self, s: u32) -> u32 {
        let mut top = s;
        while self.streams[top as usize].merged_into != NONE {
            top = self.streams[top as usize].merged_into;
        }
        let mut s = s;
        while s != top {
            let next = self.streams[s as usize].merged_into;
            self.streams[s as usize].merged_into = top;
            s = next;
        }
        top
    }

    /// Final stream of node `x`.
    fn stream(&mut self, x: usize) -> u32 {
        let s = self.stream_of[x];
        self.find(s)
    }

    fn cost(&self, s: u32) -> i64 {
        self.streams[s as usize].cost
    }

    /// `above(S)` while processing an op whose cost from root is `k`.
    fn above(&self, k: i64, s: u32) -> bool {
        let base = if self.cfr_mode { k } else { 0 };
        base.saturating_add(self.cost(s)) >= self.th
    }

    /// `above(S, R)` while processing an op whose cost from root is `k`.
    fn above2(&self, k: i64, s: u32, r: u32) -> bool {
        if self.cfr_mode {
            k.saturating_add(self.cost(s)).saturating_add(self.cost(r)) >= self.th
        } else {
            self.cost(s) >= self.th
        }
    }

    fn new_stream(&mut self) -> u32 {
        let id = self.streams.len() as u32;
        self.streams.push(Stream {
            cost: 0,
            contains_return: false,
            merged_into: NONE,
            side_deps: HashSet::new(),
        });
        id
    }

    /// Puts node `p` into unmerged stream `s`, recording side dependencies.
    fn assign_op(&mut self, p: usize, s: u32) {
        self.stream_of[p] = s;
        let stream = &mut self.streams[s as usize];
        stream.cost = stream.cost.saturating_add(self.tree.cost[p]);
        stream.contains_return |= self.terminator == Some(p);
        if self.merge_inter_dependent {
            let tree = self.tree;
            for &u in &tree.side_uses[p] {
                let other = self.stream(u as usize);
                if other != s {
                    self.streams[s as usize].side_deps.insert(other);
                    self.streams[other as usize].side_deps.insert(s);
                }
            }
        }
    }

    /// Merges unmerged stream `from` into unmerged stream `to`.
    fn merge(&mut self, from: u32, to: u32) {
        if from == to {
            return; // never happens for a tree; a self link would make `find` loop
        }
        let from_deps = std::mem::take(&mut self.streams[from as usize].side_deps);
        let (cost, ret) = (self.cost(from), self.streams[from as usize].contains_return);
        self.streams[from as usize].merged_into = to;
        let to_stream = &mut self.streams[to as usize];
        to_stream.cost = to_stream.cost.saturating_add(cost);
        to_stream.contains_return |= ret;
        to_stream.side_deps.extend(from_deps);
        to_stream.side_deps.remove(&from);
        to_stream.side_deps.remove(&to);
    }

    /// Backward-pass steps 1–5 for node `p`.
    fn build(&mut self, p: usize) {
        let tree = self.tree;
        let users = tree.users(p);
        // Step 1.
        if users.is_empty() {
            let s = self.new_stream();
            self.assign_op(p, s);
            return;
        }
        let mut candidates: Vec<u32> = users.iter().map(|&u| self.stream(u as usize)).collect();
        // Step 2.
        if self.merge_inter_dependent && candidates.len() > 1 {
            self.merge_inter_dependent_streams(p, &mut candidates);
        }
        // Step 3.
        let k = tree.cfr[p];
        let (mut best, mut best_cost, mut ret) = (NONE, 0i64, NONE);
        let mut groups: Vec<u32> = Vec::new();
        for c in candidates {
            let s = if self.above(k, c) {
                c
            } else {
                match groups.last() {
                    Some(&last) if !self.above2(k, last, c) => self.merge(c, last),
                    _ => groups.push(c),
                }
                *groups.last().unwrap_or(&c)
            };
            if self.cost(s) > best_cost {
                best = s;
                best_cost = self.cost(s);
            }
            if self.streams[s as usize].contains_return {
                ret = s;
            }
        }
        // Step 4.
        let chosen = if ret != NONE { ret } else { best };
        if chosen == NONE {
            // Only possible when every candidate costs <= 0 (`_tfrt_cost` <= 0): like TFRT,
            // start a fresh stream.
            let s = self.new_stream();
            self.assign_op(p, s);
            return;
        }
        self.assign_op(p, chosen);
        // Step 5.
        if !self.cfr_mode
            && let Some(&last) = groups.last()
            && !self.above(k, last)
            && last != chosen
        {
            self.merge(last, chosen);
        }
    }

    /// Step 2: merges candidate streams into candidates they have side dependencies on, then
    /// drops the merged ones from `candidates`. Within one candidate `c`, the streams to merge
    /// are taken in candidate order.
    fn merge_inter_dependent_streams(&mut self, p: usize, candidates: &mut Vec<u32>) {
        let k = if self.cfr_mode { self.tree.cfr[p] } else { 0 };
        let position: HashMap<u32, usize> = candidates.iter().enumerate().map(|(i, &c)| (c, i)).collect();
        let mut dropped = vec![false; candidates.len()];
        for i in 0..candidates.len() {
            if dropped[i] {
                continue;
            }
            let c = candidates[i];
            // Resolve the dependencies to current streams.
            let deps = std::mem::take(&mut self.streams[c as usize].side_deps);
            let deps: HashSet<u32> = deps.into_iter().map(|d| self.find(d)).filter(|&d| d != c).collect();
            let mut to_merge: Vec<usize> = deps
                .iter()
                .filter_map(|d| position.get(d).copied())
                .filter(|&j| !dropped[j] && self.cost(candidates[j]) < self.th)
                .collect();
            to_merge.sort_unstable();
            self.streams[c as usize].side_deps = deps;
            for j in to_merge {
                self.merge(candidates[j], c);
                dropped[j] = true;
                if k.saturating_add(self.cost(c)) >= self.th {
                    break;
                }
            }
        }
        let mut i = 0;
        candidates.retain(|_| {
            i += 1;
            !dropped[i - 1]
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::{Loc, ResultGroup, ValueRef};

    /// The body of the first function of `src`.
    fn body(src: &str) -> Region {
        let module = crate::text::parse("streams.mlir", src).expect("test program parses");
        module.funcs.into_iter().next().and_then(|f| f.body).expect("a function with a body")
    }

    fn streams(root: u32, kernels: &[u32]) -> Streams {
        Streams { root, kernels: kernels.to_vec() }
    }

    /// A `tfrt_test.test_cost` line: `%name = tfrt_test.test_cost operands {cost} : types`.
    fn tc(name: &str, cost: i64, operands: &[&str]) -> String {
        let types = if operands.is_empty() {
            String::new()
        } else {
            format!(" : {}", vec!["i32"; operands.len()].join(", "))
        };
        format!(
            "  %{name} = tfrt_test.test_cost {} {{id = 0 : i64, _tfrt_cost = {cost} : i64}}{types}\n",
            operands.join(", ")
        )
    }

    #[test]
    fn spec_6_1_plain_mode_threshold_1() {
        let region = body(
            r#"module attributes {tfrt.cost_threshold = 1 : i64} {
func.func @ex() {
  %u  = "vt.constant"() { value = 7 : i32 } : () -> !vt.value
  %ch = tfrt.new.chain
  %p  = "vt.constant"() { value = 3 : i32 } : () -> !vt.value
  "vt.print"(%p, %ch) : (!vt.value, !tfrt.chain) -> !tfrt.chain
  "vt.constant"() { value = 9 : i32 } : () -> !vt.value
  tfrt.return
}
}"#,
        );
        assert_eq!(assign(&region, Some(1), false), streams(0, &[4, 3, 2, 2, 1]));
    }

    #[test]
    fn spec_6_3_cfr_mode() {
        let region = body(
            r#"func.func @ex2() -> i32 {
  %ch = tfrt.new.chain
  %e  = "tfrt_test.fail"() : () -> i32
  %a  = "tfrt_test.async_constant.i32"() { value = 5 : i32 } : () -> i32
  tfrt.print.i32 %a, %ch
  %r  = tfrt.add.i32 %e, %a
  tfrt.return %r : i32
}"#,
        );
        assert_eq!(assign(&region, None, false), streams(0, &[2, 0, 1, 1, 0]));
    }

    #[test]
    fn spec_6_2_independent_kernels_get_descending_ids() {
        let mut src = String::from("func.func @f() {\n");
        for _ in 0..4 {
            src.push_str("  \"tfrt_test.print_hello\"() : () -> !tfrt.chain\n");
        }
        src.push_str("  tfrt.return\n}\n");
        // Return → stream 0 (root joins it as it contains return), K4 → 1, ..., K1 → 4.
        assert_eq!(assign(&body(&src), None, false), streams(0, &[4, 3, 2, 1]));
        // A threshold changes nothing for kernels that are each above it.
        assert_eq!(assign(&body(&src), Some(1), false), streams(0, &[4, 3, 2, 1]));
    }

    #[test]
    fn serial_chain_is_one_stream() {
        let region = body(
            r#"func.func @f(%x: i32) -> i32 {
  %a = tfrt.constant.i32 1
  %b = tfrt.add.i32 %a, %x
  %c = tfrt.add.i32 %b, %x
  %d = tfrt.add.i32 %c, %b
  tfrt.return %d : i32
}"#,
        );
        for t in [None, Some(1), Some(7), Some(1000)] {
            assert_eq!(assign(&region, t, false), streams(0, &[0, 0, 0, 0]), "threshold {t:?}");
        }
    }

    #[test]
    fn threshold_above_everything_merges_all() {
        // Plain mode, TH = 100, every cost 1. Root's users are K1, K2, K3 and the return.
        // Backward: return → s0, K3 → s1, K2 → s2, K1 → s3. Root: C = [s3, s2, s1, s0], all
        // cheap; s3 starts `groups`, then s2, s1, s0 are merged into it one by one (cost(s3)
        // stays below 100), so s3 contains return and is chosen: everything is stream 3.
        let mut src = String::from("func.func @f() {\n");
        for k in ["k1", "k2", "k3"] {
            src.push_str(&tc(k, 1, &[]));
        }
        src.push_str("  tfrt.return\n}\n");
        assert_eq!(assign(&body(&src), Some(100), false), streams(3, &[3, 3, 3]));
    }

    #[test]
    fn threshold_groups_cheap_streams() {
        // Plain mode, TH = 10; costs A 4, B 7, C 20. Backward: return → s0 (1), C → s1 (20),
        // B → s2 (7), A → s3 (4). Root: C = [s3, s2, s1, s0]: s3 cheap → groups [s3], best s3;
        // s2 cheap and cost(s3) = 4 < 10 → merged into s3 (11), best s3; s1 above, 20 > 11 →
        // best s1; s0 cheap, cost(s3) = 11 >= 10 → appended, contains return → ret = s0.
        // Chosen s0; step 5: last(groups) is s0 itself.
        let src = format!(
            "func.func @f() {{\n{}{}{}  tfrt.return\n}}\n",
            tc("a", 4, &[]),
            tc("b", 7, &[]),
            tc("c", 20, &[])
        );
        assert_eq!(assign(&body(&src), Some(10), false), streams(0, &[3, 3, 1]));
    }

    #[test]
    fn plain_mode_step_5_merges_leftover_cheap_stream() {
        // Costs X 1, Y 20 (uses X), Z 2 (uses X); TH = 10. Backward: return → s0, Z → s1 (2),
        // Y → s2 (20). X: C = [s2, s1]: s2 above → best; s1 cheap → groups [s1]. X joins s2,
        // then step 5 merges s1 (cheap, not chosen) into s2. Root: C = [s2, s0] → ret s0.
        let src = format!(
            "func.func @f() {{\n{}{}{}  tfrt.return\n}}\n",
            tc("x", 1, &[]),
            tc("y", 20, &["%x"]),
            tc("z", 2, &["%x"])
        );
        assert_eq!(assign(&body(&src), Some(10), false), streams(0, &[2, 2, 2]));
        // Without a threshold (cfr mode, cfr: X 1, Y 21, Z 3, TH = 21) there is no step 5:
        // at X, s2 is above (1 + 20 >= 21), s1 is cheap and stays on its own.
        assert_eq!(assign(&body(&src), None, false), streams(0, &[2, 2, 1]));
    }

    #[test]
    fn best_is_replaced_only_by_a_strictly_larger_cost() {
        // T = 1: X's children streams Y → s2 and Z → s1 both cost 1; the first one (s2) wins.
        let src = format!(
            "func.func @f() {{\n{}{}{}  tfrt.return\n}}\n",
            tc("x", 1, &[]),
            tc("y", 1, &["%x"]),
            tc("z", 1, &["%x"])
        );
        assert_eq!(assign(&body(&src), Some(1), false), streams(0, &[2, 2, 1]));
    }

    #[test]
    fn parent_is_the_first_operand_with_the_largest_cfr() {
        // T = 5; the two chains have equal cfr at %r (15 each), so %r's parent is %a2 (first
        // operand) and the b-chain is its own stream: s0 = return, %r, a-chain, root; s1 = b's.
        let region = body(
            r#"func.func @f(%a: i32, %b: i32) -> i32 {
  %a0 = tfrt.constant.i32 1
  %a1 = tfrt.add.i32 %a, %a0
  %a2 = tfrt.add.i32 %a, %a1
  %b0 = tfrt.constant.i32 2
  %b1 = tfrt.add.i32 %b, %b0
  %b2 = tfrt.add.i32 %b, %b1
  %r = tfrt.add.i32 %a2, %b2
  tfrt.return %r : i32
}"#,
        );
        assert_eq!(assign(&region, Some(5), false), streams(0, &[0, 0, 0, 1, 1, 1, 0]));
    }

    #[test]
    fn independent_expensive_values_stay_apart() {
        // T = 10, three constants (cost 10) all returned: the return's parent is %0; %1 and %2
        // are above the threshold and keep their own streams (created %2 first).
        let region = body(
            r#"func.func @f() -> (i32, i32, i32) {
  %0 = tfrt.constant.i32 0
  %1 = tfrt.constant.i32 1
  %2 = tfrt.constant.i32 2
  tfrt.return %0, %1, %2 : i32, i32, i32
}"#,
        );
        assert_eq!(assign(&region, Some(10), false), streams(0, &[0, 2, 1]));
    }

    #[test]
    fn cheap_siblings_merge_until_above_threshold() {
        // T = 10, block argument %c0; costs 4, 4, 11, 4, 4, merge.chains 1, return 1.
        // cfr: 5, 5, 12, 5, 5 → %m's parent is %c3. Backward: return s0, %m → s0 (2),
        // %c5 → s1, %c4 → s2, %c3 → s0 (13), %c2 → s3, %c1 → s4. Root: C = [s4, s3, s0, s2, s1]:
        // s3 merges into s4 (8); s0 above, best and ret; s2 merges into s4 (12); s1 starts a new
        // group (12 >= 10). Root joins s0; step 5 merges s1 (cost 4) into s0.
        let mut src = String::from("func.func @f(%c0: !tfrt.chain) -> !tfrt.chain {\n");
        for (i, cost) in [4, 4, 11, 4, 4].into_iter().enumerate() {
            src.push_str(&format!(
                "  %c{} = tfrt_test.test_cost %c0 {{id = {i} : i64, _tfrt_cost = {cost} : i64}} : !tfrt.chain\n",
                i + 1
            ));
        }
        src.push_str("  %m = tfrt.merge.chains %c1, %c2, %c3, %c4, %c5 : !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain, !tfrt.chain\n");
        src.push_str("  tfrt.return %m : !tfrt.chain\n}\n");
        assert_eq!(assign(&body(&src), Some(10), false), streams(0, &[4, 4, 0, 4, 0, 0]));
    }

    #[test]
    fn pack_elements_resolve_to_their_op() {
        // cfr mode. %q:2's op (cfr 2) beats %a (cfr 1) as %c's parent, so everything is one
        // chain and one stream. (Were %q#1 taken for a block-start value, %c's parent would be
        // %a and %q's op would get a stream of its own.)
        let region = body(
            r#"func.func @f() -> i32 {
  %a = tfrt_test.test_cost {id = 0 : i64, _tfrt_cost = 1 : i64}
  %q:2 = "t.two"(%a) : (i32) -> (i32, i32)
  %c = tfrt_test.test_cost %a, %q#1 {id = 2 : i64, _tfrt_cost = 1 : i64} : i32, i32
  tfrt.return %c : i32
}"#,
        );
        assert_eq!(assign(&region, None, false), streams(0, &[0, 0, 0]));
    }

    /// `%a` (3), `%d` (8), `%b` (5), `%c = f(%a, %b)` (2), return; `%a`'s type is `a_type`.
    fn inter_dependent(a_type: &str) -> Region {
        body(&format!(
            r#"func.func @f() {{
  %a = "tfrt_test.test_cost"() {{id = 0 : i64, _tfrt_cost = 3 : i64}} : () -> {a_type}
{}{}  %c = "tfrt_test.test_cost"(%a, %b) {{id = 3 : i64, _tfrt_cost = 2 : i64}} : ({a_type}, i32) -> i32
  tfrt.return
}}"#,
            tc("d", 8, &[]),
            tc("b", 5, &[])
        ))
    }

    #[test]
    fn merge_inter_dependent_streams() {
        // T = 10. %c's parent is %b (cfr 5 > 3); %c is a side use of %a. Backward: return s0,
        // %c → s1 (2), %b → s1 (7), %d → s2 (8), %a → s3 (3), recording s3 <-> s1.
        // Root: C = [s3, s2, s1, s0].
        let region = inter_dependent("i32");
        // Step 2: s3 depends on s1 (7 < 10): s1 merges into s3 (10, stop). C = [s3, s2, s0]:
        // s3 above → best; s2 cheap → groups [s2]; s0 merged into s2 (9) → ret = s2.
        assert_eq!(assign(&region, Some(10), true), streams(2, &[3, 2, 3, 3]));
        // Without step 2: s2 merges into s3 (11), s1 starts a group, s0 merges into s1 → ret.
        assert_eq!(assign(&region, Some(10), false), streams(1, &[3, 3, 1, 1]));
        // A `!tfrt.chain` operand is no side use: step 2 finds nothing to merge.
        assert_eq!(assign(&inter_dependent("!tfrt.chain"), Some(10), true), streams(1, &[3, 3, 1, 1]));
    }

    #[test]
    fn merge_inter_dependent_stops_at_the_threshold() {
        // T = 10; costs a 1, b1 6, x1 3 (uses b1, a), b2 1, x2 1 (uses b2, a). Parents: x1 → b1,
        // x2 → b2 (tie with %a, first operand wins); side uses of a: x1, x2.
        // Backward: return s0, x2 → s1, b2 → s1 (2), x1 → s2, b1 → s2 (9), a → s3 (1) with
        // side deps s3 <-> s2 and s3 <-> s1. Root: C = [s3, s2, s1, s0].
        // Step 2: s3 merges s2 (→ 10) and stops before s1; s1's dependency (s3) is not below TH.
        // Step 3 on [s3, s1, s0]: s3 above → best; s1 starts groups; s0 merges into s1 → ret.
        let src = format!(
            "func.func @f() {{\n{}{}{}{}{}  tfrt.return\n}}\n",
            tc("a", 1, &[]),
            tc("b1", 6, &[]),
            tc("x1", 3, &["%b1", "%a"]),
            tc("b2", 1, &[]),
            tc("x2", 1, &["%b2", "%a"])
        );
        assert_eq!(assign(&body(&src), Some(10), true), streams(1, &[3, 3, 3, 1, 1]));
    }

    #[test]
    fn empty_and_malformed_blocks_do_not_panic() {
        let empty = Region { args: Vec::new(), ops: Vec::new() };
        assert_eq!(assign(&empty, None, true), streams(0, &[]));
        assert_eq!(assign(&empty, Some(5), false), streams(0, &[]));

        // Unknown names (and an out-of-range pack element) count as defined by the root.
        let region = body(
            r#"func.func @f() -> i32 {
  %a = tfrt.add.i32 %nope, %nope
  %p:2 = "t.two"(%a) : (i32) -> (i32, i32)
  %b = tfrt.add.i32 %p#7, %zip#1
  tfrt.return %b : i32
}"#,
        );
        for t in [None, Some(1), Some(100)] {
            for merge in [false, true] {
                let s = assign(&region, t, merge);
                assert_eq!(s.kernels.len(), 3);
            }
        }
        // cfr mode: %a and %b hang off the root (cfr 2 each), %p off %a; TH = 3. Backward:
        // return → s0, %b → s0, %p → s1, %a → s1; root: C = [s1, s0], both above → ret s0.
        assert_eq!(assign(&region, None, false), streams(0, &[1, 1, 0]));

        // No terminator: every op is a kernel. Zero and negative costs are tolerated.
        let mut no_return = body(&format!(
            "func.func @f() {{\n{}{}{}  tfrt.return\n}}\n",
            tc("x", 0, &[]),
            tc("y", -5, &["%x"]),
            tc("z", 0, &["%x", "%y"])
        ));
        for merge in [false, true] {
            assert_eq!(assign(&no_return, None, merge).kernels.len(), 3);
            assert_eq!(assign(&no_return, Some(3), merge).kernels.len(), 3);
        }
        no_return.ops.pop();
        for merge in [false, true] {
            assert_eq!(assign(&no_return, None, merge).kernels.len(), 3);
            assert_eq!(assign(&no_return, Some(3), merge).kernels.len(), 3);
        }
    }

    fn op(name: &str, result: Option<&str>, operands: &[&str]) -> Op {
        Op {
            name: name.to_string(),
            results: result.map(|r| vec![ResultGroup { name: r.to_string(), count: 1 }]).unwrap_or_default(),
            operands: operands
                .iter()
                .map(|o| ValueRef { name: o.to_string(), index: None, loc: Loc::Unknown })
                .collect(),
            operand_types: Vec::new(),
            result_types: if result.is_some() { vec![Type("i32".into())] } else { Vec::new() },
            attrs: Vec::new(),
            regions: Vec::new(),
            loc: Loc::Unknown,
        }
    }

    #[test]
    fn large_blocks_are_handled() {
        const N: usize = 100_000;
        // A long chain: one stream.
        let mut ops = vec![op("t.c", Some("v0"), &[])];
        for i in 1..N {
            let (prev, cur) = (format!("v{}", i - 1), format!("v{i}"));
            ops.push(op("t.f", Some(&cur), &[&prev, "arg"]));
        }
        ops.push(op("tfrt.return", None, &[&format!("v{}", N - 1)]));
        let chain = Region { args: vec![("arg".into(), Type("i32".into()))], ops };
        for merge in [false, true] {
            let s = assign(&chain, None, merge);
            assert_eq!(s.root, 0);
            assert!(s.kernels.iter().all(|&k| k == 0));
        }
        // A wide fan-out: N independent kernels all used by one op.
        let mut ops: Vec<Op> = (0..N).map(|i| op("t.c", Some(&format!("w{i}")), &[])).collect();
        let names: Vec<String> = (0..N).map(|i| format!("w{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        ops.push(op("t.sum", Some("s"), &refs));
        ops.push(op("tfrt.return", None, &["s"]));
        let wide = Region { args: Vec::new(), ops };
        for t in [None, Some(1), Some(1000)] {
            for merge in [false, true] {
                assert_eq!(assign(&wide, t, merge).kernels.len(), N + 1);
            }
        }
    }
}
