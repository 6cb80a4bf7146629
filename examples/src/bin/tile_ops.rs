//! Times one tile operation on many independent tiles: the tile library against a batched
//! library call on the same tiles (cuBLAS's strided batched DGEMM for `--op gemm`).
//!
//! `tile_ops --op gemm --prec f64 --bs 64 --count 4096` runs 4096 independent tasks, each
//! `C[t] = A[t]·B[t] + β·C[t]` on 64 × 64 tiles, as one level of a DAG. It prints the region's
//! execution time (the kernel, median of `--reps` after one warm-up), the time per tile, the
//! rate in TFLOP/s, and a check of sampled tiles against a plain f64 reference within the
//! bound of a `bs`-term sum (`2(bs + 2)ε` times `|A|·|B| + |β|·|C|`, element by element).

use clap::{Parser, ValueEnum};
use taskweave::Runtime;
use taskweave::tile::Element;
use taskweave_examples::RunArgs;
use taskweave_examples::bench::median;
use taskweave_kernels::batch;
use taskweave_kernels::matrix::host::Stream;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OpArg {
    /// `C = A·B + β·C`.
    Gemm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Prec {
    F64,
    F32,
}

/// The warp-level instruction shape (see `taskweave::tile::shapes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ShapeArg {
    /// The element type's default: f64 on two `m8n8k4`, f32 exact on FMAs.
    Default,
    /// f64 on sm_90's `m16n8k4`.
    M16n8k4,
    /// f64 on sm_90's `m16n8k8`.
    M16n8k8,
    /// f64 on sm_90's `m16n8k16`.
    M16n8k16,
    /// f32 on TF32 tensor cores (`m16n8k8`), about 10-bit products.
    Tf32,
}

#[derive(Parser, Debug)]
#[command(about = "Times a tile operation on independent tiles (compare a batched BLAS call)")]
struct Cli {
    /// The operation.
    #[arg(long, value_enum, default_value_t = OpArg::Gemm)]
    op: OpArg,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Prec::F64)]
    prec: Prec,
    /// Instruction shape of the GEMM.
    #[arg(long, value_enum, default_value_t = ShapeArg::Default)]
    shape: ShapeArg,
    /// Tile side: a multiple of 16 from 16 to 256.
    #[arg(long, default_value_t = 64)]
    bs: usize,
    /// Independent tiles (tasks).
    #[arg(long, default_value_t = 4096)]
    count: usize,
    /// Timed repetitions, after one warm-up.
    #[arg(long, default_value_t = 10)]
    reps: usize,
    /// `β` of the GEMM (0 does not read C, as a batched `C = A·B`).
    #[arg(long, default_value_t = 1.0)]
    beta: f64,
    /// Shared scratch per block for the tile operations (bytes).
    #[arg(long, default_value_t = taskweave_kernels::gemm::SHARED_BYTES)]
    shared_bytes: u32,
    /// Tiles checked against the reference, spread over the batch.
    #[arg(long, default_value_t = 16)]
    check_tiles: usize,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if !taskweave::tile::args::side_ok(cli.bs) || cli.count == 0 {
        return Err("--bs must be a multiple of 16 from 16 to 256, --count positive".into());
    }
    let runtime = cli.run.runtime()?;
    println!("{}", runtime.describe());
    match (cli.prec, cli.shape) {
        (Prec::F64, ShapeArg::Tf32)
        | (Prec::F32, ShapeArg::M16n8k4 | ShapeArg::M16n8k8 | ShapeArg::M16n8k16) => {
            Err("--shape tf32 goes with --prec f32, the m16n8k* shapes with --prec f64".into())
        }
        (Prec::F64, _) => gemm::<f64>(&cli, &runtime),
        (Prec::F32, _) => gemm::<f32>(&cli, &runtime),
    }
}

/// An element type the batch regions come in.
trait Batched: Element {
    const NAME: &'static str;
    fn region<'a>(
        shape: ShapeArg,
        c: &'a mut [Self],
        a: &'a [Self],
        b: &'a [Self],
        beta: Self,
        count: usize,
        bs: usize,
    ) -> taskweave::Region<'a>;
}

impl Batched for f64 {
    const NAME: &'static str = "f64";
    fn region<'a>(
        shape: ShapeArg,
        c: &'a mut [f64],
        a: &'a [f64],
        b: &'a [f64],
        beta: f64,
        count: usize,
        bs: usize,
    ) -> taskweave::Region<'a> {
        match shape {
            ShapeArg::M16n8k4 => batch::gemm_batch_f64_m16n8k4(c, a, b, beta, count, bs),
            ShapeArg::M16n8k8 => batch::gemm_batch_f64_m16n8k8(c, a, b, beta, count, bs),
            ShapeArg::M16n8k16 => batch::gemm_batch_f64_m16n8k16(c, a, b, beta, count, bs),
            ShapeArg::Default | ShapeArg::Tf32 => batch::gemm_batch_f64(c, a, b, beta, count, bs),
        }
    }
}

