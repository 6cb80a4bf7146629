//! The fault checks that need a GPU: regions and uploads larger than device memory, PTX the GPU
//! cannot load, and the faults that lose the CUDA context.

use std::time::Duration;

use taskweave::{Backend, Error, Runtime};
use taskweave_kernels::faults::{faulty, mode, touch_all};

use super::{VICTIM, initial, on, still_works, untouched};

/// Free device memory, or why the check cannot run.
fn free_memory(rt: &Runtime) -> Result<u64, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    gpu.free_memory().map_err(|e| e.to_string())
}

/// One task over an array of more bytes than the device has free. The host array is calloc'd, so
/// its untouched pages cost no host memory; its first and last elements are marked and checked.
pub(super) fn too_large(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    let free = free_memory(rt)?;
    let len = (free / 4) as usize + (64 << 20);
    let mut x = vec![0u32; len];
    (x[0], x[len - 1]) = (7, 9);
    let result = on(touch_all(&mut x), backend).run(rt);
    if (x[0], x[len - 1]) != (7, 9) {
        return Err("the host array was written".to_owned());
    }
    match result {
        Err(e @ Error::DeviceOutOfMemory { .. }) => Ok(format!("error: {e}")),
        Err(e) => Err(format!("another error: {e}")),
        Ok(_) => Err(format!("a region of {} bytes ran", len * 4)),
    }
}

/// `Runtime::upload` of more bytes than are free: the driver refuses the allocation.
pub(super) fn upload_too_large(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    let free = free_memory(rt)?;
    let data = vec![0u8; free as usize + (1 << 30)];
    let detail = match rt.upload(&data) {
        Err(e @ Error::OutOfMemory { .. }) => format!("error: {e}"),
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err(format!("{} bytes uploaded", data.len())),
    };
    still_works(rt, backend)?;
    Ok(detail)
}

/// Fills the device but for about 256 MiB, then searches for the largest array whose region passes
/// the memory check before staging. Every admitted size must stage and run correctly, and every
/// larger one fail with `Error::DeviceOutOfMemory` before copying, host array untouched; if the
/// driver still refuses an allocation while staging an admitted one, that must be
/// `Error::OutOfMemory` with the host array untouched. Either way the runtime must go on.
pub(super) fn staging_out_of_memory(
    rt: &Runtime,
    backend: Option<Backend>,
) -> Result<String, String> {
    let free = free_memory(rt)?;
    let filler = rt
        .upload(&vec![0u8; free.saturating_sub(256 << 20) as usize])
        .map_err(|e| format!("filling the device: {e}"))?;
    let room = free_memory(rt)? as usize / 4;
    let mut x = vec![0u32; room];
    let (mut lo, mut hi) = (1usize, room);
    let mut seen = None;
    while lo + 1 < hi && seen.is_none() {
        let mid = lo + (hi - lo) / 2;
        x[..mid].fill(3);
        let result = on(touch_all(&mut x[..mid]), backend).run(rt);
        let untouched = x[..mid].iter().all(|&v| v == 3);
        match result {
            Err(Error::DeviceOutOfMemory { .. }) => hi = mid,
            Err(e @ Error::OutOfMemory { .. }) if untouched => seen = Some(format!("error: {e}")),
            Err(e) => return Err(format!("{mid} elements: {e}")),
            Ok(_) if x[0] == 4 => lo = mid,
            Ok(_) => return Err(format!("{mid} elements: wrong result")),
        }
    }
    drop(filler);
    let detail = seen.unwrap_or_else(|| {
        format!(
            "every admitted region ran (up to {lo} elements); {hi} elements failed the check before copying"
        )
    });
    still_works(rt, backend)?;
    Ok(detail)
}

