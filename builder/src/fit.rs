//! Fitting the register cap of each persistent kernel to the kernel: the fewest registers it
//! assembles in without spilling, found with `ptxas` at build time.
//!
//! A persistent kernel calls its task bodies out of line, so its register count is about the
//! heaviest body's plus the few registers the scheduler loop keeps across the call. `ptxas`
//! without a cap spends more than that (it uses the registers it is given), and a fixed cap is
//! wrong both ways: too high for light bodies (fewer resident workers than they could have), too
//! low for heavy ones (spills inside the bodies). So the builder caps each kernel at the smallest
//! rung of [`LADDER`] where it spills no more than without a cap.
//!
//! 1. [`Module::alone`]: one kernel and the functions it calls, so that each probe assembles a
//!    few hundred kilobytes rather than the crate's whole PTX.
//! 2. [`spills`]: `ptxas -v` on it; the bytes of spill stores of every function.
//! 3. [`search`]: the smallest rung that spills no function more than the uncapped kernel does
//!    (the panic path's formatting functions, called through `dyn`, save registers whatever the
//!    cap, and `ptxas` counts those as spills).
//!
//! Results are cached by a hash of the kernel's text, so a rebuild probes only kernels whose code
//! changed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The caps tried: every register count at which the resident blocks of 64, 128 or 256 threads
/// change, up to the most a thread can have.
pub(crate) const LADDER: [u32; 11] = [32, 40, 48, 56, 64, 72, 80, 96, 128, 168, 255];

/// One top-level item of a PTX module.
enum Item<'a> {
    /// A kernel definition.
    Entry { name: &'a str, text: &'a str },
    /// A function definition or declaration.
    Func { name: &'a str, text: &'a str },
    /// Anything else (directives, globals), kept whole.
    Other(&'a str),
}

/// A PTX module split into its items.
pub(crate) struct Module<'a> {
    items: Vec<Item<'a>>,
    /// Function definitions by name.
    funcs: HashMap<&'a str, &'a str>,
}

impl<'a> Module<'a> {
    /// Splits `ptx` at its top-level items.
    pub(crate) fn parse(ptx: &'a str) -> Self {
        let mut items = Vec::new();
        let mut funcs = HashMap::new();
        let mut rest = ptx;
        while !rest.is_empty() {
            let line_end = rest.find('\n').map_or(rest.len(), |i| i + 1);
            let code = code(&rest[..line_end]).trim_start();
            let entry = strip_linkage(code).strip_prefix(".entry");
            let func = strip_linkage(code).strip_prefix(".func");
            if entry.is_none() && func.is_none() {
                items.push(Item::Other(&rest[..line_end]));
                rest = &rest[line_end..];
                continue;
            }
            let len = item_len(rest);
            let text = &rest[..len];
            match (entry, func) {
                (Some(tail), _) => items.push(Item::Entry {
                    name: ident(tail.trim_start()),
                    text,
                }),
                (_, Some(tail)) => {
                    let name = func_name(tail);
                    if text.contains('{') {
                        funcs.insert(name, text);
                    }
                    items.push(Item::Func { name, text });
                }
                _ => unreachable!(),
            }
            rest = &rest[len..];
        }
        Self { items, funcs }
    }

    /// The names of the kernels defined in the module.
    pub(crate) fn kernels(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.items.iter().filter_map(|item| match item {
            Item::Entry { name, .. } => Some(*name),
            _ => None,
        })
    }

    /// The module with kernel `kernel` alone and the functions it reaches, under `.maxnreg cap`
    /// when `cap` is given; `None` if there is no such kernel.
    pub(crate) fn alone(&self, kernel: &str, cap: Option<u32>) -> Option<String> {
        self.kernels()
            .any(|name| name == kernel)
            .then(|| self.only(|name| name == kernel, cap))
    }

