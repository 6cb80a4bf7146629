//! How a region runs: the [`Options`] a region sets, among them its scheduling [`Policy`] (whose
//! table is the `policy` module's) and which [`Backend`] runs it.
//!
//! 1. A region's builder methods (`.policy(..)`, `.threads(..)`, `.backend(..)`, …) fill in its
//!    [`Options`]; [`Options::default`] is what a region starts with.
//! 2. The plan keeps the options it was made with, and the backends read them from there.
//!
//! This module sits low: it imports only the task costs and the policies, so that every layer
//! above it (the plan, the backends, the runtime, the region builder) can use it. [`Backend`] is only the
//! backend's identity; its name, whether it needs a GPU and how it runs a plan are in the one
//! table of the `backend` module, which also implements [`Backend::ALL`], [`Backend::name`] and
//! parsing.

use std::ops::Range;
use std::time::Duration;

use taskweave_device::abi::{FLAG_CHECKED, FLAG_TRACE, RegionDesc};

use crate::costs::TaskCosts;
pub use crate::policy::Policy;

/// How a region's DAG is executed. Each backend's name, whether it needs a GPU and how it runs are
/// in the backend table (see the module docs): [`Backend::ALL`], [`Backend::name`],
/// [`Backend::needs_gpu`], and `"grid-barrier".parse::<Backend>()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The persistent in-GPU scheduler: one launch, the DAG resolved on the device.
    Persistent,
    /// Level by level, one kernel launch per topological level (classic global barriers).
    Barrier,
    /// Level by level in one launch, a software grid barrier between levels.
    GridBarrier,
    /// A CUDA graph: one kernel node per task, one edge per dependence, cached and replayed.
    Graph,
    /// Scheduled from the host onto a pool of streams, with one event per awaited task.
    Streams,
    /// The scheduler core on CPU threads.
    Cpu,
}

/// How a region runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Threads per task block.
    pub threads: u32,
    /// Where freed tasks go; `None` (the default): chosen per plan, see [`Options::run_policy`].
    pub policy: Option<Policy>,
    /// Check every index against the declared ranges.
    pub checked: bool,
    /// Worker count; `None` takes it from occupancy (GPU) or cores (CPU).
    pub workers: Option<u32>,
    /// SM-aware workers: active workers per SM (see
    /// [`Region::workers_per_sm`](crate::Region::workers_per_sm)).
    pub per_sm: Option<u32>,
    /// SM-aware workers: the SMs the region may use (see [`Region::sms`](crate::Region::sms)).
    pub sm_set: Option<Range<u32>>,
    /// SM-aware workers under the static policy: the SMs of the set (its first ones) that run
    /// the critical path alone (see [`Region::critical_path_sms`](crate::Region::critical_path_sms)).
    pub critical_sms: u32,
    /// Threads per emulated block on the CPU backend.
    pub cpu_lanes: u32,
    /// Stream the call: start its tasks while the body still records them (see
    /// [`Region::stream`](crate::Region::stream)).
    pub stream: bool,
    /// Bytes of shared scratch per block, for `Block::shared` and the tile library; `None`: the
    /// default ([`Options::default_scratch`]).
    pub shared_bytes: Option<u32>,
    /// Record when and where each task ran.
    pub trace: bool,
    /// Abort when no task completes for this long.
    pub watchdog: Duration,
    /// The backend, when not the runtime's own.
    pub backend: Option<Backend>,
    /// What each task kind costs, for the static policy's plan (see
    /// [`Region::task_costs`](crate::Region::task_costs)); `None`: every task the same.
    pub task_costs: Option<TaskCosts>,
}

/// The scratch per block of a region that sets none, when its kernels do not use the tile library.
pub const PLAIN_SCRATCH: u32 = 8 * 1024;

impl Default for Options {
    fn default() -> Self {
        Self {
            threads: 128,
            policy: None,
            checked: true,
            workers: None,
            per_sm: None,
            sm_set: None,
            critical_sms: 0,
            cpu_lanes: 1,
            stream: false,
            shared_bytes: None,
            trace: false,
            watchdog: Duration::from_secs(10),
            backend: None,
            task_costs: None,
        }
    }
}

impl Options {
    /// The descriptor fields these options set, for `workers` workers and `arrays` arrays.
    pub(crate) fn desc(&self, workers: u32, arrays: usize) -> RegionDesc {
        RegionDesc {
            n_workers: workers,
            policy: self.run_policy().abi(),
            flags: if self.checked { FLAG_CHECKED } else { 0 }
                | if self.trace { FLAG_TRACE } else { 0 },
            scratch_bytes: self.shared_bytes.unwrap_or(PLAIN_SCRATCH),
            n_arrays: arrays as u32,
            ..RegionDesc::default()
        }
    }

    /// The policy a call runs under: the one the region sets, else the default choice, which a
    /// plan reused under it upgrades later ([`Plan`](crate::Plan)): the static plan when the
    /// region asks for what only it does (SMs for the critical path, task costs), else
    /// [`Policy::Grr`], which starts at once.
    pub fn run_policy(&self) -> Policy {
        match self.policy {
            Some(policy) => policy,
            None if self.critical_sms > 0 || self.task_costs.is_some() => Policy::Static,
            None => Policy::Grr,
        }
    }

    /// The scratch per block when the region sets none, on the CPU backend: what every tile
    /// operation needs at the region's block size (the GPU's, [`Options::threads`]), and at least
    /// [`PLAIN_SCRATCH`]. (On the GPU a kernel that uses the tile library gets that much or more,
    /// as its occupancy allows; one that does not, [`PLAIN_SCRATCH`].)
    pub fn default_scratch(&self) -> u32 {
        PLAIN_SCRATCH.max(taskweave_tile::scratch_need(self.threads))
    }

    /// The scratch per block on the CPU backend.
    pub(crate) fn cpu_scratch(&self) -> u32 {
        self.shared_bytes.unwrap_or_else(|| self.default_scratch())
    }

    /// `true` when the options ask for SM-aware workers.
    pub(crate) fn sm_aware(&self) -> bool {
        self.per_sm.is_some() || self.sm_set.is_some()
    }
}
