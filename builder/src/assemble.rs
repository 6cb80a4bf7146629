//! Assembling a crate's kernels: one module per kernel (per region in a debug build), in
//! parallel, each once.
//!
//! 1. A [`Group`] is one region's kernels (or the kernels of no region), each with its [`Cap`].
//! 2. Its first modules hold its kernels at their fixed caps, or uncapped where a cap is to be
//!    fitted ([`crate::fit`]); `ptxas -v` on them gives every kernel's registers and spills. In a
//!    release build a region's kernels get a module each, so that a call loads (inflates, and has
//!    the driver load) the one kernel it runs, not the region's six; assembly took as long
//!    (bench/results/kernel-load-h200/). A debug build (the tests', CI's) keeps one module per
//!    region, as before: what splitting costs there is within the build machine's spread, and
//!    is left untaken. The kernels of no region, which are small, share one module.
//! 3. Fitting probes, one kernel alone at a time, only rungs below the registers the kernel used;
//!    most kernels fit at or above them and keep the first module's code.
//! 4. A second module, when needed, holds what the first could not: kernels fitted below what
//!    they use uncapped, and the uncapped twins of kernels that reached a fixed cap. A twin that
//!    would be the same code as its kernel (the kernel did not reach its cap) is not assembled:
//!    the host then runs the kernel itself.
//!
//! Every step is one job for a pool of `ptxas` processes; a group's probes follow its first
//! module, and its second module its probes. Jobs run largest first, and each finished job and
//! region is a line of progress. Assemblies and probes come from the cache when their text was
//! assembled before.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Condvar, Mutex};

use taskweave_names::ptx::{Module, canonical};
use taskweave_names::{Kernel, UNCAPPED_SUFFIX};

use crate::cache::{Cache, Entry};
use crate::fit;
use crate::progress::{Progress, duration};
use crate::ptxas::{KernelReport, Ptxas, Report, spills_more};

/// How a kernel's registers are capped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cap {
    /// At this many, whatever it needs (chosen for the region, or the builder's default).
    Fixed(u32),
    /// At the fewest registers at which it spills no more than uncapped ([`crate::fit`]).
    Fit,
    /// Not at all (kernels of no region).
    None,
}

/// One kernel to assemble.
#[derive(Clone, Debug)]
pub(crate) struct Planned {
    pub name: String,
    pub cap: Cap,
    /// Whether the host may want it uncapped too (see [`taskweave_names::Entry::twinned`]).
    pub twin: bool,
}

/// One region's kernels (or the kernels of no region: `region` is `""`).
#[derive(Clone, Debug)]
pub(crate) struct Group {
    pub region: String,
    pub kernels: Vec<Planned>,
}

/// A module assembled for a group.
pub(crate) struct Piece {
    pub cubin: Vec<u8>,
    pub report: Report,
}

/// What assembling a group gave.
pub(crate) struct Assembled {
    /// Its modules: the first ones ([`Group::firsts`]), and the second when one was needed.
    pub pieces: Vec<Piece>,
    /// Each kernel name the host may ask for: the piece and the symbol there.
    pub index: Vec<(String, usize, String)>,
    /// Each kernel's cap in the end (`None`: uncapped), for the PTX the driver compiles when no
    /// cubin fits the GPU.
    pub caps: BTreeMap<String, Option<u32>>,
}

impl Group {
    /// How the group's kernels split into its first modules, as indices into
    /// [`Group::kernels`]: when `split`, a module per kernel of a region, else one module (see
    /// the module docs).
    fn firsts(&self, split: bool) -> Vec<Vec<usize>> {
        match split && !self.region.is_empty() {
            true => (0..self.kernels.len()).map(|k| vec![k]).collect(),
            false => vec![(0..self.kernels.len()).collect()],
        }
    }
}

