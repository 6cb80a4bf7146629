//! Fitting a kernel's register cap to the kernel: the fewest registers it assembles in without
//! spilling more than it does uncapped.
//!
//! A scheduler kernel calls its task bodies out of line, so its register count is about the
//! heaviest body's plus the few registers the scheduler loop keeps across the call. `ptxas`
//! without a cap spends more than that (it uses the registers it is given), and a fixed cap is
//! wrong both ways: too high for light bodies (fewer resident blocks than they could have), too
//! low for heavy ones (spills inside the bodies). So the builder caps each kernel at the smallest
//! rung of [`LADDER`] where it spills no function more than the uncapped kernel does (the panic
//! path's formatting functions, called through `dyn`, save registers whatever the cap, and
//! `ptxas` counts those as spills).
//!
//! The uncapped kernel is assembled anyway (its region's first module), so its registers and
//! spills cost nothing more; [`search`] then probes only rungs below the registers it used, each
//! probe one kernel alone. A kernel that uses all 255 registers uncapped is not probed: on the
//! examples every such kernel fitted at 255 (16 of 16, `bench/results/build-time/`), each probe of
//! a heavy kernel costs as much as its assembly, and a fitted cap at or above what the kernel uses
//! is the uncapped kernel itself, which is then assembled once.

/// The caps tried: every register count at which the resident blocks of 64, 128 or 256 threads
/// change, up to the most a thread can have.
pub(crate) const LADDER: [u32; 11] = [32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 255];

/// The most registers a thread can have.
pub(crate) const MOST: u32 = 255;

/// Where the search starts for a kernel that uses `used` registers uncapped: the index of the
/// smallest rung at or above it (every rung from there fits, since a cap the kernel does not reach
/// changes nothing), or `None` when it uses them all and is not probed.
pub(crate) fn known(used: u32) -> Option<usize> {
    (used < MOST).then(|| {
        LADDER
            .iter()
            .position(|&cap| cap >= used)
            .unwrap_or(LADDER.len())
    })
}

/// The smallest rung of [`LADDER`] at which `fits` holds, trying as few as it can on the
/// assumption that a cap that fits leaves every larger one fitting, and knowing that the rungs
/// from `known` on fit (a cap at or above what the kernel uses uncapped changes nothing): `None`
/// if none does.
pub(crate) fn search(
    known: usize,
    mut fits: impl FnMut(u32) -> Result<bool, String>,
) -> Result<Option<u32>, String> {
    let (mut lo, mut hi) = (0, known.min(LADDER.len()));
    // Invariant: every rung below `lo` does not fit; `hi` is the smallest rung known to fit
    // (`LADDER.len()` while none is).
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(LADDER[mid])? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(LADDER.get(hi).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_finds_the_smallest_cap_that_fits() {
        for need in [1, 32, 33, 64, 65, 100, 168, 200, 255] {
            let want = LADDER.iter().copied().find(|&cap| cap >= need);
            for known in [
                LADDER.len(),
                LADDER.iter().position(|&c| c >= need).unwrap(),
            ] {
                let mut probes = 0;
                let found = search(known, |cap| {
                    probes += 1;
                    assert!(
                        LADDER[..known].contains(&cap),
                        "probed {cap}, known from {known}"
                    );
                    Ok(cap >= need)
                })
                .unwrap();
                assert_eq!(found, want, "need {need}");
                assert!(probes <= 4, "{probes} probes for need {need}");
            }
        }
        assert_eq!(search(LADDER.len(), |_| Ok(false)).unwrap(), None);
        assert_eq!(search(3, |_| Ok(false)).unwrap(), Some(LADDER[3]));
        assert!(search(LADDER.len(), |_| Err("boom".into())).is_err());
    }

    #[test]
    fn a_kernel_that_uses_every_register_is_not_probed() {
        assert_eq!(known(255), None);
        assert_eq!(known(200), Some(10));
        assert_eq!(known(128), Some(8));
        assert_eq!(known(20), Some(0));
    }
}
