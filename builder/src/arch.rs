//! The GPU architectures a build targets: the ones asked for, else the GPUs of the machine, else
//! Hopper.

use std::process::Command;

/// The architecture built for when nothing says otherwise: Hopper (H100, H200).
pub const DEFAULT_TARGET_CPU: &str = "sm_90";

/// Where the targets of a build came from, for its log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// `TASKWEAVE_TARGET_CPU` or `Builder::target_cpu`.
    Asked,
    /// The GPUs `nvidia-smi` listed.
    Present,
    /// [`DEFAULT_TARGET_CPU`]: no GPU was found.
    Default,
}

/// The targets, ascending and each once: `asked` (a comma-separated list such as `sm_80,sm_90`)
/// when given, else the architectures of the GPUs present, else [`DEFAULT_TARGET_CPU`].
pub(crate) fn targets(asked: Option<&str>) -> Result<(Vec<String>, Source), String> {
    if let Some(asked) = asked.filter(|a| !a.trim().is_empty()) {
        return Ok((parse_list(asked)?, Source::Asked));
    }
    match present() {
        Some(found) if !found.is_empty() => Ok((found, Source::Present)),
        _ => Ok((vec![DEFAULT_TARGET_CPU.to_owned()], Source::Default)),
    }
}

/// `sm_80,sm_90` as a sorted list without repeats; an error naming the bad entry.
fn parse_list(list: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for target in list.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let number = target.strip_prefix("sm_").unwrap_or("");
        if number.len() < 2 || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "`{target}` is not a GPU architecture: write it as `sm_` and the compute capability, e.g. `sm_80` or `sm_90`"
            ));
        }
        out.push(target.to_owned());
    }
    if out.is_empty() {
        return Err("no architecture in the list".to_owned());
    }
    out.sort_by_key(|t| number(t));
    out.dedup();
    Ok(out)
}

/// The architecture's number: 90 for `sm_90`.
pub(crate) fn number(target: &str) -> u32 {
    target
        .strip_prefix("sm_")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The architectures of the GPUs `nvidia-smi` lists, or `None` without it.
fn present() -> Option<Vec<String>> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let list: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (major, minor) = line.trim().split_once('.')?;
            Some(format!("sm_{}{}", major.trim(), minor.trim()))
        })
        .collect();
    parse_list(&list.join(",")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_sorted_and_checked() {
        assert_eq!(
            parse_list("sm_90, sm_80,sm_90").unwrap(),
            ["sm_80", "sm_90"]
        );
        assert_eq!(parse_list("sm_100,sm_90").unwrap(), ["sm_90", "sm_100"]);
        let bad = parse_list("sm_90,hopper").unwrap_err();
        assert!(bad.contains("`hopper`") && bad.contains("sm_80"), "{bad}");
        assert!(parse_list(" , ").is_err());
        assert_eq!(
            targets(Some("sm_86")).unwrap(),
            (vec!["sm_86".to_owned()], Source::Asked)
        );
        assert_eq!(number("sm_90"), 90);
    }
}
