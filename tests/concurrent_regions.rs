//! One runtime shared by several host threads, and what a runtime without a GPU does.
//!
//! A `Runtime` is `Send + Sync`. Every region gets its own tables, so regions from several host
//! threads run side by side: on the CPU backend with their own worker threads, on a GPU with their
//! own error record and abort flag per launch, admitted beside each other while their workers fit
//! (the GPU case is in the `faults` program). Dropping a runtime
//! while a region runs does not compile (`ui/runtime-dropped-while-running.rs`).

use std::sync::Barrier;

use taskweave::{Backend, Block, Error, Runtime, task, task_region};

/// `x[i] += 1` over the whole array (accesses inferred: reads and writes `x`).
#[task]
fn bump(b: &Block, x: &mut [u32]) {
    b.par_for(0..x.len(), |i| x[i] += 1);
}

/// `y[i] += x[i]` over the whole arrays.
#[task]
fn add(b: &Block, x: &[u32], y: &mut [u32]) {
    b.par_for(0..y.len(), |i| y[i] += x[i]);
}

/// Panics when `fail` is set.
#[task]
fn maybe_fail(b: &Block, x: &mut [u32], fail: bool) {
    if fail {
        panic!("failing on purpose");
    }
    b.par_for(0..x.len(), |i| x[i] *= 2);
}

task_region! {
    /// `k` bumps of `x`, then `y += x`, then doubles `y` unless `fail`.
    fn chain(x: &mut [u32], y: &mut [u32], k: usize, fail: bool) {
        for _ in 0..k {
            spawn!(bump(x));
        }
        spawn!(add(x, y));
        spawn!(maybe_fail(y, fail));
    }
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn regions_from_several_threads_share_one_runtime() {
    assert_send_sync::<Runtime>();
    const THREADS: usize = 4;
    // Miri (scripts/miri.sh) interprets every region: a few rounds check the same code.
    const ROUNDS: usize = if cfg!(miri) { 3 } else { 25 };
    let runtime = Runtime::cpu_with(3);
    let start = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for thread in 0..THREADS {
            let (runtime, start) = (&runtime, &start);
            s.spawn(move || {
                start.wait();
                for round in 0..ROUNDS {
                    let k = 1 + (thread * 7 + round) % 9;
                    let len = 1 + (thread + round) % 40;
                    let base = (thread * 1000 + round) as u32;
                    let mut x: Vec<u32> = (0..len as u32).map(|i| base + i).collect();
                    let mut y = vec![thread as u32; len];
                    // Thread 0 fails every third region: the others must not notice.
                    let fail = thread == 0 && round % 3 == 0;
                    let result = chain(&mut x, &mut y, k, fail).cpu_lanes(2).run(runtime);
                    if fail {
                        let error = result.expect_err("the region fails");
                        assert!(
                            matches!(&error, Error::TaskPanicked { task, restored: true, .. } if task.kind == "maybe_fail"),
                            "{error}"
                        );
                        // Restored: as before the region.
                        assert_eq!(y, vec![thread as u32; len]);
                        assert_eq!(x[0], base);
                        continue;
                    }
                    let report = result.unwrap_or_else(|e| panic!("thread {thread}: {e}"));
                    assert_eq!(report.tasks, k + 2);
                    for i in 0..len {
                        let xi = base + i as u32 + k as u32;
                        assert_eq!(x[i], xi, "thread {thread}, round {round}");
                        assert_eq!(y[i], 2 * (thread as u32 + xi), "thread {thread}, round {round}");
                    }
                }
            });
        }
    });
    // And the runtime still works afterwards.
    let (mut x, mut y) = (vec![1u32; 3], vec![0u32; 3]);
    chain(&mut x, &mut y, 1, false)
        .run(&runtime)
        .expect("the runtime works");
    assert_eq!(y, [4, 4, 4]);
}

#[test]
#[cfg_attr(miri, ignore = "probes for libcuda with dlopen, which Miri cannot run")]
fn without_a_gpu_the_runtime_says_why_and_falls_back() {
    match Runtime::gpu(0) {
        Ok(gpu) => {
            assert_eq!(gpu.backend(), Backend::Persistent);
            assert_eq!(Runtime::new().fallback_reason(), None);
        }
        Err(Error::NoGpu { reason }) => {
            assert!(!reason.is_empty());
            let runtime = Runtime::new();
            assert_eq!(runtime.backend(), Backend::Cpu);
            let fallback = runtime.fallback_reason().expect("the runtime says why");
            assert!(fallback.contains(&reason), "{fallback}");
            // A GPU backend asked of the CPU runtime is an error naming the backend and why.
            let (mut x, mut y) = (vec![5u32; 2], vec![7u32; 2]);
            let error = chain(&mut x, &mut y, 1, false)
                .backend(Backend::Graph)
                .run(&runtime)
                .expect_err("no GPU");
            let text = error.to_string();
            assert!(matches!(error, Error::NoGpu { .. }), "{text}");
            assert!(text.contains("`graph`") && text.contains(&reason), "{text}");
            assert_eq!((x, y), (vec![5; 2], vec![7; 2]));
        }
        Err(other) => panic!("expected a GPU or `Error::NoGpu`, got: {other}"),
    }
    // An ordinal no machine has is never a panic.
    assert!(matches!(Runtime::gpu(4096), Err(Error::NoGpu { .. })));
}
