//! Running tile operations on emulated blocks in the tests.

use std::vec;

use crate::Rect;
use crate::staged;
use taskweave_device::Block;
use taskweave_device::arch::host::{Lane, LaneGroup, enter_lane};
use taskweave_device::operand::{MatMut, MatRef, host};

/// Runs `f` on one block of `warps` warps: the calling thread when `warps` is 1, else `warps`
/// threads that each emulate one warp, sharing a barrier and `scratch` bytes of shared scratch.
pub(crate) fn on_block(warps: u32, scratch: usize, f: impl Fn(&Block) + Sync) {
    let mut buffer = vec![0u128; scratch.div_ceil(16)];
    let base = buffer.as_mut_ptr() as usize;
    if warps == 1 {
        // SAFETY: the buffer is 16-aligned, `scratch` bytes long and used by this block alone.
        let block = unsafe { Block::new(0, 0, base as *mut u8, scratch) };
        f(&block);
        return;
    }
    let group = LaneGroup::new(warps);
    let staging_off = staged::tests::staging_off();
    std::thread::scope(|s| {
        for w in 0..warps {
            let (group, f) = (group.clone(), &f);
            s.spawn(move || {
                staged::tests::set_staging_off(staging_off);
                enter_lane(Lane {
                    thread: w,
                    block_dim: warps,
                    block: 0,
                    grid_dim: 1,
                    sm: 0,
                    group: Some(group),
                    gpu_threads: 0,
                });
                // SAFETY: as above; the block's lanes share the scratch, as a block's threads
                // share its shared memory.
                let block = unsafe { Block::new(0, 0, base as *mut u8, scratch) };
                f(&block);
            });
        }
    });
}

/// [`on_block`] with the operations' small-tile paths turned off when `staged` is false: the
/// tests run both the staged paths and the global-memory ones on every tile size.
pub(crate) fn on_block_staged(warps: u32, scratch: usize, staged: bool, f: impl Fn(&Block) + Sync) {
    staged::tests::set_staging_off(!staged);
    on_block(warps, scratch, f);
    staged::tests::set_staging_off(false);
}

/// The scratch bytes that stage `shapes` of `T` (padded rows, as the operations take them).
pub(crate) fn staged_bytes<T>(shapes: &[(usize, usize)]) -> usize {
    shapes
        .iter()
        .map(|&(r, c)| staged::Room::need::<T>(r as u32, c as u32))
        .sum()
}

/// A slice that the lanes of an emulated block share, as a kernel's threads share an array.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the lanes write disjoint elements between barriers, as the operations' threads do.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    pub(crate) fn of(data: &[T]) -> Self {
        Self {
            ptr: data.as_ptr().cast_mut(),
            len: data.len(),
        }
    }

    pub(crate) fn of_mut(data: &mut [T]) -> Self {
        Self {
            ptr: data.as_mut_ptr(),
            len: data.len(),
        }
    }

    pub(crate) fn mat(&self, rect: Rect) -> MatRef<'_, T, true> {
        // SAFETY: the slice outlives `self`'s uses in the test's scope; no reference to it is
        // made, since other lanes may write it meanwhile (as a kernel's threads do).
        unsafe { host::mat_raw(self.ptr, self.len, rect) }
    }

    pub(crate) fn mat_mut(&self, rect: Rect) -> MatMut<'_, T, true> {
        // SAFETY: the slice outlives `self`'s uses, and only the operation reaches it, through
        // raw pointers: each lane's handle aliases the others' as a kernel's threads do.
        unsafe { host::mat_mut_raw(self.ptr, self.len, rect) }
    }
}

/// A property-test configuration of `n` cases, one under Miri (which interprets every emulated
/// `mma`; scripts/miri.sh runs these tests for the unsafe code), without failure files.
pub(crate) fn config(n: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: if cfg!(miri) { 1 } else { n },
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// Tile sides for the property tests: mostly up to 64, sometimes up to 128; 16 or 32 under Miri.
pub(crate) fn side() -> impl proptest::strategy::Strategy<Value = usize> {
    use proptest::prelude::*;
    if cfg!(miri) {
        return (1usize..=2).prop_map(|s| 16 * s).boxed();
    }
    prop_oneof![4 => (1usize..=4).prop_map(|s| 16 * s), 1 => (5usize..=8).prop_map(|s| 16 * s)]
        .boxed()
}
