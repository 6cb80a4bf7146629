//! The host emulation: a block is a group of real OS threads ("lanes") sharing a barrier.
//!
//! 1. The CPU backend makes one [`LaneGroup`] per worker and, in each lane thread, calls
//!    [`enter_lane`] with that lane's [`Lane`] identity before running a task body.
//! 2. Task bodies then call the same functions as on the GPU: [`thread_idx`] reads the lane's index,
//!    [`sync_threads`] waits on the group's barrier, [`warp_ballot`] exchanges votes through it.
//! 3. A thread that never entered a lane is a block of one thread: index 0, dimension 1, and every
//!    barrier and vote is trivial. This is what tests and single-lane CPU workers use.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use std::vec::Vec;

/// One emulated block: the barrier its lanes share and a slot per lane for warp exchanges.
///
/// The barrier behaves like `bar.sync` with exited threads: a lane that [retires](Self::retire)
/// (because its task panicked) counts as arrived at every later barrier, so the other lanes never
/// wait for it.
#[derive(Debug)]
pub struct LaneGroup {
    state: Mutex<BarrierState>,
    turn: Condvar,
    slots: Vec<AtomicU32>,
}

#[derive(Debug)]
struct BarrierState {
    /// Lanes still taking part.
    lanes: u32,
    /// Lanes waiting in the current generation.
    arrived: u32,
    /// Bumped each time the barrier opens.
    generation: u64,
}

