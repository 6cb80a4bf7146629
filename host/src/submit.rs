//! Regions submitted without waiting, run by hidden helper threads (after the OpenMP runtime's
//! hidden helper threads for `target nowait`).
//!
//! 1. [`Region::submit`](crate::Region::submit) inspects the region on the caller's thread, copies
//!    its host arrays into buffers the job owns ([`detach`]), and registers its accesses with the
//!    resident arrays it shares, which gives the regions in flight it must follow.
//! 2. The job goes into one queue served by [`HELPERS`] helper threads, each with its own streams
//!    (its own [`Gpu::with_own_streams`](crate::gpu::Gpu::with_own_streams)). A helper stages the
//!    job, orders it after its
//!    predecessors, runs it on the runtime's backend, and signals its completion. On the
//!    persistent GPU backend the order is kept on the device, as the OpenMP runtime does: the
//!    job's stream waits for the events that end its predecessors' kernels, so its upload overlaps
//!    them and its kernel starts with no host round trip. Other backends wait on the host.
//! 3. [`Pending::wait`] returns the report and copies the results into the caller's writable host
//!    arrays, which the caller lends until then.
//!
//! Helpers take jobs in submission order and a job waits only for jobs submitted before it, so the
//! oldest unfinished job is always running or about to: the pool cannot deadlock.
//!
//! Nothing the helpers touch is borrowed from the caller: a [`Pending`] that is leaked rather than
//! waited on loses its results, never memory safety.

use std::marker::PhantomData;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Instant;

use crate::backend::Kept;
use crate::call::{Binding, Call, Order};
use crate::error::Error;
use crate::plan::Plan;
use crate::report::Report;
use crate::resident::Done;

/// Helper threads per runtime: the OpenMP runtime's default number of hidden helper threads.
pub const HELPERS: usize = 8;

/// Where a writable host array's result goes back.
pub(crate) struct WriteBack<'a> {
    /// Index of the job's copy of the array.
    pub copy: usize,
    /// The caller's array.
    pub binding: Binding<'a>,
}

/// `arrays` with their host arrays copied into buffers the job will own, so that the job can run
/// on another thread after the caller's borrows end; plus the buffers, and where each writable
/// host array's result goes back.
pub(crate) fn detach<'a>(
    arrays: Vec<Binding<'a>>,
) -> (Vec<Binding<'static>>, Vec<Vec<u64>>, Vec<WriteBack<'a>>) {
    let mut copies = Vec::new();
    let mut writeback = Vec::new();
    let arrays = arrays
        .into_iter()
        .map(|b| {
            if b.cell.is_some() || b.ptr.is_null() {
                return b.moved(b.ptr);
            }
            let mut copy = vec![0u64; b.bytes.div_ceil(8).max(1)];
            let bytes = b.bytes();
            // SAFETY: `copy` holds at least `bytes.len()` bytes; they do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    copy.as_mut_ptr().cast::<u8>(),
                    bytes.len(),
                )
            };
            // The heap block does not move with the vector, and `as_mut_ptr` creates no reference
            // to it: the pointer stays valid while the job owns `copies`.
            let detached = b.moved(copy.as_mut_ptr().cast());
            if b.info.writable {
                writeback.push(WriteBack {
                    copy: copies.len(),
                    binding: b,
                });
            }
            copies.push(copy);
            detached
        })
        .collect();
    (arrays, copies, writeback)
}

/// A job's report or error, and its copies of the host arrays.
type Ended = (Result<Report, Error>, Vec<Vec<u64>>);

/// What a job leaves for its [`Pending`].
struct Outcome {
    done: Arc<Done>,
    /// Set when the job ends.
    result: Mutex<Option<Ended>>,
}

/// A call handed to the helpers.
pub(crate) struct Job {
    plan: Plan,
    /// The arrays, pointing into `copies` for host arrays.
    arrays: Vec<Binding<'static>>,
    /// The job's copies of its host arrays.
    copies: Vec<Vec<u64>>,
    order: Order,
    outcome: Arc<Outcome>,
}

// SAFETY: the arrays' raw pointers point into `copies` (owned by the job) or into resident arrays
// whose memory the bindings keep alive; the plan's metadata is `'static` and `Sync`.
unsafe impl Send for Job {}

impl Job {
    /// A job for `plan` on `arrays` (detached: see [`detach`]), ordered by `order`, and the
    /// [`Pending`] its caller waits on.
    pub fn new<'a>(
        plan: Plan,
        arrays: Vec<Binding<'static>>,
        copies: Vec<Vec<u64>>,
        order: Order,
        writeback: Vec<WriteBack<'a>>,
    ) -> (Self, Pending<'a>) {
        let outcome = Arc::new(Outcome {
            done: order.done.clone(),
            result: Mutex::new(None),
        });
        let pending = Pending {
            region: plan.region(),
            outcome: Some(outcome.clone()),
            writeback,
            started: Instant::now(),
            _marker: PhantomData,
        };
        let job = Job {
            plan,
            arrays,
            copies,
            order,
            outcome,
        };
        (job, pending)
    }

    /// Runs the job with `execute` (which orders it after its predecessors: see [`Order`]), and
    /// publishes the outcome.
    pub fn run(mut self, execute: &dyn Fn(&mut Call<'_, '_>, &mut Kept) -> Result<Report, Error>) {
        let region = self.plan.region();
        // A panic here is a bug outside any task (task panics become errors inside the backends);
        // it must still end the job, or its waiters would wait for ever.
        // The region was inspected when it was submitted.
        let (inspect_time, edges_time) = (
            self.plan.inspection().time,
            self.plan.inspection().edges_time,
        );
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let (work, kept) = self.plan.parts();
            let mut call = Call {
                work,
                arrays: &self.arrays,
                order: Some(&self.order),
                inspect_time,
                edges_time,
                reused: false,
                prestaged: None,
            };
            execute(&mut call, kept)
        }))
        .unwrap_or_else(|payload| {
            Err(Error::NotRun {
                region,
                reason: format!(
                    "its helper thread panicked: {}",
                    payload
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| payload.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)")
                ),
            })
        });
        // The bindings point into `copies`: drop them before handing the copies over.
        drop(self.arrays);
        *self
            .outcome
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((result, self.copies));
        self.outcome.done.set();
    }
}

