//! Lanes and warps: what one thread of a tile operation holds and which share of the block's work
//! it does, written once for both targets.
//!
//! 1. [`Lanes<T>`] is one value per lane of a warp, as the calling thread holds it. On the GPU that
//!    is the thread's own value (one register); on the host one thread emulates the whole warp and
//!    holds all 32. Tile code builds lane values with [`Lanes::from_fn`], which hands it the lane
//!    index, so the same closure computes a GPU thread's value and every emulated lane's value.
//! 2. [`Team`] says which warp the calling thread is and how many warps the block has. On the GPU
//!    the block's threads make `threads / 32` warps; on the host each of the block's lanes (OS
//!    threads, see [`arch::host`](taskweave_device::arch::host)) emulates one whole warp, so a block of one
//!    lane is a block of one warp. Tile operations spread warp tiles over [`Team::warps`] and give
//!    the same results whatever the count.
//! 3. [`Team::for_each_item`] spreads per-thread work (copies) over the block's threads, emulated or
//!    not, in the order a GPU block would.

use super::unroll::{array, hot, unroll};
use taskweave_device::Block;
use taskweave_device::arch;

/// The cells [`Team::copy_cells`] loads before it stores them: its loads in flight per thread.
pub const COPY_BATCH: usize = 8;

/// Lanes in a warp.
pub const LANES: usize = arch::WARP_SIZE as usize;

/// One value per lane of a warp: the calling thread's own on the GPU, all 32 on the host.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy, Debug)]
#[repr(transparent)]
pub struct Lanes<T>(T);

/// One value per lane of a warp: the calling thread's own on the GPU, all 32 on the host.
#[cfg(not(target_arch = "nvptx64"))]
#[derive(Clone, Copy, Debug)]
pub struct Lanes<T>([T; LANES]);

/// The calling thread's lane (GPU).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn lane() -> u32 {
    arch::thread_idx() & (arch::WARP_SIZE - 1)
}

impl<T: Copy> Lanes<T> {
    /// The same value in every lane.
    #[inline(always)]
    pub fn splat(value: T) -> Self {
        Self::from_fn(|_| value)
    }

    /// Lane `l` holds `f(l)`.
    #[inline(always)]
    pub fn from_fn(mut f: impl FnMut(u32) -> T) -> Self {
        #[cfg(target_arch = "nvptx64")]
        return Self(f(lane()));
        #[cfg(not(target_arch = "nvptx64"))]
        return Self(core::array::from_fn(|l| f(l as u32)));
    }

    /// `f` applied lane by lane.
    #[inline(always)]
    pub fn map<U: Copy>(self, mut f: impl FnMut(T) -> U) -> Lanes<U> {
        #[cfg(target_arch = "nvptx64")]
        return Lanes(f(self.0));
        #[cfg(not(target_arch = "nvptx64"))]
        return Lanes(self.0.map(&mut f));
    }

    /// `f(lane, value)` applied lane by lane.
    #[inline(always)]
    pub fn map_lane<U: Copy>(self, mut f: impl FnMut(u32, T) -> U) -> Lanes<U> {
        #[cfg(target_arch = "nvptx64")]
        return Lanes(f(lane(), self.0));
        #[cfg(not(target_arch = "nvptx64"))]
        return Lanes(core::array::from_fn(|l| f(l as u32, self.0[l])));
    }

    /// `f` applied lane by lane to `self` and `other`.
    #[inline(always)]
    pub fn zip<U: Copy, V: Copy>(self, other: Lanes<U>, mut f: impl FnMut(T, U) -> V) -> Lanes<V> {
        #[cfg(target_arch = "nvptx64")]
        return Lanes(f(self.0, other.0));
        #[cfg(not(target_arch = "nvptx64"))]
        return Lanes(core::array::from_fn(|l| f(self.0[l], other.0[l])));
    }

    /// Calls `f(lane, value)` for every lane the calling thread holds.
    #[inline(always)]
    pub fn for_each(self, mut f: impl FnMut(u32, T)) {
        #[cfg(target_arch = "nvptx64")]
        f(lane(), self.0);
        #[cfg(not(target_arch = "nvptx64"))]
        for (l, v) in self.0.into_iter().enumerate() {
            f(l as u32, v);
        }
    }

