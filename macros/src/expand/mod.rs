//! Expansion: the code `#[task]` and `task_region!` generate. Paths go through
//! `::taskweave::__private`, and helper items live inside `const _: () = { … };`.

pub mod region;
pub mod task;
