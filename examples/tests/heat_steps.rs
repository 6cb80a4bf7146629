//! The time-stepping example on the CPU backend: its three loops (inspected every step, with the
//! runtime's plan cache, and planned) run, report every step, and match the sequential
//! reference; with plan verification off the cached and planned steps after each parity's first
//! inspect nothing, with it on they inspect every step and still pass, and the loop with the
//! cache off inspects every step either way.

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
        for name in LOOPS {
            assert!(
                stdout.contains(&format!("{name} step {step:>4}:")),
                "{stdout}"
            );
        }
    }
    for name in LOOPS {
        assert!(stdout.contains(&format!("| {name} |")), "{stdout}");
    }
    assert!(stdout.contains("every loop matches the sequential reference"));
    stdout
}

const LOOPS: [&str; 3] = ["region.run, cache off", "region.run", "plan.run"];

/// Loop `name`'s steps after the two whose calls inspect (one per parity).
fn later_steps<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("{name} step");
    stdout
        .lines()
        .filter(|l| l.starts_with(&prefix) && !l.contains("step    0"))
        .filter(|l| !l.contains("step    1"))
        .collect()
}

fn inspects(line: &str) -> bool {
    !line.ends_with("inspect      0.0 us")
}

#[test]
fn heat_steps_runs_every_loop_and_matches_the_reference() {
    let unverified = run("0");
    for name in ["region.run", "plan.run"] {
        let later = later_steps(&unverified, name);
        assert_eq!(later.len(), 4);
        assert!(!later.iter().any(|l| inspects(l)), "{name}: {later:?}");
    }
    let fresh = later_steps(&unverified, "region.run, cache off");
    assert!(fresh.iter().all(|l| inspects(l)), "{fresh:?}");
    let verified = run("1");
    for name in LOOPS {
        let later = later_steps(&verified, name);
        assert!(later.iter().all(|l| inspects(l)), "{name}: {later:?}");
    }
}