/// The runtime keeps the plan of a region run twice on a host array, with a device buffer for the
/// array (2 GiB); then the device is filled until a region on another 2 GiB array does not fit
/// beside that buffer. The region must run all the same, the runtime dropping its kept plans to
/// make room, and give the right result.
pub(super) fn kept_plans_give_memory_back(
    rt: &Runtime,
    backend: Option<Backend>,
) -> Result<String, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    rt.clear_plans();
    let kept_bytes = 2usize << 30;
    let mut kept = vec![5u32; kept_bytes / 4];
    for _ in 0..2 {
        on(touch_all(&mut kept), backend)
            .run(rt)
            .map_err(|e| format!("the region whose plan is kept: {e}"))?;
    }
    if rt.cached_plans() != 1 || kept[0] != 7 {
        return Err(format!(
            "{} plans kept, the array holds {}",
            rt.cached_plans(),
            kept[0]
        ));
    }
    drop(kept);
    // Leave half the kept buffer free: the next region needs a whole one.
    let free = free_memory(rt)? as usize;
    let filler = gpu
        .stream()
        .alloc_zeros::<u8>(free.saturating_sub(kept_bytes / 2))
        .map_err(|e| format!("filling the device: {e}"))?;
    let left = free_memory(rt)?;
    let mut x = vec![3u32; kept_bytes / 4 + 1024];
    let result = on(touch_all(&mut x), backend).run(rt);
    drop(filler);
    match result {
        // `touch` steps the first element only.
        Ok(_) if x[0] == 4 && x[1..].iter().all(|&v| v == 3) => Ok(format!(
            "a region of {} MiB ran with {} MiB free beside the kept plan; {} plan kept now",
            (x.len() * 4) >> 20,
            left >> 20,
            rt.cached_plans()
        )),
        Ok(_) => Err("the region ran with a wrong result".to_owned()),
        Err(e) => Err(format!("the region failed: {e}")),
    }
}

/// Device code built for a GPU newer than this one: plain PTX whose `.target` is past the GPU's,
/// and a kernel bundle whose only modules are for that architecture.
pub(super) fn ptx_for_a_newer_gpu(
    rt: &Runtime,
    backend: Option<Backend>,
) -> Result<String, String> {
    use taskweave::gpu::bundle::{Codec, Form, Writer};
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    let number = gpu.arch()["sm_".len()..].parse::<u32>().unwrap_or(90) + 10;
    let newer = format!("sm_{number}");
    let ptx = format!(
        ".version 7.8\n.target {newer}\n.address_size 64\n.visible .entry k()\n{{\n\tret;\n}}\n"
    );
    let mut bundle = Writer::default();
    let m = bundle.module(
        "k_1",
        number,
        Form::Ptx,
        Codec::Raw,
        ptx.as_bytes(),
        ptx.len(),
    );
    bundle.kernel("k", m, "k", 0);
    let bundle: &'static [u8] = Box::leak(bundle.finish().into_boxed_slice());
    let expected = |e: &Error| {
        matches!(e, Error::PtxArch { .. })
            && e.to_string().contains(&newer)
            && e.to_string()
                .contains(&format!("TASKWEAVE_TARGET_CPU={}", gpu.arch()))
    };
    let mut detail = Vec::new();
    for (what, result) in [
        (
            "PTX",
            gpu.load_ptx(Box::leak(ptx.into_boxed_str())).map(drop),
        ),
        (
            "a bundle",
            gpu.check_code(taskweave::gpu::Code::Bundle(bundle)),
        ),
        (
            "its kernel",
            gpu.function(taskweave::gpu::Code::Bundle(bundle), "k")
                .map(drop),
        ),
    ] {
        match result {
            Err(e) if expected(&e) => detail.push(format!("{what}: {e}")),
            Err(e) => return Err(format!("{what}: another error: {e}")),
            Ok(()) => return Err(format!("{what} for {newer} loaded")),
        }
    }
    still_works(rt, backend)?;
    Ok(detail.join("; "))
}

/// PTX for this GPU's architecture that is not PTX.
pub(super) fn ptx_rejected(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    let gpu = rt.gpu_device().ok_or("no GPU")?;
    let ptx = format!(
        ".version 7.8\n.target {}\n.address_size 64\n\nthis is not PTX;\n",
        gpu.arch()
    );
    let detail = match gpu.load_ptx(Box::leak(ptx.into_boxed_str())) {
        Err(e @ Error::PtxArch { .. }) if e.to_string().contains("TASKWEAVE_TARGET_CPU") => {
            format!("error: {e}")
        }
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err("the driver loaded it".to_owned()),
    };
    still_works(rt, backend)?;
    Ok(detail)
}

