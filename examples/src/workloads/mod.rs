//! The example workloads behind one interface, so that the `workload` program runs any one of them
//! and the `bench` harness runs all of them on every backend and policy.
//!
//! A workload owns its input, its output and its sequential reference. [`Workload::run`] runs the
//! region once from fresh input; [`Workload::verify`] compares the output of the last run with the
//! reference: exactly for integer dynamic programming, within a stated relative-error bound for
//! floating point.

use taskweave::{Report, Runtime};

use crate::RunArgs;

/// The outcome of comparing a run's output with the sequential reference.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Bit-for-bit equal (integer workloads).
    Exact,
    /// A floating-point result within its bound: `error <= bound`.
    Within {
        /// The measured relative error (a norm the workload documents).
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
                write!(f, "PASS (rel. error {error:.1e} <= {bound:.0e})")
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

    /// Resets the input and runs the region once with `args`' options on `runtime`.
    fn run(&mut self, runtime: &Runtime, args: &RunArgs) -> Result<Report, taskweave::Error>;

    /// Compares the output of the last [`run`](Workload::run) with the sequential reference.
    fn verify(&self) -> Verdict;
}
