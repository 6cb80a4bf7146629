//! The runtime's plans of earlier calls: a region called again with the same scalar arguments,
//! array shapes and options reuses its inspection, as JAX's `jit` traces a function once per
//! static arguments and shapes.
//!
//! 1. The function `task_region!` generates hands the region its scalar arguments' words
//!    ([`Region::key_words`](crate::Region::key_words)); with the region's arrays (name, length,
//!    element size, mode) and options they make its [`PlanKey`].
//! 2. [`Region::run`](crate::Region::run) looks the key up in its runtime's [`PlanCache`]. The
//!    first call inspects and runs as always, then keeps the plan (its DAG; nothing on the
//!    device). A call that finds it runs the plan instead of inspecting: the second call stages
//!    the backend's tables into the plan, and from the third on a call only resets them and
//!    launches ([`Plan::run`](crate::Plan::run)'s path).
//! 3. A plan is taken out of the cache while it runs and put back afterwards, so two threads
//!    never share one; the most recently used plans stay, up to the cache's capacity.
//!
//! [`Region::submit`](crate::Region::submit) does not use the cache: a submitted region's plan
//! goes to a helper thread and is dropped there.
//!
//! The cache is sound when a region's DAG follows from its scalar arguments and array lengths,
//! which is what a region's body can see: it reads no array contents. A body that also reads other
//! state (a global, the clock, a random source) must opt out with
//! [`Region::cache`](crate::Region::cache)`(false)`. Plans that verify
//! ([`Plan::verify`](crate::Plan::verify), on in debug builds) inspect again at every call and
//! refuse to run a DAG other than the fresh one, so such a body fails in a debug build with an
//! [`Error::PlanMismatch`](crate::Error::PlanMismatch) that says so.

use crate::inspect::ArrayInfo;
use crate::meta::RegionMeta;
use crate::options::Options;
use crate::plan::Plan;

/// The environment variable that sets how many plans a runtime keeps (read when the runtime is
/// made): a number, `0` turning the cache off. [`DEFAULT_PLANS`] without it.
pub const PLAN_CACHE_ENV: &str = "TASKWEAVE_PLAN_CACHE";

/// Plans a runtime keeps by default.
pub const DEFAULT_PLANS: usize = 8;

/// What identifies the DAG a call of a region builds: the region, its scalar arguments' words, its
/// arrays' shapes and the options.
#[derive(Clone, Debug)]
pub(crate) struct PlanKey {
    meta: RegionMeta,
    scalars: Vec<u64>,
    arrays: Vec<ArrayInfo>,
    options: Options,
}

impl PlanKey {
    pub fn new(
        meta: RegionMeta,
        scalars: Vec<u64>,
        arrays: Vec<ArrayInfo>,
        options: Options,
    ) -> Self {
        Self {
            meta,
            scalars,
            arrays,
            options,
        }
    }

    /// Whether `other` is the same call: the same region (of the same crate's device code) with
    /// the same scalars, array shapes and options.
    fn matches(&self, other: &PlanKey) -> bool {
        self.meta.same_region(&other.meta)
            && self.meta.code.map(|c| c.address()) == other.meta.code.map(|c| c.address())
            && self.scalars == other.scalars
            && self.arrays == other.arrays
            && self.options == other.options
    }
}

/// The plans of a runtime's earlier calls, most recently used last (see the module docs).
pub(crate) struct PlanCache {
    capacity: usize,
    entries: Vec<(PlanKey, Plan)>,
}

