//! The `barrier` backend: one kernel launch per topological level, one block per task; the kernel
//! boundary is the barrier (Juggler's "global barriers" baseline). The level lists and the launch
//! loop are in [`levels`](super::levels).

use super::Kept;
use super::levels::{self, Strategy};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::report::Report;

/// Runs the call's DAG on `gpu`, one launch per level.
pub(super) fn execute(gpu: &Gpu, call: &mut Call<'_, '_>, _: &mut Kept) -> Result<Report, Error> {
    levels::execute(gpu, call, Strategy::Launches)
}