    /// The calling thread's own value (GPU).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn get(self) -> T {
        self.0
    }

    /// Lane `l`'s value (host, where one thread holds every lane).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn get(&self, l: u32) -> T {
        self.0[l as usize]
    }

    /// Sets lane `l`'s value (host).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn set(&mut self, l: u32, value: T) {
        self.0[l as usize] = value;
    }

    /// Wraps the calling thread's value (GPU).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub(crate) fn from_own(value: T) -> Self {
        Self(value)
    }
}

impl<T: super::numeric::Element> Lanes<T> {
    /// Lane `src(l)`'s value in each lane `l`: a warp shuffle (`shfl.sync.idx` with a source per
    /// lane, one per 32 bits) on the GPU, where every lane of the warp must call it.
    #[inline(always)]
    pub fn gather(self, src: impl Fn(u32) -> u32) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let (bits, from) = (self.0.to_bits64(), src(lane()));
            let lo = arch::shfl_idx(bits as u32, from);
            let hi = if size_of::<T>() > 4 {
                arch::shfl_idx((bits >> 32) as u32, from)
            } else {
                0
            };
            Self(T::from_bits64(u64::from(lo) | (u64::from(hi) << 32)))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Self(core::array::from_fn(|l| self.0[src(l as u32) as usize]))
    }

    /// Lane `src`'s value, in every lane: a warp shuffle (`shfl.sync.idx`, one per 32 bits) on
    /// the GPU, where every lane of the warp must call it with the same `src`.
    #[inline(always)]
    pub fn broadcast(self, src: u32) -> T {
        #[cfg(target_arch = "nvptx64")]
        {
            let bits = self.0.to_bits64();
            let lo = arch::shfl_idx(bits as u32, src);
            let hi = if size_of::<T>() > 4 {
                arch::shfl_idx((bits >> 32) as u32, src)
            } else {
                0
            };
            T::from_bits64(u64::from(lo) | (u64::from(hi) << 32))
        }
        #[cfg(not(target_arch = "nvptx64"))]
        self.0[src as usize]
    }
}

/// The calling thread's place in the block, in warps.
#[derive(Clone, Copy, Debug)]
pub struct Team {
    warps: u32,
    warp: u32,
}

impl Team {
    /// The team of `block`. Panics on the GPU when the block's size is not a multiple of 32:
    /// tile operations hand out whole warps.
    #[inline(always)]
    pub fn new(block: &Block) -> Self {
        let (threads, thread) = (block.threads() as u32, block.thread() as u32);
        #[cfg(target_arch = "nvptx64")]
        {
            assert!(
                threads % arch::WARP_SIZE == 0,
                "tile ops need the region's `threads` to be a multiple of 32"
            );
            Self {
                warps: threads / arch::WARP_SIZE,
                warp: thread / arch::WARP_SIZE,
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        Self {
            warps: threads,
            warp: thread,
        }
    }

    /// A team of `warps` warps seen from warp `warp` (tests).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn emulated(warps: u32, warp: u32) -> Self {
        assert!(warp < warps);
        Self { warps, warp }
    }

    /// Warps in the block.
    #[inline(always)]
    pub fn warps(&self) -> u32 {
        self.warps
    }

    /// The calling thread's warp.
    #[inline(always)]
    pub fn warp(&self) -> u32 {
        self.warp
    }

    /// Threads in the block, emulated ones included: `32 * warps`.
    #[inline(always)]
    pub fn threads(&self) -> u32 {
        self.warps * arch::WARP_SIZE
    }

    /// Calls `f(r, c)` for each cell of a `rows × cols` grid that the calling thread's lanes own,
    /// the cells numbered row by row and handed out as [`for_each_item`](Self::for_each_item)
    /// hands out items. On the GPU each thread divides once and then steps: a division per cell
    /// (a 32-bit division is a sequence of about twenty instructions) made the staged copies of
    /// one 64-tile cost thousands of instructions per warp.
    #[inline(always)]
    pub fn for_each_cell(&self, rows: u32, cols: u32, f: impl FnMut(u32, u32)) {
        if cols == 0 {
            return;
        }
        #[cfg(target_arch = "nvptx64")]
        step_cells(
            self.warp * arch::WARP_SIZE + lane(),
            self.threads(),
            rows,
            cols,
            f,
        );
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let mut f = f;
            self.for_each_item(rows * cols, |i| f(i / cols, i % cols));
        }
    }

