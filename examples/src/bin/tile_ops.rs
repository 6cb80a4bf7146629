//! Times one tile operation on many independent tiles: the tile library against a batched
//! library call on the same tiles (cuBLAS's strided batched DGEMM for `--op gemm`).
//!
//! `tile_ops --op gemm --prec f64 --bs 64 --count 4096` runs 4096 independent tasks, each
//! `C[t] = A[t]·B[t] + β·C[t]` on 64 × 64 tiles, as one level of a DAG. It prints the region's
//! execution time (the kernel, median of `--reps` after one warm-up), the wall time per call
//! (host arrays, so the copies up and back are in it), the time per tile, the rate in TFLOP/s,
//! and a check of sampled tiles: GEMM against a plain f64 product within the
//! bound of a `bs`-term sum (`2(bs + 2)ε` times `|A|·|B| + |β|·|C|`, element by element); SYRK
//! likewise on its triangle; TRSM, POTRF and GETRF by their residuals (`B[t]·L⁻ᵀ·Lᵀ − B`,
//! `A − L·Lᵀ`, `A − L·U`) within `4(bs + 2)ε` times the same products in absolute values.
//!
//! The other operations run on the shapes a tiled Cholesky and LU use: SYRK `C −= A·Aᵀ` (lower),
//! TRSM `B = B·L⁻ᵀ` (right, lower, transposed), POTRF (lower) and GETRF (no pivoting).

use clap::{Parser, ValueEnum};
use taskweave::tile::reference::{self, Matrix};
use taskweave::tile::{Diag, Element, Op, Rect, Side, Uplo};
use taskweave::{Region, Runtime};
use taskweave_examples::RunArgs;
use taskweave_examples::bench::median;
use taskweave_kernels::batch;
use taskweave_kernels::matrix::host::{Stream, lu_friendly, spd};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OpArg {
    /// `C = A·B + β·C`.
    Gemm,
    /// `C −= A·Aᵀ` on the lower triangle.
    Syrk,
    /// `B = B·L⁻ᵀ`.
    Trsm,
    /// `A = L·Lᵀ`.
    Potrf,
    /// `A = L·U`, no pivoting.
    Getrf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Prec {
    F64,
    F32,
}

/// The warp-level instruction shape of the GEMM (see `taskweave::tile::shapes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ShapeArg {
    /// The element type's default (`taskweave::tile::Tiled`): f64 on `m16n8k8` with 16-deep
    /// chunks (sm_90), in a region fitted at 255 registers; f32 exact on FMAs.
    Default,
    /// f64 on two `m8n8k4` (sm_80's shape, half rate on the H100).
    M8n8k4,
    /// f64 on sm_90's `m16n8k4`.
    M16n8k4,
    /// f64 on sm_90's `m16n8k8` with 8-deep chunks, in a GEMM-only region capped at 168
    /// registers (three workers per SM), the fastest 64-tile batch measured.
    M16n8k8,
    /// f64 on sm_90's `m16n8k16`.
    M16n8k16,
    /// f64 on `m16n8k8` with 16-deep staged chunks (the f64 default on sm_90, as a shape of its
    /// own), in the same region as the default.
    Kc16,
    /// f64 on `m16n8k8` with `64 × 32` warp tiles (64 accumulators a lane).
    Wide,
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
    /// Instruction shape of the GEMM (`--op gemm` only).
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
    /// Share each f64 GEMM (default shape) among a gang of this many blocks (1, 2, 4, 8 or 16:
    /// wide tasks, in a region of their own); 0 runs the one-block region.
    #[arg(long, default_value_t = 0)]
    gang: u32,
    /// Tiles checked, spread over the batch.
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
    let f64_shape = !matches!(cli.shape, ShapeArg::Tf32);
    let fits = match cli.prec {
        Prec::F64 => f64_shape,
        Prec::F32 => matches!(cli.shape, ShapeArg::Default | ShapeArg::Tf32),
    };
    if !fits || (cli.op != OpArg::Gemm && cli.shape != ShapeArg::Default) {
        return Err("--shape tf32 goes with --prec f32 and the m*n8k* shapes with --prec f64, both with --op gemm only".into());
    }
    let default_gemm =
        cli.op == OpArg::Gemm && cli.prec == Prec::F64 && cli.shape == ShapeArg::Default;
    if cli.gang > 0 && (!default_gemm || ![1, 2, 4, 8, 16].contains(&cli.gang)) {
        return Err("--gang takes 1, 2, 4, 8 or 16, with the f64 GEMM on the default shape".into());
    }
    let runtime = cli.run.runtime()?;
    println!("{}", runtime.describe());
    match cli.prec {
        Prec::F64 => measure::<f64>(&cli, &runtime),
        Prec::F32 => measure::<f32>(&cli, &runtime),
    }
}

