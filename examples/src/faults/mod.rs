//! The fault checks shared by the `faults` program (GPU or CPU) and the CPU test: each provokes one
//! failure on purpose and checks the error that comes back, and that nothing was lost.
//!
//! Most checks run `faulty` with one misbehaving task ([`CHECKS`]). The others drive the runtime
//! directly ([`Check::Custom`]): empty regions on every backend, regions and uploads too large for
//! the device, PTX the GPU cannot load, several host threads sharing one runtime. Every check
//! whose regions can run on one chosen backend takes it ([`check_selected`]'s `backend`).
//!
//! What a check needs decides where it runs ([`Needs`]): the last two lose the CUDA context on
//! purpose (a trap, an illegal address), after which every region of the process fails fast, so
//! each must run in a process of its own (the `faults` program starts one per such check), and
//! each first runs a clean region, so that it cannot pass on a context an earlier check lost.

use std::time::Duration;

use taskweave::{Backend, Error, Policy, Region, Report, Runtime, TaskRef};
use taskweave_kernels::faults::{faulty, faulty_fan, mode};

mod gpu;
use gpu::{
    context_lost, kept_plans_give_memory_back, never_returns, outlives_the_grace,
    ptx_for_a_newer_gpu, ptx_rejected, staging_out_of_memory, too_large, upload_too_large,
};

/// One check's outcome: its name, whether it passed, and what it saw.
pub struct Outcome {
    /// The check.
    pub name: &'static str,
    /// Whether the error was the right one.
    pub ok: bool,
    /// The error (or result) as reported.
    pub detail: String,
}

const N: usize = 257;
const VICTIM: usize = 100;

/// What a check needs of the runtime and backend it runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Runs on any runtime and backend.
    Any,
    /// A GPU runtime.
    Gpu,
    /// A GPU runtime and a process of its own: the check loses the CUDA context.
    GpuAlone,
    /// The persistent GPU backend: the one that keeps device memory in a plan.
    Persistent,
}

impl Needs {
    /// Why a check with these needs cannot run on `rt` with `backend` (the runtime's own when
    /// `None`), or `None` when it can.
    pub fn missing(self, rt: &Runtime, backend: Option<Backend>) -> Option<&'static str> {
        let gpu = rt.gpu_device().is_some();
        let backend = backend.unwrap_or(if gpu {
            Backend::Persistent
        } else {
            Backend::Cpu
        });
        match self {
            Self::Any => None,
            Self::Gpu | Self::GpuAlone => (!gpu).then_some("needs a GPU"),
            Self::Persistent => (!gpu || backend != Backend::Persistent)
                .then_some("only the persistent GPU backend keeps device memory in a plan"),
        }
    }
}

/// One fault to provoke and what must come back.
enum Check {
    /// `faulty` with task `VICTIM` misbehaving as `how` says.
    Faulty {
        name: &'static str,
        needs: Needs,
        how: u32,
        arg: u64,
        checked: bool,
        watchdog: Duration,
        expect: fn(&Result<Report, Error>, &[u32]) -> bool,
    },
    /// Anything else, on the given backend where it runs regions: `Ok(what it saw)` when the
    /// check passes, `Err(what went wrong)` otherwise.
    Custom {
        name: &'static str,
        needs: Needs,
        run: fn(&Runtime, Option<Backend>) -> Result<String, String>,
    },
}

impl Check {
    fn name(&self) -> &'static str {
        match self {
            Self::Faulty { name, .. } | Self::Custom { name, .. } => name,
        }
    }

    fn needs(&self) -> Needs {
        match self {
            Self::Faulty { needs, .. } | Self::Custom { needs, .. } => *needs,
        }
    }
}