/// A fault the device layer cannot catch: the region fails with `Error::ContextLost` and the host
/// array untouched, and the next region fails at once with the same error. A clean region runs
/// first: on a context an earlier check lost, the check would pass without provoking anything.
pub(super) fn context_lost(
    rt: &Runtime,
    backend: Option<Backend>,
    how: u32,
    arg: u64,
) -> Result<String, String> {
    still_works(rt, backend).map_err(|e| {
        format!("before provoking the fault ({e}): run this check in a process of its own")
    })?;
    let mut x = initial();
    let result = on(faulty(&mut x, VICTIM, how, arg).threads(64), backend).run(rt);
    if !untouched(&x) {
        return Err("the host array was written".to_owned());
    }
    let detail = match result {
        Err(e @ Error::ContextLost { .. }) => format!("error: {e}"),
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err("the region succeeded".to_owned()),
    };
    let start = std::time::Instant::now();
    let mut y = initial();
    match on(faulty(&mut y, VICTIM, 0, 0).threads(64), backend).run(rt) {
        Err(Error::ContextLost { .. })
            if start.elapsed() < Duration::from_secs(1) && untouched(&y) =>
        {
            Ok(format!("{detail}; the next region failed fast"))
        }
        Err(e) => Err(format!("{detail}; the next region: {e}")),
        Ok(_) => Err(format!("{detail}; the next region succeeded")),
    }
}

/// One task spins for ever, polling nothing, under a watchdog of one second: the call must
/// return `Error::Stalled` naming it within the watchdog and a second, the host array as it was;
/// the next region must fail at once with `Error::GpuStuck`, which says why. The process must
/// then exit: the `faults` program runs this check in a process of its own and fails it when the
/// process outlives its deadline.
pub(super) fn never_returns(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    stalls_then(rt, backend, mode::FOREVER, 0, Duration::from_secs(1), None)
}

/// One task spins for 2.5 s under a watchdog of 300 ms: past the abort's grace, so the call
/// returns `Error::Stalled` and the kernel counts as stuck; the next region fails at once with
/// `Error::GpuStuck`, and once the task has ended a region runs again and gives the right result.
pub(super) fn outlives_the_grace(rt: &Runtime, backend: Option<Backend>) -> Result<String, String> {
    let spin = Duration::from_millis(2500);
    let arg = spin.as_nanos() as u64;
    stalls_then(
        rt,
        backend,
        mode::SLOW,
        arg,
        Duration::from_millis(300),
        Some(spin),
    )
}

/// [`never_returns`] and [`outlives_the_grace`]: the victim misbehaves as `how` says under
/// `watchdog`; when it ends after `ends`, a region runs again afterwards.
fn stalls_then(
    rt: &Runtime,
    backend: Option<Backend>,
    how: u32,
    arg: u64,
    watchdog: Duration,
    ends: Option<Duration>,
) -> Result<String, String> {
    still_works(rt, backend).map_err(|e| format!("before the stall ({e})"))?;
    let mut x = initial();
    let start = std::time::Instant::now();
    let result = on(faulty(&mut x, VICTIM, how, arg).watchdog(watchdog), backend).run(rt);
    let took = start.elapsed();
    if !untouched(&x) {
        return Err("the host array was written".to_owned());
    }
    let stalled = match result {
        Err(Error::Stalled { ref first, .. }) if first.iter().any(super::names_victim) => {
            result.unwrap_err()
        }
        Err(e) => return Err(format!("another error: {e}")),
        Ok(_) => return Err("the region succeeded".to_owned()),
    };
    let deadline = watchdog + Duration::from_secs(1);
    if took > deadline {
        return Err(format!(
            "the call returned after {took:?}, past {deadline:?}: {stalled}"
        ));
    }
    let next = std::time::Instant::now();
    let mut y = initial();
    let refused = match on(faulty(&mut y, VICTIM, 0, 0), backend).run(rt) {
        Err(e @ Error::GpuStuck { .. }) if next.elapsed() < Duration::from_secs(1) => e,
        Err(e) => return Err(format!("{stalled}; the next region: {e}")),
        Ok(_) => {
            return Err(format!(
                "{stalled}; the next region ran beside the stuck task"
            ));
        }
    };
    let mut detail = format!(
        "the call returned in {:.2} s: {stalled}; the next region, in {:.3} s: {refused}",
        took.as_secs_f64(),
        next.elapsed().as_secs_f64()
    );
    if let Some(ends) = ends {
        std::thread::sleep(ends.saturating_sub(start.elapsed()) + Duration::from_millis(200));
        still_works(rt, backend).map_err(|e| format!("{detail}; once the task ended: {e}"))?;
        detail.push_str("; once the task ended, a region ran again");
    }
    Ok(detail)
}
