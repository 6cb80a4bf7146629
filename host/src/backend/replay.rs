//! A kept plan's call on the persistent backend as one CUDA graph: the start event, the
//! scheduler's kernel and the end event, instantiated once per descriptor and replayed with one
//! `cuGraphLaunch`. Where the workers do not finish the run themselves (`Keep::OnHost`), the graph
//! also puts the tables back as they started before the kernel, and copies the error record and
//! statistics into pinned host memory after it.
//!
//! Issued one by one, those five operations cost the host about 14 us of driver calls per call on
//! the H100, 11 of them before the kernel can start (`bench/results/replay-h100/`). The graph is
//! what CUDA Graphs users get for their own launch sequences, applied to the persistent kernel's:
//! the DAG itself stays in the kernel, so the graph has three to five nodes whatever the task
//! count.

use cudarc::driver::sys;
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig};

use crate::error::Error;
use crate::gpu::Gpu;

/// A copy between two addresses of the context (device memory, or pinned host memory mapped into
/// the device's address space): `len` bytes from `src` to `dst`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Copy {
    pub dst: u64,
    pub src: u64,
    pub len: usize,
}

/// What the replayed call does, in order; the addresses stay valid as long as the graph.
pub(super) struct Sequence<'a> {
    /// The pristine tables over the ones the workers write, unless the workers do it themselves.
    pub reset: Option<Copy>,
    pub start: &'a CudaEvent,
    pub function: &'a CudaFunction,
    pub config: LaunchConfig,
    /// The kernel's one argument: the device address of its descriptor.
    pub desc_ptr: u64,
    pub end: &'a CudaEvent,
    /// The error record and statistics into pinned host memory, unless the workers leave them
    /// there themselves.
    pub read_back: Option<Copy>,
}

/// An instantiated graph of one [`Sequence`], for the descriptor at `desc_ptr`.
pub(super) struct Replay {
    pub desc_ptr: u64,
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
}

// SAFETY: the handles are used by the plan's owner only, on the GPU handle's stream.
unsafe impl Send for Replay {}

impl Drop for Replay {
    fn drop(&mut self) {
        // SAFETY: the handles were created in `Replay::build` and are destroyed once, here; a
        // graph that is still running finishes first (the driver defers the destruction).
        unsafe {
            if !self.exec.is_null() {
                sys::cuGraphExecDestroy(self.exec);
            }
            sys::cuGraphDestroy(self.graph);
        }
    }
}

fn check(result: sys::CUresult, context: &str) -> Result<(), Error> {
    result.result().map_err(Error::cuda(context.to_owned()))
}

/// The parameters of a one-dimensional copy of `copy.len` bytes. (Not `mem::zeroed`: the memory
/// types are enums without a zero.)
fn memcpy_params(copy: Copy) -> sys::CUDA_MEMCPY3D {
    // Unified addressing: the driver finds out whether each address is device or host memory.
    let unified = sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED;
    sys::CUDA_MEMCPY3D {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: unified,
        srcHost: std::ptr::null(),
        srcDevice: copy.src,
        srcArray: std::ptr::null_mut(),
        reserved0: std::ptr::null_mut(),
        srcPitch: 0,
        srcHeight: 0,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: unified,
        dstHost: std::ptr::null_mut(),
        dstDevice: copy.dst,
        dstArray: std::ptr::null_mut(),
        reserved1: std::ptr::null_mut(),
        dstPitch: 0,
        dstHeight: 0,
        WidthInBytes: copy.len,
        Height: 1,
        Depth: 1,
    }
}

/// Adds a node after `last` (none when it is null) with `add(node, dependencies, count)`, and
/// makes it the new `last`.
fn chain(
    last: &mut sys::CUgraphNode,
    what: &str,
    add: impl FnOnce(*mut sys::CUgraphNode, *const sys::CUgraphNode, usize) -> sys::CUresult,
) -> Result<(), Error> {
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    let deps = usize::from(!last.is_null());
    check(add(&raw mut node, &raw const *last, deps), what)?;
    *last = node;
    Ok(())
}

