//! The names that cross taskweave's crates, spelled once.
//!
//! `task_region!` (in `taskweave-macros`) emits kernels under these names, the device build
//! (`taskweave-build`) finds them again in the PTX and writes the files and variables below, and
//! the host (`taskweave-host`) looks the kernels up and reads the files through them:
//!
//! 1. A region's symbols share one stem, [`region_stem`]: its name and a hash of where it is
//!    written, so that two regions of one name in different modules get different kernels.
//! 2. Each region has one kernel per [`Entry`]; a [`Kernel`] is one of them, possibly its variant
//!    without index checks ([`UNCHECKED_SUFFIX`]) or the builder's twin without a register cap
//!    ([`UNCAPPED_SUFFIX`]). Its `Display` is the symbol and [`Kernel::parse`] reads one back.
//! 3. The device build writes [`BUNDLE_FILE`] (every region's kernels, cut into one module per
//!    region and assembled per architecture: [`bundle`]) and [`PTX_FILE`], and tells the kernels
//!    crate where they are through the variables of [`env`] and the cfgs of [`cfg`]. [`ptx`] cuts
//!    a PTX module into those pieces, for the builder and for the host when the driver has to
//!    compile one.
//!
//! ```
//! use taskweave_names::{Entry, Kernel};
//!
//! let kernel = Kernel::new(Entry::Listed, "lu_0badf00d").unchecked();
//! assert_eq!(kernel.to_string(), "taskweave_listed_lu_0badf00d__unchecked");
//! assert_eq!(Kernel::parse("taskweave_listed_lu_0badf00d__unchecked"), Some(kernel));
//! ```
#![no_std]

extern crate alloc;

pub mod bundle;
pub mod ptx;

use alloc::format;
use alloc::string::String;
use core::fmt;

/// The device target.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// The file name of the PTX the device build writes to the kernels crate's `OUT_DIR`: the whole
/// crate's, with the register caps of its kernels, for tools that read it.
pub const PTX_FILE: &str = "taskweave-kernels.ptx";
/// The file name of the crate's kernel [`bundle`], which the crate embeds.
pub const BUNDLE_FILE: &str = "taskweave-kernels.bundle";

/// The suffix of a kernel's variant without the checked task bodies, for runs with index checks
/// off.
pub const UNCHECKED_SUFFIX: &str = "__unchecked";
/// The suffix of the builder's twin of a kernel without the register cap.
pub const UNCAPPED_SUFFIX: &str = "__uncapped";

/// What the mangled symbols of the tile library's functions contain (its crate, `taskweave_tile`,
/// as v0 mangling writes it): the device build marks the kernels that reach one, whose blocks
/// then get the shared memory tile operations need.
pub const TILE_PATHS: &[&str] = &["14taskweave_tile"];

/// Environment variables.
pub mod env {
    /// Read by the device build: the GPU architectures to build for (`-C target-cpu`), e.g.
    /// `sm_80` or `sm_80,sm_90`; unset, those of the GPUs present (by `nvidia-smi`), else `sm_90`.
    pub const TARGET_CPU: &str = "TASKWEAVE_TARGET_CPU";
    /// Read by the device build: the register cap of the scheduler's kernels that it does not fit.
    pub const MAX_REGISTERS: &str = "TASKWEAVE_MAX_REGISTERS";
    /// Read by the device build: `0` keeps it from fitting each persistent kernel's register cap
    /// with `ptxas` (they all get `MAX_REGISTERS` then).
    pub const FIT_REGISTERS: &str = "TASKWEAVE_FIT_REGISTERS";
    /// Read by the device build: the regions whose kernels it keeps, comma-separated (a name ending
    /// in `*` keeps every region it starts), for builds that need only some of them; unset or
    /// empty keeps all.
    pub const REGIONS: &str = "TASKWEAVE_REGIONS";
    /// Read by the device build: the `ptxas` to assemble a cubin with (empty or `0`: none).
    pub const PTXAS: &str = "TASKWEAVE_PTXAS";
    /// Read by the device build: the Rust toolchain it compiles with, instead of the pinned one.
    pub const TOOLCHAIN: &str = "TASKWEAVE_TOOLCHAIN";
    /// Read by the device build: how many `ptxas` processes run at once (default: cargo's job
    /// count).
    pub const PTXAS_JOBS: &str = "TASKWEAVE_PTXAS_JOBS";
    /// Read when the device crate is compiled (`option_env!`): set, the persistent worker loop
    /// writes the leader's cycles between its steps into a traced run's records instead of their
    /// times, for `sched_bench` to print (a measurement build; see `docs/scheduler.md`).
    pub const HOP_STAMPS: &str = "TASKWEAVE_HOP_STAMPS";
    /// Set by the device build for the kernels crate: the path of its whole PTX.
    pub const PTX: &str = "TASKWEAVE_PTX";
    /// Set by the device build for the kernels crate: the path of its kernel bundle.
    pub const BUNDLE: &str = "TASKWEAVE_BUNDLE";
}

/// Cfgs the device build sets on the kernels crate.
pub mod cfg {
    /// Set when the kernel bundle is there to embed.
    pub const PTX: &str = "taskweave_ptx";
    /// Names the stem of the one region that embeds the crate's kernel bundle, for every region
    /// of the crate to share (`taskweave_code_owner = "<stem>"`).
    pub const CODE_OWNER: &str = "taskweave_code_owner";
}

