//! Every fault check passes on the CPU backend, and the `faults` program runs no fewer checks than
//! it selects: a selection that runs nothing is an error, never `0 passed`.

use std::process::Command;

/// The checks that run on the CPU backend: all but those that need a GPU.
const CPU_CHECKS: usize = 12;

#[test]
fn every_fault_is_reported_and_loses_nothing() {
    let runtime = taskweave::Runtime::cpu();
    let outcomes = taskweave_examples::faults::check_all(&runtime);
    let plan = taskweave_examples::faults::plan(&runtime, None, |_| true);
    assert_eq!(outcomes.len(), CPU_CHECKS, "checks that ran on the CPU");
    assert_eq!(
        plan.run.len() + plan.skipped.len(),
        taskweave_examples::faults::names().len(),
        "every check is either run or skipped"
    );
    let ran: Vec<&str> = outcomes.iter().map(|o| o.name).collect();
    let planned: Vec<&str> = plan.run.iter().map(|&(name, _)| name).collect();
    assert_eq!(ran, planned);
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.ok)
        .map(|o| format!("{}: {}", o.name, o.detail))
        .collect();
    assert!(failed.is_empty(), "failed checks:\n{}", failed.join("\n"));
}

/// Runs the `faults` program with `args` (no GPU in CI: the CPU backend): whether it succeeded,
/// and its output.
fn faults(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_faults"))
        .args(args)
        .output()
        .expect("the faults program starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn the_program_answers_help_and_refuses_a_selection_that_runs_nothing() {
    let (ok, out) = faults(&["--help"]);
    assert!(ok && out.contains("Usage: faults"), "{out}");
    let (ok, out) = faults(&["no check is called this"]);
    assert!(!ok, "{out}");
    assert!(out.contains("no fault check matches"), "{out}");
    // Only checks that need a GPU: every one is skipped, which is an error too.
    let (ok, out) = faults(&["PTX"]);
    assert!(!ok, "{out}");
    assert!(
        out.contains("every selected fault check was skipped"),
        "{out}"
    );
    let (ok, out) = faults(&["--backend", "graph"]);
    assert!(!ok && out.contains("needs a GPU"), "{out}");
}

#[test]
fn the_program_counts_the_checks_it_ran() {
    let (ok, out) = faults(&["--exact", "a task panics", "--expect", "1"]);
    assert!(ok, "{out}");
    assert!(
        out.contains("1 of 1 checks passed, 0 failed, 0 skipped"),
        "{out}"
    );
    let (ok, out) = faults(&["panics", "--expect", "1"]);
    assert!(!ok, "{out}");
    assert!(out.contains("3 checks ran, not the 1 expected"), "{out}");
    let (ok, out) = faults(&["--list"]);
    assert!(ok, "{out}");
    assert_eq!(
        out.lines().count(),
        taskweave_examples::faults::names().len()
    );
}
