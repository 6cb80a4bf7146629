//! Behaviour of the CPU backend: inspection errors, checked mode, panicking and stalled tasks, and
//! the figures a report gives.
//!
//! This crate has no `build.rs`, so its regions have no PTX; `Runtime::cpu()` needs none.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use taskweave::{Block, Error, Policy, Runtime, task, task_region};

/// The line of this file holding `marker` (1-based), for checking spawn locations.
fn line_of(marker: &str) -> u32 {
    let source = include_str!("cpu_backend.rs");
    let mut lines = source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(marker) && !l.contains("line_of("));
    let (index, _) = lines.next().expect("the marker is in this file");
    assert!(
        lines.next().is_none(),
        "the marker `{marker}` is not unique"
    );
    index as u32 + 1
}

fn iota(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

// ---------------------------------------------------------------------------------------------
// Tasks.

/// `v[i] += 1` over `lo..hi`.
#[task(reads = v[lo..hi], writes = v[lo..hi])]
fn touch(b: &Block, v: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| v[i] += 1);
}

/// `v[lo] = v[at] + 1`: reads `at`, which checked mode tests against `lo..hi`.
#[task(reads = v[lo..hi], writes = v[lo..hi])]
fn stray(v: &mut [u32], lo: usize, hi: usize, at: usize) {
    let _ = hi;
    v[lo] = v[at] + 1;
}

/// Writes `v[4]` (declared) and then `v[1]`, which it declared only under `reads`.
#[task(reads = v[0..4], writes = v[4..5])]
fn sneaky(v: &mut [u32]) {
    v[4] = v[0];
    v[1] = 9;
}

/// Sets `v[i] = 1`, or panics when `code` is not zero.
#[task(writes = v[i..i + 1])]
fn explode(b: &Block, v: &mut [u32], i: usize, code: u32) {
    if code != 0 {
        panic!("exploded with code {code}");
    }
    if b.thread() == 0 {
        v[i] = 1;
    }
    b.sync();
}

/// Released by [`spin`]'s test.
static RELEASE: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

/// Spins until [`RELEASE`]`[which]` is set, then sets `v[0]`.
#[task(writes = v[0..1])]
fn spin(v: &mut [u32], which: usize) {
    while !RELEASE[which].load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(1));
    }
    v[0] = 1;
}

/// `a[i] = v + i` over `lo..hi`.
#[task(writes = a[lo..hi])]
fn fill(b: &Block, a: &mut [u32], lo: usize, hi: usize, v: u32) {
    b.par_for(lo..hi, |i| a[i] = v + i as u32);
}

/// `dst[i] = src[i]` over `lo..hi`.
#[task(reads = src[lo..hi], writes = dst[lo..hi])]
fn copy(b: &Block, src: &[u32], dst: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| dst[i] = src[i]);
}

/// `out[0] = Σ v`.
#[task(reads = v[..], writes = out[0..1])]
fn sum(b: &Block, v: &[u32], out: &mut [u32]) {
    if b.thread() == 0 {
        out[0] = (0..v.len()).map(|i| v[i]).sum();
    }
    b.sync();
}

/// Swaps `x[i]` and `y[i]` over `lo..hi`: two `&mut u32` at once, which would be one element if
/// `x` and `y` were one array.
#[task(reads = [x[lo..hi], y[lo..hi]], writes = [x[lo..hi], y[lo..hi]])]
fn swap(b: &Block, x: &mut [u32], y: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| std::mem::swap(&mut x[i], &mut y[i]));
}

/// `out[i] = x[i] + y[i]`.
#[task]
fn add(b: &Block, x: &[u32], y: &[u32], out: &mut [u32]) {
    b.par_for(0..out.len(), |i| out[i] = x[i] + y[i]);
}

/// `v[i] *= k[0]` over `lo..hi`.
#[task(reads = [k[..], v[lo..hi]], writes = v[lo..hi])]
fn scale(b: &Block, k: &[u32], v: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| v[i] *= k[0]);
}

// ---------------------------------------------------------------------------------------------
// Regions.

task_region! {
    /// One valid task, then `touch(lo..hi)`.
    fn touch_range(x: &mut [u32], lo: usize, hi: usize) {
        spawn!(touch(x, 0, 1));
        spawn!(touch(x, lo, hi)); // SPAWN-TOUCH-RANGE
    }
}

