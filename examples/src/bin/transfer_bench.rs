//! Transfers of host arrays against the link: in one run, a cudarc probe of the host link's
//! bandwidth (pinned and pageable, both directions) and the transfer rate of regions over host
//! arrays of growing sizes (one task per 4 MiB chunk, each reading and writing its chunk, so that
//! every byte goes up and comes back), run once and as a plan run again. Needs a GPU.
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
        "| MiB | probe pinned H2D | probe pinned D2H | probe pageable H2D | region.run | plan.run | \
         plan.run / pinned probe |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
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

        // The regions: every byte of `x` goes up and comes back.
        let mut x = vec![0u32; bytes / 4];
        let chunk = (4 << 20) / 4;
        let rate = |report: &taskweave::Report| {
            (2 * bytes) as f64 / report.transfer_time.as_secs_f64() / 1e9
        };
        let mut once = Vec::new();
        for rep in 0..=cli.reps {
            let report = bump_chunks(&mut x, chunk).checked(false).run(&rt)?;
            if rep > 0 {
                once.push(rate(&report));
            }
        }
        let mut plan = bump_chunks(&mut x, chunk)
            .checked(false)
            .plan(&rt)?
            .verify(false);
        let mut planned = Vec::new();
        for rep in 0..=cli.reps {
            let report = plan.run(bump_chunks(&mut x, chunk), &rt)?;
            if rep > 0 {
                planned.push(rate(&report));
            }
        }
        let calls = 2 * (cli.reps + 1) as u32;
        if let Some(i) = x.iter().position(|&v| v != calls) {
            return Err(format!("{mib} MiB: element {i} is {}, not {calls}", x[i]).into());
        }
        let planned = median(planned);
        println!(
            "| {mib} | {h2d:.1} | {d2h:.1} | {paged:.1} | {:.1} | {planned:.1} | {:.0}% |",
            median(once),
            100.0 * planned / ((h2d + d2h) / 2.0)
        );
    }
    Ok(())
}
