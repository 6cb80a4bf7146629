//! Where the worker loop finds a region's tables.
//!
//! 1. [`WorkerView`] holds every table of a [`RegionDesc`] as a slice. The CPU backend's workers and
//!    the GPU's one-task and grid-barrier kernels use it as it is.
//! 2. The persistent GPU kernel does not: a loop that holds ~20 slices keeps ~80 registers busy
//!    for its whole life, in every thread, on top of the task body's. Each block instead publishes
//!    the tables once, at kernel entry, in a small header in its shared memory
//!    (`BlockTables::publish`), and the loop reads a table's address and length where it uses
//!    it: a shared-memory load (about 30 cycles) that neither LLVM nor `ptxas` hoists out of the
//!    loop into a register.
//! 3. The worker loop is written once against [`Tables`], which both implement.

use super::queue::Queues;
use super::stream::{EDGE_WORDS, LINK_WORDS, Stream, WORDS};
use crate::abi::{
    ArrayDesc, Counters, FLAG_GANGS, FLAG_STREAM, RegionDesc, TaskRecord, TraceRecord, WorkerStats,
};
use crate::atomic::AtomicU32;

/// A region's tables, as the worker loop reaches them. Each call may load from memory: a caller
/// takes a table when it needs it, not once for the whole loop.
pub trait Tables<'a> {
    /// Tasks in the region.
    fn n_tasks(&self) -> u32;
    /// The region's [`policy`](crate::abi::policy).
    fn policy(&self) -> u32;
    /// The region's `FLAG_*` bits.
    fn flags(&self) -> u32;
    /// Each task's kind and first argument word, `n_tasks + 1` records.
    fn tasks(&self) -> Table<'a, TaskRecord>;
    /// The argument words.
    fn args(&self) -> Table<'a, u64>;
    /// The region's arrays (on the GPU, the block's shared copy when it has one).
    fn arrays(&self) -> &'a [ArrayDesc];
    /// The CSR row offsets, `n_tasks + 1`.
    fn offsets(&self) -> Table<'a, u32>;
    /// The CSR children.
    fn children(&self) -> Table<'a, u32>;
    /// Unfinished parents per task.
    fn pending(&self) -> &'a [AtomicU32];
    /// Critical-path bottom levels.
    fn rank(&self) -> &'a [u32];
    /// Each task's affine parent (the affinity policy; empty otherwise).
    fn affine(&self) -> &'a [u32];
    /// The worker that ran each task (the affinity policy; empty otherwise).
    fn ran_by(&self) -> &'a [AtomicU32];
    /// The worker queues.
    fn queues(&self) -> Queues<'a>;
    /// Worker queues, one per worker.
    fn workers(&self) -> u32;
    /// The completed-task count.
    fn completed(&self) -> &'a AtomicU32;
    /// The global round-robin cursor.
    fn grr(&self) -> &'a AtomicU32;
    /// The abort flag, if the region has one.
    fn abort(&self) -> Option<&'a AtomicU32>;
    /// One statistics record per worker, or null.
    fn stats(&self) -> *mut WorkerStats;
    /// The task each worker runs, for the watchdog.
    fn current(&self) -> &'a [AtomicU32];
    /// One trace record per task, or null.
    fn trace(&self) -> *mut TraceRecord;

    /// A streamed region's cross-edge lists, links and words ([`FLAG_STREAM`], see
    /// [`stream`](super::stream)); `None` otherwise.
    #[inline(always)]
    fn stream(&self) -> Option<Stream<'a>> {
        None
    }

    /// The count of completed tasks at which the region ends: its tasks, or a streamed region's
    /// total once the host has published it.
    #[inline(always)]
    fn total(&self) -> u32 {
        if self.flags() & FLAG_STREAM == 0 {
            return self.n_tasks();
        }
        self.streamed_total()
    }

    /// [`Tables::total`] of a streamed region. Out of line, as every stream path of the worker
    /// loop: a region that does not stream pays a flag test for them, not their registers.
    #[inline(never)]
    fn streamed_total(&self) -> u32 {
        self.stream().map_or(self.n_tasks(), |s| s.total())
    }

    /// The gang words of a region with wide tasks ([`FLAG_GANGS`]): two per task, after the
    /// dependence counters (see [`crate::gang`]); empty otherwise.
    #[inline(always)]
    fn gangs(&self) -> &'a [AtomicU32] {
        if self.flags() & FLAG_GANGS == 0 {
            return &[];
        }
        let n = self.n_tasks() as usize;
        // SAFETY: with `FLAG_GANGS` the host allocates `3 * n_tasks` words of `pending` (see
        // `RegionDesc::pending`); the last `2 * n_tasks` are the gang words. The pointer is made
        // from the table's address, not from the `n_tasks`-long slice.
        unsafe {
            core::slice::from_raw_parts(
                (self.pending().as_ptr() as usize as *const AtomicU32).add(n),
                2 * n,
            )
        }
    }

    /// The slots where gangs form ([`Counters::gang`]).
    #[inline(always)]
    fn gang_slots(&self) -> crate::gang::Slots<'a> {
        const WORD: usize = core::mem::offset_of!(Counters, gang) / 4;
        // SAFETY: `completed` is the first word of the region's `Counters`, which holds the
        // `LINE_WORDS` words of `gang` from `WORD` words after it; the pointer is made from the
        // table's address.
        let line = unsafe {
            core::slice::from_raw_parts(
                (core::ptr::from_ref(self.completed()) as usize as *const AtomicU32).add(WORD),
                crate::gang::LINE_WORDS,
            )
        };
        crate::gang::Slots::new(line)
    }

    /// Task `task`'s kind and argument words.
    #[inline(always)]
    fn task(&self, task: u32) -> (u32, &'a [u64]) {
        let t = task as usize;
        debug_assert!(t < self.n_tasks() as usize);
        let tasks = self.tasks();
        // SAFETY: `tasks` has `n_tasks + 1` records whose `args` are non-decreasing offsets into
        // `args`, and `task < n_tasks` comes from the queues or CSR.
        unsafe {
            let record = tasks.get(t);
            let end = tasks.args(t + 1) as usize;
            (record.kind, self.args().range(record.args as usize..end))
        }
    }
}

