//! Builds the device half of a taskweave kernels crate from its `build.rs`.
//!
//! 1. Give the kernels crate a one-line build script:
//!    ```no_run
//!    fn main() -> Result<(), taskweave_build::Error> {
//!        taskweave_build::Builder::new(".").build()
//!    }
//!    ```
//! 2. `cargo build` then compiles the crate's library a second time, for `nvptx64-nvidia-cuda`,
//!    through a nested `cargo rustc` with its own target directory (sharing the outer one would
//!    wait on its lock for ever): as a `cdylib`, under the crate attributes `no_std` and
//!    `feature(abi_ptx)`, with `-Zbuild-std=core`, the release profile with `panic = "abort"`, fat
//!    LTO and one codegen unit, and `-C target-cpu` for each target architecture
//!    ([`arch`](Builder::target_cpu): `TASKWEAVE_TARGET_CPU`, else the GPUs of the machine, else
//!    `sm_90`). The kernels crate declares none of this. The nested build runs on the nightly
//!    taskweave pins ([`PINNED`], or `TASKWEAVE_TOOLCHAIN`), chosen through rustup whatever
//!    toolchain builds the crate itself, which may be stable.
//! 3. It cuts the PTX into one module per region (and one for the kernels of no region; a
//!    release build cuts each region's module again, into one per kernel), and, with a `ptxas`
//!    (`TASKWEAVE_PTXAS`, `PATH`, the CUDA toolkit, or the `.venv` that `scripts/setup.sh`
//!    makes), assembles them into cubins, several `ptxas` at once, each module cached by its own
//!    text: a change to one region's code assembles that region's kernels again and no other.
//!    Release builds fit each kernel's register cap ([`fit`]) and keep an uncapped twin only
//!    where it differs from the kernel. It prints each region as it finishes, on the terminal
//!    and in `<target>/taskweave-device/build.log`.
//! 4. Everything lands in one [kernel bundle](taskweave_names::bundle) in `$OUT_DIR`: per region,
//!    its cubins and its PTX (for GPUs no cubin fits, which the driver then compiles, one kernel
//!    at a time, when a call first needs it). The builder sets `cfg(taskweave_ptx)` so that
//!    `task_region!` embeds the bundle, once per crate: it names one region in
//!    `cfg(taskweave_code_owner)` to hold it for all. It prints a `cargo:rerun-if-changed` line
//!    for every source file the device build read.
//! 5. In the nested build itself (target arch `nvptx64`) the builder does nothing.
//!
//! Failures say how to fix them: the toolchain missing, or a component of it (each names the
//! `rustup` command that installs it), or a compile error in device code. A build without
//! `ptxas` says so once, as a warning, and still works: the driver compiles each kernel on first
//! use.

mod arch;
mod assemble;
mod cache;
mod command;
mod error;
mod fit;
mod pack;
mod progress;
mod ptxas;
mod toolchain;
mod tune;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use arch::DEFAULT_TARGET_CPU;
pub use error::Error;
pub use taskweave_names::{BUNDLE_FILE, Entry, PTX_FILE, TARGET};
pub use toolchain::{COMPONENTS, PINNED};

use assemble::{Assembled, Cap, Group, Planned};
use taskweave_names::bundle::{Form, KERNEL_USES_TILES};
use taskweave_names::ptx::{Module, canonical};
use taskweave_names::{cfg, env};

/// The default register limit of the scheduler's kernels when they are not fitted (see
/// [`Builder::max_registers`]).
pub const DEFAULT_MAX_REGISTERS: u32 = 128;

/// A device build of one kernels crate.
#[derive(Clone, Debug)]
pub struct Builder {
    path: PathBuf,
    target_cpu: Option<String>,
    max_registers: u32,
    /// Register caps chosen for the kernels of named regions: all of them, or the unchecked
    /// kernels of one entry ([`Builder::region_registers`], [`Builder::unchecked_registers`]).
    region_registers: Vec<(String, Option<Entry>, u32)>,
}

