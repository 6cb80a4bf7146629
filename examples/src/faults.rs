//! The fault checks shared by the `faults` program (GPU or CPU) and the CPU test: each provokes one
//! failure on purpose and checks the error that comes back, and that nothing was lost.

use std::time::Duration;

use taskweave::{Error, Runtime};
use taskweave_kernels::faults::{faulty, mode};

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

fn run(
    rt: &Runtime,
    how: u32,
    arg: u64,
    checked: bool,
    watchdog: Duration,
) -> (Result<taskweave::Report, Error>, Vec<u32>) {
    let mut x: Vec<u32> = (0..N as u32).map(|i| i * 10).collect();
    let result = faulty(&mut x, VICTIM, how, arg)
        .checked(checked)
        .watchdog(watchdog)
        .threads(64)
        .run(rt);
    (result, x)
}

fn untouched(x: &[u32]) -> bool {
    x.iter().enumerate().all(|(i, &v)| v == i as u32 * 10)
}

/// Runs every fault check on `rt`.
pub fn check_all(rt: &Runtime) -> Vec<Outcome> {
    let mut out = Vec::new();
    let names_victim =
        |task: &taskweave::TaskRef| task.index == VICTIM as u32 && task.kind == "step";

    let (result, x) = run(rt, mode::PANIC, 0, true, Duration::from_secs(10));
    let ok = match &result {
        Err(Error::TaskPanicked { task, message, .. })
        | Err(Error::TaskFault { task, message, .. }) => {
            names_victim(task) && message.contains("deliberate failure") && untouched(&x)
        }
        _ => false,
    };
    out.push(Outcome {
        name: "a task panics",
        ok,
        detail: describe(&result),
    });

    let (result, x) = run(rt, mode::STRAY_WRITE, 0, true, Duration::from_secs(10));
    let ok = match &result {
        Err(Error::TaskPanicked { task, message, .. }) => {
            names_victim(task) && message.contains(&format!("{}", VICTIM + 1)) && untouched(&x)
        }
        Err(Error::TaskFault { task, message, .. }) => {
            names_victim(task)
                && message.contains(&format!("index {}", VICTIM + 1))
                && untouched(&x)
        }
        _ => false,
    };
    out.push(Outcome {
        name: "a write outside the declared range (checked)",
        ok,
        detail: describe(&result),
    });

    let (result, x) = run(rt, mode::STRAY_READ, 0, true, Duration::from_secs(10));
    let ok = matches!(&result, Err(Error::TaskPanicked { task, .. }) | Err(Error::TaskFault { task, .. }) if names_victim(task))
        && untouched(&x);
    out.push(Outcome {
        name: "a read outside the declared range (checked)",
        ok,
        detail: describe(&result),
    });

    let (result, x) = run(rt, mode::STRAY_READ, 0, false, Duration::from_secs(10));
    let ok = result.is_ok()
        && x[..N - 1].iter().enumerate().all(|(i, &v)| {
            v == if i == VICTIM {
                (i as u32 + 1) * 10 + 1
            } else {
                i as u32 * 10 + 1
            }
        });
    out.push(Outcome {
        name: "the same read unchecked runs",
        ok,
        detail: describe(&result),
    });

    let (result, x) = run(
        rt,
        mode::SLOW,
        1_500_000_000,
        true,
        Duration::from_millis(300),
    );
    let ok = match &result {
        Err(Error::Stalled { first, .. }) => first.iter().any(names_victim) && untouched(&x),
        _ => false,
    };
    out.push(Outcome {
        name: "a task outlives the watchdog",
        ok,
        detail: describe(&result),
    });

    let (result, x) = run(rt, 0, 0, true, Duration::from_secs(10));
    let ok = result.is_ok()
        && x[..N - 1]
            .iter()
            .enumerate()
            .all(|(i, &v)| v == i as u32 * 10 + 1);
    out.push(Outcome {
        name: "the runtime still works afterwards",
        ok,
        detail: describe(&result),
    });
    out
}

fn describe(result: &Result<taskweave::Report, Error>) -> String {
    match result {
        Ok(report) => format!("ok: {} tasks", report.tasks),
        Err(e) => format!("error: {e}"),
    }
}
