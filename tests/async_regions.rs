//! Regions submitted without waiting (`Region::submit`), on the CPU backend: they run on the
//! runtime's helper threads, regions that conflict on a resident array run in submission order,
//! regions that do not conflict overlap, and results and errors come back through `Pending`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use taskweave::{Block, Error, Runtime, task, task_region};

/// `v[i] = v[i] * m + c` over `lo..hi`, after spinning `spin_us` microseconds (so that a
/// missing dependence shows up as a wrong result, not a lucky one).
#[task(reads = v[lo..hi], writes = v[lo..hi])]
fn affine(b: &Block, v: &mut [u64], m: u64, c: u64, lo: usize, hi: usize, spin_us: u64) {
    // Under Miri (scripts/miri.sh) the ordering is checked without the spin, whose clock is slow.
    if b.thread() == 0 && !cfg!(miri) {
        let start = std::time::Instant::now();
        while start.elapsed() < std::time::Duration::from_micros(spin_us) {
            std::hint::spin_loop();
        }
    }
    b.sync();
    assert!(m != 0, "a zero multiplier");
    b.par_for(lo..hi, |i| v[i] = v[i] * m + c);
}

/// `dst[i] += src[i]` over `lo..hi`.
#[task(reads = [src[lo..hi], dst[lo..hi]], writes = dst[lo..hi])]
fn accumulate(b: &Block, src: &[u64], dst: &mut [u64], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| dst[i] += src[i]);
}

task_region! {
    /// One `affine` task over `v[lo..hi]`.
    fn step(v: &mut DeviceArray<u64>, m: u64, c: u64, lo: usize, hi: usize, spin_us: u64) {
        spawn!(affine(v, m, c, lo, hi, spin_us));
    }
}

task_region! {
    /// `dst += src` over the whole arrays, one task: resident ones, or host ones.
    fn add(src: &DeviceArray<u64>, dst: &mut DeviceArray<u64>) {
        spawn!(accumulate(src, dst, 0, dst.len()));
    }
}

/// Tasks that have arrived at the rendezvous.
static ARRIVED: AtomicU32 = AtomicU32::new(0);

/// Arrives at the rendezvous and waits (up to a second) until `expected` tasks have; records in
/// `out[0]` how many it saw.
#[task(reads = out[0..1], writes = out[0..1])]
fn rendezvous(b: &Block, out: &mut [u64], expected: u32) {
    if b.thread() == 0 {
        ARRIVED.fetch_add(1, Ordering::SeqCst);
        let start = std::time::Instant::now();
        while ARRIVED.load(Ordering::SeqCst) < expected
            && start.elapsed() < std::time::Duration::from_secs(1)
        {
            std::thread::yield_now();
        }
        out[0] = u64::from(ARRIVED.load(Ordering::SeqCst));
    }
}

task_region! {
    /// One `rendezvous` task on `out[at..at + 1]`.
    fn meet(out: &mut DeviceArray<u64>, expected: u32) {
        spawn!(rendezvous(out, expected));
    }
}

#[test]
fn conflicting_regions_run_in_submission_order() {
    let rt = Runtime::cpu_with(2);
    let n = 64;
    let mut v = rt.upload(&vec![1u64; n]).unwrap();
    // Affine maps do not commute: any reordering changes the result. The early regions spin
    // longest, so a later region that did not wait would overtake them.
    let steps: Vec<(u64, u64)> = (0..if cfg!(miri) { 3 } else { 12 })
        .map(|k| (2 + k % 3, k))
        .collect();
    let pending: Vec<_> = steps
        .iter()
        .enumerate()
        .map(|(k, &(m, c))| {
            let spin = if cfg!(miri) { 0 } else { 2000 / (k as u64 + 1) };
            step(&mut v, m, c, 0, n, spin).submit(&rt).unwrap()
        })
        .collect();
    // `download` waits for the writers in flight.
    let out = v.download().unwrap();
    let expected = steps.iter().fold(1u64, |x, &(m, c)| x * m + c);
    assert!(out.iter().all(|&x| x == expected), "{out:?} != {expected}");
    for p in pending {
        assert!(p.is_done());
        assert_eq!(p.wait().unwrap().tasks, 1);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "waits on wall-clock time, which Miri's clock makes very slow"
)]
fn regions_on_disjoint_ranges_of_one_array_overlap() {
    let rt = Runtime::cpu_with(1);
    let mut v = rt.upload(&[0u64; 8]).unwrap();
    ARRIVED.store(0, Ordering::SeqCst);
    // Two regions, each on its own element of one array. Each task waits at the rendezvous for
    // the other: they see each other only if they run at the same time.
    let mut out = rt.upload(&[0u64; 1]).unwrap();
    let mut out2 = rt.upload(&[0u64; 1]).unwrap();
    let a = meet(&mut out, 2).submit(&rt).unwrap();
    let b = meet(&mut out2, 2).submit(&rt).unwrap();
    a.wait().unwrap();
    b.wait().unwrap();
    assert_eq!(out.download().unwrap(), [2]);
    assert_eq!(out2.download().unwrap(), [2]);

    // Disjoint halves of one array do not wait for each other either: the first half's long spin
    // does not delay the second.
    let start = Instant::now();
    let slow = step(&mut v, 1, 1, 0, 4, 300_000).submit(&rt).unwrap();
    let fast = step(&mut v, 1, 2, 4, 8, 0).submit(&rt).unwrap();
    fast.wait().unwrap();
    assert!(
        !slow.is_done(),
        "the fast region waited for the slow one ({:?})",
        start.elapsed()
    );
    slow.wait().unwrap();
    assert_eq!(v.download().unwrap(), [1, 1, 1, 1, 2, 2, 2, 2]);
}