/// `region` on `backend`, or on the runtime's own backend when `None`.
fn on(region: Region<'_>, backend: Option<Backend>) -> Region<'_> {
    match backend {
        Some(b) => region.backend(b),
        None => region,
    }
}

fn untouched(x: &[u32]) -> bool {
    x.iter().enumerate().all(|(i, &v)| v == i as u32 * 10)
}

fn names_victim(task: &TaskRef) -> bool {
    task.index == VICTIM as u32 && task.kind == "step"
}

/// The failed task and its message, from either backend's error.
fn failure(result: &Result<Report, Error>) -> Option<(&TaskRef, &str)> {
    match result {
        Err(Error::TaskPanicked { task, message, .. })
        | Err(Error::TaskFault { task, message, .. }) => Some((task, message.as_str())),
        _ => None,
    }
}

/// Every element stepped once, the victim's after reading `victim_base`.
fn stepped(x: &[u32], victim_base: u32) -> bool {
    x[..N - 1].iter().enumerate().all(|(i, &v)| {
        v == if i == VICTIM {
            victim_base
        } else {
            i as u32 * 10
        } + 1
    })
}

/// Every element but the victim's stepped once (the victim's value is the stray read's).
fn stepped_but_victim(x: &[u32]) -> bool {
    x[..N - 1]
        .iter()
        .enumerate()
        .all(|(i, &v)| i == VICTIM || v == i as u32 * 10 + 1)
}

const CHECKS: &[Check] = &[
    Check::Faulty {
        name: "a task panics",
        needs: Needs::Any,
        how: mode::PANIC,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| {
            failure(r).is_some_and(|(t, m)| names_victim(t) && m.contains("deliberate failure"))
                && untouched(x)
        },
    },
    // The error names the array as the region calls it, on the GPU as on the CPU.
    Check::Faulty {
        name: "a write outside the declared range (checked)",
        needs: Needs::Any,
        how: mode::STRAY_WRITE,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| {
            failure(r).is_some_and(|(t, m)| {
                names_victim(t) && m.contains(&(N - 1).to_string()) && m.contains("array `x`")
            }) && untouched(x)
        },
    },
    Check::Faulty {
        name: "a read outside the declared range (checked)",
        needs: Needs::Any,
        how: mode::STRAY_READ,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| failure(r).is_some_and(|(t, _)| names_victim(t)) && untouched(x),
    },
    // Unchecked, the stray read runs and reads whatever the device holds there: a GPU backend
    // uploads only the elements the tasks declare, so the value is not the host's. Every other
    // element is stepped.
    Check::Faulty {
        name: "the same read unchecked runs",
        needs: Needs::Any,
        how: mode::STRAY_READ,
        arg: 0,
        checked: false,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped_but_victim(x),
    },
    // The task ends 600 ms after it starts: after the watchdog, within its grace on the GPU
    // (which then counts the kernel as ended, not stuck), and the runtime goes on.
    Check::Faulty {
        name: "a task outlives the watchdog",
        needs: Needs::Any,
        how: mode::SLOW,
        arg: 600_000_000,
        checked: true,
        watchdog: Duration::from_millis(300),
        expect: |r, x| {
            matches!(r, Err(Error::Stalled { first, .. }) if first.iter().any(names_victim))
                && untouched(x)
        },
    },
    Check::Faulty {
        name: "the runtime still works afterwards",
        needs: Needs::Any,
        how: 0,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped(x, VICTIM as u32 * 10),
    },
    Check::Custom {
        name: "an empty region runs on every backend",
        needs: Needs::Any,
        run: |rt, _| empty_region(rt),
    },
    Check::Custom {
        name: "a plan's task panics on every call, replayed or not, and the plan goes on",
        needs: Needs::Any,
        run: planned_panic,
    },
    Check::Custom {
        name: "a plan fails on some calls and not on others, and each clean call steps the array",
        needs: Needs::Any,
        run: planned_panic_then_clean,
    },
    Check::Custom {
        name: "a task panics under the static policy while other workers wait for it",
        needs: Needs::Any,
        run: static_waiters,
    },
    Check::Custom {
        name: "a GPU ordinal that does not exist",
        needs: Needs::Any,
        run: |_, _| match Runtime::gpu(4096) {
            Err(e @ Error::NoGpu { .. }) => Ok(format!("error: {e}")),
            Err(e) => Err(format!("another error: {e}")),
            Ok(_) => Err("GPU 4096 opened".to_owned()),
        },
    },
    Check::Custom {
        name: "regions from several host threads share one runtime",
        needs: Needs::Any,
        run: shared_runtime,
    },
    Check::Custom {
        name: "a region larger than device memory fails before launch",
        needs: Needs::Gpu,
        run: too_large,
    },
    Check::Custom {
        name: "an upload larger than device memory is out of memory, and the runtime goes on",
        needs: Needs::Gpu,
        run: upload_too_large,
    },
    Check::Custom {
        name: "a nearly full device: regions the memory check admits stage and run, larger ones fail before copying",
        needs: Needs::Gpu,
        run: staging_out_of_memory,
    },
    Check::Custom {
        name: "a region that fits only without the runtime's kept plans gets their memory back",
        needs: Needs::Persistent,
        run: kept_plans_give_memory_back,
    },
    Check::Custom {
        name: "PTX for a newer GPU is refused, naming both architectures and the fix",
        needs: Needs::Gpu,
        run: ptx_for_a_newer_gpu,
    },
    Check::Custom {
        name: "PTX the driver rejects is refused, naming the architectures and the fix",
        needs: Needs::Gpu,
        run: ptx_rejected,
    },
    Check::Custom {
        name: "a task never returns: the call stalls within the watchdog and a second, later regions fail fast, and the process exits",
        needs: Needs::GpuAlone,
        run: never_returns,
    },
    Check::Custom {
        name: "a task outlives the watchdog's grace: later regions fail fast until it ends, then run",
        needs: Needs::GpuAlone,
        run: outlives_the_grace,
    },
    Check::Custom {
        name: "a task traps: the context is lost and later regions fail fast",
        needs: Needs::GpuAlone,
        run: |rt, backend| context_lost(rt, backend, mode::TRAP, 0),
    },
    Check::Custom {
        name: "a task writes an illegal address: the context is lost and later regions fail fast",
        needs: Needs::GpuAlone,
        run: |rt, backend| context_lost(rt, backend, mode::WILD, 16),
    },
];

fn initial() -> Vec<u32> {
    (0..N as u32).map(|i| i * 10).collect()
}

/// Zero tasks (an array of one element leaves `faulty` nothing to step) on every backend the
/// runtime has.
fn empty_region(rt: &Runtime) -> Result<String, String> {
    let backends: &[Backend] = if rt.gpu_device().is_some() {
        &[
            Backend::Persistent,
            Backend::Barrier,
            Backend::GridBarrier,
            Backend::Graph,
            Backend::Streams,
            Backend::Cpu,
        ]
    } else {
        &[Backend::Cpu]
    };
    for &backend in backends {
        let mut x = [5u32];
        match faulty(&mut x, 0, 0, 0).backend(backend).run(rt) {
            Ok(report) if report.tasks == 0 && x == [5] => {}
            Ok(report) => {
                return Err(format!(
                    "{}: {} tasks, x = {x:?}",
                    backend.name(),
                    report.tasks
                ));
            }
            Err(e) => return Err(format!("{}: {e}", backend.name())),
        }
    }
    let names: Vec<&str> = backends.iter().map(|b| b.name()).collect();
    Ok(format!("ok: 0 tasks on {}", names.join(", ")))
}

/// A plan whose victim panics, run three times with graph replay and once without: each call
/// fails naming the victim and leaves the array as it was (the tables a faulted call leaves behind
/// are reset for the next). Then a clean plan on the same array runs twice, on the tables of a
/// plan that already ran.
fn planned_panic(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    fn region(x: &mut [u32], how: u32, backend: Option<Backend>) -> Region<'_> {
        on(faulty(x, VICTIM, how, 0), backend)
    }
    let mut x = initial();
    let mut plan = region(&mut x, mode::PANIC, backend)
        .plan(rt)
        .map_err(|e| format!("making the plan: {e}"))?;
    for call in 0..4 {
        plan = plan.replay(call < 3);
        let result = plan.run(region(&mut x, mode::PANIC, backend), rt);
        let named = failure(&result)
            .is_some_and(|(t, m)| names_victim(t) && m.contains("deliberate failure"));
        if !named || !untouched(&x) {
            return Err(format!(
                "call {call}: {result:?}, array untouched: {}",
                untouched(&x)
            ));
        }
    }
    let mut clean = region(&mut x, 0, backend)
        .plan(rt)
        .map_err(|e| format!("making the clean plan: {e}"))?;
    for call in 0..2 {
        clean
            .run(region(&mut x, 0, backend), rt)
            .map_err(|e| format!("clean call {call}: {e}"))?;
    }
    let twice = x[..N - 1]
        .iter()
        .enumerate()
        .all(|(i, &v)| v == i as u32 * 10 + 2);
    if !twice {
        return Err(format!("after two clean calls: {:?}", &x[..8]));
    }
    Ok(
        "ok: 4 failing calls named the victim and left the array; 2 clean calls stepped it twice"
            .into(),
    )
}

