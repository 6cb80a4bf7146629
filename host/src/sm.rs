//! SM-aware workers on the host: which SMs a region's workers use, and how many share each.
//!
//! 1. A region asks with [`Region::workers_per_sm`](crate::Region::workers_per_sm) and/or
//!    [`Region::sms`](crate::Region::sms).
//! 2. The backend resolves the options against its device with [`SmLayout::resolve`], which refuses
//!    what cannot be placed ([`Error::SmOptions`]) and fills in what was left out: every SM, and
//!    workers per SM from the DAG's widest level, as the default worker count does.
//! 3. The persistent backend launches every block that fits on the GPU at once; each block claims
//!    a worker on its SM at kernel entry or retreats (`taskweave_device::sched::sm`, where the
//!    scheme and its caveats are described). [`SmLayout::desc`] fills in the descriptor.
//! 4. The CPU backend has no SMs: it counts each of the worker threads it would start by default
//!    as one SM, so that `sms` ranges over `0..workers`, and starts `workers_per_sm` threads for
//!    each SM of the set, with no occupancy limit; worker `w`'s statistics name SM
//!    [`SmLayout::sm_of`]`(w)`.

use std::ops::Range;

use taskweave_device::abi::RegionDesc;

use crate::error::Error;
use crate::graph::Reserve;
use crate::options::Options;

/// Where a region's workers run: `per_sm` workers on each SM of `set`, worker `w` on SM
/// `set.start + w / per_sm`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SmLayout {
    /// SMs on the device (the length of the device's slot table).
    pub sm_count: u32,
    /// The SMs the workers use.
    pub set: Range<u32>,
    /// Active workers per SM.
    pub per_sm: u32,
    /// The first SMs of the set, which run the critical path alone (static policy).
    pub critical: u32,
}

impl SmLayout {
    /// The layout for `options` on a device of `sm_count` SMs each holding at most `occupancy`
    /// blocks of the region's kernel (`None`: no limit), or `None` when the region asks for no
    /// SM-aware workers. `default_per_sm(sms)` gives the workers per SM when only `sms` is set
    /// (at least one, at most `occupancy`).
    pub fn resolve(
        region: &'static str,
        options: &Options,
        sm_count: u32,
        occupancy: Option<u32>,
        default_per_sm: impl FnOnce(u32) -> u32,
    ) -> Result<Option<Self>, Error> {
        let refuse = |option: String, reason: String| Error::SmOptions {
            region,
            option,
            reason,
        };
        let critical = options.critical_sms;
        let critical_option = || format!("critical_path_sms({critical})");
        if !options.sm_aware() {
            if critical > 0 {
                return Err(refuse(
                    critical_option(),
                    "needs SM-aware workers: set `workers_per_sm` or `sms` too".to_owned(),
                ));
            }
            return Ok(None);
        }
        if critical > 0 && !options.run_policy().row().plans {
            return Err(refuse(
                critical_option(),
                format!(
                    "needs the static policy, which places every task before the run (the \
                     region runs under `{}`)",
                    options.run_policy()
                ),
            ));
        }
        if let Some(workers) = options.workers {
            return Err(refuse(
                format!("workers({workers})"),
                "cannot be combined with `workers_per_sm` or `sms`, which set the worker count to \
                 the SMs times the workers per SM"
                    .to_owned(),
            ));
        }
        let set = options.sm_set.clone().unwrap_or(0..sm_count);
        let sms = format!("sms({set:?})");
        if set.is_empty() {
            return Err(refuse(sms, "is empty: give at least one SM".to_owned()));
        }
        if set.end > sm_count {
            return Err(refuse(
                sms,
                format!("is outside the device's SMs 0..{sm_count}"),
            ));
        }
        let len = set.end - set.start;
        let per_sm = match options.per_sm {
            Some(0) => {
                return Err(refuse(
                    "workers_per_sm(0)".to_owned(),
                    "leaves no worker: give at least one per SM".to_owned(),
                ));
            }
            Some(n) => n,
            None => default_per_sm(len).clamp(1, occupancy.unwrap_or(u32::MAX).max(1)),
        };
        if let Some(fit) = occupancy
            && per_sm > fit
        {
            return Err(refuse(
                format!("workers_per_sm({per_sm})"),
                format!(
                    "asks for more workers than fit on one SM: at most {fit} blocks of {} threads \
                     with {} are resident at once",
                    options.threads,
                    options.shared_bytes.map_or_else(
                        || "the default shared memory".to_owned(),
                        |b| format!("{b} bytes of shared memory")
                    )
                ),
            ));
        }
        if critical >= len {
            return Err(refuse(
                critical_option(),
                format!("leaves none of the {len} SMs of the set for the other tasks"),
            ));
        }
        if len.checked_mul(per_sm).is_none() {
            return Err(refuse(
                format!("workers_per_sm({per_sm})"),
                format!("times {len} SMs is more than u32::MAX workers"),
            ));
        }
        Ok(Some(Self {
            sm_count,
            set,
            per_sm,
            critical,
        }))
    }

    /// The static schedule's reserve for the critical path: the first worker of each of the
    /// first `critical` SMs runs it, the other workers of those SMs run nothing.
    pub fn reserve(&self) -> Reserve {
        let mut reserve = Reserve::default();
        for sm in 0..self.critical {
            let first = sm * self.per_sm;
            reserve.chain.push(first);
            reserve.idle.extend(first + 1..first + self.per_sm);
        }
        reserve
    }

