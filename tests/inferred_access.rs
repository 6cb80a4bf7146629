//! Tasks that declare no ranges get GrCUDA's dependences, inferred from their parameter types over
//! whole arrays: a `&[T]` parameter reads its array, a `&mut [T]` parameter reads and writes it.
//!
//! Random sequences of such tasks, with random `&`/`&mut` parameter combinations over three arrays
//! (one array may fill several `&` parameters of one task, but a `&mut` parameter's array fills no
//! other: that is an inspection error, checked on its own), are checked two ways:
//!
//! 1. The DAG that inspection builds equals, edge for edge and kind for kind, what a per-array
//!    oracle of GrCUDA's rules gives: each array keeps its last writer and the readers since; a task
//!    depends on the last writer of every array it touches (RAW) and, for every array it may write,
//!    on the readers since that write (WAR); readers of the same data get no edge between them.
//!    Reachability also equals the closure of the brute-force conflict relation.
//! 2. Running the region on the CPU backend gives, bit for bit, what running the tasks one after
//!    another in spawn order gives.

use proptest::prelude::*;
use taskweave::graph::{Access, EdgeKind, oracle};
use taskweave::{Block, Error, Policy, Runtime, task, task_region};

/// The most tasks in one program.
const MAX_OPS: usize = 24;

/// One spawn: which task, which arrays fill its array parameters in order, and a salt.
#[derive(Clone, Copy, Debug, Default)]
struct Op {
    kind: u8,
    arrays: [u8; 3],
    salt: u32,
}

/// Per task kind, whether each array parameter is `&mut [u32]`, in parameter order.
const SIGNATURES: [&[bool]; 8] = [
    &[false],
    &[true],
    &[false, false],
    &[false, true],
    &[true, false],
    &[true, true],
    &[false, false, true],
    &[true, false, true],
];

// ---------------------------------------------------------------------------------------------
// Task bodies. Each one folds the salt and a digest of every `&[u32]` parameter, in order, into
// `s`; after a barrier (so that every read precedes every write) it updates each `&mut [u32]`
// parameter in order with `s ^ k`, `k` counting the writable parameters. `sequential` does
// exactly the same.

/// An order-sensitive digest of an array.
fn digest(len: usize, get: impl Fn(usize) -> u32) -> u32 {
    (0..len).fold(0x811C_9DC5, |h, i| (h ^ get(i)).wrapping_mul(0x0100_0193))
}

/// The new value of element `i` of a written array.
fn step(old: u32, s: u32, i: usize) -> u32 {
    old.wrapping_mul(31) ^ s ^ i as u32
}

/// Reads `x`; without a `&Block` parameter its body runs on every lane, which a reader allows.
#[task]
fn look(x: &[u32], salt: u32) {
    let _ = digest(x.len(), |i| x[i]) ^ salt;
}

#[task]
fn bump(b: &Block, x: &mut [u32], salt: u32) {
    b.par_for(0..x.len(), |i| x[i] = step(x[i], salt, i));
}

#[task()]
fn look2(b: &Block, x: &[u32], y: &[u32], salt: u32) {
    let _ = (
        b,
        digest(x.len(), |i| x[i]) ^ digest(y.len(), |i| y[i]) ^ salt,
    );
}

#[task]
fn mix(b: &Block, x: &[u32], y: &mut [u32], salt: u32) {
    let s = salt.rotate_left(5) ^ digest(x.len(), |i| x[i]);
    b.sync();
    b.par_for(0..y.len(), |i| y[i] = step(y[i], s, i));
}

#[task]
fn mix_rev(b: &Block, y: &mut [u32], x: &[u32], salt: u32) {
    let s = salt.rotate_left(5) ^ digest(x.len(), |i| x[i]);
    b.sync();
    b.par_for(0..y.len(), |i| y[i] = step(y[i], s, i));
}

#[task]
fn bump2(b: &Block, x: &mut [u32], y: &mut [u32], salt: u32) {
    b.par_for(0..x.len(), |i| x[i] = step(x[i], salt, i));
    b.par_for(0..y.len(), |i| y[i] = step(y[i], salt ^ 1, i));
}

