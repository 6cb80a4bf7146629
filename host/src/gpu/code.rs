//! Loading kernels from a crate's device code, a kernel at a time.
//!
//! 1. [`Gpu::function`] finds a kernel in the crate's [bundle](taskweave_names::bundle): in the
//!    cubin of this GPU's architecture when the build made one, loaded as it is; else in the
//!    region's PTX, of which the kernel alone (and what it calls) goes to the driver to compile.
//!    Either way only the module of the call's kernel (of its region, in a debug build) is
//!    loaded and inflated, once per device.
//! 2. Before the driver compiles PTX, which takes seconds to a minute per kernel, the runtime says
//!    so on stderr: what, how large, why there was no cubin, and that the driver keeps the result
//!    in its cache.
//! 3. [`Gpu::loads`] lists what was loaded and how long it took.

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaFunction, CudaModule};
use cudarc::nvrtc::Ptx;
use taskweave_names::bundle::{Bundle, Codec, Form, KERNEL_USES_TILES, ModuleRecord};
use taskweave_names::ptx::Module;

use super::{Gpu, PtxTarget};
use crate::error::Error;
use crate::meta::Code;

/// What one load was.
#[derive(Clone, Debug)]
pub struct Load {
    /// The region whose kernels it loaded (`""`: kernels of no region or plain PTX).
    pub region: String,
    /// A cubin loaded as it is, or PTX the driver compiled.
    pub compiled: bool,
    /// The kernel it was for, when the driver compiled one kernel.
    pub kernel: Option<String>,
    /// Bytes handed to the driver.
    pub bytes: usize,
    /// The time it took, inflating included.
    pub time: Duration,
}

/// What names a loaded module: the code's address, the bundle module's index (`u32::MAX` for
/// plain PTX), and the kernel when the driver compiled one kernel of it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ModuleKey {
    code: usize,
    module: u32,
    kernel: Option<String>,
}

impl Gpu {
    /// Kernel `name` of `code`, its module loaded on first use (see the module docs).
    pub fn function(&self, code: impl Into<Code>, name: &str) -> Result<CudaFunction, Error> {
        let code = code.into();
        let (module, symbol) = match code {
            Code::Ptx(ptx) => (self.load_ptx(ptx)?, name.to_owned()),
            Code::Bundle(bytes) => {
                let bundle = Bundle::parse(bytes).map_err(|e| Error::BadBundle {
                    reason: e.to_string(),
                })?;
                let Some((record, kernel)) = bundle.find(name, self.arch) else {
                    return Err(self.not_found(&bundle, name));
                };
                (
                    self.load_record(&code, &bundle, record, kernel.symbol)?,
                    kernel.symbol.to_owned(),
                )
            }
        };
        module.load_function(&symbol).map_err(Error::cuda(format!(
            "finding kernel `{name}` in its module"
        )))
    }

    /// Whether `code` holds kernel `name` for this GPU, without loading it.
    pub(crate) fn has_kernel(&self, code: Code, name: &str) -> bool {
        match code {
            Code::Ptx(ptx) => self
                .load_ptx(ptx)
                .is_ok_and(|m| m.load_function(name).is_ok()),
            Code::Bundle(bytes) => {
                Bundle::parse(bytes).is_ok_and(|b| b.find(name, self.arch).is_some())
            }
        }
    }

    /// Whether kernel `name` of `code` calls the tile library (as its bundle says; plain PTX says
    /// nothing, and counts as not).
    pub(crate) fn uses_tiles(&self, code: Code, name: &str) -> bool {
        match code {
            Code::Ptx(_) => false,
            Code::Bundle(bytes) => Bundle::parse(bytes).is_ok_and(|b| {
                b.find(name, self.arch)
                    .is_some_and(|(_, k)| k.flags & KERNEL_USES_TILES != 0)
            }),
        }
    }

    /// Checks that `code` has something this GPU runs, before anything is allocated: for plain
    /// PTX by loading it, for a bundle by its records.
    pub fn check_code(&self, code: impl Into<Code>) -> Result<(), Error> {
        match code.into() {
            Code::Ptx(ptx) => self.load_ptx(ptx).map(drop),
            Code::Bundle(bytes) => {
                let bundle = Bundle::parse(bytes).map_err(|e| Error::BadBundle {
                    reason: e.to_string(),
                })?;
                let runs = bundle.modules().any(|m| match m.form {
                    Form::Cubin => m.arch / 10 == self.arch / 10 && m.arch <= self.arch,
                    Form::Ptx => m.arch <= self.arch,
                });
                match runs || bundle.modules().next().is_none() {
                    true => Ok(()),
                    false => Err(self.arch_error(&bundle)),
                }
            }
        }
    }