impl Builder {
    /// A build of the crate at `path`, relative to the calling package's manifest directory.
    pub fn new(path: impl AsRef<Path>) -> Self {
        let max_registers = std::env::var(env::MAX_REGISTERS)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_REGISTERS);
        Self {
            path: path.as_ref().to_owned(),
            target_cpu: std::env::var(env::TARGET_CPU).ok(),
            max_registers,
            region_registers: Vec::new(),
        }
    }

    /// Caps the registers per thread of the scheduler's kernels where they are not fitted
    /// (`.maxnreg`, default 128, or `TASKWEAVE_MAX_REGISTERS`): in debug builds, in builds
    /// without `ptxas`, and with `TASKWEAVE_FIT_REGISTERS=0`. Without a cap `ptxas` spends up to
    /// 255 registers on the persistent loop, which halves the number of resident worker blocks;
    /// Rust has no `__launch_bounds__`, so the builder adds the directive to the PTX.
    pub fn max_registers(mut self, registers: u32) -> Self {
        self.max_registers = registers;
        self
    }

    /// Caps the registers per thread of every kernel of the regions named `region` (the name in
    /// `task_region!`, in any module) at `registers`, instead of the cap the builder fits.
    ///
    /// The builder caps each kernel at the fewest registers at which it spills no more than
    /// without a cap: right for the latency of one task, not always for a region's throughput.
    /// Fewer registers let more worker blocks share an SM, and a region of many independent heavy
    /// tasks may gain more from them than it loses to the spills. Measure before choosing: on the
    /// H100 the f32 tiled factorizations ran up to 1.37x faster capped at 128 (four worker blocks
    /// of 128 threads per SM instead of two), and the f64 ones up to 1.5x slower
    /// (`bench/results/registers-h100/`).
    ///
    /// # Panics
    /// When `registers` is outside 16..=255, what `.maxnreg` accepts.
    pub fn region_registers(self, region: &str, registers: u32) -> Self {
        self.cap(region, None, registers)
    }

    /// Caps the registers per thread of the unchecked kernels of one entry of the regions named
    /// `region` at `registers`, as [`Builder::region_registers`] does for all of their kernels;
    /// a later choice for the same kernels wins.
    ///
    /// A light body may take more registers than the blocks its shared memory admits could have.
    /// The Needleman-Wunsch tile took 48, ten blocks of 128 threads per SM where its shared
    /// memory allows twelve; at 40 it spills one word in its prologue and its one-task kernel ran
    /// 1.08–1.09x faster on the H100
    /// (`git show b958dab:bench/results/nw-registers-h100/README.md`). Checked bodies keep
    /// their ranges live and spill in earnest at such caps (the same tile checked ran 1.22x
    /// slower at 40), so this caps the unchecked variants only. A kernel that reaches its cap
    /// keeps an uncapped twin in release builds, which launches that fit at the uncapped count
    /// take.
    ///
    /// # Panics
    /// When `registers` is outside 16..=255, what `.maxnreg` accepts.
    pub fn unchecked_registers(self, region: &str, entry: Entry, registers: u32) -> Self {
        self.cap(region, Some(entry), registers)
    }

    /// Records a cap for the kernels of `region` (the unchecked ones of `entry`, or all of them).
    fn cap(mut self, region: &str, entry: Option<Entry>, registers: u32) -> Self {
        assert!(
            (16..=255).contains(&registers),
            "taskweave: region `{region}`: a register cap is 16 to 255 per thread, not {registers}"
        );
        self.region_registers
            .push((region.to_owned(), entry, registers));
        self
    }

    /// The cap chosen for `kernel`, if any ([`Builder::region_registers`],
    /// [`Builder::unchecked_registers`]).
    fn chosen_registers(&self, kernel: &str) -> Option<u32> {
        let kernel = taskweave_names::Kernel::parse(kernel)?;
        let region = kernel.stem.rsplit_once('_')?.0;
        self.region_registers
            .iter()
            .rev()
            .find(|(name, entry, _)| {
                name == region && entry.is_none_or(|e| e == kernel.entry && kernel.unchecked)
            })
            .map(|&(_, _, registers)| registers)
    }

    /// The regions given a cap ([`Builder::region_registers`]) that none of `kernels` belongs
    /// to: a misspelt name would otherwise change nothing, silently.
    fn unmatched_regions(&self, kernels: &[&str]) -> Vec<&str> {
        self.region_registers
            .iter()
            .map(|(name, _, _)| name.as_str())
            .filter(|name| {
                !kernels.iter().any(|kernel| {
                    taskweave_names::Kernel::parse(kernel)
                        .and_then(|k| k.stem.rsplit_once('_'))
                        .is_some_and(|(region, _)| region == *name)
                })
            })
            .collect()
    }

    /// Sets the GPU architectures (`-C target-cpu`), e.g. `"sm_80"` or `"sm_80,sm_90"`, instead of
    /// `TASKWEAVE_TARGET_CPU` or the GPUs of the machine.
    pub fn target_cpu(mut self, cpu: impl Into<String>) -> Self {
        self.target_cpu = Some(cpu.into());
        self
    }

    /// How `kernel` is assembled: its cap, and whether it may have an uncapped twin.
    fn plan(&self, kernel: &str, fitting: bool) -> Planned {
        let parsed = taskweave_names::Kernel::parse(kernel);
        let cap = match (parsed, self.chosen_registers(kernel)) {
            (None, _) => Cap::None,
            (Some(_), Some(chosen)) => Cap::Fixed(chosen),
            (Some(_), None) if fitting => Cap::Fit,
            (Some(_), None) => Cap::Fixed(self.max_registers),
        };
        Planned {
            name: kernel.to_owned(),
            cap,
            twin: parsed.is_some_and(|k| k.entry.twinned()),
        }
    }

    /// Runs the device build and installs the kernel bundle in `$OUT_DIR`. Call it from
    /// `build.rs` only.
    pub fn build(self) -> Result<(), Error> {
        for var in [
            env::TARGET_CPU,
            env::MAX_REGISTERS,
            env::FIT_REGISTERS,
            env::PTXAS,
            env::PTXAS_JOBS,
            env::TOOLCHAIN,
            env::REGIONS,
            env::HOP_STAMPS,
            "CUDA_HOME",
            "VIRTUAL_ENV",
        ] {
            println!("cargo:rerun-if-env-changed={var}");
        }
        println!("cargo::rustc-check-cfg=cfg({})", cfg::PTX);
        println!(
            "cargo::rustc-check-cfg=cfg({}, values(any()))",
            cfg::CODE_OWNER
        );
        if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("nvptx64") {
            return Ok(());
        }
        let out_dir = PathBuf::from(env("OUT_DIR")?);
        let manifest_dir = PathBuf::from(env("CARGO_MANIFEST_DIR")?);
        let crate_dir = manifest_dir.join(&self.path);
        let device_dir = command::nested_target_dir(&out_dir);
        let krate = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        let progress = progress::Progress::new(&krate, &device_dir.join("build.log"));
        let (targets, source) =
            arch::targets(self.target_cpu.as_deref()).map_err(|why| Error::Target { why })?;
        progress.log_line(&format!(
            "targets: {} ({})",
            targets.join(", "),
            match source {
                arch::Source::Asked => "asked for",
                arch::Source::Present => "the GPUs of this machine",
                arch::Source::Default => "the default: no GPU found",
            }
        ));
        let ptxas = ptxas::find(&crate_dir).and_then(ptxas::Ptxas::new);
        let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
        let fitting =
            release && ptxas.is_ok() && !std::env::var(env::FIT_REGISTERS).is_ok_and(|v| v == "0");
        match &ptxas {
            Ok(p) => progress.log_line(&format!(
                "ptxas: {} ({})",
                p.path.display(),
                p.short_version()
            )),
            Err(why) => {
                progress.log_line(&format!("ptxas: none: {why}"));
                println!(
                    "cargo:warning=taskweave: no cubins in this build, {why}; the CUDA driver will \
                     compile each kernel when a call first needs it (seconds to a minute each; it \
                     caches the result, up to CUDA_CACHE_MAXSIZE)"
                );
            }
        }
        let cache = cache::Cache::new(device_dir.join("cubins"));
        let began = std::time::SystemTime::now();
        let mut writer = pack::Packer::default();
        let mut report = String::from("# arch\tkernel\tmodule\tregisters\tspill-bytes\tms\n");
        let (mut inputs, mut owner, mut whole) = (Vec::new(), None, None);
        let mut used_bytes = 0u64;
        for target in &targets {
            progress.step("Compiling", &format!("for {target}"));
            let ptx = command::DeviceBuild {
                crate_dir: &crate_dir,
                target_dir: &device_dir.join(target),
                target_cpu: target,
            }
            .run()?;
            let text = std::fs::read_to_string(&ptx.path).map_err(|source| Error::Io {
                path: ptx.path.clone(),
                source,
            })?;
            let module = Module::parse(&text);
            let kernels: Vec<&str> = module.kernels().collect();
            progress.step(
                "Compiled",
                &format!(
                    "{} kernels for {target} ({:.1} MB of PTX) in {}",
                    kernels.len(),
                    text.len() as f64 / 1e6,
                    progress::duration(progress.elapsed())
                ),
            );
            if owner.is_none() {
                for name in self.unmatched_regions(&kernels) {
                    println!(
                        "cargo:warning=taskweave: `region_registers` names region `{name}`, which \
                         has no kernels in this crate: no cap was changed for it"
                    );
                }
                owner = Some(tune::regions(&text).min().map(str::to_owned));
            }
            let kept: Vec<&str> = match std::env::var(env::REGIONS) {
                Ok(patterns) if !patterns.trim().is_empty() => {
                    let kept: Vec<&str> = kernels
                        .iter()
                        .copied()
                        .filter(|kernel| region_kept(&patterns, kernel))
                        .collect();
                    keep_regions(&patterns, &kernels)?;
                    println!(
                        "cargo:warning=taskweave: {} keeps {} of {} kernels; the other regions \
                         fail to load",
                        env::REGIONS,
                        kept.len(),
                        kernels.len()
                    );
                    kept
                }
                _ => kernels.clone(),
            };
            let groups = groups(&kept, |k| self.plan(k, fitting));
            let assembled: Vec<Result<Assembled, String>> = match &ptxas {
                Ok(ptxas) => {
                    let scratch = out_dir.join("ptxas");
                    std::fs::create_dir_all(&scratch).map_err(|source| Error::Io {
                        path: scratch.clone(),
                        source,
                    })?;
                    assemble::Work {
                        ptxas,
                        arch: target,
                        module: &module,
                        groups: &groups,
                        cache: &cache,
                        progress: &progress,
                        scratch: &scratch,
                        jobs: jobs(),
                        twins: release,
                        split: release,
                    }
                    .run()
                }
                Err(why) => groups.iter().map(|_| Err(why.clone())).collect(),
            };
            let number = arch::number(target);
            let flags = |kernel: &str| {
                let base = kernel
                    .strip_suffix(taskweave_names::UNCAPPED_SUFFIX)
                    .unwrap_or(kernel);
                let tiles = module.reached(base).iter().any(|f| {
                    taskweave_names::TILE_PATHS
                        .iter()
                        .any(|path| f.contains(path))
                });
                if tiles { KERNEL_USES_TILES } else { 0 }
            };
            let mut caps_all = BTreeMap::new();
            for (group, result) in groups.iter().zip(assembled) {
                let caps: BTreeMap<String, Option<u32>> = match &result {
                    Ok(a) => a.caps.clone(),
                    Err(_) => group
                        .kernels
                        .iter()
                        .map(|k| (k.name.clone(), default_cap(k, self.max_registers)))
                        .collect(),
                };
                let ptx_text = canonical(&module.only(
                    |name| caps.contains_key(name),
                    |name| caps.get(name).copied().flatten(),
                ));
                let m = writer.module(&group.region, number, Form::Ptx, ptx_text.into_bytes());
                for k in &group.kernels {
                    writer.kernel(&k.name, m, &k.name, flags(&k.name));
                }
                match result {
                    Ok(a) => {
                        let ids: Vec<usize> = a
                            .pieces
                            .iter()
                            .map(|p| {
                                used_bytes += p.cubin.len() as u64;
                                writer.module(&group.region, number, Form::Cubin, p.cubin.clone())
                            })
                            .collect();
                        for (name, piece, symbol) in &a.index {
                            writer.kernel(name, ids[*piece], symbol, flags(name));
                            if let Some(k) = a.pieces[*piece].report.kernels.get(symbol) {
                                let spills = k.spills.get(symbol).copied().unwrap_or(0);
                                report.push_str(&format!(
                                    "{target}\t{name}\t{piece}\t{}\t{spills}\t{:.0}\n",
                                    k.registers, k.millis
                                ));
                            }
                        }
                    }
                    Err(why) if ptxas.is_ok() => println!(
                        "cargo:warning=taskweave: the kernels of {} were not assembled for \
                         {target}, the driver will compile them: {why}",
                        match group.region.as_str() {
                            "" => "no region".to_owned(),
                            stem => format!("region `{stem}`"),
                        }
                    ),
                    Err(_) => {}
                }
                caps_all.extend(caps);
            }
            if whole.is_none() {
                whole = Some(module.only(
                    |name| caps_all.contains_key(name),
                    |name| caps_all.get(name).copied().flatten(),
                ));
            }
            inputs.extend(ptx.inputs);
        }
        cache.prune((used_bytes * 3).max(256 << 20), began);
        let bundle = writer.finish(jobs());
        let write = |name: &str, bytes: &[u8]| {
            let dest = out_dir.join(name);
            std::fs::write(&dest, bytes).map_err(|source| Error::Io {
                path: dest.clone(),
                source,
            })?;
            Ok::<PathBuf, Error>(dest)
        };
        let bundle_path = write(BUNDLE_FILE, &bundle)?;
        let ptx_path = write(PTX_FILE, whole.unwrap_or_default().as_bytes())?;
        write(REPORT_FILE, report.as_bytes())?;
        progress.step(
            "Finished",
            &format!(
                "{} for {}: a bundle of {:.1} MB in {}",
                if ptxas.is_ok() {
                    "cubins and PTX"
                } else {
                    "PTX alone"
                },
                targets.join(", "),
                bundle.len() as f64 / 1e6,
                progress::duration(progress.elapsed())
            ),
        );
        inputs.sort();
        inputs.dedup();
        for dep in &inputs {
            println!("cargo:rerun-if-changed={}", dep.display());
        }
        println!("cargo:rustc-env={}={}", env::PTX, ptx_path.display());
        println!("cargo:rustc-env={}={}", env::BUNDLE, bundle_path.display());
        // Tells `task_region!` that the bundle is there to embed, and which region embeds it.
        println!("cargo:rustc-cfg={}", cfg::PTX);
        if let Some(Some(owner)) = owner {
            println!("cargo:rustc-cfg={}=\"{owner}\"", cfg::CODE_OWNER);
        }
        Ok(())
    }
}

