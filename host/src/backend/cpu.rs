//! The `cpu` backend: the device crate's scheduler core on OS threads.
//!
//! 1. The same tables as on the GPU are built in host memory: task table, CSR, dependence counters,
//!    queues, counters ([`Tables`]).
//! 2. Each worker is a group of `cpu_lanes` threads that together emulate one block; every lane runs
//!    [`run_worker`] exactly as a GPU thread does, with the region's dispatch table wrapped so that a
//!    panicking task is caught, recorded and turned into an abort.
//! 3. The calling thread is the watchdog: when no task completes for the region's watchdog timeout
//!    it raises the abort flag and reports the tasks the workers were running.
//! 4. On any error the region's writable host arrays are restored from a snapshot, so the host
//!    data is as it was before the run (resident arrays stay as the tasks left them, as on the
//!    GPU).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use taskweave_device::abi::{ArrayDesc, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::arch::host::{Lane, LaneGroup, enter_lane};
use taskweave_device::sched::{Dispatch, WorkerView, command, run_worker, words};
use taskweave_device::{Block, shared};

use super::Kept;
use crate::call::Call;
use crate::error::Error;
use crate::options::Backend;
use crate::report::Report;
use crate::sm::SmLayout;
use crate::tables::Tables;

/// The default worker count: the host's available parallelism.
pub fn default_workers() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// A task failure caught on a lane.
pub(crate) struct Caught {
    pub task: u32,
    pub message: String,
}

/// The region's dispatch table, made panic-safe for one worker.
struct Catching<'a> {
    inner: &'a dyn Dispatch,
    failure: &'a Mutex<Option<Caught>>,
    abort: &'a AtomicU32,
    words: &'a [taskweave_device::atomic::AtomicU32],
    group: Option<&'a LaneGroup>,
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

std::thread_local! {
    /// Set while this thread runs a task body: its panics are reported as errors, not printed.
    static IN_TASK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Installs, once, a panic hook that stays silent for panics inside task bodies (they become
/// [`Error::TaskPanicked`]) and defers to the previous hook for every other panic.
fn silence_task_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_TASK.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
}

impl Dispatch for Catching<'_> {
    fn gangs(&self) -> bool {
        self.inner.gangs()
    }

    fn width(&self, kind: u32) -> u32 {
        self.inner.width(kind)
    }

    fn run(&self, block: &Block, kind: u32, args: &[u64], arrays: &[ArrayDesc], checked: bool) {
        IN_TASK.with(|t| t.set(true));
        let result = catch_unwind(AssertUnwindSafe(|| {
            self.inner.run(block, kind, args, arrays, checked)
        }));
        IN_TASK.with(|t| t.set(false));
        let Err(payload) = result else { return };
        let mut failure = self
            .failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if failure.is_none() {
            *failure = Some(Caught {
                task: block.task(),
                message: panic_message(&*payload),
            });
        }
        drop(failure);
        self.abort.store(1, Ordering::Release);
        // With several lanes, leave the block for good, as a GPU thread that exits does: the other
        // lanes stop waiting for us and, seeing ABORT, leave their loop too.
        if let Some(group) = self.group {
            self.words[words::CURRENT].store(
                command::ABORT,
                taskweave_device::atomic::Scope::Block,
                taskweave_device::atomic::Ordering::Relaxed,
            );
            group.retire();
            std::panic::resume_unwind(payload);
        }
    }
}

