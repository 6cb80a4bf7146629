//! The kernel bundle: a kernels crate's device code as the builder writes it and the host reads it.
//!
//! A crate's regions do not share one GPU module. The device build cuts the PTX into one piece per
//! region (and one for the kernels of no region), assembles each piece for each target
//! architecture, and writes them all into one file, [`BUNDLE_FILE`](crate::BUNDLE_FILE), that the
//! crate embeds. The host loads the piece of the region a call runs, on first use: a call never
//! waits for code it does not use.
//!
//! 1. A bundle holds [`ModuleRecord`]s (a cubin for one architecture, or PTX for the driver to
//!    compile) and [`KernelRecord`]s: each kernel name the host asks for, the module that holds it
//!    and its symbol there. Several names may point at one symbol: a kernel whose capped and
//!    uncapped builds would be the same code is assembled once.
//! 2. [`Writer`] builds one; [`Bundle::parse`] reads one without copying; [`Bundle::find`] picks,
//!    for a kernel and a GPU, the cubin of that GPU's architecture, else PTX the GPU can compile.
//! 3. Module data may be compressed ([`Codec`]); the reader leaves it as it is, and the host
//!    inflates it.
//!
//! Every number is a little-endian `u32`; offsets count from the start of the bundle.
//!
//! ```
//! use taskweave_names::bundle::{Bundle, Codec, Form, Writer};
//!
//! let mut w = Writer::default();
//! let m = w.module("lu_0badf00d", 90, Form::Cubin, Codec::Raw, b"\x7fELF...", 8);
//! w.kernel("taskweave_region_lu_0badf00d", m, "taskweave_region_lu_0badf00d", 0);
//! let bytes = w.finish();
//! let bundle = Bundle::parse(&bytes).unwrap();
//! let (module, kernel) = bundle.find("taskweave_region_lu_0badf00d", 90).unwrap();
//! assert_eq!((module.region, module.arch, kernel.symbol), ("lu_0badf00d", 90, "taskweave_region_lu_0badf00d"));
//! assert!(bundle.find("taskweave_region_lu_0badf00d", 80).is_none(), "sm_90 code on sm_80");
//! ```

use alloc::vec::Vec;

/// The first four bytes of a bundle.
pub const MAGIC: [u8; 4] = *b"TWKB";
/// The format's version.
pub const VERSION: u32 = 1;

/// What a module holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// PTX text, which the driver compiles for the GPU at hand (of this architecture or later).
    Ptx,
    /// A cubin, which loads as it is on GPUs of its architecture's major version, from its minor
    /// version on.
    Cubin,
}

/// How a module's data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Codec {
    /// As it is.
    Raw,
    /// Compressed with DEFLATE (RFC 1951, no zlib header).
    Deflate,
    /// An LZ4 block (no frame, no size before it): a cubin, which inflates four times faster than
    /// from DEFLATE at 1.5x the bytes.
    Lz4,
}

/// One module of a bundle.
#[derive(Clone, Copy, Debug)]
pub struct ModuleRecord<'a> {
    /// Its index in the bundle.
    pub index: u32,
    /// The stem of the region whose kernels it holds, or `""` for the kernels of no region.
    pub region: &'a str,
    /// The architecture: 90 for `sm_90`.
    pub arch: u32,
    /// Cubin or PTX.
    pub form: Form,
    /// How `data` is stored.
    pub codec: Codec,
    /// The module, as `codec` stores it.
    pub data: &'a [u8],
    /// Its size once decoded.
    pub size: usize,
}

/// A kernel name and where it is.
#[derive(Clone, Copy, Debug)]
pub struct KernelRecord<'a> {
    /// The name the host asks for.
    pub name: &'a str,
    /// The module that holds it.
    pub module: u32,
    /// Its symbol in that module.
    pub symbol: &'a str,
    /// `KERNEL_*` bits.
    pub flags: u32,
}

/// [`KernelRecord::flags`]: the kernel calls the tile library, whose operations stage their
/// operands in the block's shared memory (see `taskweave::tile::scratch_need`).
pub const KERNEL_USES_TILES: u32 = 1;

