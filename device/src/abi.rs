//! The `#[repr(C)]` records the host writes and the device reads.
//!
//! One definition serves both sides, so they cannot disagree. Pointers are stored as `u64`: on the
//! GPU backend they hold device addresses (`CUdeviceptr`), on the CPU backend host addresses.
//!
//! A region reaches the runtime as one [`RegionDesc`]:
//!
//! | field | length | written by | holds |
//! | --- | --- | --- | --- |
//! | `tasks` | `n_tasks + 1` | host | [`TaskRecord`]: kind and first argument word (a sentinel ends the table) |
//! | `args` | total words | host | captured scalars and array bindings, one `u64` each |
//! | `arrays` | arrays | host | [`ArrayDesc`]: base address and length of each region array |
//! | `offsets`, `children` | `n_tasks + 1`, edges | host | the DAG in CSR form |
//! | `pending` | `n_tasks` (`3 * n_tasks` in a region with wide tasks) | host, then workers | unfinished parents per task; under one-task and level kernels, [`TASK_RUNNING`] while the task's body runs and [`TASK_DONE`] after; in a region with wide tasks, two gang words per task after them ([`crate::gang`]) |
//! | `rank` | `n_tasks` | host | critical-path bottom level per task |
//! | `next`, `head`, `tail`, `lock` | see [`crate::sched`] | host, then workers | the worker queues |
//! | `counters` | one [`Counters`] | workers | completed tasks, the global round-robin cursor, the forming gang |
//! | `abort` | one `u32` or null | host watchdog, a faulting task | non-zero asks every worker to stop |
//! | `error` | one [`ErrorRecord`](crate::error::ErrorRecord) | a faulting task | what failed, where |
//! | `stats` | `n_workers` | workers | [`WorkerStats`] |
//! | `current` | `n_workers` | workers | the task each worker runs, for the watchdog |
//! | `trace` | `n_tasks` or null | workers | [`TraceRecord`] per task |
//! | `sm_slots` | `sm_count + 1` or null | blocks, at kernel entry | the rank counter of each SM, then the count of workers claimed (SM-aware workers) |
//! | `affine` | `n_tasks` or null | host | each task's affine parent (the affinity policy) |
//! | `ran_by` | `n_tasks` or null | workers | the worker that ran each task (the affinity policy) |

/// One spawned task.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskRecord {
    /// Which task function: an index into the region's dispatch table.
    pub kind: u32,
    /// Index of the task's first word in the argument table; its words end where the next task's
    /// begin.
    pub args: u32,
}

/// One entry of a one-task kernel's task list (the `barrier`, `graph` and `streams` backends):
/// the task with its [`TaskRecord`] and where its arguments end. A block reads its kind and the
/// place of its arguments in this one 16-byte load, where the index alone would cost a second,
/// dependent load of the record before the arguments (one of the dependent loads a one-task
/// kernel makes before its first read of data).
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ListedTask {
    /// The task's index in the region.
    pub task: u32,
    /// Its kind, as in its record, in the bits below [`LISTED_RANK_SHIFT`]; above them, for an
    /// entry of a wide task (`#[task(blocks = K)]`, one entry per block of its gang), the block's
    /// rank. A one-block task's entry is its kind alone.
    pub kind: u32,
    /// Index of its first word in the argument table.
    pub args: u32,
    /// One past its last word (the next task's `args`).
    pub end: u32,
}

/// Where a listed entry keeps its block's rank in [`ListedTask::kind`]: the bits from this one
/// up. A region has far fewer kinds than `2^16`, and a gang at most
/// [`gang::MAX_WIDTH`](crate::gang::MAX_WIDTH) ranks.
pub const LISTED_RANK_SHIFT: u32 = 16;

impl ListedTask {
    /// The entry's task kind.
    #[inline(always)]
    pub const fn kind(&self) -> u32 {
        self.kind & ((1 << LISTED_RANK_SHIFT) - 1)
    }