/// An element type the batch regions come in.
trait Batched: Element {
    const NAME: &'static str;
    #[allow(clippy::too_many_arguments)]
    fn region<'a>(
        c: &'a mut [Self],
        a: &'a [Self],
        b: &'a [Self],
        beta: Self,
        op: u32,
        count: usize,
        bs: usize,
        gang: u32,
    ) -> Region<'a>;
}

impl Batched for f64 {
    const NAME: &'static str = "f64";
    fn region<'a>(
        c: &'a mut [f64],
        a: &'a [f64],
        b: &'a [f64],
        beta: f64,
        op: u32,
        count: usize,
        bs: usize,
        gang: u32,
    ) -> Region<'a> {
        if op == batch::op::GEMM && gang > 0 {
            batch::batch_gemm_gang_f64(c, a, b, beta, count, bs, gang)
        } else if op == batch::op::GEMM_M16N8K8 {
            batch::batch_gemm_f64(c, a, b, beta, count, bs)
        } else if batch::op::is_gemm(op) {
            batch::batch_shapes_f64(c, a, b, beta, op, count, bs)
        } else {
            batch::batch_f64(c, a, op, count, bs)
        }
    }
}

impl Batched for f32 {
    const NAME: &'static str = "f32";
    fn region<'a>(
        c: &'a mut [f32],
        a: &'a [f32],
        b: &'a [f32],
        beta: f32,
        op: u32,
        count: usize,
        bs: usize,
        gang: u32,
    ) -> Region<'a> {
        let _ = gang;
        if batch::op::is_gemm(op) {
            batch::batch_gemm_f32(c, a, b, beta, op, count, bs)
        } else {
            batch::batch_f32(c, a, op, count, bs)
        }
    }
}

/// The batch operation of the options.
fn operation(cli: &Cli) -> u32 {
    use batch::op;
    match (cli.op, cli.shape) {
        (OpArg::Gemm, ShapeArg::M8n8k4) => op::GEMM_M8N8K4,
        (OpArg::Gemm, ShapeArg::M16n8k4) => op::GEMM_M16N8K4,
        (OpArg::Gemm, ShapeArg::M16n8k16) => op::GEMM_M16N8K16,
        (OpArg::Gemm, ShapeArg::Kc16) => op::GEMM_KC16,
        (OpArg::Gemm, ShapeArg::Wide) => op::GEMM_WIDE,
        (OpArg::Gemm, ShapeArg::Tf32) => op::GEMM_TF32,
        (OpArg::Gemm, ShapeArg::M16n8k8) => op::GEMM_M16N8K8,
        (OpArg::Gemm, ShapeArg::Default) => op::GEMM,
        (OpArg::Syrk, _) => op::SYRK,
        (OpArg::Trsm, _) => op::TRSM,
        (OpArg::Potrf, _) => op::POTRF,
        (OpArg::Getrf, _) => op::GETRF,
    }
}