/// A group's state between its jobs.
#[derive(Default)]
struct State {
    /// The first modules' texts, until their jobs take them.
    texts: Vec<Option<String>>,
    firsts: Vec<Option<Piece>>,
    /// First modules still to assemble.
    firsts_left: usize,
    /// What `ptxas -v` said of the first modules, every kernel of them.
    report: Report,
    /// Fitted caps, as the probes finish.
    fitted: BTreeMap<String, u32>,
    /// Probes still running or queued.
    probing: usize,
    second: Option<Option<Piece>>,
    failed: Option<String>,
    /// Seconds of `ptxas` (or cache) time spent on the group.
    seconds: f64,
    /// Whether everything came from the cache.
    cached: bool,
}

enum Job {
    /// A group's first module (its index in [`Group::firsts`]).
    First(usize, usize),
    Probe(usize, String),
    Second(usize),
}

/// The work of one build: what to assemble and with what.
pub(crate) struct Work<'a> {
    pub ptxas: &'a Ptxas,
    pub arch: &'a str,
    pub module: &'a Module<'a>,
    pub groups: &'a [Group],
    pub cache: &'a Cache,
    pub progress: &'a Progress,
    pub scratch: &'a Path,
    /// `ptxas` processes at once.
    pub jobs: usize,
    /// Whether to assemble uncapped twins (release builds).
    pub twins: bool,
    /// Whether a region's kernels get a module each (release builds; see the module docs).
    pub split: bool,
}

