//! What the `cholesky` and `lu` programs share: the options, the timed runs (on host slices, or
//! on arrays uploaded once as a library call is timed), and the checks.

use std::time::Instant;

use clap::{Args, ValueEnum};
use taskweave::tile::Element;
use taskweave::{DeviceArray, Region, Runtime, TaskCosts};
use taskweave_kernels::matrix::host::{self, Check, check_cholesky, check_lu, lu_friendly, spd};
use taskweave_kernels::{cholesky, lu};

use crate::RunArgs;
use crate::bench::median;

/// The element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Prec {
    /// Double precision.
    F64,
    /// Single precision (exact f32 arithmetic on the FMA pipes).
    F32,
}

/// The options of a tiled factorization.
#[derive(Args, Clone, Debug)]
pub struct FactorArgs {
    /// Tiles per side.
    #[arg(long, default_value_t = 32)]
    pub nb: usize,
    /// Tile side: a multiple of 16 from 16 to 256.
    #[arg(long, default_value_t = 64)]
    pub bs: usize,
    /// Element type.
    #[arg(long, value_enum, default_value_t = Prec::F64)]
    pub prec: Prec,
    /// Timed repetitions after one warm-up (fresh matrix each time; the last is checked).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
    /// Upload the matrix before each repetition and time the factorization alone, as a library
    /// call on device memory is timed (GPU backends; the CPU backend keeps it in host memory).
    #[arg(long)]
    pub resident: bool,
    /// Shared scratch per block for the tile operations (bytes; default: the example's own,
    /// `cholesky::SHARED_BYTES` or `lu::SHARED_BYTES`).
    #[arg(long)]
    pub shared_bytes: Option<u32>,
    /// Also compare every element with the sequential reference factorization (O(n³) on the
    /// host: for small matrices).
    #[arg(long)]
    pub reference: bool,
    /// Weigh the static policy's plan by task costs measured in a traced call made first
    /// (`Report::task_costs`, `Region::task_costs`).
    #[arg(long)]
    pub costs: bool,
}

/// Which factorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// `A = L·Lᵀ` of a symmetric positive definite matrix.
    Cholesky,
    /// `A = L·U` without pivoting.
    Lu,
}

impl Which {
    /// The shared scratch its example's tasks ask for.
    pub fn shared_bytes(self) -> u32 {
        match self {
            Self::Cholesky => cholesky::SHARED_BYTES,
            Self::Lu => lu::SHARED_BYTES,
        }
    }
}

/// The regions of one element type.
trait Tiled: Element {
    const NAME: &'static str;
    fn host(which: Which, a: &mut [Self], nb: usize, bs: usize) -> Region<'_>;
    fn resident(which: Which, a: &mut DeviceArray<Self>, nb: usize, bs: usize) -> Region<'_>;
}

impl Tiled for f64 {
    const NAME: &'static str = "f64";
    fn host(which: Which, a: &mut [f64], nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f64(a, nb, bs),
            Which::Lu => lu::lu_f64(a, nb, bs),
        }
    }
    fn resident(which: Which, a: &mut DeviceArray<f64>, nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f64(a, nb, bs),
            Which::Lu => lu::lu_f64(a, nb, bs),
        }
    }
}

impl Tiled for f32 {
    const NAME: &'static str = "f32";
    fn host(which: Which, a: &mut [f32], nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f32(a, nb, bs),
            Which::Lu => lu::lu_f32(a, nb, bs),
        }
    }
    fn resident(which: Which, a: &mut DeviceArray<f32>, nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f32(a, nb, bs),
            Which::Lu => lu::lu_f32(a, nb, bs),
        }
    }
}

/// `region` planned with `costs`, if any.
fn with_costs<'a>(region: Region<'a>, costs: &Option<TaskCosts>) -> Region<'a> {
    match costs {
        Some(costs) => region.task_costs(costs.clone()),
        None => region,
    }
}

