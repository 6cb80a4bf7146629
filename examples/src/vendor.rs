//! The vendor libraries a user would call instead of a taskweave region: cuSOLVER's dense
//! Cholesky (`potrf`) and LU (`getrf`, here without pivoting: a null pivot array) and cuBLAS's
//! GEMM, through cudarc, on the CUDA context and stream of a taskweave [`Gpu`](taskweave::gpu::Gpu),
//! so that both run in one process on the same matrices.
//!
//! 1. [`Vendor::new`] checks that the libraries load (cudarc loads them at run time) and says how
//!    to fix it when they do not.
//! 2. [`Vendor::potrf`], [`Vendor::getrf_nopiv`] and [`Vendor::gemm_strided_batched`] run one call on
//!    a device matrix and return its [`Timed`]: the kernels' time between two events on the stream,
//!    and the wall time of the call through the stream's synchronization.
//! 3. [`Vendor::cholesky_residual`] and [`Vendor::lu_residual`] check a factorization on the GPU:
//!    `‖L·Lᵀ − A‖_F / ‖A‖_F` and `‖L·U − A‖_F / ‖A‖_F` through cuBLAS GEMMs.
//!
//! Matrices are column-major with leading dimension `n`, as the libraries expect.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::cublas::sys::cublasOperation_t;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, StridedBatchedConfig};
use cudarc::cusolver::DnHandle;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, DeviceRepr, ValidAsZeroBits};
use taskweave::gpu::cudarc;

/// A failed vendor call, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum VendorError {
    /// A library did not load.
    #[error(
        "the {0} library did not load: put the directory holding lib{0}.so (CUDA 13) on LD_LIBRARY_PATH"
    )]
    Missing(&'static str),
    /// A library call failed.
    #[error("{what}: {why}")]
    Call {
        /// The call.
        what: String,
        /// The library's status.
        why: String,
    },
    /// The factorization hit a zero or negative pivot (`info` > 0).
    #[error("{what}: the matrix is not factorizable without pivoting (info = {info})")]
    Singular {
        /// The call.
        what: String,
        /// The library's `info`.
        info: i32,
    },
}

fn call<E: std::fmt::Debug>(what: impl Into<String>) -> impl FnOnce(E) -> VendorError {
    let what = what.into();
    move |e| VendorError::Call {
        what,
        why: format!("{e:?}"),
    }
}

/// The time of one vendor call: between two events around it on the stream, and on the host
/// from the call to the end of the stream's synchronization.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    /// The kernels' time on the GPU.
    pub kernel: Duration,
    /// The wall time of the call, synchronization included.
    pub wall: Duration,
}

/// The element types both libraries take: `f32` and `f64`.
pub trait Real: DeviceRepr + ValidAsZeroBits + Copy + Default + Send + Sync + 'static {
    /// `"f32"` or `"f64"`.
    const NAME: &'static str;
    /// From an `f64`.
    fn of(x: f64) -> Self;
    /// To an `f64`.
    fn to_f64(self) -> f64;
    /// cuSOLVER's `?potrf_bufferSize` then `?potrf`, lower triangle.
    ///
    /// # Safety
    /// `a` holds `n * n` elements on the handle's stream; `work`/`info` as the library says.
    #[allow(clippy::missing_safety_doc)]
    unsafe fn potrf_buffer(h: &DnHandle, n: i32, a: u64) -> Result<i32, VendorError>;
    /// See [`Real::potrf_buffer`].
    ///
    /// # Safety
    /// As for [`Real::potrf_buffer`]; `work` holds `lwork` elements, `info` one `i32`.
    unsafe fn potrf(
        h: &DnHandle,
        n: i32,
        a: u64,
        work: u64,
        lwork: i32,
        info: u64,
    ) -> Result<(), VendorError>;
    /// cuSOLVER's `?getrf_bufferSize`.
    ///
    /// # Safety
    /// As for [`Real::potrf_buffer`].
    unsafe fn getrf_buffer(h: &DnHandle, n: i32, a: u64) -> Result<i32, VendorError>;
    /// cuSOLVER's `?getrf` with a null pivot array: no pivoting.
    ///
    /// # Safety
    /// As for [`Real::potrf`].
    unsafe fn getrf_nopiv(
        h: &DnHandle,
        n: i32,
        a: u64,
        work: u64,
        info: u64,
    ) -> Result<(), VendorError>;
}

