//! The example workloads behind one interface, so that the `workload` program runs any one of them
//! and the `bench` harness runs all of them on every backend and policy.
//!
//! A workload owns its input, its output and its sequential reference. [`Workload::run`] runs the
//! region once from fresh input; [`Workload::verify`] compares the output of the last run with the
//! reference: exactly for integer dynamic programming, within a stated relative-error bound for
//! floating point.

use taskweave::inspect::Inspection;
use taskweave::{Report, Runtime};

use crate::RunArgs;

mod align;
mod grids;
mod lud;
mod stencil;

pub use align::{Dtw, DtwParams, Nw, NwParams, SmithWaterman, SmwParams};
pub use grids::{IntHist, IntHistParams, Sat, SatParams};
pub use lud::{BOUND as LUD_BOUND, Lud, LudParams, factor_error};
pub use stencil::{ALPHA, BOUND as STENCIL_BOUND, Heat, HeatParams, Jacobi, JacobiParams};

/// The outcome of comparing a run's output with the sequential reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Bit-for-bit equal (integer workloads).
    Exact,
    /// A floating-point result within its bound: `error <= bound`.
    Within {
        /// The measured error (as the workload documents it).
        error: f64,
        /// The bound it was checked against.
        bound: f64,
    },
    /// A mismatch, with what differs (first differing element, or the error and its bound).
    Mismatch(String),
}

impl Verdict {
    /// `true` unless the output differs from the reference.
    pub fn passed(&self) -> bool {
        !matches!(self, Verdict::Mismatch(_))
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Exact => f.write_str("PASS (exact)"),
            Verdict::Within { error, bound } => {
                write!(f, "PASS (error {error:.1e} <= {bound:.0e})")
            }
            Verdict::Mismatch(what) => write!(f, "FAIL: {what}"),
        }
    }
}

/// One example workload at one size.
pub trait Workload {
    /// The name in Juggler's Table 1 (`"LU-D"`, `"SM-W"`, …), or `"NW"`.
    fn name(&self) -> &'static str;

    /// The size, for tables: for example `"2304x2304 cells, tiles of 32"`.
    fn size(&self) -> String;

    /// The number of tasks one run spawns.
    fn tasks(&self) -> usize;

    /// Resets the input and output and builds the region over them, not yet run.
    fn fresh(&mut self) -> taskweave::Region<'_>;

    /// Resets the input and runs the region once with `args`' options on `runtime`.
    fn run(&mut self, runtime: &Runtime, args: &RunArgs) -> Result<Report, taskweave::Error> {
        args.apply(self.fresh()).run(runtime)
    }

    /// Resets the input and records the region's DAG without running it.
    fn inspect(&mut self) -> Result<Inspection, taskweave::Error> {
        self.fresh().inspect()
    }

    /// Compares the output of the last [`run`](Workload::run) with the sequential reference.
    fn verify(&self) -> Verdict;
}

/// Every workload at its default size: Juggler's seven at the sizes that give Table 1's task
/// counts, then NW. Inputs are made on first use, so this is cheap.
pub fn all() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(Dtw::new(&DtwParams::default()).expect("default size")),
        Box::new(Heat::new(&HeatParams::default()).expect("default size")),
        Box::new(IntHist::new(&IntHistParams::default()).expect("default size")),
        Box::new(Jacobi::new(&JacobiParams::default()).expect("default size")),
        Box::new(Lud::new(&LudParams::default()).expect("default size")),
        Box::new(Sat::new(&SatParams::default()).expect("default size")),
        Box::new(SmithWaterman::new(&SmwParams::default()).expect("default size")),
        Box::new(Nw::new(&NwParams::default()).expect("default size")),
    ]
}

