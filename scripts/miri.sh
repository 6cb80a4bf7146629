#!/usr/bin/env bash
# Runs the tests that exercise the workspace's `unsafe` code under Miri (3 min 47 s of CPU, 12
# minutes wall on a shared 2-core machine, with a cold target/miri for the tests and examples
# crates: the examples crate's first Miri build includes the example kernels' device build):
#   A. taskweave-device: views, the block's shared scratch, scalars, both level-by-level entry
#      points on host threads (every unit test but the tile library's: see tile-tests below);
#   B. taskweave-host: the CPU backend on a hand-built region, the recorder's limits, the GPU
#      helpers that need no GPU, resident arrays;
#   C. cross-crate: every CPU-backend test, threads sharing a runtime, inferred accesses (with fewer
#      property cases under `cfg(miri)`), SM-aware workers and the affinity policy's tables (fewer
#      policies and rounds under `cfg(miri)`), submitted regions, resident arrays, an `unsafe fn`
#      task;
#   D. the example workloads at a tiny size with blocks of three lanes (examples/tests/tiny.rs):
#      the dynamic programs' unchecked shared-memory accesses (examples/kernels/src/dp.rs) and the
#      shared memory and barriers of every kernel, lane against lane.
# The graph module is safe code and its property tests are too slow to interpret. Two tests are
# `#[cfg_attr(miri, ignore)]`: one probes for libcuda (dlopen), one times a stall against the clock.
#
# Every `unsafe` site in the workspace (block, fn, impl, extern fn) has a row in the table below:
# which of A-D runs it under Miri, or why Miri cannot. `scripts/unsafe-sites.py check`, run first,
# fails when a site is missing from the table, so a new `unsafe` needs a row.
# `scripts/unsafe-coverage.sh` checks the `miri:` rows against what the tests actually execute
# (natively, with coverage instrumentation: too slow for CI).
#
# Permissive provenance: the region descriptor is an ABI shared with the GPU and carries addresses
# as `u64`, so the CPU backend turns integers back into pointers (exposed provenance), which Miri
# checks but would otherwise warn about at every cast.
# One test thread: Miri interprets one thread at a time anyway, and a failure is easier to read.
#
# Why a site cannot run under Miri:
#   nvptx64: compiled for the GPU only (`cfg(target_arch = "nvptx64")`, PTX inline assembly, kernel
#     entry points); the host build has a safe counterpart, which the tests above run. On the GPU:
#     `selfcheck`, `faults` and compute-sanitizer memcheck, racecheck and synccheck
#     (scripts/gpu-evidence.sh).
#   driver: calls the CUDA driver (cudarc, FFI), which Miri cannot run. On the GPU as above.
#   tile-tests: run only by the tile library's own tests, which `--skip tile::` leaves out of A
#     for now: under Miri most take over 5 minutes each (the GEMM, SYRK, TRSM and factorization
#     tests), and one stops at a data race in their helper (`tile::testing::Shared::mat_mut` makes
#     a `&mut [T]` over the whole array in every lane at once). Once the tile tests shrink under
#     `cfg(miri)` and the helper makes operands from the raw pointer, the skip goes and these rows
#     become `miri: A` (an instrumented run of the tile tests executes all but one of them:
#     scripts/unsafe-coverage.sh).
#
#| device/src/arch/gpu.rs | special_register_u32 | 1 | not: nvptx64 (special registers)
#| device/src/arch/gpu.rs | clock64 | 1 | not: nvptx64 (special register)
#| device/src/arch/gpu.rs | global_timer_ns | 1 | not: nvptx64 (special register)
#| device/src/arch/gpu.rs | sync_threads | 1 | not: nvptx64 (bar.sync)
#| device/src/arch/gpu.rs | nanosleep | 1 | not: nvptx64 (nanosleep)
#| device/src/arch/gpu.rs | shfl_down | 1 | not: nvptx64 (shfl.sync)
#| device/src/arch/gpu.rs | shfl_idx | 1 | not: nvptx64 (shfl.sync)
#| device/src/arch/gpu.rs | warp_ballot | 1 | not: nvptx64 (vote.sync)
#| device/src/arch/gpu.rs | trap | 1 | not: nvptx64 (trap)
#| device/src/arch/gpu.rs | exit_thread | 1 | not: nvptx64 (exit)
#| device/src/atomic.rs | go | 4 | not: nvptx64 (the atom, ld and st instructions of rmw, load, store and compare_swap; the host's are core atomics)
#| device/src/atomic.rs | decrement_pair | 1 | not: nvptx64 (two predicated atom.add)
#| device/src/atomic.rs | fence | 1 | not: nvptx64 (fence.acq_rel)
#| device/src/atomic.rs | impl Sync for AtomicU32 | 1 | not: nvptx64 (the host's word is a core atomic, Sync already)
#| device/src/atomic.rs | from_ptr | 2 | miri: A (levels), C (every scheduler counter)
#| device/src/block.rs | new | 1 | miri: A, C (every task's block)
#| device/src/block.rs | shared | 1 | miri: A, D
#| device/src/block.rs | shared_arrays_are_carved_from_the_scratch_in_order_and_aligned | 1 | miri: A
#| device/src/block.rs | par_for_visits_each_index_once_as_usize_or_u32 | 2 | miri: A
#| device/src/block.rs | asking_for_more_shared_memory_than_the_scratch_panics | 1 | miri: A
#| device/src/error.rs | bind | 2 | not: nvptx64 (the launch's error record; a host fault is a panic)
#| device/src/error.rs | bound | 1 | not: nvptx64 (as bind)
#| device/src/error.rs | raise | 2 | not: nvptx64 (as bind)
#| device/src/error.rs | panic | 1 | not: nvptx64 (the GPU panic handler)
#| device/src/sched/levels.rs | run_one | 1 | miri: A
#| device/src/sched/levels.rs | run_listed | 3 | miri: A
#| device/src/sched/levels.rs | run_levels | 4 | miri: A
#| device/src/sched/levels.rs | run | 1 | miri: A (the tests' dispatch)
#| device/src/sched/levels.rs | one_launch_with_a_grid_barrier_runs_the_levels_in_order | 1 | miri: A
#| device/src/sched/levels.rs | one_launch_per_level_runs_one_task_per_block | 1 | miri: A
#| device/src/sched/loom_tests.rs | impl Sync for Payload | 1 | not: compiled under cfg(loom) only; scripts/loom.sh checks these payloads with loom's own cell tracking
#| device/src/sched/loom_tests.rs | write | 1 | not: as impl Sync for Payload
#| device/src/sched/loom_tests.rs | read | 1 | not: as impl Sync for Payload
#| device/src/sched/mod.rs | at | 2 | miri: C (every scheduler table access)
#| device/src/sched/mod.rs | current_task | 1 | not: nvptx64 (shared runtime words)
#| device/src/sched/mod.rs | bind_faults | 2 | not: nvptx64 (kernel entry)
#| device/src/sched/mod.rs | gpu_entry | 7 | not: nvptx64 (kernel entry; the CPU backend calls run_worker, as C does)
#| device/src/sched/mod.rs | gpu_listed | 3 | not: nvptx64 (kernel entry; A runs run_listed)
#| device/src/sched/mod.rs | gpu_levels | 2 | not: nvptx64 (kernel entry; A runs run_levels)
#| device/src/sched/sm.rs | worker_of_block | 3 | not: nvptx64 (SM ids and slots in device memory; the CPU backend's SM plan is safe host code)
#| device/src/sched/worker.rs | impl Sync for Runtime<'_> | 1 | miri: C (workers share the runtime's tables)
#| device/src/sched/worker.rs | table | 2 | miri: C
#| device/src/sched/worker.rs | from_desc | 2 | miri: A, C
#| device/src/sched/worker.rs | task | 1 | miri: A, C
#| device/src/sched/worker.rs | record | 1 | miri: C
#| device/src/sched/worker.rs | place | 1 | miri: C (the priority policy)
#| device/src/sched/worker.rs | run_worker | 10 | miri: C (traces, statistics, every policy)
#| device/src/shared.rs | dynamic | 1 | not: nvptx64 (dynamic shared memory)
#| device/src/shared.rs | runtime_words | 1 | not: nvptx64 (static shared memory)
#| device/src/shared.rs | array_table | 1 | not: nvptx64 (static shared memory)
#| device/src/shared.rs | get | 1 | miri: A, D
#| device/src/shared.rs | set | 1 | miri: A, D
#| device/src/shared.rs | get_unchecked | 2 | miri: A, D (the host arm)
#| device/src/shared.rs | get_unchecked | 1 | not: nvptx64 (ld.shared)
#| device/src/shared.rs | set_unchecked | 2 | miri: A, D (the host arm)
#| device/src/shared.rs | set_unchecked | 1 | not: nvptx64 (st.shared)
#| device/src/shared.rs | window | 1 | not: nvptx64 (cvta.to.shared)
#| device/src/shared.rs | load | 3 | not: nvptx64 (ld.shared)
#| device/src/shared.rs | store | 3 | not: nvptx64 (st.shared)
#| device/src/block.rs | scratch_rest | 1 | not: tile-tests (only the tile library uses it)
#| device/src/view.rs | operands | 1 | not: tile-tests (only the tile library and the examples built on it use it)
#| device/src/tile/engine.rs | init | 1 | not: tile-tests
#| device/src/tile/engine.rs | run | 4 | not: tile-tests
#| device/src/tile/engine.rs | stage | 3 | not: tile-tests
#| device/src/tile/engine.rs | step | 3 | not: tile-tests
#| device/src/tile/engine.rs | multiply | 3 | not: tile-tests
#| device/src/tile/engine.rs | finish | 4 | not: tile-tests
#| device/src/tile/engine.rs | finish | 1 | not: no test reaches it yet, Miri or not (a paired store whose first column lies outside the kept triangle: SYRK on the upper triangle)
#| device/src/tile/engine.rs | store_pair | 2 | not: tile-tests
#| device/src/tile/factor.rs | load | 2 | not: tile-tests
#| device/src/tile/factor.rs | store | 2 | not: tile-tests
#| device/src/tile/factor.rs | diagonal | 3 | not: tile-tests
#| device/src/tile/factor.rs | cholesky_block | 3 | not: tile-tests
#| device/src/tile/factor.rs | lu_block | 3 | not: tile-tests
#| device/src/tile/factor.rs | potrf | 3 | not: tile-tests
#| device/src/tile/factor.rs | getrf | 3 | not: tile-tests
#| device/src/tile/frag.rs | load | 3 | not: tile-tests
#| device/src/tile/frag.rs | load_words | 2 | not: tile-tests
#| device/src/tile/frag.rs | load_a | 15 | not: tile-tests
#| device/src/tile/frag.rs | load_b | 15 | not: tile-tests
#| device/src/tile/frag.rs | stage | 1 | not: tile-tests
#| device/src/tile/frag.rs | run | 1 | not: tile-tests
#| device/src/tile/frag.rs | fma_f32 | 1 | not: nvptx64 (fma.rn.f32)
#| device/src/tile/gemm.rs | gemm_with | 1 | not: tile-tests
#| device/src/tile/gemm.rs | syrk_with | 1 | not: tile-tests
#| device/src/tile/gemm.rs | triangle | 2 | not: tile-tests
#| device/src/tile/mma.rs | m8n8k4_f64 | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/mma.rs | m16n8k4_f64 | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/mma.rs | m16n8k8_f64 | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/mma.rs | m16n8k16_f64 | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/mma.rs | m16n8k8_tf32 | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/mma.rs | half_mma | 1 | not: nvptx64 (mma.sync)
#| device/src/tile/numeric.rs | sqrt | 2 | not: nvptx64 (sqrt.rn)
#| device/src/tile/numeric.rs | round_tf32 | 1 | not: nvptx64 (cvt.rna.tf32)
#| device/src/tile/operand.rs | new | 1 | not: tile-tests
#| device/src/tile/operand.rs | operands_inside_their_ranges_are_made_from_views | 1 | not: tile-tests
#| device/src/tile/operand.rs | a_read_operand_outside_the_ranges_panics_naming_the_rectangle | 1 | not: tile-tests
#| device/src/tile/operand.rs | a_written_operand_is_checked_against_the_write_ranges | 1 | not: tile-tests
#| device/src/tile/operand.rs | an_operand_past_the_array_end_is_refused_even_unchecked | 1 | not: tile-tests
#| device/src/tile/operand.rs | unchecked_operands_skip_the_ranges | 1 | not: tile-tests
#| device/src/tile/smem.rs | tile | 2 | not: tile-tests
#| device/src/tile/smem.rs | word | 2 | not: tile-tests
#| device/src/tile/smem.rs | set_word | 2 | not: tile-tests
#| device/src/tile/smem.rs | get | 2 | not: tile-tests
#| device/src/tile/smem.rs | get | 1 | not: nvptx64 (ld.shared)
#| device/src/tile/smem.rs | get2 | 2 | not: tile-tests
#| device/src/tile/smem.rs | get2 | 1 | not: nvptx64 (ld.shared)
#| device/src/tile/smem.rs | set | 2 | not: tile-tests
#| device/src/tile/smem.rs | set | 1 | not: nvptx64 (st.shared)
#| device/src/tile/smem.rs | copy16 | 4 | not: tile-tests
#| device/src/tile/smem.rs | copy16 | 2 | not: nvptx64 (cp.async)
#| device/src/tile/smem.rs | commit | 1 | not: nvptx64 (cp.async.commit_group)
#| device/src/tile/smem.rs | wait | 1 | not: nvptx64 (cp.async.wait_group)
#| device/src/tile/smem.rs | window | 1 | not: nvptx64 (cvta.to.shared)
#| device/src/tile/smem.rs | ld | 3 | not: nvptx64 (ld.shared)
#| device/src/tile/smem.rs | ld2 | 3 | not: nvptx64 (ld.shared)
#| device/src/tile/smem.rs | st | 3 | not: nvptx64 (st.shared)
#| device/src/tile/testing.rs | impl <T> Send for Shared<T> | 1 | not: tile-tests
#| device/src/tile/testing.rs | impl <T> Sync for Shared<T> | 1 | not: tile-tests
#| device/src/tile/testing.rs | mat | 1 | not: tile-tests
#| device/src/tile/testing.rs | mat_mut | 1 | not: tile-tests
#| device/src/tile/testing.rs | on_block | 2 | not: tile-tests
#| device/src/tile/trsm.rs | trsm | 1 | not: tile-tests
#| device/src/tile/trsm.rs | scale | 2 | not: tile-tests
#| device/src/tile/trsm.rs | solve | 4 | not: tile-tests
#| device/src/tile/trsm.rs | solve_lines | 4 | not: tile-tests
#| device/src/view.rs | word | 2 | miri: C (every task's scalars)
#| device/src/view.rs | array | 2 | miri: C (every task's arrays)
#| device/src/view.rs | contains | 1 | not: nvptx64 (volatile range loads)
#| device/src/view.rs | new | 1 | miri: A, C
#| device/src/view.rs | index | 1 | miri: A, C
#| device/src/view.rs | index_mut | 1 | miri: A, C
#| device/src/view.rs | dummy | 1 | not: nvptx64 (the fault sink; a host miss panics first)
#| device/src/view.rs | views_read_and_write_inside_their_declared_ranges | 2 | miri: A
#| device/src/view.rs | a_checked_read_outside_the_ranges_panics_on_the_host | 1 | miri: A
#| device/src/view.rs | a_checked_write_outside_the_write_ranges_panics_on_the_host | 1 | miri: A
#| device/src/view.rs | unchecked_views_reach_the_whole_array | 1 | miri: A
#| examples/kernels/src/dp.rs | tile | 6 | miri: D (DT-WARP, SM-W, NW)
#| examples/kernels/src/faults.rs | step | 1 | not: nvptx64 (the deliberate wild write of the fault checks)
#| examples/kernels/src/selfcheck.rs | selfcheck_identity | 2 | not: nvptx64 (self-check kernels)
#| examples/kernels/src/selfcheck.rs | selfcheck_message_passing | 4 | not: nvptx64 (self-check kernels)
#| examples/kernels/src/selfcheck.rs | selfcheck_shared | 4 | not: nvptx64 (self-check kernels)
#| examples/kernels/src/selfcheck.rs | selfcheck_atomics | 2 | not: nvptx64 (self-check kernels)
#| examples/kernels/src/selfcheck.rs | selfcheck_panic | 3 | not: nvptx64 (self-check kernels)
#| examples/src/bin/selfcheck.rs | run | 8 | not: driver (launches the self-check kernels)
#| examples/src/vendor.rs | new | 1 | not: driver (probes for the cuBLAS and cuSOLVER libraries with dlopen)
#| examples/src/vendor.rs | potrf_buffer | 3 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | potrf | 5 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | getrf_buffer | 3 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | getrf_nopiv | 5 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | gemm_strided_batched | 1 | not: driver (cuBLAS through cudarc)
#| examples/src/vendor.rs | gemm | 1 | not: driver (cuBLAS through cudarc)
#| host/src/cpu.rs | execute | 3 | miri: B, C
#| host/src/cpu.rs | run | 1 | miri: B (the test's dispatch)
#| host/src/gpu/graph.rs | impl Send for Cached | 1 | not: driver (a CUDA graph)
#| host/src/gpu/graph.rs | drop | 1 | not: driver
#| host/src/gpu/graph.rs | build | 4 | not: driver
#| host/src/gpu/graph.rs | execute | 1 | not: driver
#| host/src/gpu/levels.rs | execute | 2 | not: driver
#| host/src/gpu/mod.rs | new | 2 | not: driver (the first probes for libcuda with dlopen, which Miri cannot either)
#| host/src/gpu/persistent.rs | execute | 1 | not: driver
#| host/src/gpu/persistent.rs | peek | 1 | not: driver
#| host/src/gpu/persistent.rs | watch | 1 | not: driver
#| host/src/gpu/stage.rs | bytes_of | 1 | not: driver (staging for an upload)
#| host/src/gpu/stage.rs | records | 1 | not: driver (the records a launch wrote)
#| host/src/gpu/stage.rs | with_sms | 1 | not: driver
#| host/src/gpu/stage.rs | finish | 1 | not: driver
#| host/src/gpu/streams.rs | execute | 3 | not: driver
#| host/src/region.rs | bytes | 1 | miri: C
#| host/src/region.rs | write | 2 | miri: C (arrays restored after a failure, results written back)
#| host/src/region.rs | detach | 1 | miri: C (submitted regions)
#| host/src/resident.rs | impl Send for Cell | 1 | miri: C (resident arrays shared by submitted regions)
#| host/src/resident.rs | impl Sync for Cell | 1 | miri: C (as Send)
#| host/src/resident.rs | bytes_of | 1 | miri: B, C
#| host/src/resident.rs | host | 1 | miri: B, C
#| host/src/resident.rs | download | 2 | miri: B, C (host arrays)
#| host/src/resident.rs | download | 1 | not: driver (the device-to-host copy)
#| host/src/submit.rs | impl Send for Job | 1 | miri: C (jobs handed to the helper threads)
#| host/src/submit.rs | finish | 2 | miri: C
#| macros/src/expand/kernels.rs | entries | 6 | not: nvptx64 (the `extern "ptx-kernel"` entry points the macro emits)
#| macros/src/expand/kernels.rs | code | 2 | miri: D (emitted into every region of a crate with a device build: the `extern` static holding the crate's PTX and cubin, and its read)
#| macros/src/expand/task.rs | generate | 4 | miri: C, D (emitted into every task's dispatch: scalar words, array slots, views, and the call of an `unsafe fn` task, tests/unsafe_task.rs)
#| tests/pass/scalar-kinds.rs | bump | 1 | not: a trybuild case, compiled and run natively by tests/compiletest.rs (its dispatch is the same code as tests/unsafe_task.rs's)
#| tests/ui/raw-pointer-scalar.rs | set | 1 | not: a compile-fail case: it never runs
#| tests/unsafe_task.rs | double | 1 | miri: C
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/unsafe-sites.py check
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-permissive-provenance}"
cargo miri setup
cargo miri test -p taskweave-device --lib -- --skip tile::
cargo miri test -p taskweave-host --lib -- cpu:: inspect:: gpu:: resident::
cargo miri test -p taskweave-tests --test cpu_backend --test concurrent_regions \
    --test inferred_access --test sm_aware --test async_regions --test resident \
    --test unsafe_task -- --test-threads=1
cargo miri test -p taskweave-examples --test tiny -- --test-threads=1
