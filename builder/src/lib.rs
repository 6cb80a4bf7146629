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
//!    LTO and one codegen unit, and `-C target-cpu` (default `sm_90`, or `TASKWEAVE_TARGET_CPU`).
//!    The kernels crate declares none of this. The nested build runs on the nightly taskweave pins
//!    ([`PINNED`], or `TASKWEAVE_TOOLCHAIN`), chosen through rustup whatever toolchain builds the
//!    crate itself, which may be stable.
//! 3. The PTX lands in `$OUT_DIR/taskweave-kernels.ptx`, and the builder sets `cfg(taskweave_ptx)`
//!    so that `task_region!` embeds it from there, once per crate: the builder names one region
//!    in `cfg(taskweave_code_owner)` to hold it for all. It prints a `cargo:rerun-if-changed`
//!    line for every source file the device build read.
//! 4. When a `ptxas` is at hand (`TASKWEAVE_PTXAS`, `PATH`, or the CUDA toolkit's), it also
//!    assembles the PTX into `$OUT_DIR/taskweave-kernels.cubin`, which `task_region!` embeds too:
//!    on a GPU of that architecture the module then loads without the driver's JIT compilation,
//!    which takes tens of seconds for a whole kernels crate on a cold cache. Without one the cubin
//!    is empty and the PTX is compiled by the driver, as before.
//! 5. In the nested build itself (target arch `nvptx64`) the builder does nothing.
//!
//! Failures say how to fix them: the toolchain missing, or a component of it (each names the
//! `rustup` command that installs it), or a compile error in device code.

mod command;
mod cubin;
mod error;
mod fit;
mod toolchain;
mod tune;

use std::path::{Path, PathBuf};

pub use error::Error;
pub use taskweave_names::{CUBIN_FILE, Entry, PTX_FILE, TARGET};
pub use toolchain::{COMPONENTS, PINNED};

use taskweave_names::{cfg, env};

/// The default `-C target-cpu`: Hopper (H100).
pub const DEFAULT_TARGET_CPU: &str = "sm_90";

/// The default register limit of the scheduler's kernels (see [`Builder::max_registers`]).
pub const DEFAULT_MAX_REGISTERS: u32 = 128;

/// A device build of one kernels crate.
#[derive(Clone, Debug)]
pub struct Builder {
    path: PathBuf,
    target_cpu: String,
    max_registers: u32,
    /// Register caps chosen for the kernels of named regions: all of them, or the unchecked
    /// kernels of one entry ([`Builder::region_registers`], [`Builder::unchecked_registers`]).
    region_registers: Vec<(String, Option<Entry>, u32)>,
}

impl Builder {
    /// A build of the crate at `path`, relative to the calling package's manifest directory.
    pub fn new(path: impl AsRef<Path>) -> Self {
        let target_cpu =
            std::env::var(env::TARGET_CPU).unwrap_or_else(|_| DEFAULT_TARGET_CPU.to_owned());
        let max_registers = std::env::var(env::MAX_REGISTERS)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(DEFAULT_MAX_REGISTERS);
        Self {
            path: path.as_ref().to_owned(),
            target_cpu,
            max_registers,
            region_registers: Vec::new(),
        }
    }

    /// Caps the registers per thread of the scheduler's kernels (`.maxnreg`, default 128, or
    /// `TASKWEAVE_MAX_REGISTERS`). Without a cap `ptxas` spends up to 255 registers on the
    /// persistent loop, which halves the number of resident worker blocks; Rust has no
    /// `__launch_bounds__`, so the builder adds the directive to the PTX.
    pub fn max_registers(mut self, registers: u32) -> Self {
        self.max_registers = registers;
        self
    }

    /// Caps the registers per thread of every kernel of the regions named `region` (the name in
    /// `task_region!`, in any module) at `registers`, instead of the cap the builder fits.
    ///
    /// The builder caps each persistent kernel at the fewest registers at which it spills no more
    /// than without a cap: right for the latency of one task, not always for a region's
    /// throughput. Fewer registers let more worker blocks share an SM, and a region of many
    /// independent heavy tasks may gain more from them than it loses to the spills. Measure
    /// before choosing: on the H100 the f32 tiled factorizations ran up to 1.37x faster capped at
    /// 128 (four worker blocks of 128 threads per SM instead of two), and the f64 ones up to 1.5x
    /// slower (`bench/results/registers-h100/`).
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
    /// The one-task-per-block kernels ([`Entry::Listed`]: one launch per level, CUDA graph
    /// nodes, streams) are not fitted: `ptxas` may use registers up to the builder's default
    /// cap, and a light body may then take more than the blocks its shared memory admits could
    /// have. The Needleman-Wunsch tile took 48, ten blocks of 128 threads per SM where its
    /// shared memory allows twelve; at 40 it spills one word in its prologue and its kernel ran
    /// 1.08–1.09x faster on the H100 (`bench/results/nw-registers-h100/`). Checked bodies keep
    /// their ranges live and spill in earnest at such caps (the same tile checked ran 1.22x
    /// slower at 40), so this caps the unchecked variants only. Such kernels keep their
    /// uncapped twin, which launches that fit at the uncapped count take.
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

