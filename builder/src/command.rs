//! The nested cargo invocation and the reading of its output.

use std::path::{Path, PathBuf};
use std::process::Command;

use taskweave_names::TARGET;

use crate::Error;
use crate::toolchain::Toolchain;

/// Variables of the outer build that must not leak into the nested one: they would redirect its
/// output, wrap its compiler in clippy, or add host flags to a device build.
const SCRUBBED_VARS: &[&str] = &[
    "CARGO",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_BUILD_BUILD_DIR",
    "CARGO_LLVM_COV",
    "RUSTDOCFLAGS",
];

/// The nested target directory: `<outer target dir>/taskweave-device`, found from `OUT_DIR`.
///
/// The outer target directory is the outermost of directly nested ones that carry cargo's
/// `CACHEDIR.TAG`: `cargo miri` builds in `target/miri`, whose parent `target` is tagged too, and
/// both then share one device build (the same command on the same sources, so the second finds
/// it fresh) instead of compiling the kernels crate for the GPU twice.
pub(crate) fn nested_target_dir(out_dir: &Path) -> PathBuf {
    let tagged = |dir: &Path| dir.join("CACHEDIR.TAG").is_file();
    let Some(mut root) = out_dir.ancestors().find(|dir| tagged(dir)) else {
        return out_dir.join("device-target");
    };
    while let Some(parent) = root.parent().filter(|dir| tagged(dir)) {
        root = parent;
    }
    root.join("taskweave-device")
}

pub(crate) struct DeviceBuild<'a> {
    pub crate_dir: &'a Path,
    pub target_dir: &'a Path,
    pub target_cpu: &'a str,
}

pub(crate) struct Ptx {
    pub path: PathBuf,
    pub inputs: Vec<PathBuf>,
}

/// The crate attributes the device build adds to the kernels crate, so that its source needs
/// none: `no_std` (nvptx64 has no `std`) and the `ptx-kernel` ABI of the region kernels.
/// `-Zcrate-attr` reaches the kernels crate alone, not its dependencies or `core`.
pub(crate) const CRATE_ATTRS: &[&str] = &["no_std", "feature(abi_ptx)"];

impl DeviceBuild<'_> {
    pub(crate) fn run(&self) -> Result<Ptx, Error> {
        let toolchain = Toolchain::find()?;
        let manifest = self.crate_dir.join("Cargo.toml");
        let mut cmd = Command::new(&toolchain.cargo);
        // `cargo rustc` builds the library as a `cdylib` (which `llvm-bitcode-linker` links into
        // PTX) whatever the crate's `crate-type`, and passes what follows `--` to it alone.
        cmd.args([
            "rustc",
            "--release",
            "--lib",
            "--crate-type",
            "cdylib",
            "--target",
            TARGET,
            "-Zbuild-std=core",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(self.target_dir)
        .args(["--message-format=json-render-diagnostics"])
        .args(["--config", "profile.release.panic=\"abort\""])
        .args(["--config", "profile.release.lto=\"fat\""])
        .args(["--config", "profile.release.codegen-units=1"])
        .args(["--config", "profile.release.debug=false"])
        .arg("--");
        for attr in CRATE_ATTRS {
            cmd.arg(format!("-Zcrate-attr={attr}"));
        }
        // A crate that declares the attributes itself, as older kernels crates do, still builds.
        cmd.arg("-Aduplicate-features");
        for var in SCRUBBED_VARS {
            cmd.env_remove(var);
        }
        toolchain.apply(&mut cmd);
        // In the flags of every crate, `core` included, so that they agree on the target CPU.
        cmd.env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!("-Ctarget-cpu={}", self.target_cpu),
        );
        let output = cmd.output().map_err(|source| Error::Spawn {
            program: toolchain.cargo.display().to_string(),
            source,
        })?;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        if !output.status.success() {
            return Err(diagnose(&stderr, &toolchain, self.crate_dir));
        }
        let stdout = String::from_utf8_lossy(&output.stdout);
        let path = find_ptx(&stdout).ok_or_else(|| Error::NoPtx {
            krate: self.crate_dir.to_owned(),
        })?;
        let inputs = read_dep_info(&path.with_extension("d"), &toolchain.sysroot)?;
        Ok(Ptx { path, inputs })
    }
}

