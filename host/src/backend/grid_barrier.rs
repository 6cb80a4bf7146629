//! The `grid-barrier` backend: the DAG level by level in one launch, blocks striding over each
//! level and a software grid barrier between levels (`grid.sync()` style); every block must be
//! resident. The level lists and the launch are in [`levels`](super::levels).

use super::Kept;
use super::levels::{self, Strategy};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::report::Report;

/// Runs the call's DAG on `gpu`, a grid barrier between levels.
pub(super) fn execute(gpu: &Gpu, call: &mut Call<'_, '_>, _: &mut Kept) -> Result<Report, Error> {
    levels::execute(gpu, call, Strategy::GridBarrier)
}
