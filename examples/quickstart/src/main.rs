//! Runs the quickstart's region on the GPU if there is one, else on the CPU, and checks it.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x: Vec<f32> = (0..4096).map(|i| (i % 7) as f32).collect();
    let mut y = vec![1.0f32; x.len()];
    let mut out = [0.0f32];

    let runtime = taskweave::Runtime::new(); // the GPU, or the CPU backend where there is none
    if let Some(why) = runtime.fallback_reason() {
        println!("on the CPU backend: {why}");
    }
    let report = quickstart::axpy_norm(&x, &mut y, &mut out, 256, 2.0).run(&runtime)?;
    println!("{report}");

    let sum: f32 = x.iter().map(|&x| (2.0 * x + 1.0).powi(2)).sum();
    let expected = sum.sqrt();
    let ok = y.iter().zip(&x).all(|(&y, &x)| y == 2.0 * x + 1.0);
    if !ok || (out[0] - expected).abs() > 1e-4 * expected {
        return Err(format!("wrong result: norm {}, expected {expected}", out[0]).into());
    }
    println!("norm {}: PASS", out[0]);
    Ok(())
}