/// The file in `$OUT_DIR` that lists each assembled kernel's registers and spills, one line a
/// kernel and architecture, for `scripts/check-ptx.sh`.
pub const REPORT_FILE: &str = "taskweave-kernels.report";

/// A kernel's cap when it was not assembled: its fixed cap, or `max_registers` in place of a fit.
fn default_cap(kernel: &Planned, max_registers: u32) -> Option<u32> {
    match kernel.cap {
        Cap::Fixed(c) => Some(c),
        Cap::Fit => Some(max_registers),
        Cap::None => None,
    }
}

/// `kernels` grouped by region (the kernels of no region last, as region `""`), each planned.
fn groups(kernels: &[&str], plan: impl Fn(&str) -> Planned) -> Vec<Group> {
    let mut by_region: BTreeMap<String, Vec<Planned>> = BTreeMap::new();
    for &kernel in kernels {
        let region = taskweave_names::Kernel::parse(kernel).map_or("", |k| k.stem);
        by_region
            .entry(region.to_owned())
            .or_default()
            .push(plan(kernel));
    }
    let mut groups: Vec<Group> = by_region
        .into_iter()
        .map(|(region, kernels)| Group { region, kernels })
        .collect();
    groups.sort_by_key(|g| g.region.is_empty());
    groups
}

