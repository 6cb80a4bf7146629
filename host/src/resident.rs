//! Arrays that stay on the device across regions.
//!
//! 1. [`Runtime::upload`](crate::Runtime::upload) copies host data into a [`DeviceArray`] on the
//!    runtime's device (host memory, on the CPU backend).
//! 2. A region takes it as `&DeviceArray<T>` or `&mut DeviceArray<T>`: nothing is copied in or out
//!    around the run, so a chain of regions keeps its data on the GPU.
//! 3. [`DeviceArray::download`] copies it back when the host needs it.
//!
//! A region that fails leaves a resident array as the tasks that ran left it (host arrays are
//! restored; see [`Error`]).

use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::error::Error;

pub(crate) enum Store<T> {
    /// On the CPU backend: ordinary memory.
    Host(Vec<T>),
    /// On a GPU: raw bytes, copied with the runtime's stream.
    Gpu {
        bytes: CudaSlice<u8>,
        stream: Arc<CudaStream>,
    },
}

/// An array resident where the runtime runs: GPU memory, or host memory for the CPU backend.
pub struct DeviceArray<T: Copy> {
    pub(crate) store: Store<T>,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: Copy> std::fmt::Debug for DeviceArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self.store {
            Store::Host(_) => "host",
            Store::Gpu { .. } => "gpu",
        };
        write!(
            f,
            "DeviceArray<{}>({} elements on the {place})",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

impl<T: Copy> DeviceArray<T> {
    pub(crate) fn host(data: &[T]) -> Self {
        Self {
            store: Store::Host(data.to_vec()),
            len: data.len(),
            _marker: PhantomData,
        }
    }

    pub(crate) fn gpu(data: &[T], stream: &Arc<CudaStream>) -> Result<Self, Error> {
        // SAFETY: `T: Copy` plain data, viewed as its bytes for the copy.
        let bytes =
            unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) };
        let padded = [0u8; 8];
        let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
        let bytes = stream.clone_htod(bytes).map_err(crate::gpu::alloc_error(
            stream.context(),
            "uploading a device array",
            bytes.len(),
        ))?;
        Ok(Self {
            store: Store::Gpu {
                bytes,
                stream: stream.clone(),
            },
            len: data.len(),
            _marker: PhantomData,
        })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the array lives in GPU memory.
    pub fn on_gpu(&self) -> bool {
        matches!(self.store, Store::Gpu { .. })
    }

    /// A copy of the array in host memory.
    pub fn download(&self) -> Result<Vec<T>, Error> {
        match &self.store {
            Store::Host(data) => Ok(data.clone()),
            Store::Gpu { bytes, stream } => {
                let raw = stream
                    .clone_dtoh(bytes)
                    .map_err(Error::cuda("downloading a device array"))?;
                let mut out = Vec::<T>::with_capacity(self.len);
                // SAFETY: `raw` holds at least `len` elements' bytes, written from `T` values.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        raw.as_ptr(),
                        out.as_mut_ptr().cast::<u8>(),
                        self.len * size_of::<T>(),
                    );
                    out.set_len(self.len);
                }
                Ok(out)
            }
        }
    }

    /// Where a region's binding finds the data: a host pointer, or a device address.
    pub(crate) fn location(&self) -> Place {
        match &self.store {
            Store::Host(data) => Place::Host(data.as_ptr().cast_mut().cast()),
            Store::Gpu { bytes, stream } => Place::Device(bytes.device_ptr(stream).0),
        }
    }
}

/// Where a bound array's elements are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// Host memory.
    Host(*mut u8),
    /// Device memory of the GPU runtime.
    Device(u64),
}
