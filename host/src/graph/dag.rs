//! [`Dag`]: the task graph in CSR form, with in-degrees, ready list and ranks.

use super::EdgeKind;

/// The task DAG in compressed sparse row form (children lists).
///
/// Task ids are spawn order, and every edge goes from a lower id to a higher one, so increasing
/// id order is a topological order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dag {
    /// Length `n + 1`: the children of `t` are `children[offsets[t]..offsets[t + 1]]`.
    pub offsets: Vec<u32>,
    /// Children of every task, each task's ascending.
    pub children: Vec<u32>,
    /// Edge kinds, parallel to `children`.
    pub kinds: Vec<EdgeKind>,
    /// Number of parents of every task.
    pub in_degree: Vec<u32>,
    /// Tasks with no parents, ascending.
    pub ready: Vec<u32>,
    /// Bottom level: the number of tasks on the longest path from `t` to a sink (sinks have 1).
    pub rank: Vec<u32>,
}

/// The reverse of a [`Dag`]: the parents of every task, in CSR form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParentCsr {
    /// Length `n + 1`: the parents of `t` are `parents[offsets[t]..offsets[t + 1]]`.
    pub offsets: Vec<u32>,
    /// Parents of every task, each task's ascending.
    pub parents: Vec<u32>,
    /// Edge kinds, parallel to `parents`.
    pub kinds: Vec<EdgeKind>,
}

impl ParentCsr {
    /// The parents of `task`, ascending.
    pub fn parents_of(&self, task: u32) -> &[u32] {
        let t = task as usize;
        &self.parents[self.offsets[t] as usize..self.offsets[t + 1] as usize]
    }

    /// The kinds of the edges from [`ParentCsr::parents_of`]`(task)`.
    pub fn kinds_of(&self, task: u32) -> &[EdgeKind] {
        let t = task as usize;
        &self.kinds[self.offsets[t] as usize..self.offsets[t + 1] as usize]
    }
}

/// Transposes the CSR `(offsets, targets, kinds)` over `n` rows: a counting sort by target.
/// Rows are scanned in increasing order, so every output row is ascending.
fn transpose(
    offsets: &[u32],
    targets: &[u32],
    kinds: &[EdgeKind],
) -> (Vec<u32>, Vec<u32>, Vec<EdgeKind>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    transpose_into(offsets, targets, kinds, &mut out);
    out
}

/// [`transpose`] into the vectors of `out`, which are cleared first.
fn transpose_into(
    offsets: &[u32],
    targets: &[u32],
    kinds: &[EdgeKind],
    (out, out_targets, out_kinds): &mut (Vec<u32>, Vec<u32>, Vec<EdgeKind>),
) {
    let n = offsets.len() - 1;
    // First `out[t]` counts edges into `t`, then (exclusive prefix sum) where they start, then
    // (after the scatter) where they end, which is where `t + 1`'s start: shift right by one.
    out.clear();
    out.resize(n + 1, 0);
    for &t in targets {
        out[t as usize] += 1;
    }
    let mut sum = 0u32;
    for slot in &mut out[..n] {
        let count = *slot;
        *slot = sum;
        sum += count;
    }
    out_targets.clear();
    out_targets.resize(targets.len(), 0);
    out_kinds.clear();
    out_kinds.resize(targets.len(), EdgeKind::Raw);
    for row in 0..n {
        let range = offsets[row] as usize..offsets[row + 1] as usize;
        for (&t, &kind) in targets[range.clone()].iter().zip(&kinds[range]) {
            let pos = &mut out[t as usize];
            out_targets[*pos as usize] = row as u32;
            out_kinds[*pos as usize] = kind;
            *pos += 1;
        }
    }
    out.copy_within(0..n, 1);
    out[0] = 0;
}

impl Dag {
    /// Builds the DAG from the parent lists of every task: the parents of `t` are
    /// `parents[in_offsets[t]..in_offsets[t + 1]]`, all lower than `t`, with no duplicates.
    ///
    /// This is the CSR construction (a counting sort by parent, `O(tasks + edges)`), followed by
    /// in-degrees, the ready list and ranks.
    pub fn from_parent_lists(in_offsets: &[u32], parents: &[u32], kinds: &[EdgeKind]) -> Dag {
        Self::from_parent_lists_in(None, in_offsets, parents, kinds)
    }

