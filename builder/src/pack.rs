//! The kernel bundle's bytes: modules gathered as the build goes, compressed in parallel at the
//! end (a crate's cubins and PTX are a hundred megabytes or more before compression, which takes
//! one core seconds per ten): cubins as LZ4 blocks, PTX with DEFLATE ([`codec`]).

use taskweave_names::bundle::{Codec, Form, Writer};

/// A bundle being gathered.
#[derive(Default)]
pub(crate) struct Packer {
    modules: Vec<(String, u32, Form, Vec<u8>)>,
    kernels: Vec<(String, usize, String, u32)>,
}

impl Packer {
    /// Adds a module of `region` for `arch`; its index.
    pub(crate) fn module(&mut self, region: &str, arch: u32, form: Form, data: Vec<u8>) -> usize {
        self.modules.push((region.to_owned(), arch, form, data));
        self.modules.len() - 1
    }

    /// Says that kernel `name` is `symbol` of module `module`, with `flags`.
    pub(crate) fn kernel(&mut self, name: &str, module: usize, symbol: &str, flags: u32) {
        self.kernels
            .push((name.to_owned(), module, symbol.to_owned(), flags));
    }

    /// The bundle, its modules compressed on `jobs` threads.
    pub(crate) fn finish(self, jobs: usize) -> Vec<u8> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let next = AtomicUsize::new(0);
        let packed: Vec<std::sync::OnceLock<Vec<u8>>> =
            self.modules.iter().map(|_| Default::default()).collect();
        std::thread::scope(|scope| {
            for _ in 0..jobs.clamp(1, self.modules.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((_, _, form, data)) = self.modules.get(i) else {
                            return;
                        };
                        let _ = packed[i].set(pack(*form, data));
                    }
                });
            }
        });
        let mut writer = Writer::default();
        let ids: Vec<u32> = self
            .modules
            .iter()
            .zip(packed)
            .map(|((region, arch, form, data), packed)| {
                let packed = packed.into_inner().unwrap_or_default();
                writer.module(region, *arch, *form, codec(*form), &packed, data.len())
            })
            .collect();
        for (name, module, symbol, flags) in &self.kernels {
            writer.kernel(name, ids[*module], symbol, *flags);
        }
        writer.finish()
    }
}

/// DEFLATE's level, for PTX: 6 packed the examples' bundle (cubins too, then) into 24.7 MB where 3
/// gave 26.9, and the modules are compressed in parallel.
const LEVEL: u8 = 6;

/// How a module of `form` is packed: a cubin, which a call loads before it can start, as an LZ4
/// block, which the H200's host inflated in 1.2-1.4 ms where DEFLATE took 4-5 (a 1.1 MB kernel,
/// bench/results/kernel-load-h200/), at 1.5x the bytes; PTX, loaded only where no cubin runs and
/// then compiled for seconds, with DEFLATE, which packs it tighter.
fn codec(form: Form) -> Codec {
    match form {
        Form::Cubin => Codec::Lz4,
        Form::Ptx => Codec::Deflate,
    }
}

/// `data`, a module of `form`, packed with its [`codec`].
fn pack(form: Form, data: &[u8]) -> Vec<u8> {
    match codec(form) {
        Codec::Lz4 => lz4_flex::block::compress(data),
        Codec::Deflate => miniz_oxide::deflate::compress_to_vec(data, LEVEL),
        Codec::Raw => data.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskweave_names::bundle::Bundle;

    #[test]
    fn modules_come_back_as_they_went_in() {
        let mut packer = Packer::default();
        let a = packer.module("r_1", 90, Form::Cubin, b"cubin bytes ".repeat(100));
        let b = packer.module("r_1", 90, Form::Ptx, b".target sm_90".to_vec());
        packer.kernel("k", a, "k", 1);
        packer.kernel("k", b, "k", 1);
        let bytes = packer.finish(3);
        let bundle = Bundle::parse(&bytes).unwrap();
        let (m, k) = bundle.find("k", 90).unwrap();
        assert_eq!(
            (m.form, m.codec, m.size, k.flags),
            (Form::Cubin, Codec::Lz4, 1200, 1)
        );
        let inflated = lz4_flex::block::decompress(m.data, m.size).unwrap();
        assert_eq!(inflated, b"cubin bytes ".repeat(100));
        assert!(m.data.len() < 200, "compressed");
        let ptx = bundle.module(b as u32).unwrap();
        assert_eq!((ptx.form, ptx.codec), (Form::Ptx, Codec::Deflate));
        let inflated = miniz_oxide::inflate::decompress_to_vec(ptx.data).unwrap();
        assert_eq!(inflated, b".target sm_90");
    }
}