    /// What was loaded on this device so far, in order.
    pub fn loads(&self) -> Vec<Load> {
        self.loads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The module of one bundle record (for PTX, of `symbol` alone), loaded once.
    fn load_record(
        &self,
        code: &Code,
        bundle: &Bundle<'_>,
        record: ModuleRecord<'_>,
        symbol: &str,
    ) -> Result<Arc<CudaModule>, Error> {
        let key = ModuleKey {
            code: code.address(),
            module: record.index,
            kernel: (record.form == Form::Ptx).then(|| symbol.to_owned()),
        };
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = modules.get(&key) {
            return Ok(module.clone());
        }
        let start = Instant::now();
        let data = inflate(&record).map_err(|reason| Error::BadBundle { reason })?;
        let (module, bytes) = match record.form {
            Form::Cubin => {
                let bytes = data.len();
                let module = self
                    .ctx
                    .load_module(Ptx::from_binary(data))
                    .map_err(|source| self.load_error(record, source))?;
                (module, bytes)
            }
            Form::Ptx => {
                let text = String::from_utf8(data).map_err(|_| Error::BadBundle {
                    reason: "a PTX module is not UTF-8".to_owned(),
                })?;
                let alone = Module::parse(&text).with_kernels(|name| name == symbol);
                self.say_compiling(bundle, record, symbol, alone.len());
                let module = self
                    .ctx
                    .load_module(Ptx::from_src(alone.clone()))
                    .map_err(|source| self.load_error(record, source))?;
                (module, alone.len())
            }
        };
        let time = start.elapsed();
        if record.form == Form::Ptx {
            eprintln!(
                "taskweave: compiled `{symbol}` in {:.1} s",
                time.as_secs_f64()
            );
        }
        self.loads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Load {
                region: record.region.to_owned(),
                compiled: record.form == Form::Ptx,
                kernel: key.kernel.clone(),
                bytes,
                time,
            });
        modules.insert(key, module.clone());
        Ok(module)
    }