/// One plan whose victim panics only while its element is odd, run four times, failing and clean
/// in turn: each failing call names the victim and leaves the array as it was, and each clean
/// call steps every element once. On the persistent backend the workers reset a plan's tables
/// themselves at the end of a clean run; a failed run ends before they can, and the next call
/// must find its tables reset all the same. Without that reset the clean call finds the failed
/// run's abort flag up and its error record claimed, and reports the old fault again
/// (`bench/results/finish-h100/mutation/`); the check above, whose calls all fail, cannot see it.
fn planned_panic_then_clean(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    fn region(x: &mut [u32], backend: Option<Backend>) -> Region<'_> {
        on(faulty(x, VICTIM, mode::PANIC_IF_ODD, 0), backend)
    }
    let mut x = initial();
    let mut plan = region(&mut x, backend)
        .plan(rt)
        .map_err(|e| format!("making the plan: {e}"))?;
    for round in 0..2u32 {
        // Odd: the call fails and leaves the array as it was.
        x[VICTIM] |= 1;
        let before = x.clone();
        let result = plan.run(region(&mut x, backend), rt);
        let named = failure(&result)
            .is_some_and(|(t, m)| names_victim(t) && m.contains("deliberate failure"));
        if !named || x != before {
            return Err(format!(
                "round {round}, failing call: {result:?}, array untouched: {}",
                x == before
            ));
        }
        // Even: the same plan runs clean and steps every element once.
        x[VICTIM] += 1;
        let before = x.clone();
        plan.run(region(&mut x, backend), rt)
            .map_err(|e| format!("round {round}, clean call: {e}"))?;
        let stepped_once = x[..N - 1].iter().zip(&before).all(|(&v, &b)| v == b + 1);
        if !stepped_once || x[N - 1] != before[N - 1] {
            return Err(format!(
                "round {round}, after the clean call: {:?}",
                &x[..8]
            ));
        }
    }
    Ok(
        "ok: 2 failing calls named the victim and left the array; 2 clean calls between and \
        after them stepped every element once"
            .into(),
    )
}

