//! Performance-tuning directives that Rust cannot express, added to the PTX text.

/// Kernels whose register use is capped: the scheduler's entry points, which `task_region!` names.
const CAPPED_PREFIXES: &[&str] = &[
    "taskweave_region_",
    "taskweave_levels_",
    "taskweave_listed_",
];

/// Adds `.maxnreg registers` to every capped kernel in `ptx` that has no register directive yet.
pub(crate) fn cap_registers(ptx: &str, registers: u32) -> String {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut pending = false;
    for line in ptx.lines() {
        let trimmed = line.trim_start();
        if let Some(name) = trimmed
            .strip_prefix(".visible .entry ")
            .or_else(|| trimmed.strip_prefix(".entry "))
        {
            pending = CAPPED_PREFIXES.iter().any(|p| name.starts_with(p));
        }
        if pending && trimmed.starts_with(".maxnreg") {
            pending = false;
        }
        if pending && trimmed.starts_with('{') {
            out.push_str(&format!(".maxnreg {registers}\n"));
            pending = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::cap_registers;

    #[test]
    fn only_scheduler_kernels_are_capped() {
        let ptx = ".visible .entry taskweave_region_lu(\n\t.param .u64 p\n)\n{\n\tret;\n}\n\
                   .visible .entry selfcheck_x(\n)\n{\n\tret;\n}\n";
        let out = cap_registers(ptx, 96);
        assert_eq!(out.matches(".maxnreg 96").count(), 1);
        let at = out.find(".maxnreg 96").unwrap();
        assert!(
            at > out.find("taskweave_region_lu").unwrap() && at < out.find("selfcheck_x").unwrap()
        );
        assert_eq!(cap_registers(&out, 96), out, "a second pass adds nothing");
    }
}
