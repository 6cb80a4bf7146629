//! The host half of taskweave.
//!
//! 1. [`inspect`] runs a region's control flow and records its tasks and dependences; [`graph`]
//!    holds the dependence tracker and the DAG in CSR form.
//! 2. [`Region`] is what calling a region returns; [`Region::plan`] inspects it into a [`Plan`],
//!    which runs again and again on new arrays ([`Plan::run`]); [`Region::run`] does both once.
//! 3. [`Runtime`] runs a plan on a [`Backend`]: the persistent in-GPU scheduler and the other GPU
//!    backends over [`gpu`], or the CPU backend. [`DeviceArray`]s stay on the device between
//!    regions.
//! 4. [`Report`] and [`Error`] say how it went.
//!
//! The modules form layers, each importing only those below it (a test fails on any cycle):
//! `options`, `error`, `symbols` at the bottom; then `graph`, `inspect` and `meta` (what the macro
//! passes, with how each task's arguments print); `resident`;
//! `plan` and `call` (a plan with one call's arrays); `cache` (the runtime's plans of earlier
//! calls); `tables`, `sm`, `report`; `gpu` (the CUDA plumbing, which knows no region); `backend`
//! (one module per backend and their table); `runtime`; `submit`; and `region`, the builder users
//! call.

mod array;
mod backend;
mod cache;
mod call;
mod costs;
mod cover;
mod error;
pub mod gpu;
pub mod graph;
pub mod inspect;
mod meta;
mod options;
mod pinned;
mod plan;
mod policy;
mod region;
mod report;
mod resident;
mod runtime;
mod sm;
mod stream;
mod submit;
mod symbols;
mod tables;
mod work;

pub use array::{ArrayMut, ArrayRef};
pub use cache::{DEFAULT_PLANS, PLAN_CACHE_ENV};
pub use costs::{DEFAULT_HOP, TaskCosts};
pub use error::{Error, TaskRef};
pub use gpu::transfer::COPY_THREADS_VAR;
pub use meta::{Code, RegionMeta};
pub use options::{Backend, Options};
pub use pinned::Pinned;
pub use plan::{Plan, VERIFY_PLANS_ENV};
pub use policy::Policy;
pub use region::Region;
pub use report::{Held, KindShare, PathStep, Phases, Report, TracePath};
pub use resident::DeviceArray;
pub use runtime::Runtime;
pub use submit::{HELPERS, Pending};
pub use work::{REPLAY_PLANS_ENV, RESET_ON_DEVICE_ENV};
