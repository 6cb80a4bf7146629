//! Property tests: random programs checked against the brute-force [`oracle`](super::oracle).

use proptest::prelude::*;

use super::oracle::{self, TaskAccesses};
use super::schedule;
use super::spare::Spare;
use super::{
    Access, Costs, Dag, DepTracker, NO_AFFINE_PARENT, Reserve, Schedule, Split, TaskRanges,
    affine_parents, list_schedule, list_schedule_costed,
};

/// A random program: array lengths and, per task, 1..=4 accesses.
#[derive(Clone, Debug)]
struct Program {
    lens: Vec<usize>,
    tasks: Vec<TaskAccesses>,
}

fn access() -> impl Strategy<Value = Access> {
    prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite)
    ]
}

/// 1..=`max_tasks` tasks over 1..=4 arrays of 1..=40 elements. Range ends are drawn from
/// 0..=40 and clamped to the array, so empty ranges and ranges ending at the array's end are
/// common.
fn program(max_tasks: usize) -> impl Strategy<Value = Program> {
    (prop::collection::vec(1usize..=40, 1..=4), 1..=max_tasks).prop_flat_map(|(lens, n)| {
        let arrays = lens.len() as u32;
        let one = (0..arrays, 0usize..=40, 0usize..=40, access());
        let task = prop::collection::vec(one, 1..=4);
        prop::collection::vec(task, n).prop_map(move |raw| {
            let tasks = raw
                .into_iter()
                .map(|accesses| {
                    accesses
                        .into_iter()
                        .map(|(a, x, y, access)| {
                            let len = lens[a as usize];
                            (a, x.min(y).min(len)..x.max(y).min(len), access)
                        })
                        .collect()
                })
                .collect();
            Program {
                lens: lens.clone(),
                tasks,
            }
        })
    })
}

/// Small arrays give dense overlaps; this variant uses arrays of 1..=6 elements.
fn dense_program(max_tasks: usize) -> impl Strategy<Value = Program> {
    program(max_tasks).prop_map(|mut p| {
        for len in &mut p.lens {
            *len = 1 + *len % 6;
        }
        for task in &mut p.tasks {
            for (a, range, _) in task.iter_mut() {
                let len = p.lens[*a as usize];
                *range = range.start.min(len)..range.end.min(len);
            }
        }
        p
    })
}

/// A tiled program: 1..=3 arrays, each of whole tiles of its own size (1..=5 elements, the first
/// at an offset below the size, a partial tile at the end), every write one whole tile and every
/// read one whole tile or, with `part`, a part of one, so that the tracker keeps the arrays on its
/// tile path. With `cut`, one access (the `cut.0`-th task's first, if there is one) is shifted by
/// `cut.1` elements, which mostly sends its array to the general path in the middle of the
/// program.
fn tiled_program(max_tasks: usize) -> impl Strategy<Value = Program> {
    let array = (1usize..=5, 0usize..5, 1usize..=8, 0usize..5);
    (
        prop::collection::vec(array, 1..=3),
        1..=max_tasks,
        prop::option::of((0usize..60, 1usize..=4)),
    )
        .prop_flat_map(|(shapes, n, cut)| {
            // (size, base, len): whole tiles from `base`, then a partial one.
            let shapes: Vec<(usize, usize, usize)> = (shapes.into_iter())
                .map(|(size, base, tiles, tail)| {
                    let base = base % size;
                    (size, base, base + tiles * size + tail % size)
                })
                .collect();
            let arrays = shapes.len() as u32;
            // A read's part, when drawn: its start within the tile, and its length, which may
            // reach into the next tiles or past the last whole one.
            let part = prop::option::weighted(0.3, (0usize..5, 0usize..12));
            let one = (0..arrays, 0usize..8, access(), part);
            let task = prop::collection::vec(one, 1..=4);
            prop::collection::vec(task, n).prop_map(move |raw| {
                let mut tasks: Vec<TaskAccesses> = (raw.into_iter())
                    .map(|accesses| {
                        (accesses.into_iter())
                            .map(|(a, tile, access, part)| {
                                let (size, base, len) = shapes[a as usize];
                                let lo = base + tile % ((len - base) / size) * size;
                                match part {
                                    Some((at, long)) if access == Access::Read => {
                                        let at = lo + at % size;
                                        (a, at..(at + 1 + long).min(len), access)
                                    }
                                    _ => (a, lo..lo + size, access),
                                }
                            })
                            .collect()
                    })
                    .collect();
                if let Some((at, by)) = cut
                    && let Some(first) = tasks.get_mut(at).and_then(|t| t.first_mut())
                {
                    let array_len = shapes[first.0 as usize].2;
                    first.1 =
                        (first.1.start + by).min(array_len)..(first.1.end + by).min(array_len);
                }
                Program {
                    lens: shapes.iter().map(|s| s.2).collect(),
                    tasks,
                }
            })
        })
}

