//! What a plan runs: the region's DAG, the options it runs under, and what follows from them.
//!
//! 1. [`Plan`](crate::Plan) makes one [`Work`] when its region is inspected and never changes it
//!    (but for tests that edit the DAG on purpose).
//! 2. A backend reads it through [`Call::work`](crate::call::Call::work): the task table, the DAG
//!    and its footprints, the options, the DAG's widest level and critical path.
//! 3. What a backend keeps between runs of a plan (tables staged on a GPU, pristine queues) is the
//!    backend's own: [`backend::Kept`](crate::backend::Kept), beside the backend table.

use std::sync::{Arc, Mutex, OnceLock};

use crate::graph::Reserve;
use crate::inspect::Inspection;
use crate::meta::RegionMeta;
use crate::options::Options;
use crate::policy::{Policy, Start, StartOf};

/// The environment variable that turns graph replay off (`0`) for the plans made afterwards: see
/// [`Plan::replay`](crate::Plan::replay).
pub const REPLAY_PLANS_ENV: &str = "TASKWEAVE_REPLAY_PLANS";

/// The environment variable that turns the workers' own reset off (`0`) for the plans made
/// afterwards: see [`Plan::reset_on_device`](crate::Plan::reset_on_device).
pub const RESET_ON_DEVICE_ENV: &str = "TASKWEAVE_RESET_ON_DEVICE";

/// A region's inspected DAG and how to run it.
pub(crate) struct Work {
    pub meta: RegionMeta,
    /// The options as the region set them, which a later call's are compared with.
    pub asked: Options,
    /// What the backends run with ([`Work::options`]): `asked` with the policy chosen
    /// ([`Options::run_policy`]), and upgraded to the static plan when it is ready ([`Upgrade`]).
    options: Options,
    /// The default policy's static plan, made on a thread of its own for a plan that runs again.
    upgrade: Option<Upgrade>,
    pub inspection: Inspection,
    /// Whether the persistent backend replays the plan's calls as CUDA graphs.
    pub replay: bool,
    /// Whether the persistent backend's workers finish each run themselves.
    pub reset_on_device: bool,
    /// The DAG's widest level and its critical path, computed on first use.
    widest: OnceLock<usize>,
    critical_path: OnceLock<u32>,
    /// [`Inspection::widest_gang`], computed on first use.
    gang: OnceLock<Option<(&'static str, u32)>>,
}

impl Work {
    /// The work of a region inspected into `inspection` under `options`, replaying and resetting
    /// on the device unless the environment says otherwise.
    pub fn new(meta: RegionMeta, options: Options, inspection: Inspection) -> Self {
        let run = Options {
            policy: Some(options.run_policy()),
            ..options.clone()
        };
        Self {
            meta,
            asked: options,
            options: run,
            upgrade: None,
            inspection,
            replay: std::env::var(REPLAY_PLANS_ENV).as_deref() != Ok("0"),
            reset_on_device: std::env::var(RESET_ON_DEVICE_ENV).as_deref() != Ok("0"),
            widest: OnceLock::new(),
            critical_path: OnceLock::new(),
            gang: OnceLock::new(),
        }
    }

    /// Edits the DAG (for tests), forgetting what was computed from it.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Inspection)) {
        edit(&mut self.inspection);
        // A static plan being made is of the old DAG: the edited one gets its own.
        self.upgrade = None;
        self.widest = OnceLock::new();
        self.critical_path = OnceLock::new();
        self.gang = OnceLock::new();
    }

    pub fn meta(&self) -> &RegionMeta {
        &self.meta
    }

    /// The options as the region set them.
    pub fn asked(&self) -> &Options {
        &self.asked
    }

    /// The options the backends run with: the region's, with the policy chosen.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Starts making the static plan for `workers` workers on a thread of its own, when the
    /// region left the policy to the runtime, the plan runs again, and it is not planned yet: the
    /// first call that finds it ready runs the plan under it ([`Work::take_upgrade`]). The DAG
    /// is copied for the thread, which nothing waits for.
    pub fn start_upgrade(&mut self, workers: u32) {
        if self.asked.policy.is_some()
            || self.options.run_policy() == Policy::Static
            || self.upgrade.is_some()
            || self.inspection.task_count() == 0
        {
            return;
        }
        let ready = Arc::new(Mutex::new(None));
        let (into, dag) = (ready.clone(), self.inspection.dag.clone());
        let widths = crate::policy::plan_widths(&self.inspection);
        let spawned = std::thread::Builder::new()
            .name("taskweave-plan".into())
            .spawn(move || {
                let start =
                    crate::policy::planned_dag(&dag, workers, &Reserve::default(), None, &widths);
                *into.lock().unwrap_or_else(|e| e.into_inner()) = Some(start);
            });
        if spawned.is_ok() {
            self.upgrade = Some(Upgrade {
                workers,
                ready,
                taken: None,
            });
        }
    }

    /// Whether the static plan of [`Work::start_upgrade`] is ready and not taken yet: then the
    /// plan now runs under it, and the caller drops what the backends kept of the earlier policy.
    pub fn take_upgrade(&mut self) -> bool {
        let Some(upgrade) = &mut self.upgrade else {
            return false;
        };
        if upgrade.taken.is_some() {
            return false;
        }
        let start = upgrade
            .ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let Some(start) = start else {
            return false;
        };
        upgrade.taken = Some(Mutex::new(Some(start)));
        self.options.policy = Some(Policy::Static);
        true
    }

    /// The upgraded plan's start for `workers` workers, once: the next tables under the static
    /// policy are built from it instead of planning on the caller's time.
    pub fn planned_start(&self, of: &StartOf<'_>) -> Option<Start> {
        let upgrade = self.upgrade.as_ref()?;
        if upgrade.workers != of.workers || *of.reserve != Reserve::default() || of.costs.is_some()
        {
            return None;
        }
        upgrade.taken.as_ref()?.lock().ok()?.take()
    }

    pub fn inspection(&self) -> &Inspection {
        &self.inspection
    }

    /// The DAG's widest level (see [`Dag::max_level_width`](crate::graph::Dag::max_level_width)).
    pub fn widest_level(&self) -> usize {
        *self
            .widest
            .get_or_init(|| self.inspection.dag.max_level_width())
    }

    /// The widest task kind the region spawned and its blocks, if it has wide tasks
    /// ([`Inspection::widest_gang`], one pass over the tasks, made once per call or plan).
    pub fn widest_gang(&self) -> Option<(&'static str, u32)> {
        *self.gang.get_or_init(|| self.inspection.widest_gang())
    }

    /// The tasks on the DAG's longest path.
    pub fn critical_path(&self) -> u32 {
        *self
            .critical_path
            .get_or_init(|| self.inspection.dag.critical_path())
    }
}

/// A plan's inspection gives its buffers to the region's next inspection: a one-off call's plan is
/// dropped as the call returns, and the next call of the region writes into its memory.
impl Drop for Work {
    fn drop(&mut self) {
        self.inspection.give_back();
    }
}

/// The static plan of a plan run under the default policy, made on a thread of its own
/// ([`Work::start_upgrade`]).
struct Upgrade {
    /// The workers it is made for.
    workers: u32,
    /// Where the thread leaves it.
    ready: Arc<Mutex<Option<Start>>>,
    /// Taken from `ready` by [`Work::take_upgrade`]; emptied by the tables built from it.
    taken: Option<Mutex<Option<Start>>>,
}
