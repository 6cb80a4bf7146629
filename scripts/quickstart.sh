#!/usr/bin/env bash
# The README's "Your own crate", checked: examples/quickstart holds exactly the files the README
# shows, and it builds and runs as the README says (on the CPU backend where there is no GPU).
#   scripts/quickstart.sh                 check and run examples/quickstart
#   scripts/quickstart.sh --extract DIR   write the README's files into the crate at DIR
set -euo pipefail
cd "$(dirname "$0")/.."
files=(build.rs src/lib.rs src/main.rs)

# The code block that follows `<!-- quickstart: FILE -->` in the README, unindented.
readme_file() {
    awk -v file="$1" '
        $0 ~ "<!-- quickstart: " file " -->" { found = 1; next }
        found && /^ *```/ { if (inside) exit; inside = 1; next }
        inside { sub(/^   /, ""); print }
    ' README.md
}

if [ "${1:-}" = --extract ]; then
    for f in "${files[@]}"; do
        mkdir -p "$2/$(dirname "$f")"
        readme_file "$f" >"$2/$f"
    done
    exit 0
fi

status=0
for f in "${files[@]}"; do
    if [ -z "$(readme_file "$f")" ]; then
        echo "quickstart: the README shows no $f" >&2
        status=1
    elif ! diff -u <(readme_file "$f") "examples/quickstart/$f"; then
        echo "quickstart: examples/quickstart/$f differs from the README's (above)" >&2
        status=1
    fi
done
[ "$status" = 0 ] || exit 1

# The README's step 6. The target directory is the workspace's, only so that CI compiles the
# dependencies once.
cd examples/quickstart
CARGO_TARGET_DIR=../../target cargo run