/// Runs the call's DAG on `workers` threads (or, with SM-aware workers, on `workers_per_sm`
/// threads for each SM of the set, each of the `workers` threads counting as one SM).
pub(super) fn execute(
    call: &mut Call<'_, '_>,
    workers: u32,
    kept: &mut Kept,
) -> Result<Report, Error> {
    let (meta, options) = (*call.work.meta(), call.work.options().clone());
    let options = &options;
    if let Some(b) = call.arrays.iter().find(|b| b.device.is_some()) {
        return Err(Error::ArrayElsewhere {
            region: meta.name,
            array: b.info.name,
            detail: "is resident on a GPU, which the CPU backend cannot reach: upload it with the CPU runtime",
        });
    }
    // No SMs here: each worker thread the runtime would start stands for one, with no limit on
    // the workers sharing it.
    let sms = SmLayout::resolve(meta.name, options, workers, None, |_| 1)?;
    let workers = match &sms {
        Some(layout) => layout.workers(),
        None => options
            .workers
            .unwrap_or_else(|| workers.max(super::gang_floor(call.work)))
            .max(1),
    };
    super::check_gangs(call.work, workers)?;
    // The tables as they start: kept in the plan when it runs again, cloned for each run.
    let pristine = match kept.cpu.take() {
        Some(tables) if tables.workers == workers && tables.policy == options.run_policy() => {
            tables
        }
        _ => Tables::new(
            call.work.inspection(),
            workers,
            options.run_policy(),
            &sms.as_ref().map(SmLayout::reserve).unwrap_or_default(),
            options.task_costs.as_ref(),
            |of| call.work.planned_start(of),
        ),
    };
    let mut tables = if call.reused {
        let tables = pristine.clone();
        kept.cpu = Some(pristine);
        tables
    } else {
        pristine
    };
    let inspection = call.work.inspection();
    let lanes = options.cpu_lanes.max(1);
    let n = inspection.task_count();
    let arrays: Vec<ArrayDesc> = call
        .arrays
        .iter()
        .map(|b| ArrayDesc {
            ptr: b.ptr as u64,
            len: b.info.len as u64,
        })
        .collect();
    // Host arrays are restored after a failure; resident ones stay as the tasks left them (see
    // `DeviceArray`), so a time-stepping loop on resident arrays copies nothing per call.
    let snapshot: Vec<(usize, Vec<u8>)> = call
        .arrays
        .iter()
        .enumerate()
        .filter(|(_, b)| b.info.writable && b.cell.is_none())
        .map(|(i, b)| (i, b.bytes().to_vec()))
        .collect();
    let restore = || {
        for (i, bytes) in &snapshot {
            // SAFETY: the array is writable and every worker has been joined.
            unsafe { call.arrays[*i].write(bytes) };
        }
    };

    let mut trace = vec![TraceRecord::default(); if options.trace { n } else { 0 }];
    let mut stats = vec![WorkerStats::default(); workers as usize];
    let abort = AtomicU32::new(0);
    let current: Vec<AtomicU32> = (0..workers).map(|_| AtomicU32::new(u32::MAX)).collect();
    let desc = RegionDesc {
        arrays: arrays.as_ptr() as u64,
        abort: abort.as_ptr() as u64,
        stats: stats.as_mut_ptr() as u64,
        current: current.as_ptr() as u64,
        trace: if options.trace {
            trace.as_mut_ptr() as u64
        } else {
            0
        },
        ..tables.desc(inspection, options.desc(workers, arrays.len()))
    };
    let failure = Mutex::new(None);
    let start = Instant::now();
    let mut stalled = None;
    let mut running = Vec::new();
    if n > 0 {
        let pool = Pool {
            desc: &desc,
            sms: sms.as_ref(),
            lanes,
            options,
            dispatch: meta.dispatch,
            failure: &failure,
            abort: &abort,
        };
        // SAFETY: every table `desc` points to lives until the workers are joined.
        (stalled, running) = unsafe { pool.run(|| tables.completed(), || ()) }.1;
        if let Some(waited) = stalled {
            stalled_message(inspection, waited, &running);
        }
    }
    let execute_time = start.elapsed();

    let caught = (failure.into_inner()).unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(error) = failed(inspection, caught, stalled, running, || {
        tables.completed() as usize
    }) {
        restore();
        return Err(error);
    }
    Ok(Report::new(
        call,
        Backend::Cpu,
        workers,
        lanes,
        Duration::ZERO,
        execute_time,
        stats,
        options.trace.then_some(trace),
    ))
}

/// The worker threads of one run: what each lane needs to run [`run_worker`].
pub(crate) struct Pool<'p> {
    pub desc: &'p RegionDesc,
    pub sms: Option<&'p SmLayout>,
    pub lanes: u32,
    pub options: &'p crate::options::Options,
    pub dispatch: &'p dyn Dispatch,
    pub failure: &'p Mutex<Option<Caught>>,
    pub abort: &'p AtomicU32,
}