/// Why bytes are not a bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BadBundle {
    /// It does not start with [`MAGIC`].
    Magic,
    /// Another version of the format.
    Version(u32),
    /// It ends early, or a record points outside it.
    Truncated,
    /// A name is not UTF-8.
    Name,
    /// A record holds an unknown form or codec.
    Kind,
}

impl core::fmt::Display for BadBundle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Magic => f.write_str("not a taskweave kernel bundle"),
            Self::Version(v) => write!(
                f,
                "a kernel bundle of format {v}, where this taskweave reads {VERSION}: rebuild the kernels crate"
            ),
            Self::Truncated => f.write_str("the kernel bundle is truncated"),
            Self::Name => f.write_str("a name in the kernel bundle is not UTF-8"),
            Self::Kind => f.write_str("the kernel bundle holds a module of an unknown kind"),
        }
    }
}

/// A parsed bundle, borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Bundle<'a> {
    bytes: &'a [u8],
    modules: u32,
    kernels: u32,
}

/// Words in a module record: region (offset, length), arch, form, codec, data (offset, length),
/// decoded size.
const MODULE_WORDS: usize = 8;
/// Words in a kernel record: name (offset, length), module, symbol (offset, length), flags.
const KERNEL_WORDS: usize = 6;
/// Words before the records: magic, version, module count, kernel count.
const HEADER_WORDS: usize = 4;

fn word(bytes: &[u8], at: usize) -> Result<u32, BadBundle> {
    let b = bytes.get(at * 4..at * 4 + 4).ok_or(BadBundle::Truncated)?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn slice(bytes: &[u8], offset: u32, len: u32) -> Result<&[u8], BadBundle> {
    let start = offset as usize;
    bytes
        .get(
            start
                ..start
                    .checked_add(len as usize)
                    .ok_or(BadBundle::Truncated)?,
        )
        .ok_or(BadBundle::Truncated)
}

fn text(bytes: &[u8], offset: u32, len: u32) -> Result<&str, BadBundle> {
    core::str::from_utf8(slice(bytes, offset, len)?).map_err(|_| BadBundle::Name)
}

impl<'a> Bundle<'a> {
    /// Reads the header and checks every record.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BadBundle> {
        if bytes.get(..4) != Some(&MAGIC[..]) {
            return Err(BadBundle::Magic);
        }
        let version = word(bytes, 1)?;
        if version != VERSION {
            return Err(BadBundle::Version(version));
        }
        let bundle = Self {
            bytes,
            modules: word(bytes, 2)?,
            kernels: word(bytes, 3)?,
        };
        for m in 0..bundle.modules {
            bundle.module(m)?;
        }
        for k in 0..bundle.kernels {
            let record = bundle.kernel_record(k)?;
            if record.module >= bundle.modules {
                return Err(BadBundle::Truncated);
            }
        }
        Ok(bundle)
    }

    /// Module `index`.
    pub fn module(&self, index: u32) -> Result<ModuleRecord<'a>, BadBundle> {
        if index >= self.modules {
            return Err(BadBundle::Truncated);
        }
        let at = HEADER_WORDS + index as usize * MODULE_WORDS;
        let w = |i| word(self.bytes, at + i);
        Ok(ModuleRecord {
            index,
            region: text(self.bytes, w(0)?, w(1)?)?,
            arch: w(2)?,
            form: match w(3)? {
                0 => Form::Ptx,
                1 => Form::Cubin,
                _ => return Err(BadBundle::Kind),
            },
            codec: match w(4)? {
                0 => Codec::Raw,
                1 => Codec::Deflate,
                2 => Codec::Lz4,
                _ => return Err(BadBundle::Kind),
            },
            data: slice(self.bytes, w(5)?, w(6)?)?,
            size: w(7)? as usize,
        })
    }

    fn kernel_record(&self, index: u32) -> Result<KernelRecord<'a>, BadBundle> {
        let at =
            HEADER_WORDS + self.modules as usize * MODULE_WORDS + index as usize * KERNEL_WORDS;
        let w = |i| word(self.bytes, at + i);
        Ok(KernelRecord {
            name: text(self.bytes, w(0)?, w(1)?)?,
            module: w(2)?,
            symbol: text(self.bytes, w(3)?, w(4)?)?,
            flags: w(5)?,
        })
    }

    /// Every module.
    pub fn modules(&self) -> impl Iterator<Item = ModuleRecord<'a>> + '_ {
        (0..self.modules).filter_map(|m| self.module(m).ok())
    }

    /// Every kernel record.
    pub fn kernels(&self) -> impl Iterator<Item = KernelRecord<'a>> + '_ {
        (0..self.kernels).filter_map(|k| self.kernel_record(k).ok())
    }

    /// Where kernel `name` is for a GPU of architecture `gpu` (90 for `sm_90`): in a cubin of the
    /// same major version and at most its minor version (the newest such), else in PTX of an
    /// architecture at most `gpu` (the newest), which the driver compiles; with its record.
    pub fn find(&self, name: &str, gpu: u32) -> Option<(ModuleRecord<'a>, KernelRecord<'a>)> {
        let candidates = || {
            self.kernels()
                .filter(move |k| k.name == name)
                .filter_map(|k| Some((self.module(k.module).ok()?, k)))
        };
        let cubin = candidates()
            .filter(|(m, _)| m.form == Form::Cubin && m.arch / 10 == gpu / 10 && m.arch <= gpu)
            .max_by_key(|(m, _)| m.arch);
        cubin.or_else(|| {
            candidates()
                .filter(|(m, _)| m.form == Form::Ptx && m.arch <= gpu)
                .max_by_key(|(m, _)| m.arch)
        })
    }

    /// Whether the bundle holds kernel `name` in any form, for any architecture.
    pub fn has(&self, name: &str) -> bool {
        self.kernels().any(|k| k.name == name)
    }

    /// The architectures the bundle has cubins for, ascending, each once.
    pub fn cubin_archs(&self) -> Vec<u32> {
        let mut archs: Vec<u32> = self
            .modules()
            .filter(|m| m.form == Form::Cubin)
            .map(|m| m.arch)
            .collect();
        archs.sort_unstable();
        archs.dedup();
        archs
    }
}

