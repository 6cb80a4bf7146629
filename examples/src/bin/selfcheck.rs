//! The GPU self-check: runs each kernel of `taskweave_kernels::selfcheck` and asserts what it saw.
//!
//! Every check prints `PASS` or `FAIL` with the values involved; the program exits non-zero if any
//! check fails.

use std::time::Instant;

use clap::Parser;
use taskweave::{Backend, Policy, Runtime};
use taskweave_host::gpu::cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg};
use taskweave_host::gpu::{Gpu, describe};
use taskweave_kernels::dags::{
    bump_all, bump_chunks, check_wavefront, output_chunks, output_chunks_expected, wavefront,
};

#[derive(Parser, Debug)]
#[command(about = "Checks every call of the taskweave device layer on the GPU")]
struct Cli {
    /// Rounds of the message-passing test.
    #[arg(long, default_value_t = 100_000)]
    rounds: u32,
}

struct Checks {
    failed: usize,
    total: usize,
}

impl Checks {
    fn check(&mut self, name: &str, ok: bool, detail: impl std::fmt::Display) {
        self.total += 1;
        if !ok {
            self.failed += 1;
        }
        println!("{} {name}: {detail}", if ok { "PASS" } else { "FAIL" });
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    let gpu = Gpu::new(0)?;
    println!("device: {} ({} SMs)", gpu.name(), gpu.sm_count());
    let ptx = taskweave_kernels::CODE;
    gpu.check_code(ptx)?;
    let stream = gpu.stream().clone();
    let mut checks = Checks {
        failed: 0,
        total: 0,
    };

    // 1. Message passing with GPU-scope release/acquire between two blocks.
    {
        let f = gpu.function(ptx, "selfcheck_message_passing")?;
        let data = stream.alloc_zeros::<u32>(32)?;
        let flags = stream.alloc_zeros::<u32>(2)?;
        let errors = stream.alloc_zeros::<u32>(2)?;
        let start = Instant::now();
        let mut launch = stream.launch_builder(&f);
        launch.arg(&data).arg(&flags).arg(&errors).arg(&cli.rounds);
        // SAFETY: the arguments match the kernel's signature and sizes.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (2, 1, 1),
                block_dim: (64, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let errors = stream.clone_dtoh(&errors)?;
        let elapsed = start.elapsed();
        checks.check(
            "message passing (release/acquire, GPU scope)",
            errors[0] == 0 && errors[1] == cli.rounds,
            format!(
                "{} rounds seen, {} stale payload words, {:.2} us per round trip",
                errors[1],
                errors[0],
                elapsed.as_secs_f64() * 1e6 / f64::from(cli.rounds)
            ),
        );
    }

    // 2. Identity, timers, nanosleep.
    {
        let f = gpu.function(ptx, "selfcheck_identity")?;
        let blocks = gpu.sm_count() * 2;
        let out = stream.alloc_zeros::<u64>(8 * blocks as usize)?;
        let sleep_ns = 50_000u32;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&out).arg(&sleep_ns);
        // SAFETY: 8 words per block, as the kernel writes.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let out = stream.clone_dtoh(&out)?;
        let rows: Vec<&[u64]> = out.chunks(8).collect();
        let smid_ok = rows.iter().all(|r| r[0] < r[1]);
        let nsmid = rows[0][1];
        let distinct = {
            let mut ids: Vec<u64> = rows.iter().map(|r| r[0]).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        checks.check(
            "%smid < %nsmid",
            smid_ok,
            format!("%nsmid = {nsmid}, {distinct} distinct SMs over {blocks} blocks"),
        );
        checks.check(
            "indices and sizes",
            rows.iter()
                .enumerate()
                .all(|(b, r)| r[2] == b as u64 && r[3] == u64::from(blocks) && r[4] == 32),
            format!("{blocks} blocks of 32 threads"),
        );
        checks.check(
            "%globaltimer monotonic",
            rows.iter().all(|r| r[5] == 1),
            "1000 reads per block",
        );
        checks.check(
            "%clock64 monotonic",
            rows.iter().all(|r| r[6] == 1),
            "1000 reads per block",
        );
        // PTX guarantees a sleep in [0, 2t]. The bound that matters to the scheduler's back-off is
        // the upper one (a sleep adds to a dependence hop's latency), checked with the timer's
        // granularity as slack. The lower one is only "it sleeps at all": on the H100 all blocks of
        // one launch were seen to wake after 6 us of an asked 50 us, about once in seven runs.
        let mut slept: Vec<u64> = rows.iter().map(|r| r[7]).collect();
        slept.sort_unstable();
        let (median, max) = (slept[slept.len() / 2], slept[slept.len() - 1]);
        let asked = u64::from(sleep_ns);
        checks.check(
            "nanosleep sleeps",
            median >= 1_000 && max <= 2 * asked + 10_000,
            format!(
                "asked {sleep_ns} ns; slept {} to {max} ns, median {median} ns (PTX allows 0 to {})",
                slept[0],
                2 * asked
            ),
        );
    }

    // 3. Shared memory (static and dynamic) and warp operations.
    {
        let f = gpu.function(ptx, "selfcheck_shared")?;
        let n = 128u32;
        let out = stream.alloc_zeros::<u32>(6 * n as usize)?;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&out);
        // SAFETY: 6 words per thread; 4 bytes of dynamic shared memory per thread.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (n, 1, 1),
                shared_mem_bytes: 4 * n,
            })
        }?;
        let out = stream.clone_dtoh(&out)?;
        let rows: Vec<&[u32]> = out.chunks(6).collect();
        let total: u32 = (0..n).sum();
        checks.check(
            "static shared memory across the block",
            rows.iter()
                .enumerate()
                .all(|(t, r)| r[0] == ((t as u32 + 1) % n) * 3),
            "thread t reads what thread t+1 wrote",
        );
        checks.check(
            "dynamic shared memory across the block",
            rows.iter()
                .enumerate()
                .all(|(t, r)| r[1] == ((t as u32 + n - 1) % n) * 5),
            "thread t reads what thread t-1 wrote",
        );
        checks.check(
            "warp ballot",
            rows.iter().all(|r| r[2] == 0x5555_5555),
            format!("{:#x}", rows[0][2]),
        );
        checks.check(
            "warp shuffles",
            rows.iter().enumerate().all(|(t, r)| {
                let t = t as u32;
                r[3] == t / 32 * 32 && r[4] == if t % 32 == 31 { t } else { t + 1 }
            }),
            "idx from lane 0, down by 1",
        );
        checks.check(
            "block-scope atomic add",
            rows.iter().all(|r| r[5] == total),
            format!("sum {}", rows[0][5]),
        );
    }

    // 4. Atomics at GPU and system scope.
    {
        let f = gpu.function(ptx, "selfcheck_atomics")?;
        let out = stream.alloc_zeros::<u32>(4)?;
        let (blocks, threads) = (64u32, 256u32);
        let mut launch = stream.launch_builder(&f);
        launch.arg(&out);
        // SAFETY: four counters.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        let out = stream.clone_dtoh(&out)?;
        let all = blocks * threads;
        checks.check(
            "atomics (add, max, exchange, compare-and-swap)",
            out == [2 * all, all - 1, 1, all],
            format!("{out:?}, expected [{}, {}, 1, {all}]", 2 * all, all - 1),
        );
    }

    // 5. A panic inside a kernel is reported with its code, and does not hang the block.
    {
        let f = gpu.function(ptx, "selfcheck_panic")?;
        let out = stream.alloc_zeros::<u32>(4)?;
        let empty = taskweave_device::error::ErrorRecord::EMPTY;
        // SAFETY: `ErrorRecord` is `repr(C)` plain data.
        let empty = unsafe {
            std::slice::from_raw_parts(
                (&raw const empty).cast::<u8>(),
                size_of::<taskweave_device::error::ErrorRecord>(),
            )
        };
        let record_buf = stream.clone_htod(empty)?;
        let abort = stream.alloc_zeros::<u32>(1)?;
        let trigger = 7u32;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&trigger).arg(&out).arg(&record_buf).arg(&abort);
        // SAFETY: one word per block.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (4, 1, 1),
                block_dim: (64, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        stream.synchronize()?;
        let finished = stream.clone_dtoh(&out)?;
        let bytes = stream.clone_dtoh(&record_buf)?;
        // SAFETY: the buffer holds one `repr(C)` record, written by the kernel.
        let record = unsafe {
            std::ptr::read_unaligned(
                bytes
                    .as_ptr()
                    .cast::<taskweave_device::error::ErrorRecord>(),
            )
        };
        let raised = stream.clone_dtoh(&abort)?[0];
        checks.check(
            "panic recorded",
            record.code == taskweave_device::error::CODE_PANIC
                && raised == 1
                && record.thread == 5
                && record.worker == 0,
            format!(
                "code {}, block {}, thread {}: {}",
                record.code,
                record.worker,
                record.thread,
                describe(&record, &[])
            ),
        );
        checks.check(
            "panicking block finishes (no hang, no trap)",
            finished == [1, 1, 1, 1],
            format!("{finished:?}"),
        );
        // The context stays usable: run the atomics kernel again.
        let f = gpu.function(ptx, "selfcheck_atomics")?;
        let out = stream.alloc_zeros::<u32>(4)?;
        let mut launch = stream.launch_builder(&f);
        launch.arg(&out);
        // SAFETY: four counters.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (32, 1, 1),
                shared_mem_bytes: 0,
            })
        }?;
        checks.check(
            "context usable after the panic",
            stream.clone_dtoh(&out)?[0] == 64,
            "a kernel ran afterwards",
        );
    }

    // 6. `taskweave::math` in a region on the GPU, against `std` on the host.
    {
        use taskweave_kernels::math_check::{FUNCTIONS, apply, check_math, inputs, ulps, ulps32};
        let x64 = inputs();
        let x32: Vec<f32> = x64.iter().map(|&x| x as f32).collect();
        let n = x64.len();
        let mut y64 = vec![0.0; FUNCTIONS.len() * n];
        let mut y32 = vec![0.0f32; FUNCTIONS.len() * n];
        check_math(&x64, &mut y64, &x32, &mut y32).run(&taskweave_host::Runtime::gpu(0)?)?;
        for (k, name) in FUNCTIONS.iter().enumerate() {
            let worst64 = (0..n).map(|i| ulps(y64[k * n + i], apply(k, x64[i]))).max();
            let worst32 = (0..n)
                .map(|i| ulps32(y32[k * n + i], apply(k, x32[i])))
                .max();
            let (worst64, worst32) = (worst64.unwrap_or(0), worst32.unwrap_or(0));
            checks.check(
                &format!("math::{name} on the GPU against the host's std"),
                worst64 <= 2 && worst32 <= 2,
                format!("worst {worst64} ulps in f64, {worst32} in f32, over {n} inputs"),
            );
        }
    }

    cudarc_interop(&mut checks)?;
    for policy in [Policy::Grr, Policy::Local, Policy::Affinity, Policy::Static] {
        plan_reuse(&mut checks, policy)?;
    }
    pinned_staging(&mut checks)?;
    for backend in [
        Backend::Persistent,
        Backend::Barrier,
        Backend::GridBarrier,
        Backend::Graph,
        Backend::Streams,
    ] {
        output_arrays(&mut checks, backend)?;
    }

    println!(
        "{} passed, {} failed",
        checks.total - checks.failed,
        checks.failed
    );
    if checks.failed > 0 {
        return Err(format!("{} of {} checks failed", checks.failed, checks.total).into());
    }
    Ok(())
}