/// A table the workers only read, reached entry by entry: no reference covers the whole of it,
/// for a streamed region's host appends to it while they run (see [`stream`](super::stream)).
/// A reference is made only to a range already published, which nobody writes again.
#[derive(Clone, Copy)]
pub struct Table<'a, T> {
    ptr: *const T,
    len: usize,
    life: core::marker::PhantomData<&'a [T]>,
}

impl<'a, T: Copy> Table<'a, T> {
    /// The table of a slice.
    #[inline(always)]
    pub fn of(slice: &'a [T]) -> Self {
        Self {
            ptr: slice.as_ptr(),
            len: slice.len(),
            life: core::marker::PhantomData,
        }
    }

    /// The table of `len` entries at `addr` (none when `len == 0`).
    ///
    /// # Safety
    /// `addr` must be valid for reads of `len` entries of `T` for `'a`.
    #[inline(always)]
    pub unsafe fn from_raw(addr: u64, len: usize) -> Self {
        Self {
            ptr: if len == 0 {
                core::ptr::NonNull::dangling().as_ptr()
            } else {
                addr as *const T
            },
            len,
            life: core::marker::PhantomData,
        }
    }

    /// Its entries.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has none.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i`, unchecked in release builds.
    ///
    /// # Safety
    /// `i < len`, and entry `i` is published (nobody writes it any more).
    #[inline(always)]
    pub unsafe fn get(&self, i: usize) -> T {
        debug_assert!(
            i < self.len,
            "scheduler table index {i} out of {}",
            self.len
        );
        // SAFETY: the caller's promise.
        unsafe { self.ptr.add(i).read() }
    }

    /// Entries `range`, unchecked in release builds.
    ///
    /// # Safety
    /// `range` lies within the table and is published.
    #[inline(always)]
    pub unsafe fn range(&self, range: core::ops::Range<usize>) -> &'a [T] {
        debug_assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: the caller's promise.
        unsafe { core::slice::from_raw_parts(self.ptr.add(range.start), range.end - range.start) }
    }
}