    /// Copies the cells of a `rows × cols` grid, numbered and handed out as
    /// [`for_each_cell`](Self::for_each_cell) does, [`COPY_BATCH`] cells per thread at a time:
    /// `load(r, c)` for each of them, then `store(r, c, v)` for each. A loop that stores each cell
    /// before it loads the next waits a whole memory latency per cell, since the compiler cannot
    /// move a load above a store that may alias it: staging a 64-tile's triangle that way (32
    /// cells per thread) held 28% of a TRSM's warp samples inside a factorization on the H200,
    /// and the barrier after it 7% more (bench/results/chain-stalls-h200/). `none` stands in for
    /// the loads past the grid's end.
    #[inline(always)]
    pub fn copy_cells<V: Copy>(
        &self,
        rows: u32,
        cols: u32,
        none: V,
        load: impl FnMut(u32, u32) -> V,
        store: impl FnMut(u32, u32, V),
    ) {
        self.copy_cells_by::<COPY_BATCH, V>(rows, cols, none, load, store);
    }

    /// [`copy_cells`](Self::copy_cells) `B` cells per thread at a time.
    #[inline(always)]
    pub fn copy_cells_by<const B: usize, V: Copy>(
        &self,
        rows: u32,
        cols: u32,
        none: V,
        mut load: impl FnMut(u32, u32) -> V,
        mut store: impl FnMut(u32, u32, V),
    ) {
        if rows == 0 || cols == 0 {
            return;
        }
        let (total, stride) = (rows * cols, self.threads());
        let (dr, dc) = (stride / cols, stride % cols);
        let step = |(r, c): (u32, u32)| {
            let (r, c) = (r + dr, c + dc);
            if c >= cols { (r + 1, c - cols) } else { (r, c) }
        };
        // The warp's first lane holds its smallest cell: the loop's test is the same in every lane.
        let mut first = self.warp * arch::WARP_SIZE;
        let mut at = Lanes::from_fn(|lane| {
            let i = first + lane;
            (i / cols, i % cols)
        });
        while first < total {
            let cells: [Lanes<(u32, u32)>; B] = array(hot!(|_| {
                let here = at;
                at = at.map(step);
                here
            }));
            let values: [Lanes<V>; B] = array(hot!(|s| cells[s].map(|(r, c)| if r < rows {
                load(r, c)
            } else {
                none
            })));
            unroll::<B>(hot!(|s| cells[s]
                .zip(values[s], |cell, v| (cell, v))
                .for_each(|_, ((r, c), v)| {
                    if r < rows {
                        store(r, c, v);
                    }
                })));
            first += B as u32 * stride;
        }
    }

    /// The warp barrier (`bar.warp.sync`), which also orders the shared-memory accesses of the
    /// warp's lanes: every lane of the calling warp must call it. On the host one thread is the
    /// whole warp and runs its lanes in order, so it does nothing.
    #[inline(always)]
    pub fn sync_warp(&self) {
        #[cfg(target_arch = "nvptx64")]
        arch::sync_warp();
    }

