//! The runtime: which backend runs regions.
//!
//! 1. [`Runtime::new`] takes the GPU when there is one and says why not otherwise, then falls back
//!    to the CPU backend.
//! 2. [`Runtime::gpu`] insists on the GPU; [`Runtime::cpu`] never touches it.
//! 3. [`Region::run`](crate::Region::run) hands each region to the runtime's backend.

use std::sync::{Arc, OnceLock};

use crate::cpu;
use crate::error::Error;
use crate::gpu::levels::{self, Strategy};
use crate::gpu::{Gpu, graph, persistent, streams};
use crate::inspect::Inspection;
use crate::region::Region;
use crate::report::Report;
use crate::resident::{DeviceArray, Done};
use crate::submit::{HELPERS, Helpers, Job, Pending, WriteBack};

/// How a region's DAG is executed.
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

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; 4] = [
        Self::Persistent,
        Self::Barrier,
        Self::GridBarrier,
        Self::Cpu,
    ];

    /// The backend's lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Persistent => "persistent",
            Self::Barrier => "barrier",
            Self::GridBarrier => "grid-barrier",
            Self::Graph => "graph",
            Self::Streams => "streams",
            Self::Cpu => "cpu",
        }
    }

    /// Whether the backend runs on the GPU.
    pub fn needs_gpu(self) -> bool {
        self != Self::Cpu
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown backend `{s}`: expected one of persistent, barrier, grid-barrier, graph, streams, cpu"
                )
            })
    }
}

enum Engine {
    /// Boxed: a `Gpu` is large, and a runtime is often moved.
    Gpu(Box<Gpu>),
    Cpu {
        workers: u32,
    },
}

/// Runs regions on one backend.
pub struct Runtime {
    engine: Engine,
    fallback: Option<String>,
    /// The helper threads of regions submitted without waiting, started on the first submit.
    helpers: OnceLock<Result<Helpers, String>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime {
    /// The GPU if one is usable, else the CPU backend (see [`Runtime::fallback_reason`]).
    pub fn new() -> Self {
        match Gpu::new(0) {
            Ok(gpu) => Self {
                engine: Engine::Gpu(Box::new(gpu)),
                fallback: None,
                helpers: OnceLock::new(),
            },
            Err(e) => Self {
                fallback: Some(e.to_string()),
                ..Self::cpu()
            },
        }
    }

    /// The persistent GPU backend on GPU `ordinal`, or why not.
    pub fn gpu(ordinal: usize) -> Result<Self, Error> {
        Ok(Self {
            engine: Engine::Gpu(Box::new(Gpu::new(ordinal)?)),
            fallback: None,
            helpers: OnceLock::new(),
        })
    }

    /// The CPU backend with one worker per core.
    pub fn cpu() -> Self {
        Self::cpu_with(cpu::default_workers())
    }

    /// The CPU backend with `workers` worker threads.
    pub fn cpu_with(workers: u32) -> Self {
        Self {
            engine: Engine::Cpu {
                workers: workers.max(1),
            },
            fallback: None,
            helpers: OnceLock::new(),
        }
    }

    /// The backend regions run on.
    pub fn backend(&self) -> Backend {
        match self.engine {
            Engine::Gpu(_) => Backend::Persistent,
            Engine::Cpu { .. } => Backend::Cpu,
        }
    }

    /// Why [`Runtime::new`] fell back to the CPU, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The GPU, when the runtime has one.
    pub fn gpu_device(&self) -> Option<&Gpu> {
        match &self.engine {
            Engine::Gpu(gpu) => Some(gpu.as_ref()),
            Engine::Cpu { .. } => None,
        }
    }

    /// Copies `data` to where this runtime runs regions (GPU memory, or host memory on the CPU
    /// backend), for regions that take it as a `DeviceArray` and keep it there between runs.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<DeviceArray<T>, Error> {
        match &self.engine {
            Engine::Gpu(gpu) => DeviceArray::gpu(data, gpu.stream()),
            Engine::Cpu { .. } => Ok(DeviceArray::host(data)),
        }
    }

    /// One line on the backend and its hardware.
    pub fn describe(&self) -> String {
        match &self.engine {
            Engine::Gpu(gpu) => format!(
                "persistent GPU scheduler on {} ({} SMs)",
                gpu.name(),
                gpu.sm_count()
            ),
            Engine::Cpu { workers } => format!("CPU backend, {workers} worker threads"),
        }
    }