impl Work<'_> {
    /// Assembles every group; per group, what it gave or why it failed.
    pub(crate) fn run(&self) -> Vec<Result<Assembled, String>> {
        let texts: Vec<Vec<String>> = self.groups.iter().map(|g| self.texts(g)).collect();
        // Largest first: the heavy kernels bound the build's length.
        let mut order: Vec<(usize, usize)> = (texts.iter().enumerate())
            .flat_map(|(g, t)| (0..t.len()).map(move |m| (g, m)))
            .collect();
        order.sort_by_key(|&(g, m)| std::cmp::Reverse(texts[g][m].len()));
        let states: Vec<Mutex<State>> = texts
            .into_iter()
            .map(|texts| {
                Mutex::new(State {
                    firsts: texts.iter().map(|_| None).collect(),
                    firsts_left: texts.len(),
                    texts: texts.into_iter().map(Some).collect(),
                    cached: true,
                    ..State::default()
                })
            })
            .collect();
        let queue = Mutex::new((
            (order.into_iter())
                .map(|(g, m)| Job::First(g, m))
                .collect::<VecDeque<_>>(),
            0,
        ));
        let wake = Condvar::new();
        let done = Mutex::new(0usize);
        let total = self.groups.len();
        std::thread::scope(|scope| {
            for worker in 0..self.jobs.max(1) {
                let (states, queue, wake, done) = (&states, &queue, &wake, &done);
                scope.spawn(move || {
                    loop {
                        let job = {
                            let mut q = queue.lock().expect("no job panics holding it");
                            loop {
                                if let Some(job) = q.0.pop_front() {
                                    q.1 += 1;
                                    break Some((job, q.0.len() + q.1));
                                }
                                if q.1 == 0 {
                                    break None;
                                }
                                q = wake.wait(q).expect("no job panics holding it");
                            }
                        };
                        let Some((job, busy)) = job else {
                            wake.notify_all();
                            return;
                        };
                        // Threads of its own for a `ptxas` that would otherwise leave cores idle.
                        let threads = (self.jobs / busy.max(1)).max(1);
                        let follow = self.step(job, states, worker, threads, done, total);
                        let mut q = queue.lock().expect("no job panics holding it");
                        // A group's next steps go first: they are small, and they finish the
                        // group (and say so) before the next large module starts.
                        for job in follow.into_iter().rev() {
                            q.0.push_front(job);
                        }
                        q.1 -= 1;
                        wake.notify_all();
                    }
                });
            }
        });
        states
            .into_iter()
            .zip(self.groups)
            .map(|(state, group)| {
                let state = state.into_inner().expect("no job panics holding it");
                finish(group, state, self.twins, self.split)
            })
            .collect()
    }

    /// The texts of `group`'s first modules ([`Group::firsts`]): each kernel at its fixed cap,
    /// or uncapped.
    fn texts(&self, group: &Group) -> Vec<String> {
        let caps: BTreeMap<&str, Option<u32>> = group
            .kernels
            .iter()
            .map(|k| {
                let cap = match k.cap {
                    Cap::Fixed(c) => Some(c),
                    Cap::Fit | Cap::None => None,
                };
                (k.name.as_str(), cap)
            })
            .collect();
        (group.firsts(self.split).into_iter())
            .map(|kernels| {
                let names: Vec<&str> = (kernels.iter())
                    .map(|&k| group.kernels[k].name.as_str())
                    .collect();
                canonical(&self.module.only(
                    |name| names.contains(&name),
                    |name| caps.get(name).copied().flatten(),
                ))
            })
            .collect()
    }

    /// Runs one job; the jobs that follow it.
    fn step(
        &self,
        job: Job,
        states: &[Mutex<State>],
        worker: usize,
        threads: usize,
        done: &Mutex<usize>,
        total: usize,
    ) -> Vec<Job> {
        let lock = |g: usize| states[g].lock().expect("no job panics holding it");
        match job {
            Job::First(g, m) => {
                let group = &self.groups[g];
                let text = lock(g).texts[m].take().unwrap_or_default();
                let got = self.assemble(&text, worker, threads, true);
                let mut state = lock(g);
                state.firsts_left -= 1;
                match got {
                    Ok((entry, seconds, hit)) => {
                        state.seconds += seconds;
                        state.cached &= hit;
                        (state.report.kernels).extend(
                            entry
                                .report
                                .kernels
                                .iter()
                                .map(|(k, r)| (k.clone(), r.clone())),
                        );
                        state.firsts[m] = Some(Piece {
                            cubin: entry.cubin.unwrap_or_default(),
                            report: entry.report,
                        });
                    }
                    Err(why) => {
                        state.failed.get_or_insert(why);
                    }
                }
                if state.firsts_left > 0 {
                    return Vec::new();
                }
                if state.failed.is_some() {
                    self.region_done(g, &state, done, total);
                    return Vec::new();
                }
                let probes: Vec<Job> = group
                    .kernels
                    .iter()
                    .filter(|k| k.cap == Cap::Fit)
                    .filter(|k| {
                        (state.report.kernels.get(&k.name))
                            .is_some_and(|r| fit::known(r.registers).is_some())
                    })
                    .map(|k| Job::Probe(g, k.name.clone()))
                    .collect();
                state.probing = probes.len();
                if probes.is_empty() {
                    vec![Job::Second(g)]
                } else {
                    probes
                }
            }
            Job::Probe(g, kernel) => {
                let base = (lock(g).report.kernels.get(&kernel).cloned()).unwrap_or_default();
                let fitted = self.fit(&kernel, &base, worker);
                let mut state = lock(g);
                match fitted {
                    Ok((cap, seconds, hit)) => {
                        state.seconds += seconds;
                        state.cached &= hit;
                        state.fitted.insert(kernel, cap);
                    }
                    Err(why) => {
                        self.progress.log_line(&format!(
                            "register cap of {kernel} not fitted, left uncapped: {why}"
                        ));
                    }
                }
                state.probing -= 1;
                match state.probing {
                    0 => vec![Job::Second(g)],
                    _ => Vec::new(),
                }
            }
            Job::Second(g) => {
                let text = self.second_text(&self.groups[g], &lock(g));
                let piece = match text {
                    None => Ok(None),
                    Some(text) => {
                        self.assemble(&text, worker, threads, true)
                            .map(|(entry, seconds, hit)| {
                                let mut state = lock(g);
                                state.seconds += seconds;
                                state.cached &= hit;
                                Some(Piece {
                                    cubin: entry.cubin.unwrap_or_default(),
                                    report: entry.report,
                                })
                            })
                    }
                };
                let mut state = lock(g);
                match piece {
                    Ok(piece) => state.second = Some(piece),
                    Err(why) => state.failed = Some(why),
                }
                self.region_done(g, &state, done, total);
                Vec::new()
            }
        }
    }

    /// Says that group `g` is done.
    fn region_done(&self, g: usize, state: &State, done: &Mutex<usize>, total: usize) {
        let mut done = done.lock().expect("no job panics holding it");
        *done += 1;
        let group = &self.groups[g];
        let name = match group.region.as_str() {
            "" => "kernels of no region".to_owned(),
            stem => stem
                .rsplit_once('_')
                .map_or(stem, |(name, _)| name)
                .to_owned(),
        };
        let how = match (&state.failed, state.cached) {
            (Some(_), _) => "FAILED".to_owned(),
            (None, true) => "cached".to_owned(),
            (None, false) => duration(state.seconds),
        };
        self.progress.step(
            "Assembled",
            &format!(
                "{name} ({} kernels, {}, {how}) [{}/{total}, {}]",
                group.kernels.len(),
                self.arch,
                *done,
                duration(self.progress.elapsed())
            ),
        );
        if let Some(why) = &state.failed {
            self.progress.log_line(why);
        }
    }

    /// The second module of a group, if it needs one: kernels fitted below what they used
    /// uncapped, and the uncapped twins (renamed) of kernels that reached their fixed cap.
    fn second_text(&self, group: &Group, state: &State) -> Option<String> {
        let used = |name: &str| state.report.kernels.get(name).map_or(0, |r| r.registers);
        let mut capped = BTreeMap::new();
        let mut twins = Vec::new();
        for k in &group.kernels {
            match k.cap {
                Cap::Fit => {
                    if let Some(&cap) = state.fitted.get(&k.name)
                        && cap < used(&k.name)
                    {
                        capped.insert(k.name.as_str(), cap);
                    }
                }
                Cap::Fixed(cap) if k.twin && self.twins && used(&k.name) >= cap => {
                    twins.push(k.name.as_str())
                }
                _ => {}
            }
        }
        if capped.is_empty() && twins.is_empty() {
            return None;
        }
        let mut text = self.module.only(
            |name| capped.contains_key(name),
            |name| capped.get(name).copied(),
        );
        if !twins.is_empty() {
            let uncapped = self.module.only(|name| twins.contains(&name), |_| None);
            text = merge_twins(&text, &uncapped, &twins);
        }
        Some(canonical(&text))
    }

    /// The fitted cap of `kernel`, whose uncapped assembly reported `base`: the search's result,
    /// with the seconds its probes took and whether they all came from the cache.
    fn fit(
        &self,
        kernel: &str,
        base: &KernelReport,
        worker: usize,
    ) -> Result<(u32, f64, bool), String> {
        let known = fit::known(base.registers).unwrap_or(fit::LADDER.len());
        let (mut seconds, mut hit) = (0.0, true);
        let cap = fit::search(known, |cap| {
            let text = canonical(&self.module.alone(kernel, Some(cap)).unwrap_or_default());
            let (entry, s, h) = self.assemble(&text, worker, 1, false)?;
            seconds += s;
            hit &= h;
            let probe = entry
                .report
                .kernels
                .get(kernel)
                .cloned()
                .unwrap_or_default();
            Ok(!spills_more(base, &probe))
        })?;
        Ok((cap.unwrap_or(fit::MOST), seconds, hit))
    }

    /// Assembles `text` (into a cubin, or only for its report), through the cache: the entry, the
    /// seconds it took and whether it came from the cache.
    fn assemble(
        &self,
        text: &str,
        worker: usize,
        threads: usize,
        cubin: bool,
    ) -> Result<(Entry, f64, bool), String> {
        let what = if cubin { "cubin" } else { "probe" };
        let key = Cache::key(text, &[self.arch, &self.ptxas.version, what, "-O3"]);
        if let Some(entry) = self.cache.get(key, cubin) {
            return Ok((entry, 0.0, true));
        }
        let start = std::time::Instant::now();
        let ptx = self.scratch.join(format!("job-{worker}.ptx"));
        let out = self.scratch.join(format!("job-{worker}.cubin"));
        std::fs::write(&ptx, text).map_err(|e| format!("writing {}: {e}", ptx.display()))?;
        let report =
            self.ptxas
                .assemble(self.arch, &ptx, cubin.then_some(out.as_path()), threads)?;
        let cubin = match cubin {
            true => {
                Some(std::fs::read(&out).map_err(|e| format!("reading {}: {e}", out.display()))?)
            }
            false => None,
        };
        let _ = (std::fs::remove_file(&ptx), std::fs::remove_file(&out));
        let entry = Entry { cubin, report };
        self.cache.put(key, &entry);
        Ok((entry, start.elapsed().as_secs_f64(), false))
    }
}