/// Whether array `a` of `p` stays on the tile path, by the rule the path keeps: the first range
/// sets the tile size and offset; a write is a whole tile and a read lies within the whole tiles
/// (at most 256 of them); the first write may set the size instead when every earlier range fits
/// its tiles.
fn stays_tiled(p: &Program, a: u32) -> bool {
    let len = p.lens[a as usize];
    let fits = |(size, base): (usize, usize), r: &core::ops::Range<usize>, access: Access| {
        let Some(lo) = r.start.checked_sub(base) else {
            return false;
        };
        let (first, last) = (lo / size, (r.end - base - 1) / size);
        let within = last < (len - base) / size && last - first < 256;
        match access {
            Access::Read => within,
            _ => within && first == last && r.len() == size,
        }
    };
    let ranges: Vec<_> = (p.tasks.iter().flatten())
        .filter(|(b, r, _)| *b == a && !r.is_empty())
        .collect();
    let Some(first) = ranges.first() else {
        return true;
    };
    let (mut tiles, mut written) = ((first.1.len(), first.1.start % first.1.len()), false);
    for (i, (_, r, access)) in ranges.iter().enumerate() {
        if !fits(tiles, r, *access) {
            let new = (r.len(), r.start % r.len());
            let earlier = ranges[..i].iter().all(|(_, q, x)| fits(new, q, *x));
            if written || !access.writes() || !earlier || !fits(new, r, *access) {
                return false;
            }
            tiles = new;
        }
        written |= access.writes();
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// (a) Reachability equals the closure of the brute-force conflict relation.
    #[test]
    fn reachability_matches_conflicts(p in program(60)) {
        let dag = oracle::build(&p.lens, &p.tasks);
        prop_assert_eq!(oracle::check_reachability(&dag, &p.tasks), Ok(()));
    }

    /// (b) Every edge is a real conflict, and the edges are exactly the per-element reference.
    #[test]
    fn edges_are_exact(p in program(60)) {
        let dag = oracle::build(&p.lens, &p.tasks);
        prop_assert_eq!(oracle::check_edges_are_conflicts(&dag, &p.tasks), Ok(()));
        prop_assert_eq!(oracle::dag_edges(&dag), oracle::reference_edges(&p.lens, &p.tasks));
    }

    /// Tiled programs, on the tile path (their reads whole tiles or parts of one) or leaving it
    /// half-way, give exactly the per-element reference's edges, and pass every other check.
    #[test]
    fn tiled_programs_give_the_reference_edges(p in tiled_program(60)) {
        let mut tracker = DepTracker::new(&p.lens);
        for accesses in &p.tasks {
            tracker.add_task(accesses).unwrap();
        }
        let used = (0..p.lens.len() as u32)
            .filter(|&a| p.tasks.iter().flatten().any(|(b, r, _)| *b == a && !r.is_empty()));
        let tiled = used.filter(|&a| stays_tiled(&p, a));
        prop_assert_eq!(tracker.tiled_arrays(), tiled.count());
        let dag = oracle::build(&p.lens, &p.tasks);
        prop_assert_eq!(oracle::dag_edges(&dag), oracle::reference_edges(&p.lens, &p.tasks));
        prop_assert_eq!(oracle::check(&dag, &p.lens, &p.tasks), Ok(()));
    }

    /// (c) CSR structure, in-degrees, ready list, ranks and levels are consistent.
    #[test]
    fn structure_is_consistent(p in program(60)) {
        let dag = oracle::build(&p.lens, &p.tasks);
        prop_assert_eq!(oracle::check_structure(&dag), Ok(()));
    }

    /// Everything at once on tiny arrays, where nearly every pair of accesses overlaps.
    #[test]
    fn dense_programs_pass_every_check(p in dense_program(60)) {
        let dag = oracle::build(&p.lens, &p.tasks);
        prop_assert_eq!(oracle::check(&dag, &p.lens, &p.tasks), Ok(()));
    }

    /// The order of a task's accesses does not matter.
    #[test]
    fn access_order_is_irrelevant(p in program(30)) {
        let reversed: Vec<TaskAccesses> =
            p.tasks.iter().map(|t| t.iter().rev().cloned().collect()).collect();
        prop_assert_eq!(oracle::build(&p.lens, &p.tasks), oracle::build(&p.lens, &reversed));
    }

    /// Tracking cut into element ranges on several threads gives exactly the DAG of tracking
    /// every array whole on one thread, and that is the per-element reference.
    #[test]
    fn every_split_gives_the_same_dag(
        p in program(60),
        threads in 1usize..=4,
        jobs in 1usize..=16,
    ) {
        let mut tracker = DepTracker::new(&p.lens);
        for accesses in &p.tasks {
            tracker.add_task(accesses).unwrap();
        }
        prop_assert_eq!(tracker.task_count() as usize, p.tasks.len());
        let whole = tracker.clone().finish_with(Split::SEQUENTIAL).unwrap();
        prop_assert_eq!(oracle::dag_edges(&whole), oracle::reference_edges(&p.lens, &p.tasks));
        let split = tracker.finish_with(Split { threads, jobs }).unwrap();
        prop_assert_eq!(split, whole);
    }

    /// The affine parent of every task is a parent (or none only when the task shares no byte
    /// with any), and it is the brute-force one: per-element sets, ties to the later parent.
    #[test]
    fn affine_parents_match_the_per_element_reference(
        p in dense_program(40),
        elem in prop::collection::vec(1usize..=8, 4),
    ) {
        let dag = oracle::build(&p.lens, &p.tasks);
        let mut ranges = TaskRanges::default();
        for accesses in &p.tasks {
            ranges.push_task(accesses.iter().map(|(a, r, _)| (*a, r.clone()))).unwrap();
        }
        let affine = affine_parents(&dag, &ranges, &elem);
        prop_assert_eq!(&affine, &oracle::reference_affine_parents(&dag, &p.tasks, &elem));
        let parents = dag.parents();
        for (t, &a) in affine.iter().enumerate() {
            let of = parents.parents_of(t as u32);
            // Every edge comes from a conflict on overlapping ranges: a task with a parent shares
            // data with it.
            prop_assert_eq!(a == NO_AFFINE_PARENT, of.is_empty(), "task {}", t);
            prop_assert!(a == NO_AFFINE_PARENT || of.contains(&a), "task {}", t);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// The static plan places every task once, and workers that run their lists in order, each
    /// waiting for its head task's parents, finish every task: a round in which no head is ready
    /// would be a deadlock.
    #[test]
    fn static_plans_never_deadlock(p in program(60), workers in 1u32..=9) {
        let dag = oracle::build(&p.lens, &p.tasks);
        let plan = list_schedule(&dag, workers);
        prop_assert_eq!(&plan, &schedule::tests::reference(&dag, workers));
        runs_to_the_end(&dag, &plan)?;
    }

    /// The same with task costs (zero among them) and a hop: the order by costed rank is still
    /// topological.
    #[test]
    fn costed_static_plans_never_deadlock(
        p in program(60),
        workers in 1u32..=9,
        weights in proptest::collection::vec(0u64..40, 60),
        hop in 0u64..5,
        chain in proptest::bool::ANY,
    ) {
        let dag = oracle::build(&p.lens, &p.tasks);
        let n = dag.task_count();
        let costs = Costs { task: (0..n).map(|t| weights[t % weights.len()]).collect(), hop };
        let reserve = if chain && workers > 2 {
            Reserve { chain: vec![0], idle: vec![1] }
        } else {
            Reserve::default()
        };
        let plan = list_schedule_costed(&dag, workers, &reserve, Some(&costs));
        runs_to_the_end(&dag, &plan)?;
    }
}

proptest! {
    // Two programs and three trackings a case; the property is about buffers, not new edges.
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A tracker that writes into the buffers another program's inspection left (its tile
    /// tables, edge lists, merge lists and DAG) gives exactly the DAG of a fresh one.
    #[test]
    fn recycled_buffers_give_the_same_dag(
        p in tiled_program(60),
        q in tiled_program(60),
        jobs in 1usize..=3,
    ) {
        recycled_equals_fresh(&p, &q, jobs)?;
    }

    /// The same on the general path, whose records, reader lists, runs and sink are kept too;
    /// `q`'s arrays may take other paths than `p`'s.
    #[test]
    fn recycled_general_buffers_give_the_same_dag(
        p in program(40),
        q in prop_oneof![program(40), tiled_program(40)],
        jobs in 1usize..=2,
    ) {
        recycled_equals_fresh(&p, &q, jobs)?;
    }
}

/// Tracks `p` in the buffers `q`'s inspection left, and afresh: the same DAG, and the reference
/// one.
fn recycled_equals_fresh(p: &Program, q: &Program, jobs: usize) -> Result<(), TestCaseError> {
    let track = |program: &Program, spare: Spare, keep: &mut Spare| {
        let mut tracker = DepTracker::new(&program.lens);
        tracker.recycle(spare);
        for accesses in &program.tasks {
            tracker.add_task(accesses).unwrap();
        }
        tracker
            .finish_into(Split { threads: 1, jobs }, keep)
            .unwrap()
    };
    let mut kept = Spare::default();
    let other = track(q, Spare::default(), &mut kept);
    kept.keep_dag(other);
    let recycled = track(p, kept, &mut Spare::default());
    let fresh = track(p, Spare::default(), &mut Spare::default());
    prop_assert_eq!(
        oracle::dag_edges(&recycled),
        oracle::reference_edges(&p.lens, &p.tasks)
    );
    prop_assert_eq!(recycled, fresh);
    Ok(())
}

/// Workers that run `plan`'s lists in order, each waiting for its head task's parents, run every
/// task once.
fn runs_to_the_end(dag: &Dag, plan: &Schedule) -> Result<(), TestCaseError> {
    let parents = dag.parents();
    let n = dag.task_count();
    prop_assert_eq!(plan.lists.iter().map(Vec::len).sum::<usize>(), n);
    let mut done = vec![false; n];
    let mut next = vec![0usize; plan.lists.len()];
    let mut finished = 0;
    while finished < n {
        let mut progressed = false;
        for (w, list) in plan.lists.iter().enumerate() {
            if let Some(&t) = list.get(next[w])
                && parents.parents_of(t).iter().all(|&q| done[q as usize])
            {
                prop_assert_eq!(plan.worker[t as usize], w as u32);
                prop_assert!(!done[t as usize], "task {} placed twice", t);
                done[t as usize] = true;
                next[w] += 1;
                finished += 1;
                progressed = true;
            }
        }
        prop_assert!(
            progressed,
            "no worker's next task is ready: {:?}",
            plan.lists
        );
    }
    Ok(())
}
