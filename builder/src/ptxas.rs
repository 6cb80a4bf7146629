//! `ptxas`: where the builder finds one, how it runs it, and what its report says.
//!
//! 1. [`find`] looks in `TASKWEAVE_PTXAS`, on `PATH`, in the CUDA toolkit, and in the virtual
//!    environment that the repository's `scripts/setup.sh` (or a user's own `pip install
//!    nvidia-cuda-nvcc`) puts it in: `.venv` beside the crate or any folder above it, or
//!    `$VIRTUAL_ENV`.
//! 2. [`Ptxas::assemble`] runs it on one PTX file with `-v`, into a cubin or nowhere (a probe).
//! 3. [`Report::parse`] reads `-v`'s report: per kernel, the registers it uses, its compile time
//!    and the bytes each function spills in it (`ptxas` assembles the functions a kernel calls
//!    anew for each kernel).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `pip install nvidia-cuda-nvcc` puts `ptxas`, under a virtual environment's `lib`.
const PIP_PTXAS: &str = "site-packages/nvidia/cu13/bin/ptxas";

/// The `ptxas` to assemble with, or why there is none: `TASKWEAVE_PTXAS` (a path; empty or `0`
/// turns assembly off), else the first `ptxas` on `PATH`, else `$CUDA_HOME/bin/ptxas` or
/// `/usr/local/cuda/bin/ptxas`, else the one pip installed in `$VIRTUAL_ENV` or in a `.venv` of
/// `start` or a folder above it.
pub(crate) fn find(start: &Path) -> Result<PathBuf, String> {
    search(&Places {
        ptxas: std::env::var_os(taskweave_names::env::PTXAS),
        path: std::env::var_os("PATH"),
        cuda_home: std::env::var_os("CUDA_HOME"),
        virtual_env: std::env::var_os("VIRTUAL_ENV"),
        start,
    })
}

/// Where [`search`] looks: the variables it reads, and the folder it starts from.
struct Places<'a> {
    ptxas: Option<OsString>,
    path: Option<OsString>,
    cuda_home: Option<OsString>,
    virtual_env: Option<OsString>,
    start: &'a Path,
}

/// [`find`], over the given variables.
fn search(places: &Places<'_>) -> Result<PathBuf, String> {
    if let Some(path) = &places.ptxas {
        if path.is_empty() || path == "0" {
            return Err(format!(
                "{}={} turns assembly off",
                taskweave_names::env::PTXAS,
                path.to_string_lossy()
            ));
        }
        return Ok(PathBuf::from(path));
    }
    let on_path = places
        .path
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("ptxas"));
    let cuda = places
        .cuda_home
        .iter()
        .map(|home| PathBuf::from(home).join("bin/ptxas"))
        .chain([PathBuf::from("/usr/local/cuda/bin/ptxas")]);
    let venvs = places
        .virtual_env
        .iter()
        .map(PathBuf::from)
        .chain(places.start.ancestors().map(|dir| dir.join(".venv")));
    let pip = venvs.flat_map(|venv| pip_ptxas(&venv));
    on_path
        .chain(cuda)
        .chain(pip)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "no ptxas on PATH, in the CUDA toolkit, or in a .venv beside the crate or above it \
             (`pip install nvidia-cuda-nvcc` there, as scripts/setup.sh does, or set TASKWEAVE_PTXAS)"
                .to_owned()
        })
}

/// The `ptxas` of every Python under `venv/lib`.
fn pip_ptxas(venv: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|python| python.path().join(PIP_PTXAS))
        .collect();
    found.sort();
    found
}

/// A `ptxas` that runs.
#[derive(Clone, Debug)]
pub(crate) struct Ptxas {
    pub path: PathBuf,
    /// What it prints for `--version`: part of every cache key, so that another version's cubins
    /// are never reused (a build with 13.5 instead of 13.0, to get around a miscompile of 13.0's,
    /// once copied the old cubin and ran the same SASS).
    pub version: String,
}

