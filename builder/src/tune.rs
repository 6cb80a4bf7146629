//! Performance-tuning directives that Rust cannot express, added to the PTX text, and what the
//! builder reads from it.
//!
//! Kernels are recognised by their names ([`Kernel::parse`]): every kernel `task_region!` emits is
//! capped, and those of [twinned](taskweave_names::Entry::twinned) entries get an uncapped twin.

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

/// Appends to `ptx` an uncapped twin of every twinned kernel: the same body under the name
/// `<kernel>__uncapped`. The cap trades registers (spills in the task bodies) for resident
/// workers; a run that needs no more workers per SM than the uncapped kernel allows takes the twin
/// (measured on the H100: 46 us per DT-WARP tile capped at 128 registers, 39 us uncapped).
///
/// Labels and registers are local to a PTX function, so the copy needs no renaming inside.
pub(crate) fn add_uncapped_twins(ptx: &str) -> String {
    let mut twins = String::new();
    let mut copying: Option<String> = None;
    let mut depth = 0i32;
    let mut seen_body = false;
    for line in ptx.lines() {
        if copying.is_none() {
            if let Some(name) = entry_name(line)
                && let Some(kernel) = Kernel::parse(name)
                && kernel.entry.twinned()
                && !kernel.uncapped
                && !ptx.contains(&format!("{}(", kernel.uncapped()))
            {
                let renamed = line.replacen(name, &kernel.uncapped().to_string(), 1);
                copying = Some(renamed + "\n");
                depth = 0;
                seen_body = false;
                continue;
            }
            continue;
        }
        let copy = copying.as_mut().expect("copying");
        copy.push_str(line);
        copy.push('\n');
        // PTX has no string literals; inline assembly braces come in pairs.
        let code = line.split("//").next().unwrap_or("");
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        seen_body |= code.contains('{');
        if seen_body && depth == 0 {
            twins.push_str(&copying.take().expect("copying"));
        }
    }
    if twins.is_empty() {
        return ptx.to_owned();
    }
    let mut out = String::with_capacity(ptx.len() + twins.len() + 1);
    out.push_str(ptx);
    if !ptx.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&twins);
    out
}

/// Adds `.maxnreg registers(kernel)` to every capped kernel in `ptx` that has no register
/// directive yet.
pub(crate) fn cap_registers(ptx: &str, registers: impl Fn(&str) -> u32) -> String {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut pending = None;
    for line in ptx.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = entry_name(line) {
            pending = Kernel::parse(name)
                .is_some_and(|k| !k.uncapped)
                .then(|| registers(name));
        }
        if pending.is_some() && trimmed.starts_with(".maxnreg") {
            pending = None;
        }
        if let Some(cap) = pending
            && trimmed.starts_with('{')
        {
            out.push_str(&format!(".maxnreg {cap}\n"));
            pending = None;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{add_uncapped_twins, cap_registers, regions};

    #[test]
    fn regions_are_read_from_their_persistent_kernels() {
        let ptx = ".visible .entry taskweave_region_b_2(\n)\n.visible .entry taskweave_region_a_1__unchecked(\n)\n\
                   .visible .entry taskweave_listed_a_1(\n)\n.visible .entry taskweave_region_a_1(\n)\n\
                   .visible .entry selfcheck_x(\n)\n";
        assert_eq!(regions(ptx).collect::<Vec<_>>(), ["b_2", "a_1"]);
        assert_eq!(regions(ptx).min(), Some("a_1"));
    }

    #[test]
    fn only_scheduler_kernels_are_capped() {
        let ptx = ".visible .entry taskweave_region_lu(\n\t.param .u64 p\n)\n{\n\tret;\n}\n\
                   .visible .entry selfcheck_x(\n)\n{\n\tret;\n}\n";
        let out = cap_registers(ptx, |_| 96);
        assert_eq!(out.matches(".maxnreg 96").count(), 1);
        let at = out.find(".maxnreg 96").unwrap();
        assert!(
            at > out.find("taskweave_region_lu").unwrap() && at < out.find("selfcheck_x").unwrap()
        );
        assert_eq!(
            cap_registers(&out, |_| 96),
            out,
            "a second pass adds nothing"
        );
    }

    #[test]
    fn twins_copy_whole_bodies_and_stay_uncapped() {
        let ptx = "// header\n.visible .entry taskweave_region_lu(\n\t.param .u64 p\n)\n{\n\t{ // asm\n\tmov.u32 %r1, 0;\n\t}\n$L__BB0_1:\n\tret;\n}\n\
                   .visible .entry selfcheck_x(\n)\n{\n\tret;\n}\n";
        let out = add_uncapped_twins(ptx);
        assert!(out.starts_with(ptx));
        let twin = &out[ptx.len()..];
        assert!(twin.starts_with(".visible .entry taskweave_region_lu__uncapped(\n"));
        assert!(twin.ends_with("$L__BB0_1:\n\tret;\n}\n"));
        assert!(!twin.contains("selfcheck"));
        assert_eq!(add_uncapped_twins(&out), out, "twins get no twins");
        let capped = cap_registers(&out, |_| 96);
        assert_eq!(
            capped.matches(".maxnreg 96").count(),
            1,
            "the twin stays uncapped"
        );
    }
}
