//! The `linalg` benchmark: tiled Cholesky and LU in the DSL against cuSOLVER, on the same
//! matrices, in one process.
//!
//! 1. [`Case::matrix`] makes the test matrix of a case (tile-major, as the regions take it), and
//!    [`column_major`] the same matrix as the libraries take it.
//! 2. [`vendor_case`] times cuSOLVER on it (median of the repetitions) and keeps its factor.
//! 3. [`dsl_case`] times one DSL variant (backend, policy, checks) on the matrix uploaded before
//!    each repetition, as a library call on device memory is timed: the first call's wall time,
//!    then the median wall and execute times of the repetitions. Its factor is checked by a
//!    residual probe whose bound a missing task breaks, and compared element by element with
//!    cuSOLVER's.

use std::time::{Duration, Instant};

use taskweave::tile::Element;
use taskweave::{Backend, DeviceArray, Phases, Policy, Region, Runtime, TaskCosts};
use taskweave_kernels::matrix::host::{self, Check, check_cholesky, check_lu};
use taskweave_kernels::{cholesky, lu};

use crate::vendor::{Real, Timed, Vendor};

/// Which factorization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// `A = L·Lᵀ` (cuSOLVER `potrf`).
    Cholesky,
    /// `A = L·U` without pivoting (cuSOLVER `getrf` with a null pivot array).
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

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Self::Cholesky => "cholesky",
            Self::Lu => "lu",
        }
    }
}

impl std::str::FromStr for Which {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cholesky" => Ok(Self::Cholesky),
            "lu" => Ok(Self::Lu),
            _ => Err(format!(
                "unknown factorization `{s}`: expected cholesky or lu"
            )),
        }
    }
}

/// The element types both sides take.
pub trait Scalar: Element + Real {
    /// The resident-array region of `which`.
    fn region(which: Which, a: &mut DeviceArray<Self>, nb: usize, bs: usize) -> Region<'_>;
}

impl Scalar for f64 {
    fn region(which: Which, a: &mut DeviceArray<f64>, nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f64(a, nb, bs),
            Which::Lu => lu::lu_f64(a, nb, bs),
        }
    }
}

impl Scalar for f32 {
    fn region(which: Which, a: &mut DeviceArray<f32>, nb: usize, bs: usize) -> Region<'_> {
        match which {
            Which::Cholesky => cholesky::cholesky_f32(a, nb, bs),
            Which::Lu => lu::lu_f32(a, nb, bs),
        }
    }
}

/// One factorization of one size.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// Which factorization.
    pub which: Which,
    /// Tiles per side.
    pub nb: usize,
    /// Tile side.
    pub bs: usize,
}

impl Case {
    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.nb * self.bs
    }

    /// The floating-point operations: `n³/3` for Cholesky, `2n³/3` for LU.
    pub fn flops(&self) -> f64 {
        match self.which {
            Which::Cholesky => cholesky::flops(self.nb, self.bs),
            Which::Lu => lu::flops(self.nb, self.bs),
        }
    }

    /// The test matrix, tile-major: SPD for Cholesky, LU-friendly (heavy off-diagonal weight)
    /// for LU.
    pub fn matrix<T: Scalar>(&self) -> Vec<T> {
        match self.which {
            Which::Cholesky => host::spd(self.nb, self.bs, self.n() as u64),
            Which::Lu => host::lu_friendly(self.nb, self.bs, self.n() as u64),
        }
    }

    /// The residual probe of a factor `f` of `a` (both tile-major).
    pub fn check<T: Scalar>(&self, a: &[T], f: &[T]) -> Check {
        match self.which {
            Which::Cholesky => check_cholesky(a, f, self.nb, self.bs),
            Which::Lu => check_lu(a, f, self.nb, self.bs),
        }
    }

    /// Whether element `(r, c)` belongs to the factor (Cholesky: the lower triangle).
    fn in_factor(&self, r: usize, c: usize) -> bool {
        self.which == Which::Lu || r >= c
    }
}

/// The column-major form of the tile-major matrix `t`, as the libraries take it.
pub fn column_major<T: Scalar>(t: &[T], nb: usize, bs: usize) -> Vec<T> {
    let n = nb * bs;
    let mut out = vec![T::default(); n * n];
    for c in 0..n {
        for r in 0..n {
            out[c * n + r] = t[host::index(r, c, nb, bs)];
        }
    }
    out
}

