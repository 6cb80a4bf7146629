//! The scheduler's tables for one run, in host memory: what the CPU backend runs on directly and
//! what the GPU backend uploads.

use std::sync::atomic::{AtomicU32, Ordering};

use taskweave_device::abi::{Counters, FLAG_GANGS, RegionDesc};
use taskweave_device::gang;
use taskweave_device::sched::affinity::NOT_RUN;
use taskweave_device::sched::queue;

use crate::costs::TaskCosts;
use crate::graph::Reserve;
use crate::inspect::Inspection;
use crate::policy::{Policy, Start, StartOf};

/// [`Counters`] as atomics, with the same layout: `completed` is word 0, `grr` word 32, the
/// gang slots' line from word 64.
#[repr(C, align(128))]
pub(crate) struct CounterWords(pub [AtomicU32; 64 + gang::LINE_WORDS]);

const _: () = assert!(size_of::<CounterWords>() == size_of::<Counters>());
const _: () = assert!(std::mem::offset_of!(Counters, grr) == 32 * 4);
const _: () = assert!(std::mem::offset_of!(Counters, gang) == GANG_WORD * 4);

/// [`Counters::gang`]'s first word.
const GANG_WORD: usize = 64;

impl CounterWords {
    /// The counters as a run starts: none completed, the round-robin cursor at `grr`, the gang
    /// slots empty, as many usable as leave a worker free whatever gangs of `widest` blocks hold.
    pub fn fresh(workers: u32, grr: u32, widest: u32) -> Box<Self> {
        let counters = Box::new(CounterWords(std::array::from_fn(|_| AtomicU32::new(0))));
        counters.0[32].store(grr, Ordering::Relaxed);
        for slot in &counters.0[GANG_WORD + gang::FIRST..] {
            slot.store(gang::EMPTY, Ordering::Relaxed);
        }
        counters.0[GANG_WORD + gang::COUNT]
            .store(gang::slots_for(workers, widest), Ordering::Relaxed);
        counters
    }
}

impl Clone for CounterWords {
    fn clone(&self) -> Self {
        Self(std::array::from_fn(|i| {
            AtomicU32::new(self.0[i].load(Ordering::Relaxed))
        }))
    }
}

/// The mutable tables of a run, as they start; the immutable ones (tasks, args, CSR, ranks,
/// affine parents) stay in the [`Inspection`]. A plan keeps one set and clones it for each run
/// on the CPU.
#[derive(Clone)]
pub(crate) struct Tables {
    pub pending: Vec<u32>,
    pub next: Vec<u32>,
    pub head: Vec<u32>,
    pub tail: Vec<u32>,
    pub lock: Vec<u32>,
    pub counters: Box<CounterWords>,
    /// The CSR children as the device reads them: a child with no other parent carries
    /// [`SOLE_PARENT`], so releasing it needs no atomic.
    pub children: Vec<u32>,
    /// Under [`Policy::Affinity`], the worker that ran each task, [`NOT_RUN`] before; empty
    /// otherwise.
    pub ran_by: Vec<u32>,
    /// The workers and the policy they are for.
    pub workers: u32,
    pub policy: Policy,
}

impl Tables {
    /// Fresh tables: dependence counters from the in-degrees, and the ready tasks dealt round robin
    /// to the workers' queues (highest rank first under [`Policy::Priority`]). Under
    /// [`Policy::Static`] the queues hold every task instead, as the plan places them (`reserve`
    /// setting workers apart for the critical path), and the counters count only the parents on
    /// other workers. `planned` may give the start made ahead of time (a plan's upgrade to the
    /// static policy, see `Work::planned_start`), for the policy's own.
    pub fn new(
        ins: &Inspection,
        workers: u32,
        policy: Policy,
        reserve: &Reserve,
        costs: Option<&TaskCosts>,
        planned: impl FnOnce(&StartOf<'_>) -> Option<Start>,
    ) -> Self {
        let n = ins.task_count();
        let w = workers as usize;
        let dag = &ins.dag;
        let row = policy.row();
        let Start {
            lists,
            pending,
            children,
        } = {
            let of = StartOf {
                ins,
                workers,
                reserve,
                costs,
            };
            planned(&of).unwrap_or_else(|| (row.start)(&of))
        };
        let mut pending = pending;
        if ins.gangs() {
            // Each task's gang words after the counters: rank 0 taken by whoever posts it, no
            // arrivals (see `taskweave_device::gang`).
            pending.reserve(2 * n);
            for _ in 0..n {
                pending.extend([gang::JOINS_START, 0]);
            }
        }
        let list_refs: Vec<&[u32]> = lists.iter().map(Vec::as_slice).collect();
        let mut next = vec![0; n + w];
        let mut head = vec![0; w];
        let mut tail = vec![0; w];
        queue::link_initial(&mut next, &mut head, &mut tail, n as u32, &list_refs);
        let widest = ins.widest_gang().map_or(1, |(_, blocks)| blocks);
        let counters = CounterWords::fresh(workers, (dag.ready.len() % w) as u32, widest);
        Self {
            ran_by: vec![NOT_RUN; if row.records_ran_by { n } else { 0 }],
            pending,
            next,
            head,
            tail,
            lock: vec![0; w],
            counters,
            children,
            workers,
            policy,
        }
    }

    /// Under [`Policy::Affinity`] (the tables record who ran each task), each task's affine
    /// parent ([`Inspection::affine_parents`]); empty otherwise.
    pub fn affine<'i>(&self, ins: &'i Inspection) -> &'i [u32] {
        if self.ran_by.is_empty() {
            return &[];
        }
        ins.affine_parents()
            .expect("a region inspected under the affinity policy has its ranges")
    }

    /// `base` (the run's options, see `Options::desc`) with these tables and those of `ins` in
    /// host memory filled in. The caller fills in the per-run buffers (arrays, abort, stats,
    /// current, trace).
    pub fn desc(&mut self, ins: &Inspection, base: RegionDesc) -> RegionDesc {
        let dag = &ins.dag;
        let affine = self.affine(ins);
        RegionDesc {
            n_tasks: ins.task_count() as u32,
            flags: base.flags | if ins.gangs() { FLAG_GANGS } else { 0 },
            tasks: ins.tasks.as_ptr() as u64,
            args: ins.args.as_ptr() as u64,
            offsets: dag.offsets.as_ptr() as u64,
            children: self.children.as_ptr() as u64,
            pending: self.pending.as_mut_ptr() as u64,
            rank: dag.rank.as_ptr() as u64,
            next: self.next.as_mut_ptr() as u64,
            head: self.head.as_mut_ptr() as u64,
            tail: self.tail.as_mut_ptr() as u64,
            lock: self.lock.as_mut_ptr() as u64,
            counters: self.counters.0.as_ptr() as u64,
            affine: table_ptr(affine.as_ptr(), affine.len()),
            ran_by: table_ptr(self.ran_by.as_mut_ptr(), self.ran_by.len()),
            ..base
        }
    }

    /// Tasks completed so far.
    pub fn completed(&self) -> u32 {
        self.counters.0[0].load(Ordering::Relaxed)
    }
}

/// The address of a table the device uses only under some policies: 0 when it is empty.
pub(crate) fn table_ptr<T>(ptr: *const T, len: usize) -> u64 {
    if len == 0 { 0 } else { ptr as u64 }
}