impl Table<'_, TaskRecord> {
    /// The first argument word of record `i` (a field read alone: the host may be writing the
    /// kind, of the first task of a batch not yet published, while a worker reads the `args` of
    /// that record as the end of the task before).
    ///
    /// # Safety
    /// As for [`Table::get`], for the field.
    #[inline(always)]
    pub unsafe fn args(&self, i: usize) -> u32 {
        debug_assert!(i < self.len);
        // SAFETY: the caller's promise; no reference to the record is made.
        unsafe { (*self.ptr.add(i)).args }
    }
}

/// A region's tables, viewed from a worker: each one held as a slice.
pub struct WorkerView<'a> {
    n_tasks: u32,
    policy: u32,
    flags: u32,
    tasks: Table<'a, TaskRecord>,
    args: Table<'a, u64>,
    arrays: &'a [ArrayDesc],
    offsets: Table<'a, u32>,
    children: Table<'a, u32>,
    pending: &'a [AtomicU32],
    rank: &'a [u32],
    affine: &'a [u32],
    ran_by: &'a [AtomicU32],
    next: &'a [AtomicU32],
    head: &'a [AtomicU32],
    tail: &'a [AtomicU32],
    lock: &'a [AtomicU32],
    completed: &'a AtomicU32,
    grr: &'a AtomicU32,
    abort: Option<&'a AtomicU32>,
    stats: *mut WorkerStats,
    current: &'a [AtomicU32],
    trace: *mut TraceRecord,
    stream: Option<Stream<'a>>,
}

// SAFETY: the raw `stats` and `trace` tables are written at distinct indices by distinct workers.
unsafe impl Sync for WorkerView<'_> {}

/// # Safety
/// `ptr` must be valid for `len` elements of `T` for `'a` (or `len == 0`).
unsafe fn table<'a, T>(ptr: u64, len: usize) -> &'a [T] {
    if len == 0 {
        return &[];
    }
    // SAFETY: guaranteed by the caller.
    unsafe { core::slice::from_raw_parts(ptr as *const T, len) }
}

impl<'a> WorkerView<'a> {
    /// Views the tables `desc` points to.
    ///
    /// # Safety
    /// Every pointer in `desc` must be valid for the length the [`abi`](crate::abi) docs give it,
    /// for `'a`, and the tables the workers write must not be accessed non-atomically meanwhile.
    pub unsafe fn from_desc(desc: &'a RegionDesc) -> Self {
        let n = desc.n_tasks as usize;
        let w = desc.n_workers as usize;
        // The affinity policy's tables; empty (null) under the others.
        let per_task = |ptr: u64| if ptr == 0 { 0 } else { n };
        // SAFETY: each table's length is the documented one; the caller vouches for the pointers.
        unsafe {
            // Entry by entry (see `Table`): the last offset and record bound the CSR and the
            // argument words.
            let offsets: Table<u32> = Table::from_raw(desc.offsets, n + 1);
            let tasks: Table<TaskRecord> = Table::from_raw(desc.tasks, n + 1);
            let counters = desc.counters as *mut Counters;
            Self {
                n_tasks: desc.n_tasks,
                policy: desc.policy,
                flags: desc.flags,
                tasks,
                args: Table::from_raw(desc.args, tasks.args(n) as usize),
                arrays: table(desc.arrays, desc.n_arrays as usize),
                offsets,
                children: Table::from_raw(desc.children, offsets.get(n) as usize),
                pending: table(desc.pending, n),
                rank: table(desc.rank, n),
                affine: table(desc.affine, per_task(desc.affine)),
                ran_by: table(desc.ran_by, per_task(desc.ran_by)),
                next: table(desc.next, n + w),
                head: table(desc.head, w),
                tail: table(desc.tail, w),
                lock: table(desc.lock, w),
                completed: AtomicU32::from_ptr(&raw mut (*counters).completed),
                grr: AtomicU32::from_ptr(&raw mut (*counters).grr),
                abort: (desc.abort != 0).then(|| AtomicU32::from_ptr(desc.abort as *mut u32)),
                stats: desc.stats as *mut WorkerStats,
                current: table(desc.current, w),
                trace: desc.trace as *mut TraceRecord,
                stream: (desc.flags & FLAG_STREAM != 0).then(|| Stream {
                    heads: table(desc.stream_heads, n),
                    edges: table(
                        desc.stream_edges,
                        desc.stream_edges_len as usize * EDGE_WORDS,
                    ),
                    links: table(
                        desc.stream_links,
                        desc.stream_links_len as usize * LINK_WORDS,
                    ),
                    words: table(desc.stream_total, WORDS),
                }),
            }
        }
    }
}

