//! The layout of a run's scheduler tables on the GPU, built on the host without a GPU (and
//! tested here): the host image of the one allocation that holds them, where each table is in it,
//! and the descriptor that points at them once the allocation's address is known.
//!
//! The allocation holds, in order: the tables no worker writes (tasks, arguments, CSR, ranks,
//! affine parents); the tables the workers write, side by side (the error record, statistics,
//! current tasks, trace, dependence counters, queues, counters, abort flag, who ran what, SM
//! slots); when the workers reset them themselves ([`Keep::OnDevice`]), the two words they meet on
//! (`sched::finish`); when the tables are kept, a pristine copy of those two parts; and room for
//! the first array table and descriptor ([`DescSlot`]).

use std::ops::Range;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use taskweave_device::abi::{ArrayDesc, ListedTask, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::error::ErrorRecord;

use crate::graph::MAX_SPARE_BYTES;
use crate::inspect::Inspection;
use crate::options::Options;
use crate::policy::{Start, StartOf};
use crate::sm::SmLayout;
use crate::tables::{CounterWords, Tables};

/// The bytes of a slice of plain `repr(C)` records.
pub(crate) fn bytes_of<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: the ABI's `T: Copy` records are plain data; the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Bytes of one entry of a one-task kernel's list: entry `i` is at `list + i · LISTED`.
pub(crate) const LISTED: u64 = size_of::<ListedTask>() as u64;

/// The one-task kernels' list for `order`: each task with its record and where its arguments end
/// (see [`ListedTask`]).
pub(crate) fn listed(ins: &Inspection, order: impl IntoIterator<Item = u32>) -> Vec<ListedTask> {
    order
        .into_iter()
        .map(|task| {
            let (record, next) = (ins.tasks[task as usize], ins.tasks[task as usize + 1]);
            ListedTask {
                task,
                kind: record.kind,
                args: record.args,
                end: next.args,
            }
        })
        .collect()
}

/// Plain `repr(C)` records back from bytes.
pub(crate) fn records<T: Copy>(bytes: &[u8]) -> Vec<T> {
    // One bulk copy, not a read per record: the bytes are often mapped memory the GPU just wrote,
    // where each record read element by element cost a planned call about a microsecond more.
    let n = bytes.len() / size_of::<T>();
    let mut out = Vec::<T>::with_capacity(n);
    // SAFETY: `out` has room for `n` records, whose `n · size_of::<T>()` bytes lie in `bytes`; `T`
    // is a plain `repr(C)` ABI record, valid for any bytes, so every one is initialized.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            n * size_of::<T>(),
        );
        out.set_len(n);
    }
    out
}

/// Whether a run's tables are kept for the plan's next call, and who puts them back as they
/// started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// A run of its own: no pristine copy.
    No,
    /// The host copies the pristine tables back before the next call.
    OnHost,
    /// The workers copy them back at the end of each run (`sched::finish`), and leave the error
    /// record and their statistics in the host's mapped memory.
    OnDevice,
}

impl Keep {
    /// Whether the tables carry a pristine copy.
    pub fn kept(self) -> bool {
        self != Self::No
    }
}

/// The host image of an allocation of tables, each on its own 128-byte line (the `Counters`
/// record needs that alignment, and it keeps tables the workers write off each other's lines).
#[derive(Default)]
pub(super) struct Image {
    pub bytes: Vec<u8>,
}