impl Replay {
    /// Builds and instantiates the graph of `seq`: three to five nodes in a chain.
    pub fn build(gpu: &Gpu, seq: &Sequence<'_>) -> Result<Self, Error> {
        gpu.bind()?;
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        // SAFETY: creates an empty graph into `graph`.
        let created = unsafe { sys::cuGraphCreate(&mut graph, 0) };
        check(created, "creating a CUDA graph")?;
        // Dropped on any error below, which destroys the graph.
        let mut replay = Self {
            desc_ptr: seq.desc_ptr,
            graph,
            exec: std::ptr::null_mut(),
        };
        let ctx = gpu.context().cu_ctx();
        let (reset, read_back) = (
            seq.reset.map(memcpy_params),
            seq.read_back.map(memcpy_params),
        );
        let mut arg = seq.desc_ptr;
        let mut args: [*mut std::ffi::c_void; 1] = [(&raw mut arg).cast()];
        // SAFETY: all-zero is a valid `CUDA_KERNEL_NODE_PARAMS` (null handles, zero sizes).
        let mut kernel: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        kernel.func = seq.function.cu_function();
        (kernel.gridDimX, kernel.gridDimY, kernel.gridDimZ) = seq.config.grid_dim;
        (kernel.blockDimX, kernel.blockDimY, kernel.blockDimZ) = seq.config.block_dim;
        kernel.sharedMemBytes = seq.config.shared_mem_bytes;
        kernel.kernelParams = args.as_mut_ptr();
        let last = &mut std::ptr::null_mut();
        // Each node: `graph` is the graph made above, and `deps` its last node (or nothing); the
        // driver copies the parameters during the call.
        if let Some(reset) = &reset {
            chain(
                last,
                "adding the tables' reset to a graph",
                |node, deps, n| {
                    // SAFETY: as said above; `reset` is a copy between live addresses of the
                    // context.
                    unsafe { sys::cuGraphAddMemcpyNode(node, graph, deps, n, reset, ctx) }
                },
            )?;
        }
        chain(
            last,
            "adding the start event to a graph",
            |node, deps, n| {
                // SAFETY: as said above; the start event is live.
                unsafe {
                    sys::cuGraphAddEventRecordNode(node, graph, deps, n, seq.start.cu_event())
                }
            },
        )?;
        chain(
            last,
            "adding the scheduler's kernel to a graph",
            |node, deps, n| {
                // SAFETY: as said above; the kernel's one parameter is `*const RegionDesc`, the
                // descriptor address that `arg` holds.
                unsafe { sys::cuGraphAddKernelNode_v2(node, graph, deps, n, &kernel) }
            },
        )?;
        chain(last, "adding the end event to a graph", |node, deps, n| {
            // SAFETY: as said above; the end event is live.
            unsafe { sys::cuGraphAddEventRecordNode(node, graph, deps, n, seq.end.cu_event()) }
        })?;
        if let Some(read_back) = &read_back {
            chain(last, "adding the read-back to a graph", |node, deps, n| {
                // SAFETY: as said above; `read_back` is a copy between live addresses of the
                // context.
                unsafe { sys::cuGraphAddMemcpyNode(node, graph, deps, n, read_back, ctx) }
            })?;
        }
        // SAFETY: instantiates the complete graph into `replay.exec`.
        let instantiated =
            unsafe { sys::cuGraphInstantiateWithFlags(&mut replay.exec, replay.graph, 0) };
        check(instantiated, "instantiating a call's CUDA graph")?;
        Ok(replay)
    }

    /// Launches the graph on the GPU handle's stream.
    ///
    /// # Safety
    /// Every address of the [`Sequence`] it was built from must still be live, and the kernel's
    /// descriptor and tables ready to run.
    pub unsafe fn launch(&self, gpu: &Gpu) -> Result<(), Error> {
        gpu.bind()?;
        // SAFETY: `exec` is an instantiated graph of this context; the caller vouches for its
        // addresses.
        check(
            unsafe { sys::cuGraphLaunch(self.exec, gpu.stream().cu_stream()) },
            "launching the call's CUDA graph",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::{Copy, memcpy_params};
    use cudarc::driver::sys::CUmemorytype;

    #[test]
    fn a_copy_is_one_row_of_unified_addresses() {
        let p = memcpy_params(Copy {
            dst: 0x7000,
            src: 0x9000,
            len: 300,
        });
        assert_eq!((p.srcDevice, p.dstDevice), (0x9000, 0x7000));
        assert_eq!((p.WidthInBytes, p.Height, p.Depth), (300, 1, 1));
        assert_eq!(p.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
        assert_eq!(p.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_UNIFIED);
    }
}
