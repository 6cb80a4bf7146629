//! The `graph` backend (CUDA graphs): the region's DAG as a CUDA graph, one kernel node per task and one graph
//! edge per dependence, built with the driver API, instantiated once and replayed.
//!
//! 1. Each node launches the region's one-task kernel (one block) on its task; its dependencies are
//!    the task's parents' nodes.
//! 2. The instantiated graph is cached per GPU, kernel, DAG and block shape. Its nodes read the region
//!    descriptor from a buffer the cache owns, so a later run with the same DAG only rewrites that
//!    descriptor (new arrays, new tables) and replays the graph: no rebuild, no re-instantiation.
//! 3. The report's `setup_time` is the build and instantiation (zero on a cache hit);
//!    `execute_time` is the replay, timed with events.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use cudarc::driver::{CudaSlice, DevicePtr};

use super::Kept;
use super::layout::{self, LISTED};
use super::stage::{Keep, Staged, bytes_of};
use super::watch::{self, Running};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::inspect::Inspection;
use crate::options::{Backend, Options};
use crate::report::Report;

/// What identifies a reusable graph: the kernel, the DAG and the block shape.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Key {
    function: usize,
    dag: u64,
    threads: u32,
    shared_bytes: u32,
}

/// An instantiated graph and the buffers its nodes point at.
struct Cached {
    graph: sys::CUgraph,
    exec: sys::CUgraphExec,
    /// The descriptor every node reads; rewritten before each replay.
    desc: CudaSlice<u8>,
    /// Every task's list entry, in task order: node `t` passes `&list[t]` as its one-entry list.
    _list: CudaSlice<u8>,
}

// SAFETY: the graph handles are only used under the cache's mutex, on the context's stream.
unsafe impl Send for Cached {}

impl Drop for Cached {
    fn drop(&mut self) {
        // SAFETY: the handles were created by this cache and are destroyed once, here.
        unsafe {
            sys::cuGraphExecDestroy(self.exec);
            sys::cuGraphDestroy(self.graph);
        }
    }
}

/// The instantiated graphs of one GPU, kept as its [`Gpu::backend_state`].
#[derive(Default)]
struct GraphCache {
    graphs: Mutex<HashMap<Key, Cached>>,
}

/// A fingerprint of the DAG's structure.
fn fingerprint(ins: &Inspection) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ins.task_count().hash(&mut h);
    ins.dag.offsets.hash(&mut h);
    ins.dag.children.hash(&mut h);
    h.finish()
}

fn check(result: sys::CUresult, context: &str) -> Result<(), Error> {
    result.result().map_err(Error::cuda(context.to_owned()))
}

/// Builds and instantiates the graph of `ins` over the one-task kernel `function`.
fn build(
    gpu: &Gpu,
    (function, shared): (sys::CUfunction, u32),
    ins: &Inspection,
    options: &Options,
    desc: &[u8],
) -> Result<Cached, Error> {
    let n = ins.task_count();
    let desc = gpu
        .stream()
        .clone_htod(desc)
        .map_err(Error::cuda("uploading the graph's descriptor"))?;
    let listed = layout::listed(ins, 0..n as u32);
    let list = gpu
        .stream()
        .clone_htod(bytes_of(&listed))
        .map_err(Error::cuda("uploading the graph's task list"))?;
    let desc_ptr = desc.device_ptr(gpu.stream()).0;
    let list_ptr = list.device_ptr(gpu.stream()).0;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    // SAFETY: creates an empty graph into `graph`.
    let created = unsafe { sys::cuGraphCreate(&mut graph, 0) };
    check(created, "creating a CUDA graph")?;
    let mut cached = Cached {
        graph,
        exec: std::ptr::null_mut(),
        desc,
        _list: list,
    };
    let parents = ins.dag.parents();
    let mut nodes: Vec<sys::CUgraphNode> = Vec::with_capacity(n);
    let mut deps: Vec<sys::CUgraphNode> = Vec::new();
    for t in 0..n as u32 {
        let mut args: [u64; 2] = [desc_ptr, list_ptr + u64::from(t) * LISTED];
        let mut pointers: [*mut std::ffi::c_void; 2] =
            [(&raw mut args[0]).cast(), (&raw mut args[1]).cast()];
        // SAFETY: all-zero is a valid `CUDA_KERNEL_NODE_PARAMS` (null handles, zero sizes).
        let mut params: sys::CUDA_KERNEL_NODE_PARAMS = unsafe { std::mem::zeroed() };
        params.func = function;
        params.gridDimX = 1;
        params.gridDimY = 1;
        params.gridDimZ = 1;
        params.blockDimX = options.threads;
        params.blockDimY = 1;
        params.blockDimZ = 1;
        params.sharedMemBytes = shared;
        params.kernelParams = pointers.as_mut_ptr();
        deps.clear();
        deps.extend(parents.parents_of(t).iter().map(|&p| nodes[p as usize]));
        let mut node: sys::CUgraphNode = std::ptr::null_mut();
        // SAFETY: `params` points at two live argument values matching the kernel's
        // `(*const RegionDesc, *const u32)`; the driver copies them. `deps` are nodes of `graph`.
        let added = unsafe {
            sys::cuGraphAddKernelNode_v2(
                &mut node,
                cached.graph,
                deps.as_ptr(),
                deps.len(),
                &params,
            )
        };
        check(added, "adding a kernel node to the graph")?;
        nodes.push(node);
    }
    // SAFETY: instantiates the complete graph into `cached.exec`.
    let instantiated =
        unsafe { sys::cuGraphInstantiateWithFlags(&mut cached.exec, cached.graph, 0) };
    check(instantiated, "instantiating the CUDA graph")?;
    Ok(cached)
}