/// Runs the factorization as the options say, prints its times, rate and checks, and fails when
/// a check fails.
pub fn run(
    which: Which,
    args: &FactorArgs,
    run: &RunArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    if !taskweave::tile::args::side_ok(args.bs) || args.nb == 0 {
        return Err("--bs must be a multiple of 16 from 16 to 256, --nb positive".into());
    }
    let runtime = run.runtime()?;
    println!("{}", runtime.describe());
    match args.prec {
        Prec::F64 => factor::<f64>(which, args, run, &runtime),
        Prec::F32 => factor::<f32>(which, args, run, &runtime),
    }
}

fn factor<T: Tiled>(
    which: Which,
    args: &FactorArgs,
    run: &RunArgs,
    runtime: &Runtime,
) -> Result<(), Box<dyn std::error::Error>> {
    let (nb, bs) = (args.nb, args.bs);
    let n = nb * bs;
    let shared_bytes = args.shared_bytes.unwrap_or(which.shared_bytes());
    let (input, flops, tasks): (Vec<T>, f64, usize) = match which {
        Which::Cholesky => (
            spd(nb, bs, 42),
            cholesky::flops(nb, bs),
            cholesky::task_count(nb),
        ),
        Which::Lu => (
            lu_friendly(nb, bs, 42),
            lu::flops(nb, bs),
            lu::task_count(nb),
        ),
    };
    println!(
        "{which:?} {}: n = {n} ({nb} x {nb} tiles of {bs}), {tasks} tasks, {} matrix, {} bytes of shared scratch",
        T::NAME,
        if args.resident { "resident" } else { "host" },
        shared_bytes
    );
    let mut a = input.clone();
    let costs = if args.costs {
        let mut dev = runtime.upload(&input)?;
        let region = T::resident(which, &mut dev, nb, bs).shared_bytes(shared_bytes);
        let costs = run.apply(region).trace(true).run(runtime)?.task_costs();
        if let Some(costs) = &costs {
            println!("task costs (a traced call): {costs}");
        }
        costs
    } else {
        None
    };
    let (mut kernel, mut wall) = (Vec::new(), Vec::new());
    for rep in 0..=args.reps {
        let (report, took) = if args.resident {
            let mut dev = runtime.upload(&input)?;
            let start = Instant::now();
            let region = T::resident(which, &mut dev, nb, bs).shared_bytes(shared_bytes);
            let report = with_costs(run.apply(region), &costs).run(runtime)?;
            let took = start.elapsed();
            a = dev.download()?;
            (report, took)
        } else {
            a.copy_from_slice(&input);
            let start = Instant::now();
            let region = T::host(which, &mut a, nb, bs).shared_bytes(shared_bytes);
            let report = with_costs(run.apply(region), &costs).run(runtime)?;
            (report, start.elapsed())
        };
        if rep == 0 {
            println!("warm-up: {report}");
            run.write_trace(&report)?;
        } else {
            kernel.push(report.execute_time.as_secs_f64());
            wall.push(took.as_secs_f64());
        }
    }
    let (t, w) = (median(&kernel), median(&wall));
    println!(
        "{which:?} {} n={n} bs={bs}: execute {:.3} ms ({:.2} TFLOP/s), wall {:.3} ms, median of {}",
        T::NAME,
        t * 1e3,
        flops / t / 1e12,
        w * 1e3,
        kernel.len()
    );
    let check: Check = match which {
        Which::Cholesky => check_cholesky(&input, &a, nb, bs),
        Which::Lu => check_lu(&input, &a, nb, bs),
    };
    println!("check (residual probe): {check}");
    let mut pass = check.passed();
    if args.reference {
        let (reference, lower): (Vec<f64>, bool) = match which {
            Which::Cholesky => (host::cholesky(&input, nb, bs), true),
            Which::Lu => (host::lu(&input, nb, bs), false),
        };
        let difference = host::relative_difference(&a, &reference, nb, bs, |r, c| !lower || r >= c);
        let bound = 1000.0 * n as f64 * T::EPSILON;
        let ok = difference <= bound;
        println!(
            "check (sequential reference): {} (largest difference {difference:.2e} of the factor's largest element, bound {bound:.2e})",
            if ok { "PASS" } else { "FAIL" }
        );
        pass &= ok;
    }
    if !pass {
        return Err(format!("{which:?} result fails its check").into());
    }
    println!("check: PASS");
    Ok(())
}
