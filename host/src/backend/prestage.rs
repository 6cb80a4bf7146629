//! Host arrays uploaded while a region is inspected: a call that runs once on a GPU backend
//! starts copying its host arrays (whole: what the tasks touch is known only after inspection)
//! on another thread, and the backend stages from those copies ([`Prestaged`]). An `#[output]`
//! array gets its device copy here but is not copied: the backend fills it once its footprint is
//! known.

use cudarc::driver::DevicePtr;

use crate::call::Prestaged;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::gpu::transfer::{DIRECT, Piece};

/// A host array of a region: its address, its bytes, and whether it is an `#[output]`.
pub(crate) type Host = (usize, usize, bool);

/// Whether uploading `hosts` (each host array, `None` for resident ones) during inspection pays:
/// when the arrays to copy are large enough to go through pinned staging.
pub(crate) fn worth_it(hosts: &[Option<Host>]) -> bool {
    hosts
        .iter()
        .flatten()
        .filter(|&&(_, _, output)| !output)
        .map(|&(_, bytes, _)| bytes)
        .sum::<usize>()
        >= DIRECT
}

/// Copies every host array of `hosts` whole into a new device buffer of `gpu` (an output gets
/// its buffer only).
///
/// # Safety
/// Each host range must be valid for reads, and unwritten, until this returns.
pub(crate) unsafe fn upload(gpu: &Gpu, hosts: &[Option<Host>]) -> Result<Prestaged, Error> {
    gpu.bind()?;
    let mut copies = Vec::with_capacity(hosts.len());
    let mut pieces = Vec::new();
    for host in hosts {
        copies.push(match *host {
            None => None,
            Some((address, bytes, output)) => {
                let len = bytes.max(8);
                // SAFETY: the copy below writes what the tasks may read (for an output, the
                // backend's fill).
                let buffer = unsafe { gpu.stream().alloc::<u8>(len) }
                    .map_err(gpu.alloc_error("allocating a host array's copy", len))?;
                if !output {
                    pieces.push(Piece {
                        host: address,
                        device: buffer.device_ptr(gpu.stream()).0,
                        len: bytes,
                    });
                }
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
        assert!(!worth_it(&[None, Some((0x1000, 64, false))]));
        assert!(worth_it(&[
            Some((0x1000, DIRECT / 2, false)),
            None,
            Some((0x9000, DIRECT / 2, false))
        ]));
        assert!(!worth_it(&[None]));
        // Outputs are not copied, so they do not count.
        assert!(!worth_it(&[
            Some((0x1000, DIRECT / 2, false)),
            Some((0x9000, DIRECT, true))
        ]));
    }
}
