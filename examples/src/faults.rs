//! The fault checks shared by the `faults` program (GPU or CPU) and the CPU test: each provokes one
//! failure on purpose and checks the error that comes back, and that nothing was lost.
//!
//! Most checks run `faulty` with one misbehaving task ([`CHECKS`]). The others drive the runtime
//! directly ([`Check::Custom`]): empty regions on every backend, regions and uploads too large for
//! the device, PTX the GPU cannot load, several host threads sharing one runtime. The last two
//! checks lose the CUDA context on purpose (a trap, an illegal address), so they come last, and
//! after either one every later region fails fast: run `faults trap` and `faults illegal` as
//! separate processes to see each.

use std::time::Duration;

use taskweave::{Backend, Error, Policy, Report, Runtime, TaskRef};
use taskweave_kernels::faults::{faulty, faulty_fan, mode, touch_all};

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

/// One fault to provoke and what must come back.
enum Check {
    /// `faulty` with task `VICTIM` misbehaving as `how` says.
    Faulty {
        name: &'static str,
        how: u32,
        arg: u64,
        checked: bool,
        watchdog: Duration,
        expect: fn(&Result<Report, Error>, &[u32]) -> bool,
    },
    /// Anything else: `Ok(what it saw)` when the check passes, `Err(what went wrong)` otherwise.
    Custom {
        name: &'static str,
        gpu_only: bool,
        run: fn(&Runtime) -> Result<String, String>,
    },
}

