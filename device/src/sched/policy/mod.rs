//! The device's half of each scheduling policy: what a worker does with the children a task frees,
//! and where it looks for work. One module per policy, each a type that implements [`Hooks`],
//! overriding the defaults (global round robin) where it differs. The policies are the rows of
//! the ABI's table ([`crate::with_policies`]): each row's module is declared here and its type
//! dispatched by [`table!`]. The worker loop asks the dispatch, never a policy's number, and the
//! host's half of each policy is `taskweave_host`'s `policy` module, under the same names.
//!
//! Adding a policy: a row in the ABI's table, its module here and its module on the host.
//!
//! The hooks are `#[inline(always)]` and the table's dispatch a `match` on the descriptor's
//! policy, so that the worker loop's code is what one `match` per decision would be: the scheduler
//! kernels are shared by every policy, and a call through a function pointer would keep registers
//! busy across it.

use super::leader::Leader;
use super::tables::Tables;
use crate::abi::policy;
use crate::atomic::{Ordering::Relaxed, Scope::Gpu};
use crate::words::command;

/// What a policy decides on the device. Every hook has the default of global round robin.
pub(in crate::sched) trait Hooks {
    /// The host placed every task before the run and linked each worker's list: nothing is pushed
    /// at run time, a worker's next task is the link after its last (prefetched during the body),
    /// and a worker whose list is empty is done.
    const PLANNED: bool = false;
    /// The leader looks at its own queue before the release (`queued` in [`Hooks::keep`]): the
    /// policies that keep a freed child as a continuation, which tasks queued for the worker would
    /// otherwise wait behind.
    const LOOKS_AT_QUEUE: bool = false;

    /// Which of the `freed` children (read through `child`, at least one) of `task` the leader
    /// keeps as its continuation (an index into them), or `NONE`. `queued`: whether the worker's
    /// own queue looked non-empty, for the policies that look.
    #[inline(always)]
    fn keep<'a>(
        rt: &(impl Tables<'a> + ?Sized),
        task: u32,
        freed: usize,
        child: impl Fn(usize) -> u32,
        queued: bool,
        me: &Leader,
    ) -> u32 {
        let _ = (rt, task, freed, child, queued, me);
        command::NONE
    }

    /// The first target worker of the `pushes` (at least one) children the leader does not keep,
    /// before the modulus: by default the global round-robin cursor, advanced by as many.
    #[inline(always)]
    fn base<'a>(rt: &(impl Tables<'a> + ?Sized), pushes: u32, me: &Leader) -> u32 {
        let _ = me;
        // Relaxed: a cursor; nothing is published through it.
        rt.grr().fetch_add(pushes, Gpu, Relaxed)
    }

    /// The queue of `child`, the `i`-th pushed child of `task`, counting from `base`.
    #[inline(always)]
    fn target<'a>(
        rt: &(impl Tables<'a> + ?Sized),
        base: u32,
        i: u32,
        child: u32,
        task: u32,
        worker: u32,
    ) -> u32 {
        let _ = (child, task, worker);
        (base + i) % rt.workers()
    }

    /// The leader of `worker` is about to run `task` (before the body's barrier).
    #[inline(always)]
    fn started<'a>(rt: &(impl Tables<'a> + ?Sized), task: u32, worker: u32) {
        let _ = (rt, task, worker);
    }

    /// A link from the worker's own queue, if it holds one.
    #[inline(always)]
    fn pop_own<'a>(rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
        rt.queues().pop_from(&mut me.head)
    }

    /// A link taken from another worker's queue by an idle worker, if the policy steals.
    #[inline(always)]
    fn steal<'a>(rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
        let _ = (rt, me);
        None
    }
}

/// The table: every policy's ABI number and type, and the dispatch of every hook over them.
macro_rules! table {
    ($($abi:path => $policy:ty,)*) => {
        /// Every policy has a row.
        const _: () = assert!([$($abi),*].len() as u32 == policy::COUNT);

        /// [`Hooks::PLANNED`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn planned(p: u32) -> bool {
            match p { $($abi => <$policy as Hooks>::PLANNED,)* _ => false }
        }

        /// [`Hooks::LOOKS_AT_QUEUE`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn looks_at_queue(p: u32) -> bool {
            match p { $($abi => <$policy as Hooks>::LOOKS_AT_QUEUE,)* _ => false }
        }

        /// [`Hooks::keep`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn keep<'a>(
            p: u32,
            rt: &(impl Tables<'a> + ?Sized),
            task: u32,
            freed: usize,
            child: impl Fn(usize) -> u32,
            queued: bool,
            me: &Leader,
        ) -> u32 {
            match p {
                $($abi => <$policy as Hooks>::keep(rt, task, freed, child, queued, me),)*
                _ => command::NONE,
            }
        }

        /// [`Hooks::base`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn base<'a>(p: u32, rt: &(impl Tables<'a> + ?Sized), pushes: u32, me: &Leader) -> u32 {
            match p {
                $($abi => <$policy as Hooks>::base(rt, pushes, me),)*
                _ => 0,
            }
        }

        /// [`Hooks::target`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn target<'a>(
            p: u32,
            rt: &(impl Tables<'a> + ?Sized),
            (base, i): (u32, u32),
            child: u32,
            task: u32,
            worker: u32,
        ) -> u32 {
            match p {
                $($abi => <$policy as Hooks>::target(rt, base, i, child, task, worker),)*
                _ => (base + i) % rt.workers(),
            }
        }

        /// [`Hooks::started`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn started<'a>(p: u32, rt: &(impl Tables<'a> + ?Sized), task: u32, worker: u32) {
            match p {
                $($abi => <$policy as Hooks>::started(rt, task, worker),)*
                _ => {}
            }
        }

        /// [`Hooks::pop_own`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn pop_own<'a>(p: u32, rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
            match p {
                $($abi => <$policy as Hooks>::pop_own(rt, me),)*
                _ => None,
            }
        }

        /// [`Hooks::steal`] of policy `p`.
        #[inline(always)]
        pub(in crate::sched) fn steal<'a>(p: u32, rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
            match p {
                $($abi => <$policy as Hooks>::steal(rt, me),)*
                _ => None,
            }
        }
    };
}

/// Every policy of the ABI's table ([`crate::with_policies`]): its module, and its row here.
macro_rules! modules_and_rows {
    ($($(#[doc = $doc:literal])* $name:ident = $abi:literal, $lower:literal, $module:ident, $constant:ident;)*) => {
        $(mod $module;)*
        table! { $(policy::$constant => $module::$name,)* }
    };
}

crate::with_policies!(modules_and_rows);
