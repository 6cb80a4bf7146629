//! Inspection through the real path (region macro, spawn functions, `Recorder`) on random regions:
//! random tasks with random declared ranges, valid or not, over arrays of random lengths.
//!
//! A region whose ranges all lie within their arrays gives exactly the per-element reference DAG
//! of [`oracle::reference_edges`], with a consistent CSR, and a task table holding every spawn's
//! kind and argument words in order. A region with a bad range fails at its first bad access,
//! in spawn order and then declaration order, with the error naming that task, parameter and range;
//! a spawn that passes one array to both `x: &[u32]` and `y: &mut [u32]` fails before its ranges
//! are looked at, naming the array and both parameters. Inspection never touches the arrays.
//! 10,000 regions per run, about half of them valid.

use std::ops::Range;

use proptest::prelude::*;
use taskweave::graph::{Access, oracle};
use taskweave::{Error, task, task_region};

const MAX_OPS: usize = 32;

/// One spawn: the task kind, its arrays and four range bounds (not necessarily ordered or in
/// bounds).
#[derive(Clone, Copy, Debug, Default)]
struct Op {
    kind: u8,
    arrays: [u8; 2],
    bounds: [usize; 4],
}

#[task(reads = x[lo..hi])]
fn read(x: &[u32], lo: usize, hi: usize) {
    let _ = (x, lo, hi);
}

#[task(writes = x[lo..hi])]
fn write(x: &mut [u32], lo: usize, hi: usize) {
    let _ = (x, lo, hi);
}

#[task(reads = x[lo..hi], writes = x[lo..hi])]
fn update(x: &mut [u32], lo: usize, hi: usize) {
    let _ = (x, lo, hi);
}

#[task(reads = x[r0..r1], writes = y[w0..w1])]
fn copy(x: &[u32], y: &mut [u32], r0: usize, r1: usize, w0: usize, w1: usize) {
    let _ = (x, y, r0, r1, w0, w1);
}

#[task(reads = [x[a0..a1], x[b0..b1]])]
fn two(x: &[u32], a0: usize, a1: usize, b0: usize, b1: usize) {
    let _ = (x, a0, a1, b0, b1);
}

/// `lo..=last`, and `lo..` for the write.
#[task(reads = x[lo..=last], writes = y[lo..])]
fn tail(x: &[u32], y: &mut [u32], lo: usize, last: usize) {
    let _ = (x, y, lo, last);
}

task_region! {
    fn random_region(a: &mut [u32], b: &mut [u32], c: &mut [u32], ops: [Op; MAX_OPS], n: usize) {
        let arrays = [a, b, c];
        for op in &ops[..n] {
            let [x, y] = op.arrays.map(|k| arrays[k as usize]);
            let [p, q, r, s] = op.bounds;
            match op.kind {
                0 => spawn!(read(x, p, q)),
                1 => spawn!(write(x, p, q)),
                2 => spawn!(update(x, p, q)),
                3 => spawn!(copy(x, y, p, q, r, s)),
                4 => spawn!(two(x, p, q, r, s)),
                _ => spawn!(tail(x, y, p, q)),
            }
        }
    }
}

const KINDS: [&str; 6] = ["read", "write", "update", "copy", "two", "tail"];

/// The declared accesses of `op`, in declaration order: `(array, start, end, write, parameter)`;
/// an end of `None` stands for the array's length.
fn declared(op: &Op) -> Vec<(usize, usize, Option<usize>, bool, &'static str)> {
    let [x, y] = op.arrays.map(usize::from);
    let [p, q, r, s] = op.bounds;
    match op.kind {
        0 => vec![(x, p, Some(q), false, "x")],
        1 => vec![(x, p, Some(q), true, "x")],
        2 => vec![(x, p, Some(q), false, "x"), (x, p, Some(q), true, "x")],
        3 => vec![(x, p, Some(q), false, "x"), (y, r, Some(s), true, "y")],
        4 => vec![(x, p, Some(q), false, "x"), (x, r, Some(s), false, "x")],
        _ => vec![(x, p, Some(q + 1), false, "x"), (y, p, None, true, "y")],
    }
}

/// The argument words `op`'s spawn records: array slots, then scalars, in parameter order.
fn words(op: &Op) -> Vec<u64> {
    let [x, y] = op.arrays.map(u64::from);
    let [p, q, r, s] = op.bounds.map(|b| b as u64);
    match op.kind {
        0..=2 => vec![x, p, q],
        3 => vec![x, y, p, q, r, s],
        4 => vec![x, p, q, r, s],
        _ => vec![x, y, p, q],
    }
}

/// The first error of an invalid region.
#[derive(Debug)]
enum Bad {
    /// A declared range that is reversed or past its array's end.
    Range {
        task: u32,
        param: &'static str,
        range: Range<usize>,
        reversed: bool,
    },
    /// One array (by index) passed to both parameters of `copy` or `tail`.
    Aliased { task: u32, array: usize },
}