impl Check {
    fn name(&self) -> &'static str {
        match self {
            Self::Faulty { name, .. } | Self::Custom { name, .. } => name,
        }
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

const CHECKS: &[Check] = &[
    Check::Faulty {
        name: "a task panics",
        how: mode::PANIC,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| {
            failure(r).is_some_and(|(t, m)| names_victim(t) && m.contains("deliberate failure"))
                && untouched(x)
        },
    },
    Check::Faulty {
        name: "a write outside the declared range (checked)",
        how: mode::STRAY_WRITE,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| {
            failure(r).is_some_and(|(t, m)| names_victim(t) && m.contains(&(N - 1).to_string()))
                && untouched(x)
        },
    },
    Check::Faulty {
        name: "a read outside the declared range (checked)",
        how: mode::STRAY_READ,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| failure(r).is_some_and(|(t, _)| names_victim(t)) && untouched(x),
    },
    Check::Faulty {
        name: "the same read unchecked runs",
        how: mode::STRAY_READ,
        arg: 0,
        checked: false,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped(x, (N as u32 - 1) * 10),
    },
    Check::Faulty {
        name: "a task outlives the watchdog",
        how: mode::SLOW,
        arg: 1_500_000_000,
        checked: true,
        watchdog: Duration::from_millis(300),
        expect: |r, x| {
            matches!(r, Err(Error::Stalled { first, .. }) if first.iter().any(names_victim))
                && untouched(x)
        },
    },
    Check::Faulty {
        name: "the runtime still works afterwards",
        how: 0,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped(x, VICTIM as u32 * 10),
    },
    Check::Custom {
        name: "an empty region runs on every backend",
        gpu_only: false,
        run: empty_region,
    },
    Check::Custom {
        name: "a task panics under the static policy while other workers wait for it",
        gpu_only: false,
        run: static_waiters,
    },
    Check::Custom {
        name: "a GPU ordinal that does not exist",
        gpu_only: false,
        run: |_| match Runtime::gpu(4096) {
            Err(e @ Error::NoGpu { .. }) => Ok(format!("error: {e}")),
            Err(e) => Err(format!("another error: {e}")),
            Ok(_) => Err("GPU 4096 opened".to_owned()),
        },
    },
    Check::Custom {
        name: "regions from several host threads share one runtime",
        gpu_only: false,
        run: shared_runtime,
    },
    Check::Custom {
        name: "a region larger than device memory fails before launch",
        gpu_only: true,
        run: too_large,
    },
    Check::Custom {
        name: "an upload larger than device memory is out of memory, and the runtime goes on",
        gpu_only: true,
        run: upload_too_large,
    },
    Check::Custom {
        name: "a nearly full device: regions the memory check admits stage and run, larger ones fail before copying",
        gpu_only: true,
        run: staging_out_of_memory,
    },
    Check::Custom {
        name: "PTX for a newer GPU is refused, naming both architectures and the fix",
        gpu_only: true,
        run: ptx_for_a_newer_gpu,
    },
    Check::Custom {
        name: "PTX the driver rejects is refused, naming the architectures and the fix",
        gpu_only: true,
        run: ptx_rejected,
    },
    // These two lose the CUDA context: keep them last.
    Check::Custom {
        name: "a task traps: the context is lost and later regions fail fast",
        gpu_only: true,
        run: |rt| context_lost(rt, mode::TRAP, 0),
    },
    Check::Custom {
        name: "a task writes an illegal address: the context is lost and later regions fail fast",
        gpu_only: true,
        run: |rt| context_lost(rt, mode::WILD, 16),
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

/// Four threads run regions on one runtime at once, each with a task that takes 0.4 s and a
/// watchdog of 0.6 s: a region that waited behind the others for the GPU would trip its watchdog if
/// the wait counted, and one that shared a stream or error record with another would come out
/// wrong.
fn shared_runtime(rt: &Runtime) -> Result<String, String> {
    const THREADS: usize = 4;
    const ROUNDS: usize = 3;
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                s.spawn(move || {
                    let mut failures = Vec::new();
                    for round in 0..ROUNDS {
                        let mut x = initial();
                        let result = faulty(&mut x, VICTIM, mode::SLOW, 400_000_000)
                            .watchdog(Duration::from_millis(600))
                            .threads(64)
                            .run(rt);
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
fn static_waiters(rt: &Runtime) -> Result<String, String> {
    let mut x = initial();
    let result = faulty_fan(&mut x, mode::PANIC, 0)
        .policy(Policy::Static)
        .watchdog(Duration::from_secs(10))
        .threads(64)
        .run(rt);
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
    match faulty_fan(&mut y, 0, 0)
        .policy(Policy::Static)
        .threads(64)
        .run(rt)
    {
        Ok(_) if (0..y.len()).all(|i| y[i] == 1 + i as u32) => {}
        Ok(_) => return Err(format!("afterwards a wrong result: {:?}", &y[..4])),
        Err(e) => return Err(format!("afterwards a region failed: {e}")),
    }
    Ok(detail)
}

/// Free device memory, or why the check cannot run.
fn free_memory(rt: &Runtime) -> Result<u64, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    gpu.free_memory().map_err(|e| e.to_string())
}

/// One task over an array of more bytes than the device has free. The host array is calloc'd, so
/// its untouched pages cost no host memory; its first and last elements are marked and checked.
fn too_large(rt: &Runtime) -> Result<String, String> {
    let free = free_memory(rt)?;
    let len = (free / 4) as usize + (64 << 20);
    let mut x = vec![0u32; len];
    (x[0], x[len - 1]) = (7, 9);
    let result = touch_all(&mut x).run(rt);
    if (x[0], x[len - 1]) != (7, 9) {
        return Err("the host array was written".to_owned());
    }
    match result {
        Err(e @ Error::DeviceOutOfMemory { .. }) => Ok(format!("error: {e}")),
        Err(e) => Err(format!("another error: {e}")),
        Ok(_) => Err(format!("a region of {} bytes ran", len * 4)),
    }
}

/// Runs `faulty` cleanly: the runtime still works.
fn still_works(rt: &Runtime) -> Result<(), String> {
    let mut x = initial();
    match faulty(&mut x, VICTIM, 0, 0).threads(64).run(rt) {
        Ok(_) if stepped(&x, VICTIM as u32 * 10) => Ok(()),
        Ok(_) => Err("afterwards a region gave a wrong result".to_owned()),
        Err(e) => Err(format!("afterwards a region failed: {e}")),
    }
}

/// `Runtime::upload` of more bytes than are free: the driver refuses the allocation.
fn upload_too_large(rt: &Runtime) -> Result<String, String> {
    let free = free_memory(rt)?;
    let data = vec![0u8; free as usize + (1 << 30)];
    let detail = match rt.upload(&data) {
        Err(e @ Error::OutOfMemory { .. }) => format!("error: {e}"),
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err(format!("{} bytes uploaded", data.len())),
    };
    still_works(rt)?;
    Ok(detail)
}

/// Fills the device but for about 256 MiB, then searches for the largest array whose region passes
/// the memory check before staging. Every admitted size must stage and run correctly, and every
/// larger one fail with `Error::DeviceOutOfMemory` before copying, host array untouched; if the
/// driver still refuses an allocation while staging an admitted one, that must be
/// `Error::OutOfMemory` with the host array untouched. Either way the runtime must go on.
fn staging_out_of_memory(rt: &Runtime) -> Result<String, String> {
    let free = free_memory(rt)?;
    let filler = rt
        .upload(&vec![0u8; free.saturating_sub(256 << 20) as usize])
        .map_err(|e| format!("filling the device: {e}"))?;
    let room = free_memory(rt)? as usize / 4;
    let mut x = vec![0u32; room];
    let (mut lo, mut hi) = (1usize, room);
    let mut seen = None;
    while lo + 1 < hi && seen.is_none() {
        let mid = lo + (hi - lo) / 2;
        x[..mid].fill(3);
        let result = touch_all(&mut x[..mid]).run(rt);
        let untouched = x[..mid].iter().all(|&v| v == 3);
        match result {
            Err(Error::DeviceOutOfMemory { .. }) => hi = mid,
            Err(e @ Error::OutOfMemory { .. }) if untouched => seen = Some(format!("error: {e}")),
            Err(e) => return Err(format!("{mid} elements: {e}")),
            Ok(_) if x[0] == 4 => lo = mid,
            Ok(_) => return Err(format!("{mid} elements: wrong result")),
        }
    }
    drop(filler);
    let detail = seen.unwrap_or_else(|| {
        format!(
            "every admitted region ran (up to {lo} elements); {hi} elements failed the check before copying"
        )
    });
    still_works(rt)?;
    Ok(detail)
}

/// The crate's PTX with its `.target` raised past the GPU's.
fn ptx_for_a_newer_gpu(rt: &Runtime) -> Result<String, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    let newer = format!(
        "sm_{}",
        gpu.arch()["sm_".len()..].parse::<u32>().unwrap_or(90) + 10
    );
    let target = taskweave_kernels::PTX
        .lines()
        .find(|l| l.trim_start().starts_with(".target"))
        .ok_or("the PTX has no .target line")?;
    let ptx = taskweave_kernels::PTX.replacen(target, &format!(".target {newer}"), 1);
    let result = gpu.module(&*Box::leak(ptx.into_boxed_str()));
    let detail = match result {
        Err(e @ Error::PtxArch { .. })
            if e.to_string().contains(&newer)
                && e.to_string()
                    .contains(&format!("TASKWEAVE_TARGET_CPU={}", gpu.arch())) =>
        {
            format!("error: {e}")
        }
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err(format!("PTX for {newer} loaded")),
    };
    still_works(rt)?;
    Ok(detail)
}

/// PTX for this GPU's architecture that is not PTX.
fn ptx_rejected(rt: &Runtime) -> Result<String, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    let ptx = format!(
        ".version 7.8\n.target {}\n.address_size 64\n\nthis is not PTX;\n",
        gpu.arch()
    );
    let detail = match gpu.module(&*Box::leak(ptx.into_boxed_str())) {
        Err(e @ Error::PtxArch { .. }) if e.to_string().contains("TASKWEAVE_TARGET_CPU") => {
            format!("error: {e}")
        }
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err("the driver loaded it".to_owned()),
    };
    still_works(rt)?;
    Ok(detail)
}

/// A fault the device layer cannot catch: the region fails with `Error::ContextLost` and the host
/// array untouched, and the next region fails at once with the same error.
fn context_lost(rt: &Runtime, how: u32, arg: u64) -> Result<String, String> {
    let mut x = initial();
    let result = faulty(&mut x, VICTIM, how, arg).threads(64).run(rt);
    if !untouched(&x) {
        return Err("the host array was written".to_owned());
    }
    let detail = match result {
        Err(e @ Error::ContextLost { .. }) => format!("error: {e}"),
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err("the region succeeded".to_owned()),
    };
    let start = std::time::Instant::now();
    let mut y = initial();
    match faulty(&mut y, VICTIM, 0, 0).threads(64).run(rt) {
        Err(Error::ContextLost { .. })
            if start.elapsed() < Duration::from_secs(1) && untouched(&y) =>
        {
            Ok(format!("{detail}; the next region failed fast"))
        }
        Err(e) => Err(format!("{detail}; the next region: {e}")),
        Ok(_) => Err(format!("{detail}; the next region succeeded")),
    }
}

/// Runs every fault check on `rt`.
pub fn check_all(rt: &Runtime) -> Vec<Outcome> {
    check_selected(rt, |_| true)
}

/// Runs the fault checks whose names `select` accepts on `rt`; checks that need a GPU are skipped
/// on the CPU backend.
pub fn check_selected(rt: &Runtime, select: impl Fn(&str) -> bool) -> Vec<Outcome> {
    let gpu = rt.gpu_device().is_some();
    CHECKS
        .iter()
        .filter(|c| select(c.name()))
        .filter(|c| gpu || !matches!(c, Check::Custom { gpu_only: true, .. }))
        .map(|c| match c {
            Check::Faulty {
                name,
                how,
                arg,
                checked,
                watchdog,
                expect,
            } => {
                let mut x = initial();
                let result = faulty(&mut x, VICTIM, *how, *arg)
                    .checked(*checked)
                    .watchdog(*watchdog)
                    .threads(64)
                    .run(rt);
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
                let (ok, detail) = match run(rt) {
                    Ok(detail) => (true, detail),
                    Err(detail) => (false, detail),
                };
                Outcome { name, ok, detail }
            }
        })
        .collect()
}
