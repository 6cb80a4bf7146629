//! Brute-force reference implementations and checkers for [`Dag`]s built by [`DepTracker`].
//!
//! These are slow (per element, or quadratic in tasks) and meant for tests and debugging:
//!
//! 1. Describe a program as one [`TaskAccesses`] per task.
//! 2. [`build`] runs it through a [`DepTracker`].
//! 3. [`check`] verifies the result: CSR structure, ranks and levels ([`check_structure`]),
//!    exact edges against a per-element simulation ([`reference_edges`]), no spurious edges
//!    ([`check_edges_are_conflicts`]) and equal reachability with the `O(n²)` conflict relation
//!    ([`check_reachability`]).

use core::ops::Range;
use std::collections::BTreeMap;

use super::{Access, Dag, DepTracker, EdgeKind};

/// One task's accesses, as passed to [`DepTracker::add_task`].
pub type TaskAccesses = Vec<(u32, Range<usize>, Access)>;

/// Runs `tasks` through a fresh [`DepTracker`] over arrays of `array_lens` elements.
///
/// # Panics
///
/// If the program passes one of the tracker's limits (see [`DepTracker::add_task`]).
pub fn build(array_lens: &[usize], tasks: &[TaskAccesses]) -> Dag {
    let mut tracker = DepTracker::new(array_lens);
    for accesses in tasks {
        tracker
            .add_task(accesses)
            .expect("the program fits the tracker's limits");
    }
    tracker
        .finish()
        .expect("the program fits the tracker's limits")
}

