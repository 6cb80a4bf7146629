//! The names of a region's kernels, as the host looks them up in its crate's PTX.
//!
//! The macro names a region's persistent kernel (`RegionMeta::kernel`, `taskweave_region_<r>`)
//! and emits beside it the one-task kernel (`taskweave_listed_<r>`) and the grid-barrier kernel
//! (`taskweave_levels_<r>`), each also without the checked task bodies (`<kernel>__unchecked`);
//! the builder adds an uncapped-register twin of some (`<kernel>__uncapped`). Every name the host
//! derives is built here, from the region's kernel name, so that the host has one place to follow
//! when the macros and the builder change how they name things.

/// The prefix of a region's persistent kernel.
const REGION: &str = "taskweave_region_";
/// The prefix of a region's one-task kernel.
const LISTED: &str = "taskweave_listed_";
/// The prefix of a region's grid-barrier kernel.
const LEVELS: &str = "taskweave_levels_";
/// The suffix of a kernel without the checked task bodies.
const UNCHECKED: &str = "__unchecked";
/// The suffix of a kernel's uncapped-register twin.
const UNCAPPED: &str = "__uncapped";

/// The part of a region's kernel name after the persistent kernel's prefix.
fn stem(kernel: &str) -> &str {
    kernel.strip_prefix(REGION).unwrap_or(kernel)
}

/// The one-task kernel of the region whose persistent kernel is `kernel`.
pub(crate) fn listed(kernel: &str) -> String {
    format!("{LISTED}{}", stem(kernel))
}

/// The grid-barrier kernel of the region whose persistent kernel is `kernel`.
pub(crate) fn levels(kernel: &str) -> String {
    format!("{LEVELS}{}", stem(kernel))
}

/// Kernel `name` without the checked task bodies.
pub(crate) fn unchecked(name: &str) -> String {
    format!("{name}{UNCHECKED}")
}

/// Kernel `name`'s uncapped-register twin.
pub(crate) fn uncapped(name: &str) -> String {
    format!("{name}{UNCAPPED}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_region_kernel() {
        let kernel = "taskweave_region_lu";
        assert_eq!(listed(kernel), "taskweave_listed_lu");
        assert_eq!(levels(kernel), "taskweave_levels_lu");
        assert_eq!(unchecked(&listed(kernel)), "taskweave_listed_lu__unchecked");
        assert_eq!(
            uncapped(&unchecked(kernel)),
            "taskweave_region_lu__unchecked__uncapped"
        );
    }
}