impl<'a> Tables<'a> for WorkerView<'a> {
    #[inline(always)]
    fn n_tasks(&self) -> u32 {
        self.n_tasks
    }
    #[inline(always)]
    fn policy(&self) -> u32 {
        self.policy
    }
    #[inline(always)]
    fn flags(&self) -> u32 {
        self.flags
    }
    #[inline(always)]
    fn tasks(&self) -> Table<'a, TaskRecord> {
        self.tasks
    }
    #[inline(always)]
    fn args(&self) -> Table<'a, u64> {
        self.args
    }
    #[inline(always)]
    fn arrays(&self) -> &'a [ArrayDesc] {
        self.arrays
    }
    #[inline(always)]
    fn offsets(&self) -> Table<'a, u32> {
        self.offsets
    }
    #[inline(always)]
    fn children(&self) -> Table<'a, u32> {
        self.children
    }
    #[inline(always)]
    fn pending(&self) -> &'a [AtomicU32] {
        self.pending
    }
    #[inline(always)]
    fn rank(&self) -> &'a [u32] {
        self.rank
    }
    #[inline(always)]
    fn affine(&self) -> &'a [u32] {
        self.affine
    }
    #[inline(always)]
    fn ran_by(&self) -> &'a [AtomicU32] {
        self.ran_by
    }
    #[inline(always)]
    fn queues(&self) -> Queues<'a> {
        Queues::new(self.next, self.head, self.tail, self.lock, self.n_tasks)
    }
    #[inline(always)]
    fn workers(&self) -> u32 {
        self.head.len() as u32
    }
    #[inline(always)]
    fn completed(&self) -> &'a AtomicU32 {
        self.completed
    }
    #[inline(always)]
    fn grr(&self) -> &'a AtomicU32 {
        self.grr
    }
    #[inline(always)]
    fn abort(&self) -> Option<&'a AtomicU32> {
        self.abort
    }
    #[inline(always)]
    fn stats(&self) -> *mut WorkerStats {
        self.stats
    }
    #[inline(always)]
    fn current(&self) -> &'a [AtomicU32] {
        self.current
    }
    #[inline(always)]
    fn trace(&self) -> *mut TraceRecord {
        self.trace
    }
    #[inline(always)]
    fn stream(&self) -> Option<Stream<'a>> {
        self.stream
    }
}

#[cfg(target_arch = "nvptx64")]
pub use gpu::BlockTables;

#[cfg(target_arch = "nvptx64")]
mod gpu {
    use core::arch::{asm, global_asm};
    use core::marker::PhantomData;
    use core::mem::offset_of;

    use super::{EDGE_WORDS, LINK_WORDS, Stream, Table, Tables, WORDS, WorkerView};
    use crate::abi::{ArrayDesc, FLAG_STREAM, RegionDesc, TaskRecord, TraceRecord, WorkerStats};
    use crate::atomic::AtomicU32;
    use crate::sched::queue::Queues;

    /// One table in the header: its address and length (in elements).
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct Slot {
        addr: u64,
        len: u64,
    }

    impl Slot {
        fn of<T>(table: &[T]) -> Self {
            debug_assert!(u32::try_from(table.len()).is_ok());
            Self {
                addr: table.as_ptr() as u64,
                len: table.len() as u64,
            }
        }

        fn of_table<T: Copy>(table: Table<'_, T>) -> Self {
            debug_assert!(u32::try_from(table.len()).is_ok());
            Self {
                addr: table.ptr as u64,
                len: table.len() as u64,
            }
        }
    }