    /// The module with the kernels that `keep` names and the functions they reach, each kept
    /// kernel under `.maxnreg cap` when `cap` is given.
    pub(crate) fn only(&self, keep: impl Fn(&str) -> bool, cap: Option<u32>) -> String {
        let bodies: Vec<&str> = self
            .items
            .iter()
            .filter_map(|item| match item {
                Item::Entry { name, text } if keep(name) => Some(*text),
                _ => None,
            })
            .collect();
        let mut reached = HashSet::new();
        let mut todo = bodies.clone();
        while let Some(text) = todo.pop() {
            for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')) {
                if let Some((name, def)) = self.funcs.get_key_value(word)
                    && reached.insert(*name)
                {
                    todo.push(def);
                }
            }
        }
        let mut out = String::with_capacity(bodies.iter().map(|b| b.len() * 4).sum());
        for item in &self.items {
            match item {
                Item::Other(text) => out.push_str(text),
                Item::Func { name, text } if reached.contains(name) => out.push_str(text),
                Item::Func { .. } => {}
                Item::Entry { name, text } if keep(name) => match cap {
                    Some(cap) => out.push_str(&with_cap(text, cap)),
                    None => out.push_str(text),
                },
                Item::Entry { .. } => {}
            }
        }
        out
    }
}

/// A line without its comment.
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

/// `text` without a leading `.visible`, `.weak` or `.extern`.
fn strip_linkage(text: &str) -> &str {
    [".visible", ".weak", ".extern"]
        .iter()
        .find_map(|l| text.strip_prefix(l))
        .map_or(text, str::trim_start)
}

/// The identifier at the start of `text`.
fn ident(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$'))
        .unwrap_or(text.len());
    &text[..end]
}

/// The name of a function from what follows `.func`: an optional return parameter list, then
/// the name.
fn func_name(tail: &str) -> &str {
    let tail = tail.trim_start();
    let tail = match tail.strip_prefix('(') {
        Some(inner) => inner[inner.find(')').map_or(inner.len(), |i| i + 1)..].trim_start(),
        None => tail,
    };
    ident(tail)
}

/// The length of the item (kernel or function) that starts `text`: through its body's closing
/// brace, or through the `;` of a declaration. PTX has no string literals, and inline assembly
/// braces come in pairs.
fn item_len(text: &str) -> usize {
    let mut depth = 0i32;
    let mut seen_body = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        at += line.len();
        let code = code(line);
        depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
        seen_body |= code.contains('{');
        if (seen_body && depth == 0) || (!seen_body && code.trim_end().ends_with(';')) {
            return at;
        }
    }
    text.len()
}

/// `kernel` (an entry's text) with `.maxnreg cap` before its body.
fn with_cap(kernel: &str, cap: u32) -> String {
    let mut out = String::with_capacity(kernel.len() + 16);
    let mut done = false;
    for line in kernel.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(".maxnreg") {
            continue;
        }
        if !done && trimmed.starts_with('{') {
            out.push_str(&format!(".maxnreg {cap}\n"));
            done = true;
        }
        out.push_str(line);
    }
    out
}

/// What `ptxas -v` reports for a module of one kernel.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Report {
    /// The registers the kernel uses.
    registers: Option<u32>,
    /// Bytes of spill stores per function.
    spills: BTreeMap<String, u64>,
}

/// `ptxas -v`'s report on `ptx` (assembled from a scratch file `path`).
pub(crate) fn assemble(ptxas: &Path, arch: &str, path: &Path, ptx: &str) -> Result<Report, String> {
    std::fs::write(path, ptx).map_err(|e| format!("writing {}: {e}", path.display()))?;
    let output = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(path)
        .args(["-o", if cfg!(windows) { "NUL" } else { "/dev/null" }])
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let _ = std::fs::remove_file(path);
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            ptxas.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(parse_report(&String::from_utf8_lossy(&output.stderr)))
}

/// The number that ends `text`.
fn last_number(text: &str) -> Option<u64> {
    text.trim_end()
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
}

/// Reads `ptxas -v`'s report on a module of one kernel: each "Function properties for NAME" line,
/// then its "… bytes spill stores …" line; and the kernel's "Used N registers".
fn parse_report(text: &str) -> Report {
    let mut report = Report::default();
    let mut function = None;
    for line in text.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            function = Some(name.trim().to_owned());
        } else if let Some(at) = line.find(" bytes spill stores")
            && let Some(name) = function.take()
        {
            report
                .spills
                .insert(name, last_number(&line[..at]).unwrap_or(0));
        } else if let Some(at) = line.find(" registers")
            && let Some(used) = line[..at].split("Used ").nth(1)
            && report.registers.is_none()
        {
            report.registers = used.trim().parse().ok();
        }
    }
    report
}