/// A region on a cudarc stream and a `CudaSlice` the caller made: the caller's copies before and
/// after the region are queued on the same stream with no synchronization in between, and the
/// slice comes back with the region's result.
fn cudarc_interop(checks: &mut Checks) -> Result<()> {
    const N: usize = 4096;
    let ctx = CudaContext::new(0)?;
    let stream = ctx.new_stream()?;
    let rt = Runtime::on_stream(stream.clone())?;
    // The caller's data, uploaded by the caller; then its own work queued on its stream: the
    // region must see 7, not 1, in every element.
    let ones = stream.clone_htod(&vec![1u32; N])?;
    let sevens = stream.clone_htod(&vec![7u32; N])?;
    let mut x = rt.adopt(ones)?;
    {
        let mut view = x.cuda_view_mut().ok_or("an adopted array is on the GPU")?;
        stream.memcpy_dtod(&sevens, &mut view)?;
    }
    let report = bump_all(&mut x).run(&rt)?;
    // The caller's work after the region, on the same stream: a copy into a slice of its own.
    let mut after = stream.alloc_zeros::<u32>(N)?;
    {
        let view = x.cuda_view().ok_or("an adopted array is on the GPU")?;
        stream.memcpy_dtod(&view, &mut after)?;
    }
    let seen = stream.clone_dtoh(&after)?;
    let back = x
        .into_cuda()
        .map_err(|_| "the array is held by no region")?;
    let returned = stream.clone_dtoh(&back)?;
    checks.check(
        "cudarc interop (a region on the caller's stream and CudaSlice)",
        report.tasks == N && seen.iter().all(|&v| v == 8) && returned == seen,
        format!(
            "{} tasks; after the region the caller read {:?}.. (8 expected), the returned slice \
             holds {:?}..",
            report.tasks,
            &seen[..4],
            &returned[..4]
        ),
    );
    Ok(())
}