task_region! {
    /// `touch` on each tile of 4, and before tile `cut` (if any; after the last for the tile
    /// count) on a range across two tiles.
    fn touch_tiles(x: &mut [u32], cut: Option<usize>) {
        let tiles = x.len() / 4;
        for t in 0..=tiles {
            if cut == Some(t) {
                spawn!(touch(x, 2, 6)); // SPAWN-OFF-TILES
            }
            if t < tiles {
                spawn!(touch(x, 4 * t, 4 * t + 4));
            }
        }
    }
}

task_region! {
    /// Spawns nothing.
    fn nothing(x: &mut [u32], skip: bool) {
        if !skip {
            spawn!(touch(x, 0, 1));
        }
    }
}

task_region! {
    fn stray_region(x: &mut [u32], at: usize) {
        spawn!(touch(x, 0, 4));
        spawn!(stray(x, 2, 4, at));
    }
}

task_region! {
    fn sneaky_region(x: &mut [u32]) {
        spawn!(touch(x, 0, 8));
        spawn!(sneaky(x));
    }
}

task_region! {
    fn explode_region(x: &mut [u32], code: u32) {
        spawn!(explode(x, 0, 0));
        spawn!(explode(x, 1, code));
        spawn!(explode(x, 2, 0));
    }
}

task_region! {
    fn stall(x: &mut [u32], which: usize) {
        spawn!(touch(x, 1, 2));
        spawn!(spin(x, which));
        spawn!(touch(x, 0, 2));
    }
}

task_region! {
    /// One valid task, then `x` as both `&mut` parameters of `swap`.
    fn swap_with_itself(x: &mut [u32]) {
        spawn!(touch(x, 0, 1));
        spawn!(swap(x, x, 0, 2)); // SPAWN-SWAP-ITSELF
    }
}

task_region! {
    /// Copies `a` into `b`, or `a` into itself when `same`: an alias no macro can see.
    fn copy_maybe_onto_itself(a: &mut [u32], b: &mut [u32], same: bool) {
        let dst = if same { a } else { b };
        spawn!(copy(a, dst, 0, a.len()));
    }
}

task_region! {
    /// `out = 2x`, with `x` as both `&` parameters of `add`.
    fn double(x: &[u32], out: &mut [u32]) {
        spawn!(add(x, x, out));
    }
}

task_region! {
    /// Six tasks whose edges, by hand (parent -> child, kind):
    /// 0->1 raw, 0->2 raw, 1->3 raw, 2->3 raw, 0->4 waw, 1->4 war, 2->4 war,
    /// 1->5 raw, 2->5 raw, 3->5 war. Longest chain: 0 -> 1 -> 3 -> 5.
    fn small(k: &[u32], a: &mut [u32], b: &mut [u32], c: &mut [u32], v: u32, w: u32) {
        spawn!(fill(a, 0, 8, v));
        spawn!(copy(a, b, 0, 4));
        spawn!(copy(a, b, 4, 8));
        spawn!(sum(b, c));
        spawn!(fill(a, 0, 8, w));
        spawn!(scale(k, b, 2, 6));
    }
}

// ---------------------------------------------------------------------------------------------
// Inspection errors.

#[test]
fn range_past_the_end_is_out_of_bounds() {
    let mut x = iota(10);
    let err = touch_range(&mut x, 2, 20)
        .run(&Runtime::cpu())
        .expect_err("the range ends past the array");
    let Error::OutOfBounds {
        task,
        array,
        param,
        range,
        len,
    } = &err
    else {
        panic!("expected OutOfBounds, got {err:?}");
    };
    assert_eq!(task.index, 1);
    assert_eq!(task.kind, "touch");
    assert_eq!(task.args, "x, 2, 20");
    assert_eq!(*array, "x");
    assert_eq!(*param, "v");
    assert_eq!(*range, 2..20);
    assert_eq!(*len, 10);
    assert!(
        task.location.file().ends_with("cpu_backend.rs"),
        "{}",
        task.location
    );
    assert_eq!(task.location.line(), line_of("// SPAWN-TOUCH-RANGE"));
    let text = err.to_string();
    assert!(
        text.contains("out of bounds") && text.contains("`x`") && text.contains("10 elements"),
        "{text}"
    );
    // Nothing ran: not even the valid first task.
    assert_eq!(x, iota(10));
}