#[test]
fn the_b4_diamond_matches_running_in_order() {
    let rt = Runtime::cpu_with(2);
    let n = 40;
    let x0: Vec<u64> = (0..n as u64).collect();
    let y0: Vec<u64> = (0..n as u64).map(|i| 3 * i + 1).collect();
    let run = |submit: bool| {
        let mut x = rt.upload(&x0).unwrap();
        let mut y = rt.upload(&y0).unwrap();
        let mut pending = Vec::new();
        for t in 0..if cfg!(miri) { 1 } else { 5 } {
            // 1: in x, inout y. 2: inout x. 3: inout y. 4: in x, inout y.
            let regions = [
                add(&x, &mut y),
                step(&mut x, 3, t, 0, n, 200),
                step(&mut y, 5, t, 0, n, 100),
                add(&x, &mut y),
            ];
            for region in regions {
                if submit {
                    pending.push(region.submit(&rt).unwrap());
                } else {
                    region.run(&rt).unwrap();
                }
            }
        }
        for p in pending {
            p.wait().unwrap();
        }
        (x.download().unwrap(), y.download().unwrap())
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn host_arrays_are_written_back_at_wait() {
    let rt = Runtime::cpu_with(2);
    let mut src = vec![10u64; 16];
    let mut dst = vec![1u64; 16];
    let pending = add(&src, &mut dst).submit(&rt).unwrap();
    let report = pending.wait().unwrap();
    assert_eq!(report.tasks, 1);
    assert_eq!(dst, vec![11u64; 16]);

    // Dropping a pending region waits and writes back too.
    src.fill(1000);
    drop(add(&src, &mut dst).submit(&rt).unwrap());
    assert_eq!(dst, vec![1011u64; 16]);
}

#[test]
fn a_failing_submitted_region_reports_its_task_and_the_rest_go_on() {
    let rt = Runtime::cpu_with(2);
    let n = 8;
    let mut v = rt.upload(&vec![1u64; n]).unwrap();
    let mut host = vec![5u64; n];
    // An out-of-bounds range is an inspection error, returned by `submit` itself.
    let error = step(&mut v, 2, 0, 0, n + 1, 0).submit(&rt).unwrap_err();
    assert!(matches!(error, Error::OutOfBounds { .. }), "{error}");

    // A region whose task panics: its error names the task, the array is as it was, and the
    // regions after it run.
    let bad = step(&mut v, 0, 9, 0, n, 1000).submit(&rt).unwrap();
    let also = add(&[1; 8], &mut host).submit(&rt).unwrap();
    let error = bad.wait().unwrap_err();
    assert!(
        matches!(&error, Error::TaskPanicked { task, restored: true, .. } if task.kind == "affine"),
        "{error}"
    );
    assert!(error.to_string().contains("zero multiplier"), "{error}");
    also.wait().unwrap();
    assert_eq!(host, vec![6u64; n]);
    assert_eq!(v.download().unwrap(), vec![1u64; n]);

    let ok = step(&mut v, 2, 1, 0, n, 0).submit(&rt).unwrap();
    assert_eq!(ok.wait().unwrap().tasks, 1);
    assert_eq!(v.download().unwrap(), vec![3u64; n]);
}

#[test]
fn submitted_regions_outlive_neither_their_runtime_nor_their_arrays() {
    let mut out = Vec::new();
    {
        let rt = Runtime::cpu_with(1);
        let mut v = rt.upload(&[7u64; 4]).unwrap();
        let p = step(&mut v, 2, 0, 0, 4, 20_000).submit(&rt).unwrap();
        // The array handle goes first: the region keeps its memory.
        let q = add(&v, &mut rt.upload(&[1u64; 4]).unwrap())
            .submit(&rt)
            .unwrap();
        drop(v);
        out.push(p);
        out.push(q);
        // The runtime goes next: dropping it lets the helpers finish.
    }
    for p in out {
        assert_eq!(p.wait().unwrap().tasks, 1);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "waits on wall-clock time, which Miri's clock makes very slow"
)]
fn the_wall_time_covers_the_whole_call() {
    let rt = Runtime::cpu_with(1);
    let mut v = rt.upload(&[0u64; 8]).unwrap();
    // A run: the wall time holds the inspection and the execution (a 20 ms task).
    let report = step(&mut v, 1, 1, 0, 8, 20_000).run(&rt).unwrap();
    assert!(report.execute_time.as_millis() >= 20, "{report}");
    assert!(
        report.wall_time >= report.inspect_time + report.execute_time,
        "{report}"
    );
    // A submitted region: from `submit` to the return of `wait`, the caller's own wait included.
    let start = Instant::now();
    let pending = step(&mut v, 1, 1, 0, 8, 0).submit(&rt).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(30));
    let report = pending.wait().unwrap();
    assert!(report.wall_time.as_millis() >= 30, "{report}");
    assert!(report.wall_time <= start.elapsed(), "{report}");
}
