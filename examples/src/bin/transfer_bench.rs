//! Transfers of host arrays against the link: in one run, a cudarc probe of the host link's
//! bandwidth (pinned and pageable, both directions) and the transfer rate of regions over host
//! arrays of growing sizes (one task per 4 MiB chunk, each reading and writing its chunk, so that
//! every byte goes up and comes back), run once and as a plan run again, from a `Vec` and from a
//! `Pinned` array (`Runtime::pinned`). Needs a GPU.
//!
//! A second table probes what bounds the staging ring: the host's own copy rate between pageable
//! and pinned memory on 1 to 16 threads, and a copy that pins the caller's pages in place
//! (`cuMemHostRegister`, copy, unregister) instead of staging them.
//!
//! `cargo run --release --bin transfer_bench -- --mib 16,64,256,1024`

use clap::Parser;
use taskweave::Runtime;
use taskweave_host::gpu::Gpu;
use taskweave_host::gpu::cudarc::driver::sys::CUevent_flags;
use taskweave_kernels::dags::bump_chunks;

#[derive(Parser, Debug)]
#[command(about = "Host-array transfers against a cudarc probe of the link")]
struct Cli {
    /// Array sizes in MiB.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024")]
    mib: Vec<usize>,
    /// Timed calls per size (the median is reported), after one warm-up.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Skip the host-side probes (the second table).
    #[arg(long)]
    no_host_probe: bool,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// GB/s of `reps` copies of `bytes` by `copy`, timed with events on the GPU's stream.
fn probe(
    gpu: &Gpu,
    bytes: usize,
    reps: usize,
    copy: &mut dyn FnMut() -> Result<()>,
) -> Result<f64> {
    let ctx = gpu.context();
    let (start, end) = (
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
        ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?,
    );
    copy()?;
    let mut rates = Vec::with_capacity(reps);
    for _ in 0..reps {
        start.record(gpu.stream())?;
        copy()?;
        end.record(gpu.stream())?;
        end.synchronize()?;
        let seconds = f64::from(start.elapsed_ms(&end)?) / 1e3;
        rates.push(bytes as f64 / seconds / 1e9);
    }
    Ok(median(rates))
}

/// GB/s of `reps` wall-clock runs of `copy` over `bytes`, after one warm-up.
fn wall_rate(bytes: usize, reps: usize, copy: &mut dyn FnMut() -> Result<()>) -> Result<f64> {
    copy()?;
    let mut rates = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = std::time::Instant::now();
        copy()?;
        rates.push(bytes as f64 / start.elapsed().as_secs_f64() / 1e9);
    }
    Ok(median(rates))
}

/// Copies `len` bytes from `from` to `to` on `threads` threads, each a contiguous share.
fn threaded_copy(from: usize, to: usize, len: usize, threads: usize) {
    std::thread::scope(|scope| {
        for t in 0..threads {
            let (a, b) = (len * t / threads, len * (t + 1) / threads);
            scope.spawn(move || {
                // SAFETY: the caller's two ranges are valid and disjoint; the shares do not
                // overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        (from + a) as *const u8,
                        (to + a) as *mut u8,
                        b - a,
                    )
                }
            });
        }
    });
}

/// The host-side probes for one size: the host's copy rate between pageable and pinned memory
/// on each thread count, and copies from the caller's pages pinned in place.
fn host_probe(gpu: &Gpu, mib: usize, reps: usize) -> Result<()> {
    use taskweave_host::gpu::cudarc::driver::{DevicePtr, result, sys};
    let bytes = mib << 20;
    let stream = gpu.stream();
    // SAFETY: written before it is read.
    let mut pinned = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(bytes, 0) }?;
    let pinned_at = pinned.as_mut_ptr()? as usize;
    let mut pageable = vec![1u8; bytes];
    let pageable_at = pageable.as_mut_ptr() as usize;
    for threads in [1, 2, 4, 8, 16] {
        let up = wall_rate(bytes, reps, &mut || {
            threaded_copy(pageable_at, pinned_at, bytes, threads);
            Ok(())
        })?;
        let down = wall_rate(bytes, reps, &mut || {
            threaded_copy(pinned_at, pageable_at, bytes, threads);
            Ok(())
        })?;
        println!("| {mib} | host copy, {threads} threads | {up:.1} | {down:.1} |");
    }
    let device = stream.alloc_zeros::<u8>(bytes)?;
    let (dev, cu) = (device.device_ptr(stream).0, stream.cu_stream());
    let register = |p: usize| -> Result<()> {
        // SAFETY: `p` is the pageable vector's address, valid for `bytes`; unregistered below.
        let rc = unsafe { sys::cuMemHostRegister_v2(p as *mut _, bytes, 0) };
        rc.result()?;
        Ok(())
    };
    let unregister = |p: usize| -> Result<()> {
        // SAFETY: registered just before.
        unsafe { sys::cuMemHostUnregister(p as *mut _) }.result()?;
        Ok(())
    };
    let up = wall_rate(bytes, reps, &mut || {
        register(pageable_at)?;
        // SAFETY: the registered vector is valid for `bytes`; the stream is synchronized below.
        unsafe { result::memcpy_htod_async(dev, &pageable[..], cu) }?;
        stream.synchronize()?;
        unregister(pageable_at)
    })?;
    let down = wall_rate(bytes, reps, &mut || {
        register(pageable_at)?;
        // SAFETY: as above.
        unsafe { result::memcpy_dtoh_async(&mut pageable[..], dev, cu) }?;
        stream.synchronize()?;
        unregister(pageable_at)
    })?;
    let reg_only = wall_rate(bytes, reps, &mut || {
        register(pageable_at)?;
        unregister(pageable_at)
    })?;
    println!("| {mib} | register, copy, unregister (wall) | {up:.1} | {down:.1} |");
    println!("| {mib} | register and unregister alone | {reg_only:.1} | |");
    drop((pinned, device));
    Ok(())
}

