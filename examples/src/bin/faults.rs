//! Provokes every runtime fault on purpose (a panicking task, accesses outside the declared ranges,
//! a task that outlives the watchdog, …) and checks the error that comes back, on the GPU when there
//! is one and on the CPU backend otherwise.
//!
//! Fails unless every selected check that can run here ran and passed: a filter that selects no
//! check, or only checks that cannot run here, is an error, never `0 passed`. A check that loses
//! the CUDA context runs in a process of its own (this program again, with `--exact`), unless it
//! is the only check selected.

use clap::Parser;
use taskweave::{Backend, Runtime};
use taskweave_examples::backend_parser;
use taskweave_examples::faults::{self, Needs, Outcome};

/// Provokes every runtime fault on purpose and checks the error that comes back.
#[derive(Parser, Debug)]
#[command(name = "faults")]
struct Args {
    /// Run only the checks whose name contains WORD (see --list).
    #[arg(value_name = "WORD")]
    filter: Option<String>,
    /// Run only the check named exactly NAME.
    #[arg(long, value_name = "NAME", conflicts_with = "filter")]
    exact: Option<String>,
    /// The backend the checks' regions run on (default: the runtime's own, persistent on a GPU).
    #[arg(long, value_parser = backend_parser())]
    backend: Option<Backend>,
    /// Fail unless exactly N checks ran (after those that cannot run here are skipped).
    #[arg(long, value_name = "N")]
    expect: Option<usize>,
    /// Print every check's name and exit.
    #[arg(long)]
    list: bool,
}

impl Args {
    fn selects(&self, name: &str) -> bool {
        match (&self.exact, &self.filter) {
            (Some(exact), _) => name == exact,
            (None, Some(word)) => name.contains(word.as_str()),
            (None, None) => true,
        }
    }

    fn backend(&self) -> Option<Backend> {
        self.backend
    }
}

/// How long a check in a process of its own may take, exit included: a process that outlives it
/// fails the check (a stuck kernel must not keep a program from exiting).
const CHILD_DEADLINE: std::time::Duration = std::time::Duration::from_secs(60);

/// Runs the check `name` in a child process (this program with `--exact`): its outcome, from the
/// `PASS`/`FAIL` line the child prints, or a failure saying how the child ended, or that it did
/// not end within [`CHILD_DEADLINE`].
fn in_own_process(args: &Args, name: &'static str) -> Outcome {
    let failed = |detail: String| Outcome {
        name,
        ok: false,
        detail,
    };
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return failed(format!("cannot find this program to run the check: {e}")),
    };
    let mut child = std::process::Command::new(exe);
    if let Some(backend) = args.backend {
        child.args(["--backend", backend.name()]);
    }
    let start = std::time::Instant::now();
    let mut running = match child
        .args(["--exact", name])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(running) => running,
        Err(e) => return failed(format!("the child process did not start: {e}")),
    };
    // The pipes are drained on threads of their own, so that a chatty child never blocks on them.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            text
        })
    };
    use std::io::Read;
    let stdout = drain(
        running
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        running
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = loop {
        match running.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > CHILD_DEADLINE => {
                let _ = running.kill();
                let _ = running.wait();
                return failed(format!(
                    "the child process did not exit within {CHILD_DEADLINE:?}; killed"
                ));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(20)),
            Err(e) => return failed(format!("waiting for the child process: {e}")),
        }
    };
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().find_map(|l| {
        l.strip_prefix("PASS ")
            .map(|rest| (true, rest))
            .or_else(|| l.strip_prefix("FAIL ").map(|rest| (false, rest)))
    });
    match line {
        Some((ok, rest)) => Outcome {
            name,
            ok: ok && output.status.success(),
            detail: format!(
                "{} (the process exited {:.1} s after it started)",
                rest.strip_prefix(name)
                    .and_then(|d| d.strip_prefix(": "))
                    .unwrap_or(rest),
                start.elapsed().as_secs_f64()
            ),
        },
        None => failed(format!(
            "the child process ({}) printed no outcome: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )),
    }
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(|| {
        let args = Args::parse();
        if args.list {
            for name in faults::names() {
                println!("{name}");
            }
            return Ok(());
        }
        let runtime = Runtime::new();
        let backend = args.backend();
        if let Some(b) = backend.filter(|b| b.needs_gpu() && runtime.gpu_device().is_none()) {
            return Err(format!(
                "--backend {} needs a GPU, and this runtime is the {}",
                b.name(),
                runtime.describe()
            )
            .into());
        }
        let plan = faults::plan(&runtime, backend, |name| args.selects(name));
        let on = backend.map_or("its own backend", Backend::name);
        println!("fault checks on {}, regions on {on}", runtime.describe());
        for (name, why) in &plan.skipped {
            println!("SKIP {name}: {why}");
        }
        if plan.run.is_empty() {
            let selected = if plan.skipped.is_empty() {
                "no fault check matches the selection (see --list)"
            } else {
                "every selected fault check was skipped"
            };
            return Err(selected.into());
        }
        let alone_in_process = plan.run.len() == 1;
        let mut outcomes = Vec::new();
        for &(name, needs) in &plan.run {
            let outcome = if needs == Needs::GpuAlone && !alone_in_process {
                in_own_process(&args, name)
            } else {
                faults::run_check(&runtime, backend, name).expect("the plan names a check")
            };
            println!(
                "{} {}: {}",
                if outcome.ok { "PASS" } else { "FAIL" },
                outcome.name,
                outcome.detail
            );
            outcomes.push(outcome);
        }
        let failed = outcomes.iter().filter(|o| !o.ok).count();
        let ran = outcomes.len();
        println!(
            "{} of {ran} checks passed, {failed} failed, {} skipped",
            ran - failed,
            plan.skipped.len()
        );
        if let Some(expected) = args.expect.filter(|&n| n != ran) {
            return Err(format!("{ran} checks ran, not the {expected} expected").into());
        }
        if failed > 0 {
            return Err(format!("{failed} fault checks failed").into());
        }
        Ok(())
    })
}