/// Builds a bundle.
#[derive(Debug, Default)]
pub struct Writer {
    modules: Vec<[u32; MODULE_WORDS]>,
    kernels: Vec<[u32; KERNEL_WORDS]>,
    /// Names and data, placed after the records once their count is known.
    blob: Vec<u8>,
}

impl Writer {
    /// Appends `bytes` to the blob: its offset in the blob and its length.
    fn put(&mut self, bytes: &[u8]) -> (u32, u32) {
        let at = self.blob.len() as u32;
        self.blob.extend_from_slice(bytes);
        (at, bytes.len() as u32)
    }

    /// Adds a module of region `region` (`""` for kernels of no region) for `arch`, stored as
    /// `codec` says in `data`, `size` bytes once decoded; returns its index.
    pub fn module(
        &mut self,
        region: &str,
        arch: u32,
        form: Form,
        codec: Codec,
        data: &[u8],
        size: usize,
    ) -> u32 {
        let (r_at, r_len) = self.put(region.as_bytes());
        let (d_at, d_len) = self.put(data);
        let form = match form {
            Form::Ptx => 0,
            Form::Cubin => 1,
        };
        let codec = match codec {
            Codec::Raw => 0,
            Codec::Deflate => 1,
            Codec::Lz4 => 2,
        };
        self.modules
            .push([r_at, r_len, arch, form, codec, d_at, d_len, size as u32]);
        self.modules.len() as u32 - 1
    }

    /// Says that kernel `name` is `symbol` of module `module`, with `flags` (`KERNEL_*`).
    pub fn kernel(&mut self, name: &str, module: u32, symbol: &str, flags: u32) {
        let (n_at, n_len) = self.put(name.as_bytes());
        let (s_at, s_len) = self.put(symbol.as_bytes());
        self.kernels.push([n_at, n_len, module, s_at, s_len, flags]);
    }