    /// Plain PTX, loaded whole on first use, after checking that its `.target` runs on this GPU.
    /// PTX whose `.target` this GPU cannot run, or that the driver rejects, gives
    /// [`Error::PtxArch`], which names both architectures and the fix.
    pub fn load_ptx(&self, ptx: &'static str) -> Result<Arc<CudaModule>, Error> {
        let key = ModuleKey {
            code: ptx.as_ptr() as usize,
            module: u32::MAX,
            kernel: None,
        };
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = modules.get(&key) {
            return Ok(module.clone());
        }
        let target = PtxTarget::of(ptx);
        let arch_error = |detail: String| Error::PtxArch {
            ptx_arch: target.map_or_else(|| "an unknown target".to_owned(), |t| t.to_string()),
            gpu: self.name.clone(),
            gpu_arch: self.arch(),
            detail,
        };
        match target {
            Some(target) if !target.runs_on(self.arch) => {
                return Err(arch_error(format!(
                    "{target} code does not run on {}",
                    self.arch()
                )));
            }
            None => return Err(arch_error("the PTX has no `.target sm_NN` line".to_owned())),
            Some(_) => {}
        }
        let start = Instant::now();
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|source| match source.0 {
                CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
                | CUresult::CUDA_ERROR_INVALID_PTX
                | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                | CUresult::CUDA_ERROR_INVALID_IMAGE => {
                    arch_error(format!("the driver could not load it ({source})"))
                }
                _ => Error::Cuda {
                    context: "loading the PTX module".to_owned(),
                    source,
                },
            })?;
        self.loads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Load {
                region: String::new(),
                compiled: true,
                kernel: None,
                bytes: ptx.len(),
                time: start.elapsed(),
            });
        modules.insert(key, module.clone());
        Ok(module)
    }

    /// Tells the user that the driver is about to compile `symbol`, and why.
    fn say_compiling(
        &self,
        bundle: &Bundle<'_>,
        record: ModuleRecord<'_>,
        symbol: &str,
        bytes: usize,
    ) {
        let why = match bundle.cubin_archs().as_slice() {
            [] => {
                "this build had no ptxas (scripts/setup.sh installs one; see the build's warning)"
                    .to_owned()
            }
            archs => format!(
                "this build has cubins for {} and the GPU is {}",
                archs
                    .iter()
                    .map(|a| format!("sm_{a}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.arch()
            ),
        };
        let cache = std::env::var("CUDA_CACHE_MAXSIZE").map_or_else(
            |_| "unset, so the driver's default".to_owned(),
            |v| format!("{v} bytes"),
        );
        let region = record
            .region
            .rsplit_once('_')
            .map_or(record.region, |(r, _)| r);
        eprintln!(
            "taskweave: no cubin: {why}. The CUDA driver is compiling `{symbol}` (region `{region}`, \
             {:.1} MB of sm_{} PTX) for {}; this takes seconds to a minute, once: the driver keeps \
             the result in its cache (CUDA_CACHE_MAXSIZE: {cache}; set it to 4294967296 so that \
             every kernel fits)",
            bytes as f64 / 1e6,
            record.arch,
            self.arch()
        );
    }

    /// The error for a bundle record the driver would not load.
    fn load_error(&self, record: ModuleRecord<'_>, source: cudarc::driver::DriverError) -> Error {
        match source.0 {
            CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
            | CUresult::CUDA_ERROR_INVALID_PTX
            | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            | CUresult::CUDA_ERROR_INVALID_IMAGE => Error::PtxArch {
                ptx_arch: format!("sm_{}", record.arch),
                gpu: self.name.clone(),
                gpu_arch: self.arch(),
                detail: format!("the driver could not load it ({source})"),
            },
            _ => Error::Cuda {
                context: format!(
                    "loading the kernels of region `{}`",
                    record
                        .region
                        .rsplit_once('_')
                        .map_or(record.region, |(r, _)| r)
                ),
                source,
            },
        }
    }

    /// The error for kernel `name`, which `bundle` holds for no architecture this GPU runs, or
    /// not at all.
    fn not_found(&self, bundle: &Bundle<'_>, name: &str) -> Error {
        if bundle.has(name) {
            return self.arch_error(bundle);
        }
        Error::MissingKernel {
            kernel: name.to_owned(),
        }
    }

    /// The error for a bundle with nothing this GPU runs.
    fn arch_error(&self, bundle: &Bundle<'_>) -> Error {
        let archs: Vec<String> = {
            let mut a: Vec<u32> = bundle.modules().map(|m| m.arch).collect();
            a.sort_unstable();
            a.dedup();
            a.iter().map(|a| format!("sm_{a}")).collect()
        };
        Error::PtxArch {
            ptx_arch: archs.join(", "),
            gpu: self.name.clone(),
            gpu_arch: self.arch(),
            detail: format!("no cubin or PTX of this build runs on {}", self.arch()),
        }
    }
}

/// A module's data as the driver takes it.
fn inflate(record: &ModuleRecord<'_>) -> Result<Vec<u8>, String> {
    match record.codec {
        Codec::Raw => Ok(record.data.to_vec()),
        Codec::Deflate => {
            miniz_oxide::inflate::decompress_to_vec_with_limit(record.data, record.size)
                .map_err(|e| format!("a module of the kernel bundle does not inflate: {e:?}"))
        }
        Codec::Lz4 => lz4_flex::block::decompress(record.data, record.size)
            .map_err(|e| format!("a module of the kernel bundle does not inflate: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cubin-like record of `codec` holding `packed`, `size` bytes once decoded.
    fn record(codec: Codec, packed: &[u8], size: usize) -> ModuleRecord<'_> {
        ModuleRecord {
            index: 0,
            region: "r_1",
            arch: 90,
            form: Form::Cubin,
            codec,
            data: packed,
            size,
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "compressing runs for minutes under Miri, and `inflate` has no unsafe code"
    )]
    fn every_codec_inflates_what_it_packed_and_a_cut_module_is_an_error() {
        let cubin: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let lz4 = lz4_flex::block::compress(&cubin);
        let deflate = miniz_oxide::deflate::compress_to_vec(&cubin, 6);
        for (codec, packed) in [
            (Codec::Raw, &cubin),
            (Codec::Lz4, &lz4),
            (Codec::Deflate, &deflate),
        ] {
            let got = inflate(&record(codec, packed, cubin.len()));
            assert_eq!(got.as_deref(), Ok(&cubin[..]), "{codec:?}");
        }
        let cut = &lz4[..lz4.len() / 2];
        let error = inflate(&record(Codec::Lz4, cut, cubin.len())).unwrap_err();
        assert!(error.contains("does not inflate"), "{error}");
    }
}