/// The `count` tiles `tile(t)`, one after the other.
fn tiles<T: Element>(count: usize, tile: impl Fn(usize) -> Vec<T>) -> Vec<T> {
    (0..count).flat_map(tile).collect()
}

fn random<T: Element>(bs: usize, seed: u64) -> Vec<T> {
    let mut s = Stream::new(seed);
    (0..bs * bs).map(|_| T::from_f64(s.value())).collect()
}

/// A lower triangle with a diagonal of `±[2, 3]` and the rest in `[-1, 1]` (zero above).
fn lower<T: Element>(bs: usize, seed: u64) -> Vec<T> {
    let mut s = Stream::new(seed);
    (0..bs * bs)
        .map(|e| {
            let (r, c, v) = (e / bs, e % bs, s.value());
            T::from_f64(match r.cmp(&c) {
                std::cmp::Ordering::Equal => v.signum() * (2.0 + v.abs()),
                std::cmp::Ordering::Greater => v,
                std::cmp::Ordering::Less => 0.0,
            })
        })
        .collect()
}

/// Tile `t` of a batch as a reference matrix: its values now, and what it was made with.
fn tile_of<T: Element>(now: &[T], made: &[T], t: usize, bs: usize) -> Matrix<T> {
    let at = t * bs * bs..(t + 1) * bs * bs;
    Matrix {
        data: now[at.clone()].to_vec(),
        rect: Rect::square(0, bs),
        before: made[at].to_vec(),
    }
}

/// The largest `|residual| / scale` over a tile.
fn worst(residual: &[f64], scale: &[f64]) -> f64 {
    residual
        .iter()
        .zip(scale)
        .map(|(r, s)| if *s == 0.0 { r.abs() } else { r.abs() / s })
        .fold(0.0, |w, e| {
            if e.is_nan() || w.is_nan() {
                f64::NAN
            } else {
                w.max(e)
            }
        })
}

