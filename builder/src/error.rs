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
    /// The toolchain of the device build is not installed.
    #[error(
        "the device build compiles with the Rust toolchain `{toolchain}`, which is not installed: run `{}`",
        crate::toolchain::install_command(toolchain)
    )]
    MissingToolchain {
        /// The toolchain ([`PINNED`](crate::toolchain::PINNED), or `TASKWEAVE_TOOLCHAIN`).
        toolchain: String,
    },
    /// The toolchain of the device build lacks a component: `rust-src` (for `-Zbuild-std`) or
    /// `llvm-bitcode-linker` (which writes the PTX).
    #[error(
        "the Rust toolchain `{toolchain}` of the device build lacks `{component}`: run `{}`",
        crate::toolchain::install_command(toolchain)
    )]
    MissingComponent {
        /// The missing component.
        component: &'static str,
        /// The toolchain.
        toolchain: String,
    },
    /// The toolchain of the device build is not a nightly, so `-Zbuild-std` is refused. Only
    /// without rustup, where the builder cannot pick the toolchain itself.
    #[error(
        "the device build needs a nightly Rust toolchain (found `{found}`); without rustup the builder uses the active toolchain, so build with `{}` active",
        crate::toolchain::PINNED
    )]
    NotNightly {
        /// `rustc --version` of the toolchain.
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
        "the device build of `{}` produced no .ptx: is it a library crate (`src/lib.rs`)?",
        krate.display()
    )]
    NoPtx {
        /// The kernels crate.
        krate: PathBuf,
    },
    /// `TASKWEAVE_REGIONS` keeps none of the crate's kernels.
    #[error(
        "TASKWEAVE_REGIONS=`{patterns}` names no region of this crate (a name is a region's whole name, or a prefix ending in `*`); its regions are: {regions}"
    )]
    NoRegionKept {
        /// The variable's value.
        patterns: String,
        /// The crate's regions, comma-separated.
        regions: String,
    },
    /// `TASKWEAVE_TARGET_CPU` (or `Builder::target_cpu`) is not a list of architectures.
    #[error("TASKWEAVE_TARGET_CPU: {why}")]
    Target {
        /// What is wrong with it.
        why: String,
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