#[test]
fn reversed_range_is_an_error() {
    let mut x = iota(10);
    let err = touch_range(&mut x, 5, 3)
        .run(&Runtime::cpu())
        .expect_err("the range is reversed");
    let Error::ReversedRange {
        task,
        array,
        param,
        range,
    } = &err
    else {
        panic!("expected ReversedRange, got {err:?}");
    };
    assert_eq!((task.index, task.kind), (1, "touch"));
    assert!(task.location.file().ends_with("cpu_backend.rs"));
    assert_eq!(task.location.line(), line_of("// SPAWN-TOUCH-RANGE"));
    assert_eq!((*array, *param), ("x", "v"));
    #[allow(clippy::reversed_empty_ranges)]
    let expected = 5..3;
    assert_eq!(*range, expected);
    assert_eq!(x, iota(10));
}

#[test]
fn inspection_errors_are_reported_by_inspect_too() {
    let mut x = iota(4);
    let err = touch_range(&mut x, 0, 5).inspect().unwrap_err();
    assert!(matches!(err, Error::OutOfBounds { len: 4, .. }), "{err:?}");
}

#[test]
fn an_inspection_names_the_range_that_took_an_array_off_the_tile_path() {
    let mut x = iota(16);
    let tiled = touch_tiles(&mut x, None).inspect().unwrap();
    assert!(tiled.edges_as_recorded());
    let cut = touch_tiles(&mut x, Some(4)).inspect().unwrap();
    assert!(!cut.edges_as_recorded());
    let [off] = &cut.off_tile_path[..] else {
        panic!("one array off the path: {:?}", cut.off_tile_path);
    };
    assert_eq!((off.array, off.task, off.kind), ("x", 4, "touch"));
    assert_eq!(off.location.line(), line_of("// SPAWN-OFF-TILES"));
    assert_eq!(
        (off.range.clone(), off.writes, off.tiles),
        (2..6, true, Some((4, 0)))
    );
    let text = off.to_string();
    let expected = format!(
        "array `x`: task 4 (`touch`, spawned at {}) writes 2..6, which is not one whole tile \
         (tiles of 4 from element 0)",
        off.location
    );
    assert_eq!(text, expected);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "three regions of 200 tasks to waiting workers, over five minutes under Miri; \
              `stream::`'s unit tests run the streamed tables' unsafe code there"
)]
fn a_streamed_call_reports_the_tasks_fed_while_its_body_recorded() {
    let runtime = Runtime::cpu();
    let want: Vec<u32> = (0..800)
        .map(|i| i + 2 - u32::from(!(2..6).contains(&i)))
        .collect();
    let mut fed = Vec::new();
    // Whole tiles throughout; off the tile path half-way; off it from the first task.
    for cut in [None, Some(100), Some(0)] {
        let mut x = iota(800);
        let report = touch_tiles(&mut x, cut).stream(true).run(&runtime).unwrap();
        assert!(report.streamed);
        let tasks = 200 + usize::from(cut.is_some());
        assert_eq!(report.tasks, tasks);
        let expected = match cut {
            None => iota(800).into_iter().map(|v| v + 1).collect::<Vec<_>>(),
            Some(_) => want.clone(),
        };
        assert_eq!(x, expected, "{cut:?}");
        assert!(report.fed_while_recording < tasks, "{cut:?}");
        let text = report.to_string();
        let said = format!(
            "{} of {tasks} tasks fed while the body recorded",
            report.fed_while_recording
        );
        assert!(text.contains(&said), "{text}");
        fed.push(report.fed_while_recording);
    }
    // Batches go while the tile path holds: most of the region, up to the cut, then nothing.
    assert!(fed[0] >= 128, "{fed:?}");
    assert!(fed[1] <= 100 && fed[1] < fed[0], "{fed:?}");
    assert_eq!(fed[2], 0, "{fed:?}");
}

#[test]
fn one_array_as_two_mut_parameters_is_an_error() {
    let mut x = iota(4);
    let err = swap_with_itself(&mut x)
        .run(&Runtime::cpu())
        .expect_err("`swap` gets `x` twice");
    let Error::AliasedArray {
        task,
        array,
        first,
        first_writable,
        second,
        second_writable,
    } = &err
    else {
        panic!("expected AliasedArray, got {err:?}");
    };
    assert_eq!((task.index, task.kind), (1, "swap"));
    assert_eq!(task.args, "x, x, 0, 2");
    assert_eq!(task.location.line(), line_of("// SPAWN-SWAP-ITSELF"));
    assert_eq!(*array, "x");
    assert_eq!((*first, *first_writable), ("x", true));
    assert_eq!((*second, *second_writable), ("y", true));
    let text = err.to_string();
    assert!(
        text.contains("array `x` is passed to both `x` (`&mut`) and `y` (`&mut`)"),
        "{text}"
    );
    // Nothing ran: not even the valid first task.
    assert_eq!(x, iota(4));
}