    /// Sets the GPU architecture (`-C target-cpu`), e.g. `"sm_80"`.
    pub fn target_cpu(mut self, cpu: impl Into<String>) -> Self {
        self.target_cpu = cpu.into();
        self
    }

    /// Runs the device build and installs the PTX in `$OUT_DIR`. Call it from `build.rs` only.
    pub fn build(self) -> Result<(), Error> {
        for var in [
            env::TARGET_CPU,
            env::MAX_REGISTERS,
            env::FIT_REGISTERS,
            env::PTXAS,
            env::TOOLCHAIN,
            env::REGIONS,
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
        let target_dir = command::nested_target_dir(&out_dir);
        let ptx = command::DeviceBuild {
            crate_dir: &crate_dir,
            target_dir: &target_dir,
            target_cpu: &self.target_cpu,
        }
        .run()?;
        let dest = out_dir.join(PTX_FILE);
        let text = std::fs::read_to_string(&ptx.path).map_err(|source| Error::Io {
            path: ptx.path.clone(),
            source,
        })?;
        let module = fit::Module::parse(&text);
        let kernels: Vec<&str> = module.kernels().collect();
        for name in self.unmatched_regions(&kernels) {
            println!(
                "cargo:warning=taskweave: `region_registers` names region `{name}`, which has no \
                 kernels in this crate: no cap was changed for it"
            );
        }
        let owner = tune::regions(&text).min().map(str::to_owned);
        let kept_text;
        let text: &str = match std::env::var(env::REGIONS) {
            Ok(patterns) if !patterns.trim().is_empty() => {
                let kept = keep_regions(&patterns, &kernels)?;
                println!(
                    "cargo:warning=taskweave: {} keeps {kept} of {} kernels; the other regions \
                     fail to load (\"finding kernel ... in the PTX\")",
                    env::REGIONS,
                    kernels.len()
                );
                kept_text = module.only(|kernel| region_kept(&patterns, kernel), None);
                &kept_text
            }
            _ => &text,
        };
        let text = tune::add_uncapped_twins(text);
        let ptxas = cubin::find_ptxas();
        let fitted = fit::caps(
            ptxas.as_deref(),
            &self.target_cpu,
            &out_dir,
            &text,
            |kernel| self.chosen_registers(kernel).is_some(),
        );
        let text = tune::cap_registers(&text, |kernel| {
            self.chosen_registers(kernel)
                .or_else(|| fitted.get(kernel).copied())
                .unwrap_or(self.max_registers)
        });
        std::fs::write(&dest, text).map_err(|source| Error::Io {
            path: dest.clone(),
            source,
        })?;
        let cubin = out_dir.join(CUBIN_FILE);
        match ptxas {
            Some(ptxas) => {
                let cache = target_dir.join("cubins");
                if let Err(why) =
                    cubin::assemble_cached(&ptxas, &self.target_cpu, &dest, &cubin, &cache)
                {
                    println!(
                        "cargo:warning=taskweave: no cubin, the driver will compile the PTX: {why}"
                    );
                }
            }
            None => std::fs::write(&cubin, []).map_err(|source| Error::Io {
                path: cubin.clone(),
                source,
            })?,
        }
        for dep in &ptx.inputs {
            println!("cargo:rerun-if-changed={}", dep.display());
        }
        println!("cargo:rustc-env={}={}", env::PTX, dest.display());
        println!("cargo:rustc-env={}={}", env::CUBIN, cubin.display());
        // Tells `task_region!` that the PTX is there to embed, and which region embeds it.
        println!("cargo:rustc-cfg={}", cfg::PTX);
        if let Some(owner) = owner {
            println!("cargo:rustc-cfg={}=\"{owner}\"", cfg::CODE_OWNER);
        }
        Ok(())
    }
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
