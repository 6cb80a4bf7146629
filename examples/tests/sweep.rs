//! The `sweep` program that `scripts/gpu-evidence.sh` runs under compute-sanitizer, on the CPU
//! backend: every workload and DAG under each policy, all verified, and every run counted.

fn sweep(args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sweep"))
        .args(args)
        .output()
        .expect("the sweep program starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn every_run_of_the_sweep_passes_on_the_cpu_backend() {
    let (ok, out) = sweep(&["--backends", "cpu", "--policies", "grr,static,affinity"]);
    assert!(ok, "{out}");
    // Eight workloads, the wavefront and the chain, under three policies.
    assert!(out.contains("30 of 30 runs passed, 0 failed"), "{out}");
    assert_eq!(out.matches("\nPASS ").count(), 30, "{out}");
}

#[test]
fn a_gpu_backend_without_a_gpu_is_refused() {
    let (ok, out) = sweep(&["--backends", "graph"]);
    assert!(!ok && out.contains("needs a GPU"), "{out}");
}
