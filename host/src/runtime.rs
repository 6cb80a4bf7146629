//! The runtime: which backend runs regions.
//!
//! 1. [`Runtime::new`] takes the GPU when there is one and says why not otherwise, then falls back
//!    to the CPU backend.
//! 2. [`Runtime::gpu`] insists on the GPU; [`Runtime::cpu`] never touches it.
//! 3. [`Region::run`](crate::Region::run) and [`Plan::run`](crate::Plan::run) hand each call to
//!    the runtime, which runs it on the backend the region names or its own (see the `backend`
//!    module's table).

use std::sync::OnceLock;

use crate::backend::{self, Executor, default_cpu_workers};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::options::Backend;
use crate::report::Report;
use crate::resident::DeviceArray;
use crate::submit::{HELPERS, Helpers, Job};

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
        Self::cpu_with(default_cpu_workers())
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
        self.executor().own()
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

    /// What runs calls on this runtime.
    fn executor(&self) -> Executor<'_> {
        match &self.engine {
            Engine::Gpu(gpu) => Executor::Gpu(gpu),
            Engine::Cpu { workers } => Executor::Cpu { workers: *workers },
        }
    }

    /// Runs `call` on the backend its options name, or the runtime's own.
    pub(crate) fn execute(&self, call: &mut Call<'_, '_>) -> Result<Report, Error> {
        backend::execute(&self.executor(), self.fallback.as_deref(), call)
    }

    /// Hands a submitted call to the helper threads (see [`Region::submit`](crate::Region::submit)).
    pub(crate) fn submit(&self, job: Job) {
        match self.helpers.get_or_init(|| self.start_helpers()) {
            Ok(helpers) => helpers.submit(job),
            // No helpers (the GPU refused more streams, or no thread would start): run the
            // region here, in order.
            Err(_) => job.run(&|call| self.execute(call)),
        }
    }

    fn start_helpers(&self) -> Result<Helpers, String> {
        let fallback = self.fallback.clone();
        match &self.engine {
            Engine::Gpu(gpu) => {
                let handles = (0..HELPERS)
                    .map(|_| gpu.with_own_streams())
                    .collect::<Result<Vec<Gpu>, Error>>()
                    .map_err(|e| e.to_string())?;
                Helpers::start(handles, move |gpu, call| {
                    backend::execute(&Executor::Gpu(gpu), fallback.as_deref(), call)
                })
            }
            Engine::Cpu { workers } => {
                let workers = *workers;
                Helpers::start(vec![(); HELPERS], move |_, call| {
                    backend::execute(&Executor::Cpu { workers }, fallback.as_deref(), call)
                })
            }
        }
    }
}