/// Four threads run regions on one runtime at once, each with a task that takes 0.4 s and a
/// watchdog of 0.6 s: a region that waited behind the others for the GPU would trip its watchdog if
/// the wait counted, and one that shared a stream or error record with another would come out
/// wrong.
fn shared_runtime(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    const THREADS: usize = 4;
    const ROUNDS: usize = 3;
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for round in 0..ROUNDS {
                        let mut x = initial();
                        let region = faulty(&mut x, VICTIM, mode::SLOW, 400_000_000)
                            .watchdog(Duration::from_millis(600))
                            .threads(64);
                        let result = on(region, backend).run(rt);
                        match result {
                            Ok(_) if stepped(&x, VICTIM as u32 * 10) => {}
                            Ok(_) => failures
                                .push(format!("thread {thread}, round {round}: wrong result")),
                            Err(e) => failures.push(format!("thread {thread}, round {round}: {e}")),
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec!["a thread panicked".to_owned()])
            })
            .collect()
    });
    if failures.is_empty() {
        Ok(format!(
            "ok: {} regions from {THREADS} threads",
            THREADS * ROUNDS
        ))
    } else {
        Err(failures.join("; "))
    }
}

/// `faulty_fan` under the static policy with its first task panicking: the other tasks wait on
/// its counter in many workers' lists, and must leave through the abort flag, not hang; the error
/// names the task, the host array is untouched, and the runtime goes on.
fn static_waiters(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    let mut x = initial();
    let region = faulty_fan(&mut x, mode::PANIC, 0)
        .policy(Policy::Static)
        .watchdog(Duration::from_secs(10))
        .threads(64);
    let result = on(region, backend).run(rt);
    if !untouched(&x) {
        return Err("the host array was written".to_owned());
    }
    let detail = match (&result, failure(&result)) {
        (Err(e), Some((task, message)))
            if task.index == 0 && task.kind == "step" && message.contains("deliberate failure") =>
        {
            format!("error: {e}")
        }
        (Err(e), _) => return Err(format!("another error: {e}")),
        (Ok(_), _) => return Err("the region succeeded".to_owned()),
    };
    let mut y = initial();
    match on(
        faulty_fan(&mut y, 0, 0).policy(Policy::Static).threads(64),
        backend,
    )
    .run(rt)
    {
        Ok(_) if (0..y.len()).all(|i| y[i] == 1 + i as u32) => {}
        Ok(_) => return Err(format!("afterwards a wrong result: {:?}", &y[..4])),
        Err(e) => return Err(format!("afterwards a region failed: {e}")),
    }
    Ok(detail)
}