/// Whether `probe` spills some function more than `base` does.
fn spills_more(base: &Report, probe: &Report) -> bool {
    probe
        .spills
        .iter()
        .any(|(name, &bytes)| bytes > base.spills.get(name).copied().unwrap_or(0))
}

/// The smallest rung of [`LADDER`] at which `fits` holds, trying as few as it can on the
/// assumption that a cap that fits leaves every larger one fitting, and knowing that the rungs
/// from `known` on fit (a cap at or above what the kernel uses uncapped changes nothing): `None`
/// if none does.
pub(crate) fn search(
    known: usize,
    mut fits: impl FnMut(u32) -> Result<bool, String>,
) -> Result<Option<u32>, String> {
    let (mut lo, mut hi) = (0, known.min(LADDER.len()));
    // Invariant: every rung below `lo` does not fit; `hi` is the smallest rung known to fit
    // (`LADDER.len()` while none is).
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(LADDER[mid])? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(LADDER.get(hi).copied())
}

/// The fitted cap of each of `kernels` in `ptx`, probing with `ptxas` for `arch` in parallel, with
/// scratch files and the cache in `dir`. A kernel that cannot be probed (a `ptxas` failure) is
/// left out, with the reason in the second value.
pub(crate) fn fit(
    ptxas: &Path,
    arch: &str,
    dir: &Path,
    ptx: &str,
    kernels: &[&str],
) -> (BTreeMap<String, u32>, Vec<String>) {
    let module = Module::parse(ptx);
    let cache_path = dir.join("fitted-caps");
    let cache: HashMap<u64, u32> = std::fs::read_to_string(&cache_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (key, cap) = line.split_once(' ')?;
            Some((u64::from_str_radix(key, 16).ok()?, cap.parse().ok()?))
        })
        .collect();
    let next = AtomicUsize::new(0);
    let results = Mutex::new((BTreeMap::new(), Vec::new(), Vec::new()));
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for thread in 0..threads.min(kernels.len()) {
            let (module, cache, next, results) = (&module, &cache, &next, &results);
            scope.spawn(move || {
                let scratch = dir.join(format!("fit-{thread}.ptx"));
                while let Some(&kernel) = kernels.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let Some(text) = module.alone(kernel, None) else {
                        continue;
                    };
                    let key = key(arch, &text);
                    let fitted = match cache.get(&key) {
                        Some(&cap) => Ok(Some(cap)),
                        None => assemble(ptxas, arch, &scratch, &text).and_then(|base| {
                            let used = base.registers.unwrap_or(u32::MAX);
                            let known = LADDER.iter().position(|&cap| cap >= used);
                            search(known.unwrap_or(LADDER.len()), |cap| {
                                let capped = module.alone(kernel, Some(cap)).unwrap_or_default();
                                let probe = assemble(ptxas, arch, &scratch, &capped)?;
                                Ok(!spills_more(&base, &probe))
                            })
                        }),
                    };
                    let mut results = results.lock().expect("no thread panics holding it");
                    match fitted {
                        Ok(Some(cap)) => {
                            results.0.insert(kernel.to_owned(), cap);
                            results.2.push((key, cap));
                        }
                        Ok(None) => {}
                        Err(why) => results.1.push(format!("{kernel}: {why}")),
                    }
                }
            });
        }
    });
    let (caps, failures, found) = results.into_inner().expect("no thread panicked");
    let lines: String = found
        .iter()
        .map(|(key, cap)| format!("{key:016x} {cap}\n"))
        .collect();
    // A cache that cannot be written only costs the next build its probes.
    let _ = std::fs::write(&cache_path, lines);
    (caps, failures)
}

/// The file in `$OUT_DIR` that lists each persistent kernel's fitted cap.
const REPORT: &str = "taskweave-caps.txt";