impl Pool<'_> {
    /// Starts the workers on the tables of `desc`, runs `during` on the calling thread meanwhile,
    /// then watches them until they end (raising the abort flag when `completed` stops moving for
    /// the watchdog's timeout). Returns what `during` returned, and, when the watchdog aborted,
    /// how long it waited and the tasks the workers were running.
    ///
    /// # Safety
    /// Every table `desc` points to must live, and be written only as the scheduler's protocol
    /// allows, until this returns.
    pub(crate) unsafe fn run<R>(
        &self,
        completed: impl Fn() -> u32,
        during: impl FnOnce() -> R,
    ) -> (R, (Option<Duration>, Vec<u32>)) {
        silence_task_panics();
        let workers = self.desc.n_workers;
        let lanes = self.lanes;
        let block_words: Vec<Vec<taskweave_device::atomic::AtomicU32>> = (0..workers)
            .map(|_| {
                (0..shared::RUNTIME_WORDS)
                    .map(|_| taskweave_device::atomic::AtomicU32::new(0))
                    .collect()
            })
            .collect();
        let mut scratch: Vec<Vec<u128>> = (0..workers)
            .map(|_| vec![0u128; self.options.cpu_scratch().div_ceil(16) as usize])
            .collect();
        // SAFETY: the caller's promise.
        let rt = unsafe { WorkerView::from_desc(self.desc) };
        let current = self.desc.current as *const AtomicU32;
        std::thread::scope(|scope| {
            let mut handles = Vec::new();
            for (worker, (block_words, scratch)) in
                block_words.iter().zip(scratch.iter_mut()).enumerate()
            {
                let worker = worker as u32;
                let sm = self
                    .sms
                    .map_or(worker % default_workers(), |l| l.sm_of(worker));
                let group = (lanes > 1).then(|| LaneGroup::new(lanes));
                let block_words = block_words.as_slice();
                // Shared by the worker's lanes, as a block's shared memory is.
                let scratch = scratch.as_mut_ptr() as usize;
                for lane in 0..lanes {
                    let group = group.clone();
                    let rt = &rt;
                    let (failure, abort, dispatch) = (self.failure, self.abort, self.dispatch);
                    let bytes = self.options.cpu_scratch() as usize;
                    let gpu_threads = self.options.threads;
                    handles.push(scope.spawn(move || {
                        enter_lane(Lane {
                            thread: lane,
                            block_dim: lanes,
                            block: worker,
                            grid_dim: workers,
                            sm,
                            group: group.clone(),
                            gpu_threads,
                        });
                        let catching = Catching {
                            inner: dispatch,
                            failure,
                            abort,
                            words: block_words,
                            group: group.as_deref(),
                        };
                        // SAFETY: `block_words` and `scratch` belong to this worker's lanes alone.
                        let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
                            run_worker(
                                rt,
                                worker,
                                block_words,
                                scratch as *mut u8,
                                bytes,
                                &catching,
                            )
                        }));
                    }));
                }
            }
            let during = during();
            let stalled = watch(&completed, self.abort, &handles, self.options.watchdog);
            let running = match stalled {
                // SAFETY: `current` has one word per worker, alive until the scope ends.
                Some(_) => (0..workers as usize)
                    .map(|w| unsafe { (*current.add(w)).load(Ordering::Relaxed) })
                    .filter(|&t| t != u32::MAX)
                    .collect(),
                None => Vec::new(),
            };
            (during, (stalled, running))
        })
    }
}

/// Says what a stalled run waits for: a CPU task cannot be interrupted, so the call names the
/// tasks it waits to return rather than hanging mutely.
/// How a run of `inspection`'s tasks failed, if it did: a task that panicked (`caught`), else a
/// stall of `stalled` with the workers `running` those tasks and `done` tasks finished. The
/// caller has restored the arrays.
pub(crate) fn failed(
    inspection: &crate::inspect::Inspection,
    caught: Option<Caught>,
    stalled: Option<Duration>,
    running: Vec<u32>,
    done: impl FnOnce() -> usize,
) -> Option<Error> {
    if let Some(caught) = caught {
        return Some(Error::TaskPanicked {
            task: inspection.task_ref(caught.task),
            message: caught.message,
            restored: true,
        });
    }
    let n = inspection.task_count();
    stalled.map(|waited| Error::Stalled {
        region: inspection.region,
        waited,
        unfinished: n.saturating_sub(done()),
        tasks: n,
        first: (running.into_iter().take(8))
            .map(|t| inspection.task_ref(t))
            .collect(),
    })
}

