//! The Rust toolchain of the device build, found and checked before it runs.
//!
//! The device build needs a nightly (`-Zbuild-std`, `-Zcrate-attr`, the `ptx-kernel` ABI) with
//! `rust-src` and `llvm-bitcode-linker`. The kernels crate itself need not be built with it: the
//! builder runs the nested cargo of the nightly taskweave is tested with ([`PINNED`], or
//! `TASKWEAVE_TOOLCHAIN`) through rustup, so a crate on stable needs no `rust-toolchain.toml`.
//! Without rustup the active toolchain is used, and must be a nightly.

use std::path::PathBuf;
use std::process::Command;

use taskweave_names::env;

use crate::Error;

/// The nightly the device build uses unless `TASKWEAVE_TOOLCHAIN` names another: the one this
/// repository pins in `rust-toolchain.toml`.
pub const PINNED: &str = "nightly-2026-10-30";

/// The components the device build needs beyond a minimal toolchain.
pub const COMPONENTS: &[&str] = &["rust-src", "llvm-tools", "llvm-bitcode-linker"];

/// A toolchain that can build for the device.
pub(crate) struct Toolchain {
    /// Its rustup name, when rustup chose it; the nested cargo gets it as `RUSTUP_TOOLCHAIN`.
    pub name: Option<String>,
    pub cargo: PathBuf,
    pub rustc: PathBuf,
    pub sysroot: PathBuf,
}

impl Toolchain {
    /// The toolchain to build with, checked: installed, a nightly, with its components.
    pub(crate) fn find() -> Result<Self, Error> {
        let wanted = std::env::var(env::TOOLCHAIN).unwrap_or_else(|_| PINNED.to_owned());
        let toolchain = match rustup_which(&wanted, "rustc")? {
            Some(rustc) => Self {
                cargo: rustup_which(&wanted, "cargo")?.unwrap_or_else(|| "cargo".into()),
                rustc,
                name: Some(wanted),
                sysroot: PathBuf::new(),
            },
            None => Self {
                cargo: std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from),
                rustc: std::env::var_os("RUSTC").map_or_else(|| "rustc".into(), PathBuf::from),
                name: None,
                sysroot: PathBuf::new(),
            },
        };
        toolchain.check()
    }

    fn check(mut self) -> Result<Self, Error> {
        let version = self.rustc_output("--version")?;
        if !version.contains("nightly") {
            return Err(Error::NotNightly { found: version });
        }
        self.sysroot = PathBuf::from(self.rustc_output("--print=sysroot")?);
        let toolchain = self.name.clone().unwrap_or_else(|| version.clone());
        if !self
            .sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .is_file()
        {
            return Err(Error::MissingComponent {
                component: "rust-src",
                toolchain,
            });
        }
        let has_linker = std::fs::read_dir(self.sysroot.join("lib/rustlib"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|entry| {
                let bin = entry.path().join("bin");
                bin.join("llvm-bitcode-linker").is_file()
                    || bin.join("self-contained/llvm-bitcode-linker").is_file()
            });
        if !has_linker {
            return Err(Error::MissingComponent {
                component: "llvm-bitcode-linker",
                toolchain,
            });
        }
        Ok(self)
    }

    fn rustc_output(&self, arg: &str) -> Result<String, Error> {
        let mut cmd = Command::new(&self.rustc);
        cmd.arg(arg);
        self.apply(&mut cmd);
        let out = cmd.output().map_err(|source| Error::Spawn {
            program: self.rustc.display().to_string(),
            source,
        })?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    /// Makes `cmd` and the processes it starts use this toolchain.
    pub(crate) fn apply(&self, cmd: &mut Command) {
        cmd.env("RUSTC", &self.rustc);
        match &self.name {
            Some(name) => cmd.env("RUSTUP_TOOLCHAIN", name),
            None => cmd.env_remove("RUSTUP_TOOLCHAIN"),
        };
    }
}

/// `rustup which --toolchain <toolchain> <tool>`: `Ok(None)` when there is no rustup, an error
/// naming the install command when the toolchain is not installed.
fn rustup_which(toolchain: &str, tool: &str) -> Result<Option<PathBuf>, Error> {
    let out = match Command::new("rustup")
        .args(["which", "--toolchain", toolchain, tool])
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Spawn {
                program: "rustup".to_owned(),
                source,
            });
        }
    };
    if !out.status.success() {
        return Err(Error::MissingToolchain {
            toolchain: toolchain.to_owned(),
        });
    }
    Ok(Some(PathBuf::from(
        String::from_utf8_lossy(&out.stdout).trim(),
    )))
}

/// The command that installs `toolchain` with what the device build needs.
pub(crate) fn install_command(toolchain: &str) -> String {
    format!(
        "rustup toolchain install {toolchain} --profile minimal --component {}",
        COMPONENTS.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builder's default is what this repository pins, so that the device build of our own
    /// crates and of a user's crate compile with the same nightly.
    #[test]
    fn the_default_toolchain_is_the_pinned_one() {
        let pin = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rust-toolchain.toml"),
        )
        .unwrap();
        assert!(
            pin.contains(&format!("channel = \"{PINNED}\"")),
            "rust-toolchain.toml pins another toolchain than PINNED: {pin}"
        );
        for component in COMPONENTS {
            assert!(pin.contains(&format!("\"{component}\"")), "{component}");
        }
    }

    #[test]
    fn a_toolchain_that_is_not_installed_names_the_install_command() {
        if Command::new("rustup").arg("--version").output().is_err() {
            eprintln!("no rustup: skipped");
            return;
        }
        let Err(error) = rustup_which("nightly-1999-01-01", "rustc") else {
            panic!("a toolchain from 1999 is installed");
        };
        let message = error.to_string();
        assert!(
            message.contains(
                "rustup toolchain install nightly-1999-01-01 --profile minimal --component rust-src,llvm-tools,llvm-bitcode-linker"
            ),
            "{message}"
        );
    }
}
