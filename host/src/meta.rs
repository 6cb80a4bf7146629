//! What the `task_region!` macro knows about a region at compile time ([`RegionMeta`]), and its
//! crate's device code ([`Code`]).

use std::panic::Location;

use taskweave_device::sched::Dispatch;

use crate::inspect::Arg;
/// What the macro knows about a region at compile time.
#[derive(Clone, Copy)]
pub struct RegionMeta {
    /// The region function's name.
    pub name: &'static str,
    /// The name of its GPU kernel.
    pub kernel: &'static str,
    /// The PTX of its crate, when the crate has a device build.
    pub ptx: Option<&'static str>,
    /// The cubin assembled from that PTX at build time; empty when the build had no `ptxas`.
    pub cubin: &'static [u8],
    /// Its task functions, by kind.
    pub kinds: &'static [&'static str],
    /// How each kind's argument words print in errors (`#[task]`'s `ARGS`), by kind.
    pub args: &'static [&'static [Arg]],
    /// Its table from kind to body.
    pub dispatch: &'static dyn Dispatch,
    /// Where the region was called.
    pub location: &'static Location<'static>,
}

impl RegionMeta {
    /// Its crate's device code, when the crate has a device build.
    pub fn code(&self) -> Option<Code> {
        self.ptx.map(|ptx| Code {
            ptx,
            cubin: self.cubin,
        })
    }

    /// Whether `other` is the same region function: the same name, kernel and task kinds (where
    /// it was called does not matter).
    pub(crate) fn same_region(&self, other: &RegionMeta) -> bool {
        self.name == other.name && self.kernel == other.kernel && self.kinds == other.kinds
    }
}

impl std::fmt::Debug for RegionMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegionMeta")
            .field("name", &self.name)
            .field("kernel", &self.kernel)
            .field("kinds", &self.kinds)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// A kernels crate's device code: its PTX, and the cubin the builder assembled from it (empty
/// without a `ptxas` at build time). A bare `&'static str` is PTX alone.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    /// The PTX; its address also names the module once loaded.
    pub ptx: &'static str,
    /// The cubin, for the PTX's own target.
    pub cubin: &'static [u8],
}

impl From<&'static str> for Code {
    fn from(ptx: &'static str) -> Self {
        Self { ptx, cubin: &[] }
    }
}