/// The median transfer rates (GB/s, bytes up and down over `Report::transfer_time`) of a region
/// over `x` run once and as a plan run again, `reps` calls each after a warm-up; checks that
/// every call added one to every element.
fn time_regions(rt: &Runtime, x: &mut [u32], chunk: usize, reps: usize) -> Result<(f64, f64)> {
    let bytes = size_of_val(x);
    let rate =
        |report: &taskweave::Report| (2 * bytes) as f64 / report.transfer_time.as_secs_f64() / 1e9;
    let mut once = Vec::new();
    for rep in 0..=reps {
        let report = bump_chunks(&mut *x, chunk).checked(false).run(rt)?;
        if rep > 0 {
            once.push(rate(&report));
        }
    }
    let mut plan = bump_chunks(&mut *x, chunk)
        .checked(false)
        .plan(rt)?
        .verify(false);
    let mut planned = Vec::new();
    for rep in 0..=reps {
        let report = plan.run(bump_chunks(&mut *x, chunk), rt)?;
        if rep > 0 {
            planned.push(rate(&report));
        }
    }
    let calls = 2 * (reps + 1) as u32;
    if let Some(i) = x.iter().position(|&v| v != calls) {
        return Err(format!("element {i} is {}, not {calls}", x[i]).into());
    }
    Ok((median(once), median(planned)))
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    let rt = Runtime::gpu(0)?;
    let gpu = rt.gpu_device().ok_or("a GPU runtime has a GPU")?;
    println!("# transfer_bench on {}", rt.describe());
    println!(
        "# GB/s, medians of {} after a warm-up; region rate = (bytes up + bytes down) / \
         Report::transfer_time; probe = cudarc copies of the same size timed with events",
        cli.reps
    );
    println!();
    println!(
        "| MiB | probe pinned H2D | probe pinned D2H | probe pageable H2D | Vec: region.run | \
         Vec: plan.run | Vec: plan.run / pinned probe | Pinned: region.run | Pinned: plan.run | \
         Pinned: plan.run / pinned probe |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let stream = gpu.stream();
    for &mib in &cli.mib {
        let bytes = mib << 20;
        // The probe: cudarc's own copies between pinned (or pageable) host memory and the device.
        // SAFETY: written by the copies before it is read.
        let mut pinned = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(bytes, 0) }?;
        let mut device = stream.alloc_zeros::<u8>(bytes)?;
        let pageable = vec![1u8; bytes];
        let h2d = probe(gpu, bytes, cli.reps, &mut || {
            Ok(stream.memcpy_htod(&pinned, &mut device)?)
        })?;
        let d2h = probe(gpu, bytes, cli.reps, &mut || {
            Ok(stream.memcpy_dtoh(&device, &mut pinned)?)
        })?;
        let paged = probe(gpu, bytes, cli.reps, &mut || {
            Ok(stream.memcpy_htod(&pageable[..], &mut device)?)
        })?;
        drop((pinned, device, pageable));

        // The regions: every byte of the array goes up and comes back, from a `Vec` (through the
        // staging ring) and from a `Pinned` array (DMA in place).
        let chunk = (4 << 20) / 4;
        let mut x = vec![0u32; bytes / 4];
        let (once, planned) = time_regions(&rt, &mut x, chunk, cli.reps)?;
        let mut locked = rt.pinned(&vec![0u32; bytes / 4])?;
        let (locked_once, locked_planned) = time_regions(&rt, &mut locked, chunk, cli.reps)?;
        let link = (h2d + d2h) / 2.0;
        println!(
            "| {mib} | {h2d:.1} | {d2h:.1} | {paged:.1} | {once:.1} | {planned:.1} | {:.0}% | \
             {locked_once:.1} | {locked_planned:.1} | {:.0}% |",
            100.0 * planned / link,
            100.0 * locked_planned / link,
        );
    }
    if !cli.no_host_probe {
        println!();
        println!(
            "# What bounds the ring: the host's copies between pageable and pinned memory (wall \
             clock, GB/s of one direction), and copies from the pageable array pinned in place"
        );
        println!();
        println!("| MiB | copy | pageable to pinned / H2D | pinned to pageable / D2H |");
        println!("| --- | --- | --- | --- |");
        for &mib in &cli.mib {
            host_probe(gpu, mib, cli.reps)?;
        }
    }
    Ok(())
}
