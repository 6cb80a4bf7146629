//! The cache of assembled modules and probes, shared by every build of a workspace.
//!
//! `ptxas` takes seconds to minutes on one region's module, and a change to one task body, or to
//! host code only, reruns the whole device build script. Each assembly is kept under a key of
//! everything it depends on: the module's text (canonical: [`taskweave_names::ptx::canonical`],
//! so that one region's change leaves the others' keys alone), the architecture, the `ptxas`
//! version and what was asked of it. A build touches what it uses, and [`Cache::prune`] drops the
//! least recently used entries beyond a size bound.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::ptxas::Report;

/// A folder of cached assemblies.
pub(crate) struct Cache {
    dir: PathBuf,
}

/// What is cached of one assembly: the cubin (none for a probe) and `ptxas`'s report.
pub(crate) struct Entry {
    pub cubin: Option<Vec<u8>>,
    pub report: Report,
}

impl Cache {
    /// The cache in `dir` (made when first written).
    pub(crate) fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    /// The key of an assembly of `text` with `parts` (architecture, `ptxas` version, options).
    pub(crate) fn key(text: &str, parts: &[&str]) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        parts.hash(&mut hasher);
        text.hash(&mut hasher);
        hasher.finish()
    }

    fn path(&self, key: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("{key:016x}.{ext}"))
    }

    /// The entry of `key`, if it is there whole (with a cubin when `cubin` is asked for).
    pub(crate) fn get(&self, key: u64, cubin: bool) -> Option<Entry> {
        let report = self.path(key, "txt");
        let text = std::fs::read_to_string(&report).ok()?;
        touch(&report);
        let cubin = match cubin {
            true => {
                let path = self.path(key, "cubin");
                let bytes = std::fs::read(&path).ok().filter(|b| !b.is_empty())?;
                touch(&path);
                Some(bytes)
            }
            false => None,
        };
        Some(Entry {
            cubin,
            report: Report::parse(&text),
        })
    }

    /// Keeps `entry` under `key`. A cache that cannot be written only costs a later build its
    /// assembly. Each file goes in under a name of its own and is renamed, so that a build beside
    /// this one never reads half of it; the report goes last, as [`Cache::get`] reads it first.
    pub(crate) fn put(&self, key: u64, entry: &Entry) {
        if std::fs::create_dir_all(&self.dir).is_err() {
            return;
        }
        let write = |ext: &str, bytes: &[u8]| {
            let partial = self
                .dir
                .join(format!("{key:016x}.{ext}.{}.partial", std::process::id()));
            if std::fs::write(&partial, bytes).is_ok() {
                let _ = std::fs::rename(&partial, self.path(key, ext));
            }
        };
        if let Some(cubin) = &entry.cubin {
            write("cubin", cubin);
        }
        write("txt", entry.report.to_text().as_bytes());
    }

    /// Removes the least recently used files until the folder holds at most `keep` bytes, sparing
    /// every file used since `since` (this build's).
    pub(crate) fn prune(&self, keep: u64, since: SystemTime) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort_by_key(|f| f.0);
        for (modified, bytes, path) in files {
            if total <= keep || modified >= since {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= bytes;
            }
        }
    }
}

/// Marks `path` as used now, for [`Cache::prune`].
fn touch(path: &Path) {
    if let Ok(file) = std::fs::File::options().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ptxas::KernelReport;

    #[test]
    fn entries_come_back_and_old_ones_go() {
        let dir = std::env::temp_dir().join(format!("taskweave-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = Cache::new(dir.clone());
        let mut report = Report::default();
        report.kernels.insert(
            "k".to_owned(),
            KernelReport {
                registers: 40,
                ..KernelReport::default()
            },
        );
        let (a, b) = (
            Cache::key("text", &["sm_90"]),
            Cache::key("text", &["sm_80"]),
        );
        assert_ne!(a, b, "the architecture is part of the key");
        assert!(cache.get(a, true).is_none());
        cache.put(
            a,
            &Entry {
                cubin: Some(b"\x7fELF".to_vec()),
                report: report.clone(),
            },
        );
        let got = cache.get(a, true).unwrap();
        assert_eq!(
            (got.cubin.unwrap(), got.report),
            (b"\x7fELF".to_vec(), report.clone())
        );
        // A probe's entry has no cubin, and does not answer for an assembly.
        cache.put(
            b,
            &Entry {
                cubin: None,
                report,
            },
        );
        assert!(cache.get(b, false).is_some() && cache.get(b, true).is_none());
        // Everything was used after `before`: nothing goes; with `since` later, the oldest go.
        let before = SystemTime::now() - std::time::Duration::from_secs(60);
        cache.prune(0, before);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let now = SystemTime::now();
        cache.prune(0, now);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