/// The fitted cap of each persistent kernel in `ptx`, assembled for `arch` with `ptxas`, with its
/// scratch files in `out_dir`: in release builds (the ones that are timed; a debug build's
/// kernels keep the default cap), when there is a `ptxas`, unless `TASKWEAVE_FIT_REGISTERS` is
/// `0`. Lists them in `$OUT_DIR/taskweave-caps.txt`; a kernel it cannot fit is named in a build
/// warning, and keeps the builder's default cap. Kernels for which `chosen` is true have a cap
/// chosen by the crate (`Builder::region_registers`) and are not fitted.
pub(crate) fn caps(
    ptxas: Option<&Path>,
    arch: &str,
    out_dir: &Path,
    ptx: &str,
    chosen: impl Fn(&str) -> bool,
) -> BTreeMap<String, u32> {
    let off = std::env::var(taskweave_names::env::FIT_REGISTERS).is_ok_and(|v| v == "0")
        || std::env::var("PROFILE").is_ok_and(|p| p != "release");
    let Some(ptxas) = ptxas.filter(|_| !off) else {
        let _ = std::fs::write(out_dir.join(REPORT), "not fitted\n");
        return BTreeMap::new();
    };
    let kernels: Vec<&str> = Module::parse(ptx)
        .kernels()
        .filter(|name| {
            taskweave_names::Kernel::parse(name)
                .is_some_and(|k| k.entry == taskweave_names::Entry::Persistent && !k.uncapped)
                && !chosen(name)
        })
        .collect();
    let (caps, failures) = fit(ptxas, arch, out_dir, ptx, &kernels);
    for failure in failures {
        println!("cargo:warning=taskweave: register cap not fitted, {failure}");
    }
    let report: String = caps
        .iter()
        .map(|(kernel, cap)| format!("{kernel} {cap}\n"))
        .collect();
    let _ = std::fs::write(out_dir.join(REPORT), report);
    caps
}