/// The group's modules and index, once its jobs are done (`twins` and `split` as in [`Work`]).
fn finish(group: &Group, state: State, twins: bool, split: bool) -> Result<Assembled, String> {
    if let Some(why) = state.failed {
        return Err(why);
    }
    let firsts: Vec<Piece> = (state.firsts.into_iter())
        .collect::<Option<_>>()
        .ok_or("a first module was not assembled")?;
    // The first module that holds each kernel, and where the second module goes.
    let mut first_of = vec![0; group.kernels.len()];
    for (m, kernels) in group.firsts(split).into_iter().enumerate() {
        for k in kernels {
            first_of[k] = m;
        }
    }
    let at_second = firsts.len();
    let second = state.second.flatten();
    let in_second = |name: &str| {
        second
            .as_ref()
            .is_some_and(|p| p.report.kernels.contains_key(name))
    };
    let mut index = Vec::new();
    let mut caps = BTreeMap::new();
    for (k, first) in group.kernels.iter().zip(first_of) {
        let twin = Kernel::parse(&k.name).map(|p| p.uncapped().to_string());
        let used = state.report.kernels.get(&k.name).map_or(0, |r| r.registers);
        match k.cap {
            Cap::Fit if in_second(&k.name) => {
                // Fitted below what it used: the capped kernel is new, the twin is the first.
                index.push((k.name.clone(), at_second, k.name.clone()));
                if let Some(twin) = twin.filter(|_| k.twin && twins) {
                    index.push((twin, first, k.name.clone()));
                }
                caps.insert(k.name.clone(), state.fitted.get(&k.name).copied());
            }
            Cap::Fit => {
                index.push((k.name.clone(), first, k.name.clone()));
                let fitted = state.fitted.get(&k.name).copied().unwrap_or(fit::MOST);
                caps.insert(k.name.clone(), Some(fitted.max(used)));
            }
            Cap::Fixed(cap) => {
                index.push((k.name.clone(), first, k.name.clone()));
                if let Some(twin) = twin.filter(|t| in_second(t)) {
                    index.push((twin.clone(), at_second, twin));
                }
                caps.insert(k.name.clone(), Some(cap));
            }
            Cap::None => {
                index.push((k.name.clone(), first, k.name.clone()));
                caps.insert(k.name.clone(), None);
            }
        }
    }
    let mut pieces = firsts;
    pieces.extend(second);
    Ok(Assembled {
        pieces,
        index,
        caps,
    })
}

