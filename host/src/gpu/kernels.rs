//! Choosing a region's kernel and sizing its launch: the variant without checked bodies for an
//! unchecked run, the uncapped-register twin when it fits, and the blocks resident at once.

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaFunction, result};

use super::Gpu;
use crate::error::Error;
use crate::meta::{Code, RegionMeta};
use crate::options::Options;
use crate::symbols;

/// What [`Gpu::pick`] chose.
pub(crate) struct Picked {
    /// The kernel to launch.
    pub function: CudaFunction,
    /// The blocks to launch: the ones asked for, at least one and at most `resident`.
    pub blocks: u32,
    /// Blocks of `function` that fit on the whole GPU at once.
    pub resident: u32,
}

/// The shared memory (static and dynamic) a kernel may use per block without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 << 10;

impl Gpu {
    /// Blocks of `function` that fit on the whole GPU at once with the block shape of `options`
    /// (`region` names the region in the error when none fits). Binds the context to the calling
    /// thread first: the occupancy query is a raw driver call, and a region may run on any thread.
    pub(crate) fn resident_blocks(
        &self,
        function: &CudaFunction,
        region: &'static str,
        options: &Options,
    ) -> Result<u32, Error> {
        self.bind()?;
        // Beyond 48 KiB a block's shared memory, the kernel's own static part (the scheduler's
        // words) included, must be allowed per function first (up to the SM's opt-in limit,
        // 227 KiB on the H100); without it no block fits, and the launch would fail with an
        // invalid argument. Counting the dynamic part alone, 48 KiB of it failed to size on the
        // H100 (bench/results/large-tiles-h100/).
        let static_bytes = function
            .shared_size_bytes()
            .map_err(Error::cuda("reading the kernel's static shared memory"))?;
        if options.shared_bytes + u32::try_from(static_bytes).unwrap_or(0) > DEFAULT_DYNAMIC_SHARED
        {
            function
                .set_attribute(
                    cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    i32::try_from(options.shared_bytes).unwrap_or(i32::MAX),
                )
                .map_err(|e| Error::Cuda {
                    context: format!(
                        "sizing region `{region}`: {} bytes of shared memory per block are more than this GPU allows",
                        options.shared_bytes
                    ),
                    source: e,
                })?;
        }
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(
                options.threads,
                options.shared_bytes as usize,
                None,
            )
            .map_err(Error::cuda("computing the kernel's occupancy"))?;
        if per_sm == 0 {
            return Err(Error::Cuda {
                context: format!(
                    "sizing region `{region}`: no block of {} threads with {} bytes of shared memory fits on an SM",
                    options.threads, options.shared_bytes
                ),
                source: result::DriverError(CUresult::CUDA_ERROR_INVALID_VALUE),
            });
        }
        Ok(per_sm * self.sm_count())
    }

    /// The one-task kernel of the region (block `b` runs task `list[b]`), with the context bound
    /// to the calling thread for the driver calls that follow: the uncapped variant when `widest`
    /// blocks of it fit on the GPU at once (see [`Gpu::pick`]).
    pub(crate) fn listed_kernel(
        &self,
        meta: &RegionMeta,
        options: &Options,
        widest: u32,
    ) -> Result<CudaFunction, Error> {
        let name = symbols::listed(meta.kernel);
        let function = self.pick(meta, options, &name, |_| widest)?.function;
        self.bind()?;
        Ok(function)
    }

    /// Kernel `name`, or its unchecked variant for a run with index checks off when the PTX has
    /// one: the same kernel without the checked task bodies, whose registers would otherwise count
    /// for unchecked runs too (a kernel's register count, which bounds how many of its blocks an
    /// SM holds, is that of its heaviest path).
    pub(crate) fn variant(&self, code: Code, checked: bool, name: &str) -> String {
        match symbols::unchecked(name) {
            Some(unchecked) if !checked && self.function(code, &unchecked).is_ok() => unchecked,
            _ => name.to_owned(),
        }
    }

    /// Kernel `name` of the region, or its uncapped twin, and how many blocks to launch: the ones
    /// `wanted` asks for, at least one and at most what fits on the GPU at once. The builder caps
    /// the scheduler kernels' registers (a persistent kernel at the fewest it needs without
    /// spilling, fitted with `ptxas` in release builds; the others at a fixed cap), and adds an
    /// uncapped twin of each. `wanted` gets the capped kernel's residency with the region's threads
    /// and shared memory; when that many blocks of the twin fit, the twin runs. An unchecked run
    /// takes the [`Gpu::variant`] without checked bodies, and its twin.
    pub(crate) fn pick(
        &self,
        meta: &RegionMeta,
        options: &Options,
        name: &str,
        wanted: impl FnOnce(u32) -> u32,
    ) -> Result<Picked, Error> {
        let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
        // The occupancy queries need the context current on this thread, which may be new.
        self.bind()?;
        let name = &self.variant(code, options.checked, name);
        let capped = self.function(code, name)?;
        let resident = self.resident_blocks(&capped, meta.name, options)?;
        let wanted = wanted(resident);
        // A PTX without twins (built with an older builder) simply has none.
        if let Some(twin) = symbols::uncapped(name)
            && let Ok(twin) = self.function(code, &twin)
            && let Ok(twin_resident) = self.resident_blocks(&twin, meta.name, options)
            && wanted <= twin_resident
        {
            return Ok(Picked {
                function: twin,
                blocks: wanted.max(1),
                resident: twin_resident,
            });
        }
        Ok(Picked {
            function: capped,
            blocks: wanted.clamp(1, resident),
            resident,
        })
    }
}