#[task]
fn gather(b: &Block, x: &[u32], y: &[u32], z: &mut [u32], salt: u32) {
    let s = (salt.rotate_left(5) ^ digest(x.len(), |i| x[i])).rotate_left(5)
        ^ digest(y.len(), |i| y[i]);
    b.sync();
    b.par_for(0..z.len(), |i| z[i] = step(z[i], s, i));
}

#[task]
fn scatter(b: &Block, x: &mut [u32], y: &[u32], z: &mut [u32], salt: u32) {
    let s = salt.rotate_left(5) ^ digest(y.len(), |i| y[i]);
    b.sync();
    b.par_for(0..x.len(), |i| x[i] = step(x[i], s, i));
    b.par_for(0..z.len(), |i| z[i] = step(z[i], s ^ 1, i));
}

task_region! {
    /// Spawns `ops[..n]` over the arrays `a`, `b` and `c`.
    fn program(a: &mut [u32], b: &mut [u32], c: &mut [u32], ops: [Op; MAX_OPS], n: usize) {
        let arrays = [a, b, c];
        for op in &ops[..n] {
            let [x, y, z] = op.arrays.map(|k| arrays[k as usize]);
            let salt = op.salt;
            match op.kind {
                0 => spawn!(look(x, salt)),
                1 => spawn!(bump(x, salt)),
                2 => spawn!(look2(x, y, salt)),
                3 => spawn!(mix(x, y, salt)),
                4 => spawn!(mix_rev(x, y, salt)),
                5 => spawn!(bump2(x, y, salt)),
                6 => spawn!(gather(x, y, z, salt)),
                _ => spawn!(scatter(x, y, z, salt)),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Oracles.

/// `(array, writable)` for each array parameter of `op`.
fn params(op: &Op) -> impl Iterator<Item = (usize, bool)> + '_ {
    SIGNATURES[op.kind as usize]
        .iter()
        .zip(op.arrays)
        .map(|(&w, a)| (a as usize, w))
}

/// GrCUDA's rules over whole arrays, with per-array state: the last writer and the readers since.
/// An empty array holds no data, so it orders nothing. Edges come sorted by parent, then child.
fn grcuda_edges(lens: &[usize; 3], ops: &[Op]) -> Vec<(u32, u32, EdgeKind)> {
    let mut writer: [Option<u32>; 3] = [None; 3];
    let mut readers: [Vec<u32>; 3] = Default::default();
    let mut edges = Vec::new();
    for (t, op) in ops.iter().enumerate() {
        let t = t as u32;
        let touched: Vec<usize> = params(op)
            .map(|(a, _)| a)
            .filter(|&a| lens[a] > 0)
            .collect();
        let written: Vec<usize> = params(op)
            .filter(|&(a, w)| w && lens[a] > 0)
            .map(|(a, _)| a)
            .collect();
        let mut parents: Vec<(u32, EdgeKind)> = Vec::new();
        for &a in &touched {
            // Every inferred access reads: after a write, that is a true dependence.
            parents.extend(writer[a].map(|w| (w, EdgeKind::Raw)));
        }
        for &a in &written {
            parents.extend(readers[a].iter().map(|&r| (r, EdgeKind::War)));
        }
        parents.sort_by_key(|&(p, kind)| (p, std::cmp::Reverse(kind.priority())));
        parents.dedup_by_key(|&mut (p, _)| p);
        edges.extend(parents.into_iter().map(|(p, kind)| (p, t, kind)));
        for &a in &touched {
            if written.contains(&a) {
                writer[a] = Some(t);
                readers[a].clear();
            } else if !readers[a].contains(&t) {
                readers[a].push(t);
            }
        }
    }
    edges.sort_by_key(|&(p, c, _)| (p, c));
    edges
}

/// The program as the brute-force oracle's explicit accesses: a whole-array read per parameter,
/// plus a whole-array write per `&mut` one.
fn accesses(lens: &[usize; 3], ops: &[Op]) -> Vec<oracle::TaskAccesses> {
    ops.iter()
        .map(|op| {
            params(op)
                .flat_map(|(a, w)| {
                    let read = (a as u32, 0..lens[a], Access::Read);
                    let write = (a as u32, 0..lens[a], Access::Write);
                    std::iter::once(read).chain(w.then_some(write))
                })
                .collect()
        })
        .collect()
}

/// The tasks run one after another, as the bodies above do.
fn sequential(arrays: &mut [Vec<u32>; 3], ops: &[Op]) {
    for op in ops {
        let mut s = op.salt;
        for (a, w) in params(op) {
            if !w {
                s = s.rotate_left(5) ^ digest(arrays[a].len(), |i| arrays[a][i]);
            }
        }
        let kind = op.kind as usize;
        // `look` and `look2` fold nothing into a write; `bump` and `bump2` only the salt.
        for (k, (a, _)) in params(op).filter(|&(_, w)| w).enumerate() {
            let s = if kind == 1 || kind == 5 { op.salt } else { s };
            let s = s ^ k as u32;
            for (i, v) in arrays[a].iter_mut().enumerate() {
                *v = step(*v, s, i);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Strategies.

/// Whether `op` passes the array of one of its `&mut [u32]` parameters to another parameter too,
/// which inspection refuses.
fn aliases(op: &Op) -> bool {
    let signature = SIGNATURES[op.kind as usize];
    let arrays = &op.arrays[..signature.len()];
    signature.iter().enumerate().any(|(i, &writable)| {
        writable && (0..arrays.len()).any(|j| j != i && arrays[j] == arrays[i])
    })
}

/// `op` with each `&mut [u32]` parameter moved to an array no other parameter has (there is
/// one: a task has at most three parameters, over three arrays). Moving a later one keeps an
/// earlier one's array its own.
fn unaliased(mut op: Op) -> Op {
    let n = SIGNATURES[op.kind as usize].len();
    for (i, &writable) in SIGNATURES[op.kind as usize].iter().enumerate() {
        while writable && (0..n).any(|j| j != i && op.arrays[j] == op.arrays[i]) {
            op.arrays[i] = (op.arrays[i] + 1) % 3;
        }
    }
    op
}

fn op() -> impl Strategy<Value = Op> {
    (
        0..SIGNATURES.len() as u8,
        [0u8..3, 0u8..3, 0u8..3],
        any::<u32>(),
    )
        .prop_map(|(kind, arrays, salt)| unaliased(Op { kind, arrays, salt }))
}

/// Array lengths (empty arrays included) and a program of up to [`MAX_OPS`] tasks.
fn program_strategy() -> impl Strategy<Value = ([usize; 3], Vec<Op>)> {
    (
        [0usize..10, 0usize..10, 0usize..10],
        prop::collection::vec(op(), 0..=MAX_OPS),
    )
}

fn packed(ops: &[Op]) -> [Op; MAX_OPS] {
    let mut all = [Op::default(); MAX_OPS];
    all[..ops.len()].copy_from_slice(ops);
    all
}

fn initial(lens: &[usize; 3], seed: u32) -> [Vec<u32>; 3] {
    std::array::from_fn(|a| {
        (0..lens[a] as u32)
            .map(|i| (i ^ seed).wrapping_mul(0x9E37_79B9) ^ a as u32)
            .collect()
    })
}

// ---------------------------------------------------------------------------------------------
// The properties.

proptest! {
    #![proptest_config(ProptestConfig {
        // Miri (scripts/miri.sh) checks the unsafe code on a few cases; the oracle wants thousands.
        cases: if cfg!(miri) { 12 } else { 4000 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// The inferred DAG is exactly GrCUDA's.
    #[test]
    fn inferred_dag_follows_grcuda((lens, ops) in program_strategy()) {
        let [mut a, mut b, mut c] = initial(&lens, 0);
        let before = (a.clone(), b.clone(), c.clone());
        let ins = program(&mut a, &mut b, &mut c, packed(&ops), ops.len())
            .inspect()
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ins.task_count(), ops.len());
        let got: Vec<(u32, u32, EdgeKind)> = oracle::dag_edges(&ins.dag)
            .into_iter()
            .map(|((p, c), kind)| (p, c, kind))
            .collect();
        prop_assert_eq!(got, grcuda_edges(&lens, &ops));
        let explicit = accesses(&lens, &ops);
        prop_assert_eq!(oracle::check_reachability(&ins.dag, &explicit), Ok(()));
        prop_assert_eq!(oracle::check_structure(&ins.dag), Ok(()));
        // Inspection runs no task.
        prop_assert_eq!((a, b, c), before);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 300 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Running the inferred DAG gives what running the tasks in spawn order gives.
    #[test]
    fn inferred_runs_match_the_sequential_run(
        (lens, ops) in program_strategy(),
        seed in any::<u32>(),
        policy in prop::sample::select(Policy::ALL.to_vec()),
        workers in 1u32..=4,
        lanes in prop::sample::select(vec![1u32, 3]),
    ) {
        let mut want = initial(&lens, seed);
        sequential(&mut want, &ops);
        let [mut a, mut b, mut c] = initial(&lens, seed);
        let report = program(&mut a, &mut b, &mut c, packed(&ops), ops.len())
            .policy(policy)
            .cpu_lanes(lanes)
            .run(&Runtime::cpu_with(workers))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(report.tasks, ops.len());
        prop_assert_eq!([a, b, c], want);
    }
}

/// Every parameter combination that passes a `&mut [u32]` parameter's array to another parameter
/// is refused at inspection, naming both parameters; every other one is accepted.
#[test]
fn an_array_of_a_mut_parameter_reaches_no_other_parameter() {
    let first = Op {
        kind: 1,
        arrays: [2, 0, 0],
        salt: 0,
    };
    for kind in 0..SIGNATURES.len() as u8 {
        for k in 0..27u8 {
            let op = Op {
                kind,
                arrays: [k % 3, k / 3 % 3, k / 9],
                salt: 1,
            };
            let (mut a, mut b, mut c) = (vec![1u32; 4], vec![2u32; 4], vec![3u32; 4]);
            let result = program(&mut a, &mut b, &mut c, packed(&[first, op]), 2).inspect();
            if !aliases(&op) {
                assert!(result.is_ok(), "{op:?}: {:?}", result.err());
                assert_eq!(unaliased(op).arrays, op.arrays);
                continue;
            }
            let err = result.expect_err("an aliased `&mut` parameter");
            let Error::AliasedArray {
                task,
                first_writable,
                second_writable,
                ..
            } = &err
            else {
                panic!("{op:?}: expected AliasedArray, got {err:?}");
            };
            assert_eq!(task.index, 1, "{op:?}");
            assert!(*first_writable || *second_writable, "{op:?}");
            let fixed = unaliased(op);
            assert!(!aliases(&fixed), "{op:?} -> {fixed:?}");
        }
    }
}

/// Two readers of one array get no edge; the writer that follows waits for both (a WAR edge from
/// each), and a reader after that writer gets a RAW edge from it alone.
#[test]
fn readers_run_concurrently_and_writers_wait_for_them() {
    let ops = [
        Op {
            kind: 0,
            arrays: [0, 0, 0],
            salt: 1,
        },
        Op {
            kind: 2,
            arrays: [0, 1, 0],
            salt: 2,
        },
        Op {
            kind: 3,
            arrays: [1, 0, 0],
            salt: 3,
        },
        Op {
            kind: 0,
            arrays: [0, 0, 0],
            salt: 4,
        },
    ];
    let (mut a, mut b, mut c) = (vec![1u32; 4], vec![2u32; 4], vec![3u32; 4]);
    let ins = program(&mut a, &mut b, &mut c, packed(&ops), ops.len())
        .inspect()
        .expect("inspection succeeds");
    assert_eq!(
        oracle::dag_edges(&ins.dag).into_iter().collect::<Vec<_>>(),
        [
            ((0, 2), EdgeKind::War),
            ((1, 2), EdgeKind::War),
            ((2, 3), EdgeKind::Raw),
        ]
    );
    assert_eq!(ins.dag.ready, [0, 1]);
}
