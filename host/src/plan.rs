//! Plans: a region inspected once, to be run many times.
//!
//! 1. [`Region::plan`](crate::Region::plan) runs the region's control flow once and keeps what it
//!    built, the [`Work`]: the task table, the DAG in CSR form with its ranks, and the options.
//!    From its first run on, the plan also holds what the backends keep between runs
//!    ([`backend::Kept`]): the persistent scheduler's tables stay on the GPU, reset on the device
//!    before each run, and the CPU backend keeps its initial queues and counters.
//! 2. [`Plan::run`] runs it again on the arrays of a freshly called region of the same shapes,
//!    without running that region's control flow: the caller vouches that the scalars which steer
//!    it are the ones the plan was made with.
//! 3. With [`Plan::verify`] (on by default in debug builds, or with the environment variable
//!    `TASKWEAVE_VERIFY_PLANS=1`), every run inspects the region again and refuses to run when the
//!    DAG differs from the plan's ([`Error::PlanMismatch`]).
//!
//! A plan holds no array: the arrays come with each call, so one plan serves every set of arrays
//! of its shapes (ping-pong buffers, say). What it runs is always the DAG inspection built for its
//! region; [`Plan::check_inspection`] is the comparison the verifying mode makes.

use crate::backend;
use crate::error::Error;
use crate::inspect::{ArrayInfo, Inspection};
use crate::meta::RegionMeta;
use crate::options::Options;
use crate::work::Work;
#[cfg(doc)]
use crate::work::{REPLAY_PLANS_ENV, RESET_ON_DEVICE_ENV};

/// The environment variable that turns plan verification on (`1`) or off (`0`) whatever the build.
pub const VERIFY_PLANS_ENV: &str = "TASKWEAVE_VERIFY_PLANS";

/// A region inspected once: its DAG, its options and the backends' tables, ready to run again on
/// new arrays of the same shapes. Made by [`Region::plan`](crate::Region::plan).
///
/// ```no_run
/// # use taskweave_host::{Error, Plan, Region, Runtime};
/// # fn step<'a>(u: &'a [f32], v: &'a mut [f32], n: usize) -> Region<'a> { unimplemented!() }
/// # fn main() -> Result<(), Error> {
/// let rt = Runtime::new();
/// let (mut u, mut v) = (vec![0.0f32; 1024], vec![0.0f32; 1024]);
/// let mut plan = step(&u, &mut v, 32).plan(&rt)?; // inspects once
/// for _ in 0..50 {
///     plan.run(step(&u, &mut v, 32), &rt)?; // runs the plan's DAG on these arrays
///     plan.run(step(&v, &mut u, 32), &rt)?; // and on these: same shapes, same scalars
/// }
/// # Ok(())
/// # }
/// ```
pub struct Plan {
    work: Work,
    verify: bool,
    /// What the backends keep between runs; theirs to read and write.
    kept: backend::Kept,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let work = &self.work;
        f.debug_struct("Plan")
            .field("region", &work.meta.name)
            .field("tasks", &work.inspection.task_count())
            .field("edges", &work.inspection.dag.edge_count())
            .field("options", &work.asked)
            .field("verify", &self.verify)
            .field("replay", &work.replay)
            .field("reset_on_device", &work.reset_on_device)
            .finish_non_exhaustive()
    }
}

/// Whether plans verify by default: in debug builds, unless [`VERIFY_PLANS_ENV`] says otherwise.
fn verify_by_default() -> bool {
    match std::env::var(VERIFY_PLANS_ENV).as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => cfg!(debug_assertions),
    }
}

impl Plan {
    /// The plan of a region inspected into `inspection` under `options`; refuses task costs it
    /// cannot plan with ([`Error::TaskCosts`]).
    pub(crate) fn new(
        meta: RegionMeta,
        options: Options,
        inspection: Inspection,
    ) -> Result<Self, Error> {
        if let Some(costs) = &options.task_costs {
            let policy = options.run_policy();
            let other = (!policy.row().plans).then(|| policy.name());
            costs.check(meta.name, other, inspection.kinds)?;
        }
        Ok(Self {
            work: Work::new(meta, options, inspection),
            verify: verify_by_default(),
            kept: backend::Kept::default(),
        })
    }