impl Batched for f32 {
    const NAME: &'static str = "f32";
    fn region<'a>(
        shape: ShapeArg,
        c: &'a mut [f32],
        a: &'a [f32],
        b: &'a [f32],
        beta: f32,
        count: usize,
        bs: usize,
    ) -> taskweave::Region<'a> {
        match shape {
            ShapeArg::Tf32 => batch::gemm_batch_tf32(c, a, b, beta, count, bs),
            _ => batch::gemm_batch_f32(c, a, b, beta, count, bs),
        }
    }
}

fn random<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut s = Stream::new(seed);
    (0..len).map(|_| T::from_f64(s.value())).collect()
}

fn gemm<T: Batched>(cli: &Cli, runtime: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
    let (bs, count) = (cli.bs, cli.count);
    let len = count * bs * bs;
    let (a, b, c0) = (
        random::<T>(len, 1),
        random::<T>(len, 2),
        random::<T>(len, 3),
    );
    let beta = T::from_f64(cli.beta);
    println!(
        "{count} independent {bs}x{bs}x{bs} {} GEMM tasks, C = A·B + {}·C, {} threads per block, {} bytes of shared scratch",
        T::NAME,
        cli.beta,
        cli.run.threads,
        cli.shared_bytes
    );
    let mut c = c0.clone();
    let mut times = Vec::with_capacity(cli.reps);
    for rep in 0..=cli.reps {
        c.copy_from_slice(&c0);
        let region =
            T::region(cli.shape, &mut c, &a, &b, beta, count, bs).shared_bytes(cli.shared_bytes);
        let report = cli.run.apply(region).run(runtime)?;
        if rep == 0 {
            println!("warm-up: {report}");
        } else {
            times.push(report.execute_time.as_secs_f64());
        }
    }
    let t = median(&times);
    let flops = 2.0 * (bs as f64).powi(3) * count as f64;
    println!(
        "gemm {} bs={bs} count={count}: {:.3} ms median of {} (min {:.3}, max {:.3}), {:.1} ns per tile, {:.2} TFLOP/s",
        T::NAME,
        t * 1e3,
        times.len(),
        times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3,
        times.iter().copied().fold(0.0, f64::max) * 1e3,
        t / count as f64 * 1e9,
        flops / t / 1e12
    );
    let worst = check_gemm(&c, &c0, &a, &b, cli.beta, count, bs, cli.check_tiles);
    // TF32 operands carry a relative error of 2^-11 each: the bound scales by 2^13 over f32's.
    let slack = if cli.shape == ShapeArg::Tf32 {
        8192.0
    } else {
        1.0
    };
    let bound = 2.0 * (bs as f64 + 2.0) * T::EPSILON * slack;
    let pass = worst.is_finite() && worst <= bound;
    println!(
        "check: {} ({} tiles, worst error {worst:.2e} of the element's scale, bound {bound:.2e})",
        if pass { "PASS" } else { "FAIL" },
        cli.check_tiles.min(count)
    );
    if !pass {
        return Err("the tiles differ from the reference".into());
    }
    Ok(())
}

/// The worst `|C − (A·B + β·C₀)| / (|A|·|B| + |β|·|C₀|)` over the sampled tiles' elements.
#[allow(clippy::too_many_arguments)]
fn check_gemm<T: Element>(
    c: &[T],
    c0: &[T],
    a: &[T],
    b: &[T],
    beta: f64,
    count: usize,
    bs: usize,
    tiles: usize,
) -> f64 {
    let tiles = tiles.clamp(1, count);
    let (mut worst, mut nan) = (0.0f64, false);
    for s in 0..tiles {
        // The first and last tiles and evenly spaced ones between.
        let t = if tiles == 1 {
            0
        } else {
            s * (count - 1) / (tiles - 1)
        };
        let at = |x: &[T], r: usize, q: usize| x[t * bs * bs + r * bs + q].to_f64();
        for r in 0..bs {
            for q in 0..bs {
                let (mut sum, mut mag) = (beta * at(c0, r, q), (beta * at(c0, r, q)).abs());
                for k in 0..bs {
                    let p = at(a, r, k) * at(b, k, q);
                    sum += p;
                    mag += p.abs();
                }
                let err = (at(c, r, q) - sum).abs() / mag.max(f64::MIN_POSITIVE);
                nan |= err.is_nan();
                worst = worst.max(err);
            }
        }
    }
    if nan { f64::NAN } else { worst }
}