impl Ptxas {
    /// `path`, if it runs.
    pub(crate) fn new(path: PathBuf) -> Result<Self, String> {
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .map_err(|e| format!("could not run {}: {e}", path.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} --version failed ({})",
                path.display(),
                out.status
            ));
        }
        let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(Self { path, version })
    }

    /// The last line of its version, e.g. `Build cuda_13.0.r13.0/compiler.36424714_0`.
    pub(crate) fn short_version(&self) -> &str {
        self.version.lines().last().unwrap_or("")
    }

    /// Assembles `ptx` for `arch` (`sm_90`) with `-O3 -v`, into `cubin` or, for a probe, nowhere,
    /// with `threads` threads of its own (`--split-compile`). The report, or why it failed.
    pub(crate) fn assemble(
        &self,
        arch: &str,
        ptx: &Path,
        cubin: Option<&Path>,
        threads: usize,
    ) -> Result<Report, String> {
        let null = Path::new(if cfg!(windows) { "NUL" } else { "/dev/null" });
        let output = Command::new(&self.path)
            .arg(format!("-arch={arch}"))
            .args(["-O3", "-v"])
            .arg(format!("--split-compile={threads}"))
            .arg(ptx)
            .arg("-o")
            .arg(cubin.unwrap_or(null))
            .output()
            .map_err(|e| format!("could not run {}: {e}", self.path.display()))?;
        let text = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            return Err(format!(
                "{} failed ({}) on {}:\n{}",
                self.path.display(),
                output.status,
                ptx.display(),
                text.trim()
            ));
        }
        Ok(Report::parse(&text))
    }
}

/// What `ptxas -v` says of one kernel.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct KernelReport {
    /// The registers it uses.
    pub registers: u32,
    /// Bytes of spill stores of each function, in this kernel (the kernel's own under its name).
    pub spills: BTreeMap<String, u64>,
    /// Milliseconds `ptxas` took on it.
    pub millis: f64,
}

/// What `ptxas -v` says of a module: each kernel's [`KernelReport`].
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Report {
    pub kernels: BTreeMap<String, KernelReport>,
}

impl Report {
    /// Reads a report: a "Compiling entry function 'K'" line opens kernel K's section, in which
    /// each "Function properties for F" line is followed by F's "… bytes spill stores …" line, and
    /// come K's "Used N registers" and "Compile time = T ms".
    pub(crate) fn parse(text: &str) -> Self {
        let mut report = Self::default();
        let mut kernel: Option<String> = None;
        let mut function: Option<String> = None;
        for line in text.lines() {
            if let Some(rest) = line.split("Compiling entry function '").nth(1) {
                let name = rest.split('\'').next().unwrap_or(rest).to_owned();
                report.kernels.entry(name.clone()).or_default();
                kernel = Some(name);
                continue;
            }
            let Some(current) = kernel.as_ref().and_then(|k| report.kernels.get_mut(k)) else {
                continue;
            };
            if let Some(name) = line.split("Function properties for ").nth(1) {
                function = Some(name.trim().to_owned());
            } else if let Some(at) = line.find(" bytes spill stores")
                && let Some(name) = function.take()
            {
                current
                    .spills
                    .insert(name, last_number(&line[..at]).unwrap_or(0));
            } else if let Some(at) = line.find(" registers")
                && let Some(used) = line[..at].split("Used ").nth(1)
            {
                current.registers = used.trim().parse().unwrap_or(0);
            } else if let Some(ms) = line.split("Compile time = ").nth(1) {
                current.millis = ms.trim_end_matches(" ms").trim().parse().unwrap_or(0.0);
            }
        }
        report
    }

    /// The report as text, as [`Report::parse`] reads it back (for the cache).
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for (name, k) in &self.kernels {
            out.push_str(&format!("ptxas info : Compiling entry function '{name}'\n"));
            for (f, bytes) in &k.spills {
                out.push_str(&format!(
                    "ptxas info : Function properties for {f}\n    {bytes} bytes spill stores\n"
                ));
            }
            out.push_str(&format!("ptxas info : Used {} registers\n", k.registers));
            out.push_str(&format!("ptxas info : Compile time = {} ms\n", k.millis));
        }
        out
    }
}

/// The number that ends `text`.
fn last_number(text: &str) -> Option<u64> {
    text.trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
}

