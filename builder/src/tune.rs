//! What the builder reads from the PTX text: the regions whose kernels it holds. Kernels are
//! recognised by their names ([`Kernel::parse`]).

use taskweave_names::{Entry, Kernel};

/// The name of the kernel a PTX `.entry` line declares.
fn entry_name(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let name = trimmed
        .strip_prefix(".visible .entry ")
        .or_else(|| trimmed.strip_prefix(".entry "))?;
    Some(name.split('(').next().unwrap_or(name))
}

/// The stems of the regions whose kernels `ptx` holds.
pub(crate) fn regions(ptx: &str) -> impl Iterator<Item = &str> {
    ptx.lines()
        .filter_map(entry_name)
        .filter_map(Kernel::parse)
        .filter(|k| k.entry == Entry::Persistent && !k.unchecked && !k.uncapped)
        .map(|k| k.stem)
}

#[cfg(test)]
mod tests {
    use super::regions;

    #[test]
    fn regions_are_read_from_their_persistent_kernels() {
        let ptx = ".visible .entry taskweave_region_b_2(\n)\n.visible .entry taskweave_region_a_1__unchecked(\n)\n\
                   .visible .entry taskweave_listed_a_1(\n)\n.visible .entry taskweave_region_a_1(\n)\n\
                   .visible .entry selfcheck_x(\n)\n";
        assert_eq!(regions(ptx).collect::<Vec<_>>(), ["b_2", "a_1"]);
        assert_eq!(regions(ptx).min(), Some("a_1"));
    }
}
