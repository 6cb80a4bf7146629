//! Thread identity, barriers, warp operations, timers and sleep.
//!
//! 1. On `nvptx64` each function is one PTX instruction or special-register read ([`gpu`]).
//! 2. On the host the same functions read the calling thread's *lane* context, which the CPU backend
//!    installs with [`host::enter_lane`]; barriers and warp votes then synchronize the real threads
//!    that make up one emulated block ([`host`]).
//!
//! All indices are one-dimensional: taskweave launches `x` grids and blocks only.

#[cfg(target_arch = "nvptx64")]
pub mod gpu;
#[cfg(target_arch = "nvptx64")]
pub use gpu::*;

#[cfg(not(target_arch = "nvptx64"))]
pub mod host;
#[cfg(not(target_arch = "nvptx64"))]
pub use host::{
    block_dim, block_idx, clock64, global_timer_ns, grid_dim, lane_id, nanosleep, shfl_down,
    shfl_idx, sm_count, sm_id, sync_threads, thread_idx, warp_all, warp_any, warp_ballot,
};

/// Threads in a warp on every NVIDIA GPU taskweave targets.
pub const WARP_SIZE: u32 = 32;
