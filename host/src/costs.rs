//! [`TaskCosts`]: what each task kind costs, for the static policy's plan.

use std::fmt;
use std::time::Duration;

use crate::error::Error;
use crate::graph::Costs;
use crate::inspect::Inspection;

/// What a dependence between tasks on different workers costs unless [`TaskCosts::hop`] says
/// otherwise: the median gap between dependent tasks on the H200 (`Report::trace_path`).
pub const DEFAULT_HOP: Duration = Duration::from_micros(1);

/// What each task kind of a region costs, by task function name, for the static policy's plan
/// ([`Region::task_costs`](crate::Region::task_costs)).
///
/// Without costs the plan takes every task to cost the same, so a factorization's 40 µs panel
/// task and its 11 µs updates weigh alike: the plan's critical path counts tasks, and it queues
/// updates on workers that the chain is still using. With costs the ranks are the longest paths
/// in time, and each task goes where the model starts it earliest in time.
///
/// Costs are measured most simply by a traced run ([`Report::task_costs`](crate::Report::task_costs)):
///
/// ```no_run
/// # use taskweave_host::{Error, Policy, Region, Runtime};
/// # fn cholesky<'a>(a: &'a mut [f64], nb: usize, bs: usize) -> Region<'a> { unimplemented!() }
/// # fn main() -> Result<(), Error> {
/// let rt = Runtime::new();
/// let mut a = vec![0.0f64; 64 * 64 * 16];
/// let traced = cholesky(&mut a, 4, 64).policy(Policy::Static).trace(true).run(&rt)?;
/// let costs = traced.task_costs().expect("a traced run");
/// let report = cholesky(&mut a, 4, 64)
///     .policy(Policy::Static)
///     .task_costs(costs)
///     .run(&rt)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TaskCosts {
    kinds: Vec<(String, Duration)>,
    hop: Option<Duration>,
}

impl TaskCosts {
    /// No costs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tasks of the kind `kind` (a task function's name) cost `cost`; replaces an earlier cost of
    /// that kind.
    pub fn kind(mut self, kind: impl Into<String>, cost: Duration) -> Self {
        let kind = kind.into();
        match self.kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some(slot) => slot.1 = cost,
            None => self.kinds.push((kind, cost)),
        }
        self
    }

    /// A dependence between tasks on different workers costs `cost` ([`DEFAULT_HOP`] unless set).
    pub fn hop(mut self, cost: Duration) -> Self {
        self.hop = Some(cost);
        self
    }

    /// The cost of the kind `kind`, if given.
    pub fn get(&self, kind: &str) -> Option<Duration> {
        self.kinds.iter().find(|(k, _)| k == kind).map(|&(_, c)| c)
    }

    /// The kinds and their costs, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Duration)> {
        self.kinds.iter().map(|(k, c)| (k.as_str(), *c))
    }

    /// The hop's cost.
    pub fn hop_cost(&self) -> Duration {
        self.hop.unwrap_or(DEFAULT_HOP)
    }

    /// Refuses costs that region `region`, of task kinds `kinds`, cannot use: under a policy
    /// other than the static one (`policy` names it; `None` for static), naming a kind the region
    /// does not have, or leaving a kind of the region without a cost.
    pub(crate) fn check(
        &self,
        region: &'static str,
        policy: Option<&str>,
        kinds: &[&str],
    ) -> Result<(), Error> {
        let refuse = |reason: String| Error::TaskCosts { region, reason };
        if let Some(policy) = policy {
            return Err(refuse(format!(
                "need the static policy, which plans every task before the run (the region runs \
                 under `{policy}`)"
            )));
        }
        if let Some((kind, _)) = self
            .kinds
            .iter()
            .find(|(k, _)| !kinds.contains(&k.as_str()))
        {
            return Err(refuse(format!(
                "name `{kind}`, which is not a task of the region (its tasks: {})",
                kinds.join(", ")
            )));
        }
        if let Some(kind) = kinds.iter().find(|k| self.get(k).is_none()) {
            return Err(refuse(format!(
                "give no cost for `{kind}`: give one for every task of the region ({})",
                kinds.join(", ")
            )));
        }
        Ok(())
    }

    /// Every task's cost in nanoseconds, for the plan; `None` where [`TaskCosts::check`] would
    /// refuse.
    pub(crate) fn per_task(&self, ins: &Inspection) -> Option<Costs> {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let by_kind: Vec<u64> = ins
            .kinds
            .iter()
            .map(|k| self.get(k).map(nanos))
            .collect::<Option<_>>()?;
        let task = ins.tasks[..ins.task_count()]
            .iter()
            .map(|t| by_kind.get(t.kind as usize).copied())
            .collect::<Option<_>>()?;
        Some(Costs {
            task,
            hop: nanos(self.hop_cost()),
        })
    }
}

impl fmt::Display for TaskCosts {
    /// `potrf_f64 26.3 us, trsm_f64 16.1 us, hop 1.0 us`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (kind, cost) in self.iter() {
            write!(f, "{kind} {:.1} us, ", cost.as_secs_f64() * 1e6)?;
        }
        write!(f, "hop {:.1} us", self.hop_cost().as_secs_f64() * 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_later_cost_replaces_an_earlier_one() {
        let costs = TaskCosts::new()
            .kind("a", Duration::from_micros(3))
            .kind("b", Duration::from_micros(5))
            .kind("a", Duration::from_micros(7));
        assert_eq!(costs.get("a"), Some(Duration::from_micros(7)));
        assert_eq!(costs.iter().count(), 2);
        assert_eq!(costs.hop_cost(), DEFAULT_HOP);
        assert_eq!(costs.to_string(), "a 7.0 us, b 5.0 us, hop 1.0 us");
    }

    #[test]
    fn costs_the_region_cannot_use_are_refused_by_name() {
        let costs = TaskCosts::new()
            .kind("potrf", Duration::from_micros(30))
            .kind("gemm", Duration::from_micros(10));
        let kinds = ["potrf", "gemm"];
        assert!(costs.check("r", None, &kinds).is_ok());
        let why = |e: Error| e.to_string();
        assert_eq!(
            why(costs.check("r", Some("grr"), &kinds).unwrap_err()),
            "region `r`: `task_costs` need the static policy, which plans every task before the \
             run (the region runs under `grr`)"
        );
        assert_eq!(
            why(costs
                .check("r", None, &["potrf", "gemm", "trsm"])
                .unwrap_err()),
            "region `r`: `task_costs` give no cost for `trsm`: give one for every task of the \
             region (potrf, gemm, trsm)"
        );
        assert_eq!(
            why(costs.check("r", None, &["potrf"]).unwrap_err()),
            "region `r`: `task_costs` name `gemm`, which is not a task of the region (its tasks: \
             potrf)"
        );
    }
}