/// Every workload at a small size, for the tests: tile sides that are not powers of two, a
/// histogram with more bins than one shared-memory pass holds, and one with fewer, so that the
/// CPU backend runs each in well under a second and still meets every path of its kernels.
pub fn small() -> Vec<Box<dyn Workload>> {
    const SMALL: &str = "a valid small size";
    vec![
        Box::new(Dtw::new(&DtwParams { n: 60, tile: 12 }).expect(SMALL)),
        Box::new(
            Heat::new(&HeatParams {
                n: 40,
                tile: 10,
                steps: 3,
            })
            .expect(SMALL),
        ),
        Box::new(
            IntHist::new(&IntHistParams {
                n: 24,
                tile: 8,
                bins: 16,
            })
            .expect(SMALL),
        ),
        Box::new(
            IntHist::new(&IntHistParams {
                n: 64,
                tile: 32,
                bins: 9,
            })
            .expect(SMALL),
        ),
        Box::new(
            Jacobi::new(&JacobiParams {
                n: 48,
                tile: 12,
                steps: 3,
            })
            .expect(SMALL),
        ),
        Box::new(Lud::new(&LudParams { nb: 4, tile: 8 }).expect(SMALL)),
        Box::new(Sat::new(&SatParams { n: 60, tile: 12 }).expect(SMALL)),
        Box::new(SmithWaterman::new(&SmwParams { n: 96, tile: 16 }).expect(SMALL)),
        Box::new(Nw::new(&NwParams { n: 50, tile: 10 }).expect(SMALL)),
    ]
}

/// A DAG's shape: its number of levels (the critical path) and the fewest and most tasks on one
/// level, Table 1's "Δ parallelism".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Levels (tasks on the longest dependence chain).
    pub levels: usize,
    /// Tasks on the narrowest level.
    pub min_width: usize,
    /// Tasks on the widest level.
    pub max_width: usize,
}

impl Shape {
    /// The shape of an inspected region's DAG.
    pub fn of(inspection: &Inspection) -> Self {
        let levels = inspection.dag.levels();
        let depth = levels.iter().map(|&l| l as usize + 1).max().unwrap_or(0);
        let mut width = vec![0usize; depth];
        for l in levels {
            width[l as usize] += 1;
        }
        Self {
            levels: depth,
            min_width: width.iter().copied().min().unwrap_or(0),
            max_width: width.iter().copied().max().unwrap_or(0),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} levels, {}-{} tasks per level",
            self.levels, self.min_width, self.max_width
        )
    }
}

/// The parsed defaults of a `clap::Args` struct: how every params struct implements `Default`,
/// so that the command line's defaults and `Default` cannot drift apart.
pub fn defaults<P: clap::Args + clap::FromArgMatches>() -> P {
    let command = P::augment_args(clap::Command::new("defaults"));
    P::from_arg_matches(&command.get_matches_from(["defaults"]))
        .expect("every option has a default")
}

/// Checks `n` cells per side in tiles of `tile` (at most `max`): the number of tiles per side.
fn tiles(n: usize, tile: usize, max: usize) -> Result<usize, String> {
    if tile == 0 || tile > max {
        return Err(format!("--tile must be in 1..={max}, not {tile}"));
    }
    if n == 0 || !n.is_multiple_of(tile) {
        return Err(format!(
            "--n must be a positive multiple of --tile ({tile}), not {n}"
        ));
    }
    Ok(n / tile)
}

/// The verdict of an exact comparison of a tile-major output, first difference named.
fn exact(first: Option<(usize, usize, String, String)>, what: &str) -> Verdict {
    match first {
        None => Verdict::Exact,
        Some((r, c, got, want)) => {
            Verdict::Mismatch(format!("{what} ({r}, {c}) is {got}, expected {want}"))
        }
    }
}

/// The verdict on a floating-point output with error `error` against `bound`.
fn within(error: f64, bound: f64) -> Verdict {
    if error <= bound {
        Verdict::Within { error, bound }
    } else {
        Verdict::Mismatch(format!("error {error:.3e} exceeds {bound:.0e} (or is NaN)"))
    }
}

/// The first element where row-major `got` and `want` (`n` wide, `depth` values per cell) differ.
fn first_difference<T: PartialEq + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    n: usize,
    depth: usize,
) -> Option<(usize, usize, String, String)> {
    if got.len() != want.len() {
        return Some((
            0,
            0,
            format!("{} values", got.len()),
            format!("{}", want.len()),
        ));
    }
    got.iter().zip(want).position(|(a, b)| a != b).map(|e| {
        let cell = e / depth;
        (
            cell / n,
            cell % n,
            format!("{:?}", got[e]),
            format!("{:?}", want[e]),
        )
    })
}