macro_rules! real {
    ($t:ty, $name:literal, $buf:ident, $potrf:ident, $gbuf:ident, $getrf:ident) => {
        impl Real for $t {
            const NAME: &'static str = $name;
            fn of(x: f64) -> Self {
                x as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            unsafe fn potrf_buffer(h: &DnHandle, n: i32, a: u64) -> Result<i32, VendorError> {
                use cudarc::cusolver::sys;
                let mut lwork = 0;
                // SAFETY: the caller's contract; `lwork` is a valid out-parameter.
                unsafe {
                    sys::$buf(
                        h.cu(),
                        cudarc::cusolver::sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                        n,
                        a as *mut $t,
                        n,
                        &mut lwork,
                    )
                }
                .result()
                .map_err(call(concat!("cusolverDn", stringify!($buf))))?;
                Ok(lwork)
            }
            unsafe fn potrf(
                h: &DnHandle,
                n: i32,
                a: u64,
                work: u64,
                lwork: i32,
                info: u64,
            ) -> Result<(), VendorError> {
                use cudarc::cusolver::sys;
                // SAFETY: the caller's contract.
                unsafe {
                    sys::$potrf(
                        h.cu(),
                        cudarc::cusolver::sys::cublasFillMode_t::CUBLAS_FILL_MODE_LOWER,
                        n,
                        a as *mut $t,
                        n,
                        work as *mut $t,
                        lwork,
                        info as *mut i32,
                    )
                }
                .result()
                .map_err(call(concat!("cusolverDn", stringify!($potrf))))
            }
            unsafe fn getrf_buffer(h: &DnHandle, n: i32, a: u64) -> Result<i32, VendorError> {
                use cudarc::cusolver::sys;
                let mut lwork = 0;
                // SAFETY: the caller's contract; `lwork` is a valid out-parameter.
                unsafe { sys::$gbuf(h.cu(), n, n, a as *mut $t, n, &mut lwork) }
                    .result()
                    .map_err(call(concat!("cusolverDn", stringify!($gbuf))))?;
                Ok(lwork)
            }
            unsafe fn getrf_nopiv(
                h: &DnHandle,
                n: i32,
                a: u64,
                work: u64,
                info: u64,
            ) -> Result<(), VendorError> {
                use cudarc::cusolver::sys;
                // SAFETY: the caller's contract; a null pivot array asks for no pivoting.
                unsafe {
                    sys::$getrf(
                        h.cu(),
                        n,
                        n,
                        a as *mut $t,
                        n,
                        work as *mut $t,
                        std::ptr::null_mut(),
                        info as *mut i32,
                    )
                }
                .result()
                .map_err(call(concat!("cusolverDn", stringify!($getrf))))
            }
        }
    };
}

real!(
    f64,
    "f64",
    cusolverDnDpotrf_bufferSize,
    cusolverDnDpotrf,
    cusolverDnDgetrf_bufferSize,
    cusolverDnDgetrf
);
real!(
    f32,
    "f32",
    cusolverDnSpotrf_bufferSize,
    cusolverDnSpotrf,
    cusolverDnSgetrf_bufferSize,
    cusolverDnSgetrf
);

/// cuSOLVER and cuBLAS handles on one stream.
pub struct Vendor {
    stream: Arc<CudaStream>,
    solver: DnHandle,
    blas: CudaBlas,
}

impl Vendor {
    /// Handles on `stream`, or which library did not load.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, VendorError> {
        // SAFETY: only probes whether each library can be loaded; cudarc panics on first use
        // otherwise.
        unsafe {
            if !cudarc::cublas::sys::is_culib_present() {
                return Err(VendorError::Missing("cublas"));
            }
            if !cudarc::cusolver::sys::is_culib_present() {
                return Err(VendorError::Missing("cusolver"));
            }
        }
        let solver = DnHandle::new(stream.clone()).map_err(call("creating a cuSOLVER handle"))?;
        let blas = CudaBlas::new(stream.clone()).map_err(call("creating a cuBLAS handle"))?;
        Ok(Self {
            stream,
            solver,
            blas,
        })
    }

    /// The stream every call runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Times `f` on the stream: events around it, and the host clock through the synchronization.
    fn timed(
        &self,
        what: &str,
        f: impl FnOnce() -> Result<(), VendorError>,
    ) -> Result<Timed, VendorError> {
        let wall = Instant::now();
        let start = self
            .stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(call(format!("{what}: recording an event")))?;
        f()?;
        let end = self
            .stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(call(format!("{what}: recording an event")))?;
        self.stream
            .synchronize()
            .map_err(call(format!("{what}: synchronizing")))?;
        let wall = wall.elapsed();
        let ms = start
            .elapsed_ms(&end)
            .map_err(call(format!("{what}: timing")))?;
        Ok(Timed {
            kernel: Duration::from_secs_f64(f64::from(ms) / 1e3),
            wall,
        })
    }

    /// Reads the `info` word a factorization left.
    fn info(&self, what: &str, info: &CudaSlice<i32>) -> Result<(), VendorError> {
        let info = self
            .stream
            .clone_dtoh(info)
            .map_err(call(format!("{what}: reading info")))?[0];
        match info {
            0 => Ok(()),
            i if i > 0 => Err(VendorError::Singular {
                what: what.to_owned(),
                info: i,
            }),
            i => Err(VendorError::Call {
                what: what.to_owned(),
                why: format!("parameter {} is invalid", -i),
            }),
        }
    }

    /// Cholesky `A = L·Lᵀ` of the `n × n` column-major `a`, in place (lower triangle).
    pub fn potrf<T: Real>(&self, a: &mut CudaSlice<T>, n: usize) -> Result<Timed, VendorError> {
        let what = format!("{}potrf n={n}", T::NAME);
        let n = n as i32;
        let (ptr, _sync) = a.device_ptr_mut(&self.stream);
        // SAFETY: `a` holds n × n elements on this stream.
        let lwork = unsafe { T::potrf_buffer(&self.solver, n, ptr) }?;
        let mut work = self
            .stream
            .alloc_zeros::<T>(lwork.max(1) as usize)
            .map_err(call(format!("{what}: workspace")))?;
        let mut info = self
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(call(format!("{what}: info")))?;
        let timed = {
            let (w, _sw) = work.device_ptr_mut(&self.stream);
            let (i, _si) = info.device_ptr_mut(&self.stream);
            self.timed(&what, || {
                // SAFETY: `a`, `work` and `info` are live allocations of the sizes the library
                // asked for, on this stream.
                unsafe { T::potrf(&self.solver, n, ptr, w, lwork, i) }
            })?
        };
        self.info(&what, &info)?;
        Ok(timed)
    }

    /// LU `A = L·U` of the `n × n` column-major `a` without pivoting, in place.
    pub fn getrf_nopiv<T: Real>(
        &self,
        a: &mut CudaSlice<T>,
        n: usize,
    ) -> Result<Timed, VendorError> {
        let what = format!("{}getrf (no pivoting) n={n}", T::NAME);
        let n = n as i32;
        let (ptr, _sync) = a.device_ptr_mut(&self.stream);
        // SAFETY: `a` holds n × n elements on this stream.
        let lwork = unsafe { T::getrf_buffer(&self.solver, n, ptr) }?;
        let mut work = self
            .stream
            .alloc_zeros::<T>(lwork.max(1) as usize)
            .map_err(call(format!("{what}: workspace")))?;
        let mut info = self
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(call(format!("{what}: info")))?;
        let timed = {
            let (w, _sw) = work.device_ptr_mut(&self.stream);
            let (i, _si) = info.device_ptr_mut(&self.stream);
            self.timed(&what, || {
                // SAFETY: as in `potrf`.
                unsafe { T::getrf_nopiv(&self.solver, n, ptr, w, i) }
            })?
        };
        self.info(&what, &info)?;
        Ok(timed)
    }

    /// `C_i = A_i · B_i + beta · C_i` for `batch` column-major `m × m` tiles stored one after the
    /// other, as cuBLAS's strided batched GEMM.
    pub fn gemm_strided_batched<T: Real>(
        &self,
        m: usize,
        batch: usize,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        c: &mut CudaSlice<T>,
        beta: T,
    ) -> Result<Timed, VendorError>
    where
        CudaBlas: Gemm<T>,
    {
        let what = format!("{}gemm strided batched {m}³ × {batch}", T::NAME);
        let d = m as i32;
        let stride = (m * m) as i64;
        let cfg = StridedBatchedConfig {
            gemm: GemmConfig {
                transa: cublasOperation_t::CUBLAS_OP_N,
                transb: cublasOperation_t::CUBLAS_OP_N,
                m: d,
                n: d,
                k: d,
                alpha: T::of(1.0),
                lda: d,
                ldb: d,
                beta,
                ldc: d,
            },
            batch_size: batch as i32,
            stride_a: stride,
            stride_b: stride,
            stride_c: stride,
        };
        self.timed(&what, || {
            // SAFETY: each slice holds `batch` tiles of m × m elements.
            unsafe { self.blas.gemm_strided_batched(cfg, a, b, c) }.map_err(call(what.clone()))
        })
    }

    /// `C = alpha · op(A) · op(B) + beta · C` for column-major `n × n` matrices.
    #[allow(clippy::too_many_arguments)]
    fn gemm<T: Real>(
        &self,
        n: usize,
        ta: cublasOperation_t,
        tb: cublasOperation_t,
        alpha: f64,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        beta: f64,
        c: &mut CudaSlice<T>,
    ) -> Result<(), VendorError>
    where
        CudaBlas: Gemm<T>,
    {
        let d = n as i32;
        let cfg = GemmConfig {
            transa: ta,
            transb: tb,
            m: d,
            n: d,
            k: d,
            alpha: T::of(alpha),
            lda: d,
            ldb: d,
            beta: T::of(beta),
            ldc: d,
        };
        // SAFETY: each slice holds n × n elements.
        unsafe { self.blas.gemm(cfg, a, b, c) }.map_err(call(format!("{}gemm n={n}", T::NAME)))
    }

    /// `‖L·Lᵀ − A‖_F / ‖A‖_F` for the lower-triangular factor `l` (its upper triangle ignored) of
    /// the column-major `a`, both `n × n`, computed on the GPU in the element type.
    pub fn cholesky_residual<T: Real>(&self, a: &[T], l: &[T], n: usize) -> Result<f64, VendorError>
    where
        CudaBlas: Gemm<T>,
    {
        let lower: Vec<T> = (0..n * n)
            .map(|e| if e % n >= e / n { l[e] } else { T::default() })
            .collect();
        self.residual(a, &lower, &lower, n, cublasOperation_t::CUBLAS_OP_T)
    }

    /// `‖L·U − A‖_F / ‖A‖_F` for the unit-lower `L` and upper `U` packed in the column-major `lu`.
    pub fn lu_residual<T: Real>(&self, a: &[T], lu: &[T], n: usize) -> Result<f64, VendorError>
    where
        CudaBlas: Gemm<T>,
    {
        let (mut lower, mut upper) = (vec![T::default(); n * n], vec![T::default(); n * n]);
        for e in 0..n * n {
            let (r, c) = (e % n, e / n);
            match r.cmp(&c) {
                std::cmp::Ordering::Greater => lower[e] = lu[e],
                std::cmp::Ordering::Equal => {
                    lower[e] = T::of(1.0);
                    upper[e] = lu[e];
                }
                std::cmp::Ordering::Less => upper[e] = lu[e],
            }
        }
        self.residual(a, &lower, &upper, n, cublasOperation_t::CUBLAS_OP_N)
    }

    /// `‖X·op(Y) − A‖_F / ‖A‖_F`, the product on the GPU, the norms on the host in f64.
    fn residual<T: Real>(
        &self,
        a: &[T],
        x: &[T],
        y: &[T],
        n: usize,
        op_y: cublasOperation_t,
    ) -> Result<f64, VendorError>
    where
        CudaBlas: Gemm<T>,
    {
        let upload = |data: &[T]| {
            self.stream
                .clone_htod(data)
                .map_err(call("uploading a matrix for the residual"))
        };
        let (dx, dy) = (upload(x)?, upload(y)?);
        let mut r = upload(a)?;
        self.gemm(
            n,
            cublasOperation_t::CUBLAS_OP_N,
            op_y,
            1.0,
            &dx,
            &dy,
            -1.0,
            &mut r,
        )?;
        let r = self
            .stream
            .clone_dtoh(&r)
            .map_err(call("reading the residual"))?;
        let norm = |v: &[T]| v.iter().map(|x| x.to_f64().powi(2)).sum::<f64>().sqrt();
        Ok(norm(&r) / norm(a))
    }
}