/// Whether `probe` spills some function more than `base` does.
pub(crate) fn spills_more(base: &KernelReport, probe: &KernelReport) -> bool {
    probe
        .spills
        .iter()
        .any(|(name, &bytes)| bytes > base.spills.get(name).copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "ptxas info    : 10895 bytes gmem\n\
        ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
        ptxas info    : Function properties for k\n\
        \x20   16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
        ptxas info    : Used 64 registers, used 1 barriers, 16 bytes cumulative stack size\n\
        ptxas info    : Compile time = 17.5 ms\n\
        ptxas info    : Function properties for fmt\n\
        \x20   136 bytes stack frame, 112 bytes spill stores, 112 bytes spill loads\n\
        ptxas info    : Compiling entry function 'j' for 'sm_90'\n\
        ptxas info    : Function properties for j\n\
        \x20   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
        ptxas info    : Used 255 registers, used 1 barriers\n\
        ptxas info    : Function properties for fmt\n\
        \x20   136 bytes stack frame, 100 bytes spill stores, 112 bytes spill loads\n";

    #[test]
    fn each_kernel_has_its_own_registers_and_spills() {
        let report = Report::parse(REPORT);
        let k = &report.kernels["k"];
        assert_eq!((k.registers, k.millis), (64, 17.5));
        assert_eq!(k.spills["k"], 8);
        assert_eq!(
            k.spills["fmt"], 112,
            "a function's spills in the kernel it was assembled in"
        );
        let j = &report.kernels["j"];
        assert_eq!((j.registers, j.spills["fmt"]), (255, 100));
        assert!(
            spills_more(j, k) && !spills_more(k, j),
            "fewer spills are no spills"
        );
        assert_eq!(
            Report::parse(&report.to_text()),
            report,
            "the cache's text reads back"
        );
    }

    fn nowhere(start: &Path) -> Places<'_> {
        Places {
            ptxas: None,
            path: Some(OsString::new()),
            cuda_home: None,
            virtual_env: None,
            start,
        }
    }

    #[test]
    fn a_venv_ptxas_is_found_above_the_crate() {
        let root = std::env::temp_dir().join(format!("taskweave-venv-{}", std::process::id()));
        let bin = root.join(".venv/lib/python3.12").join(PIP_PTXAS);
        std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        let crate_dir = root.join("a/b");
        std::fs::create_dir_all(&crate_dir).unwrap();
        if Path::new("/usr/local/cuda/bin/ptxas").is_file() {
            eprintln!("a CUDA toolkit is installed, and comes first: skipped");
            return;
        }
        assert_eq!(search(&nowhere(&crate_dir)), Ok(bin.clone()));
        // The variable wins, and `0` turns assembly off.
        let mut places = nowhere(&crate_dir);
        places.ptxas = Some("/opt/ptxas".into());
        assert_eq!(search(&places), Ok(PathBuf::from("/opt/ptxas")));
        places.ptxas = Some("0".into());
        assert!(search(&places).unwrap_err().contains("turns assembly off"));
        // Nowhere else: the error says where to put one.
        let _ = std::fs::remove_dir_all(&root);
        assert!(
            search(&nowhere(&crate_dir))
                .unwrap_err()
                .contains("pip install nvidia-cuda-nvcc")
        );
    }

    /// The builder finds the `ptxas` that `scripts/setup.sh` installs (which `scripts/test.sh`
    /// runs first) from the examples' kernels crate, with nothing on `PATH`: a user who ran the
    /// README's set-up gets cubins without setting anything.
    #[test]
    fn the_builder_finds_the_ptxas_that_setup_installs() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let installed = pip_ptxas(&repo.join(".venv"));
        if installed.is_empty() {
            assert_eq!(
                std::env::var("TASKWEAVE_SKIP_PTXAS").as_deref(),
                Ok("1"),
                "no ptxas in .venv: run scripts/setup.sh, or set TASKWEAVE_SKIP_PTXAS=1 to skip this test"
            );
            return;
        }
        if Path::new("/usr/local/cuda/bin/ptxas").is_file() {
            eprintln!("a CUDA toolkit is installed, and comes first: skipped");
            return;
        }
        let found = search(&nowhere(&repo.join("examples/kernels"))).unwrap();
        assert_eq!(found, installed[0]);
        assert!(
            Ptxas::new(found)
                .unwrap()
                .short_version()
                .contains("cuda_13")
        );
    }
}