    /// What a block publishes in its shared memory: the [`WorkerView`]'s tables, flattened.
    #[repr(C)]
    struct Header {
        tasks: Slot,
        args: Slot,
        arrays: Slot,
        offsets: Slot,
        children: Slot,
        pending: Slot,
        rank: Slot,
        affine: Slot,
        ran_by: Slot,
        next: Slot,
        head: Slot,
        tail: Slot,
        lock: Slot,
        current: Slot,
        /// `completed`, `grr`.
        counters: Slot,
        /// `abort` (0: none), `stats`.
        abort_stats: Slot,
        /// `trace`, and the scalars: `n_tasks | policy << 32`.
        trace_tasks: Slot,
        /// `flags`, and a streamed region's cross-edge and link counts (`edges | links << 32`).
        flags: Slot,
        /// A streamed region's list heads and cross edges ([`Stream`]); zeros otherwise.
        stream_lists: Slot,
        /// A streamed region's links and words ([`Stream`]); zeros otherwise.
        stream_links: Slot,
    }

    global_asm!(
        ".shared .align 16 .b8 tw_tables[{bytes}];",
        bytes = const core::mem::size_of::<Header>(),
    );

    /// Loads the two words of the header's slot at byte offset `OFF`: `ld.volatile.shared`, so that
    /// `ptxas` keeps every load where it is; `pure` (without `volatile`'s side effects in LLVM), so
    /// that an unused one is dropped, yet any store or call between two reads makes LLVM read
    /// again.
    #[inline(always)]
    fn slot<const OFF: usize>() -> (u64, u64) {
        let (a, b): (u64, u64);
        // SAFETY: reads 16 bytes inside the block's header, which `publish` wrote before the
        // barrier every reader passed, and which nobody writes afterwards.
        unsafe {
            asm!(
                "ld.volatile.shared.v2.u64 {{{0}, {1}}}, [tw_tables+{off}];",
                out(reg64) a, out(reg64) b, off = const OFF,
                options(pure, readonly, nostack, preserves_flags)
            )
        };
        (a, b)
    }

    macro_rules! put {
        ($field:ident, $slot:expr) => {
            put::<{ offset_of!(Header, $field) }>($slot)
        };
    }

    /// The header's slots of the tables the hop reads most; `copied`: the array table is in
    /// shared memory.
    ///
    /// # Safety
    /// As for [`BlockTables::publish`].
    #[inline(never)]
    unsafe fn publish_tables(desc: &RegionDesc, copied: bool) {
        // SAFETY: forwarded.
        let rt = unsafe { WorkerView::from_desc(desc) };
        put!(tasks, Slot::of_table(rt.tasks));
        put!(args, Slot::of_table(rt.args));
        let arrays = Slot::of(rt.arrays);
        put!(
            arrays,
            if copied {
                Slot {
                    addr: crate::shared::array_table() as u64,
                    len: arrays.len,
                }
            } else {
                arrays
            }
        );
        put!(offsets, Slot::of_table(rt.offsets));
        put!(children, Slot::of_table(rt.children));
        put!(pending, Slot::of(rt.pending));
    }

    /// The header's slots of the queues and the affinity policy's tables.
    ///
    /// # Safety
    /// As for [`BlockTables::publish`].
    #[inline(never)]
    unsafe fn publish_queues(desc: &RegionDesc) {
        // SAFETY: forwarded.
        let rt = unsafe { WorkerView::from_desc(desc) };
        put!(rank, Slot::of(rt.rank));
        put!(affine, Slot::of(rt.affine));
        put!(ran_by, Slot::of(rt.ran_by));
        put!(next, Slot::of(rt.next));
        put!(head, Slot::of(rt.head));
        put!(tail, Slot::of(rt.tail));
    }