/// Turns a failed nested build into the most helpful error.
fn diagnose(stderr: &str, toolchain: &Toolchain, krate: &Path) -> Error {
    let name = || {
        toolchain
            .name
            .clone()
            .unwrap_or_else(|| toolchain.rustc.display().to_string())
    };
    if stderr.contains("rust-src") {
        Error::MissingComponent {
            component: "rust-src",
            toolchain: name(),
        }
    } else if stderr.contains("llvm-bitcode-linker") && stderr.contains("not found") {
        Error::MissingComponent {
            component: "llvm-bitcode-linker",
            toolchain: name(),
        }
    } else if stderr.contains("only accepted on the nightly")
        || stderr.contains("only available on the nightly")
    {
        Error::NotNightly {
            found: "a stable or beta toolchain".to_owned(),
        }
    } else {
        Error::Compile {
            krate: krate.to_owned(),
            stderr: stderr.to_owned(),
        }
    }
}

/// The `.ptx` among the artifacts cargo reported in its JSON messages.
fn find_ptx(json_lines: &str) -> Option<PathBuf> {
    json_lines
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|msg| msg["reason"] == "compiler-artifact")
        .flat_map(|msg| msg["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|f| f.as_str().map(PathBuf::from))
        .find(|p| p.extension().is_some_and(|e| e == "ptx"))
}

/// The source files listed in a Makefile-style dep-info file, minus the toolchain's own.
fn read_dep_info(path: &Path, sysroot: &Path) -> Result<Vec<PathBuf>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let Some(first) = text.lines().next() else {
        return Ok(Vec::new());
    };
    let deps = first.split_once(": ").map_or("", |(_, deps)| deps);
    let mut files = Vec::new();
    let mut current = String::new();
    let mut chars = deps.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            ' ' => files.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    files.push(current);
    Ok(files
        .into_iter()
        .filter(|f| !f.is_empty())
        .map(PathBuf::from)
        .filter(|f| !f.starts_with(sysroot))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn miri_and_the_plain_build_share_the_outer_target_dir() {
        let root = std::env::temp_dir().join(format!("taskweave-nested-{}", std::process::id()));
        let plain = root.join("target/debug/build/k-1/out");
        let miri = root.join("target/miri/x86_64-unknown-linux-gnu/debug/build/k-2/out");
        let lone = root.join("elsewhere/out");
        for dir in [&plain, &miri, &lone] {
            std::fs::create_dir_all(dir).unwrap();
        }
        for dir in ["target", "target/miri"] {
            std::fs::write(root.join(dir).join("CACHEDIR.TAG"), "Signature").unwrap();
        }
        let shared = root.join("target/taskweave-device");
        assert_eq!(nested_target_dir(&plain), shared);
        assert_eq!(nested_target_dir(&miri), shared);
        // No tagged ancestor at all: a directory of its own under OUT_DIR.
        assert_eq!(nested_target_dir(&lone), lone.join("device-target"));
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn dep_info_skips_the_sysroot_and_unescapes_spaces() {
        let dir = std::env::temp_dir().join(format!("taskweave-build-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.join("k.d");
        std::fs::write(
            &d,
            "/t/k.ptx: /src/a\\ b.rs /sys/lib/core.rs /src/c.rs\n\n/src/c.rs:\n",
        )
        .unwrap();
        let deps = read_dep_info(&d, Path::new("/sys")).unwrap();
        assert_eq!(
            deps,
            vec![PathBuf::from("/src/a b.rs"), PathBuf::from("/src/c.rs")]
        );
    }

    #[test]
    fn the_ptx_is_found_among_the_artifacts() {
        let json = r#"{"reason":"compiler-artifact","filenames":["/t/libk.rlib"]}
{"reason":"compiler-artifact","filenames":["/t/k.ptx","/t/libk.rlib"]}
{"reason":"build-finished","success":true}"#;
        assert_eq!(find_ptx(json), Some(PathBuf::from("/t/k.ptx")));
        assert_eq!(find_ptx(r#"{"reason":"build-finished"}"#), None);
    }

    #[test]
    fn failures_name_their_fix() {
        let toolchain = Toolchain {
            name: Some("nightly-2026-10-30".to_owned()),
            cargo: "cargo".into(),
            rustc: "rustc".into(),
            sysroot: "/sys".into(),
        };
        let k = Path::new("/k");
        let error = diagnose(
            "error: ... try: rustup component add rust-src",
            &toolchain,
            k,
        );
        assert!(
            matches!(
                error,
                Error::MissingComponent {
                    component: "rust-src",
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains(
                "run `rustup toolchain install nightly-2026-10-30 --profile minimal --component rust-src,llvm-tools,llvm-bitcode-linker`"
            ),
            "{error}"
        );
        assert!(matches!(
            diagnose("error[E0308]: mismatched types", &toolchain, k),
            Error::Compile { .. }
        ));
    }
}
