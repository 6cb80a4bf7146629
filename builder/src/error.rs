use std::path::PathBuf;

/// Why the device build failed, worded so that the fix is in the message.
#[derive(thiserror::Error)]
pub enum Error {
    /// A variable cargo sets for build scripts is missing.
    #[error("`{var}` is not set: call `taskweave_build::Builder::build` from a build script")]
    NotInBuildScript {
        /// The missing variable.
        var: &'static str,
    },
    /// The active toolchain lacks the `rust-src` component that `-Zbuild-std` needs.
    #[error(
        "the Rust sources (`rust-src`) are missing from {sysroot}: run `rustup toolchain install` in the repository, which installs what rust-toolchain.toml names"
    )]
    MissingRustSrc {
        /// The toolchain's sysroot.
        sysroot: PathBuf,
    },
    /// The active toolchain lacks the linker that writes PTX.
    #[error(
        "`llvm-bitcode-linker` is missing from {sysroot}: run `rustup toolchain install` in the repository, which installs what rust-toolchain.toml names"
    )]
    MissingLinker {
        /// The toolchain's sysroot.
        sysroot: PathBuf,
    },
    /// The toolchain is not a nightly, so `-Zbuild-std` is refused.
    #[error(
        "the device build needs the nightly pinned in rust-toolchain.toml (found `{found}`): run `rustup toolchain install` in the repository and build from there"
    )]
    NotNightly {
        /// `rustc --version` of the active toolchain.
        found: String,
    },
    /// The nested cargo could not be started.
    #[error("could not run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The device code did not compile.
    #[error("the device build of `{}` for nvptx64 failed:\n{stderr}", krate.display())]
    Compile {
        /// The kernels crate.
        krate: PathBuf,
        /// What the nested cargo printed.
        stderr: String,
    },
    /// The build succeeded but produced no `.ptx`.
    #[error(
        "the device build of `{}` produced no .ptx: the crate needs `crate-type = [\"cdylib\", \"rlib\"]` under [lib]",
        krate.display()
    )]
    NoPtx {
        /// The kernels crate.
        krate: PathBuf,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// Build scripts print a `main` error with `Debug`: make that the readable message.
impl std::fmt::Debug for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}