    /// The header's other slots: the locks, the counters and flags, the records.
    ///
    /// # Safety
    /// As for [`BlockTables::publish`].
    #[inline(never)]
    unsafe fn publish_rest(desc: &RegionDesc) {
        // SAFETY: forwarded.
        let rt = unsafe { WorkerView::from_desc(desc) };
        put!(lock, Slot::of(rt.lock));
        put!(current, Slot::of(rt.current));
        put!(
            counters,
            Slot {
                addr: core::ptr::from_ref(rt.completed) as u64,
                len: core::ptr::from_ref(rt.grr) as u64,
            }
        );
        put!(
            abort_stats,
            Slot {
                addr: rt.abort.map_or(0, |a| core::ptr::from_ref(a) as u64),
                len: rt.stats as u64,
            }
        );
        put!(
            trace_tasks,
            Slot {
                addr: rt.trace as u64,
                len: u64::from(rt.n_tasks) | u64::from(rt.policy) << 32,
            }
        );
        let (lists, links, counts) = match rt.stream {
            Some(s) => (
                Slot {
                    addr: s.heads.as_ptr() as u64,
                    len: s.edges.as_ptr() as u64,
                },
                Slot {
                    addr: s.links.as_ptr() as u64,
                    len: s.words.as_ptr() as u64,
                },
                (s.edges.len() / EDGE_WORDS) as u64 | ((s.links.len() / LINK_WORDS) as u64) << 32,
            ),
            None => (Slot { addr: 0, len: 0 }, Slot { addr: 0, len: 0 }, 0),
        };
        put!(
            flags,
            Slot {
                addr: u64::from(rt.flags),
                len: counts,
            }
        );
        put!(stream_lists, lists);
        put!(stream_links, links);
    }

    /// Stores `slot` at byte offset `OFF` of the header (see [`BlockTables::publish`]).
    #[inline(always)]
    fn put<const OFF: usize>(slot: Slot) {
        // SAFETY: writes 16 bytes inside the block's header, before the barrier that publishes it.
        unsafe {
            asm!(
                "st.volatile.shared.v2.u64 [tw_tables+{off}], {{{0}, {1}}};",
                in(reg64) slot.addr, in(reg64) slot.len, off = const OFF,
                options(nostack, preserves_flags)
            )
        };
    }

    macro_rules! slice {
        ($field:ident) => {{
            let (addr, len) = slot::<{ offset_of!(Header, $field) }>();
            // SAFETY: `publish` copied a live slice of this element type, for `'a`; its length fits
            // 32 bits (tasks, edges, words and arrays are counted in `u32`), which tells the
            // compiler that its high word is zero.
            unsafe { core::slice::from_raw_parts(addr as *const _, len as u32 as usize) }
        }};
    }

