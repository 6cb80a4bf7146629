//! Ahead-of-time assembly of the PTX into a cubin, when a `ptxas` is at hand.
//!
//! The driver compiles PTX for the GPU when a module is loaded, and a kernels crate's PTX (every
//! region's kernels and their variants) takes it tens of seconds on a cold cache. A cubin
//! assembled at build time loads at once on a GPU of its architecture; the host falls back to
//! the PTX on any other, and when the build had no `ptxas` the cubin is empty.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The `ptxas` to assemble with: `TASKWEAVE_PTXAS` (a path; empty or `0` turns assembly off),
/// else the first `ptxas` on `PATH`, else `$CUDA_HOME/bin/ptxas` or `/usr/local/cuda/bin/ptxas`.
pub(crate) fn find_ptxas() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("TASKWEAVE_PTXAS") {
        return (!path.is_empty() && path != "0").then(|| PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("ptxas"));
    let cuda = std::env::var_os("CUDA_HOME")
        .map(|home| PathBuf::from(home).join("bin/ptxas"))
        .into_iter()
        .chain([PathBuf::from("/usr/local/cuda/bin/ptxas")]);
    on_path.chain(cuda).find(|p| p.is_file())
}

/// [`assemble`], unless `cache` (a folder the builds of a workspace share) holds the cubin of the
/// same PTX text for `arch` by the same `ptxas` already: then that one is copied. A kernels
/// crate's PTX takes `ptxas` minutes, and a change that leaves the device code as it was (host
/// code, tests, the macros' host half) reruns the build script all the same.
///
/// The `ptxas` is part of the key (its `--version`, else its path): keyed on the PTX alone, a
/// build with another `ptxas` (13.5 instead of 13.0, to get around a miscompile of 13.0's,
/// bench/results/potrf-zeros-h200/) copied the old one's cubin and ran the same SASS.
pub(crate) fn assemble_cached(
    ptxas: &Path,
    arch: &str,
    ptx: &Path,
    cubin: &Path,
    cache: &Path,
) -> Result<(), String> {
    let text = std::fs::read(ptx).map_err(|e| format!("could not read {}: {e}", ptx.display()))?;
    let kept = cache.join(format!("{:016x}.cubin", key(&identity(ptxas), arch, &text)));
    if std::fs::copy(&kept, cubin).is_ok_and(|bytes| bytes > 0) {
        return Ok(());
    }
    assemble(ptxas, arch, ptx, cubin)?;
    // A cache that cannot be written only costs the next build its assembly. The copy goes in
    // under a name of its own and is renamed, so that a build beside this one never copies half
    // of it.
    let partial = cache.join(format!("{}.partial", std::process::id()));
    if std::fs::create_dir_all(cache).is_ok() && std::fs::copy(cubin, &partial).is_ok() {
        let _ = std::fs::rename(&partial, &kept);
        prune(cache, KEPT_CUBINS);
    }
    Ok(())
}

/// Cubins the cache keeps, the most recently written: one for each build profile's PTX, and a
/// few earlier versions to go back to (the examples' cubin is about 80 MB).
const KEPT_CUBINS: usize = 4;

/// Removes all but the `keep` most recently written cubins of `cache`.
fn prune(cache: &Path, keep: usize) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    let mut cubins: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "cubin"))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    cubins.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (_, old) in cubins.into_iter().skip(keep) {
        let _ = std::fs::remove_file(old);
    }
}

/// What names `ptxas`'s version: what it prints for `--version`, or its path when it does not
/// run (it then assembles nothing, and only a cubin it once assembled can be copied).
fn identity(ptxas: &Path) -> Vec<u8> {
    match Command::new(ptxas).arg("--version").output() {
        Ok(out) if out.status.success() => out.stdout,
        _ => ptxas.as_os_str().as_encoded_bytes().to_vec(),
    }
}

/// The cache key of PTX `text` assembled for `arch` by the `ptxas` of `identity`.
fn key(identity: &[u8], arch: &str, text: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    identity.hash(&mut hasher);
    arch.hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish()
}