    /// Calls `f(i)` for each `i` in `0..n` that the calling thread's lanes own: item `i` belongs to
    /// thread `i % threads()`, as a block-stride loop over the block's threads hands them out.
    #[inline(always)]
    pub fn for_each_item(&self, n: u32, mut f: impl FnMut(u32)) {
        let stride = self.threads();
        #[cfg(target_arch = "nvptx64")]
        {
            let mut i = self.warp * arch::WARP_SIZE + lane();
            while i < n {
                f(i);
                i += stride;
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let mut first = self.warp * arch::WARP_SIZE;
            while first < n {
                for i in first..(first + arch::WARP_SIZE).min(n) {
                    f(i);
                }
                first += stride;
            }
        }
    }
}

/// Calls `f(r, c)` for cells `start`, `start + stride`, … of a `rows × cols` grid numbered row by
/// row (`cols > 0`), stepping from one to the next instead of dividing each.
#[inline(always)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    allow(dead_code, reason = "the GPU's; tested here")
)]
fn step_cells(start: u32, stride: u32, rows: u32, cols: u32, mut f: impl FnMut(u32, u32)) {
    let (dr, dc) = (stride / cols, stride % cols);
    let (mut r, mut c) = (start / cols, start % cols);
    while r < rows {
        f(r, c);
        c += dc;
        r += dr;
        if c >= cols {
            c -= cols;
            r += 1;
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::{Lanes, Team, step_cells};

    #[test]
    fn cells_are_handed_out_once_each_as_items_are() {
        for (warps, rows, cols) in [(4, 64, 64), (4, 48, 17), (1, 3, 100), (2, 0, 5), (3, 7, 0)] {
            let mut seen = std::vec![0u32; (rows * cols) as usize];
            for warp in 0..warps {
                let team = Team::emulated(warps, warp);
                let mut items = std::vec::Vec::new();
                team.for_each_item(rows * cols, |i| items.push(i));
                let mut cells = std::vec::Vec::new();
                team.for_each_cell(rows, cols, |r, c| cells.push(r * cols + c));
                assert_eq!(cells, items, "warp {warp} of {warps}, {rows} x {cols}");
                for i in cells {
                    seen[i as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1));
        }
    }

    #[test]
    fn copies_take_each_cell_once_and_load_a_batch_before_storing_it() {
        use super::COPY_BATCH;
        for (warps, rows, cols) in [(4, 64, 64), (4, 48, 17), (1, 3, 100), (2, 0, 5), (3, 7, 0)] {
            let mut stored = std::vec![0u32; (rows * cols) as usize];
            for warp in 0..warps {
                let team = Team::emulated(warps, warp);
                let mut cells = std::vec::Vec::new();
                team.for_each_cell(rows, cols, |r, c| cells.push(r * cols + c));
                let events = core::cell::RefCell::new(std::vec::Vec::new());
                team.copy_cells(
                    rows,
                    cols,
                    u32::MAX,
                    |r, c| {
                        events.borrow_mut().push((true, r * cols + c));
                        r * cols + c
                    },
                    |r, c, v| {
                        assert_eq!(v, r * cols + c, "stored what was loaded for that cell");
                        events.borrow_mut().push((false, v));
                    },
                );
                let events = events.into_inner();
                let mut loaded: std::vec::Vec<u32> =
                    events.iter().filter(|e| e.0).map(|e| e.1).collect();
                loaded.sort_unstable();
                let mut mine = cells.clone();
                mine.sort_unstable();
                assert_eq!(loaded, mine, "warp {warp} of {warps}, {rows} x {cols}");
                for &(_, cell) in events.iter().filter(|e| !e.0) {
                    stored[cell as usize] += 1;
                }
                // A whole batch of every lane is loaded before the first store.
                let before = events.iter().take_while(|e| e.0).count();
                assert_eq!(before, cells.len().min(COPY_BATCH * 32));
            }
            assert!(stored.iter().all(|&n| n == 1));
        }
    }

    #[test]
    fn the_gpu_steps_through_the_cells_a_division_would_give() {
        for (stride, rows, cols) in [
            (128, 64, 64),
            (128, 48, 48),
            (96, 5, 256),
            (32, 9, 7),
            (64, 1, 1),
        ] {
            for start in 0..stride {
                let mut stepped = std::vec::Vec::new();
                step_cells(start, stride, rows, cols, |r, c| stepped.push((r, c)));
                let divided: std::vec::Vec<_> = (start..rows * cols)
                    .step_by(stride as usize)
                    .map(|i| (i / cols, i % cols))
                    .collect();
                assert_eq!(
                    stepped, divided,
                    "start {start}, stride {stride}, {rows} x {cols}"
                );
            }
        }
    }

    #[test]
    fn lanes_hold_one_value_per_lane_on_the_host() {
        let ids = Lanes::from_fn(|l| l * 2);
        let sums = ids.zip(Lanes::splat(1u32), |a, b| a + b).map(|v| v * 10);
        let mut seen = std::vec::Vec::new();
        sums.for_each(|l, v| seen.push((l, v)));
        assert_eq!(seen.len(), 32);
        assert_eq!(seen[5], (5, 110));
        assert_eq!(sums.map_lane(|l, v| v - l).get(31), 630 - 31);
    }

    #[test]
    fn items_are_spread_over_the_emulated_threads_like_a_block_stride_loop() {
        for warps in 1..4u32 {
            let mut owner = std::vec![u32::MAX; 200];
            for warp in 0..warps {
                Team::emulated(warps, warp).for_each_item(200, |i| {
                    assert_eq!(owner[i as usize], u32::MAX, "item {i} handed out twice");
                    owner[i as usize] = warp;
                });
            }
            for (i, &w) in owner.iter().enumerate() {
                assert_eq!(
                    w,
                    (i as u32 % (32 * warps)) / 32,
                    "item {i} of {warps} warps"
                );
            }
        }
    }
}