fn measure<T: Batched>(cli: &Cli, runtime: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
    let (bs, count) = (cli.bs, cli.count);
    let seed = |t: usize| 1000 + t as u64;
    // Inputs, the output's first contents, and the region over them.
    let (a, b): (Vec<T>, Vec<T>) = match cli.op {
        OpArg::Gemm | OpArg::Syrk => (
            tiles(count, |t| random(bs, seed(t))),
            tiles(count, |t| random(bs, seed(t) + (1 << 20))),
        ),
        OpArg::Trsm => (tiles(count, |t| lower(bs, seed(t))), Vec::new()),
        OpArg::Potrf | OpArg::Getrf => (Vec::new(), Vec::new()),
    };
    let made: Vec<T> = match cli.op {
        OpArg::Potrf => tiles(count, |t| spd(1, bs, seed(t))),
        OpArg::Getrf => tiles(count, |t| lu_friendly(1, bs, seed(t))),
        _ => tiles(count, |t| random(bs, seed(t) + (2 << 20))),
    };
    let flops = count as f64
        * (bs as f64).powi(3)
        * match cli.op {
            OpArg::Gemm => 2.0,
            OpArg::Syrk | OpArg::Trsm => 1.0,
            OpArg::Potrf => 1.0 / 3.0,
            OpArg::Getrf => 2.0 / 3.0,
        };
    println!(
        "{count} independent {bs}x{bs} {} {:?} tasks{}{}, {} threads per block, {} bytes of shared scratch",
        T::NAME,
        cli.op,
        if cli.gang > 0 {
            format!(", each on a gang of {} blocks", cli.gang)
        } else {
            String::new()
        },
        if cli.op == OpArg::Gemm {
            format!(" ({:?} shape, C = A·B + {}·C)", cli.shape, cli.beta)
        } else {
            String::new()
        },
        cli.run.threads,
        cli.shared_bytes
    );
    let beta = T::from_f64(cli.beta);
    let mut out = made.clone();
    let mut times = Vec::with_capacity(cli.reps);
    let mut walls = Vec::with_capacity(cli.reps);
    for rep in 0..=cli.reps {
        out.copy_from_slice(&made);
        let region = T::region(&mut out, &a, &b, beta, operation(cli), count, bs, cli.gang);
        let report = cli
            .run
            .apply(region.shared_bytes(cli.shared_bytes))
            .run(runtime)?;
        if rep == 0 {
            println!("warm-up: {report}");
        } else {
            times.push(report.execute_time.as_secs_f64());
            walls.push(report.wall_time.as_secs_f64());
        }
        // The last call's trace, when `--trace` asks for one.
        if rep == cli.reps {
            cli.run.write_trace(&report)?;
        }
    }
    let t = median(&times);
    println!(
        "{:?} {} bs={bs} count={count}: {:.3} ms median of {} (min {:.3}, max {:.3}), {:.1} ns per tile, {:.2} TFLOP/s",
        cli.op,
        T::NAME,
        t * 1e3,
        times.len(),
        times.iter().copied().fold(f64::INFINITY, f64::min) * 1e3,
        times.iter().copied().fold(0.0, f64::max) * 1e3,
        t / count as f64 * 1e9,
        flops / t / 1e12
    );
    println!(
        "wall per call: {:.3} ms median (host arrays: the copies up and back included)",
        median(&walls) * 1e3
    );

    // Checks, on tiles spread over the batch.
    let checked = cli.check_tiles.clamp(1, count);
    let sample = |s: usize| {
        if checked == 1 {
            0
        } else {
            s * (count - 1) / (checked - 1)
        }
    };
    let (mut error, mut gamma) = (0.0f64, 4.0 * (bs as f64 + 2.0) * T::EPSILON);
    for s in 0..checked {
        let t = sample(s);
        let c = tile_of(&out, &made, t, bs);
        let e = match cli.op {
            OpArg::Gemm | OpArg::Syrk => {
                let (x, y) = (tile_of(&a, &a, t, bs), tile_of(&b, &b, t, bs));
                let (want, scale) = if cli.op == OpArg::Gemm {
                    (
                        reference::gemm(&c, &x, Op::N, &y, Op::N, 1.0, cli.beta),
                        reference::gemm_bound(&c, &x, Op::N, &y, Op::N, 1.0, cli.beta),
                    )
                } else {
                    reference::syrk(Uplo::Lower, Op::N, &c, &x, -1.0, 1.0)
                };
                let got = (0..bs * bs).map(|e| c.get(e / bs, e % bs));
                let residual: Vec<f64> = got.zip(&want).map(|(g, w)| g - w).collect();
                // A sum of `bs` products: 2(bs + 2)ε, with TF32's operand rounding on top.
                let tf32 = if cli.shape == ShapeArg::Tf32 {
                    8192.0
                } else {
                    1.0
                };
                gamma = 2.0 * (bs as f64 + 2.0) * T::EPSILON * tf32;
                worst(&residual, &scale)
            }
            OpArg::Trsm => {
                let l = tile_of(&a, &a, t, bs);
                let (r, s) = reference::trsm_residual(
                    Side::Right,
                    Uplo::Lower,
                    Op::T,
                    Diag::NonUnit,
                    1.0,
                    &l,
                    &c,
                );
                worst(&r, &s)
            }
            OpArg::Potrf => {
                let (r, s) = reference::potrf_residual(&c);
                worst(&r, &s)
            }
            OpArg::Getrf => {
                let (r, s) = reference::getrf_residual(&c);
                worst(&r, &s)
            }
        };
        error = if e.is_nan() || error.is_nan() {
            f64::NAN
        } else {
            error.max(e)
        };
    }
    let pass = error.is_finite() && error <= gamma;
    println!(
        "check: {} ({checked} tiles, worst error {error:.2e} of the element's scale, bound {gamma:.2e})",
        if pass { "PASS" } else { "FAIL" },
    );
    if !pass {
        return Err("the tiles differ from the reference".into());
    }
    Ok(())
}