/// What inspection must give: the per-task accesses of a valid region, or the first error.
fn expected(lens: &[usize; 3], ops: &[Op]) -> Result<Vec<oracle::TaskAccesses>, Bad> {
    let mut tasks = Vec::new();
    for (t, op) in ops.iter().enumerate() {
        let task = t as u32;
        if matches!(op.kind, 3 | 5) && op.arrays[0] == op.arrays[1] {
            let array = op.arrays[0].into();
            return Err(Bad::Aliased { task, array });
        }
        let mut accesses = Vec::new();
        for (a, start, end, write, param) in declared(op) {
            let range = start..end.unwrap_or(lens[a]);
            if range.start > range.end || range.end > lens[a] {
                let reversed = range.start > range.end;
                return Err(Bad::Range {
                    task,
                    param,
                    range,
                    reversed,
                });
            }
            let access = if write { Access::Write } else { Access::Read };
            accesses.push((a as u32, range, access));
        }
        tasks.push(accesses);
    }
    Ok(tasks)
}

fn op(max_bound: usize) -> impl Strategy<Value = Op> {
    let bound = 0..=max_bound;
    (
        0..KINDS.len() as u8,
        [0u8..3, 0u8..3],
        [bound.clone(), bound.clone(), bound.clone(), bound],
    )
        .prop_map(|(kind, arrays, bounds)| Op {
            kind,
            arrays,
            bounds,
        })
}

/// Bounds up to 20 over arrays of 0..=24 elements, mostly of 20 or more. With probability 31/32
/// each pair of bounds is sorted and the two arrays of `copy` and `tail` differ, so that about half
/// the regions are valid and the rest fail at varied tasks.
fn region() -> impl Strategy<Value = ([usize; 3], Vec<Op>)> {
    let sorted_op = (op(20), 0u8..32).prop_map(|(mut op, coin)| {
        if coin != 0 {
            if op.arrays[0] == op.arrays[1] {
                op.arrays[1] = (op.arrays[1] + 1) % 3;
            }
            let [p, q, r, s] = op.bounds;
            op.bounds = [p.min(q), p.max(q), r.min(s), r.max(s)];
            if op.kind == 5 {
                // `lo..=last`: keep `last + 1` within reach of `lo`.
                op.bounds[1] = op.bounds[1].max(1) - 1;
            }
        }
        op
    });
    let len = || prop_oneof![1 => 0usize..20, 7 => 20usize..=24];
    (
        [len(), len(), len()],
        prop::collection::vec(sorted_op, 0..=MAX_OPS),
    )
}

fn packed(ops: &[Op]) -> [Op; MAX_OPS] {
    let mut all = [Op::default(); MAX_OPS];
    all[..ops.len()].copy_from_slice(ops);
    all
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 10_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn inspection_matches_the_reference((lens, ops) in region()) {
        let mut arrays: [Vec<u32>; 3] =
            std::array::from_fn(|a| (0..lens[a] as u32).map(|i| i * 3 + a as u32).collect());
        let before = arrays.clone();
        let [a, b, c] = &mut arrays;
        let result = random_region(a, b, c, packed(&ops), ops.len()).inspect();
        prop_assert_eq!(&arrays, &before, "inspection wrote an array");
        match (expected(&lens, &ops), result) {
            (Ok(tasks), Ok(ins)) => {
                prop_assert_eq!(ins.task_count(), ops.len());
                prop_assert_eq!(oracle::check_structure(&ins.dag), Ok(()));
                prop_assert_eq!(
                    oracle::dag_edges(&ins.dag),
                    oracle::reference_edges(&lens, &tasks)
                );
                for (t, op) in ops.iter().enumerate() {
                    let record = ins.tasks[t];
                    prop_assert_eq!(ins.kinds[record.kind as usize], KINDS[op.kind as usize]);
                    let end = ins.tasks[t + 1].args as usize;
                    prop_assert_eq!(&ins.args[record.args as usize..end], &words(op)[..]);
                }
            }
            (Err(Bad::Aliased { task: t, array }), Err(error)) => match &error {
                Error::AliasedArray {
                    task,
                    array: name,
                    first,
                    first_writable,
                    second,
                    second_writable,
                } => {
                    prop_assert_eq!((task.index, *name), (t, ["a", "b", "c"][array]));
                    prop_assert_eq!(task.kind, KINDS[ops[t as usize].kind as usize]);
                    prop_assert_eq!((*first, *first_writable), ("x", false));
                    prop_assert_eq!((*second, *second_writable), ("y", true));
                }
                other => prop_assert!(false, "unexpected error: {}", other),
            },
            (Err(Bad::Range { task: t, param, range, reversed }), Err(error)) => match &error {
                Error::ReversedRange { task, param: p, range: r, .. } => {
                    prop_assert!(reversed, "reversed, expected out of bounds: {}", error);
                    prop_assert_eq!((task.index, *p, r.clone()), (t, param, range));
                    prop_assert_eq!(task.kind, KINDS[ops[t as usize].kind as usize]);
                }
                Error::OutOfBounds { task, param: p, range: r, len, .. } => {
                    prop_assert!(!reversed, "out of bounds, expected reversed: {}", error);
                    prop_assert_eq!((task.index, *p, r.clone()), (t, param, range));
                    let array = declared(&ops[t as usize])
                        .into_iter()
                        .find(|d| d.4 == param)
                        .map(|d| d.0);
                    prop_assert_eq!(Some(*len), array.map(|a| lens[a]));
                }
                other => prop_assert!(false, "unexpected error: {}", other),
            },
            (Ok(_), Err(e)) => prop_assert!(false, "a valid region failed: {}", e),
            (Err(want), Ok(_)) => prop_assert!(false, "an invalid region passed; expected {:?}", want),
        }
    }
}
