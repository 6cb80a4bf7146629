//! The backends: one module each, and one table that says, for every [`Backend`], its name,
//! whether it needs a GPU, and the function that executes a plan on it.
//!
//! 1. The runtime picks the backend: the region's option, else its own ([`Executor::own`]).
//! 2. [`execute`] looks the backend up in [`TABLE`], refuses a GPU backend on the CPU runtime,
//!    orders the call after the runs in flight it follows, takes the GPU turns the backend needs,
//!    and calls the backend's function with the [`Call`]: the plan and this call's arrays.
//! 3. A backend reads the DAG and options from the call's [`Work`](crate::work::Work) and the
//!    arrays from the call, and returns a [`Report`]. What it keeps between runs of one plan is
//!    its own field of [`Kept`], which the plan holds and hands back at every run.
//!
//! Adding a backend is a variant of [`Backend`], a module here and a row of [`TABLE`] (and a
//! field of [`Kept`] if it keeps something); the test below fails until they agree.

mod arena;
mod barrier;
pub(crate) mod cpu;
mod cuda_graph;
mod grid_barrier;
mod layout;
mod levels;
mod persistent;
pub(crate) mod prestage;
mod replay;
mod stage;
mod streams;
mod watch;

pub(crate) use cpu::default_workers as default_cpu_workers;
// For the persistent backend's half of streamed regions (`crate::stream::gpu`).
pub(crate) use layout::{bytes_of, records};
pub(crate) use persistent::default_workers;
pub(crate) use stage::fault;
use std::time::Instant;
pub(crate) use watch::{GRACE, Launched, Running, finish as finish_stall, wait_done, watch};

use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::options::Backend;
use crate::report::Report;
use crate::tables::Tables;

/// How a backend executes a call, given what it kept from the plan's earlier runs.
#[derive(Clone, Copy)]
enum Run {
    /// On a GPU handle.
    Gpu(fn(&Gpu, &mut Call<'_, '_>, &mut Kept) -> Result<Report, Error>),
    /// On `workers` CPU threads.
    Cpu(fn(&mut Call<'_, '_>, u32, &mut Kept) -> Result<Report, Error>),
}

/// What the backends keep in a plan between its runs, one field per backend that keeps
/// something; each is read and written by its own backend alone. Dropping it frees what it holds
/// (device memory included).
#[derive(Default)]
pub(crate) struct Kept {
    /// The persistent backend's kernel, launch shape and staged tables.
    persistent: Option<persistent::Prepared>,
    /// The CPU backend's pristine queues and counters.
    cpu: Option<Tables>,
}

/// One row of [`TABLE`].
struct Entry {
    backend: Backend,
    /// Its lowercase name, as the command lines and reports spell it.
    name: &'static str,
    /// How it runs, which also says whether it needs a GPU.
    run: Run,
    /// Whether a submitted call waits for its predecessors on the device (its stream waits for
    /// their kernels' end events) rather than on the host.
    orders_on_device: bool,
    /// Whether its state outlives a run on the device (the graph cache, the stream pool), so
    /// that its runs take turns on the GPU ([`Gpu::exclusive`]).
    exclusive: bool,
}

/// Every backend, in [`Backend::ALL`] order.
const TABLE: [Entry; 6] = [
    Entry {
        backend: Backend::Persistent,
        name: "persistent",
        run: Run::Gpu(persistent::execute),
        orders_on_device: true,
        exclusive: false,
    },
    Entry {
        backend: Backend::Barrier,
        name: "barrier",
        run: Run::Gpu(barrier::execute),
        orders_on_device: false,
        exclusive: false,
    },
    Entry {
        backend: Backend::GridBarrier,
        name: "grid-barrier",
        run: Run::Gpu(grid_barrier::execute),
        orders_on_device: false,
        exclusive: false,
    },
    Entry {
        backend: Backend::Graph,
        name: "graph",
        run: Run::Gpu(cuda_graph::execute),
        orders_on_device: false,
        exclusive: true,
    },
    Entry {
        backend: Backend::Streams,
        name: "streams",
        run: Run::Gpu(streams::execute),
        orders_on_device: false,
        exclusive: true,
    },
    Entry {
        backend: Backend::Cpu,
        name: "cpu",
        run: Run::Cpu(cpu::execute),
        orders_on_device: false,
        exclusive: false,
    },
];

/// The row of `backend` in [`TABLE`]. A `match` without a wildcard: a new [`Backend`] does not
/// compile until it has a row, and the test checks the rows are in this order.
const fn row(backend: Backend) -> usize {
    match backend {
        Backend::Persistent => 0,
        Backend::Barrier => 1,
        Backend::GridBarrier => 2,
        Backend::Graph => 3,
        Backend::Streams => 4,
        Backend::Cpu => 5,
    }
}

impl Backend {
    /// Every backend.
    pub const ALL: [Backend; TABLE.len()] = {
        let mut all = [Backend::Cpu; TABLE.len()];
        let mut i = 0;
        while i < TABLE.len() {
            all[i] = TABLE[i].backend;
            i += 1;
        }
        all
    };

