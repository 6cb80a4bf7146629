//! What a plan runs: the region's DAG, the options it runs under, and what follows from them.
//!
//! 1. [`Plan`](crate::Plan) makes one [`Work`] when its region is inspected and never changes it
//!    (but for tests that edit the DAG on purpose).
//! 2. A backend reads it through [`Call::work`](crate::call::Call::work): the task table, the DAG
//!    and its footprints, the options, the DAG's widest level and critical path.
//! 3. What a backend keeps between runs of a plan (tables staged on a GPU, pristine queues) is the
//!    backend's own: [`backend::Kept`](crate::backend::Kept), beside the backend table.

use std::sync::OnceLock;

use crate::inspect::Inspection;
use crate::meta::RegionMeta;
use crate::options::Options;

/// The environment variable that turns graph replay off (`0`) for the plans made afterwards: see
/// [`Plan::replay`](crate::Plan::replay).
pub const REPLAY_PLANS_ENV: &str = "TASKWEAVE_REPLAY_PLANS";

/// The environment variable that turns the workers' own reset off (`0`) for the plans made
/// afterwards: see [`Plan::reset_on_device`](crate::Plan::reset_on_device).
pub const RESET_ON_DEVICE_ENV: &str = "TASKWEAVE_RESET_ON_DEVICE";

/// A region's inspected DAG and how to run it.
pub(crate) struct Work {
    pub meta: RegionMeta,
    pub options: Options,
    pub inspection: Inspection,
    /// Whether the persistent backend replays the plan's calls as CUDA graphs.
    pub replay: bool,
    /// Whether the persistent backend's workers finish each run themselves.
    pub reset_on_device: bool,
    /// The DAG's widest level and its critical path, computed on first use.
    widest: OnceLock<usize>,
    critical_path: OnceLock<u32>,
}

impl Work {
    /// The work of a region inspected into `inspection` under `options`, replaying and resetting
    /// on the device unless the environment says otherwise.
    pub fn new(meta: RegionMeta, options: Options, inspection: Inspection) -> Self {
        Self {
            meta,
            options,
            inspection,
            replay: std::env::var(REPLAY_PLANS_ENV).as_deref() != Ok("0"),
            reset_on_device: std::env::var(RESET_ON_DEVICE_ENV).as_deref() != Ok("0"),
            widest: OnceLock::new(),
            critical_path: OnceLock::new(),
        }
    }

    /// Edits the DAG (for tests), forgetting what was computed from it.
    pub fn edit(&mut self, edit: impl FnOnce(&mut Inspection)) {
        edit(&mut self.inspection);
        self.widest = OnceLock::new();
        self.critical_path = OnceLock::new();
    }

    pub fn meta(&self) -> &RegionMeta {
        &self.meta
    }

    pub fn options(&self) -> &Options {
        &self.options
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

    /// The tasks on the DAG's longest path.
    pub fn critical_path(&self) -> u32 {
        *self
            .critical_path
            .get_or_init(|| self.inspection.dag.critical_path())
    }
}
