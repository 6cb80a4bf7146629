//! The `nowait` program on the CPU backend: every benchmark runs both ways and every vector of
//! every run matches the sequential reference (the program fails otherwise, naming the vector and
//! element; its unit tests check that reference against the loops it replaces).

#[test]
fn every_benchmark_runs_and_every_vector_matches_the_reference() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nowait"))
        .args([
            "--backend",
            "cpu",
            "--n",
            "16,300",
            "--t",
            "2,3",
            "--reps",
            "2",
        ])
        .output()
        .expect("the nowait program starts");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    for bench in ["B1", "B2", "B3", "B4"] {
        assert!(text.contains(&format!("### {bench} ")), "{bench}: {text}");
    }
    // One line per benchmark, T and N.
    assert_eq!(text.matches(" ms  speedup ").count(), 4 * 2 * 2, "{text}");
}