    /// The entry's rank in its task's gang (0 for a one-block task).
    #[inline(always)]
    pub const fn rank(&self) -> u32 {
        self.kind >> LISTED_RANK_SHIFT
    }
}

/// One region array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrayDesc {
    /// Address of element 0.
    pub ptr: u64,
    /// Length in elements.
    pub len: u64,
}

/// The table of scheduling policies, the one place a policy is listed: each row is a policy's
/// docs, its type (on the device) and variant (on the host), its number in the ABI, its
/// lowercase name and its module on each side (`device/src/sched/policy/<module>.rs` and
/// `host/src/policy/<module>.rs`), and the name of its constant in [`policy`]. Every side builds
/// its own from it: [`policy`]'s constants here, the dispatch of the device's hooks, the host's
/// `Policy` enum and its table of rows. Adding a policy is a row here and its two modules.
///
/// `with_policies!(callback)` calls `callback!` with the rows.
#[doc(hidden)]
#[macro_export]
macro_rules! with_policies {
    ($callback:ident) => {
        $callback! {
            /// Juggler's local round robin: a per-worker cursor picks the target queue.
            Lrr = 0, "lrr", lrr, LRR;
            /// Juggler's global round robin: one shared cursor, advanced atomically.
            Grr = 1, "grr", grr, GRR;
            /// Juggler's local first: the first freed child to the worker's own queue, the next
            /// ones to its neighbours'.
            Lf = 2, "lf", lf, LF;
            /// Local continuation: the worker runs one freed child next, without a queue round
            /// trip, unless work is queued for it; the rest go out by global round robin.
            Local = 3, "local", local, LOCAL;
            /// Work stealing: freed children stay in the worker's own queue (one runs next); idle
            /// workers steal from others.
            Steal = 4, "steal", steal, STEAL;
            /// Critical-path priority: the freed child with the longest path to the end runs next
            /// on this worker; the rest go out by global round robin.
            Priority = 5, "priority", priority, PRIORITY;
            /// Data affinity: a freed child goes to the worker that ran its affine parent (the
            /// parent it shares the most bytes of declared ranges with), which runs it next when
            /// that is itself, unless that worker has work queued; the other children go out by
            /// global round robin.
            Affinity = 6, "affinity", affinity, AFFINITY;
            /// The inspector's static list schedule: every task is placed on a worker before the
            /// run (critical path first, next to its parents where that costs no time); each
            /// worker runs its list in order, waiting on a task's counter only for parents placed
            /// on other workers. No queue operation at run time; best when tasks cost about the
            /// same, since a task much longer than the others holds back its worker's list.
            Static = 7, "static", r#static, STATIC;
        }
    };
}

