//! Dense factorizations against the vendor libraries, in one process on the same matrices.
//!
//! - `linalg --vendor` times cuSOLVER's Cholesky (`potrf`) and no-pivot LU (`getrf` with a null
//!   pivot array), and cuBLAS's strided batched GEMM on square tiles, through cudarc on the
//!   taskweave runtime's own context: the yardsticks for the tile library. Every factorization is
//!   checked by its residual (`‖L·Lᵀ − A‖_F / ‖A‖_F`, `‖L·U − A‖_F / ‖A‖_F`), every GEMM batch
//!   against a host product of its first tile.
//! - `linalg --dsl` runs the tiled Cholesky and LU of `taskweave_kernels` on every `--variants`
//!   entry (backend, policy, checks) beside cuSOLVER on the same matrix, and prints one table:
//!   first-call wall time, then the median wall and execute (kernel) times, TFLOP/s, the ratios
//!   to cuSOLVER (its time over ours: above 1 is faster), and the checks: a residual probe whose
//!   bound a missing task breaks, and the largest difference from cuSOLVER's factor.
//!
//! Each figure is the median of `--reps` runs after one that is not counted.

use std::time::Duration;

use clap::Parser;
use taskweave::Runtime;
use taskweave_examples::linalg::{self, Case, Scalar, Variant, Which};
use taskweave_examples::vendor::{Real, Timed, Vendor};

