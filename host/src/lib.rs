//! The host half of taskweave.
//!
//! 1. [`inspect`] runs a region's control flow and records its tasks and dependences.
//! 2. [`graph`] holds the dependence tracker and the DAG in CSR form.
//! 3. [`Region`] is what calling a region returns; [`Runtime`] runs it on a backend:
//!    the persistent in-GPU scheduler ([`gpu`]) or the CPU backend.
//! 4. [`Report`] and [`Error`] say how it went.

mod cpu;
mod error;
pub mod gpu;
pub mod graph;
pub mod inspect;
mod region;
mod report;
mod resident;
mod runtime;
mod sm;
mod submit;
mod tables;

pub use error::{Error, TaskRef};
pub use region::{Options, Policy, Region, RegionMeta};
pub use report::Report;
pub use resident::DeviceArray;
pub use runtime::{Backend, Runtime};
pub use submit::{HELPERS, Pending};