/// Assembles `ptx` for `arch` into `cubin` with `ptxas`. On failure the cubin is left empty and
/// the reason returned, for a build warning: the PTX still works, through the driver.
pub(crate) fn assemble(ptxas: &Path, arch: &str, ptx: &Path, cubin: &Path) -> Result<(), String> {
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-O3")
        // Its optimizations on every core: the examples' module took one core 15–40 minutes.
        .arg("--split-compile=0")
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    if output.status.success() {
        return Ok(());
    }
    let _ = std::fs::write(cubin, []);
    Err(format!(
        "{} failed ({}): {}",
        ptxas.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `ptxas` that `scripts/setup.sh` installs in the workspace's `.venv`, if it is there.
    fn venv_ptxas() -> Option<PathBuf> {
        let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
        std::fs::read_dir(lib)
            .ok()?
            .filter_map(Result::ok)
            .map(|python| python.path().join("site-packages/nvidia/cu13/bin/ptxas"))
            .find(|p| p.is_file())
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("taskweave-cubin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    const PTX: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\
                       .visible .entry k(.param .u64 p) {\n  ret;\n}\n";

    #[test]
    fn a_ptxas_that_fails_leaves_an_empty_cubin_and_says_why() {
        let (ptx, cubin) = (scratch("bad.ptx"), scratch("bad.cubin"));
        std::fs::write(&ptx, "not PTX at all").unwrap();
        std::fs::write(&cubin, b"stale").unwrap();
        let ptxas = venv_ptxas().unwrap_or_else(|| PathBuf::from("false"));
        let why = assemble(&ptxas, "sm_90", &ptx, &cubin).unwrap_err();
        assert!(why.contains("failed"), "{why}");
        assert_eq!(
            std::fs::read(&cubin).unwrap(),
            b"",
            "a stale cubin must not survive"
        );
    }

    #[test]
    fn a_missing_ptxas_is_an_error_naming_it() {
        let (ptx, cubin) = (scratch("k.ptx"), scratch("k.cubin"));
        std::fs::write(&ptx, PTX).unwrap();
        let why = assemble(Path::new("/nonexistent/ptxas"), "sm_90", &ptx, &cubin).unwrap_err();
        assert!(why.contains("/nonexistent/ptxas"), "{why}");
    }

    /// The cubin is an ELF image. Needs the `ptxas` that `scripts/setup.sh` installs (which
    /// `scripts/test.sh` runs first): without it the test fails, unless `TASKWEAVE_SKIP_PTXAS=1`
    /// says to skip what needs it.
    #[test]
    fn ptxas_assembles_ptx_into_an_elf_cubin() {
        let Some(ptxas) = venv_ptxas() else {
            assert_eq!(
                std::env::var("TASKWEAVE_SKIP_PTXAS").as_deref(),
                Ok("1"),
                "no ptxas in .venv: run scripts/setup.sh, or set TASKWEAVE_SKIP_PTXAS=1 to skip this test"
            );
            eprintln!("TASKWEAVE_SKIP_PTXAS=1 and no .venv ptxas: skipped");
            return;
        };
        let (ptx, cubin) = (scratch("ok.ptx"), scratch("ok.cubin"));
        std::fs::write(&ptx, PTX).unwrap();
        assemble(&ptxas, "sm_90", &ptx, &cubin).unwrap();
        assert_eq!(&std::fs::read(&cubin).unwrap()[..4], b"\x7fELF");
    }

    /// The second assembly of the same PTX text by the same `ptxas` copies the first's cubin;
    /// other text, another architecture or another `ptxas` is assembled.
    #[test]
    fn the_same_ptx_is_assembled_once_per_ptxas() {
        let Some(ptxas) = venv_ptxas() else {
            assert_eq!(std::env::var("TASKWEAVE_SKIP_PTXAS").as_deref(), Ok("1"));
            return;
        };
        let cache = scratch("cubins");
        let _ = std::fs::remove_dir_all(&cache);
        let (ptx, first, second) = (scratch("c.ptx"), scratch("c1.cubin"), scratch("c2.cubin"));
        std::fs::write(&ptx, PTX).unwrap();
        assemble_cached(&ptxas, "sm_90", &ptx, &first, &cache).unwrap();
        assert_eq!(&std::fs::read(&first).unwrap()[..4], b"\x7fELF");
        // Mark the cached cubin: a copy of it carries the mark, an assembly does not.
        let kept: Vec<PathBuf> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        std::fs::write(&kept[0], b"cached").unwrap();
        assemble_cached(&ptxas, "sm_90", &ptx, &second, &cache).unwrap();
        assert_eq!(std::fs::read(&second).unwrap(), b"cached", "from the cache");
        // Another architecture: sm_90 PTX does not assemble for sm_80, and is not copied.
        assert!(assemble_cached(&ptxas, "sm_80", &ptx, &second, &cache).is_err());
        // Another ptxas, one that names another version and assembles nothing.
        let other = scratch("other-ptxas");
        std::fs::write(
            &other,
            "#!/bin/sh\n[ \"$1\" = --version ] && echo 'Build cuda_0.0' && exit 0\nexit 1\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(assemble_cached(&other, "sm_90", &ptx, &second, &cache).is_err());
        // Other text.
        std::fs::write(&ptx, PTX.replace("ret;", "ret;\n  ret;")).unwrap();
        assemble_cached(&ptxas, "sm_90", &ptx, &second, &cache).unwrap();
        assert_eq!(&std::fs::read(&second).unwrap()[..4], b"\x7fELF");
    }

    #[test]
    fn the_cache_keeps_the_newest_cubins() {
        let cache = scratch("pruned");
        let _ = std::fs::remove_dir_all(&cache);
        std::fs::create_dir_all(&cache).unwrap();
        for k in 0..6 {
            std::fs::write(cache.join(format!("{k}.cubin")), [k as u8]).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::write(cache.join("other.txt"), b"kept").unwrap();
        prune(&cache, 2);
        let mut left: Vec<String> = std::fs::read_dir(&cache)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["4.cubin", "5.cubin", "other.txt"]);
    }
}