    fn entry(self) -> &'static Entry {
        &TABLE[row(self)]
    }

    /// The backend's lowercase name: `persistent`, `barrier`, `grid-barrier`, `graph`,
    /// `streams` or `cpu`.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Whether the backend runs on the GPU.
    pub fn needs_gpu(self) -> bool {
        matches!(self.entry().run, Run::Gpu(_))
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
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
                    "unknown backend `{s}`: expected one of {}",
                    Self::ALL.map(Self::name).join(", ")
                )
            })
    }
}

/// What runs a call: a GPU handle (the runtime's, or a helper thread's) or the CPU backend.
pub(crate) enum Executor<'g> {
    /// A GPU handle.
    Gpu(&'g Gpu),
    /// The CPU backend, with this many worker threads.
    Cpu { workers: u32 },
}

impl Executor<'_> {
    /// The backend a call runs on when its options name none.
    pub fn own(&self) -> Backend {
        match self {
            Executor::Gpu(_) => Backend::Persistent,
            Executor::Cpu { .. } => Backend::Cpu,
        }
    }
}

/// The error for GPU backend `backend` on the CPU runtime, which is there because of `fallback`
/// (when it fell back).
pub(crate) fn no_gpu(backend: Backend, fallback: Option<&str>) -> Error {
    Error::NoGpu {
        reason: format!(
            "backend `{}` runs on the GPU, and this runtime is the CPU backend{}",
            backend.name(),
            fallback.map(|r| format!(" ({r})")).unwrap_or_default()
        ),
    }
}

/// Runs `call` on `executor`, with the backend its options name (or the executor's own), which
/// finds in `kept` what it left there in the plan's earlier runs.
/// `fallback` is why the runtime is on the CPU, if it fell back there.
pub(crate) fn execute(
    executor: &Executor<'_>,
    fallback: Option<&str>,
    call: &mut Call<'_, '_>,
    kept: &mut Kept,
) -> Result<Report, Error> {
    let backend = call.work.options().backend.unwrap_or(executor.own());
    let entry = backend.entry();
    // The grid barrier strides its blocks over a level's tasks, and the graph and streams
    // backends launch one block per task, several launches at once: none of them can give a gang
    // its blocks at once. The barrier backend launches a gang's blocks together
    // (`levels::listed_launches`).
    if !matches!(
        backend,
        Backend::Persistent | Backend::Cpu | Backend::Barrier
    ) && let Some((task, blocks)) = call.work.widest_gang()
    {
        return Err(Error::GangsUnsupported {
            region: call.work.meta().name,
            task,
            blocks,
            backend: entry.name,
        });
    }
    let mut start = Instant::now();
    // The host's own time starts once the call no longer waits for the runs it follows.
    let mut waited = |call: &Call<'_, '_>| {
        call.wait_for_earlier();
        start = Instant::now();
    };
    let report = match (executor, entry.run) {
        (Executor::Cpu { .. }, Run::Gpu(_)) => Err(no_gpu(backend, fallback)),
        (Executor::Cpu { workers }, Run::Cpu(run)) => {
            waited(call);
            run(call, *workers, kept)
        }
        (Executor::Gpu(_), Run::Cpu(run)) => {
            waited(call);
            run(call, cpu::default_workers(), kept)
        }
        (Executor::Gpu(gpu), Run::Gpu(run)) => {
            if !entry.orders_on_device {
                waited(call);
            }
            let _stream = gpu.stream_turn();
            gpu.check_usable()?;
            let _turn = entry.exclusive.then(|| gpu.exclusive());
            run(gpu, call, kept)
        }
    };
    report.map(|mut report| {
        let spent = report.transfer_time + report.setup_time + report.execute_time;
        report.host_time = start.elapsed().saturating_sub(spent);
        report
    })
}

/// The workers a run of `work` needs at least: the blocks of its widest task (see
/// [`taskweave_device::gang`]), or 1.
pub(crate) fn gang_floor(work: &crate::work::Work) -> u32 {
    work.widest_gang().map_or(1, |(_, blocks)| blocks)
}

/// An error unless `workers` can run `work`'s widest gang.
pub(crate) fn check_gangs(work: &crate::work::Work, workers: u32) -> Result<(), Error> {
    match work.widest_gang() {
        Some((task, blocks)) if blocks > workers => Err(Error::GangTooWide {
            region: work.meta().name,
            task,
            blocks,
            workers,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::{Backend, TABLE, row};

    #[test]
    fn the_table_has_one_row_per_backend_in_order() {
        for (i, entry) in TABLE.iter().enumerate() {
            assert_eq!(row(entry.backend), i, "{} is out of place", entry.name);
        }
        assert_eq!(Backend::ALL.len(), TABLE.len());
    }

    #[test]
    fn every_backend_parses_from_its_name() {
        for backend in Backend::ALL {
            assert_eq!(backend.name().parse::<Backend>(), Ok(backend));
            assert_eq!(backend.to_string(), backend.name());
        }
        assert_eq!("graph".parse::<Backend>(), Ok(Backend::Graph));
        assert_eq!("streams".parse::<Backend>(), Ok(Backend::Streams));
        let error = "gpu".parse::<Backend>().unwrap_err();
        assert_eq!(
            error,
            "unknown backend `gpu`: expected one of persistent, barrier, grid-barrier, graph, \
             streams, cpu"
        );
        assert!(!Backend::Cpu.needs_gpu());
        assert!(
            Backend::ALL
                .iter()
                .filter(|b| **b != Backend::Cpu)
                .all(|b| b.needs_gpu())
        );
    }
}
