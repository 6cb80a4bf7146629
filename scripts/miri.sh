#!/usr/bin/env bash
# Runs the tests that exercise the workspace's `unsafe` code under Miri. Interpreted one after the
# other they took 31 minutes of a clean clone's CI run on a 2-core machine, A alone 26.5 (1,587 s),
# most of it the tile tests; A's register-tile tests now run in a second process beside the rest
# (below):
#   A. taskweave-device and taskweave-tile, every unit test: views, tile operands, the block's
#      shared scratch, scalars, both level-by-level entry points on host threads, and the tile
#      library on emulated blocks of several warps (operands made from raw pointers, as a kernel's
#      threads reach an array; one property case and sides of 16 or 32 under `cfg(miri)`; the
#      tile tests alone: 5 min 34 s wall, 5 min 14 s of CPU on a shared 2-core machine);
#   B. taskweave-host's unit tests, by name: the CPU backend on a hand-built region and the
#      backends' parts that need no GPU (`backend::`: the host image of the GPU tables), the
#      recorder's limits (`inspect::`), the GPU helpers that need no GPU (`gpu::`: PTX targets, the
#      chunks and pipeline of the pinned transfers), resident arrays (`resident::`), and a streamed
#      region on the CPU backend and the batches a streamed GPU call copies (`stream::`, two
#      tests);
#   C. cross-crate: every CPU-backend test, threads sharing a runtime, inferred accesses (with fewer
#      property cases under `cfg(miri)`), SM-aware workers and the affinity and priority policies'
#      tables (fewer policies and rounds under `cfg(miri)`), submitted regions, resident arrays, an
#      `unsafe fn` task, plans run again on other arrays and on resident ones (tests/plans.rs);
#   D. the example workloads at a tiny size with blocks of three lanes (examples/tests/tiny.rs):
#      the dynamic programs' unchecked shared-memory accesses (examples/kernels/src/dp.rs) and the
#      shared memory and barriers of every kernel, lane against lane.
# Not under Miri: the graph module (safe code, and its property tests are too slow to interpret),
# tests/plan_props.rs (64 property cases of what tests/plans.rs runs), host/tests/layers.rs (safe
# code reading the sources), examples/tests/heat_steps.rs (starts the example as a process, which
# Miri cannot). Twenty of the tests above are `#[cfg_attr(miri, ignore)]`: one probes for libcuda
# (dlopen); five time a stall or wait for wall-clock time, which runs at Miri's interpreted speed
# (tests/cpu_backend.rs's two stalls, tests/async_regions.rs's two waits, and tests/plans.rs's wait
# for the default policy's static plan); two compare the device's libm functions with
# std's over thousands of inputs (safe code); three run the tile GEMM on the sm_90 and TF32 atoms
# (minutes each under Miri; an instrumented run shows they reach no unsafe site that the other
# tile tests miss); three factor or solve tiles past 64 on four warps (over ten minutes each
# under Miri: `by_64` and `solve_by_64`, whose rows below say so); one checks the staged fragment
# loads for bank conflicts (safe arithmetic on the layouts, nearly four minutes); three in
# tests/wide_tasks.rs (the steps of the tests before them, and the tile GEMM, for minutes; safe
# arithmetic over a million cells); one compresses runs (host/src/gpu/code.rs: minutes, and
# `inflate` has no unsafe code); one streams three regions of 200 tasks to waiting workers
# (tests/cpu_backend.rs: over five minutes, where B's `stream::` tests run the streamed tables'
# unsafe code).
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
#
#| bench/proto/tile-probe/src/lib.rs | kernels | 12 | not: nvptx64 (a probe kernel built by hand for the GPU alone, the kernel entry points)
#| bench/proto/tile-probe/src/lib.rs | now | 1 | not: nvptx64 (a probe kernel built by hand for the GPU alone, special registers)
#| bench/proto/tile-probe/src/lib.rs | solve | 2 | not: nvptx64 (a probe kernel built by hand for the GPU alone, raw operands)
#| bench/proto/tile-probe/src/lib.rs | timed | 4 | not: nvptx64 (a probe kernel built by hand for the GPU alone, the block's dynamic shared memory and raw views)
#| device/src/arch/gpu.rs | special_register_u32 | 1 | not: nvptx64 (special registers)
#| device/src/arch/gpu.rs | clock64 | 1 | not: nvptx64 (special register)
#| device/src/arch/gpu.rs | global_timer_ns | 1 | not: nvptx64 (special register)
#| device/src/arch/gpu.rs | sync_threads | 1 | not: nvptx64 (bar.sync)
#| device/src/arch/gpu.rs | sync_warp | 2 | not: nvptx64 (bar.warp.sync)
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
#| device/src/block.rs | sync | 1 | miri: C (tests/wide_tasks.rs: the gang barrier)
#| device/src/block.rs | with_gang | 1 | miri: C (tests/wide_tasks.rs)
#| device/src/block.rs | shared_arrays_are_carved_from_the_scratch_in_order_and_aligned | 1 | miri: A
#| device/src/block.rs | par_for_visits_each_index_once_as_usize_or_u32 | 2 | miri: A
#| device/src/block.rs | asking_for_more_shared_memory_than_the_scratch_panics | 1 | miri: A
#| device/src/error.rs | bind | 2 | not: nvptx64 (the launch's error record; a host fault is a panic)
#| device/src/error.rs | bound | 1 | not: nvptx64 (as bind)
#| device/src/error.rs | raise | 2 | not: nvptx64 (as bind)
#| device/src/error.rs | panic | 1 | not: nvptx64 (the GPU panic handler)
#| device/src/sched/levels.rs | run_decoded | 1 | miri: A
#| device/src/sched/levels.rs | run_decoded | 1 | not: nvptx64 (the block's current-task word in shared memory)
#| device/src/sched/levels.rs | run_decoded | 1 | miri: A (a listed wide task's gang words: one_listed_launch_runs_a_wide_task_on_its_gang)
#| device/src/sched/levels.rs | listed_task | 2 | miri: A (through run_listed)
#| device/src/sched/levels.rs | run_listed | 3 | miri: A
#| device/src/sched/levels.rs | run_levels | 4 | miri: A
#| device/src/sched/levels.rs | run | 1 | miri: A (the tests' dispatch)
#| device/src/sched/levels.rs | run | 1 | miri: A (the gang test's dispatch: each rank's element, the gang barrier, the sum)
#| device/src/sched/levels.rs | one_launch_with_a_grid_barrier_runs_the_levels_in_order | 1 | miri: A
#| device/src/sched/levels.rs | launch_listed | 1 | miri: A (both listed tests)
#| device/src/sched/loom_tests.rs | impl Sync for Payload | 1 | not: compiled under cfg(loom) only; scripts/loom.sh checks these payloads with loom's own cell tracking
#| device/src/sched/loom_tests.rs | write | 1 | not: as impl Sync for Payload
#| device/src/sched/loom_tests.rs | read | 1 | not: as impl Sync for Payload
#| device/src/sched/loom_tests.rs | worker | 7 | not: as impl Sync for Payload (the finish model's cells)
#| device/src/sched/loom_tests.rs | worker | 2 | not: as impl Sync for Payload (the gang models' input cells)
#| device/src/sched/loom_tests.rs | run | 5 | not: as impl Sync for Payload (the gang models' cells)
#| device/src/sched/finish.rs | finish_run | 8 | not: nvptx64 (the workers' own reset; its gate is loom-checked by scripts/loom.sh)
#| device/src/sched/mod.rs | at | 2 | miri: C (every scheduler table access)
#| device/src/words.rs | current_task | 1 | not: nvptx64 (shared runtime words)
#| device/src/sched/mod.rs | bind_faults | 2 | not: nvptx64 (kernel entry)
#| device/src/sched/mod.rs | gpu_entry | 8 | not: nvptx64 (kernel entry; the CPU backend calls run_worker, as C does)
#| device/src/sched/mod.rs | gpu_listed | 4 | not: nvptx64 (kernel entry; A runs run_listed and listed_task)
#| device/src/sched/mod.rs | gpu_levels | 2 | not: nvptx64 (kernel entry; A runs run_levels)
#| device/src/sched/sm.rs | worker_of_block | 3 | not: nvptx64 (SM ids and slots in device memory; the CPU backend's SM plan is safe host code)
#| device/src/sched/tables.rs | impl Sync for WorkerView<'_> | 1 | miri: B, C (workers share the view of the tables)
#| device/src/sched/tables.rs | stream | 1 | not: nvptx64 (the GPU's `BlockTables` view of a streamed region's tables)
#| device/src/sched/tables.rs | table | 2 | miri: A, B, C
#| device/src/sched/tables.rs | from_desc | 2 | miri: A, B, C
#| device/src/sched/tables.rs | task | 1 | miri: A (the level-by-level entry points)
#| device/src/sched/tables.rs | from_raw | 1 | miri: A, B, C (every worker view's tables read entry by entry)
#| device/src/sched/tables.rs | get | 2 | miri: A, B, C (as from_raw: a task's record, its CSR bounds)
#| device/src/sched/tables.rs | args | 2 | miri: A, B, C (as from_raw: a record's first argument word, read alone; B's streamed test reads the bound of a batch the host is appending to)
#| device/src/sched/tables.rs | range | 2 | miri: A, B, C (as from_raw: a task's argument words and CSR row)
#| device/src/sched/tables.rs | gangs | 1 | miri: C (tests/wide_tasks.rs: the gang words after the counters)
#| device/src/sched/tables.rs | gang_slots | 1 | miri: C (tests/wide_tasks.rs: the slot line, read at every pick of a region with wide tasks)
#| device/src/sched/tables.rs | slot | 1 | not: nvptx64 (the block's table header in shared memory: ld.shared)
#| device/src/sched/tables.rs | put | 1 | not: nvptx64 (as slot: st.shared)
#| device/src/sched/tables.rs | slice | 1 | not: nvptx64 (as slot)
#| device/src/sched/tables.rs | publish | 3 | not: nvptx64 (as slot; the host's workers hold a WorkerView)
#| device/src/sched/tables.rs | publish_tables | 2 | not: nvptx64 (as publish)
#| device/src/sched/tables.rs | publish_queues | 2 | not: nvptx64 (as publish)
#| device/src/sched/tables.rs | publish_rest | 2 | not: nvptx64 (as publish)
#| device/src/sched/tables.rs | published | 1 | not: nvptx64 (as publish)
#| device/src/sched/tables.rs | completed | 1 | not: nvptx64 (as slot)
#| device/src/sched/tables.rs | grr | 1 | not: nvptx64 (as slot)
#| device/src/sched/tables.rs | abort | 1 | not: nvptx64 (as slot)
#| device/src/words.rs | new | 1 | miri: B, C (every worker's runtime words)
#| device/src/words.rs | prefetch | 2 | miri: B, C (the host arm: a plain read)
#| device/src/words.rs | prefetch | 1 | not: nvptx64 (cp.async)
#| device/src/words.rs | load | 1 | not: nvptx64 (ld.shared; the host's words are core atomics)
#| device/src/words.rs | store | 1 | not: nvptx64 (st.shared)
#| device/src/words.rs | fetch_add | 1 | not: nvptx64 (atom.shared)
#| device/src/words.rs | settle | 1 | not: nvptx64 (cp.async.wait_all)
#| device/src/sched/leader.rs | row | 1 | miri: B, C (every task with children)
#| device/src/sched/pick.rs | record | 1 | miri: B, C (every task picked)
#| device/src/sched/release.rs | release_narrow | 3 | miri: C (fan-outs of 1 to 8 children; the affinity policy)
#| device/src/sched/release.rs | release_wide | 1 | miri: C (fan-outs over 8 children)
#| device/src/sched/release.rs | release_planned | 1 | miri: C (tests/cpu_backend.rs: a task with eight children under the static policy)
#| device/src/sched/policy/priority.rs | keep | 1 | miri: C (the priority policy)
#| device/src/sched/worker.rs | run_worker | 4 | miri: B, C (statistics)
#| device/src/sched/worker.rs | run_worker | 2 | not: compiled in only when TASKWEAVE_HOP_STAMPS is set (a measurement build's trace writes; the trace records' other writes run under B, C)
#| device/src/sched/worker.rs | run_body | 4 | miri: B, C (the trace's end: traces, tests/sm_aware.rs)
#| device/src/sched/worker.rs | run_body | 1 | miri: C (tests/wide_tasks.rs: a gang member's block)
#| device/src/sched/worker.rs | run_body | 1 | not: compiled in only when TASKWEAVE_HOP_STAMPS is set (a measurement build's write of the body's own cycles into the trace record)
#| device/src/sched/worker.rs | start_task | 2 | miri: C (the row's prefetch; traces, tests/sm_aware.rs)
#| device/src/sched/worker.rs | end_task | 1 | miri: C (traces, tests/sm_aware.rs)
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
#| device/src/block.rs | scratch_rest | 1 | miri: A (the tile library's scratch)
#| device/src/view.rs | operands | 1 | miri: A (the tile operand tests)
#| tile/src/engine.rs | init | 3 | miri: A
#| tile/src/engine.rs | run | 4 | miri: A
#| tile/src/engine.rs | stage | 3 | miri: A
#| tile/src/engine.rs | step | 3 | miri: A
#| tile/src/engine.rs | multiply | 3 | miri: A
#| tile/src/engine.rs | multiply_whole | 3 | miri: A
#| tile/src/engine.rs | staged | 2 | miri: A
#| tile/src/engine.rs | finish | 4 | miri: A
#| tile/src/engine.rs | finish | 1 | not: Miri runs one property case, which may miss it (a paired store whose first column lies outside the kept triangle: SYRK on the upper triangle of an aligned C, which syrk_updates_one_triangle_only reaches off Miri; dropping the store fails it)
#| tile/src/engine.rs | shared | 2 | miri: A
#| tile/src/engine.rs | load_pair | 2 | miri: A
#| tile/src/engine.rs | store_pair | 2 | miri: A
#| tile/src/factor.rs | load | 2 | miri: A
#| tile/src/factor.rs | store | 2 | miri: A
#| tile/src/factor.rs | diagonal | 3 | miri: A
#| tile/src/factor.rs | cholesky_block | 3 | miri: A
#| tile/src/factor.rs | lu_block | 3 | miri: A
#| tile/src/factor.rs | potrf | 1 | miri: A
#| tile/src/factor.rs | cholesky | 5 | miri: A
#| tile/src/factor.rs | by_64 | 2 | not: needs a tile past 64 on four warps, over ten minutes under Miri; run natively by tiles_past_64_factor_in_blocks_of_64 and on the H100 under memcheck and racecheck (bench/results/large-tiles-h100/sanitizers/)
#| tile/src/factor.rs | cholesky_global | 4 | miri: A
#| tile/src/factor.rs | getrf | 1 | miri: A
#| tile/src/factor.rs | lu | 5 | miri: A
#| tile/src/factor.rs | lu_global | 4 | miri: A
#| tile/src/factor.rs | staged_factor | 2 | miri: A
#| tile/src/frag.rs | load | 2 | miri: A
#| tile/src/frag.rs | load | 1 | not: unreachable, so no test runs it (the paired load: only accumulator layouts pair columns, and no operation loads an accumulator from shared memory)
#| tile/src/frag.rs | load_words | 2 | miri: A
#| tile/src/frag.rs | load_a | 15 | miri: A
#| tile/src/frag.rs | load_b | 15 | miri: A
#| tile/src/frag.rs | stage | 1 | miri: A
#| tile/src/frag.rs | run | 1 | miri: A
#| tile/src/frag.rs | fma_f32 | 1 | not: nvptx64 (fma.rn.f32)
#| tile/src/gemm.rs | gemm_with | 1 | miri: A
#| tile/src/gemm.rs | syrk_with | 1 | miri: A
#| tile/src/gemm.rs | triangle | 2 | miri: A
#| tile/src/mma.rs | m8n8k4_f64 | 1 | not: nvptx64 (mma.sync)
#| tile/src/mma.rs | m16n8k4_f64 | 1 | not: nvptx64 (mma.sync)
#| tile/src/mma.rs | m16n8k8_f64 | 1 | not: nvptx64 (mma.sync)
#| tile/src/mma.rs | m16n8k16_f64 | 1 | not: nvptx64 (mma.sync)
#| tile/src/mma.rs | m16n8k8_tf32 | 1 | not: nvptx64 (mma.sync)
#| tile/src/mma.rs | half_mma | 1 | not: nvptx64 (mma.sync)
#| tile/src/numeric.rs | sqrt | 2 | not: nvptx64 (sqrt.rn)
#| tile/src/numeric.rs | rsqrt | 2 | not: nvptx64 (rsqrt.approx)
#| tile/src/numeric.rs | recip | 2 | not: nvptx64 (rcp.approx)
#| tile/src/numeric.rs | round_tf32 | 1 | not: nvptx64 (cvt.rna.tf32)
#| device/src/operand.rs | new | 1 | miri: A
#| device/src/operand.rs | mat_raw | 1 | miri: A (the tests' operands)
#| device/src/operand.rs | mat_mut_raw | 1 | miri: A (as mat_raw)
#| device/src/operand.rs | operands_inside_their_ranges_are_made_from_views | 1 | miri: A
#| device/src/operand.rs | a_read_operand_outside_the_ranges_panics_naming_the_rectangle | 1 | miri: A
#| device/src/operand.rs | a_written_operand_is_checked_against_the_write_ranges | 1 | miri: A
#| device/src/operand.rs | an_operand_past_the_array_end_is_refused_even_unchecked | 1 | miri: A
#| device/src/operand.rs | a_rectangle_over_touching_ranges_is_walked_and_covered | 1 | miri: A
#| device/src/operand.rs | a_gap_between_two_ranges_is_found_by_the_walk | 1 | miri: A
#| device/src/operand.rs | unchecked_operands_skip_the_ranges | 1 | miri: A
#| tile/src/smem.rs | tile | 2 | miri: A
#| tile/src/smem.rs | word | 2 | miri: A
#| tile/src/smem.rs | set_word | 2 | miri: A
#| tile/src/smem.rs | get | 2 | miri: A
#| tile/src/smem.rs | get | 1 | not: nvptx64 (ld.shared)
#| tile/src/smem.rs | get2 | 2 | not: as frag.rs load's paired load, its only caller
#| tile/src/smem.rs | get2 | 1 | not: nvptx64 (ld.shared)
#| tile/src/smem.rs | set | 2 | miri: A
#| tile/src/smem.rs | set | 1 | not: nvptx64 (st.shared)
#| tile/src/smem.rs | copy16 | 4 | miri: A
#| tile/src/smem.rs | copy16 | 2 | not: nvptx64 (cp.async)
#| tile/src/smem.rs | commit | 1 | not: nvptx64 (cp.async.commit_group)
#| tile/src/smem.rs | wait | 1 | not: nvptx64 (cp.async.wait_group)
#| tile/src/smem.rs | window | 1 | not: nvptx64 (cvta.to.shared)
#| tile/src/smem.rs | ld | 3 | not: nvptx64 (ld.shared)
#| tile/src/smem.rs | ld2 | 3 | not: nvptx64 (ld.shared)
#| tile/src/smem.rs | st | 3 | not: nvptx64 (st.shared)
#| tile/src/testing.rs | impl <T> Send for Shared<T> | 1 | miri: A
#| tile/src/testing.rs | impl <T> Sync for Shared<T> | 1 | miri: A
#| tile/src/testing.rs | mat | 1 | miri: A
#| tile/src/testing.rs | mat_mut | 1 | miri: A
#| tile/src/testing.rs | on_block | 2 | miri: A
#| tile/src/regs.rs | get | 2 | miri: A (the host arm)
#| tile/src/regs.rs | get | 1 | not: nvptx64 (ld.shared)
#| tile/src/regs.rs | set | 2 | miri: A (the host arm)
#| tile/src/regs.rs | set | 1 | not: nvptx64 (st.shared)
#| tile/src/regs.rs | pair | 2 | miri: A (the host arm)
#| tile/src/regs.rs | pair | 1 | not: nvptx64 (ld.shared.v2)
#| tile/src/regs.rs | put_pair | 2 | miri: A
#| tile/src/regs.rs | solve | 10 | miri: A
#| tile/src/regs.rs | stage_triangle | 3 | miri: A
#| tile/src/regs.rs | substitute | 4 | miri: A
#| tile/src/regs.rs | factor | 2 | miri: A
#| tile/src/regs.rs | factor_by | 6 | miri: A
#| tile/src/regs.rs | eliminate_one | 6 | miri: A
#| tile/src/regs.rs | eliminate | 9 | miri: A
#| tile/src/regs.rs | solve_padded | 1 | miri: A
#| tile/src/regs.rs | run_factor_by | 1 | miri: A
#| tile/src/staged.rs | take | 1 | miri: A
#| tile/src/staged.rs | copy | 3 | miri: A
#| tile/src/staged.rs | update | 4 | miri: A
#| tile/src/staged.rs | solve_lines | 5 | miri: A
#| tile/src/trsm.rs | trsm | 1 | miri: A
#| tile/src/trsm.rs | scale | 2 | miri: A
#| tile/src/trsm.rs | solve | 7 | miri: A
#| tile/src/trsm.rs | update_rest | 2 | miri: A
#| tile/src/trsm.rs | solve_by_64 | 3 | not: needs a triangle past 64, minutes under Miri; run natively by triangles_past_64_solve_in_blocks_of_64 and on the H100 under memcheck and racecheck (bench/results/large-tiles-h100/sanitizers/)
#| tile/src/trsm.rs | solve_staged | 2 | miri: A
#| tile/src/trsm.rs | solve_lines | 4 | miri: A
#| device/src/view.rs | word | 2 | miri: C (every task's scalars)
#| device/src/view.rs | array | 2 | miri: C (every task's arrays)
#| device/src/declared.rs | contains | 1 | not: nvptx64 (volatile range loads)
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
#| examples/benches/inspection.rs | thread_cpu | 1 | not: a benchmark (no test runs it; a libc clock read)
#| examples/src/bin/transfer_bench.rs | run | 1 | not: driver (pinned memory for the copy probe)
#| examples/src/bin/transfer_bench.rs | host_probe | 5 | not: driver (pinned memory, cuMemHostRegister and raw copies of the host probes)
#| examples/src/bin/transfer_bench.rs | threaded_copy | 1 | not: GPU-only binary (copies between the probe's pageable and pinned buffers on threads)
#| examples/src/bin/selfcheck.rs | run | 8 | not: driver (launches the self-check kernels)
#| examples/src/vendor.rs | new | 1 | not: driver (probes for the cuBLAS and cuSOLVER libraries with dlopen)
#| examples/src/vendor.rs | potrf_buffer | 3 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | potrf | 5 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | getrf_buffer | 3 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | getrf_nopiv | 5 | not: driver (cuSOLVER through cudarc)
#| examples/src/vendor.rs | gemm_strided_batched | 1 | not: driver (cuBLAS through cudarc)
#| examples/src/vendor.rs | gemm | 1 | not: driver (cuBLAS through cudarc)
#| host/benches/inspection.rs | thread_cpu | 1 | not: as examples/benches/inspection.rs
#| host/src/backend/arena.rs | upload | 2 | not: driver (the tables' device allocation, and their upload through the pinned ring)
#| host/src/backend/arena.rs | new_slot | 1 | not: driver
#| host/src/backend/arena.rs | reset | 1 | not: driver (a device-to-device copy)
#| host/src/backend/arena.rs | new | 3 | not: driver (mapped pinned host memory for the workers' own finish)
#| host/src/backend/arena.rs | arm | 1 | not: driver (the mapped done word)
#| host/src/backend/arena.rs | done | 1 | not: driver (the mapped done word)
#| host/src/backend/arena.rs | record_and_stats | 1 | not: driver (mapped pinned memory the kernel wrote)
#| host/src/backend/cpu.rs | execute | 2 | miri: B, C
#| host/src/backend/cpu.rs | run | 5 | miri: B, C (the worker pool: the workers' view of the tables, each lane's worker loop, the watchdog's read of the running tasks; and the test's dispatch)
#| host/src/backend/cuda_graph.rs | impl Send for Cached | 1 | not: driver (a CUDA graph)
#| host/src/backend/cuda_graph.rs | drop | 1 | not: driver
#| host/src/backend/cuda_graph.rs | build | 4 | not: driver
#| host/src/backend/cuda_graph.rs | execute | 1 | not: driver
#| host/src/backend/replay.rs | impl Send for Replay | 1 | not: driver (a CUDA graph)
#| host/src/backend/replay.rs | drop | 1 | not: driver
#| host/src/backend/replay.rs | build | 8 | not: driver
#| host/src/backend/replay.rs | launch | 2 | not: driver
#| host/src/backend/layout.rs | bytes_of | 1 | miri: B (the host image of the GPU tables, built and checked without a GPU)
#| host/src/backend/layout.rs | records | 1 | not: driver (the records a launch wrote)
#| host/src/backend/levels.rs | execute | 2 | not: driver
#| host/src/backend/persistent.rs | launch | 2 | not: driver (the launch, and the events' elapsed time)
#| host/src/backend/persistent.rs | replay_call | 1 | not: driver (a CUDA graph launch)
#| host/src/backend/prestage.rs | upload | 3 | not: driver (host arrays uploaded during inspection)
#| host/src/backend/stage.rs | allocate | 1 | not: driver
#| host/src/backend/stage.rs | upload_arrays | 2 | not: driver (the copies up, and clearing an output's written span)
#| host/src/backend/stage.rs | read_back_after_kernel | 1 | not: driver (a device-to-host copy)
#| host/src/backend/stage.rs | read_back_copy | 1 | not: driver (pinned memory)
#| host/src/backend/stage.rs | finish | 2 | not: driver (as read_back_after_kernel)
#| host/src/backend/streams.rs | execute | 3 | not: driver
#| host/src/backend/watch.rs | peek | 1 | not: driver
#| host/src/backend/watch.rs | watch | 1 | not: driver
#| host/src/call.rs | bytes | 1 | miri: B, C (the snapshot a failure restores; submitted regions' copies)
#| host/src/call.rs | write | 2 | miri: B, C (arrays restored after a failure, results written back)
#| host/src/gpu/mod.rs | new | 2 | not: driver (the first probes for libcuda with dlopen, which Miri cannot either)
#| host/src/gpu/mod.rs | release_freed | 1 | not: driver (the device's memory pool)
#| host/src/gpu/transfer.rs | impl Send for Staging | 1 | not: driver (pinned staging buffers)
#| host/src/gpu/transfer.rs | check_out | 1 | not: driver (as Staging)
#| host/src/gpu/transfer.rs | upload | 4 | not: driver (DMA in place from page-locked memory)
#| host/src/gpu/transfer.rs | upload_pageable | 6 | not: driver (copies through pinned staging, and DMA; B tests the safe chunking and pipeline they use)
#| host/src/gpu/transfer.rs | download | 4 | not: driver (as upload)
#| host/src/gpu/transfer.rs | download_pageable | 6 | not: driver (as upload_pageable)
#| host/src/gpu/transfer.rs | page_locked | 1 | not: driver (asks CUDA what memory an address is)
#| host/src/pinned.rs | impl <T: Copy + Send> Send for Pinned<T> | 1 | miri: D (a Pinned array in a region on the CPU runtime's threads)
#| host/src/pinned.rs | impl <T: Copy + Sync> Sync for Pinned<T> | 1 | miri: D (as Send)
#| host/src/pinned.rs | locked | 2 | not: driver (page-locked host memory)
#| host/src/pinned.rs | deref | 1 | miri: D (the CPU runtime's heap array)
#| host/src/pinned.rs | deref_mut | 1 | miri: D (as deref)
#| host/src/region.rs | into_plan_uploading | 1 | not: driver (the upload during inspection, only for a GPU backend)
#| host/src/resident.rs | impl Send for Cell | 1 | miri: C (resident arrays shared by submitted regions)
#| host/src/resident.rs | impl Sync for Cell | 1 | miri: C (as Send)
#| host/src/resident.rs | bytes_of | 1 | miri: B, C
#| host/src/resident.rs | host | 1 | miri: B, C
#| host/src/resident.rs | download | 2 | miri: B, C (host arrays)
#| host/src/resident.rs | download | 1 | not: driver (the device-to-host copy)
#| host/src/resident.rs | adopt | 1 | not: driver (a cudarc slice)
#| host/src/resident.rs | cuda_view | 1 | not: driver (the arm of an array on the GPU; one in host memory has no cudarc view)
#| host/src/resident.rs | cuda_view_mut | 1 | not: driver (as cuda_view)
#| host/src/resident.rs | into_cuda | 1 | not: driver (as cuda_view)
#| host/src/stream/gpu.rs | abort | 1 | not: driver (raises a streamed run's abort flag on the GPU)
#| host/src/stream/gpu.rs | read | 1 | not: driver (reads the error record and statistics back)
#| host/src/stream/gpu.rs | restore | 1 | not: driver (device-to-device copies)
#| host/src/stream/gpu.rs | run | 2 | not: driver (a streamed run's upload and launch)
#| host/src/stream/gpu.rs | run_gpu | 1 | not: driver (the written arrays' download)
#| host/src/stream/gpu.rs | send | 1 | not: driver (the batches' copies; what they copy is checked by stream::gpu::tests::a_batch_is_copied_wherever_the_mirror_changed, under Miri)
#| host/src/stream/gpu.rs | set_up | 4 | not: driver (memsets and small copies of the empty tables)
#| host/src/stream/gpu.rs | set_up_kernel | 2 | not: driver (the allocations of a streamed run's copies and tables)
#| host/src/stream/gpu.rs | tables | 1 | miri: B (stream::gpu::tests::a_batch_is_copied_wherever_the_mirror_changed: the test's read of the mirror's tables)
#| host/src/stream/gpu.rs | take | 2 | not: driver (device-to-device copies)
#| host/src/stream/mod.rs | publish | 3 | miri: B (stream::tests::batches_are_fed_while_the_body_records: the task records written while the workers run)
#| host/src/stream/mod.rs | run | 1 | miri: B (as above: the test's dispatch)
#| host/src/stream/mod.rs | run_cpu | 2 | miri: B (as above)
#| host/src/stream/mod.rs | run_rest | 1 | not: reached only by a region past its tables' capacity, in property tests too slow to interpret (natively: stream::tests::a_region_past_the_capacity_runs_its_rest_apart); the same pool as run_cpu's
#| host/src/stream/table.rs | a_table_is_zero_or_its_value_in_pages_of_its_own_or_not | 1 | miri: B (the test itself)
#| host/src/stream/table.rs | deref | 1 | miri: B (stream::tests::batches_are_fed_while_the_body_records: the workers' atomics)
#| host/src/stream/table.rs | drop | 1 | miri: B (as above: the allocator's memory; Miri runs no mmap, so every table has it)
#| host/src/stream/table.rs | impl <T: Send> Send for Table<T> | 1 | miri: B (as above)
#| host/src/stream/table.rs | impl <T: Sync> Sync for Table<T> | 1 | miri: B (as above)
#| host/src/stream/table.rs | impl Zero for AtomicU32 | 1 | miri: B (as above: the tables start zero)
#| host/src/stream/table.rs | impl Zero for TaskRecord | 1 | miri: B (as above)
#| host/src/stream/table.rs | impl Zero for u32 | 1 | miri: B (as above)
#| host/src/stream/table.rs | impl Zero for u64 | 1 | miri: B (as above)
#| host/src/stream/table.rs | set | 1 | miri: B (as above: the records' bounds)
#| host/src/stream/table.rs | zeroed | 1 | miri: B (as above, and stream::table::tests::a_table_is_zero_or_its_value_in_pages_of_its_own_or_not)
#| host/src/submit.rs | detach | 1 | miri: C (submitted regions' copies of their host arrays)
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
# Miri interprets on one thread, so A's register-tile tests (`regs`, `factor` of taskweave-tile: about
# half of A's time) and one of the tile GEMM's two property tests run in a second process beside
# everything else, with a target directory of their own (cargo holds a target directory's lock for
# as long as its tests run). The two GEMM tests took 194 s of a clean-clone run; with both here,
# this process's tests took 1,041 s and the other's 835, with neither 1,028 and about 850.
side=(regs:: factor:: f64_gemm_matches_the_reference)
skips=()
for s in "${side[@]}"; do skips+=(--skip "$s"); done
side_log=$(mktemp)
CARGO_TARGET_DIR=target/miri-side cargo miri test -p taskweave-tile --lib -- "${side[@]}" \
    >"$side_log" 2>&1 &
side_pid=$!
trap 'kill "$side_pid" 2>/dev/null || true; rm -f "$side_log"' EXIT
cargo miri test -p taskweave-device --lib
cargo miri test -p taskweave-tile --lib -- "${skips[@]}"
cargo miri test -p taskweave-host --lib -- backend:: inspect:: gpu:: resident:: \
    stream::tests::batches_are_fed_while_the_body_records \
    stream::gpu::tests::a_batch_is_copied_wherever_the_mirror_changed stream::table::
cargo miri test -p taskweave-tests --test cpu_backend --test concurrent_regions \
    --test inferred_access --test sm_aware --test async_regions --test resident \
    --test unsafe_task --test plans --test wide_tasks -- --test-threads=1
cargo miri test -p taskweave-examples --test tiny -- --test-threads=1
side_status=0
wait "$side_pid" || side_status=$?
echo "== A's register-tile tests, run beside the rest (${side[*]})"
cat "$side_log"
if [ "$side_status" -ne 0 ]; then
    echo "miri: A's register-tile tests failed (above)" >&2
    exit "$side_status"
fi
if ! grep -q '^test result: ok\. [1-9]' "$side_log"; then
    echo "miri: no test matched ${side[*]}: the split is stale" >&2
    exit 1
fi