/// cuSOLVER on one case: median times of `reps` runs (after one not counted), and its factor
/// (column-major).
pub fn vendor_case<T: Scalar>(
    vendor: &Vendor,
    case: &Case,
    a_cols: &[T],
    reps: usize,
) -> Result<(Timed, Vec<T>), Box<dyn std::error::Error>> {
    let n = case.n();
    let stream = vendor.stream();
    let pristine = stream.clone_htod(a_cols)?;
    let mut work = stream.alloc_zeros::<T>(n * n)?;
    let (mut kernel, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..=reps {
        stream.memcpy_dtod(&pristine, &mut work)?;
        stream.synchronize()?;
        let t = match case.which {
            Which::Cholesky => vendor.potrf(&mut work, n)?,
            Which::Lu => vendor.getrf_nopiv(&mut work, n)?,
        };
        kernel.push(t.kernel);
        wall.push(t.wall);
    }
    kernel.remove(0);
    wall.remove(0);
    Ok((
        Timed {
            kernel: median(kernel),
            wall: median(wall),
        },
        stream.clone_dtoh(&work)?,
    ))
}

/// The threads per block a variant gets unless it names a count (`@256`).
pub const DEFAULT_THREADS: u32 = 128;

/// One way of running the DSL's region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The backend.
    pub backend: Backend,
    /// The policy (persistent backend); `None`: the runtime's default choice (`/auto`).
    pub policy: Option<Policy>,
    /// Index checks on.
    pub checked: bool,
    /// Threads per task block.
    pub threads: u32,
    /// Inspected once into a [`Plan`](taskweave::Plan) that every timed call reruns.
    pub planned: bool,
    /// Planned with the task costs of a traced call made first (`+costs`, which plans too): the
    /// static policy's schedule weighs each task kind by its measured median time.
    pub costed: bool,
    /// `region.run` may rerun the runtime's plan of an earlier call (its plan cache, on by
    /// default); off (`+fresh`), every call inspects.
    pub cached: bool,
    /// Streamed (`+stream`, uncached too): every call inspects, and its tasks start on the
    /// workers while its body still records them ([`Region::stream`]).
    pub streamed: bool,
    /// SM-aware workers, this many per SM (`%2`).
    pub per_sm: Option<u32>,
    /// SMs that run the critical path alone (`!1`; static policy, with `per_sm`).
    pub critical_sms: u32,
}

impl Variant {
    /// `backend[/policy][ checked]`.
    pub fn label(&self) -> String {
        let mut label = self.backend.name().to_owned();
        if self.backend == Backend::Persistent {
            label.push('/');
            label.push_str(self.policy.map_or("auto", Policy::name));
        }
        if self.threads != DEFAULT_THREADS {
            label.push_str(&format!(" {}thr", self.threads));
        }
        if let Some(n) = self.per_sm {
            label.push_str(&format!(" {n}/SM"));
        }
        if self.critical_sms > 0 {
            label.push_str(&format!(" chain-alone-{}", self.critical_sms));
        }
        if self.checked {
            label.push_str(" checked");
        }
        if self.planned {
            label.push_str(" planned");
        }
        if self.costed {
            label.push_str(" costed");
        }
        if self.streamed {
            label.push_str(" streamed");
        } else if !self.cached {
            label.push_str(" uncached");
        }
        label
    }
}

