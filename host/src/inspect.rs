//! Inspection: running a region's control flow to record its tasks, without running them.
//!
//! 1. The region binds each array parameter to a slot ([`ArrayArg`]) and runs its body with a
//!    [`Recorder`].
//! 2. Each `spawn!` calls the task's generated spawn function, which evaluates the declared ranges
//!    and calls [`Recorder::spawn`] with the packed scalars and the accesses.
//! 3. The recorder validates every range against its array, appends the task to the task table and
//!    feeds its accesses to the [`DepTracker`], which adds the RAW, WAR and WAW edges.
//! 4. [`Recorder::finish`] yields an [`Inspection`]: the task table, argument words, the DAG in CSR
//!    form, and the spawn locations errors refer to.

use std::marker::PhantomData;
use std::ops::Range;
use std::panic::Location;
use std::time::Duration;

use taskweave_device::abi::TaskRecord;

use crate::error::{Error, TaskRef};
use crate::graph::{self, Dag, DepTracker};

/// Marks an array as read-only or read-write in a region.
pub trait Mode: Copy + 'static + private::Sealed {}

/// A region array passed as `&[T]`.
#[derive(Clone, Copy, Debug)]
pub struct ReadOnly;
/// A region array passed as `&mut [T]`.
#[derive(Clone, Copy, Debug)]
pub struct ReadWrite;
impl Mode for ReadOnly {}
impl Mode for ReadWrite {}

mod private {
    pub trait Sealed {}
    impl Sealed for super::ReadOnly {}
    impl Sealed for super::ReadWrite {}
}

/// A region array inside a region's body: a slot number, the length, the element type and whether
/// tasks may write it. Pass it to tasks in `spawn!`.
pub struct ArrayArg<T, M: Mode> {
    slot: u32,
    len: usize,
    _marker: PhantomData<fn() -> (T, M)>,
}

impl<T, M: Mode> Clone for ArrayArg<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, M: Mode> Copy for ArrayArg<T, M> {}

impl<T, M: Mode> ArrayArg<T, M> {
    pub(crate) fn new(slot: u32, len: usize) -> Self {
        Self {
            slot,
            len,
            _marker: PhantomData,
        }
    }

    /// The array's length in elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The array's slot in the region.
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

/// One declared access of a spawned task, with its range evaluated.
#[derive(Clone, Debug)]
pub struct Access {
    /// The array's slot.
    pub slot: u32,
    /// The range.
    pub range: Range<usize>,
    /// Declared under `writes`.
    pub write: bool,
    /// The task's parameter name.
    pub param: &'static str,
}

/// The most tasks a region may spawn: task indices need their top bit free (the device marks
/// single-parent children with it) and the top values serve as scheduler commands.
pub const MAX_TASKS: u32 = (1 << 31) - 4;

/// Compile-time check that a region scalar is `Copy`.
pub const fn assert_copy<T: Copy>() {}

/// An array as inspection sees it.
#[derive(Clone, Copy, Debug)]
pub struct ArrayInfo {
    /// The region's parameter name.
    pub name: &'static str,
    /// Length in elements.
    pub len: usize,
    /// Passed as `&mut [T]`.
    pub writable: bool,
}

/// Records the tasks a region spawns.
pub struct Recorder {
    region: &'static str,
    kinds: &'static [&'static str],
    arrays: Vec<ArrayInfo>,
    tracker: DepTracker,
    tasks: Vec<TaskRecord>,
    args: Vec<u64>,
    locations: Vec<&'static Location<'static>>,
    scratch: Vec<(u32, Range<usize>, graph::Access)>,
}