    /// [`Dag::from_parent_lists`] written into the vectors of `spare`, a DAG no longer needed
    /// (see [`Spare`](super::Spare)): memory already in use rather than fresh pages.
    pub(crate) fn from_parent_lists_in(
        spare: Option<Dag>,
        in_offsets: &[u32],
        parents: &[u32],
        kinds: &[EdgeKind],
    ) -> Dag {
        assert!(!in_offsets.is_empty(), "in_offsets has n + 1 entries");
        assert_eq!(parents.len(), kinds.len());
        assert_eq!(
            *in_offsets.last().expect("non-empty") as usize,
            parents.len()
        );
        let n = in_offsets.len() - 1;
        let mut dag = spare.unwrap_or(Dag {
            offsets: Vec::new(),
            children: Vec::new(),
            kinds: Vec::new(),
            in_degree: Vec::new(),
            ready: Vec::new(),
            rank: Vec::new(),
        });
        dag.in_degree.clear();
        (dag.in_degree).extend(in_offsets.windows(2).map(|w| w[1] - w[0]));
        dag.ready.clear();
        let in_degree = &dag.in_degree;
        (dag.ready).extend((0..n as u32).filter(|&t| in_degree[t as usize] == 0));
        let mut csr = (
            std::mem::take(&mut dag.offsets),
            std::mem::take(&mut dag.children),
            std::mem::take(&mut dag.kinds),
        );
        transpose_into(in_offsets, parents, kinds, &mut csr);
        (dag.offsets, dag.children, dag.kinds) = csr;
        let mut rank = std::mem::take(&mut dag.rank);
        dag.bottom_levels_into(&mut rank);
        dag.rank = rank;
        dag
    }