    /// The region's name.
    pub fn region(&self) -> &'static str {
        self.work.meta.name
    }

    /// What inspection built: the tasks, their arguments and the DAG.
    pub fn inspection(&self) -> &Inspection {
        &self.work.inspection
    }

    /// The options the plan runs with (those of the region it was made from).
    pub fn options(&self) -> &Options {
        self.work.asked()
    }

    /// Under the default policy, starts making the static plan for `workers` workers, for the
    /// plan's later runs (see [`Work::start_upgrade`]).
    pub(crate) fn start_upgrade(&mut self, workers: u32) {
        self.work.start_upgrade(workers);
    }

    /// Runs the plan under its static plan from now on, if it is ready ([`Work::take_upgrade`]):
    /// what the backends kept for the earlier policy goes.
    pub(crate) fn take_upgrade(&mut self) {
        if self.work.take_upgrade() {
            self.kept = backend::Kept::default();
        }
    }

    /// The work, to run, beside what the backends keep between runs.
    pub(crate) fn parts(&mut self) -> (&Work, &mut backend::Kept) {
        (&self.work, &mut self.kept)
    }

    /// Whether every run inspects the region again and compares.
    pub fn verifies(&self) -> bool {
        self.verify
    }

    /// Turns verification on or off: with it on, every [`Plan::run`] runs the region's control
    /// flow again and refuses to run a DAG other than the plan's ([`Error::PlanMismatch`]). It
    /// costs an inspection per call; it is on by default in debug builds (see [`VERIFY_PLANS_ENV`]).
    pub fn verify(mut self, on: bool) -> Self {
        self.verify = on;
        self
    }

    /// Whether the persistent backend replays this plan's calls as CUDA graphs.
    pub fn replays(&self) -> bool {
        self.work.replay
    }

    /// Turns graph replay on or off. With it on (the default, unless [`REPLAY_PLANS_ENV`] is
    /// `0`), each call of the plan on the persistent backend, from the first, is one CUDA graph
    /// launch: the kernel between its two timing events, and, where the workers do not finish
    /// the run themselves (see [`Plan::reset_on_device`]), the reset of the scheduler's tables
    /// before it and the copy of the error record and statistics after it. The graph is built once
    /// per set of arrays the plan runs on. Off, the call issues the same operations one by one,
    /// which costs the host more driver calls before the kernel starts. The results do not change
    /// either way.
    pub fn replay(mut self, on: bool) -> Self {
        self.work.replay = on;
        self
    }

    /// Whether the persistent backend's workers finish this plan's runs themselves.
    pub fn resets_on_device(&self) -> bool {
        self.work.reset_on_device
    }

    /// Turns the workers' own finish of each run on or off. With it on (the default, unless
    /// [`RESET_ON_DEVICE_ENV`] is `0`), the persistent kernel's workers meet once the DAG is done,
    /// put the scheduler's tables back as they started, and leave the error record and their
    /// statistics in pinned host memory: a call is then only the kernel between its timing
    /// events, with no copy before or after it. Off, the host resets the tables before each call
    /// and copies the record and statistics back after it. Runs that trace their tasks or place
    /// workers by SM always do the latter. The results do not change either way.
    pub fn reset_on_device(mut self, on: bool) -> Self {
        self.work.reset_on_device = on;
        self
    }

    /// Edits the inspected DAG before it runs, for tests that must show a verification fails
    /// (drop an edge, swap two tasks, skip one). Forgets the backends' tables, and turns
    /// verification off, since the plan no longer matches its region on purpose.
    #[doc(hidden)]
    pub fn edit_inspection(&mut self, edit: impl FnOnce(&mut Inspection)) {
        self.work.edit(edit);
        self.kept = backend::Kept::default();
        self.verify = false;
    }

    /// Checks that `arrays` (a call's arrays, by slot) have the shapes the plan was made for.
    pub(crate) fn check_arrays(
        &self,
        meta: &RegionMeta,
        arrays: impl ExactSizeIterator<Item = ArrayInfo>,
    ) -> Result<(), Error> {
        let mismatch = |detail: String| Error::PlanMismatch {
            region: self.work.meta.name,
            detail,
        };
        if !self.work.meta.same_region(meta) {
            return Err(mismatch(format!(
                "it was given a call of region `{}` (kernel `{}`)",
                meta.name, meta.kernel
            )));
        }
        let planned = &self.work.inspection.arrays;
        if arrays.len() != planned.len() {
            return Err(mismatch(format!(
                "the call binds {} arrays, the plan {}",
                arrays.len(),
                planned.len()
            )));
        }
        for (got, want) in arrays.zip(planned) {
            if got.len != want.len || got.elem_bytes != want.elem_bytes {
                return Err(mismatch(format!(
                    "array `{}` has {} elements of {} bytes, the plan was made for {} of {}",
                    got.name, got.len, got.elem_bytes, want.len, want.elem_bytes
                )));
            }
            if got.writable != want.writable || got.name != want.name {
                return Err(mismatch(format!(
                    "array `{}` is bound as `{}`, the plan has `{}`",
                    got.name, want.name, want.name
                )));
            }
        }
        Ok(())
    }

    /// Checks that `fresh`, the call's region inspected again, built what the plan runs: the same
    /// tasks with the same arguments, the same DAG and the same footprints.
    pub fn check_inspection(&self, fresh: &Inspection) -> Result<(), Error> {
        let advice =
            "its scalar arguments steer the control flow differently: make a new plan for them";
        self.check(fresh, advice)
    }

    /// [`Plan::check_inspection`] for a plan from the runtime's plan cache, which was made by a
    /// call with the same scalar arguments and array shapes: a body that builds another DAG
    /// depends on something else.
    pub(crate) fn check_cached_inspection(&self, fresh: &Inspection) -> Result<(), Error> {
        let advice = "an earlier call with the same scalar arguments and array shapes built \
            another DAG, so the region's body depends on something else (a global, the clock, a \
            random source): run it with `.cache(false)`";
        self.check(fresh, advice)
    }

    fn check(&self, fresh: &Inspection, advice: &str) -> Result<(), Error> {
        check_same(&self.work.inspection, fresh, advice).map_err(|detail| Error::PlanMismatch {
            region: self.work.meta.name,
            detail,
        })
    }
}