#[test]
fn one_array_as_a_shared_and_a_mut_parameter_is_an_error() {
    let (mut a, mut b) = (iota(4), vec![0; 4]);
    let err = copy_maybe_onto_itself(&mut a, &mut b, true)
        .inspect()
        .expect_err("`copy` gets `a` twice");
    assert!(
        matches!(
            err,
            Error::AliasedArray {
                array: "a",
                first: "src",
                first_writable: false,
                second: "dst",
                second_writable: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("array `a` is passed to both `src` (`&`) and `dst` (`&mut`)"),
        "{err}"
    );
    // Two arrays are fine.
    copy_maybe_onto_itself(&mut a, &mut b, false)
        .run(&Runtime::cpu())
        .expect("`copy` gets two arrays");
    assert_eq!(b, iota(4));
}

#[test]
fn one_array_as_two_shared_parameters_is_allowed() {
    let (x, mut out) = (iota(8), vec![0; 8]);
    double(&x, &mut out)
        .run(&Runtime::cpu())
        .expect("two `&` parameters may share an array");
    assert_eq!(out, iota(8).iter().map(|v| 2 * v).collect::<Vec<_>>());
}

#[test]
fn empty_region_runs_with_no_tasks() {
    let mut x = iota(4);
    let report = nothing(&mut x, true)
        .run(&Runtime::cpu())
        .expect("an empty region runs");
    assert_eq!(
        (report.tasks, report.edges, report.critical_path),
        (0, 0, 0)
    );
    assert_eq!(x, iota(4));
    let report = nothing(&mut x, false).run(&Runtime::cpu()).unwrap();
    assert_eq!(report.tasks, 1);
    assert_eq!(x, [1, 1, 2, 3]);
}

// ---------------------------------------------------------------------------------------------
// Checked mode.

#[test]
fn checked_mode_catches_an_undeclared_read() {
    for lanes in [1, 3] {
        let mut x = iota(10);
        let err = stray_region(&mut x, 7)
            .cpu_lanes(lanes)
            .run(&Runtime::cpu_with(2))
            .expect_err("index 7 is outside the declared 2..4");
        let Error::TaskPanicked {
            task,
            message,
            restored,
        } = &err
        else {
            panic!("expected TaskPanicked, got {err:?}");
        };
        assert_eq!((task.index, task.kind), (1, "stray"));
        assert!(
            message.contains("index 7") && message.contains("array `v`"),
            "{message}"
        );
        assert!(message.contains("stray"), "{message}");
        assert!(*restored);
        // The first task ran and wrote `x[0..4]`; the region put it back.
        assert_eq!(x, iota(10), "lanes {lanes}");
    }
}

#[test]
fn checked_mode_catches_a_read_past_the_array() {
    let mut x = iota(10);
    let err = stray_region(&mut x, 12).run(&Runtime::cpu()).unwrap_err();
    let Error::TaskPanicked {
        task,
        message,
        restored: true,
    } = &err
    else {
        panic!("expected TaskPanicked, restored, got {err:?}");
    };
    assert_eq!(task.kind, "stray");
    assert!(message.contains("index 12"), "{message}");
    assert_eq!(x, iota(10));
}

#[test]
fn unchecked_mode_allows_an_undeclared_in_bounds_read() {
    let mut x = iota(10);
    let report = stray_region(&mut x, 7)
        .checked(false)
        .run(&Runtime::cpu())
        .expect("unchecked mode tests no index");
    assert_eq!(report.tasks, 2);
    assert_eq!(x, [1, 2, 8, 4, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn checked_mode_catches_a_write_declared_only_as_read() {
    let mut x = iota(8);
    let err = sneaky_region(&mut x)
        .run(&Runtime::cpu())
        .expect_err("v[1] is declared only under reads");
    let Error::TaskPanicked {
        task,
        message,
        restored,
    } = &err
    else {
        panic!("expected TaskPanicked, got {err:?}");
    };
    assert_eq!((task.index, task.kind), (1, "sneaky"));
    assert!(
        message.contains("write") && message.contains("index 1") && message.contains("array `v`"),
        "{message}"
    );
    assert!(*restored);
    assert_eq!(x, iota(8));
}

// ---------------------------------------------------------------------------------------------
// Panics and stalls.

#[test]
fn a_panicking_task_fails_the_region_and_the_runtime_goes_on() {
    let runtime = Runtime::cpu_with(2);
    for lanes in [1, 3] {
        let mut x = vec![0u32; 3];
        let err = explode_region(&mut x, 42)
            .cpu_lanes(lanes)
            .run(&runtime)
            .expect_err("task 1 panics");
        let Error::TaskPanicked {
            task,
            message,
            restored,
        } = &err
        else {
            panic!("expected TaskPanicked, got {err:?}");
        };
        assert_eq!((task.index, task.kind), (1, "explode"));
        assert_eq!(task.args, "x, 1, 42");
        assert_eq!(message, "exploded with code 42");
        assert!(*restored);
        assert_eq!(x, [0, 0, 0], "lanes {lanes}");
        assert!(err.to_string().contains("exploded with code 42"));

        // The same runtime runs the next region.
        let report = explode_region(&mut x, 0)
            .cpu_lanes(lanes)
            .run(&runtime)
            .expect("no task panics");
        assert_eq!(report.tasks, 3);
        assert_eq!(x, [1, 1, 1]);
    }
}

/// Copies `v[0]` into `w[i]`.
#[task(reads = v[0..1], writes = w[i..i + 1])]
fn follow(b: &Block, v: &[u32], w: &mut [u32], i: usize) {
    if b.thread() == 0 {
        w[i] = v[0];
    }
}

task_region! {
    /// Task 0 panics when `code` is not zero; eight tasks read what it writes.
    fn explode_under_readers(x: &mut [u32], y: &mut [u32], code: u32) {
        spawn!(explode(x, 0, code));
        for i in 0..y.len() {
            spawn!(follow(x, y, i));
        }
    }
}

/// Under the static policy the readers sit in the lists of all four workers, three of them waiting
/// on the counter of the task that panics: the region still ends with that task named and the
/// arrays restored, and the runtime runs the region again. (On the CPU the panicking task's block
/// still releases its children, so the waiters are not left to the abort flag alone; the same
/// check on the GPU is `examples/src/faults.rs`'s "a task panics under the static policy".)
#[test]
fn a_panic_under_the_static_policy_names_the_task_and_restores_the_arrays() {
    let runtime = Runtime::cpu_with(4);
    let (mut x, mut y) = (vec![0u32; 1], vec![0u32; 8]);
    let err = explode_under_readers(&mut x, &mut y, 7)
        .policy(Policy::Static)
        .watchdog(Duration::from_secs(30))
        .run(&runtime)
        .expect_err("task 0 panics");
    let Error::TaskPanicked { task, .. } = &err else {
        panic!("expected TaskPanicked, got {err:?}");
    };
    assert_eq!((task.index, task.kind), (0, "explode"));
    assert_eq!((x.as_slice(), y.as_slice()), (&[0][..], &[0; 8][..]));

    let report = explode_under_readers(&mut x, &mut y, 0)
        .policy(Policy::Static)
        .run(&runtime)
        .expect("no task panics");
    assert_eq!(report.tasks, 9);
    assert_eq!((x.as_slice(), y.as_slice()), (&[1][..], &[1; 8][..]));
}

/// Runs `stall` under `policy` (the default: `None`) with the watchdog at 200 ms, releasing its
/// spinning task (through `RELEASE[which]`, each test its own) after a second, and checks the
/// stall's error: the spinning task is named, and only it, since the worker that finished task 0
/// cleared its watchdog slot when it went idle (under the static policy: when it waited for its
/// next task's parents, or left).
fn check_stall_report(policy: Option<Policy>, which: usize) {
    let mut x = vec![0u32; 2];
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        RELEASE[which].store(true, Ordering::Release);
    });
    let start = Instant::now();
    let mut region = stall(&mut x, which).watchdog(Duration::from_millis(200));
    if let Some(policy) = policy {
        region = region.policy(policy);
    }
    let result = region.run(&Runtime::cpu_with(2));
    releaser.join().unwrap();
    let err = result.expect_err("no task completes for a second");
    let Error::Stalled {
        region,
        waited,
        unfinished,
        tasks,
        first,
    } = &err
    else {
        panic!("expected Stalled, got {err:?}");
    };
    assert_eq!(*region, "stall");
    assert_eq!(*tasks, 3);
    assert!(*waited >= Duration::from_millis(200), "{waited:?}");
    assert!(*waited < Duration::from_millis(900), "{waited:?}");
    assert!(*unfinished >= 1, "{unfinished}");
    assert_eq!(
        first.iter().map(|t| (t.kind, t.index)).collect::<Vec<_>>(),
        [("spin", 1)],
        "the running task is named, and only it: {first:?}"
    );
    assert!(start.elapsed() >= Duration::from_millis(900));
    assert_eq!(x, [0, 0]);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "times a stall against the clock, which runs at Miri's interpreted speed"
)]
fn watchdog_reports_a_stalled_task() {
    check_stall_report(None, 0);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "times a stall against the clock, which runs at Miri's interpreted speed"
)]
fn watchdog_reports_a_stalled_task_under_the_static_policy() {
    check_stall_report(Some(Policy::Static), 1);
}

// ---------------------------------------------------------------------------------------------
// Reports and the DAG.

#[test]
fn report_counts_tasks_edges_and_critical_path() {
    let k = [3u32, 0, 0, 0];
    let (mut a, mut b, mut c) = (vec![0u32; 8], vec![0u32; 8], vec![0u32; 1]);
    let report = small(&k, &mut a, &mut b, &mut c, 10, 100)
        .run(&Runtime::cpu_with(2))
        .expect("the region runs");
    assert_eq!(report.region, "small");
    assert_eq!(report.backend, taskweave::Backend::Cpu);
    assert_eq!(report.backend.to_string(), "cpu");
    assert_eq!(report.workers, 2);
    assert_eq!(report.tasks, 6);
    assert_eq!(report.edges, 10);
    assert_eq!(report.critical_path, 4);
    assert_eq!(report.worker_stats.iter().map(|s| s.tasks).sum::<u32>(), 6);

    assert_eq!(a, (0..8).map(|i| 100 + i).collect::<Vec<u32>>());
    let copied: Vec<u32> = (0..8).map(|i| 10 + i).collect();
    assert_eq!(c, [copied.iter().sum::<u32>()]);
    let scaled: Vec<u32> = copied
        .iter()
        .enumerate()
        .map(|(i, v)| if (2..6).contains(&i) { v * 3 } else { *v })
        .collect();
    assert_eq!(b, scaled);
}

#[test]
fn inspect_gives_the_dag() {
    let k = [3u32, 0, 0, 0];
    let (mut a, mut b, mut c) = (vec![0u32; 8], vec![0u32; 8], vec![0u32; 1]);
    let inspection = small(&k, &mut a, &mut b, &mut c, 10, 100)
        .inspect()
        .expect("inspection succeeds");
    assert_eq!(inspection.region, "small");
    assert_eq!(inspection.task_count(), 6);
    assert_eq!(inspection.dag.edge_count(), 10);
    assert_eq!(inspection.dag.critical_path(), 4);
    assert_eq!(inspection.dag.ready, vec![0]);

    let dot = inspection.to_dot();
    for kind in ["fill", "copy", "sum", "scale"] {
        assert!(
            dot.contains(&format!("{kind}(")),
            "{kind} missing from\n{dot}"
        );
    }
    assert!(dot.contains("t0 -> t4 [label=\"waw\""), "{dot}");
    assert!(dot.contains("t3 -> t5 [label=\"war\""), "{dot}");

    let json = inspection.to_json();
    let tasks = json["tasks"].as_array().expect("a task list");
    assert_eq!(tasks.len(), 6);
    let kinds: Vec<&str> = tasks.iter().map(|t| t["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["fill", "copy", "copy", "sum", "fill", "scale"]);
    assert!(
        tasks
            .iter()
            .all(|t| t["location"].as_str().unwrap().contains("cpu_backend.rs")),
        "{json}"
    );
    let edges: Vec<(u64, u64, &str)> = json["edges"]
        .as_array()
        .expect("an edge list")
        .iter()
        .map(|e| {
            (
                e["from"].as_u64().unwrap(),
                e["to"].as_u64().unwrap(),
                e["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        edges,
        [
            (0, 1, "raw"),
            (0, 2, "raw"),
            (0, 4, "waw"),
            (1, 3, "raw"),
            (1, 4, "war"),
            (1, 5, "raw"),
            (2, 3, "raw"),
            (2, 4, "war"),
            (2, 5, "raw"),
            (3, 5, "war"),
        ]
    );
    // Inspection ran no task.
    assert_eq!((a, b, c), (vec![0; 8], vec![0; 8], vec![0]));
}