    /// Number of tasks.
    pub fn task_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.children.len()
    }

    /// The children of `task`, ascending.
    pub fn children_of(&self, task: u32) -> &[u32] {
        &self.children[self.range(task)]
    }

    /// The kinds of the edges from `task` to [`Dag::children_of`]`(task)`.
    pub fn kinds_of(&self, task: u32) -> &[EdgeKind] {
        &self.kinds[self.range(task)]
    }

    fn range(&self, task: u32) -> core::ops::Range<usize> {
        let t = task as usize;
        self.offsets[t] as usize..self.offsets[t + 1] as usize
    }

    /// The parents of every task, as a CSR built in `O(tasks + edges)`.
    pub fn parents(&self) -> ParentCsr {
        let (offsets, parents, kinds) = transpose(&self.offsets, &self.children, &self.kinds);
        ParentCsr {
            offsets,
            parents,
            kinds,
        }
    }

    /// The length in tasks of the longest path (the maximum rank; 0 for an empty DAG).
    pub fn critical_path(&self) -> u32 {
        self.rank.iter().copied().max().unwrap_or(0)
    }

    /// Top level of every task: 0 for sources, otherwise 1 + the maximum over its parents.
    pub fn levels(&self) -> Vec<u32> {
        let n = self.task_count();
        let mut level = vec![0u32; n];
        // Parents have lower ids, so `level[t]` is final when the scan reaches `t`.
        for t in 0..n {
            let next = level[t] + 1;
            for &c in self.children_of(t as u32) {
                let slot = &mut level[c as usize];
                *slot = (*slot).max(next);
            }
        }
        level
    }

    /// The most tasks any one top level holds: the DAG's parallelism under level-by-level
    /// execution, and a bound on how many workers the persistent scheduler can keep busy at once
    /// in a DAG whose levels run in step (0 for an empty DAG).
    pub fn max_level_width(&self) -> usize {
        let mut width = Vec::new();
        for level in self.levels() {
            let level = level as usize;
            if width.len() <= level {
                width.resize(level + 1, 0usize);
            }
            width[level] += 1;
        }
        width.into_iter().max().unwrap_or(0)
    }

    /// Bottom level of every task (what [`Dag::rank`] holds), into `rank` (cleared first).
    fn bottom_levels_into(&self, rank: &mut Vec<u32>) {
        let n = self.task_count();
        rank.clear();
        rank.resize(n, 0);
        // Children have higher ids, so a reverse scan is a reverse topological order.
        for t in (0..n).rev() {
            let deepest = (self.children_of(t as u32).iter())
                .map(|&c| rank[c as usize])
                .max();
            rank[t] = 1 + deepest.unwrap_or(0);
        }
    }

    /// Every task's bottom level when task `t` costs `cost(t)`: its cost plus its deepest
    /// child's.
    pub fn bottom_levels_by(&self, cost: impl Fn(u32) -> u64) -> Vec<u64> {
        let n = self.task_count();
        let mut bottom = vec![0u64; n];
        // Children have higher ids, so a reverse scan is a reverse topological order.
        for t in (0..n).rev() {
            let deepest = self
                .children_of(t as u32)
                .iter()
                .map(|&c| bottom[c as usize])
                .max();
            bottom[t] = cost(t as u32) + deepest.unwrap_or(0);
        }
        bottom
    }

    /// Every task's top level when task `t` costs `cost(t)`: when the longest path into it ends.
    pub fn top_levels_by(&self, cost: impl Fn(u32) -> u64) -> Vec<u64> {
        let n = self.task_count();
        let mut top = vec![0u64; n];
        // Parents have lower ids, so `top[t]` is final when the scan reaches `t`.
        for t in 0..n {
            let end = top[t] + cost(t as u32);
            for &c in self.children_of(t as u32) {
                top[c as usize] = top[c as usize].max(end);
            }
        }
        top
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EdgeKind::{Raw, War, Waw};

    /// 0 -> 1, 0 -> 2, 1 -> 3, 2 -> 3, 0 -> 4 (task 4 is a sink hanging off the source).
    fn diamond() -> Dag {
        let in_offsets = [0, 0, 1, 2, 4, 5];
        let parents = [0, 0, 1, 2, 0];
        let kinds = [Raw, War, Raw, Waw, Raw];
        Dag::from_parent_lists(&in_offsets, &parents, &kinds)
    }

    #[test]
    fn csr_from_parent_lists() {
        let dag = diamond();
        assert_eq!(dag.offsets, vec![0, 3, 4, 5, 5, 5]);
        assert_eq!(dag.children, vec![1, 2, 4, 3, 3]);
        assert_eq!(dag.kinds, vec![Raw, War, Raw, Raw, Waw]);
        assert_eq!(dag.in_degree, vec![0, 1, 1, 2, 1]);
        assert_eq!(dag.ready, vec![0]);
        assert_eq!(dag.task_count(), 5);
        assert_eq!(dag.edge_count(), 5);
    }

    #[test]
    fn rank_levels_critical_path() {
        let dag = diamond();
        assert_eq!(dag.rank, vec![3, 2, 2, 1, 1]);
        assert_eq!(dag.levels(), vec![0, 1, 1, 2, 1]);
        assert_eq!(dag.critical_path(), 3);
        assert_eq!(dag.max_level_width(), 3);
        assert_eq!(Dag::from_parent_lists(&[0], &[], &[]).max_level_width(), 0);
    }

    #[test]
    fn parents_round_trip() {
        let dag = diamond();
        let parents = dag.parents();
        assert_eq!(parents.offsets, vec![0, 0, 1, 2, 4, 5]);
        assert_eq!(parents.parents, vec![0, 0, 1, 2, 0]);
        assert_eq!(parents.kinds_of(3), &[Raw, Waw]);
        assert_eq!(parents.parents_of(3), &[1, 2]);
        let back = Dag::from_parent_lists(&parents.offsets, &parents.parents, &parents.kinds);
        assert_eq!(back, dag);
    }

    #[test]
    fn isolated_tasks() {
        let dag = Dag::from_parent_lists(&[0, 0, 0], &[], &[]);
        assert_eq!(dag.ready, vec![0, 1]);
        assert_eq!(dag.rank, vec![1, 1]);
        assert_eq!(dag.levels(), vec![0, 0]);
        assert_eq!(dag.critical_path(), 1);
    }
}