/// The cache key of a kernel's text assembled for `arch`.
fn key(arch: &str, text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    arch.hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "//\n.version 8.0\n.target sm_90\n.address_size 64\n\
        .func  (.param .b32 r) used(\n\t.param .b32 p\n);\n\
        .func unused()\n{\n\tret;\n}\n\
        .func  (.param .b32 r) used(\n\t.param .b32 p\n)\n{\n\t{ // asm\n\t}\n\tcall.uni deep, ();\n\tret;\n}\n\
        .func deep()\n{\n\tret;\n}\n\
        .visible .entry k(\n\t.param .u64 p\n)\n{\n\tcall.uni (r), used, (p);\n\tret;\n}\n\
        .visible .entry other(\n)\n.maxntid 64\n{\n\tcall.uni unused, ();\n\tret;\n}\n";

    #[test]
    fn a_kernel_alone_keeps_what_it_reaches_and_its_cap() {
        let module = Module::parse(PTX);
        assert_eq!(module.kernels().collect::<Vec<_>>(), ["k", "other"]);
        let alone = module.alone("k", Some(64)).unwrap();
        assert!(alone.starts_with("//\n.version 8.0\n.target sm_90\n.address_size 64\n"));
        assert_eq!(
            alone.matches("used(").count(),
            2,
            "declaration and definition"
        );
        assert!(alone.contains(".func deep()\n{"));
        assert!(!alone.contains("unused") && !alone.contains("other"));
        assert!(alone.contains(".visible .entry k(\n\t.param .u64 p\n)\n.maxnreg 64\n{\n"));
        let other = module.alone("other", Some(80)).unwrap();
        assert!(other.contains(".maxntid 64\n.maxnreg 80\n{\n\tcall.uni unused"));
        assert!(!other.contains("deep") && !other.contains(") used("));
        assert!(module.alone("missing", None).is_none());
        // Two kernels keep what either reaches, each function once, and their own caps.
        let both = module.only(|name| name == "k" || name == "other", None);
        assert!(both.contains(".func deep()\n{") && both.contains("call.uni unused"));
        assert_eq!(both.matches(".func deep()\n{").count(), 1);
        assert!(both.contains(".maxntid 64\n{\n\tcall.uni unused"));
        assert!(module.only(|_| false, None).matches(".entry").count() == 0);
        assert_eq!(
            with_cap(&module.alone("k", Some(64)).unwrap(), 96)
                .matches(".maxnreg")
                .count(),
            1,
            "a new cap replaces the old"
        );
    }

    #[test]
    fn spills_are_read_per_function() {
        let report = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
            ptxas info    : Function properties for k\n\
            \x20   16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
            ptxas info    : Used 64 registers\n\
            ptxas info    : Function properties for fmt\n\
            \x20   136 bytes stack frame, 112 bytes spill stores, 112 bytes spill loads\n";
        let probe = parse_report(report);
        assert_eq!(probe.registers, Some(64));
        assert_eq!(probe.spills.get("k"), Some(&8));
        assert_eq!(probe.spills.get("fmt"), Some(&112));
        let report = |k, fmt| Report {
            registers: None,
            spills: BTreeMap::from([("k".to_owned(), k), ("fmt".to_owned(), fmt)]),
        };
        assert!(spills_more(&report(0, 112), &probe));
        assert!(
            !spills_more(&report(0, 112), &report(0, 100)),
            "fewer spills are no spills"
        );
    }

    #[test]
    fn the_search_finds_the_smallest_cap_that_fits() {
        for need in [1, 32, 33, 64, 65, 100, 168, 200, 255] {
            let want = LADDER.iter().copied().find(|&cap| cap >= need);
            for known in [
                LADDER.len(),
                LADDER.iter().position(|&c| c >= need).unwrap(),
            ] {
                let mut probes = 0;
                let found = search(known, |cap| {
                    probes += 1;
                    assert!(
                        LADDER[..known].contains(&cap),
                        "probed {cap}, known from {known}"
                    );
                    Ok(cap >= need)
                })
                .unwrap();
                assert_eq!(found, want, "need {need}");
                assert!(probes <= 4, "{probes} probes for need {need}");
            }
        }
        assert_eq!(search(LADDER.len(), |_| Ok(false)).unwrap(), None);
        assert_eq!(search(3, |_| Ok(false)).unwrap(), Some(LADDER[3]));
        assert!(search(LADDER.len(), |_| Err("boom".into())).is_err());
    }

    /// The `ptxas` that `scripts/setup.sh` installs in the workspace's `.venv`, if it is there.
    fn venv_ptxas() -> Option<std::path::PathBuf> {
        let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/lib");
        std::fs::read_dir(lib)
            .ok()?
            .filter_map(Result::ok)
            .map(|python| python.path().join("site-packages/nvidia/cu13/bin/ptxas"))
            .find(|p| p.is_file())
    }

    /// Where `scripts/setup.sh` installed `ptxas` (CI does): a kernel that holds 40 values across
    /// a loop fits a cap of 48 or 56, not 32, and a trivial one fits the smallest rung.
    #[test]
    fn ptxas_fits_a_kernel_to_the_registers_it_needs() {
        let Some(ptxas) = venv_ptxas() else {
            eprintln!("no .venv ptxas (scripts/setup.sh installs it): skipped");
            return;
        };
        let dir = std::env::temp_dir().join(format!("taskweave-fit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let n = 40;
        let mut body = String::from(".visible .entry heavy(\n\t.param .u64 p\n)\n{\n");
        body += &format!(
            "\t.reg .b32 %r<{}>;\n\t.reg .b64 %a;\n\t.reg .pred %q;\n",
            n + 2
        );
        body += "\tld.param.u64 %a, [p];\n";
        for i in 0..n {
            body += &format!("\tld.volatile.global.u32 %r{i}, [%a+{}];\n", 4 * i);
        }
        body += &format!("$L:\n\tld.volatile.global.u32 %r{n}, [%a];\n");
        for i in 0..n {
            body += &format!("\tadd.u32 %r{i}, %r{i}, %r{n};\n");
        }
        body += &format!("\tsetp.ne.u32 %q, %r{n}, 0;\n\t@%q bra $L;\n");
        for i in 0..n {
            body += &format!("\tst.volatile.global.u32 [%a+{}], %r{i};\n", 4 * i);
        }
        body += "\tret;\n}\n";
        let ptx = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n{body}\
             .visible .entry light(\n)\n{{\n\tret;\n}}\n"
        );
        let (caps, failures) = fit(&ptxas, "sm_90", &dir, &ptx, &["heavy", "light"]);
        assert!(failures.is_empty(), "{failures:?}");
        let heavy = caps["heavy"];
        assert!((48..=56).contains(&heavy), "heavy fitted at {heavy}");
        assert_eq!(caps["light"], LADDER[0]);
        // A second build finds both in the cache.
        let cached = std::fs::read_to_string(dir.join("fitted-caps")).unwrap();
        assert_eq!(cached.lines().count(), 2);
        assert_eq!(
            fit(&ptxas, "sm_90", &dir, &ptx, &["heavy", "light"]).0,
            caps
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
