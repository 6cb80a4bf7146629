#!/usr/bin/env bash
# Runs the tests that exercise the host crates' `unsafe` code under Miri (about 3.5 minutes on 2
# cores, a minute of which builds Miri's sysroot on a fresh machine):
#   - taskweave-device: views, the block's shared scratch, scalars (every unit test);
#   - taskweave-host: the CPU backend on a hand-built region, the recorder's limits, the GPU helpers
#     that need no GPU;
#   - cross-crate: every CPU-backend test, threads sharing a runtime, inferred accesses (with fewer
#     property cases under `cfg(miri)`), SM-aware workers and the affinity policy's tables (fewer
#     policies and rounds under `cfg(miri)`).
# The graph module is safe code and its property tests are too slow to interpret. Two tests are
# `#[cfg_attr(miri, ignore)]`: one probes for libcuda (dlopen), one times a stall against the clock.
#
# Permissive provenance: the region descriptor is an ABI shared with the GPU and carries addresses
# as `u64`, so the CPU backend turns integers back into pointers (exposed provenance), which Miri
# checks but would otherwise warn about at every cast.
# One test thread: Miri interprets one thread at a time anyway, and a failure is easier to read.
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-permissive-provenance}"
cargo miri setup
cargo miri test -p taskweave-device --lib
cargo miri test -p taskweave-host --lib -- cpu:: inspect:: gpu:: resident::
cargo miri test -p taskweave-tests --test cpu_backend --test concurrent_regions \
    --test inferred_access --test sm_aware --test async_regions --test resident -- --test-threads=1
