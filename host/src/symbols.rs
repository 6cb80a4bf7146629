//! The names of a region's kernels, as the host looks them up in its crate's PTX.
//!
//! The macro names a region's persistent kernel (`RegionMeta::kernel`) and emits beside it its
//! one-task and grid-barrier kernels, each also without the checked task bodies; the builder adds
//! an uncapped-register twin of some. Every name comes from `taskweave_names`, the one crate that
//! spells them for the macros, the builder and the host; this module derives the host's from the
//! region's kernel name, and nowhere else does.

use taskweave_names::{Entry, Kernel};

/// The kernel of entry `entry` of the region whose persistent kernel is `kernel`: `kernel` itself
/// when it is not a region kernel's name.
fn sibling(kernel: &str, entry: Entry) -> String {
    Kernel::parse(kernel).map_or_else(|| kernel.to_owned(), |k| k.at(entry).to_string())
}

/// The one-task kernel of the region whose persistent kernel is `kernel`.
pub(crate) fn listed(kernel: &str) -> String {
    sibling(kernel, Entry::Listed)
}

/// The grid-barrier kernel of the region whose persistent kernel is `kernel`.
pub(crate) fn levels(kernel: &str) -> String {
    sibling(kernel, Entry::Levels)
}

/// Kernel `name` without the checked task bodies, when `name` is a region kernel's.
pub(crate) fn unchecked(name: &str) -> Option<String> {
    Kernel::parse(name).map(|k| k.unchecked().to_string())
}

/// Kernel `name`'s uncapped-register twin, when `name` is a region kernel's.
pub(crate) fn uncapped(name: &str) -> Option<String> {
    Kernel::parse(name).map(|k| k.uncapped().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_region_kernel() {
        let kernel = "taskweave_region_lu_0badf00d";
        assert_eq!(listed(kernel), "taskweave_listed_lu_0badf00d");
        assert_eq!(levels(kernel), "taskweave_levels_lu_0badf00d");
        assert_eq!(
            unchecked(&listed(kernel)).as_deref(),
            Some("taskweave_listed_lu_0badf00d__unchecked")
        );
        assert_eq!(
            unchecked(kernel).and_then(|k| uncapped(&k)).as_deref(),
            Some("taskweave_region_lu_0badf00d__unchecked__uncapped")
        );
        assert_eq!(unchecked("selfcheck_atomics"), None);
        assert_eq!(listed("selfcheck_atomics"), "selfcheck_atomics");
    }
}