/// Runs the call's DAG as a CUDA graph on `gpu`.
pub(super) fn execute(gpu: &Gpu, call: &mut Call<'_, '_>, _: &mut Kept) -> Result<Report, Error> {
    let (meta, options) = (call.work.meta(), call.work.options());
    let picked = gpu.listed_kernel(meta, options, call.work.widest_level() as u32)?;
    let function = &picked.function;
    let ins = call.work.inspection();
    let prestaged = call.prestaged.take();
    let mut staged = Staged::new(gpu, call, 1, None, Keep::No, prestaged)?;
    let n = ins.task_count();
    let mut setup_time = Duration::ZERO;
    let mut kernel_time = Duration::ZERO;
    if n > 0 {
        let key = Key {
            function: function.cu_function() as usize,
            dag: fingerprint(ins),
            threads: options.threads,
            shared_bytes: picked.shared,
        };
        let desc = staged.desc();
        let desc_bytes = bytes_of(std::slice::from_ref(&desc));
        let cache = gpu.backend_state::<GraphCache>(Backend::Graph);
        let mut graphs = cache.graphs.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cached) = graphs.get_mut(&key) {
            gpu.stream()
                .memcpy_htod(desc_bytes, &mut cached.desc)
                .map_err(Error::cuda("updating the graph's descriptor"))?;
        } else {
            let start = Instant::now();
            let cached = build(
                gpu,
                (function.cu_function(), picked.shared),
                ins,
                options,
                desc_bytes,
            )?;
            setup_time = start.elapsed();
            graphs.insert(key, cached);
        }
        let cached = &graphs[&key];
        let what = format!("region `{}` as a CUDA graph", meta.name);
        let outcome = watch::timed(
            gpu,
            &what,
            ins,
            &desc,
            Running::Tasks,
            options.watchdog,
            || {
                // SAFETY: `exec` is an instantiated graph of this context; its nodes read the
                // descriptor just written and the staged tables, which live until `staged` is finished.
                let launched = unsafe { sys::cuGraphLaunch(cached.exec, gpu.stream().cu_stream()) };
                check(launched, "launching the CUDA graph")
            },
        );
        drop(graphs);
        kernel_time = match outcome {
            Ok(time) => time,
            Err(launched) => return Err(watch::settle(gpu, staged, launched)),
        };
    }
    let finished = staged.finish(gpu, call)?;
    let download = finished.download_time;
    let mut report = Report::new(
        call,
        Backend::Graph,
        1,
        options.threads,
        Duration::ZERO,
        kernel_time,
        finished.stats,
        finished.trace,
    );
    staged.fill(&mut report, download);
    report.setup_time += setup_time;
    Ok(report)
}