/// Where `fresh` departs from `planned`, in words ending with `advice` where the tasks differ, or
/// `Ok` when they are the same.
fn check_same(planned: &Inspection, fresh: &Inspection, advice: &str) -> Result<(), String> {
    let (n, m) = (planned.task_count(), fresh.task_count());
    if planned.tasks != fresh.tasks || planned.args != fresh.args {
        fn words(ins: &Inspection, t: usize) -> (u32, &[u64]) {
            let (record, end) = (ins.tasks[t], ins.tasks[t + 1]);
            (
                record.kind,
                &ins.args[record.args as usize..end.args as usize],
            )
        }
        if let Some(t) = (0..n.min(m)).find(|&t| words(planned, t) != words(fresh, t)) {
            let (a, b) = (planned.task_ref(t as u32), fresh.task_ref(t as u32));
            return Err(format!(
                "task #{t} is `{}({})` where the plan has `{}({})`; {advice}",
                b.kind, b.args, a.kind, a.args
            ));
        }
        return Err(format!("the call spawns {m} tasks, the plan {n}; {advice}"));
    }
    let (a, b) = (&planned.dag, &fresh.dag);
    if a != b {
        let first = (0..n as u32)
            .find(|&t| a.children_of(t) != b.children_of(t) || a.kinds_of(t) != b.kinds_of(t))
            .unwrap_or(0);
        return Err(format!(
            "the dependences of task #{first} differ from the plan's (children {:?}, the plan {:?})",
            b.children_of(first),
            a.children_of(first)
        ));
    }
    if planned.footprints != fresh.footprints {
        return Err("the arrays' read and write spans differ from the plan's".to_owned());
    }
    Ok(())
}