    /// The tables of the block's persistent worker, read from the header in its shared memory
    /// where they are used. Every thread of the block holds one; it holds nothing itself.
    #[derive(Clone, Copy)]
    pub struct BlockTables<'a>(PhantomData<&'a ()>);

    impl<'a> BlockTables<'a> {
        /// Writes the tables of `desc` into the block's header, and copies its array table into
        /// the block's shared memory when it fits (it is read at every task). One thread of the
        /// block calls it, at kernel entry; a block barrier must follow before any thread reads the
        /// tables.
        ///
        /// # Safety
        /// `desc` must be valid as for [`WorkerView::from_desc`], for the launch.
        pub unsafe fn publish(desc: &RegionDesc) {
            let n = desc.n_arrays as usize;
            let copied = n <= crate::shared::SHARED_ARRAYS;
            if copied {
                let copy = crate::shared::array_table();
                for i in 0..n {
                    // SAFETY: `arrays` holds `n_arrays` records; `i < n <= SHARED_ARRAYS`, the
                    // copy's length.
                    unsafe {
                        copy.add(i)
                            .write((desc.arrays as *const ArrayDesc).add(i).read())
                    };
                }
            }
            // In three parts, each out of line, so that few values are live at once.
            // SAFETY: forwarded.
            unsafe {
                publish_tables(desc, copied);
                publish_queues(desc);
                publish_rest(desc);
            }
        }

        /// The tables [`publish`](Self::publish) wrote.
        ///
        /// # Safety
        /// They were published, before a block barrier that the caller has passed, and live for
        /// `'a`.
        pub unsafe fn published() -> Self {
            Self(PhantomData)
        }
    }

    impl<'a> Tables<'a> for BlockTables<'a> {
        #[inline(always)]
        fn n_tasks(&self) -> u32 {
            slot::<{ offset_of!(Header, trace_tasks) }>().1 as u32
        }
        #[inline(always)]
        fn policy(&self) -> u32 {
            (slot::<{ offset_of!(Header, trace_tasks) }>().1 >> 32) as u32
        }
        #[inline(always)]
        fn flags(&self) -> u32 {
            slot::<{ offset_of!(Header, flags) }>().0 as u32
        }
        #[inline(always)]
        fn tasks(&self) -> Table<'a, TaskRecord> {
            Table::of(slice!(tasks))
        }
        #[inline(always)]
        fn args(&self) -> Table<'a, u64> {
            Table::of(slice!(args))
        }
        #[inline(always)]
        fn arrays(&self) -> &'a [ArrayDesc] {
            slice!(arrays)
        }
        #[inline(always)]
        fn offsets(&self) -> Table<'a, u32> {
            Table::of(slice!(offsets))
        }
        #[inline(always)]
        fn children(&self) -> Table<'a, u32> {
            Table::of(slice!(children))
        }
        #[inline(always)]
        fn pending(&self) -> &'a [AtomicU32] {
            slice!(pending)
        }
        #[inline(always)]
        fn rank(&self) -> &'a [u32] {
            slice!(rank)
        }
        #[inline(always)]
        fn affine(&self) -> &'a [u32] {
            slice!(affine)
        }
        #[inline(always)]
        fn ran_by(&self) -> &'a [AtomicU32] {
            slice!(ran_by)
        }
        #[inline(always)]
        fn queues(&self) -> Queues<'a> {
            Queues::new(
                slice!(next),
                slice!(head),
                slice!(tail),
                slice!(lock),
                self.n_tasks(),
            )
        }
        #[inline(always)]
        fn workers(&self) -> u32 {
            slot::<{ offset_of!(Header, head) }>().1 as u32
        }
        #[inline(always)]
        fn completed(&self) -> &'a AtomicU32 {
            let addr = slot::<{ offset_of!(Header, counters) }>().0;
            // SAFETY: `publish` copied a live reference.
            unsafe { &*(addr as *const AtomicU32) }
        }
        #[inline(always)]
        fn grr(&self) -> &'a AtomicU32 {
            let addr = slot::<{ offset_of!(Header, counters) }>().1;
            // SAFETY: `publish` copied a live reference.
            unsafe { &*(addr as *const AtomicU32) }
        }
        #[inline(always)]
        fn abort(&self) -> Option<&'a AtomicU32> {
            let addr = slot::<{ offset_of!(Header, abort_stats) }>().0;
            // SAFETY: `publish` copied a live reference, or 0 for none.
            unsafe { (addr as *const AtomicU32).as_ref() }
        }
        #[inline(always)]
        fn stats(&self) -> *mut WorkerStats {
            slot::<{ offset_of!(Header, abort_stats) }>().1 as *mut WorkerStats
        }
        #[inline(always)]
        fn current(&self) -> &'a [AtomicU32] {
            slice!(current)
        }
        #[inline(always)]
        fn trace(&self) -> *mut TraceRecord {
            slot::<{ offset_of!(Header, trace_tasks) }>().0 as *mut TraceRecord
        }
        #[inline(always)]
        fn stream(&self) -> Option<Stream<'a>> {
            let (flags, counts) = slot::<{ offset_of!(Header, flags) }>();
            if flags as u32 & FLAG_STREAM == 0 {
                return None;
            }
            let (heads, edges) = slot::<{ offset_of!(Header, stream_lists) }>();
            let (links, words) = slot::<{ offset_of!(Header, stream_links) }>();
            let (edges_len, links_len) = (counts as u32 as usize, (counts >> 32) as usize);
            // SAFETY: `publish` copied the live tables of a streamed region's descriptor, of these
            // lengths: one head per task of the capacity, `EDGE_WORDS` words per cross edge,
            // `LINK_WORDS` per link, and the stream's `WORDS`.
            unsafe {
                Some(Stream {
                    heads: core::slice::from_raw_parts(heads as *const _, self.n_tasks() as usize),
                    edges: core::slice::from_raw_parts(edges as *const _, edges_len * EDGE_WORDS),
                    links: core::slice::from_raw_parts(links as *const _, links_len * LINK_WORDS),
                    words: core::slice::from_raw_parts(words as *const _, WORDS),
                })
            }
        }
    }
}
