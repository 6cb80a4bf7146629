//! Choosing a region's kernel and sizing its launch: the variant without checked bodies for an
//! unchecked run, the uncapped-register twin when it fits, and the blocks resident at once.

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaFunction, result};

use super::Gpu;
use crate::error::Error;
use crate::meta::{Code, RegionMeta};
use crate::options::{Options, PLAIN_SCRATCH};
use crate::symbols;

/// What [`Gpu::pick`] chose.
pub(crate) struct Picked {
    /// The kernel to launch.
    pub function: CudaFunction,
    /// The shared memory each of its blocks gets ([`Gpu::scratch`]).
    pub shared: u32,
    /// The blocks to launch: the ones asked for, at least one and at most `resident`.
    pub blocks: u32,
    /// Blocks of `function` that fit on the whole GPU at once.
    pub resident: u32,
}

/// The shared memory (static and dynamic) a kernel may use per block without opting in.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 << 10;

impl Gpu {
    /// The shared memory each block of `function` (kernel `name` of the region `meta`) gets: the
    /// region's `shared_bytes` when it sets it; else, for a kernel that uses the tile library,
    /// what every tile operation needs, raised to what the blocks resident at once with that much
    /// each can have (`cuOccupancyAvailableDynamicSMemPerBlock`); else [`PLAIN_SCRATCH`].
    pub(crate) fn scratch(
        &self,
        meta: &RegionMeta,
        options: &Options,
        name: &str,
        function: &CudaFunction,
    ) -> Result<u32, Error> {
        if let Some(bytes) = options.shared_bytes {
            return Ok(bytes);
        }
        let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
        if !self.uses_tiles(code, name) {
            return Ok(PLAIN_SCRATCH);
        }
        let need = taskweave_tile::scratch_need(options.threads);
        self.bind()?;
        // The most dynamic shared memory a block may have: the opt-in limit less the kernel's
        // own static part.
        let static_bytes = function
            .shared_size_bytes()
            .map_err(Error::cuda("reading the kernel's static shared memory"))?;
        let most = self
            .shared_optin
            .saturating_sub(u32::try_from(static_bytes).unwrap_or(u32::MAX));
        self.allow_shared(function, meta.name, most)?;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(options.threads, need as usize, None)
            .map_err(Error::cuda("computing the kernel's occupancy"))?;
        if per_sm == 0 {
            return Ok(need);
        }
        let room = function
            .occupancy_available_dynamic_smem_per_block(per_sm, options.threads)
            .map_err(Error::cuda("computing the shared memory a block may have"))?;
        Ok(need.max((room as u32).min(most) / 16 * 16))
    }