/// A plan run again and again under `policy`: a wavefront on host arrays, ping-pong between two
/// grids reset to garbage before each call (verified against fresh inspection on every call), and
/// one task per element of a resident array, five times.
fn plan_reuse(checks: &mut Checks, policy: Policy) -> Result<()> {
    let rt = Runtime::gpu(0)?;
    let t = 24;
    let (mut g1, mut g2) = (vec![777u32; t * t], vec![777u32; t * t]);
    let mut plan = wavefront(&mut g1, t, 0)
        .policy(policy)
        .plan(&rt)?
        .verify(true);
    let mut wavefronts = 0;
    for round in 0..6 {
        let g = if round % 2 == 0 { &mut g1 } else { &mut g2 };
        g.fill(777);
        plan.run(wavefront(&mut *g, t, 0), &rt)?;
        wavefronts += usize::from(check_wavefront(g, t));
    }
    let mut x = rt.upload(&vec![0u32; 2048])?;
    let mut bumps = bump_all(&mut x).policy(policy).plan(&rt)?;
    for _ in 0..5 {
        bumps.run(bump_all(&mut x), &rt)?;
    }
    let out = x.download()?;
    let fives = out.iter().filter(|&&v| v == 5).count();
    checks.check(
        &format!("plan reuse under {policy}"),
        wavefronts == 6 && fives == out.len(),
        format!(
            "{wavefronts} of 6 wavefronts right on reset tables; {fives} of {} elements bumped 5 \
             times",
            out.len()
        ),
    );
    Ok(())
}

