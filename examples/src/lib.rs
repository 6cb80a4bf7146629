//! Shared pieces of the example programs: command-line options and the runtime they select.

use clap::Args;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use taskweave::{Backend, Policy, Runtime};

/// Parses a backend by its name (`persistent`, `barrier`, `grid-barrier`, `graph`, `streams`,
/// `cpu`), listing them in `--help`.
pub fn backend_parser() -> impl TypedValueParser<Value = Backend> {
    PossibleValuesParser::new(Backend::ALL.map(Backend::name))
        .map(|name| name.parse::<Backend>().expect("a listed backend parses"))
}

/// Options every example takes.
#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// Backend (default: the persistent GPU scheduler when there is a GPU, else the CPU backend).
    /// The GPU backends fail without a GPU.
    #[arg(long, value_parser = backend_parser())]
    pub backend: Option<Backend>,
    /// Scheduling policy: auto (the runtime's choice), lrr, grr, lf, local, steal, priority,
    /// affinity, static.
    #[arg(long, default_value = "auto")]
    pub policy: PolicyChoice,
    /// Worker count (default: from occupancy on the GPU, cores on the CPU).
    #[arg(long)]
    pub workers: Option<u32>,
    /// SM-aware workers: this many active workers on every SM, the rest of the resident blocks
    /// retreating (persistent and CPU backends; not with --workers).
    #[arg(long, value_name = "N")]
    pub per_sm: Option<u32>,
    /// SM-aware workers on the SMs `START..END` only (persistent and CPU backends).
    #[arg(long, value_name = "START..END", value_parser = parse_sms)]
    pub sms: Option<std::ops::Range<u32>>,
    /// Run the critical path alone on the first N SMs (static policy, with --per-sm or --sms).
    #[arg(long, value_name = "N")]
    pub critical_sms: Option<u32>,
    /// Threads per task block.
    #[arg(long, default_value_t = 128)]
    pub threads: u32,
    /// Threads per emulated block on the CPU backend.
    #[arg(long, default_value_t = 1)]
    pub cpu_lanes: u32,
    /// Skip the index checks against declared ranges.
    #[arg(long)]
    pub unchecked: bool,
    /// Record a per-task trace and write it to this file as Chrome trace-event JSON (open it in
    /// Perfetto or `chrome://tracing`). Persistent and CPU backends only.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
}

/// A policy on the command line: one of the [`Policy`]s, or `auto`, the runtime's default choice
/// (no [`Region::policy`](taskweave::Region::policy) call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyChoice(pub Option<Policy>);

impl PolicyChoice {
    /// The policy's name, or `auto`.
    pub fn name(self) -> &'static str {
        self.0.map_or("auto", Policy::name)
    }
}

impl From<Policy> for PolicyChoice {
    fn from(policy: Policy) -> Self {
        Self(Some(policy))
    }
}

impl std::str::FromStr for PolicyChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self(None)),
            _ => s.parse().map(|p| Self(Some(p))),
        }
    }
}

/// `START..END` as a range of SM ids.
fn parse_sms(text: &str) -> Result<std::ops::Range<u32>, String> {
    let (start, end) = text
        .split_once("..")
        .ok_or_else(|| format!("`{text}`: expected START..END, like 0..66"))?;
    let number = |s: &str| {
        s.trim()
            .parse::<u32>()
            .map_err(|e| format!("`{text}`: {e}"))
    };
    Ok(number(start)?..number(end)?)
}

impl RunArgs {
    /// The runtime the options select. Without `--backend` it says on stderr why it fell back
    /// to the CPU.
    pub fn runtime(&self) -> Result<Runtime, taskweave::Error> {
        let runtime = match self.backend {
            None => Runtime::new(),
            Some(backend) if backend.needs_gpu() => Runtime::gpu(0)?,
            Some(_) => Runtime::cpu(),
        };
        if let Some(reason) = runtime.fallback_reason() {
            eprintln!("note: running on the CPU backend ({reason})");
        }
        Ok(runtime)
    }

    /// Applies the options to a region.
    pub fn apply<'a>(&self, region: taskweave::Region<'a>) -> taskweave::Region<'a> {
        let region = match self.policy.0 {
            Some(policy) => region.policy(policy),
            None => region,
        };
        let region = region
            .threads(self.threads)
            .cpu_lanes(self.cpu_lanes)
            .checked(!self.unchecked)
            .trace(self.trace.is_some());
        let region = match self.backend {
            Some(backend) => region.backend(backend),
            None => region,
        };
        let region = match self.per_sm {
            Some(n) => region.workers_per_sm(n),
            None => region,
        };
        let region = match self.critical_sms {
            Some(n) => region.critical_path_sms(n),
            None => region,
        };
        let region = match &self.sms {
            Some(sms) => region.sms(sms.clone()),
            None => region,
        };
        match self.workers {
            Some(w) => region.workers(w),
            None => region,
        }
    }

    /// Writes `report`'s trace to the `--trace` file, if one was asked for, and says where.
    pub fn write_trace(&self, report: &taskweave::Report) -> std::io::Result<()> {
        let Some(path) = &self.trace else {
            return Ok(());
        };
        let Some(json) = report.chrome_trace() else {
            eprintln!(
                "note: the {} backend records no per-task trace; {} not written",
                report.backend,
                path.display()
            );
            return Ok(());
        };
        std::fs::write(path, json.to_string())?;
        eprintln!(
            "trace: {} tasks written to {}",
            report.tasks,
            path.display()
        );
        if let Some(path) = report.trace_path() {
            eprintln!("{path}");
        }
        Ok(())
    }
}

/// Runs `main`, printing an error with its `Display` (not `Debug`) and exiting with status 1.
pub fn run_main(
    main: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>,
) -> std::process::ExitCode {
    match main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

pub mod bench;
pub mod calls;
pub mod factor;
pub mod faults;
pub mod linalg;
pub mod mutation;
pub mod plots;
pub mod vendor;
pub mod workloads;