impl Recorder {
    pub(crate) fn new(
        region: &'static str,
        kinds: &'static [&'static str],
        arrays: Vec<ArrayInfo>,
    ) -> Self {
        let lens: Vec<usize> = arrays.iter().map(|a| a.len).collect();
        Self {
            region,
            kinds,
            tracker: DepTracker::new(&lens),
            arrays,
            tasks: Vec::new(),
            args: Vec::new(),
            locations: Vec::new(),
            scratch: Vec::new(),
        }
    }

    fn task_ref(&self, kind: u32, words: &[u64], location: &'static Location<'static>) -> TaskRef {
        TaskRef {
            index: self.tasks.len() as u32,
            kind: self.kinds.get(kind as usize).copied().unwrap_or("?"),
            args: format_words(words),
            location,
        }
    }

    /// Records one task: validates its ranges, appends it, and adds its dependences. Nothing is
    /// recorded when a range is invalid.
    pub fn spawn(
        &mut self,
        kind: u32,
        location: &'static Location<'static>,
        words: &[u64],
        accesses: &[Access],
    ) -> Result<(), Error> {
        for access in accesses {
            let array = self.arrays[access.slot as usize];
            let range = access.range.clone();
            if range.start > range.end {
                let task = self.task_ref(kind, words, location);
                return Err(Error::ReversedRange {
                    task,
                    array: array.name,
                    param: access.param,
                    range,
                });
            }
            if range.end > array.len {
                let task = self.task_ref(kind, words, location);
                return Err(Error::OutOfBounds {
                    task,
                    array: array.name,
                    param: access.param,
                    range,
                    len: array.len,
                });
            }
        }
        if self.tasks.len() >= MAX_TASKS as usize {
            return Err(Error::TooLarge {
                region: self.region,
                what: "tasks",
                limit: u64::from(MAX_TASKS),
            });
        }
        if self.args.len() + words.len() > u32::MAX as usize {
            return Err(Error::TooLarge {
                region: self.region,
                what: "argument words",
                limit: u64::from(u32::MAX),
            });
        }
        self.scratch.clear();
        self.scratch.extend(accesses.iter().map(|a| {
            let mode = if a.write {
                graph::Access::Write
            } else {
                graph::Access::Read
            };
            (a.slot, a.range.clone(), mode)
        }));
        self.tracker.add_task(&self.scratch);
        self.tasks.push(TaskRecord {
            kind,
            args: self.args.len() as u32,
        });
        self.args.extend_from_slice(words);
        self.locations.push(location);
        Ok(())
    }

    pub(crate) fn finish(mut self, time: Duration) -> Inspection {
        self.tasks.push(TaskRecord {
            kind: u32::MAX,
            args: self.args.len() as u32,
        });
        Inspection {
            region: self.region,
            kinds: self.kinds,
            arrays: self.arrays,
            dag: self.tracker.finish(),
            tasks: self.tasks,
            args: self.args,
            locations: self.locations,
            time,
        }
    }
}

fn format_words(words: &[u64]) -> String {
    words
        .iter()
        .map(|w| (*w as i64).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What inspecting a region produced.
#[derive(Debug)]
pub struct Inspection {
    /// The region's name.
    pub region: &'static str,
    /// Task function names by kind.
    pub kinds: &'static [&'static str],
    /// The region's arrays by slot.
    pub arrays: Vec<ArrayInfo>,
    /// The dependence DAG.
    pub dag: Dag,
    /// One record per task, plus a sentinel whose `args` ends the last task's words.
    pub tasks: Vec<TaskRecord>,
    /// Argument words of all tasks.
    pub args: Vec<u64>,
    /// Where each task was spawned.
    pub locations: Vec<&'static Location<'static>>,
    /// How long inspection took (running the body, tracking dependences, building the CSR).
    pub time: Duration,
}

impl Inspection {
    /// The number of tasks.
    pub fn task_count(&self) -> usize {
        self.locations.len()
    }

    /// Task `index` as errors name it.
    pub fn task_ref(&self, index: u32) -> TaskRef {
        let record = self.tasks[index as usize];
        let words = &self.args[record.args as usize..self.tasks[index as usize + 1].args as usize];
        TaskRef {
            index,
            kind: self.kinds.get(record.kind as usize).copied().unwrap_or("?"),
            args: format_words(words),
            location: self.locations[index as usize],
        }
    }

    /// The DAG in Graphviz DOT, tasks labelled `kind(args)`.
    pub fn to_dot(&self) -> String {
        self.dag.to_dot(|t| {
            let r = self.task_ref(t);
            format!("{}({})", r.kind, r.args)
        })
    }

    /// The DAG as JSON: tasks with kind, arguments and source location; edges with their kind.
    pub fn to_json(&self) -> serde_json::Value {
        self.dag.to_json(|t| {
            let r = self.task_ref(t);
            serde_json::json!({
                "index": t,
                "kind": r.kind,
                "args": self.args[self.tasks[t as usize].args as usize..self.tasks[t as usize + 1].args as usize],
                "location": r.location.to_string(),
            })
        })
    }
}