    /// Lets `function`'s blocks have `bytes` of dynamic shared memory: beyond 48 KiB a block's
    /// shared memory, the kernel's own static part (the scheduler's words) included, must be
    /// allowed per function first (up to the SM's opt-in limit, 227 KiB on the H100); without it
    /// no block fits, and the launch would fail with an invalid argument. Counting the dynamic
    /// part alone, 48 KiB of it failed to size on the H100 (bench/results/large-tiles-h100/).
    fn allow_shared(
        &self,
        function: &CudaFunction,
        region: &'static str,
        bytes: u32,
    ) -> Result<(), Error> {
        let static_bytes = function
            .shared_size_bytes()
            .map_err(Error::cuda("reading the kernel's static shared memory"))?;
        if bytes + u32::try_from(static_bytes).unwrap_or(0) <= DEFAULT_DYNAMIC_SHARED {
            return Ok(());
        }
        function
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                i32::try_from(bytes).unwrap_or(i32::MAX),
            )
            .map_err(|e| Error::Cuda {
                context: format!(
                    "sizing region `{region}`: {bytes} bytes of shared memory per block are more than this GPU allows"
                ),
                source: e,
            })
    }

    /// Blocks of `function` that fit on the whole GPU at once with the block shape of `options`
    /// and `shared` bytes of shared memory each (`region` names the region in the error when none
    /// fits). Binds the context to the calling thread first: the occupancy query is a raw driver
    /// call, and a region may run on any thread.
    pub(crate) fn resident_blocks(
        &self,
        function: &CudaFunction,
        region: &'static str,
        options: &Options,
        shared: u32,
    ) -> Result<u32, Error> {
        self.bind()?;
        self.allow_shared(function, region, shared)?;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(options.threads, shared as usize, None)
            .map_err(Error::cuda("computing the kernel's occupancy"))?;
        if per_sm == 0 {
            return Err(Error::Cuda {
                context: format!(
                    "sizing region `{region}`: no block of {} threads with {shared} bytes of shared memory fits on an SM",
                    options.threads
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
    ) -> Result<Picked, Error> {
        let name = symbols::listed(meta.kernel);
        let picked = self.pick(meta, options, &name, |_| widest)?;
        self.bind()?;
        Ok(picked)
    }

    /// Kernel `name`, or its unchecked variant for a run with index checks off when the PTX has
    /// one: the same kernel without the checked task bodies, whose registers would otherwise count
    /// for unchecked runs too (a kernel's register count, which bounds how many of its blocks an
    /// SM holds, is that of its heaviest path).
    pub(crate) fn variant(&self, code: Code, checked: bool, name: &str) -> String {
        match symbols::unchecked(name) {
            Some(unchecked) if !checked && self.has_kernel(code, &unchecked) => unchecked,
            _ => name.to_owned(),
        }
    }

    /// Whether [`Gpu::preload`] has not loaded the region's kernel yet: then it pays to call it on
    /// a thread of its own.
    pub(crate) fn needs_preload(&self, meta: &RegionMeta, checked: bool) -> bool {
        (self.preloaded.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((meta.name, checked))
    }

    /// Loads the module of the region's persistent kernel (its `checked` variant or not), which
    /// [`Gpu::pick`] then finds loaded, on whichever thread calls it first; errors are left for
    /// `pick` to report.
    pub(crate) fn preload(&self, meta: &RegionMeta, checked: bool) {
        if let Some(code) = meta.code()
            && self.bind().is_ok()
        {
            let _ = self.function(code, &self.variant(code, checked, meta.kernel));
        }
    }

    /// Kernel `name` of the region, or its uncapped twin, and how many blocks to launch: the ones
    /// `wanted` asks for, at least one and at most what fits on the GPU at once. The builder caps
    /// the scheduler kernels' registers (in release builds at the fewest each needs without
    /// spilling more, fitted with `ptxas`, or at a cap chosen for the region; in debug builds at
    /// a fixed cap), and keeps an uncapped twin where it is other code (`docs/build.md`).
    /// `wanted` gets the capped kernel's residency with the region's threads and shared memory;
    /// when that many blocks of the twin fit, the twin runs. An unchecked run takes the
    /// [`Gpu::variant`] without checked bodies, and its twin.
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
        let shared = self.scratch(meta, options, name, &capped)?;
        let resident = self.resident_blocks(&capped, meta.name, options, shared)?;
        let wanted = wanted(resident);
        // The builder keeps a twin only where it differs from the kernel. It gets the capped
        // kernel's shared memory: the twin runs only where as many blocks fit.
        if let Some(twin) = symbols::uncapped(name)
            && self.has_kernel(code, &twin)
            && let Ok(twin) = self.function(code, &twin)
            && let Ok(twin_resident) = self.resident_blocks(&twin, meta.name, options, shared)
            && wanted <= twin_resident
        {
            return Ok(Picked {
                function: twin,
                shared,
                blocks: wanted.max(1),
                resident: twin_resident,
            });
        }
        Ok(Picked {
            function: capped,
            shared,
            blocks: wanted.clamp(1, resident),
            resident,
        })
    }
}
