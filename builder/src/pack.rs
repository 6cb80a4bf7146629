//! The kernel bundle's bytes: modules gathered as the build goes, compressed in parallel at the
//! end (a crate's cubins and PTX are a hundred megabytes or more before DEFLATE, which takes one
//! core seconds per ten).

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
                        let Some((_, _, _, data)) = self.modules.get(i) else {
                            return;
                        };
                        let _ = packed[i].set(miniz_oxide::deflate::compress_to_vec(data, LEVEL));
                    }
                });
            }
        });
        let mut writer = Writer::default();
        let ids: Vec<u32> = self
            .modules
            .iter()
            .zip(packed)
            .map(|((region, arch, form, data), deflated)| {
                let deflated = deflated.into_inner().unwrap_or_default();
                writer.module(region, *arch, *form, Codec::Deflate, &deflated, data.len())
            })
            .collect();
        for (name, module, symbol, flags) in &self.kernels {
            writer.kernel(name, ids[*module], symbol, *flags);
        }
        writer.finish()
    }
}

/// DEFLATE's level: 6 packs the examples' bundle into 24.7 MB where 3 gave 26.9, and the
/// modules are compressed in parallel.
const LEVEL: u8 = 6;

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
        assert_eq!((m.form, m.size, k.flags), (Form::Cubin, 1200, 1));
        let inflated = miniz_oxide::inflate::decompress_to_vec(m.data).unwrap();
        assert_eq!(inflated, b"cubin bytes ".repeat(100));
        assert!(m.data.len() < 200, "compressed");
    }
}
