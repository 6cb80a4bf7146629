#!/usr/bin/env bash
# Checks the `miri:` rows of scripts/miri.sh's table against what the tests Miri runs actually
# execute: builds those tests natively with coverage instrumentation (into target/cov, about 10
# minutes on 2 cores from cold), runs them, and has scripts/unsafe-sites.py compare every unsafe
# site's lines with the counts. Natively the property tests run more cases than under `cfg(miri)`
# and the `cfg_attr(miri, ignore)` tests run too, so the table says which sites depend on them.
# Not part of CI (the instrumented build is a second build of the workspace); run it when the table
# changes.
#   scripts/unsafe-coverage.sh        prints one line per site (ran / not run) and fails on a
#                                     `miri:` row whose sites did not all run
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=$(rustc --print sysroot)
tools="$sysroot/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
if [ ! -x "$tools/llvm-profdata" ]; then
    echo "unsafe-coverage: no llvm-profdata in $tools (rustup component add llvm-tools)" >&2
    exit 1
fi
export CARGO_TARGET_DIR=target/cov
export RUSTFLAGS="-C instrument-coverage"
export LLVM_PROFILE_FILE="$PWD/target/cov/prof/%p-%m.profraw"
rm -rf target/cov/prof
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{
    cargo test -p taskweave-device --lib
    cargo test -p taskweave-host --lib -- backend:: inspect:: gpu:: resident::
    cargo test -p taskweave-tests --test cpu_backend --test concurrent_regions \
        --test inferred_access --test sm_aware --test async_regions --test resident \
        --test unsafe_task --test plans
    cargo test -p taskweave-examples --test tiny
} 2>&1 | tee "$log"
mapfile -t objects < <(sed -n 's/^ *Running .* (\(.*\))$/-object\n\1/p' "$log")
"$tools/llvm-profdata" merge -sparse target/cov/prof/*.profraw -o target/cov/tests.profdata
"$tools/llvm-cov" export --format=lcov --instr-profile=target/cov/tests.profdata "${objects[@]}" \
    > target/cov/tests.lcov 2>/dev/null
python3 scripts/unsafe-sites.py coverage target/cov/tests.lcov