impl std::str::FromStr for Variant {
    type Err = String;
    /// `persistent/static`, `barrier`, `graph:checked`, `persistent/static@256+plan:checked`,
    /// `persistent/grr+fresh`, `persistent/static%2!1+plan` (two workers per SM, the critical
    /// path alone on one SM), `persistent/static+costs` (planned with measured task costs), ...
    fn from_str(s: &str) -> Result<Self, String> {
        let (s, checked) = match s.strip_suffix(":checked") {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let (s, streamed) = match s.strip_suffix("+stream") {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let (s, cached) = match s.strip_suffix("+fresh") {
            Some(rest) => (rest, false),
            None => (s, !streamed),
        };
        let (s, costed) = match s.strip_suffix("+costs") {
            Some(rest) => (rest, true),
            None => (s, false),
        };
        let (s, planned) = match s.strip_suffix("+plan") {
            Some(rest) => (rest, true),
            None => (s, costed),
        };
        let (s, critical_sms) = match s.split_once('!') {
            Some((rest, n)) => match n.parse::<u32>() {
                Ok(n) => (rest, n),
                _ => return Err(format!("`{n}` is not an SM count")),
            },
            None => (s, 0),
        };
        let (s, per_sm) = match s.split_once('%') {
            Some((rest, n)) => match n.parse::<u32>() {
                Ok(n) if n > 0 => (rest, Some(n)),
                _ => return Err(format!("`{n}` is not a count of workers per SM")),
            },
            None => (s, None),
        };
        let (s, threads) = match s.split_once('@') {
            Some((rest, t)) => match t.parse::<u32>() {
                Ok(t) if t > 0 && t % 32 == 0 => (rest, t),
                _ => return Err(format!("`{t}` is not a thread count (a multiple of 32)")),
            },
            None => (s, DEFAULT_THREADS),
        };
        let (backend, policy) = match s.split_once('/') {
            Some((b, "auto")) => (b, None),
            Some((b, p)) => (b, Some(p.parse::<Policy>()?)),
            None => (s, Some(Policy::Grr)),
        };
        Ok(Self {
            backend: backend.parse::<Backend>()?,
            policy,
            checked,
            threads,
            planned,
            costed,
            cached,
            streamed,
            per_sm,
            critical_sms,
        })
    }
}

/// What one DSL variant did on one case.
#[derive(Clone, Debug)]
pub struct DslTimes {
    /// The first call's wall time (its inspection, the kernels' first load, the run).
    pub first_wall: Duration,
    /// The median wall time of the later calls.
    pub wall: Duration,
    /// Their median execute (kernel) time.
    pub execute: Duration,
    /// The first call's execute time.
    pub first_execute: Duration,
    /// The first call's phases ([`Phases`]).
    pub first_phases: Phases,
    /// Each phase's median over the later calls.
    pub phases: Phases,
    /// The residual probe of the last result.
    pub check: Check,
    /// The largest difference from cuSOLVER's factor, relative to the factor's largest element.
    pub vs_vendor: f64,
}

/// Runs `variant` on `case`: one first call, then `reps` timed calls, each on the matrix uploaded
/// again before it (not timed).
#[allow(clippy::too_many_arguments)]
pub fn dsl_case<T: Scalar>(
    runtime: &Runtime,
    case: &Case,
    variant: &Variant,
    shared_bytes: u32,
    a: &[T],
    vendor_cols: &[T],
    reps: usize,
) -> Result<DslTimes, Box<dyn std::error::Error>> {
    let (mut walls, mut executes) = (Vec::new(), Vec::new());
    let mut phases = Vec::new();
    let mut last = Vec::new();
    let mut plan = None;
    // `+costs`: a traced call first, whose task costs the plan is made with; its wall time counts
    // in the first call's.
    let mut costs = None;
    let mut calibration = Duration::ZERO;
    fn region<'d, T: Scalar>(
        case: &Case,
        variant: &Variant,
        shared_bytes: u32,
        costs: Option<&TaskCosts>,
        dev: &'d mut DeviceArray<T>,
    ) -> Region<'d> {
        let region = T::region(case.which, dev, case.nb, case.bs)
            .backend(variant.backend)
            .checked(variant.checked)
            .threads(variant.threads)
            .shared_bytes(shared_bytes)
            .cache(variant.cached)
            .stream(variant.streamed)
            .critical_path_sms(variant.critical_sms);
        let region = match variant.policy {
            Some(policy) => region.policy(policy),
            None => region,
        };
        let region = match costs {
            Some(costs) => region.task_costs(costs.clone()),
            None => region,
        };
        match variant.per_sm {
            Some(n) => region.workers_per_sm(n),
            None => region,
        }
    }
    if variant.costed {
        let mut dev = runtime.upload(a)?;
        let start = Instant::now();
        let traced = region(case, variant, shared_bytes, None, &mut dev)
            .trace(true)
            .run(runtime)?;
        costs = traced.task_costs();
        calibration = start.elapsed();
    }
    for _ in 0..=reps {
        let mut dev = runtime.upload(a)?;
        let start = Instant::now();
        let report = if variant.planned {
            // The first call inspects (it is the first call's wall time); the others rerun it.
            let plan = match &mut plan {
                Some(plan) => plan,
                slot @ None => slot.insert(
                    region(case, variant, shared_bytes, costs.as_ref(), &mut dev).plan(runtime)?,
                ),
            };
            plan.run(
                region(case, variant, shared_bytes, costs.as_ref(), &mut dev),
                runtime,
            )?
        } else {
            region(case, variant, shared_bytes, costs.as_ref(), &mut dev).run(runtime)?
        };
        walls.push(start.elapsed());
        executes.push(report.execute_time);
        phases.push(report.phases);
        last = dev.download()?;
    }
    let first_wall = walls.remove(0) + calibration;
    let first_execute = executes.remove(0);
    let first_phases = phases.remove(0);
    let n = case.n();
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for c in 0..n {
        for r in 0..n {
            if !case.in_factor(r, c) {
                continue;
            }
            let v = Real::to_f64(vendor_cols[c * n + r]);
            let d = Real::to_f64(last[host::index(r, c, case.nb, case.bs)]);
            diff = diff.max((d - v).abs());
            scale = scale.max(v.abs());
        }
    }
    Ok(DslTimes {
        first_wall,
        wall: median(walls),
        execute: median(executes),
        first_execute,
        first_phases,
        phases: median_phases(&phases),
        check: case.check(a, &last),
        vs_vendor: diff / scale.max(f64::MIN_POSITIVE),
    })
}

