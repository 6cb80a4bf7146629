//! The fault checks shared by the `faults` program (GPU or CPU) and the CPU test: each provokes one
//! failure on purpose and checks the error that comes back, and that nothing was lost.

use std::time::Duration;

use taskweave::{Error, Report, Runtime, TaskRef};
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

/// One fault to provoke and what must come back.
struct Check {
    name: &'static str,
    how: u32,
    arg: u64,
    checked: bool,
    watchdog: Duration,
    expect: fn(&Result<Report, Error>, &[u32]) -> bool,
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
    Check {
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
    Check {
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
    Check {
        name: "a read outside the declared range (checked)",
        how: mode::STRAY_READ,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| failure(r).is_some_and(|(t, _)| names_victim(t)) && untouched(x),
    },
    Check {
        name: "the same read unchecked runs",
        how: mode::STRAY_READ,
        arg: 0,
        checked: false,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped(x, (N as u32 - 1) * 10),
    },
    Check {
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
    Check {
        name: "the runtime still works afterwards",
        how: 0,
        arg: 0,
        checked: true,
        watchdog: Duration::from_secs(10),
        expect: |r, x| r.is_ok() && stepped(x, VICTIM as u32 * 10),
    },
];

/// Runs every fault check on `rt`.
pub fn check_all(rt: &Runtime) -> Vec<Outcome> {
    check_selected(rt, |_| true)
}

/// Runs the fault checks whose names `select` accepts on `rt`.
pub fn check_selected(rt: &Runtime, select: impl Fn(&str) -> bool) -> Vec<Outcome> {
    CHECKS
        .iter()
        .filter(|c| select(c.name))
        .map(|c| {
            let mut x: Vec<u32> = (0..N as u32).map(|i| i * 10).collect();
            let result = faulty(&mut x, VICTIM, c.how, c.arg)
                .checked(c.checked)
                .watchdog(c.watchdog)
                .threads(64)
                .run(rt);
            let detail = match &result {
                Ok(report) => format!("ok: {} tasks", report.tasks),
                Err(e) => format!("error: {e}"),
            };
            Outcome {
                name: c.name,
                ok: (c.expect)(&result, &x),
                detail,
            }
        })
        .collect()
}
