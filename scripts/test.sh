#!/usr/bin/env bash
# The test command: set-up, then every test, the README's quickstart crate, the loom models, Miri
# over the unsafe code and the PTX check.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo test --workspace
scripts/quickstart.sh
scripts/loom.sh
scripts/miri.sh
scripts/check-ptx.sh