    pub(crate) fn execute(
        &self,
        region: &Region<'_>,
        inspection: &Inspection,
    ) -> Result<Report, Error> {
        let engine = match &self.engine {
            Engine::Gpu(gpu) => Lane::Gpu(gpu),
            Engine::Cpu { workers } => Lane::Cpu(*workers),
        };
        execute(&engine, self.fallback.as_deref(), region, inspection)
    }

    /// Hands an inspected region to the helper threads (see [`Region::submit`]).
    pub(crate) fn submit<'a>(
        &self,
        region: Region<'static>,
        inspection: Inspection,
        copies: Vec<Vec<u64>>,
        done: Arc<Done>,
        writeback: Vec<WriteBack<'a>>,
    ) -> Pending<'a> {
        let (job, pending) = Job::new(region, inspection, copies, done, writeback);
        match self.helpers.get_or_init(|| self.start_helpers()) {
            Ok(helpers) => helpers.submit(job),
            // No helpers (the GPU refused more streams, or no thread would start): run the
            // region here, in order.
            Err(_) => job.run(&|region, ins| self.execute(region, ins)),
        }
        pending
    }

    fn start_helpers(&self) -> Result<Helpers, String> {
        let fallback = self.fallback.clone();
        match &self.engine {
            Engine::Gpu(gpu) => {
                let lanes = (0..HELPERS)
                    .map(|_| gpu.lane())
                    .collect::<Result<Vec<Gpu>, Error>>()
                    .map_err(|e| e.to_string())?;
                Helpers::start(lanes, move |gpu, region, ins| {
                    execute(&Lane::Gpu(gpu), fallback.as_deref(), region, ins)
                })
            }
            Engine::Cpu { workers } => {
                let workers = *workers;
                Helpers::start(vec![(); HELPERS], move |_, region, ins| {
                    execute(&Lane::Cpu(workers), fallback.as_deref(), region, ins)
                })
            }
        }
    }
}

/// What runs one region: a GPU handle (the runtime's, or a helper's lane) or the CPU backend.
enum Lane<'g> {
    Gpu(&'g Gpu),
    Cpu(u32),
}

/// Runs `region` on `lane` with the backend its options name (or the lane's own).
fn execute(
    lane: &Lane<'_>,
    fallback: Option<&str>,
    region: &Region<'_>,
    inspection: &Inspection,
) -> Result<Report, Error> {
    let own = match lane {
        Lane::Gpu(_) => Backend::Persistent,
        Lane::Cpu(_) => Backend::Cpu,
    };
    let backend = region.options.backend.unwrap_or(own);
    // A submitted region follows the runs it conflicts with: on the device for the persistent GPU
    // backend (see `persistent::execute`), on the host for the others.
    if !matches!((lane, backend), (Lane::Gpu(_), Backend::Persistent)) {
        region.wait_for_earlier();
    }
    let _stream = match lane {
        Lane::Gpu(gpu) if backend.needs_gpu() => Some(gpu.stream_turn()),
        _ => None,
    };
    let _turn = match lane {
        Lane::Gpu(gpu) if backend.needs_gpu() => {
            gpu.check_usable()?;
            // Only the backends whose state outlives a run take turns (see `Gpu::exclusive`).
            matches!(backend, Backend::Graph | Backend::Streams).then(|| gpu.exclusive())
        }
        _ => None,
    };
    match (lane, backend) {
        (Lane::Gpu(gpu), Backend::Persistent) => persistent::execute(gpu, region, inspection),
        (Lane::Gpu(gpu), Backend::Barrier) => {
            levels::execute(gpu, region, inspection, Strategy::Launches)
        }
        (Lane::Gpu(gpu), Backend::GridBarrier) => {
            levels::execute(gpu, region, inspection, Strategy::GridBarrier)
        }
        (Lane::Gpu(gpu), Backend::Graph) => graph::execute(gpu, region, inspection),
        (Lane::Gpu(gpu), Backend::Streams) => streams::execute(gpu, region, inspection),
        (Lane::Gpu(_), Backend::Cpu) => cpu::execute(region, inspection, cpu::default_workers()),
        (Lane::Cpu(workers), Backend::Cpu) => cpu::execute(region, inspection, *workers),
        (Lane::Cpu(_), gpu_only) => Err(Error::NoGpu {
            reason: format!(
                "backend `{}` runs on the GPU, and this runtime is the CPU backend{}",
                gpu_only.name(),
                fallback.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
        }),
    }
}