/// The kinds of direct conflict between an earlier task's and a later task's accesses: a pair
/// of accesses to overlapping parts of one array where at least one writes.
pub fn conflict_kinds(earlier: &TaskAccesses, later: &TaskAccesses) -> Vec<EdgeKind> {
    let mut kinds = Vec::new();
    for (a, ra, xa) in earlier {
        for (b, rb, xb) in later {
            if a != b || ra.start.max(rb.start) >= ra.end.min(rb.end) {
                continue;
            }
            let candidates = [
                (xa.writes() && xb.reads(), EdgeKind::Raw),
                (xa.writes() && xb.writes(), EdgeKind::Waw),
                (xa.reads() && xb.writes(), EdgeKind::War),
            ];
            for (applies, kind) in candidates {
                if applies && !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
        }
    }
    kinds
}

/// All conflicting pairs `(i, j)` with `i < j` (the `O(n²)` brute-force relation).
pub fn conflicts(tasks: &[TaskAccesses]) -> Vec<(u32, u32)> {
    let mut pairs = Vec::new();
    for (j, later) in tasks.iter().enumerate() {
        for (i, earlier) in tasks[..j].iter().enumerate() {
            if !conflict_kinds(earlier, later).is_empty() {
                pairs.push((i as u32, j as u32));
            }
        }
    }
    pairs
}

/// The edges the semantics prescribe, computed with per-element state (last writer and readers
/// since), as `(parent, child) -> kind`.
pub fn reference_edges(
    array_lens: &[usize],
    tasks: &[TaskAccesses],
) -> BTreeMap<(u32, u32), EdgeKind> {
    let mut writer: Vec<Vec<Option<u32>>> = array_lens.iter().map(|&n| vec![None; n]).collect();
    let mut readers: Vec<Vec<Vec<u32>>> = array_lens.iter().map(|&n| vec![Vec::new(); n]).collect();
    let mut edges = BTreeMap::new();
    for (t, accesses) in tasks.iter().enumerate() {
        let t = t as u32;
        let mut add = |parent: u32, kind: EdgeKind| {
            let slot = edges.entry((parent, t)).or_insert(kind);
            if kind.priority() > slot.priority() {
                *slot = kind;
            }
        };
        for (a, range, access) in accesses {
            let a = *a as usize;
            for x in range.clone() {
                if let Some(w) = writer[a][x] {
                    if access.reads() {
                        add(w, EdgeKind::Raw);
                    } else {
                        add(w, EdgeKind::Waw);
                    }
                }
                if access.writes() {
                    for &r in &readers[a][x] {
                        add(r, EdgeKind::War);
                    }
                }
            }
        }
        for (a, range, access) in accesses {
            if *access == Access::Read {
                for x in range.clone() {
                    if !readers[*a as usize][x].contains(&t) {
                        readers[*a as usize][x].push(t);
                    }
                }
            }
        }
        for (a, range, access) in accesses {
            if access.writes() {
                for x in range.clone() {
                    writer[*a as usize][x] = Some(t);
                    readers[*a as usize][x].clear();
                }
            }
        }
    }
    edges
}

/// The affine parent of every task (see [`affine_parents`](super::affine_parents)), by brute
/// force: per parent in `dag`, the set of `(array, element)` pairs both tasks access, counted in
/// bytes of `elem_bytes`; the most bytes wins, ties to the later parent.
pub fn reference_affine_parents(
    dag: &Dag,
    tasks: &[TaskAccesses],
    elem_bytes: &[usize],
) -> Vec<u32> {
    use std::collections::BTreeSet;
    let touched = |t: usize| -> BTreeSet<(u32, usize)> {
        tasks[t]
            .iter()
            .flat_map(|(a, range, _)| range.clone().map(move |x| (*a, x)))
            .collect()
    };
    let parents = dag.parents();
    (0..tasks.len())
        .map(|child| {
            let mine = touched(child);
            let mut best = (0u64, super::NO_AFFINE_PARENT);
            for &p in parents.parents_of(child as u32) {
                let bytes: u64 = touched(p as usize)
                    .intersection(&mine)
                    .map(|&(a, _)| elem_bytes[a as usize] as u64)
                    .sum();
                if bytes > 0 && (bytes > best.0 || (bytes == best.0 && p > best.1)) {
                    best = (bytes, p);
                }
            }
            best.1
        })
        .collect()
}

/// The edges of `dag` as `(parent, child) -> kind`.
pub fn dag_edges(dag: &Dag) -> BTreeMap<(u32, u32), EdgeKind> {
    (0..dag.task_count() as u32)
        .flat_map(|t| {
            dag.children_of(t)
                .iter()
                .zip(dag.kinds_of(t))
                .map(move |(&c, &k)| ((t, c), k))
        })
        .collect()
}

/// Transitive closure as one bitset row per task: bit `j` of row `i` is set iff there is a
/// non-empty path from `i` to `j`. Every edge must go from a lower to a higher id.
pub fn transitive_closure(n: usize, edges: impl IntoIterator<Item = (u32, u32)>) -> Vec<Vec<u64>> {
    let words = n.div_ceil(64);
    let mut children = vec![Vec::new(); n];
    for (i, j) in edges {
        assert!(i < j, "edge {i} -> {j} does not go forwards");
        children[i as usize].push(j as usize);
    }
    let mut reach = vec![vec![0u64; words]; n];
    for i in (0..n).rev() {
        let mut row = vec![0u64; words];
        for &c in &children[i] {
            row[c / 64] |= 1 << (c % 64);
            for (w, bits) in row.iter_mut().zip(&reach[c]) {
                *w |= bits;
            }
        }
        reach[i] = row;
    }
    reach
}

/// Checks the CSR invariants, in-degrees, ready list, ranks and levels of `dag`.
pub fn check_structure(dag: &Dag) -> Result<(), String> {
    let n = dag.task_count();
    let e = dag.edge_count();
    if dag.offsets.first() != Some(&0) || dag.offsets[n] as usize != e || dag.kinds.len() != e {
        return Err(format!("bad offsets/kinds lengths: {:?}", dag.offsets));
    }
    let mut in_degree = vec![0u32; n];
    for t in 0..n as u32 {
        if dag.offsets[t as usize] > dag.offsets[t as usize + 1] {
            return Err(format!("offsets decrease at {t}"));
        }
        let children = dag.children_of(t);
        for pair in children.windows(2) {
            if pair[0] >= pair[1] {
                return Err(format!(
                    "children of {t} not strictly ascending: {children:?}"
                ));
            }
        }
        for &c in children {
            if c <= t || c as usize >= n {
                return Err(format!(
                    "edge {t} -> {c} is a self/backward/out-of-range edge"
                ));
            }
            in_degree[c as usize] += 1;
        }
    }
    if in_degree != dag.in_degree {
        return Err(format!(
            "in_degree {:?} != recount {in_degree:?}",
            dag.in_degree
        ));
    }
    let ready: Vec<u32> = (0..n as u32)
        .filter(|&t| in_degree[t as usize] == 0)
        .collect();
    if ready != dag.ready {
        return Err(format!("ready {:?} != {ready:?}", dag.ready));
    }
    let levels = dag.levels();
    let parents = dag.parents();
    for t in 0..n as u32 {
        let ti = t as usize;
        let below = dag
            .children_of(t)
            .iter()
            .map(|&c| dag.rank[c as usize])
            .max()
            .unwrap_or(0);
        if dag.rank[ti] != below + 1 {
            return Err(format!(
                "rank[{t}] = {} but children give {}",
                dag.rank[ti],
                below + 1
            ));
        }
        let above = parents
            .parents_of(t)
            .iter()
            .map(|&p| levels[p as usize] + 1)
            .max()
            .unwrap_or(0);
        if levels[ti] != above {
            return Err(format!(
                "levels[{t}] = {} but parents give {above}",
                levels[ti]
            ));
        }
        if parents.parents_of(t).len() != dag.in_degree[ti] as usize {
            return Err(format!("parents({t}) disagrees with in_degree"));
        }
        if levels[ti] + dag.rank[ti] > dag.critical_path() {
            return Err(format!("path through {t} longer than the critical path"));
        }
    }
    Ok(())
}

/// Checks that every edge of `dag` is a real conflict of a kind that applies to the pair.
pub fn check_edges_are_conflicts(dag: &Dag, tasks: &[TaskAccesses]) -> Result<(), String> {
    for ((i, j), kind) in dag_edges(dag) {
        let kinds = conflict_kinds(&tasks[i as usize], &tasks[j as usize]);
        if !kinds.contains(&kind) {
            return Err(format!(
                "edge {i} -> {j} ({kind:?}) but the pair's conflicts are {kinds:?}"
            ));
        }
    }
    Ok(())
}

/// Checks that `dag` orders exactly the pairs the brute-force conflict relation orders: equal
/// transitive closures.
pub fn check_reachability(dag: &Dag, tasks: &[TaskAccesses]) -> Result<(), String> {
    let n = tasks.len();
    let ours = transitive_closure(n, dag_edges(dag).into_keys());
    let theirs = transitive_closure(n, conflicts(tasks));
    for i in 0..n {
        for j in 0..n {
            let (a, b) = (
                ours[i][j / 64] >> (j % 64) & 1,
                theirs[i][j / 64] >> (j % 64) & 1,
            );
            if a != b {
                return Err(format!("reachability {i} -> {j}: dag {a}, conflicts {b}"));
            }
        }
    }
    Ok(())
}

/// Runs every check of this module on `dag`, which should have been built from `tasks`.
pub fn check(dag: &Dag, array_lens: &[usize], tasks: &[TaskAccesses]) -> Result<(), String> {
    if dag.task_count() != tasks.len() {
        return Err(format!(
            "{} tasks in the dag, {} in the program",
            dag.task_count(),
            tasks.len()
        ));
    }
    check_structure(dag)?;
    let expected = reference_edges(array_lens, tasks);
    let actual = dag_edges(dag);
    if expected != actual {
        return Err(format!(
            "edges differ from the reference:\n  dag {actual:?}\n  ref {expected:?}"
        ));
    }
    check_edges_are_conflicts(dag, tasks)?;
    check_reachability(dag, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Read as R, ReadWrite as RW, Write as W};

    #[test]
    fn closure_of_a_chain() {
        let reach = transitive_closure(3, [(0, 1), (1, 2)]);
        assert_eq!(reach, vec![vec![0b110], vec![0b100], vec![0]]);
    }

    #[test]
    fn conflict_kinds_of_read_write() {
        let a = vec![(0, 0..4, RW)];
        let b = vec![(0, 2..6, R), (0, 3..4, W), (1, 0..4, W)];
        assert_eq!(
            conflict_kinds(&a, &b),
            vec![EdgeKind::Raw, EdgeKind::Waw, EdgeKind::War]
        );
        assert!(conflict_kinds(&vec![(0, 0..2, W)], &vec![(0, 2..4, W)]).is_empty());
    }

    #[test]
    fn check_accepts_a_tiled_wavefront() {
        // 4x4 tiles of 3 elements; task (i, j) reads (i-1, j) and (i, j-1), writes (i, j).
        let tile = |i: usize, j: usize| (i * 4 + j) * 3..(i * 4 + j + 1) * 3;
        let mut tasks = Vec::new();
        for i in 0..4 {
            for j in 0..4 {
                let mut accesses = vec![(0, tile(i, j), W)];
                if i > 0 {
                    accesses.push((0, tile(i - 1, j), R));
                }
                if j > 0 {
                    accesses.push((0, tile(i, j - 1), R));
                }
                tasks.push(accesses);
            }
        }
        let dag = build(&[48], &tasks);
        check(&dag, &[48], &tasks).unwrap();
        assert_eq!(dag.edge_count(), 2 * 4 * 3);
        assert_eq!(dag.critical_path(), 7);
    }

    #[test]
    fn check_rejects_a_missing_edge() {
        let tasks = vec![vec![(0, 0..4, W)], vec![(0, 0..4, R)]];
        let dag = Dag::from_parent_lists(&[0, 0, 0], &[], &[]);
        assert!(check(&dag, &[4], &tasks).is_err());
        assert!(check_reachability(&dag, &tasks).is_err());
    }
}
