//! [`ArrayLog`]: what the tracker records for one array, which the split hands to its threads. A
//! module of its own, so that the tracker and the split both use it without using each other.

use super::buffer::bytes;
use super::compress::{self, Endpoints};
use super::job::Rec;
use super::tiles::ArraySizes;

/// The ranges recorded for one array, their ends numbered as they come.
#[derive(Clone, Debug)]
pub(super) struct ArrayLog {
    pub len: usize,
    pub recs: Vec<Rec>,
    pub ends: Endpoints,
    /// Some task writes the array.
    pub written: bool,
    /// No task may write the array (see
    /// [`DepTracker::mark_read_only`](super::DepTracker::mark_read_only)).
    pub read_only: bool,
}

impl ArrayLog {
    /// Reserves, as the array takes the general path, room for what an earlier inspection of the
    /// region recorded on it.
    pub fn reserve(&mut self, hint: ArraySizes) {
        self.recs
            .reserve(hint.recs().saturating_sub(self.recs.len()));
        self.ends.reserve(hint.ends());
    }
}

/// The vectors of an [`ArrayLog`] on the general path, kept for the same array's log in a later
/// inspection (see [`Spare`](super::Spare)).
#[derive(Debug, Default)]
pub(super) struct LogBuffers {
    pub recs: Vec<Rec>,
    pub ends: compress::Buffers,
}

impl LogBuffers {
    pub(super) fn bytes(&self) -> usize {
        bytes(&self.recs) + self.ends.bytes()
    }
}