/// Each phase's median over `calls` (zero for none).
pub fn median_phases(calls: &[Phases]) -> Phases {
    if calls.is_empty() {
        return Phases::default();
    }
    let of = |f: fn(&Phases) -> Duration| median(calls.iter().map(f).collect());
    Phases {
        record: of(|p| p.record),
        edges: of(|p| p.edges),
        load: of(|p| p.load),
        plan: of(|p| p.plan),
        tables: of(|p| p.tables),
        upload: of(|p| p.upload),
        launch: of(|p| p.launch),
        wait: of(|p| p.wait),
        download: of(|p| p.download),
    }
}

/// The median of `v` (the upper one of an even count).
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_names_its_backend_policy_threads_plan_and_checks() {
        let v: Variant = "persistent/static@256+plan:checked".parse().unwrap();
        assert_eq!(
            (v.backend, v.policy, v.threads, v.planned, v.checked),
            (Backend::Persistent, Some(Policy::Static), 256, true, true)
        );
        assert_eq!(v.label(), "persistent/static 256thr checked planned");
        let v: Variant = "barrier".parse().unwrap();
        assert_eq!(
            (v.backend, v.threads, v.planned, v.checked),
            (Backend::Barrier, DEFAULT_THREADS, false, false)
        );
        assert_eq!(v.label(), "barrier");
        let v: Variant = "persistent/static+costs:checked".parse().unwrap();
        assert_eq!((v.planned, v.costed, v.checked), (true, true, true));
        assert_eq!(v.label(), "persistent/static checked planned costed");
        let v: Variant = "persistent/grr+fresh:checked".parse().unwrap();
        assert_eq!(
            (v.policy, v.cached, v.checked),
            (Some(Policy::Grr), false, true)
        );
        assert_eq!(v.label(), "persistent/grr checked uncached");
        let v: Variant = "persistent/auto+plan".parse().unwrap();
        assert_eq!((v.policy, v.planned), (None, true));
        assert_eq!(v.label(), "persistent/auto planned");
        assert!("barrier".parse::<Variant>().unwrap().cached);
        let v: Variant = "persistent/grr+stream".parse().unwrap();
        assert_eq!((v.cached, v.streamed), (false, true));
        assert_eq!(v.label(), "persistent/grr streamed");
        let v: Variant = "persistent/static@256%2!1+plan".parse().unwrap();
        assert_eq!(
            (v.threads, v.per_sm, v.critical_sms, v.planned),
            (256, Some(2), 1, true)
        );
        assert_eq!(
            v.label(),
            "persistent/static 256thr 2/SM chain-alone-1 planned"
        );
        for (bad, why) in [
            ("persistent/static%0", "is not a count of workers per SM"),
            ("persistent/static%2!x", "is not an SM count"),
        ] {
            let err = bad.parse::<Variant>().unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn a_thread_count_that_is_not_whole_warps_is_refused() {
        for bad in ["persistent/static@100", "barrier@0", "barrier@many"] {
            let err = bad.parse::<Variant>().unwrap_err();
            assert!(err.contains("is not a thread count"), "{bad}: {err}");
        }
    }
}