    /// The worker count: the SMs of the set times the workers per SM.
    pub fn workers(&self) -> u32 {
        (self.set.end - self.set.start) * self.per_sm
    }

    /// The SM worker `worker` runs on.
    pub fn sm_of(&self, worker: u32) -> u32 {
        self.set.start + worker / self.per_sm
    }

    /// `base` with the layout's descriptor fields set; the caller sets `sm_slots`.
    pub fn desc(&self, base: RegionDesc) -> RegionDesc {
        RegionDesc {
            sm_count: self.sm_count,
            sm_first: self.set.start,
            sm_len: self.set.end - self.set.start,
            per_sm: self.per_sm,
            ..base
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    fn options(per_sm: Option<u32>, set: Option<Range<u32>>) -> Options {
        Options {
            per_sm,
            sm_set: set,
            ..Options::default()
        }
    }

    fn resolve(options: &Options) -> Result<Option<SmLayout>, Error> {
        SmLayout::resolve("r", options, 132, Some(4), |sms| 300 / sms)
    }

    #[test]
    fn no_option_no_plan() {
        assert_eq!(resolve(&Options::default()).unwrap(), None);
    }

    #[test]
    fn the_set_defaults_to_every_sm_and_per_sm_to_the_callers_default() {
        let layout = resolve(&options(Some(2), None)).unwrap().unwrap();
        assert_eq!(
            (layout.set.clone(), layout.per_sm, layout.workers()),
            (0..132, 2, 264)
        );
        let layout = resolve(&options(None, Some(32..64))).unwrap().unwrap();
        assert_eq!(
            (layout.per_sm, layout.workers()),
            (4, 128),
            "9 per SM, within occupancy"
        );
        assert_eq!(
            (layout.sm_of(0), layout.sm_of(3), layout.sm_of(4)),
            (32, 32, 33)
        );
        let desc = layout.desc(RegionDesc::default());
        assert_eq!(
            (desc.sm_count, desc.sm_first, desc.sm_len, desc.per_sm),
            (132, 32, 32, 4)
        );
        let layout = resolve(&options(None, Some(0..100))).unwrap().unwrap();
        assert_eq!(layout.per_sm, 3);
        // The default never leaves an SM without a worker.
        let layout = SmLayout::resolve("r", &options(None, Some(0..4)), 4, None, |_| 0);
        assert_eq!(layout.unwrap().unwrap().per_sm, 1);
    }

    #[test]
    fn what_cannot_be_placed_is_refused_with_the_option_named() {
        let message = |o: &Options| resolve(o).unwrap_err().to_string();
        assert_eq!(
            message(&options(Some(5), None)),
            "region `r`: `workers_per_sm(5)` asks for more workers than fit on one SM: at most 4 \
             blocks of 128 threads with the default shared memory are resident at once"
        );
        assert_eq!(
            message(&options(None, Some(100..140))),
            "region `r`: `sms(100..140)` is outside the device's SMs 0..132"
        );
        assert_eq!(
            message(&options(Some(1), Some(7..7))),
            "region `r`: `sms(7..7)` is empty: give at least one SM"
        );
        assert!(message(&options(Some(0), None)).contains("`workers_per_sm(0)` leaves no worker"));
        let both = Options {
            workers: Some(8),
            ..options(Some(1), None)
        };
        assert!(message(&both).starts_with("region `r`: `workers(8)` cannot be combined"));
        let huge = SmLayout::resolve("r", &options(Some(u32::MAX), None), 2, None, |_| 1);
        assert!(matches!(huge, Err(Error::SmOptions { .. })));
    }

    fn critical(n: u32, policy: Policy, per_sm: Option<u32>, set: Option<Range<u32>>) -> Options {
        Options {
            critical_sms: n,
            policy: Some(policy),
            ..options(per_sm, set)
        }
    }

    #[test]
    fn the_critical_path_takes_the_first_worker_of_its_sms_and_idles_the_rest() {
        let layout = resolve(&critical(2, Policy::Static, Some(3), Some(10..20)))
            .unwrap()
            .unwrap();
        assert_eq!(
            layout.reserve(),
            Reserve {
                chain: vec![0, 3],
                idle: vec![1, 2, 4, 5],
            }
        );
        assert_eq!((layout.sm_of(3), layout.sm_of(5)), (11, 11));
        let plain = resolve(&options(Some(3), None)).unwrap().unwrap();
        assert_eq!(plain.reserve(), Reserve::default());
    }

    #[test]
    fn a_critical_path_that_cannot_be_set_apart_is_refused() {
        let message = |o: &Options| resolve(o).unwrap_err().to_string();
        assert_eq!(
            message(&critical(1, Policy::Static, None, None)),
            "region `r`: `critical_path_sms(1)` needs SM-aware workers: set `workers_per_sm` or \
             `sms` too"
        );
        assert_eq!(
            message(&critical(1, Policy::Grr, Some(2), None)),
            "region `r`: `critical_path_sms(1)` needs the static policy, which places every task \
             before the run (the region runs under `grr`)"
        );
        assert_eq!(
            message(&critical(4, Policy::Static, Some(2), Some(0..4))),
            "region `r`: `critical_path_sms(4)` leaves none of the 4 SMs of the set for the other \
             tasks"
        );
    }
}