/// A region in flight: wait on it for its report and its results.
///
/// Dropping it waits too (and copies the results back, discarding an error): the caller's
/// writable host arrays are lent to it until then.
#[must_use = "a submitted region's results reach its host arrays only through `wait` (or drop)"]
pub struct Pending<'a> {
    region: &'static str,
    outcome: Option<Arc<Outcome>>,
    writeback: Vec<WriteBack<'a>>,
    /// When the caller submitted the region: [`Report::wall_time`] counts from here.
    started: Instant,
    _marker: PhantomData<&'a mut [u8]>,
}

impl Pending<'_> {
    /// This pending region, with its call started at `start`.
    pub(crate) fn started(mut self, start: Instant) -> Self {
        self.started = start;
        self
    }

    /// The region's name.
    pub fn region(&self) -> &'static str {
        self.region
    }

    /// Whether the region has ended (successfully or not).
    pub fn is_done(&self) -> bool {
        self.outcome.as_ref().is_none_or(|o| o.done.is_set())
    }

    /// Waits for the region, copies its results into the host arrays it writes, and returns its
    /// report. On an error the host arrays are left as they were.
    pub fn wait(mut self) -> Result<Report, Error> {
        self.finish()
    }

    fn finish(&mut self) -> Result<Report, Error> {
        let outcome = self
            .outcome
            .take()
            .expect("a pending region is finished once");
        outcome.done.wait();
        let (result, copies) = outcome
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .expect("a finished job leaves its outcome");
        if result.is_ok() {
            for wb in &self.writeback {
                let copy = &copies[wb.copy];
                // SAFETY: the copy holds at least `bytes` bytes; `bytes_of` views them.
                let bytes = unsafe {
                    std::slice::from_raw_parts(copy.as_ptr().cast::<u8>(), wb.binding.bytes)
                };
                // SAFETY: the array is writable (`&mut` lent to this `Pending`) and the job ended.
                unsafe { wb.binding.write(bytes) };
            }
        }
        result.map(|report| Report {
            wall_time: self.started.elapsed(),
            ..report
        })
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.outcome.is_some() {
            let _ = self.finish();
        }
    }
}

impl std::fmt::Debug for Pending<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("region", &self.region)
            .field("done", &self.is_done())
            .finish()
    }
}

/// The helper threads of one runtime.
pub(crate) struct Helpers {
    jobs: Mutex<Option<Sender<Job>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Helpers {
    /// Starts `handles.len()` helpers; helper `i` runs its jobs with `execute(&handles[i], …)`.
    /// Fails only when the system will not start a single thread; fewer helpers than handles still
    /// serve.
    pub fn start<L: Send + 'static>(
        handles: Vec<L>,
        execute: impl Fn(&L, &mut Call<'_, '_>, &mut Kept) -> Result<Report, Error>
        + Send
        + Sync
        + 'static,
    ) -> Result<Self, String> {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        let execute = Arc::new(execute);
        let mut refused = None;
        let threads: Vec<JoinHandle<()>> = handles
            .into_iter()
            .enumerate()
            .filter_map(|(i, handle)| {
                let receiver: Arc<Mutex<Receiver<Job>>> = receiver.clone();
                let execute = execute.clone();
                std::thread::Builder::new()
                    .name(format!("taskweave-helper-{i}"))
                    .spawn(move || {
                        loop {
                            // Taken under the lock: jobs leave the queue in submission order.
                            let job = receiver
                                .lock()
                                .unwrap_or_else(PoisonError::into_inner)
                                .recv();
                            let Ok(job) = job else { break };
                            job.run(&|call, kept| execute(&handle, call, kept));
                        }
                    })
                    .map_err(|e| refused = Some(e.to_string()))
                    .ok()
            })
            .collect();
        if threads.is_empty() {
            return Err(format!(
                "no helper thread could start: {}",
                refused.unwrap_or_else(|| "no handles".to_owned())
            ));
        }
        Ok(Self {
            jobs: Mutex::new(Some(sender)),
            threads: Mutex::new(threads),
        })
    }

    /// Queues `job` for the helpers.
    pub fn submit(&self, job: Job) {
        let unsent = match &*self.jobs.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(jobs) => jobs.send(job).err().map(|returned| returned.0),
            None => Some(job),
        };
        if let Some(job) = unsent {
            // The helpers are gone (the runtime is being dropped): end the job rather than lose
            // it, so that its waiters do not wait for ever.
            job.run(&|call, _| {
                call.wait_for_earlier();
                Err(Error::NotRun {
                    region: call.name(),
                    reason: "the runtime is shutting down".to_owned(),
                })
            });
        }
    }
}

impl Drop for Helpers {
    /// Lets the helpers finish the jobs queued, then joins them.
    fn drop(&mut self) {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        for thread in self
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            let _ = thread.join();
        }
    }
}