/// Scheduling policies: where a worker puts the children a finished task frees. Their numbers in
/// the ABI, from the table ([`with_policies!`](crate::with_policies)).
pub mod policy {
    macro_rules! constants {
        ($($(#[doc = $doc:literal])* $name:ident = $abi:literal, $lower:literal, $module:ident, $constant:ident;)*) => {
            $(
                $(#[doc = $doc])*
                pub const $constant: u32 = $abi;
            )*
            /// Number of policies.
            pub const COUNT: u32 = [$($abi),*].len() as u32;
            // The numbers are 0, 1, …, in the table's order.
            const _: () = {
                let abis = [$($abi),*];
                let mut i = 0;
                while i < abis.len() {
                    assert!(abis[i] == i as u32, "the policy table's ABI numbers must count from 0 in order");
                    i += 1;
                }
            };
        };
    }
    crate::with_policies!(constants);
}

/// [`RegionDesc::flags`]: index checks on.
pub const FLAG_CHECKED: u32 = 1;

/// A task's `pending` word under the one-task and level kernels, which do not count parents:
/// its body is running. The host watchdog names such tasks when a run stalls.
pub const TASK_RUNNING: u32 = u32::MAX - 1;
/// A task's `pending` word under the one-task and level kernels: its body returned.
pub const TASK_DONE: u32 = u32::MAX;
/// [`RegionDesc::flags`]: write a [`TraceRecord`] per task.
pub const FLAG_TRACE: u32 = 2;
/// [`RegionDesc::flags`]: the region has wide tasks; `pending` holds their gang words (see
/// [`crate::gang`]).
pub const FLAG_GANGS: u32 = 4;
/// The region is streamed: its tasks reach the workers in batches while they run, and its tables
/// are sized to a capacity ([`crate::sched::stream`]).
pub const FLAG_STREAM: u32 = 8;

/// Everything the runtime needs to run one region. See the module docs for each table.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct RegionDesc {
    /// Tasks in the region.
    pub n_tasks: u32,
    /// Worker blocks (GPU) or threads (CPU).
    pub n_workers: u32,
    /// One of the [`policy`] constants.
    pub policy: u32,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// Bytes of shared scratch each block offers its tasks.
    pub scratch_bytes: u32,
    /// Arrays in the region.
    pub n_arrays: u32,
    /// `*const TaskRecord`.
    pub tasks: u64,
    /// `*const u64`.
    pub args: u64,
    /// `*const ArrayDesc`.
    pub arrays: u64,
    /// `*const u32`, CSR row offsets.
    pub offsets: u64,
    /// `*const u32`, CSR children.
    pub children: u64,
    /// `*mut u32`, unfinished parents (under the one-task and level kernels, each task's state:
    /// [`TASK_RUNNING`], [`TASK_DONE`]); in a region with wide tasks, followed by two gang words
    /// per task ([`crate::gang`]).
    pub pending: u64,
    /// `*const u32`, bottom levels.
    pub rank: u64,
    /// `*mut u32`, queue links, `n_tasks + n_workers` words.
    pub next: u64,
    /// `*mut u32`, queue heads, `n_workers` words.
    pub head: u64,
    /// `*mut u32`, queue tails, `n_workers` words.
    pub tail: u64,
    /// `*mut u32`, consumer locks (work stealing), `n_workers` words.
    pub lock: u64,
    /// `*mut Counters`.
    pub counters: u64,
    /// `*mut u32`, the abort flag (raised by the host watchdog or a faulting task), or 0 on the CPU
    /// backend's host threads.
    pub abort: u64,
    /// `*mut ErrorRecord`, the launch's error record, or 0 on the CPU backend (a fault there is a
    /// panic).
    pub error: u64,
    /// `*mut WorkerStats`, `n_workers` records.
    pub stats: u64,
    /// `*mut u32`, the task each worker is running (`u32::MAX` when none), `n_workers` words; read
    /// by the host watchdog to name a stuck task.
    pub current: u64,
    /// `*mut TraceRecord`, `n_tasks` records, or 0.
    pub trace: u64,
    /// `*mut u32`, `sm_count` words, zero before the launch: how many blocks have claimed a rank
    /// on each SM. 0 unless `per_sm` is set.
    pub sm_slots: u64,
    /// `*const u32`, `n_tasks` words: each task's affine parent, `u32::MAX` for none. 0 unless the
    /// policy is [`policy::AFFINITY`].
    pub affine: u64,
    /// `*mut u32`, `n_tasks` words: the worker that ran each task (`u32::MAX` before). 0 unless
    /// the policy is [`policy::AFFINITY`].
    pub ran_by: u64,
    /// SMs on the GPU: `sm_slots` has one more word.
    pub sm_count: u32,
    /// SM-aware workers: the first SM the region uses.
    pub sm_first: u32,
    /// SM-aware workers: how many SMs, from `sm_first`, the region uses.
    pub sm_len: u32,
    /// SM-aware workers: active workers per SM; `n_workers == sm_len * per_sm`. 0: the default,
    /// block `b` is worker `b`.
    pub per_sm: u32,
    /// `*mut u32`, two words, zero before the launch and left zero by it: the gate and the
    /// leaving count of the workers' own reset at the end of the run ([`crate::sched::finish`]).
    /// 0: the workers leave the tables as the run left them.
    pub finish: u64,
    /// With `finish`: the device address of the tables the workers write...
    pub written: u64,
    /// ...their length in bytes, a multiple of 8...
    pub written_bytes: u64,
    /// ...and of their pristine copy, which the workers copy over them.
    pub pristine: u64,
    /// With `finish`: `*mut ErrorRecord` in the host's mapped pinned memory, where the last worker
    /// to arrive copies the error record.
    pub error_out: u64,
    /// With `finish`: `*mut u32` in the host's mapped pinned memory, set to 1 by the last worker
    /// to leave, once the tables are reset (the host clears it before each launch).
    pub done_out: u64,
    /// With [`FLAG_STREAM`]: `*mut u32`, one cross-edge list head per task
    /// ([`crate::sched::stream`]); `n_tasks` is then the tables' capacity.
    pub stream_heads: u64,
    /// With [`FLAG_STREAM`]: `*mut u32`, [`crate::sched::stream::EDGE_WORDS`] words per cross edge,
    /// `stream_edges_len` edges.
    pub stream_edges: u64,
    /// With [`FLAG_STREAM`]: `*mut u32`, the stream's [`crate::sched::stream::WORDS`] words: the
    /// region's task count once the last batch is published
    /// ([`crate::sched::stream::UNKNOWN_TOTAL`] before), the links published and the links
    /// claimed.
    pub stream_total: u64,
    /// With [`FLAG_STREAM`]: `*mut u32`, [`crate::sched::stream::LINK_WORDS`] words per link (a
    /// task whose cross edges the workers link), `stream_links_len` links.
    pub stream_links: u64,
    /// With [`FLAG_STREAM`]: the cross edges `stream_edges` has room for.
    pub stream_edges_len: u32,
    /// With [`FLAG_STREAM`]: the links `stream_links` has room for.
    pub stream_links_len: u32,
}

/// Counters every worker updates, each on its own 128-byte line so they do not contend.
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug)]
pub struct Counters {
    /// Tasks finished.
    pub completed: u32,
    /// Padding to the next line.
    pub pad0: [u32; 31],
    /// The global round-robin cursor.
    pub grr: u32,
    /// Padding to the next line.
    pub pad1: [u32; 31],
    /// The slots where wide tasks' gangs form ([`gang::Slots`](crate::gang::Slots)): the mask of
    /// those in use, how many the run may use, then the slots, each a task or
    /// [`gang::EMPTY`](crate::gang::EMPTY); every completed run leaves the mask zero and the slots
    /// empty.
    pub gang: [u32; crate::gang::LINE_WORDS],
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            completed: 0,
            pad0: [0; 31],
            grr: 0,
            pad1: [0; 31],
            gang: {
                let mut line = [crate::gang::EMPTY; crate::gang::LINE_WORDS];
                line[crate::gang::MASK] = 0;
                line[crate::gang::COUNT] = 1;
                line
            },
        }
    }
}

/// What one worker did, written once when it exits.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Tasks run.
    pub tasks: u32,
    /// Polls of an empty queue.
    pub idle_polls: u32,
    /// Tasks taken from another worker's queue.
    pub steals: u32,
    /// Tasks run as a local continuation, without a queue round trip.
    pub continuations: u32,
    /// Clock ticks spent inside task bodies: SM cycles (`%clock64`) on the GPU, nanoseconds on the
    /// CPU backend.
    pub busy_ticks: u64,
    /// The SM (GPU) or core (CPU) the worker ran on.
    pub sm: u32,
    /// Padding; zero.
    pub reserved: u32,
}

/// When and where one task ran (`%globaltimer` nanoseconds on the GPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceRecord {
    /// Start of the body.
    pub start: u64,
    /// End of the body.
    pub end: u64,
    /// The worker that ran it.
    pub worker: u32,
    /// Its SM or core.
    pub sm: u32,
}