/// `capped` (a module, possibly without kernels) with the kernels `twins` of `uncapped` appended
/// under their twins' names ([`UNCAPPED_SUFFIX`]), and the functions `uncapped` has that `capped`
/// lacks.
fn merge_twins(capped: &str, uncapped: &str, twins: &[&str]) -> String {
    let base = Module::parse(capped);
    let extra = Module::parse(uncapped);
    let mut out = String::from(capped);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    // Functions and globals first, so that every twin finds what it calls defined above it; a
    // function both modules reach is the same text, and is kept once.
    let have = base.defined();
    for (name, text) in extra.definitions() {
        if !have.contains(name) {
            out.push_str(text);
        }
    }
    for &twin in twins {
        if let Some(text) = extra.kernel(twin) {
            let (old, new) = (
                format!(".entry {twin}"),
                format!(".entry {twin}{UNCAPPED_SUFFIX}"),
            );
            out.push_str(&text.replacen(&old, &new, 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A piece whose report has `kernels` at `registers` registers each.
    fn piece(kernels: &[&str], registers: u32) -> Piece {
        let kernels = kernels.iter().map(|k| {
            let report = KernelReport {
                registers,
                ..KernelReport::default()
            };
            (k.to_string(), report)
        });
        Piece {
            cubin: Vec::new(),
            report: Report {
                kernels: kernels.collect(),
            },
        }
    }

    #[test]
    fn a_split_region_s_kernels_each_have_a_module_and_their_twins_the_second() {
        let (a, b, c) = (
            "taskweave_region_r_0123abcd",
            "taskweave_listed_r_0123abcd",
            "taskweave_levels_r_0123abcd",
        );
        let planned = |name: &str, cap| Planned {
            name: name.to_owned(),
            cap,
            twin: true,
        };
        let group = Group {
            region: "r_0123abcd".to_owned(),
            kernels: vec![
                planned(a, Cap::Fixed(64)),
                planned(b, Cap::Fit),
                planned(c, Cap::Fixed(200)),
            ],
        };
        assert_eq!(group.firsts(true), [vec![0], vec![1], vec![2]]);
        assert_eq!(group.firsts(false), [vec![0, 1, 2]]);
        let no_region = Group {
            region: String::new(),
            ..group.clone()
        };
        assert_eq!(no_region.firsts(true), [vec![0, 1, 2]]);
        // `a` reached its cap (its twin is in the second module), `b` was fitted below what it
        // used (the capped kernel is in the second, its first module is its twin), `c` did not
        // reach its cap.
        let twin_a = format!("{a}{UNCAPPED_SUFFIX}");
        let state = State {
            firsts: vec![
                Some(piece(&[a], 64)),
                Some(piece(&[b], 90)),
                Some(piece(&[c], 80)),
            ],
            report: Report {
                kernels: [piece(&[a], 64), piece(&[b], 90), piece(&[c], 80)]
                    .into_iter()
                    .flat_map(|p| p.report.kernels)
                    .collect(),
            },
            fitted: [(b.to_owned(), 72)].into(),
            second: Some(Some(piece(&[b, &twin_a], 72))),
            ..State::default()
        };
        let done = finish(&group, state, true, true).expect("every piece assembled");
        assert_eq!(done.pieces.len(), 4);
        let mut index = done.index;
        index.sort();
        let expect =
            |name: &str, piece: usize, symbol: &str| (name.to_owned(), piece, symbol.to_owned());
        let mut want = vec![
            expect(a, 0, a),
            expect(&twin_a, 3, &twin_a),
            expect(b, 3, b),
            expect(&format!("{b}{UNCAPPED_SUFFIX}"), 1, b),
            expect(c, 2, c),
        ];
        want.sort();
        assert_eq!(index, want);
        // A first module missing is an error, not a kernel in the wrong module.
        let state = State {
            firsts: vec![Some(piece(&[a], 64)), None, Some(piece(&[c], 80))],
            ..State::default()
        };
        assert!(finish(&group, state, true, true).is_err());
    }

    #[test]
    fn twins_are_renamed_and_share_what_they_call() {
        let header = ".version 8.0\n.target sm_90\n.address_size 64\n";
        let capped = format!(
            "{header}.func f()\n{{\n\tret;\n}}\n.visible .entry a(\n)\n.maxnreg 40\n{{\n\tcall.uni f, ();\n\tret;\n}}\n"
        );
        let uncapped = format!(
            "{header}.func f()\n{{\n\tret;\n}}\n.func g()\n{{\n\tret;\n}}\n\
             .visible .entry b(\n)\n{{\n\tcall.uni f, ();\n\tcall.uni g, ();\n\tret;\n}}\n"
        );
        let merged = merge_twins(&capped, &uncapped, &["b"]);
        assert_eq!(merged.matches(".func f()").count(), 1);
        assert_eq!(merged.matches(".func g()").count(), 1);
        assert!(merged.contains(".visible .entry b__uncapped(\n)\n{"));
        assert!(merged.find(".func g()").unwrap() < merged.find("b__uncapped").unwrap());
        let module = Module::parse(&merged);
        assert_eq!(module.kernels().collect::<Vec<_>>(), ["a", "b__uncapped"]);
    }
}