/// A 48 MiB host array, through the pinned staging ring both ways (12 chunks of 4 MiB): a region
/// run once, then a plan run twice on the same array and once on another; every element is right.
fn pinned_staging(checks: &mut Checks) -> Result<()> {
    let rt = Runtime::gpu(0)?;
    let n = 12 << 20;
    let chunk = 1 << 20;
    let mut x: Vec<u32> = (0..n as u32).collect();
    let mut y: Vec<u32> = (0..n as u32).map(|i| i ^ 0x5555).collect();
    bump_chunks(&mut x, chunk).run(&rt)?;
    let mut plan = bump_chunks(&mut x, chunk).plan(&rt)?;
    plan.run(bump_chunks(&mut x, chunk), &rt)?;
    plan.run(bump_chunks(&mut y, chunk), &rt)?;
    let report = plan.run(bump_chunks(&mut x, chunk), &rt)?;
    let wrong_x = (0..n).filter(|&i| x[i] != i as u32 + 3).count();
    let wrong_y = (0..n).filter(|&i| y[i] != (i as u32 ^ 0x5555) + 1).count();
    checks.check(
        "host arrays through pinned staging (48 MiB, both ways)",
        wrong_x == 0 && wrong_y == 0,
        format!(
            "{wrong_x} + {wrong_y} wrong elements; last transfer {:.2} ms ({:.1} GB/s both ways)",
            report.transfer_time.as_secs_f64() * 1e3,
            (8 * n) as f64 / report.transfer_time.as_secs_f64() / 1e9
        ),
    );
    Ok(())
}

/// An `#[output]` array on `backend`, 2 MiB (its unwritten gaps, 1 MiB, go up through the pinned
/// staging ring): every other chunk written, the chunks between left as the host had them (copied
/// up, as no task writes them), and a chunk that reads an earlier write. (With no input to copy,
/// nothing is staged during inspection; `demo`'s INT-HIST and SA-TABLE take that path with their
/// outputs.) Three calls through
/// the runtime's plan cache (inspected; tables staged; replayed), then three with a task that
/// writes one element of the chunk it declares, whose other elements come back zero.
fn output_arrays(checks: &mut Checks, backend: Backend) -> Result<()> {
    let rt = Runtime::gpu(0)?;
    let (n, chunk) = (1 << 19, 1 << 16);
    let mut right = 0;
    let mut reused = 0;
    for partial in [false, true] {
        let expected = output_chunks_expected(n, chunk, partial, 7);
        for _ in 0..3 {
            let mut x = vec![7u32; n];
            let report = output_chunks(&mut x, chunk, partial)
                .backend(backend)
                .run(&rt)?;
            right += usize::from(x == expected);
            reused += usize::from(report.reused);
        }
    }
    checks.check(
        &format!("output arrays on {backend}"),
        right == 6,
        format!(
            "{right} of 6 calls left the array as expected ({reused} of them reused a plan): \
             chunks between writes kept, undeclared-but-unwritten elements zero"
        ),
    );
    Ok(())
}