/// A region's kernel entry points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    /// The persistent scheduler: resident workers running the whole DAG.
    Persistent,
    /// One task per block, `list[b]`: one launch per level, CUDA graph nodes, streams.
    Listed,
    /// One launch with a grid barrier between levels.
    Levels,
}

impl Entry {
    /// Every entry.
    pub const ALL: [Entry; 3] = [Entry::Persistent, Entry::Listed, Entry::Levels];

    /// The prefix of the entry's symbols.
    pub const fn prefix(self) -> &'static str {
        match self {
            Entry::Persistent => "taskweave_region_",
            Entry::Listed => "taskweave_listed_",
            Entry::Levels => "taskweave_levels_",
        }
    }

    /// Whether the builder may keep an uncapped twin of the entry's kernels (in release builds,
    /// where it is other code than the capped kernel): the launches of the persistent and one-task
    /// kernels may want fewer, larger blocks. The grid barrier needs every block resident, so its
    /// kernel keeps the cap.
    pub const fn twinned(self) -> bool {
        matches!(self, Entry::Persistent | Entry::Listed)
    }
}

/// One kernel of a region: its entry, the region's stem, and which variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Kernel<'a> {
    /// The entry point.
    pub entry: Entry,
    /// The region's [`region_stem`].
    pub stem: &'a str,
    /// The variant without the checked task bodies.
    pub unchecked: bool,
    /// The builder's twin without the register cap.
    pub uncapped: bool,
}

impl<'a> Kernel<'a> {
    /// The checked, capped kernel of `entry` for the region of `stem`.
    pub const fn new(entry: Entry, stem: &'a str) -> Self {
        Self {
            entry,
            stem,
            unchecked: false,
            uncapped: false,
        }
    }

    /// The same kernel at another entry.
    pub const fn at(self, entry: Entry) -> Self {
        Self { entry, ..self }
    }

    /// Its variant without the checked task bodies.
    pub const fn unchecked(self) -> Self {
        Self {
            unchecked: true,
            ..self
        }
    }

    /// Its uncapped twin.
    pub const fn uncapped(self) -> Self {
        Self {
            uncapped: true,
            ..self
        }
    }

    /// Reads a symbol written by `Display`; `None` for any other symbol.
    pub fn parse(symbol: &'a str) -> Option<Self> {
        let (entry, rest) = Entry::ALL
            .iter()
            .find_map(|e| symbol.strip_prefix(e.prefix()).map(|rest| (*e, rest)))?;
        let (rest, uncapped) = strip(rest, UNCAPPED_SUFFIX);
        let (stem, unchecked) = strip(rest, UNCHECKED_SUFFIX);
        (!stem.is_empty()).then_some(Self {
            entry,
            stem,
            unchecked,
            uncapped,
        })
    }
}

fn strip<'a>(text: &'a str, suffix: &str) -> (&'a str, bool) {
    match text.strip_suffix(suffix) {
        Some(rest) => (rest, true),
        None => (text, false),
    }
}

impl fmt::Display for Kernel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.entry.prefix())?;
        f.write_str(self.stem)?;
        if self.unchecked {
            f.write_str(UNCHECKED_SUFFIX)?;
        }
        if self.uncapped {
            f.write_str(UNCAPPED_SUFFIX)?;
        }
        Ok(())
    }
}

/// The stem of a region's symbols: its `name` and a hash of `site`, where the region is written
/// (its file relative to the crate, line and column). The device build and the host build of a
/// crate see the same sites, so they agree on every symbol, while two regions of one name in
/// different modules do not collide.
pub fn region_stem(name: &str, site: &str) -> String {
    format!("{name}_{:08x}", fnv1a(site.as_bytes()) as u32)
}

/// The symbol of the static that holds a kernels crate's kernel bundle: one per crate, defined by
/// the region that [`cfg::CODE_OWNER`] names and declared by every other. `package` identifies
/// the package (its name, version and directory); two crates never share the symbol.
pub fn code_symbol(crate_name: &str, package: &str) -> String {
    format!(
        "__taskweave_code_{crate_name}_{:016x}",
        fnv1a(package.as_bytes())
    )
}

/// 64-bit FNV-1a: a small hash that gives the same value in every build.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_variant_of_every_entry_reads_back() {
        for entry in Entry::ALL {
            let base = Kernel::new(entry, "step_12345678");
            for kernel in [
                base,
                base.unchecked(),
                base.uncapped(),
                base.unchecked().uncapped(),
            ] {
                let symbol = kernel.to_string();
                assert_eq!(Kernel::parse(&symbol), Some(kernel), "{symbol}");
            }
        }
        assert_eq!(
            Kernel::new(Entry::Persistent, "lu_1")
                .unchecked()
                .uncapped()
                .to_string(),
            "taskweave_region_lu_1__unchecked__uncapped"
        );
    }

    #[test]
    fn other_symbols_are_not_kernels() {
        assert_eq!(Kernel::parse("selfcheck_atomics"), None);
        assert_eq!(Kernel::parse("taskweave_region_"), None);
        assert_eq!(Kernel::parse("taskweave_region___unchecked"), None);
    }

    #[test]
    fn the_stem_tells_sites_apart_and_is_stable() {
        let a = region_stem("step", "src/a.rs:3:1");
        let b = region_stem("step", "src/b.rs:3:1");
        assert_ne!(a, b);
        assert_eq!(a, region_stem("step", "src/a.rs:3:1"));
        assert!(
            a.starts_with("step_") && a.len() == "step_".len() + 8,
            "{a}"
        );
        // FNV-1a's published test vector: the hash is the same on every host and build.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