/// How many `ptxas` processes run at once: `TASKWEAVE_PTXAS_JOBS`, else cargo's job count, else
/// the cores.
fn jobs() -> usize {
    std::env::var(env::PTXAS_JOBS)
        .or_else(|_| std::env::var("NUM_JOBS"))
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The region of `kernel`, if it is one of the scheduler's.
fn region_of(kernel: &str) -> Option<&str> {
    let kernel = taskweave_names::Kernel::parse(kernel)?;
    Some(kernel.stem.rsplit_once('_')?.0)
}

/// Whether `TASKWEAVE_REGIONS`'s `patterns` keep `kernel`: its region is one of the names, or
/// starts with one that ends in `*`. Kernels of no region are not kept.
fn region_kept(patterns: &str, kernel: &str) -> bool {
    region_of(kernel).is_some_and(|region| {
        patterns
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .any(|p| match p.strip_suffix('*') {
                Some(prefix) => region.starts_with(prefix),
                None => region == p,
            })
    })
}

/// How many of `kernels` `patterns` keep; an error naming the crate's regions when none.
fn keep_regions(patterns: &str, kernels: &[&str]) -> Result<usize, Error> {
    let kept = kernels
        .iter()
        .filter(|kernel| region_kept(patterns, kernel))
        .count();
    if kept == 0 {
        let mut regions: Vec<&str> = kernels.iter().filter_map(|k| region_of(k)).collect();
        regions.sort_unstable();
        regions.dedup();
        return Err(Error::NoRegionKept {
            patterns: patterns.to_owned(),
            regions: regions.join(", "),
        });
    }
    Ok(kept)
}

fn env(name: &'static str) -> Result<String, Error> {
    std::env::var(name).map_err(|_| Error::NotInBuildScript { var: name })
}

#[cfg(test)]
mod tests {
    use super::Builder;

    #[test]
    fn a_region_cap_applies_to_every_kernel_of_that_region_only() {
        let b = Builder::new(".")
            .region_registers("lu_f32", 96)
            .region_registers("lu_f32", 128);
        // The last choice for a name wins, at every entry and variant of the region.
        for kernel in [
            "taskweave_region_lu_f32_12345678",
            "taskweave_region_lu_f32_9abcdef0__unchecked",
            "taskweave_listed_lu_f32_12345678",
        ] {
            assert_eq!(b.chosen_registers(kernel), Some(128), "{kernel}");
        }
        // Another region whose name starts or ends the same way, and a symbol of no region.
        for kernel in [
            "taskweave_region_lu_f32_resident_12345678",
            "taskweave_region_xlu_f32_12345678",
            "lu_f32_12345678",
        ] {
            assert_eq!(b.chosen_registers(kernel), None, "{kernel}");
        }
    }

    #[test]
    fn an_unchecked_cap_applies_to_the_unchecked_kernels_of_that_entry_only() {
        let b = Builder::new(".")
            .region_registers("nw", 96)
            .unchecked_registers("nw", super::Entry::Listed, 40);
        for (kernel, cap) in [
            ("taskweave_listed_nw_12345678__unchecked", Some(40)),
            ("taskweave_listed_nw_12345678", Some(96)),
            ("taskweave_region_nw_12345678__unchecked", Some(96)),
            ("taskweave_region_nw_12345678", Some(96)),
            ("taskweave_levels_nw_12345678", Some(96)),
            ("taskweave_listed_nw_odd_12345678", None),
        ] {
            assert_eq!(b.chosen_registers(kernel), cap, "{kernel}");
        }
        // A later region-wide choice wins over the earlier one for the entry.
        let b = b.region_registers("nw", 64);
        assert_eq!(
            b.chosen_registers("taskweave_listed_nw_12345678__unchecked"),
            Some(64)
        );
    }

    #[test]
    fn a_region_named_for_a_cap_but_without_kernels_is_reported() {
        let b = Builder::new(".")
            .region_registers("lu_f32", 128)
            .region_registers("lu_f23", 128);
        let kernels = [
            "taskweave_region_lu_f32_12345678",
            "taskweave_listed_lu_f32_12345678",
        ];
        assert_eq!(b.unmatched_regions(&kernels), ["lu_f23"]);
    }

    #[test]
    fn taskweave_regions_keeps_named_regions_and_prefixes_only() {
        let kernels = [
            "taskweave_region_lu_f32_12345678",
            "taskweave_listed_lu_f32_12345678__unchecked",
            "taskweave_region_lud_12345678",
            "taskweave_region_cholesky_f64_resident_12345678",
            "taskweave_region_nw_12345678",
            "helper_function",
        ];
        let kept = |patterns: &str| -> Vec<&str> {
            kernels
                .iter()
                .copied()
                .filter(|k| super::region_kept(patterns, k))
                .collect()
        };
        // `lu_*` is a prefix: not `lud`, whose name does not start with `lu_`.
        assert_eq!(
            kept("cholesky_*, lu_*"),
            &kernels[..2]
                .iter()
                .chain(&kernels[3..4])
                .copied()
                .collect::<Vec<_>>()[..]
        );
        // A plain name is the whole region's name.
        assert_eq!(kept("lu"), Vec::<&str>::new());
        assert_eq!(
            kept("lud,nw"),
            [
                "taskweave_region_lud_12345678",
                "taskweave_region_nw_12345678"
            ]
        );
        assert_eq!(super::keep_regions("lu_*", &kernels).unwrap(), 2);
        let none = super::keep_regions("chol", &kernels)
            .unwrap_err()
            .to_string();
        assert!(
            none.contains("`chol`") && none.contains("cholesky_f64_resident, lu_f32, lud, nw"),
            "{none}"
        );
    }

    #[test]
    #[should_panic(expected = "region `lu_f32`: a register cap is 16 to 255 per thread, not 300")]
    fn a_cap_beyond_what_ptxas_takes_is_refused() {
        let _ = Builder::new(".").region_registers("lu_f32", 300);
    }
}