fn stalled_message(inspection: &crate::inspect::Inspection, waited: Duration, running: &[u32]) {
    let names: Vec<String> = running
        .iter()
        .filter(|&&t| (t as usize) < inspection.task_count())
        .map(|&t| inspection.task_ref(t).to_string())
        .collect();
    eprintln!(
        "taskweave: region `{}` stalled for {waited:?}; aborted, waiting for running tasks to return: {}",
        inspection.region,
        names.join("; ")
    );
}

/// Waits for the workers, raising the abort flag when no task completes for `timeout`. Returns how
/// long it waited when it had to abort.
fn watch<T>(
    completed: &impl Fn() -> u32,
    abort: &AtomicU32,
    handles: &[std::thread::ScopedJoinHandle<'_, T>],
    timeout: Duration,
) -> Option<Duration> {
    let mut last = completed();
    let mut since = Instant::now();
    let mut tick = Duration::from_micros(50);
    while !handles.iter().all(|h| h.is_finished()) {
        std::thread::sleep(tick);
        tick = (tick * 2).min(Duration::from_millis(5));
        let now = completed();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() > timeout && abort.load(Ordering::Relaxed) == 0 {
            abort.store(1, Ordering::Release);
            return Some(since.elapsed());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    //! The CPU backend on a hand-built region, small enough for Miri to check every pointer the
    //! backend hands its workers: the tables behind the descriptor, the per-worker words and scratch,
    //! the arrays, and the snapshot it restores after a failure.

    use std::panic::Location;

    use taskweave_device::Block;
    use taskweave_device::abi::ArrayDesc;
    use taskweave_device::sched::Dispatch;

    use crate::error::Error;
    use crate::inspect::Access;
    use crate::meta::RegionMeta;
    use crate::region::Region;
    use crate::report::Report;
    use crate::runtime::Runtime;

    /// Kind 0 adds 1 to `x[lo..hi]` (argument words: slot, lo, hi); kind 1 panics.
    struct Bump;

    impl Dispatch for Bump {
        fn run(&self, block: &Block, kind: u32, args: &[u64], arrays: &[ArrayDesc], _: bool) {
            assert_eq!(kind, 0, "kind 1 fails on purpose");
            let x = arrays[args[0] as usize].ptr as *mut u32;
            block.par_for(args[1] as usize..args[2] as usize, |i| {
                // SAFETY: `i` lies in the task's declared range, which inspection checked against
                // the array; the block's lanes take distinct `i`.
                unsafe { *x.add(i) += 1 };
            });
        }
    }

    /// One task per `(kind, lo, hi)` of `tasks` over `data[lo..hi]`, on 2 workers of 2 lanes.
    fn run(data: &mut [u32], tasks: &'static [(u32, u64, u64)]) -> Result<Report, Error> {
        let mut region = Region::new(RegionMeta {
            name: "bumps",
            kernel: "taskweave_region_bumps",
            code: None,
            kinds: &["bump", "fail"],
            args: &[],
            dispatch: &Bump,
            location: Location::caller(),
        });
        let x = region.bind_mut(data, "x");
        region
            .body(move |rec| {
                for &(kind, lo, hi) in tasks {
                    let range = lo as usize..hi as usize;
                    let access = |write| Access {
                        slot: x.slot(),
                        range: range.clone(),
                        write,
                        param: "x",
                    };
                    let words = [u64::from(x.slot()), lo, hi];
                    rec.spawn(
                        kind,
                        Location::caller(),
                        &words,
                        &[access(false), access(true)],
                    )?;
                }
                Ok(())
            })
            .cpu_lanes(2)
            .run(&Runtime::cpu_with(2))
    }

    #[test]
    fn overlapping_tasks_run_in_order_on_several_workers_and_lanes() {
        let mut data = vec![0u32; 6];
        let report =
            run(&mut data, &[(0, 0, 4), (0, 2, 6), (0, 0, 1), (0, 5, 6)]).expect("the region runs");
        assert_eq!((report.tasks, report.edges), (4, 3));
        assert_eq!(data, [2, 1, 2, 2, 1, 2]);
    }

    #[test]
    fn a_failed_task_restores_the_arrays() {
        let mut data = vec![7u32; 4];
        let error = run(&mut data, &[(0, 0, 4), (1, 0, 4)]).expect_err("task 1 fails");
        assert!(
            matches!(&error, Error::TaskPanicked { task, restored: true, .. } if task.index == 1),
            "{error}"
        );
        assert_eq!(data, [7; 4]);
    }
}
