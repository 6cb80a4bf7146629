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
    /// Its crate's device code, when the crate has a device build.
    pub code: Option<Code>,
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
        self.code
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

/// A kernels crate's device code, as the host loads it.
#[derive(Clone, Copy, Debug)]
pub enum Code {
    /// The crate's kernel bundle ([`taskweave_names::bundle`]), which
    /// [`include_kernels!`](../taskweave/macro.include_kernels.html) embeds: every region's
    /// cubins and PTX, loaded a region at a time.
    Bundle(&'static [u8]),
    /// One PTX module, which the driver compiles whole when it is first loaded.
    Ptx(&'static str),
}

impl Code {
    /// What names the code once loaded: the address of its bytes.
    pub(crate) fn address(&self) -> usize {
        match self {
            Code::Bundle(bytes) => bytes.as_ptr() as usize,
            Code::Ptx(text) => text.as_ptr() as usize,
        }
    }
}

impl From<&'static str> for Code {
    fn from(ptx: &'static str) -> Self {
        Self::Ptx(ptx)
    }
}