    /// The bundle's bytes.
    pub fn finish(self) -> Vec<u8> {
        let records =
            HEADER_WORDS + self.modules.len() * MODULE_WORDS + self.kernels.len() * KERNEL_WORDS;
        let base = (records * 4) as u32;
        let mut out = Vec::with_capacity(records * 4 + self.blob.len());
        out.extend_from_slice(&MAGIC);
        for w in [
            VERSION,
            self.modules.len() as u32,
            self.kernels.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        for m in &self.modules {
            let mut m = *m;
            (m[0], m[5]) = (m[0] + base, m[5] + base);
            for w in m {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        for k in &self.kernels {
            let mut k = *k;
            (k[0], k[3]) = (k[0] + base, k[3] + base);
            for w in k {
                out.extend_from_slice(&w.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.blob);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = Writer::default();
        let ptx = w.module("lu_1", 80, Form::Ptx, Codec::Raw, b".target sm_80", 13);
        let c80 = w.module("lu_1", 80, Form::Cubin, Codec::Deflate, b"zz", 100);
        let c90 = w.module("lu_1", 90, Form::Cubin, Codec::Raw, b"ELF90", 5);
        let twin = w.module("lu_1", 90, Form::Cubin, Codec::Lz4, b"ELF90b", 6);
        for m in [ptx, c80, c90] {
            w.kernel(
                "taskweave_region_lu_1",
                m,
                "taskweave_region_lu_1",
                KERNEL_USES_TILES,
            );
        }
        // The uncapped twin is the capped kernel's symbol in another module.
        w.kernel(
            "taskweave_region_lu_1__uncapped",
            twin,
            "taskweave_region_lu_1",
            0,
        );
        w.finish()
    }

    #[test]
    fn a_kernel_is_found_in_the_cubin_of_the_gpu_else_in_ptx_it_can_compile() {
        let bytes = sample();
        let b = Bundle::parse(&bytes).unwrap();
        let arch = |gpu| {
            b.find("taskweave_region_lu_1", gpu)
                .map(|(m, _)| (m.arch, m.form))
        };
        assert_eq!(arch(90), Some((90, Form::Cubin)));
        assert_eq!(
            arch(89),
            Some((80, Form::Cubin)),
            "sm_80 code runs on sm_89"
        );
        assert_eq!(
            arch(100),
            Some((80, Form::Ptx)),
            "no cubin of major 10: compile PTX"
        );
        assert_eq!(arch(75), None, "nothing runs on sm_75");
        let (m, k) = b.find("taskweave_region_lu_1__uncapped", 90).unwrap();
        assert_eq!(
            (m.codec, m.data, k.symbol, k.flags),
            (Codec::Lz4, &b"ELF90b"[..], "taskweave_region_lu_1", 0)
        );
        let (_, k) = b.find("taskweave_region_lu_1", 90).unwrap();
        assert_eq!(k.flags, KERNEL_USES_TILES);
        let m = b.module(1).unwrap();
        assert_eq!((m.codec, m.data, m.size), (Codec::Deflate, &b"zz"[..], 100));
        assert_eq!(b.cubin_archs(), [80, 90]);
        assert!(b.has("taskweave_region_lu_1") && !b.has("taskweave_region_lu_2"));
    }

    #[test]
    fn bad_bytes_are_refused_with_a_reason() {
        let bytes = sample();
        assert_eq!(Bundle::parse(b"ELF").unwrap_err(), BadBundle::Magic);
        let mut old = bytes.clone();
        old[4] = 0;
        assert_eq!(Bundle::parse(&old).unwrap_err(), BadBundle::Version(0));
        assert_eq!(
            Bundle::parse(&bytes[..bytes.len() - 3]).unwrap_err(),
            BadBundle::Truncated
        );
        let empty = Writer::default().finish();
        assert_eq!(Bundle::parse(&empty).unwrap().modules().count(), 0);
    }
}