/// Runs `faulty` cleanly: the runtime still works.
fn still_works(rt: &Runtime, backend: Option<Backend>) -> Result<(), String> {
    let mut x = initial();
    match on(faulty(&mut x, VICTIM, 0, 0).threads(64), backend).run(rt) {
        Ok(_) if stepped(&x, VICTIM as u32 * 10) => Ok(()),
        Ok(_) => Err("afterwards a region gave a wrong result".to_owned()),
        Err(e) => Err(format!("afterwards a region failed: {e}")),
    }
}

/// The checks a run selects: those to run, in order, with their needs, and those skipped, with
/// why.
pub struct Plan {
    /// The checks to run, in the order they run.
    pub run: Vec<(&'static str, Needs)>,
    /// The selected checks that cannot run on this runtime and backend, and why.
    pub skipped: Vec<(&'static str, &'static str)>,
}

/// The checks whose names `select` accepts, split by whether they can run on `rt` with `backend`
/// (the runtime's own when `None`).
pub fn plan(rt: &Runtime, backend: Option<Backend>, select: impl Fn(&str) -> bool) -> Plan {
    let mut plan = Plan {
        run: Vec::new(),
        skipped: Vec::new(),
    };
    for check in CHECKS.iter().filter(|c| select(c.name())) {
        match check.needs().missing(rt, backend) {
            None => plan.run.push((check.name(), check.needs())),
            Some(why) => plan.skipped.push((check.name(), why)),
        }
    }
    plan
}

/// Every check's name, in the order they run.
pub fn names() -> Vec<&'static str> {
    CHECKS.iter().map(Check::name).collect()
}

/// Runs every check that can run on `rt` with the runtime's own backend, in one process: all but
/// those of [`Needs::GpuAlone`], which lose the CUDA context (run each with [`run_check`] in a
/// process of its own).
pub fn check_all(rt: &Runtime) -> Vec<Outcome> {
    plan(rt, None, |_| true)
        .run
        .into_iter()
        .filter(|&(_, needs)| needs != Needs::GpuAlone)
        .filter_map(|(name, _)| run_check(rt, None, name))
        .collect()
}

/// Runs the check called `name` on `rt`, its regions on `backend` (the runtime's own when
/// `None`); `None` when no check has that name. The caller makes sure the check can run there
/// ([`plan`]).
pub fn run_check(rt: &Runtime, backend: Option<Backend>, name: &str) -> Option<Outcome> {
    let check = CHECKS.iter().find(|c| c.name() == name)?;
    Some(match check {
        Check::Faulty {
            name,
            how,
            arg,
            checked,
            watchdog,
            expect,
            ..
        } => {
            let mut x = initial();
            let region = faulty(&mut x, VICTIM, *how, *arg)
                .checked(*checked)
                .watchdog(*watchdog)
                .threads(64);
            let result = on(region, backend).run(rt);
            let detail = match &result {
                Ok(report) => format!("ok: {} tasks", report.tasks),
                Err(e) => format!("error: {e}"),
            };
            Outcome {
                name,
                ok: expect(&result, &x),
                detail,
            }
        }
        Check::Custom { name, run, .. } => {
            let (ok, detail) = match run(rt, backend) {
                Ok(detail) => (true, detail),
                Err(detail) => (false, detail),
            };
            Outcome { name, ok, detail }
        }
    })
}
