#!/usr/bin/env bash
# The README's "Your own crate", step 6: builds and runs examples/quickstart, on the CPU backend
# where there is no GPU. (tests/compiletest.rs checks that its files are the README's.)
#
# It builds with stable Rust (QUICKSTART_TOOLCHAIN, default 1.95.0), not the nightly this
# repository pins, as the README says a user's crate may: the builder must then pick the nightly
# for the device build itself.
#   scripts/quickstart.sh                 build and run examples/quickstart
#   scripts/quickstart.sh --extract DIR   write the README's files of the crate into DIR, as a
#                                         user following the README would
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --extract ]; then
    for f in build.rs src/lib.rs src/main.rs; do
        mkdir -p "$2/$(dirname "$f")"
        # The code block after `<!-- file: examples/quickstart/$f -->`, unindented.
        awk -v marker="<!-- file: examples/quickstart/$f -->" '
            index($0, marker) { found = 1; next }
            found && /^ *```/ { if (inside) exit; inside = 1; next }
            inside { sub(/^   /, ""); print }
        ' README.md >"$2/$f"
    done
    exit 0
fi

toolchain=${QUICKSTART_TOOLCHAIN:-1.95.0}
if ! rustup which --toolchain "$toolchain" cargo >/dev/null 2>&1; then
    echo "quickstart: the toolchain $toolchain is missing: rustup toolchain install $toolchain --profile minimal" >&2
    exit 1
fi
# A target directory inside the workspace's, only so that repeated runs reuse their build.
cd examples/quickstart
CARGO_TARGET_DIR=../../target/quickstart cargo "+$toolchain" run
