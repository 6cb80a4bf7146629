//! Host arrays uploaded while a region is inspected: a call that runs once on a GPU backend
//! starts copying its host arrays (whole: what the tasks touch is known only after inspection)
//! on another thread, and the backend stages from those copies ([`Prestaged`]).

use cudarc::driver::DevicePtr;

use crate::call::Prestaged;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::gpu::transfer::{DIRECT, Piece};

/// Whether uploading `hosts` (address and bytes of each host array, `None` for resident ones)
/// during inspection pays: when they are large enough to go through pinned staging.
pub(crate) fn worth_it(hosts: &[Option<(usize, usize)>]) -> bool {
    hosts
        .iter()
        .flatten()
        .map(|&(_, bytes)| bytes)
        .sum::<usize>()
        >= DIRECT
}

/// Copies every host array of `hosts` whole into a new device buffer of `gpu`.
///
/// # Safety
/// Each host range must be valid for reads, and unwritten, until this returns.
pub(crate) unsafe fn upload(
    gpu: &Gpu,
    hosts: &[Option<(usize, usize)>],
) -> Result<Prestaged, Error> {
    gpu.bind()?;
    let mut copies = Vec::with_capacity(hosts.len());
    let mut pieces = Vec::new();
    for host in hosts {
        copies.push(match *host {
            None => None,
            Some((address, bytes)) => {
                let len = bytes.max(8);
                // SAFETY: the copy below writes what the tasks may read.
                let buffer = unsafe { gpu.stream().alloc::<u8>(len) }
                    .map_err(gpu.alloc_error("allocating a host array's copy", len))?;
                pieces.push(Piece {
                    host: address,
                    device: buffer.device_ptr(gpu.stream()).0,
                    len: bytes,
                });
                Some(buffer)
            }
        });
    }
    // SAFETY: the caller vouches for the host ranges; the device ranges are the new buffers.
    unsafe { gpu.upload(&pieces) }?;
    gpu.stream()
        .synchronize()
        .map_err(Error::cuda("uploading the host arrays"))?;
    Ok(Prestaged { copies })
}

#[cfg(test)]
mod tests {
    use super::worth_it;
    use crate::gpu::transfer::DIRECT;

    #[test]
    fn only_large_host_arrays_are_uploaded_during_inspection() {
        assert!(!worth_it(&[None, Some((0x1000, 64))]));
        assert!(worth_it(&[
            Some((0x1000, DIRECT / 2)),
            None,
            Some((0x9000, DIRECT / 2))
        ]));
        assert!(!worth_it(&[None]));
    }
}