#[derive(Parser, Debug)]
#[command(about = "Cholesky and LU against cuSOLVER, tile GEMM against cuBLAS")]
struct Cli {
    /// Matrix sides.
    #[arg(long, value_delimiter = ',', default_values_t = [1024usize, 2048, 4096, 8192])]
    sizes: Vec<usize>,
    /// Element types: f64, f32.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("f64"), String::from("f32")])]
    precisions: Vec<String>,
    /// Repetitions per case (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Time the vendor libraries (cuSOLVER, cuBLAS).
    #[arg(long)]
    vendor: bool,
    /// Time the DSL's tiled factorizations beside cuSOLVER.
    #[arg(long)]
    dsl: bool,
    /// Factorizations for --dsl: cholesky, lu.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("cholesky"), String::from("lu")])]
    algorithms: Vec<String>,
    /// Tile side for --dsl, per size in --sizes order (one value: every size). Default: 64 below
    /// N = 8192 and 128 from there, the faster side on the H100 at each size
    /// (bench/results/large-tiles-h100/linalg-ab.txt).
    #[arg(long, value_delimiter = ',')]
    bs: Vec<usize>,
    /// DSL variants: BACKEND[/POLICY][@THREADS][%PER_SM][!SMS][+plan|+costs|+fresh|+stream][:checked],
    /// e.g. persistent/static, persistent/static@256, barrier:checked; +plan times a Plan made
    /// once, +costs one made with the task costs of a traced call before it (static policy; the
    /// traced call's wall time counts in the first call's), +fresh a region.run that inspects
    /// every call (the runtime's plan cache off for it), +stream one that also streams its tasks
    /// to the running kernel while its body records them; %2 puts two SM-aware workers on each
    /// SM, and !1 (static policy) runs the critical path alone on one SM.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("persistent/static"), String::from("persistent/grr"), String::from("barrier"), String::from("persistent/static:checked")])]
    variants: Vec<String>,
    /// Shared scratch per block for the tile operations (bytes; default: each example's own,
    /// `cholesky::SHARED_BYTES` and `lu::SHARED_BYTES`).
    #[arg(long)]
    shared_bytes: Option<u32>,
    /// Tile sides for the batched GEMM, each with as many tiles as make 2^28 bytes of f64.
    #[arg(long, value_delimiter = ',', default_values_t = [64usize, 128, 256])]
    tiles: Vec<usize>,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A deterministic pseudo-random value in `[-0.5, 0.5)` for element `e` of matrix `seed`.
fn noise(seed: u64, e: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(e as u64)
        .wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// A symmetric positive definite `n × n` matrix with weight off the diagonal: random symmetric
/// entries plus `n/4` on the diagonal (so that the off-diagonal half of every row sums to about
/// half the diagonal).
fn spd<T: Real>(n: usize, seed: u64) -> Vec<T> {
    let mut a = vec![T::default(); n * n];
    for c in 0..n {
        for r in c..n {
            let v = noise(seed, r * n + c) + if r == c { n as f64 / 4.0 } else { 0.0 };
            a[c * n + r] = T::of(v);
            a[r * n + c] = T::of(v);
        }
    }
    a
}

/// A non-symmetric `n × n` matrix that LU factors stably without pivoting: random entries plus
/// `n/4` on the diagonal.
fn dominant<T: Real>(n: usize, seed: u64) -> Vec<T> {
    (0..n * n)
        .map(|e| T::of(noise(seed, e) + if e % n == e / n { n as f64 / 4.0 } else { 0.0 }))
        .collect()
}

fn tflops(flops: f64, time: Duration) -> f64 {
    flops / time.as_secs_f64() / 1e12
}

/// Times one vendor factorization `reps` times on fresh copies of `a`; returns the median times
/// and the relative residual of the last result.
fn factor<T: Real>(
    vendor: &Vendor,
    a: &[T],
    n: usize,
    reps: usize,
    cholesky: bool,
) -> Result<(Timed, f64), Box<dyn std::error::Error>>
where
    taskweave::gpu::cudarc::cublas::CudaBlas: taskweave::gpu::cudarc::cublas::Gemm<T>,
{
    let stream = vendor.stream();
    let pristine = stream.clone_htod(a)?;
    let mut work = stream.alloc_zeros::<T>(n * n)?;
    let (mut kernel, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..reps + 1 {
        stream.memcpy_dtod(&pristine, &mut work)?;
        stream.synchronize()?;
        let t = if cholesky {
            vendor.potrf(&mut work, n)?
        } else {
            vendor.getrf_nopiv(&mut work, n)?
        };
        kernel.push(t.kernel);
        wall.push(t.wall);
    }
    // The first run loads the libraries' kernels: not counted.
    kernel.remove(0);
    wall.remove(0);
    let result = stream.clone_dtoh(&work)?;
    let residual = if cholesky {
        vendor.cholesky_residual(a, &result, n)?
    } else {
        vendor.lu_residual(a, &result, n)?
    };
    Ok((
        Timed {
            kernel: median(kernel),
            wall: median(wall),
        },
        residual,
    ))
}

/// The residual bound for an `n × n` factorization in `T`: `c · n · ε` with room for the
/// residual's own product.
fn bound<T: Real>(n: usize) -> f64 {
    let eps = if T::NAME == "f64" {
        f64::EPSILON
    } else {
        f64::from(f32::EPSILON)
    };
    8.0 * n as f64 * eps
}

fn vendor_factorizations<T: Real>(
    vendor: &Vendor,
    sizes: &[usize],
    reps: usize,
) -> Result<bool, Box<dyn std::error::Error>>
where
    taskweave::gpu::cudarc::cublas::CudaBlas: taskweave::gpu::cudarc::cublas::Gemm<T>,
{
    let mut ok = true;
    for &n in sizes {
        for cholesky in [true, false] {
            let (name, a, flops) = if cholesky {
                ("potrf", spd::<T>(n, n as u64), (n as f64).powi(3) / 3.0)
            } else {
                (
                    "getrf-nopiv",
                    dominant::<T>(n, n as u64),
                    2.0 * (n as f64).powi(3) / 3.0,
                )
            };
            let (t, residual) = factor(vendor, &a, n, reps, cholesky)?;
            let pass = residual <= bound::<T>(n);
            ok &= pass;
            println!(
                "| cuSOLVER {}{name} | {n} | {:.3} | {:.3} | {:.2} | {residual:.2e} | {} |",
                T::NAME,
                t.kernel.as_secs_f64() * 1e3,
                t.wall.as_secs_f64() * 1e3,
                tflops(flops, t.kernel),
                if pass { "pass" } else { "FAIL" }
            );
        }
    }
    Ok(ok)
}

fn vendor_gemm<T: Real>(
    vendor: &Vendor,
    tiles: &[usize],
    reps: usize,
) -> Result<bool, Box<dyn std::error::Error>>
where
    taskweave::gpu::cudarc::cublas::CudaBlas: taskweave::gpu::cudarc::cublas::Gemm<T>,
{
    let mut ok = true;
    // β = 0 is cuBLAS's best case; β = 1 (C += A·B) is what a factorization's trailing update
    // and the tile library's GEMM do, and reads C besides.
    for &m in tiles {
        for beta in [0.0, 1.0] {
            ok &= vendor_gemm_case::<T>(vendor, m, beta, reps)?;
        }
    }
    Ok(ok)
}

/// One row of [`vendor_gemm`]: `m`-tiles at `beta`, checked on the first tile against a host
/// product (at β = 1 the `reps + 1` runs accumulate it that many times into a zero C).
fn vendor_gemm_case<T: Real>(
    vendor: &Vendor,
    m: usize,
    beta: f64,
    reps: usize,
) -> Result<bool, Box<dyn std::error::Error>>
where
    taskweave::gpu::cudarc::cublas::CudaBlas: taskweave::gpu::cudarc::cublas::Gemm<T>,
{
    let stream = vendor.stream();
    let batch = (1usize << 28) / (8 * m * m);
    let len = batch * m * m;
    let a: Vec<T> = (0..len).map(|e| T::of(noise(1, e))).collect();
    let b: Vec<T> = (0..len).map(|e| T::of(noise(2, e))).collect();
    let (da, db) = (stream.clone_htod(&a)?, stream.clone_htod(&b)?);
    let mut dc = stream.alloc_zeros::<T>(len)?;
    let (mut kernel, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..reps + 1 {
        let t = vendor.gemm_strided_batched(m, batch, &da, &db, &mut dc, T::of(beta))?;
        kernel.push(t.kernel);
        wall.push(t.wall);
    }
    kernel.remove(0);
    wall.remove(0);
    let runs = if beta == 0.0 { 1.0 } else { (reps + 1) as f64 };
    // The first tile against a host product (column-major).
    let c = stream.clone_dtoh(&dc)?;
    let mut err = 0.0f64;
    let mut scale = 0.0f64;
    for j in 0..m {
        for i in 0..m {
            let exact: f64 = (0..m)
                .map(|k| a[k * m + i].to_f64() * b[j * m + k].to_f64())
                .sum::<f64>()
                * runs;
            err = err.max((c[j * m + i].to_f64() - exact).abs());
            scale = scale.max(exact.abs());
        }
    }
    let rel = err / scale.max(f64::MIN_POSITIVE);
    let pass = rel <= bound::<T>(m) * runs;
    let (kernel, wall) = (median(kernel), median(wall));
    println!(
        "| cuBLAS {}gemm batched {m}³ × {batch}, β = {beta} | {m} | {:.3} | {:.3} | {:.2} | {rel:.2e} | {} |",
        T::NAME,
        kernel.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3,
        tflops(2.0 * (m as f64).powi(3) * batch as f64, kernel),
        if pass { "pass" } else { "FAIL" }
    );
    Ok(pass)
}

/// The DSL beside cuSOLVER on every case of one element type; `false` when a check failed.
fn dsl<T: Scalar>(
    runtime: &Runtime,
    vendor: &Vendor,
    cli: &Cli,
    variants: &[Variant],
) -> Result<bool, Box<dyn std::error::Error>>
where
    taskweave::gpu::cudarc::cublas::CudaBlas: taskweave::gpu::cudarc::cublas::Gemm<T>,
{
    let mut ok = true;
    // Where each DSL row's host time went, printed after its table.
    let mut phases = Vec::new();
    for which in &cli.algorithms {
        let which: Which = which.parse()?;
        for (i, &n) in cli.sizes.iter().enumerate() {
            let bs = match cli.bs.get(i).or(cli.bs.last()) {
                Some(&bs) => bs,
                None if n >= 8192 => 128,
                None => 64,
            };
            if n % bs != 0 {
                return Err(format!("--bs {bs} does not divide n = {n}").into());
            }
            let case = Case {
                which,
                nb: n / bs,
                bs,
            };
            let a: Vec<T> = case.matrix();
            let cols = linalg::column_major(&a, case.nb, case.bs);
            let (v, factor) = linalg::vendor_case(vendor, &case, &cols, cli.reps)?;
            let ms = |d: Duration| d.as_secs_f64() * 1e3;
            let flops = case.flops();
            println!(
                "| {} {} | {n} | cuSOLVER | | {:.3} | {:.3} | {:.2} | 1.00 | 1.00 | | |",
                which.name(),
                T::NAME,
                ms(v.wall),
                ms(v.kernel),
                tflops(flops, v.kernel),
            );
            for variant in variants {
                let t = linalg::dsl_case(
                    runtime,
                    &case,
                    variant,
                    cli.shared_bytes.unwrap_or(which.shared_bytes()),
                    &a,
                    &factor,
                    cli.reps,
                )?;
                let close =
                    t.vs_vendor <= 1000.0 * n as f64 * <T as taskweave::tile::Element>::EPSILON;
                let pass = t.check.passed() && close;
                ok &= pass;
                println!(
                    "| {} {} | {n} | {} (bs {bs}) | {:.3} | {:.3} | {:.3} | {:.2} | {:.2} | {:.2} | {} | {:.1e}{} |",
                    which.name(),
                    T::NAME,
                    variant.label(),
                    ms(t.first_wall),
                    ms(t.wall),
                    ms(t.execute),
                    tflops(flops, t.execute),
                    v.kernel.as_secs_f64() / t.execute.as_secs_f64(),
                    v.wall.as_secs_f64() / t.wall.as_secs_f64(),
                    t.check,
                    t.vs_vendor,
                    if close { "" } else { " FAIL" },
                );
                for (call, wall, execute, p) in [
                    ("first", t.first_wall, t.first_execute, t.first_phases),
                    ("later", t.wall, t.execute, t.phases),
                ] {
                    let cells: Vec<String> = p
                        .named()
                        .iter()
                        .map(|(_, d)| format!("{:.3}", ms(*d)))
                        .collect();
                    phases.push(format!(
                        "| {} {} | {n} | {} | {call} | {:.3} | {:.3} | {:.3} | {} |",
                        which.name(),
                        T::NAME,
                        variant.label(),
                        ms(wall),
                        ms(execute),
                        ms(wall.saturating_sub(execute)),
                        cells.join(" | "),
                    ));
                }
            }
        }
    }
    if !phases.is_empty() {
        println!(
            "\n# Where the host time went, ms: the first call, and each phase's median over the \
             later calls (a `+fresh` variant inspects on every call; a planned one only on its first)"
        );
        println!(
            "| case | n | variant | call | wall | execute | beyond | record | edges | load | plan | tables | upload | launch | wait | download |"
        );
        println!("|{}", "---|".repeat(16));
        for line in phases {
            println!("{line}");
        }
        println!();
    }
    Ok(ok)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if !cli.vendor && !cli.dsl {
        return Err("nothing to run: pass --vendor and/or --dsl".into());
    }
    let runtime = Runtime::gpu(0)?;
    let gpu = runtime.gpu_device().expect("a GPU runtime has a GPU");
    println!(
        "# {} ({} SMs); median of {} runs",
        gpu.name(),
        gpu.sm_count(),
        cli.reps
    );
    let vendor = Vendor::new(gpu.stream().clone())?;
    let mut ok = true;
    if cli.dsl {
        let variants = cli
            .variants
            .iter()
            .map(|v| v.parse::<Variant>())
            .collect::<Result<Vec<_>, _>>()?;
        println!(
            "| case | N | how | first call wall ms | wall ms | execute ms | TFLOP/s | vs cuSOLVER (execute) | vs cuSOLVER (wall) | residual probe | vs cuSOLVER's factor |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for precision in &cli.precisions {
            ok &= match precision.as_str() {
                "f64" => dsl::<f64>(&runtime, &vendor, &cli, &variants)?,
                "f32" => dsl::<f32>(&runtime, &vendor, &cli, &variants)?,
                other => {
                    return Err(format!("unknown precision `{other}`: expected f64 or f32").into());
                }
            };
        }
    }
    if !cli.vendor {
        return if ok {
            Ok(())
        } else {
            Err("a result failed its check".into())
        };
    }
    println!("| case | N | kernel ms | wall ms | TFLOP/s | residual | check |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for precision in &cli.precisions {
        ok &= match precision.as_str() {
            "f64" => {
                vendor_factorizations::<f64>(&vendor, &cli.sizes, cli.reps)?
                    & vendor_gemm::<f64>(&vendor, &cli.tiles, cli.reps)?
            }
            "f32" => {
                vendor_factorizations::<f32>(&vendor, &cli.sizes, cli.reps)?
                    & vendor_gemm::<f32>(&vendor, &cli.tiles, cli.reps)?
            }
            other => return Err(format!("unknown precision `{other}`: expected f64 or f32").into()),
        };
    }
    if !ok {
        return Err("a result failed its check".into());
    }
    Ok(())
}
