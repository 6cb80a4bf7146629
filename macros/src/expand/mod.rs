//! Expansion: the code `#[task]` and `task_region!` generate. Paths go through
//! `::taskweave::__private`, and helper items live inside `const _: () = { … };`.

mod kernels;
pub mod region;
mod spawns;
pub mod task;
