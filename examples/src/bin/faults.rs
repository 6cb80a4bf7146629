//! Provokes every runtime fault on purpose (a panicking task, accesses outside the declared ranges,
//! a task that outlives the watchdog) and checks the error that comes back, on the GPU when there is
//! one and on the CPU backend otherwise.

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(|| {
        let runtime = taskweave::Runtime::new();
        println!("fault checks on {}", runtime.describe());
        // `faults [WORD]` runs only the checks whose name contains WORD.
        let only = std::env::args().nth(1).unwrap_or_default();
        let outcomes = taskweave_examples::faults::check_selected(&runtime, |name| {
            name.contains(only.as_str())
        });
        for o in &outcomes {
            println!(
                "{} {}: {}",
                if o.ok { "PASS" } else { "FAIL" },
                o.name,
                o.detail
            );
        }
        let failed = outcomes.iter().filter(|o| !o.ok).count();
        println!("{} passed, {} failed", outcomes.len() - failed, failed);
        if failed > 0 {
            return Err(format!("{failed} fault checks failed").into());
        }
        Ok(())
    })
}