impl LaneGroup {
    /// A group of `lanes` threads.
    pub fn new(lanes: u32) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(BarrierState {
                lanes,
                arrived: 0,
                generation: 0,
            }),
            turn: Condvar::new(),
            slots: (0..lanes).map(|_| AtomicU32::new(0)).collect(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BarrierState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn open_if_complete(&self, state: &mut BarrierState) -> bool {
        if state.arrived >= state.lanes {
            state.arrived = 0;
            state.generation += 1;
            self.turn.notify_all();
            return true;
        }
        false
    }

    /// Waits until every lane still taking part arrives.
    pub fn wait(&self) {
        let mut state = self.lock();
        state.arrived += 1;
        if self.open_if_complete(&mut state) {
            return;
        }
        let generation = state.generation;
        while state.generation == generation {
            state = self
                .turn
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Removes the calling lane from the group for good, as a thread that exits does.
    pub fn retire(&self) {
        let mut state = self.lock();
        state.lanes -= 1;
        self.open_if_complete(&mut state);
    }
}

/// The identity of the calling host thread as a GPU thread.
#[derive(Clone, Debug)]
pub struct Lane {
    /// Index in the block.
    pub thread: u32,
    /// Threads in the block.
    pub block_dim: u32,
    /// Index of the block (the worker) in the grid.
    pub block: u32,
    /// Blocks (workers) in the grid.
    pub grid_dim: u32,
    /// The "SM" this worker is pinned to: its core, as the CPU backend numbers them.
    pub sm: u32,
    /// The group whose barrier `sync_threads` waits on; `None` for a one-lane block.
    pub group: Option<Arc<LaneGroup>>,
    /// Threads of the GPU block this lane's block stands for (0: none in particular). The tile
    /// library checks the shared memory it is given against what that block would need, so that
    /// a CPU-backend run fails where the GPU's would.
    pub gpu_threads: u32,
}

impl Lane {
    /// The lane of a one-thread block: what a thread outside the CPU backend is.
    pub const fn single() -> Self {
        Self {
            thread: 0,
            block_dim: 1,
            block: 0,
            grid_dim: 1,
            sm: 0,
            group: None,
            gpu_threads: 0,
        }
    }
}

std::thread_local! {
    static LANE: Cell<Option<Lane>> = const { Cell::new(None) };
}

/// Makes the calling thread the lane `lane`, until the next call.
pub fn enter_lane(lane: Lane) {
    LANE.with(|cell| cell.set(Some(lane)));
}

fn with_lane<R>(f: impl FnOnce(&Lane) -> R) -> R {
    LANE.with(|cell| {
        let lane = cell.take().unwrap_or_else(Lane::single);
        let result = f(&lane);
        cell.set(Some(lane));
        result
    })
}

/// The calling lane's index in its block.
pub fn thread_idx() -> u32 {
    with_lane(|l| l.thread)
}
/// The index of the calling lane's block.
pub fn block_idx() -> u32 {
    with_lane(|l| l.block)
}
/// Lanes per block.
pub fn block_dim() -> u32 {
    with_lane(|l| l.block_dim)
}
/// Threads of the GPU block the calling lane's block stands for, or 0 (see [`Lane::gpu_threads`]).
pub fn gpu_threads() -> u32 {
    with_lane(|l| l.gpu_threads)
}
/// Blocks in the grid.
pub fn grid_dim() -> u32 {
    with_lane(|l| l.grid_dim)
}
/// The lane's index in its warp.
pub fn lane_id() -> u32 {
    thread_idx() % super::WARP_SIZE
}
/// The calling worker's "SM": its core number.
pub fn sm_id() -> u32 {
    with_lane(|l| l.sm)
}
/// The number of "SMs": the host's available parallelism.
pub fn sm_count() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Waits for every lane of the block.
pub fn sync_threads() {
    if let Some(group) = with_lane(|l| l.group.clone()) {
        group.wait();
    }
}

/// Sleeps the calling thread for about `ns` nanoseconds.
pub fn nanosleep(ns: u32) {
    if ns < 1_000 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_nanos(u64::from(ns)));
    }
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since the first call in this process, monotonic across threads.
pub fn global_timer_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

/// A cycle-counter stand-in: the same clock as [`global_timer_ns`].
pub fn clock64() -> u64 {
    global_timer_ns()
}

/// Exchanges one word per lane through the group and returns the words of the caller's warp.
fn warp_exchange(value: u32) -> ([u32; 32], u32) {
    let (thread, group) = with_lane(|l| (l.thread, l.group.clone()));
    let mut words = [0u32; 32];
    let Some(group) = group else {
        words[0] = value;
        return (words, 1);
    };
    let warp = thread / super::WARP_SIZE;
    let first = (warp * super::WARP_SIZE) as usize;
    let end = (first + super::WARP_SIZE as usize).min(group.slots.len());
    // Publish our word; the barrier orders it before every lane's reads.
    group.slots[thread as usize].store(value, Ordering::Relaxed);
    group.wait();
    for (i, slot) in group.slots[first..end].iter().enumerate() {
        words[i] = slot.load(Ordering::Relaxed);
    }
    // Keep the slots until every lane has read them.
    group.wait();
    (words, (end - first) as u32)
}

/// Bit `i` is set when lane `i` of the warp passes `true`. Every lane of the block must call it.
pub fn warp_ballot(predicate: bool) -> u32 {
    let (words, lanes) = warp_exchange(u32::from(predicate));
    (0..lanes).fold(0, |acc, i| acc | (words[i as usize] << i))
}
/// `true` when any lane of the warp passes `true`.
pub fn warp_any(predicate: bool) -> bool {
    warp_ballot(predicate) != 0
}
/// `true` when every present lane of the warp passes `true`.
pub fn warp_all(predicate: bool) -> bool {
    let (words, lanes) = warp_exchange(u32::from(predicate));
    words[..lanes as usize].iter().all(|&w| w != 0)
}
/// The value `value` held by lane `src`.
pub fn shfl_idx(value: u32, src: u32) -> u32 {
    let (words, lanes) = warp_exchange(value);
    words[(src % 32).min(lanes - 1) as usize]
}
/// The value held by lane `lane_id() + delta`, or the caller's own past the warp's end.
pub fn shfl_down(value: u32, delta: u32) -> u32 {
    let (words, lanes) = warp_exchange(value);
    let src = lane_id() + delta;
    if src < lanes {
        words[src as usize]
    } else {
        value
    }
}
