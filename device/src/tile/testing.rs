//! Running tile operations on emulated blocks in the tests.

use std::vec;

use crate::Block;
use crate::arch::host::{Lane, LaneGroup, enter_lane};
use crate::tile::Rect;
use crate::tile::operand::{MatMut, MatRef, host};

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
    std::thread::scope(|s| {
        for w in 0..warps {
            let (group, f) = (group.clone(), &f);
            s.spawn(move || {
                enter_lane(Lane {
                    thread: w,
                    block_dim: warps,
                    block: 0,
                    grid_dim: 1,
                    sm: 0,
                    group: Some(group),
                });
                // SAFETY: as above; the block's lanes share the scratch, as a block's threads
                // share its shared memory.
                let block = unsafe { Block::new(0, 0, base as *mut u8, scratch) };
                f(&block);
            });
        }
    });
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
        // SAFETY: the slice outlives `self`'s uses in the test's scope.
        host::mat(
            unsafe { core::slice::from_raw_parts(self.ptr, self.len) },
            rect,
        )
    }

    pub(crate) fn mat_mut(&self, rect: Rect) -> MatMut<'_, T, true> {
        // SAFETY: as above; the operation's threads write disjoint elements.
        host::mat_mut(
            unsafe { core::slice::from_raw_parts_mut(self.ptr, self.len) },
            rect,
        )
    }
}