impl PlanCache {
    /// An empty cache of `capacity` plans (0: off).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Vec::new(),
        }
    }

    /// A cache of the capacity [`PLAN_CACHE_ENV`] says, [`DEFAULT_PLANS`] without it.
    pub fn from_env() -> Self {
        let capacity = std::env::var(PLAN_CACHE_ENV)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_PLANS);
        Self::new(capacity)
    }

    /// Whether the cache keeps plans at all.
    pub fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// The plan of `key`, if the cache holds one.
    pub fn find(&self, key: &PlanKey) -> Option<&Plan> {
        self.entries
            .iter()
            .find(|(k, _)| k.matches(key))
            .map(|(_, p)| p)
    }

    /// Takes the plan of `key` out of the cache, if it holds one.
    pub fn take(&mut self, key: &PlanKey) -> Option<Plan> {
        let at = self.entries.iter().position(|(k, _)| k.matches(key))?;
        Some(self.entries.remove(at).1)
    }

    /// Keeps `plan` as the plan of `key`, the most recently used. Returns what it no longer keeps,
    /// for the caller to drop outside its lock (dropping a plan may free device memory): the
    /// least recently used plans beyond the capacity, a plan of the same key that another thread
    /// put back meanwhile, or `plan` itself when the cache is off.
    #[must_use = "the plans returned are dropped by the caller"]
    pub fn put(&mut self, key: PlanKey, plan: Plan) -> Vec<Plan> {
        if !self.enabled() {
            return vec![plan];
        }
        let mut gone: Vec<Plan> = match self.entries.iter().position(|(k, _)| k.matches(&key)) {
            Some(at) => vec![self.entries.remove(at).1],
            None => Vec::new(),
        };
        self.entries.push((key, plan));
        gone.extend(self.evict());
        gone
    }

    /// Sets the capacity; returns the least recently used plans beyond it (see
    /// [`PlanCache::put`]).
    #[must_use = "the plans returned are dropped by the caller"]
    pub fn set_capacity(&mut self, capacity: usize) -> Vec<Plan> {
        self.capacity = capacity;
        self.evict()
    }

    /// Takes every plan out (see [`PlanCache::put`]).
    #[must_use = "the plans returned are dropped by the caller"]
    pub fn clear(&mut self) -> Vec<Plan> {
        self.entries.drain(..).map(|(_, plan)| plan).collect()
    }

    /// The least recently used plans beyond the capacity, taken out.
    fn evict(&mut self) -> Vec<Plan> {
        let excess = self.entries.len().saturating_sub(self.capacity);
        self.entries.drain(..excess).map(|(_, plan)| plan).collect()
    }

    /// The plans kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::Location;
    use std::time::Instant;

    use taskweave_device::Block;
    use taskweave_device::abi::ArrayDesc;

    use super::*;
    use crate::inspect::Recorder;

    static KINDS: [&str; 1] = ["t"];

    fn meta(name: &'static str) -> RegionMeta {
        struct NoBodies;
        impl taskweave_device::sched::Dispatch for NoBodies {
            fn run(&self, _: &Block, _: u32, _: &[u64], _: &[ArrayDesc], _: bool) {}
        }
        RegionMeta {
            name,
            kernel: name,
            code: None,
            kinds: &KINDS,
            args: &[],
            dispatch: &NoBodies,
            location: Location::caller(),
        }
    }

    fn array(len: usize) -> ArrayInfo {
        ArrayInfo {
            name: "x",
            len,
            writable: true,
            elem_bytes: 4,
            output: false,
        }
    }

    fn plan(name: &'static str) -> Plan {
        let ins = Recorder::new(name, &KINDS, vec![array(8)])
            .finish(Instant::now())
            .expect("an empty region");
        Plan::new(meta(name), Options::default(), ins).unwrap()
    }

    #[test]
    fn a_dropped_plan_gives_its_buffers_to_the_regions_next_inspection() {
        // A name of its own: tests run side by side, and buffers are kept by region.
        let first = plan("gives back");
        let tasks = first.inspection().tasks.as_ptr();
        drop(first);
        let next = Recorder::new("gives back", &KINDS, vec![array(8)])
            .finish(Instant::now())
            .expect("an empty region");
        assert_eq!(next.tasks.as_ptr(), tasks);
    }

    fn key(name: &'static str, scalars: &[u64], len: usize) -> PlanKey {
        PlanKey::new(
            meta(name),
            scalars.to_vec(),
            vec![array(len)],
            Options::default(),
        )
    }

    #[test]
    fn a_plan_is_found_by_region_scalars_shapes_and_options_only() {
        let mut cache = PlanCache::new(4);
        assert!(cache.put(key("a", &[1, 2], 8), plan("a")).is_empty());
        assert!(
            cache.take(&key("a", &[1, 3], 8)).is_none(),
            "another scalar"
        );
        assert!(
            cache.take(&key("a", &[1, 2], 9)).is_none(),
            "another length"
        );
        assert!(
            cache.take(&key("b", &[1, 2], 8)).is_none(),
            "another region"
        );
        let mut checked_off = key("a", &[1, 2], 8);
        checked_off.options.checked = false;
        assert!(cache.take(&checked_off).is_none(), "other options");
        assert_eq!(cache.len(), 1);
        let found = cache.take(&key("a", &[1, 2], 8)).expect("the same call");
        assert_eq!(found.region(), "a");
        assert_eq!(cache.len(), 0, "a plan is taken out while it runs");
    }

    #[test]
    fn the_least_recently_used_plan_goes_first() {
        let mut cache = PlanCache::new(2);
        let _ = cache.put(key("a", &[1], 8), plan("a"));
        let _ = cache.put(key("a", &[2], 8), plan("a"));
        // Using [1] makes [2] the least recently used.
        let one = cache.take(&key("a", &[1], 8)).expect("kept");
        assert!(cache.put(key("a", &[1], 8), one).is_empty());
        assert_eq!(cache.put(key("a", &[3], 8), plan("a")).len(), 1);
        assert_eq!(cache.len(), 2);
        assert!(cache.take(&key("a", &[2], 8)).is_none());
        assert!(cache.take(&key("a", &[1], 8)).is_some());
        assert!(cache.take(&key("a", &[3], 8)).is_some());
    }

    #[test]
    fn a_cache_of_no_plans_keeps_none_and_shrinking_drops_the_oldest() {
        let mut off = PlanCache::new(0);
        assert_eq!(off.put(key("a", &[], 8), plan("a")).len(), 1);
        assert_eq!(off.len(), 0);
        let mut cache = PlanCache::new(3);
        for s in 0..3 {
            let _ = cache.put(key("a", &[s], 8), plan("a"));
        }
        assert_eq!(cache.set_capacity(1).len(), 2);
        assert_eq!(cache.len(), 1);
        assert!(cache.take(&key("a", &[2], 8)).is_some());
        // The same key put twice keeps one plan.
        assert!(cache.set_capacity(3).is_empty());
        let _ = cache.put(key("a", &[5], 8), plan("a"));
        assert_eq!(cache.put(key("a", &[5], 8), plan("a")).len(), 1);
        assert_eq!(cache.len(), 1);
        assert_eq!(cache.clear().len(), 1);
        assert_eq!(cache.len(), 0);
    }
}
