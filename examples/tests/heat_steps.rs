//! The time-stepping example on the CPU backend: both loops (inspected every step, and planned)
//! run, report every step, and match the sequential reference; with plan verification off the
//! planned steps inspect nothing, with it on they inspect every step and still pass.

use std::process::Command;

/// The example's output, with plan verification `verify` (`"0"` or `"1"`).
fn run(verify: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_heat_steps"))
        .args([
            "--backend",
            "cpu",
            "--n",
            "64",
            "--tile",
            "16",
            "--steps",
            "6",
        ])
        .arg("--per-step")
        .env(taskweave::VERIFY_PLANS_ENV, verify)
        .output()
        .expect("the example starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in 0..6 {
        assert!(
            stdout.contains(&format!("region.run step {step:>4}:")),
            "{stdout}"
        );
        assert!(
            stdout.contains(&format!("plan.run step {step:>4}:")),
            "{stdout}"
        );
    }
    assert!(stdout.contains("| region.run |") && stdout.contains("| plan.run |"));
    assert!(stdout.contains("both loops match the sequential reference"));
    stdout
}

/// The planned steps after the two that made the plans.
fn later_planned_steps(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("plan.run step") && !l.contains("step    0"))
        .filter(|l| !l.contains("step    1"))
        .collect()
}

#[test]
fn heat_steps_runs_both_loops_and_matches_the_reference() {
    let unverified = run("0");
    let later = later_planned_steps(&unverified);
    assert_eq!(later.len(), 4);
    for line in later {
        assert!(line.ends_with("inspect      0.0 us"), "{line}");
    }
    let verified = run("1");
    for line in later_planned_steps(&verified) {
        assert!(!line.ends_with("inspect      0.0 us"), "{line}");
    }
}
