//! The `tile_ops` micro-benchmark on the CPU backend: each shape and `--gang` reaches the batch
//! region that holds it, and the results check.

fn tile_ops(args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tile_ops"))
        .args(["--op", "gemm", "--bs", "16", "--count", "4", "--reps", "1"])
        .args(["--backend", "cpu"])
        .args(args)
        .output()
        .expect("the tile_ops program starts");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {text}");
    assert!(text.contains("check: PASS"), "{args:?}: {text}");
    text
}

#[test]
fn each_shape_and_gang_runs_in_its_own_region() {
    for (args, region) in [
        (&[][..], "`batch_shapes_f64`"),
        (&["--shape", "kc16"][..], "`batch_shapes_f64`"),
        (&["--shape", "m16n8k8"][..], "`batch_gemm_f64`"),
        (&["--gang", "2"][..], "`batch_gemm_gang_f64`"),
        (&["--prec", "f32"][..], "`batch_gemm_f32`"),
    ] {
        let out = tile_ops(args);
        assert!(out.contains(&format!("region {region}")), "{args:?}: {out}");
    }
}