/// Each region's last table image, emptied, for its next layout to write into: memory already in
/// use rather than fresh pages, which fault in one at a time (a region's inspection buffers are
/// kept likewise, in `graph/spare.rs`). At most [`MAX_SPARE_BYTES`] a region.
fn kept_images() -> std::sync::MutexGuard<'static, std::collections::HashMap<&'static str, Vec<u8>>>
{
    static KEPT: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<&'static str, Vec<u8>>>,
    > = std::sync::OnceLock::new();
    (KEPT.get_or_init(Default::default).lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Image {
    pub const ALIGN: usize = 128;

    /// An empty image with room for `bound` bytes, in the memory of `region`'s last image when
    /// it was kept ([`Image::keep`]).
    fn for_region(region: &'static str, bound: usize) -> Self {
        let mut bytes = kept_images().remove(region).unwrap_or_default();
        bytes.clear();
        bytes.reserve(bound);
        Self { bytes }
    }

    /// Keeps this image's memory for `region`'s next layout, unless it is larger than
    /// [`MAX_SPARE_BYTES`].
    pub fn keep(self, region: &'static str) {
        if self.bytes.capacity() <= MAX_SPARE_BYTES {
            kept_images().insert(region, self.bytes);
        }
    }

    /// The most bytes a table of `bytes` takes.
    fn padded(bytes: usize) -> usize {
        bytes.max(8).next_multiple_of(Self::ALIGN)
    }

    /// Appends `bytes` (at least 8, so that an empty table still has an address of its own);
    /// returns its offset.
    fn put(&mut self, bytes: &[u8]) -> usize {
        let offset = self.bytes.len().next_multiple_of(Self::ALIGN);
        self.bytes.resize(offset + bytes.len().max(8), 0);
        self.bytes[offset..offset + bytes.len()].copy_from_slice(bytes);
        offset
    }

    /// Appends `bytes` zeroed bytes; returns the offset.
    fn zeros(&mut self, bytes: usize) -> usize {
        let offset = self.bytes.len().next_multiple_of(Self::ALIGN);
        self.bytes.resize(offset + bytes.max(8), 0);
        offset
    }

    /// Pads to the next line.
    fn align(&mut self) -> usize {
        let offset = self.bytes.len().next_multiple_of(Self::ALIGN);
        self.bytes.resize(offset, 0);
        offset
    }
}

/// The bytes of one array table and descriptor: the table, then the descriptor on its own line.
pub(super) fn slot_bytes(arrays: usize) -> usize {
    Image::padded(arrays * size_of::<ArrayDesc>()) + size_of::<RegionDesc>()
}

/// The bytes of the tables [`Layout::new`] lays out, at most: each table padded to its line, the
/// tables the workers write (and the finish's words) twice when `keep` asks for a pristine copy,
/// and the first array table and descriptor.
pub(super) fn tables_bytes(
    ins: &Inspection,
    options: &Options,
    workers: u32,
    sms: Option<&SmLayout>,
    arrays: usize,
    keep: Keep,
) -> u64 {
    let (n, w) = (ins.task_count(), workers as usize);
    let affinity = options.run_policy().row().records_ran_by && n > 0;
    let fixed = [
        size_of_val(ins.tasks.as_slice()),
        size_of_val(ins.args.as_slice()),
        size_of_val(ins.dag.offsets.as_slice()),
        size_of_val(ins.dag.children.as_slice()),
        size_of_val(ins.dag.rank.as_slice()),
        if affinity { n * 4 } else { 0 },
    ];
    let written = [
        size_of::<ErrorRecord>(),
        w * size_of::<WorkerStats>(),
        w * 4,
        if options.trace {
            n * size_of::<TraceRecord>()
        } else {
            0
        },
        n * 4,
        (n + w) * 4,
        w * 4,
        w * 4,
        w * 4,
        size_of::<CounterWords>(),
        8,
        if affinity { n * 4 } else { 0 },
        sms.map_or(0, |layout| (layout.sm_count as usize + 1) * 4),
        if keep == Keep::OnDevice { 8 } else { 0 },
    ];
    let padded = |b: &usize| Image::padded(*b) as u64;
    let written: u64 = written.iter().map(padded).sum();
    fixed.iter().map(padded).sum::<u64>()
        + written * if keep.kept() { 2 } else { 1 }
        + Image::padded(slot_bytes(arrays)) as u64
}

/// An array table and the descriptor that points at it, on the device.
pub(crate) struct DescSlot {
    /// The arrays' device addresses it was written for.
    pub addresses: Vec<u64>,
    /// The device address of the array table, and of the descriptor.
    pub arrays_ptr: u64,
    pub desc_ptr: u64,
    /// Its own allocation, for every slot but the one inside the tables' allocation.
    pub(super) buffer: Option<CudaSlice<u8>>,
}

/// Writes the array table `arrays` and a copy of `desc` pointing at it into `into`, which is at
/// device address `address`; returns the slot (without a buffer of its own).
pub(super) fn write_slot(
    into: &mut [u8],
    desc: &RegionDesc,
    arrays: &[ArrayDesc],
    address: u64,
) -> DescSlot {
    let table = bytes_of(arrays);
    into[..table.len()].copy_from_slice(table);
    let desc_at = Image::padded(table.len());
    let desc = RegionDesc {
        arrays: address,
        ..*desc
    };
    into[desc_at..desc_at + size_of::<RegionDesc>()]
        .copy_from_slice(bytes_of(std::slice::from_ref(&desc)));
    DescSlot {
        addresses: arrays.iter().map(|a| a.ptr).collect(),
        arrays_ptr: address,
        desc_ptr: address + desc_at as u64,
        buffer: None,
    }
}

/// Where each table is in the image, as offsets from its start; `None` for the tables a run does
/// without.
#[derive(Clone, Copy, Debug)]
pub(super) struct Offsets {
    pub tasks: usize,
    pub args: usize,
    pub csr_offsets: usize,
    pub children: usize,
    pub rank: usize,
    pub affine: Option<usize>,
    pub error: usize,
    pub stats: usize,
    pub current: usize,
    pub trace: Option<usize>,
    pub pending: usize,
    pub next: usize,
    pub head: usize,
    pub tail: usize,
    pub lock: usize,
    pub counters: usize,
    pub abort: usize,
    pub ran_by: Option<usize>,
    pub sm_slots: Option<usize>,
    pub finish: Option<usize>,
}

/// The host image of a run's tables and where everything is in it (see the module docs); built
/// without a GPU, so that the layout is tested on the CPU.
pub(super) struct Layout {
    pub image: Image,
    pub offsets: Offsets,
    /// The descriptor's fields that are not addresses.
    host: RegionDesc,
    pub error_len: usize,
    pub stats_len: usize,
    pub trace_len: usize,
    /// The tables the workers write and, when they reset them themselves, the finish's words after
    /// them: what the host's reset copies. Their pristine copy when kept.
    pub written: Range<usize>,
    pub pristine: Option<usize>,
    /// The tables the workers write, without the finish's words: what the workers' reset copies.
    pub own_reset: Range<usize>,
    /// Where the first array table and descriptor go.
    pub slot_at: usize,
    /// What the policy's tables took to build ([`Tables::new`]: the static plan, priorities).
    pub plan_time: Duration,
}

impl Layout {
    /// The tables of `ins` run under `options` by `workers` workers (placed by `sms`), for
    /// `arrays` arrays; when kept, a pristine copy of the tables the workers write follows them.
    /// `planned` may give the policy's start, made ahead of time (see [`Tables::new`]).
    pub fn new(
        ins: &Inspection,
        options: &Options,
        workers: u32,
        sms: Option<&SmLayout>,
        arrays: usize,
        keep: Keep,
        planned: impl FnOnce(&StartOf<'_>) -> Option<Start>,
    ) -> Self {
        let n = ins.task_count();
        let reserve = sms.map(SmLayout::reserve).unwrap_or_default();
        let planning = Instant::now();
        let mut tables = Tables::new(
            ins,
            workers,
            options.run_policy(),
            &reserve,
            options.task_costs.as_ref(),
            planned,
        );
        let plan_time = planning.elapsed();
        let host = tables.desc(ins, options.desc(workers, arrays));
        let host = sms.map_or(host, |layout| layout.desc(host));
        let dag = &ins.dag;
        let counters: Vec<u32> = tables
            .counters
            .0
            .iter()
            .map(|w| w.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        // Room for everything at once: a region of 350,000 tasks has a table image of tens of
        // megabytes, which growing by doubling would copy and fault in twice.
        let bound = tables_bytes(ins, options, workers, sms, arrays, keep);
        let mut image = Image::for_region(ins.region, usize::try_from(bound).unwrap_or(0));
        let (tasks, args) = (
            image.put(bytes_of(&ins.tasks)),
            image.put(bytes_of(&ins.args)),
        );
        let csr_offsets = image.put(bytes_of(&dag.offsets));
        let children = image.put(bytes_of(&tables.children));
        let rank = image.put(bytes_of(&dag.rank));
        let affine = tables.affine(ins);
        let affine = (!affine.is_empty()).then(|| image.put(bytes_of(affine)));
        let written_start = image.align();
        // The error record and the statistics side by side: one copy reads both.
        let error = image.put(bytes_of(std::slice::from_ref(&ErrorRecord::EMPTY)));
        let stats_len = workers as usize * size_of::<WorkerStats>();
        let stats = image.zeros(stats_len);
        let current = image.put(bytes_of(&vec![u32::MAX; workers as usize]));
        let trace_len = n * size_of::<TraceRecord>();
        let trace = options.trace.then(|| image.zeros(trace_len));
        let pending = image.put(bytes_of(&tables.pending));
        let next = image.put(bytes_of(&tables.next));
        let head = image.put(bytes_of(&tables.head));
        let tail = image.put(bytes_of(&tables.tail));
        let lock = image.put(bytes_of(&tables.lock));
        let counters = image.put(bytes_of(&counters));
        let abort = image.zeros(8);
        let ran_by = (!tables.ran_by.is_empty()).then(|| image.put(bytes_of(&tables.ran_by)));
        // One counter per SM, then the count of workers claimed (see `sched::sm`).
        let sm_slots = sms.map(|layout| image.zeros((layout.sm_count as usize + 1) * 4));
        let own_end = image.align();
        // The finish's two words, zero: outside the workers' own reset, inside the host's.
        let finish = (keep == Keep::OnDevice).then(|| image.zeros(8));
        let written_end = image.align();
        let pristine = keep.kept().then(|| {
            let copy = image.bytes[written_start..written_end].to_vec();
            image.put(&copy)
        });
        let slot_at = image.align();
        image.zeros(slot_bytes(arrays));
        Self {
            image,
            offsets: Offsets {
                tasks,
                args,
                csr_offsets,
                children,
                rank,
                affine,
                error,
                stats,
                current,
                trace,
                pending,
                next,
                head,
                tail,
                lock,
                counters,
                abort,
                ran_by,
                sm_slots,
                finish,
            },
            host,
            error_len: size_of::<ErrorRecord>(),
            stats_len,
            trace_len,
            written: written_start..written_end,
            pristine,
            own_reset: written_start..own_end,
            slot_at,
            plan_time,
        }
    }

    /// The descriptor of the tables placed at device address `base` (its array table left out).
    pub fn desc(&self, base: u64) -> RegionDesc {
        let o = &self.offsets;
        let at = |offset: usize| base + offset as u64;
        RegionDesc {
            tasks: at(o.tasks),
            args: at(o.args),
            arrays: 0,
            offsets: at(o.csr_offsets),
            children: at(o.children),
            pending: at(o.pending),
            rank: at(o.rank),
            next: at(o.next),
            head: at(o.head),
            tail: at(o.tail),
            lock: at(o.lock),
            counters: at(o.counters),
            abort: at(o.abort),
            error: at(o.error),
            stats: at(o.stats),
            current: at(o.current),
            trace: o.trace.map_or(0, at),
            affine: o.affine.map_or(0, at),
            ran_by: o.ran_by.map_or(0, at),
            sm_slots: o.sm_slots.map_or(0, at),
            // The workers' own reset: their words, what they reset, and from where. (The host's
            // mapped memory they write into is `DeviceTables`' to fill in.)
            finish: o.finish.map_or(0, at),
            written: o.finish.map_or(0, |_| at(self.own_reset.start)),
            written_bytes: o.finish.map_or(0, |_| self.own_reset.len() as u64),
            pristine: o.finish.and(self.pristine).map_or(0, at),
            ..self.host
        }
    }
}

#[cfg(test)]
mod tests {
    use std::panic::Location;

    use taskweave_device::sched::affinity::NOT_RUN;

    use super::*;
    use crate::graph::Reserve;
    use crate::inspect::{Access, ArrayInfo, Recorder};
    use crate::policy::Policy;

    /// 20 tasks over overlapping ranges of one array, some writing.
    fn inspection(ranges: bool) -> Inspection {
        inspection_of("layout", ranges)
    }

    /// [`inspection`] of a region named `region`.
    fn inspection_of(region: &'static str, ranges: bool) -> Inspection {
        let arrays = vec![ArrayInfo {
            name: "x",
            len: 64,
            writable: true,
            elem_bytes: 4,
            output: false,
        }];
        let mut recorder = Recorder::new(region, &["t"], arrays);
        if ranges {
            recorder = recorder.with_ranges();
        }
        for t in 0..20u64 {
            let lo = (t as usize * 7) % 60;
            let access = Access {
                slot: 0,
                range: lo..lo + 4,
                write: t % 3 == 0,
                param: "x",
            };
            recorder
                .spawn(0, Location::caller(), &[t, 2 * t], &[access])
                .expect("in bounds");
        }
        recorder
            .finish(std::time::Instant::now())
            .expect("the test DAG is within the limits")
    }

    #[test]
    fn a_listed_entry_carries_its_tasks_kind_and_words_in_any_order() {
        let ins = inspection(false);
        // A level order is any permutation of the tasks.
        let order: Vec<u32> = (0..20).rev().step_by(3).chain((0..20).step_by(4)).collect();
        let listed = listed(&ins, order.iter().copied());
        assert_eq!(listed.len(), order.len());
        for (entry, &task) in listed.iter().zip(&order) {
            assert_eq!(entry.task, task);
            assert_eq!(entry.kind, 0);
            let words = &ins.args[entry.args as usize..entry.end as usize];
            assert_eq!(words, [u64::from(task), 2 * u64::from(task)], "task {task}");
        }
        // One 16-byte load per block on the GPU.
        assert_eq!(
            (size_of::<ListedTask>(), align_of::<ListedTask>()),
            (16, 16)
        );
    }

    #[test]
    fn every_table_is_where_the_descriptor_says_and_the_pristine_copy_matches() {
        let sm = SmLayout {
            sm_count: 4,
            set: 1..4,
            per_sm: 1,
            critical: 0,
        };
        for (policy, trace, sms, keep) in [
            (Policy::Grr, false, None, Keep::OnDevice),
            (Policy::Affinity, true, None, Keep::OnHost),
            (Policy::Static, false, Some(&sm), Keep::OnHost),
            (Policy::Static, false, None, Keep::OnDevice),
        ] {
            let ins = inspection(policy == Policy::Affinity);
            let options = Options {
                policy: Some(policy),
                trace,
                ..Options::default()
            };
            let workers = 3;
            let layout = Layout::new(&ins, &options, workers, sms, 2, keep, |_| None);
            let base = 0x7000_0000u64;
            let desc = layout.desc(base);
            let bytes = &layout.image.bytes;
            let at = |address: u64| (address - base) as usize;
            let holds = |address: u64, want: &[u8]| bytes[at(address)..][..want.len()] == *want;
            let tables = Tables::new(&ins, workers, policy, &Reserve::default(), None, |_| None);
            assert!(holds(desc.tasks, bytes_of(&ins.tasks)));
            assert!(holds(desc.args, bytes_of(&ins.args)));
            assert!(holds(desc.offsets, bytes_of(&ins.dag.offsets)));
            assert!(holds(desc.children, bytes_of(&tables.children)));
            assert!(holds(desc.rank, bytes_of(&ins.dag.rank)));
            assert!(holds(desc.pending, bytes_of(&tables.pending)));
            assert!(holds(desc.next, bytes_of(&tables.next)));
            assert!(holds(desc.head, bytes_of(&tables.head)));
            assert!(holds(desc.tail, bytes_of(&tables.tail)));
            assert!(holds(desc.lock, bytes_of(&tables.lock)));
            assert!(holds(desc.current, bytes_of(&[u32::MAX; 3])));
            assert!(holds(
                desc.error,
                bytes_of(std::slice::from_ref(&ErrorRecord::EMPTY))
            ));
            assert!(holds(
                desc.counters + 32 * 4,
                bytes_of(&[tables.counters.0[32].load(std::sync::atomic::Ordering::Relaxed)])
            ));
            assert_eq!(desc.n_tasks, 20);
            assert_eq!(desc.n_workers, workers);
            assert_eq!(desc.n_arrays, 2);
            assert_eq!(desc.policy, policy.abi());
            assert_eq!(desc.trace != 0, trace);
            assert_eq!(desc.sm_slots != 0, sms.is_some());
            assert_eq!(desc.sm_first, sms.map_or(0, |l| l.set.start));
            if policy == Policy::Affinity {
                let affine = ins.affine_parents().expect("ranges were recorded");
                assert!(holds(desc.affine, bytes_of(affine)));
                assert!(holds(desc.ran_by, bytes_of(&[NOT_RUN; 20])));
            } else {
                assert_eq!((desc.affine, desc.ran_by), (0, 0));
            }
            // The tables the workers write lie in one range, which the pristine copy repeats; the
            // others lie before it. Every table starts on its own line.
            let written = layout.written.clone();
            let mut writes = vec![
                desc.error,
                desc.stats,
                desc.current,
                desc.pending,
                desc.next,
                desc.head,
                desc.tail,
                desc.lock,
                desc.counters,
                desc.abort,
            ];
            writes.extend(
                [desc.trace, desc.ran_by, desc.sm_slots]
                    .into_iter()
                    .filter(|&a| a != 0),
            );
            for address in &writes {
                assert!(written.contains(&at(*address)), "{address:#x}");
            }
            for address in [
                desc.tasks,
                desc.args,
                desc.offsets,
                desc.children,
                desc.rank,
            ] {
                assert!(at(address) < written.start);
            }
            for address in writes
                .iter()
                .chain([desc.tasks, desc.args, desc.rank].iter())
            {
                assert_eq!(address % Image::ALIGN as u64, 0);
            }
            let pristine = layout.pristine.expect("kept");
            assert!(pristine >= written.end);
            assert_eq!(bytes[pristine..][..written.len()], bytes[written.clone()]);
            // The workers' own reset: every table they write, not the words they meet on, which
            // the host's reset covers; from the pristine copy's start.
            let own = layout.own_reset.clone();
            assert_eq!(own.start, written.start);
            if keep == Keep::OnDevice {
                for address in &writes {
                    assert!(own.contains(&at(*address)), "{address:#x}");
                }
                assert!(!own.contains(&at(desc.finish)) && written.contains(&at(desc.finish)));
                assert!(holds(desc.finish, &[0; 8]));
                assert_eq!(desc.written, base + own.start as u64);
                assert_eq!(desc.written_bytes, own.len() as u64);
                assert_eq!(desc.written_bytes % 8, 0);
                assert_eq!(desc.pristine, base + pristine as u64);
            } else {
                assert_eq!(own, written);
                assert_eq!(
                    (desc.finish, desc.written, desc.written_bytes, desc.pristine),
                    (0, 0, 0, 0)
                );
            }
            // The error record and the statistics are read with one copy.
            assert_eq!(
                layout.offsets.stats,
                at(desc.error) + Image::padded(layout.error_len)
            );
            // The staging check counts at least what is allocated.
            let bound = tables_bytes(&ins, &options, workers, sms, 2, keep);
            assert!(bytes.len() as u64 <= bound, "{} > {bound}", bytes.len());
            assert!(layout.slot_at + slot_bytes(2) <= bytes.len());
        }
    }

    #[test]
    fn a_layout_writes_into_its_regions_kept_image_and_lays_out_the_same_bytes() {
        // A name of its own: tests run side by side, and images are kept by region.
        let ins = inspection_of("kept image", false);
        let layout = || Layout::new(&ins, &Options::default(), 2, None, 2, Keep::No, |_| None);
        let fresh = layout();
        // A kept image larger than this one, holding something else.
        let stale = Image {
            bytes: vec![0xab; 2 * fresh.image.bytes.len()],
        };
        let at = stale.bytes.as_ptr();
        stale.keep(ins.region);
        let reused = layout();
        assert_eq!(reused.image.bytes.as_ptr(), at, "the kept image's memory");
        assert_eq!(reused.image.bytes, fresh.image.bytes);
    }

    #[test]
    fn a_slot_holds_the_array_table_and_a_descriptor_pointing_at_it() {
        let ins = inspection(false);
        let layout = Layout::new(&ins, &Options::default(), 2, None, 2, Keep::No, |_| None);
        assert!(layout.pristine.is_none());
        let desc = layout.desc(0x1000);
        let arrays = [
            ArrayDesc {
                ptr: 0xa000,
                len: 64,
            },
            ArrayDesc {
                ptr: 0xb000,
                len: 8,
            },
        ];
        let mut bytes = vec![0u8; slot_bytes(2)];
        let slot = write_slot(&mut bytes, &desc, &arrays, 0x9000);
        assert_eq!(slot.addresses, [0xa000, 0xb000]);
        assert_eq!(slot.arrays_ptr, 0x9000);
        assert_eq!(bytes[..size_of_val(&arrays)], *bytes_of(&arrays));
        let at = (slot.desc_ptr - 0x9000) as usize;
        let written = records::<RegionDesc>(&bytes[at..at + size_of::<RegionDesc>()])[0];
        assert_eq!(written.arrays, 0x9000);
        assert_eq!(
            bytes_of(std::slice::from_ref(&RegionDesc {
                arrays: 0,
                ..written
            })),
            bytes_of(std::slice::from_ref(&desc))
        );
    }
}
